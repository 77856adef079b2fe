"""Luck-corrected evaluation (canasta_env.luck): exact per-event expectations, zero-mean corrections
for any weights, unbiased corrected means, and the --luck-correction flag of the three commands."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from agents import make_agent
from agents.match import main as match_main
from agents.match import play_games, play_match
from canasta_env.engine import DealId, init_from_deals, step
from canasta_env.engine import cards as C
from canasta_env.engine.actions import DRAW_STOCK
from canasta_env.luck import _D0, FEATURES, K, LuckTracker, LuckWeights, corrections, luck_weights
from canasta_env.rules import load_rules
from train.cli.main import main as cli_main


def _games(preset: str, a: str, b: str, deals: int, seed: int):  # type: ignore[no-untyped-def]
    rules = load_rules(preset)
    sides, players = rules.num_sides, rules.num_players
    a_side = np.repeat(np.arange(sides), deals)
    seats = np.where((np.arange(players) % sides)[None, :] == a_side[:, None], 0, 1)
    out = play_games(rules, [make_agent(a, rules), make_agent(b, rules)], seats,
                     [DealId(seed, i, 0) for i in range(deals)] * sides, np.arange(deals * sides), seed,
                     luck=True)
    return out, a_side


def test_a_draw_adds_the_card_minus_the_stock_average_enumerated_by_hand() -> None:
    deal = next(DealId(3, i, 0) for i in range(50)
                if C.RED_THREE not in init_from_deals("classic_2p", [DealId(3, i, 0)]).stock(0)[-2:])
    state = init_from_deals("classic_2p", [deal])
    tracker = LuckTracker(state)
    stock = [int(c) for c in state.stock(0)]  # top last; classic_2p draws two, none a red three
    c1, c2, n = stock[-1], stock[-2], len(stock)
    counts = np.bincount(stock, minlength=K)
    before = tracker.features.copy()
    side, live = int(state.current_player[0]) % 2, np.array([0])
    tracker.before_step(state, live)
    step(state, np.array([DRAW_STOCK]))
    tracker.after_step(state, live)
    assert state.stock_size[0] == n - 2
    delta = tracker.features[0, side, _D0:] - before[0, side, _D0:]
    for kind, name in ((C.JOKER, "draw_JK"), (C.TWO, "draw_2"), (C.BLACK_THREE, "draw_B3")):
        expected = ((c1 == kind) - counts[kind] / n
                    + (c2 == kind) - (counts[kind] - (c1 == kind)) / (n - 1))
        assert delta[FEATURES.index(name) - _D0] == pytest.approx(expected)
    one_hot = [i for i, f in enumerate(FEATURES[_D0:]) if not f.endswith(("_early", "last_red3"))]
    assert delta[one_hot].sum() == pytest.approx(0.0)  # each card: one column set, shares summing to 1
    assert np.all(tracker.features[0, 1 - side, _D0:] == 0)


def test_the_correction_has_mean_zero_for_arbitrary_weights() -> None:
    out, a_side = _games("classic_2p", "random", "greedy", 400, 11)
    rng = np.random.default_rng(5)
    weights = LuckWeights("any", rng.normal(0, 50, len(FEATURES)), rng.normal(0, 0.05, len(FEATURES)))
    first = slice(0, 400)  # one seating: independent deals (the other seating's deal term is its negative)
    for corr in corrections(out.luck, a_side, weights):
        assert abs(corr[first].mean()) < 3 * corr[first].std(ddof=1) / np.sqrt(400)
    deal_part = (out.luck[first, 0, :_D0] - out.luck[first, 1, :_D0]) @ weights.margin[:_D0]
    assert abs(deal_part.mean()) < 3 * deal_part.std(ddof=1) / np.sqrt(400)


def test_the_deal_term_has_mean_zero_at_four_players() -> None:
    state = init_from_deals("classic_4p", [DealId(12, i, 0) for i in range(4000)])
    feats = LuckTracker(state).features[:, 0, :_D0]  # side 0's centred deal features
    se = feats.std(axis=0, ddof=1) / np.sqrt(feats.shape[0])
    assert np.all(np.abs(feats.mean(axis=0)) < 4 * se + 1e-12)


def test_an_agent_against_itself_is_even_after_correction() -> None:
    s = play_match("classic_2p", make_agent("random", "classic_2p"), make_agent("random", "classic_2p"),
                   300, seed=22, luck=True).summary()  # a 95% interval: seed 21 misses 0 (1 in 20)
    assert s["win_luck_lo"] <= 0.5 <= s["win_luck_hi"]
    assert s["margin_luck_lo"] <= 0.0 <= s["margin_luck_hi"]


def test_the_corrected_mean_of_a_handicap_matches_the_plain_mean_and_narrows_its_interval() -> None:
    rules = load_rules("classic_2p")
    s = play_match(rules, make_agent("heuristic", rules), make_agent("greedy", rules), 300, seed=33,
                   luck=True).summary()
    assert s["margin_lo"] <= s["margin_luck"] <= s["margin_hi"]
    assert s["win_lo"] <= s["win_luck"] <= s["win_hi"]
    assert s["margin_luck_lo"] <= s["mean_margin"] <= s["margin_luck_hi"]
    assert s["mean_margin"] > 100 and s["margin_var_ratio"] < 1.0


def test_rules_without_fitted_weights_are_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match="no fitted luck weights for rules 'classic_3p'"):
        luck_weights(load_rules("classic_3p"))
    changed = dataclasses.replace(load_rules("classic_2p"), red3_bonus=50)
    with pytest.raises(ValueError, match="no fitted luck weights"):
        luck_weights(changed)
    assert luck_weights(load_rules("classic_4p")).margin.shape == (len(FEATURES),)


def test_agents_match_flag(capsys: pytest.CaptureFixture[str]) -> None:
    match_main(["classic_2p", "random", "greedy", "--deals", "6", "--luck-correction"])
    out = capsys.readouterr().out
    assert "luck-corrected: mean margin" in out and "variance ratio" in out
    with pytest.raises(SystemExit) as exc:
        match_main(["classic_3p", "random", "greedy", "--deals", "6", "--luck-correction"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and "classic_3p" in err


def test_gauntlet_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["gauntlet", "greedy", "--opponents", "random", "--deals", "6", "--luck-correction"]) == 0
    out = capsys.readouterr().out
    assert "luck-corrected win rate" in out and "--luck-correction" in out
    assert cli_main(["gauntlet", "greedy", "--rules", "classic_3p", "--deals", "6", "--luck-correction"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no fitted luck weights" in err


def test_tournament_flag_logs_the_luck_and_resumes(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    args = ["tournament", "--agents", "greedy", "random", "--hands", "8", "--duplicate", "--luck-correction",
            "--no-plots", "--out", str(tmp_path / "t")]
    assert cli_main(args) == 0
    first = capsys.readouterr().out
    assert "luck-corrected head to head" in first and "| greedy | random | 4 |" in first
    header = (tmp_path / "t" / "hands.csv").read_text().splitlines()[0]
    assert "side0_luck" in header and "side1_luck_win" in header
    saved = json.loads((tmp_path / "t" / "results.json").read_text())["luck_corrected"]
    assert [(r["a"], r["b"], r["deals"]) for r in saved] == [("greedy", "random", 4)]
    assert cli_main(args) == 0  # resumed: the logged luck is read back, same table
    assert capsys.readouterr().out.split("luck-corrected head to head")[1] == first.split(
        "luck-corrected head to head")[1]
    assert cli_main(["tournament", "--rules", "classic_3p", "--agents", "greedy", "random", "heuristic",
                     "--hands", "6", "--luck-correction"]) == 2
    assert "no fitted luck weights" in capsys.readouterr().err


def test_cross_fitted_scale_adapts_the_correction_and_keeps_the_mean() -> None:
    """A correction that explains half of the result is scaled up to it, one that explains nothing
    is scaled to about 0 (the unscaled one would double the variance), and over many repetitions the
    corrected mean stays the plain one (the scale of a deal comes from the other deals)."""
    from agents.match import cross_fitted_scale, luck_summary

    rng = np.random.default_rng(5)
    luck = rng.normal(size=1000)
    plain = 3.0 + 2.0 * luck + rng.normal(size=1000)
    assert abs(np.median(cross_fitted_scale(plain, luck)) - 2.0) < 0.1
    assert luck_summary("m", plain, luck, 200, 0)["m_var_ratio"] < 0.25
    noise = rng.normal(size=1000) * 3.0
    assert luck_summary("m", plain, noise, 200, 0)["m_var_ratio"] < 1.05
    assert float(np.var(plain - noise) / np.var(plain)) > 1.5
    means = []
    for _ in range(400):
        luck = rng.normal(size=40)
        plain = 1.0 + luck * rng.normal() + rng.normal(size=40)
        means.append(luck_summary("m", plain, luck, 10, 0)["m_luck"])
    assert abs(np.mean(means) - 1.0) < 3 * np.std(means) / np.sqrt(len(means))
    assert np.all(cross_fitted_scale(plain[:5], luck[:5]) == 1.0)
