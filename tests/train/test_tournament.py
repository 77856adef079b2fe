"""Tournaments: duplicate pairing, interval coverage and power, reproduction, resume, outputs."""

from __future__ import annotations

import json

import numpy as np
import pytest

import agents.match as match_module
import train.evaluation.tournament as tournament
import train.evaluation.tournament_plan as tournament_plan
from canasta_env.engine import init_from_deals
from canasta_env.rules import load_rules
from train.cli.main import main as cli_main
from train.evaluation.tournament import make_plan, run


def _capture_deals(monkeypatch):
    """Record the state every played batch starts from."""
    starts = []
    real = match_module.init_from_deals

    def spy(rules, deals, **kw):
        state = real(rules, deals, **kw)
        starts.append((state.hands.copy(), [state.stock(b).copy() for b in range(state.num_games)],
                       state.pile_size.copy(), state.dealer.copy()))
        return state

    monkeypatch.setattr(match_module, "init_from_deals", spy)
    return starts


@pytest.mark.parametrize("preset,entrants,seatings", [
    ("classic_2p", ["random", "greedy"], 2),
    ("classic_4p", ["random", "greedy"], 2),
    ("classic_3p", ["random", "greedy", "heuristic"], 6),
])
def test_duplicate_replays_identical_deals(monkeypatch, preset, entrants, seatings):
    """Every seating of a deal starts from the same stock order and the same hand at every seat,
    and each entrant holds each side once per deal."""
    starts = _capture_deals(monkeypatch)
    result = run(preset, entrants, hands=5 * seatings, duplicate=True, seed=3)
    hands = result.hands
    (cards, stocks, piles, dealers), = starts
    for d in range(5):
        games = np.flatnonzero(hands["deal"] == d)
        assert sorted(hands["seating"][games]) == list(range(seatings))
        for g in games[1:]:
            assert np.array_equal(cards[g], cards[games[0]])
            assert np.array_equal(stocks[g], stocks[games[0]])
            assert piles[g] == piles[games[0]] and dealers[g] == dealers[games[0]]
        sides = load_rules(preset).num_sides
        holders = np.stack([hands[f"side{q}_entrant"][games] for q in range(sides)], axis=1)
        for q in range(sides):  # each entrant on each side exactly once over the seatings
            assert sorted(holders[:, q]) == sorted(np.tile(np.arange(sides), seatings // sides))
    if preset == "classic_4p":  # a side is two copies of one entrant
        seats = hands["seats"]
        assert np.array_equal(seats[:, 0], seats[:, 2]) and np.array_equal(seats[:, 1], seats[:, 3])


def test_partners_fill_the_second_seat_of_each_side():
    result = run("classic_4p", ["random", "greedy"], hands=8, duplicate=True, partners="heuristic")
    labels = np.array(result.labels)
    assert set(labels[result.hands["seats"][:, 2:]].ravel()) == {"partner:heuristic"}
    assert set(labels[result.hands["seats"][:, :2]].ravel()) == {"random", "greedy"}
    with pytest.raises(ValueError, match="partnership"):
        run("classic_2p", ["random", "greedy"], hands=2, partners="heuristic")


def test_non_duplicate_plays_each_deal_once_alternating_seats():
    result = run("classic_2p", ["random", "greedy"], hands=10, seed=1)
    assert list(result.hands["deal"]) == list(range(10))
    assert list(result.hands["seating"]) == [d % 2 for d in range(10)]


def test_plan_checks():
    rules = load_rules("classic_3p")
    with pytest.raises(ValueError, match="at least 3 entrants"):
        make_plan(rules, ["a", "b"], 6, True, None, False)
    with pytest.raises(ValueError, match="multiple of 6"):
        make_plan(rules, ["a", "b", "c"], 10, True, None, False)
    with pytest.raises(ValueError, match="not one of the entrants"):
        make_plan(load_rules("classic_2p"), ["a", "b"], 10, False, "c", False)
    gauntlet = make_plan(load_rules("classic_2p"), ["a", "b", "c", "d"], 10, False, "c", False)
    assert gauntlet.matches == [(2, 0), (2, 1), (2, 3)]


def test_coverage_of_margin_interval_for_equal_agents():
    """Two copies of random (own random streams): over 100 tournaments of 200 duplicate deals the
    95% interval on the mean margin contains 0 in 88 to 99 of them (93 measured). (About 12 s: 100 tournaments
    of 400 hands with their 2,000-resample bootstraps: the property needs the repetitions.)"""
    covered = 0
    for seed in range(100):
        row, = run("classic_2p", ["random", "random"], hands=400, duplicate=True, seed=1000 + seed).h2h_rows
        assert row["deals"] == 200
        covered += row["margin_lo"] <= 0 <= row["margin_hi"]
    assert 88 <= covered <= 99, covered


def test_power_random_vs_heuristic():
    """Over 500 duplicate deals the rating intervals of random and heuristic do not overlap."""
    result = run("classic_2p", ["random", "heuristic"], hands=1000, duplicate=True, seed=11)
    r = {row["entrant"]: row for row in result.rating_rows}
    assert r["random"]["hi"] < r["heuristic"]["lo"]
    assert result.h2h_rows[0]["p_holm"] < 0.01


def test_same_seed_same_results_and_different_seed_differs():
    a = run("classic_2p", ["random", "greedy", "heuristic"], hands=40, duplicate=True, seed=7).to_json()
    b = run("classic_2p", ["random", "greedy", "heuristic"], hands=40, duplicate=True, seed=7).to_json()
    c = run("classic_2p", ["random", "greedy", "heuristic"], hands=40, duplicate=True, seed=8).to_json()
    assert a == b
    assert a["hands"] != c["hands"]


def test_resume_loses_and_replays_no_finished_hand(monkeypatch, tmp_path):
    """Interrupt after two units of work; the re-run plays only the rest (a torn last line is
    dropped and replayed) and ends with exactly the uninterrupted results."""
    monkeypatch.setattr(tournament, "DEALS_PER_UNIT", 8)
    monkeypatch.setattr(tournament_plan, "DEALS_PER_UNIT", 8)
    args = dict(rules="classic_2p", entrants=["random", "greedy", "heuristic"], hands=48, duplicate=True,
                seed=5, plots=False, records=True)
    full = run(**args, out=tmp_path / "full").to_json()
    out = tmp_path / "resumed"
    played = []
    real = tournament.play_unit

    def interrupted(*a, **kw):
        if len(played) == 2:
            raise KeyboardInterrupt
        played.append(a[3])
        return real(*a, **kw)

    monkeypatch.setattr(tournament, "play_unit", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run(**args, out=out)
    lines = (out / "hands.csv").read_text().splitlines()
    assert len(lines) == 1 + 2 * 16  # header + two units of 8 deals x 2 seatings
    with (out / "hands.csv").open("a") as f:
        f.write("0,17,0,DealId(5,17,0),ran")  # torn write of a unit that did not finish
    with (out / "records.jsonl").open("a") as f:
        f.write('{"format": "canasta-hand-record", "meta": {"tournament_match": 0, "tournament_unit": 2}}\n')

    calls = []

    def counting(*a, **kw):
        calls.append(a[3])
        return real(*a, **kw)

    monkeypatch.setattr(tournament, "play_unit", counting)
    resumed = run(**args, out=out).to_json()
    assert len(calls) == 3 * 3 - 2  # 3 matches x 3 units, two already done
    assert resumed == full
    assert json.loads((out / "results.json").read_text()) == json.loads(json.dumps(full))
    assert len((out / "hands.csv").read_text().splitlines()) == 1 + 3 * 48
    assert (out / "records.jsonl").read_text() == (tmp_path / "full" / "records.jsonl").read_text()
    calls.clear()
    assert run(**args, out=out).to_json() == full and not calls  # nothing left to play


def test_resume_refuses_a_different_tournament(tmp_path):
    run("classic_2p", ["random", "greedy"], hands=4, out=tmp_path, plots=False)
    with pytest.raises(ValueError, match="hands: was 4, now 6"):
        run("classic_2p", ["random", "greedy"], hands=6, out=tmp_path, plots=False)


def test_deal_set_tournament_plays_the_set(monkeypatch):
    from canasta_env.deal_sets import load_deal_set

    starts = _capture_deals(monkeypatch)
    result = run("classic_2p", ["random", "greedy"], hands=6, duplicate=True, deal_set="v1")
    deal_set = load_deal_set("v1", "classic_2p")
    assert list(result.to_pandas()["deal_ref"][:2]) == ["classic_2p-v1#0", "classic_2p-v1#0"]
    assert result.config["deal_set"].startswith("classic_2p-v1@" + deal_set.sha256[:16])
    (cards, stocks, _, dealers), = starts
    direct = init_from_deals("classic_2p", [deal_set.deal(1)])  # game 2 = deal 1, first seating
    assert np.array_equal(cards[2], direct.hands[0]) and np.array_equal(stocks[2], direct.stock(0))
    assert dealers[2] == deal_set.dealers[1]
    with pytest.raises(ValueError, match="holds 10000 deals"):
        run("classic_2p", ["random", "greedy"], hands=20002, duplicate=True, deal_set="v1")


def test_cli_writes_tables_files_and_plots(tmp_path, capsys):
    out = tmp_path / "res"
    code = cli_main(["tournament", "--rules", "classic_2p", "--agents", "random", "greedy", "heuristic",
                     "--hands", "20", "--duplicate", "--target-margin", "200", "--out", str(out),
                     "--records"])
    assert code == 0
    text = capsys.readouterr().out
    assert "Davidson ratings" in text and "head to head" in text and "deals for margin 200" in text
    for name in ("hands.csv", "results.json", "ratings.csv", "head_to_head.csv", "outcomes.csv",
                 "openskill.csv", "ratings.png", "head_to_head.png"):
        assert (out / name).stat().st_size > 0, name
    data = json.loads((out / "results.json").read_text())
    assert len(data["hands"]) == 3 * 20
    hand = data["hands"][0]
    assert hand["deal_ref"] == "DealId(0,0,0)" and hand["seats"] == "random|greedy"
    assert {"side0_score", "side1_natural_canastas", "went_out_seat", "decisions"} <= set(hand)
    assert {r["entrant"] for r in data["outcomes"]} == {"random", "greedy", "heuristic"}
    from canasta_env.records import read_records, replay

    records = read_records(out / "records.jsonl")  # every hand, replayable
    assert len(records) == 60
    assert sum(r.seats == ["random", "greedy"] for r in records) == 10  # match 0, seating 0
    assert sum(r.seats == ["greedy", "random"] for r in records) == 10
    for record in records[:5]:
        replay(record)
    assert cli_main(["tournament", "--agents", "random", "nonesuch", "--hands", "2"]) == 2
    assert "canasta tournament: error: unknown agent 'nonesuch'" in capsys.readouterr().err


def test_outcome_statistics_match_the_hands():
    result = run("classic_2p", ["greedy", "heuristic"], hands=40, duplicate=True, seed=2)
    df = result.to_pandas()
    stats = {r["entrant"]: r for r in result.outcome_rows}
    for name in ("greedy", "heuristic"):
        own = [(df[f"side{q}_entrant"] == name) for q in range(2)]
        n = sum(int(o.sum()) for o in own)
        went = sum(int(((df["went_out_side"] == q) & own[q]).sum()) for q in range(2))
        takes = sum(int(df[f"side{q}_pile_takes"][own[q]].sum()) for q in range(2))
        assert stats[name]["hands"] == n == 40
        assert stats[name]["went_out_rate"] == pytest.approx(went / n)
        assert stats[name]["pile_takes"] == pytest.approx(takes / n)
    assert stats["heuristic"]["pile_takes"] > 0 and stats["greedy"]["went_out_rate"] > 0


def test_openskill_ladder_carries_ratings_across_tournaments(tmp_path):
    """A ladder file: the second tournament starts from the first one's OpenSkill ratings (more
    games, smaller sigma); repeating a tournament does not count its games twice."""
    ladder = tmp_path / "ladder.json"
    first = run("classic_2p", ["random", "greedy"], hands=40, duplicate=True, seed=1, ladder=ladder)
    after_first = json.loads(ladder.read_text())["ratings"]
    assert after_first["greedy"]["games"] == 40 and after_first["greedy"]["mu"] > after_first["random"]["mu"]
    second = run("classic_2p", ["random", "greedy", "heuristic"], hands=40, duplicate=True, seed=2,
                 ladder=ladder)
    ratings = json.loads(ladder.read_text())["ratings"]
    assert ratings["greedy"]["games"] == 40 + 80 and ratings["heuristic"]["games"] == 80
    assert ratings["greedy"]["sigma"] < after_first["greedy"]["sigma"]
    fresh = {r["entrant"]: r for r in run("classic_2p", ["random", "greedy", "heuristic"], hands=40,
                                           duplicate=True, seed=2).openskill_rows}
    assert fresh["greedy"]["games"] == 80  # without the ladder: this tournament's games only
    again = run("classic_2p", ["random", "greedy"], hands=40, duplicate=True, seed=1, ladder=ladder)
    assert json.loads(ladder.read_text())["ratings"] == ratings  # counted once
    assert again.openskill_rows[1]["games"] == 120 and first.rating_rows == again.rating_rows
    assert {r["entrant"] for r in second.openskill_rows} == {"random", "greedy", "heuristic"}
    ladder.write_text("not json")
    with pytest.raises(ValueError, match="ladder .*not valid JSON"):
        run("classic_2p", ["random", "greedy"], hands=4, ladder=ladder)


def test_cli_reads_a_config_file_that_flags_override(tmp_path, capsys):
    import yaml

    config = tmp_path / "t.yaml"
    config.write_text(yaml.safe_dump({"rules": "classic_2p", "agents": ["random", "greedy"], "hands": 2000,
                                      "duplicate": True, "out": str(tmp_path / "res"), "no-plots": True}))
    assert cli_main(["tournament", "--config", str(config), "--hands", "10"]) == 0
    data = json.loads((tmp_path / "res" / "results.json").read_text())
    assert data["config"]["hands"] == 10 and data["config"]["duplicate"] is True  # flag over file
    assert not (tmp_path / "res" / "ratings.png").exists()
    config.write_text("agents: [random, greedy]\nhandz: 10\n")
    assert cli_main(["tournament", "--config", str(config)]) == 2
    assert "unknown tournament option 'handz'" in capsys.readouterr().err
    config.write_text("agents: [random, greedy]\nhands: many\n")
    assert cli_main(["tournament", "--config", str(config)]) == 2
    assert "'hands' = 'many' is not of type int" in capsys.readouterr().err
    config.write_text("agents: [random, greedy]\nhands: -2\n")
    assert cli_main(["tournament", "--config", str(config)]) == 2
    assert f"{config}: hands -2: want a value in" in capsys.readouterr().err  # the file, not a flag
    assert cli_main(["tournament", "--config", str(config), "--hands", "0"]) == 2
    assert "--hands 0: want a value in" in capsys.readouterr().err
    assert cli_main(["tournament", "--hands", "4"]) == 2
    assert "no entrants" in capsys.readouterr().err


def test_shipped_tournament_config_is_valid():
    from pathlib import Path

    from train.cli.main import build_parser
    from train.cli.tournament import options

    path = Path(__file__).resolve().parents[2] / "configs" / "tournament" / "classic_2p.yaml"
    args = build_parser(["tournament"]).parse_args(["tournament", "--config", str(path)])
    o = options(args)
    assert o["agents"] == ["random", "greedy", "heuristic"] and o["duplicate"] and o["deal_set"] == "v1"
