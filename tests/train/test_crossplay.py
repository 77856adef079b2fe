"""Partner cross-play (``canasta crossplay``): the matrix, its diagonal against a plain tournament,
seats, reproduction, the files written and bad inputs refused in one line before any game."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

import train.evaluation.crossplay as crossplay_module
from canasta_env.rules import load_rules
from train.cli.main import main as cli_main
from train.evaluation.crossplay import crossplay
from train.evaluation.tournament import run as run_tournament
from train.evaluation.tournament_plan import make_plan, seat_table

FIGURES = ("win_rate", "win_lo", "win_hi", "mean_margin", "margin_lo", "margin_hi", "p_value")


def test_the_matrix_has_a_cell_per_ordered_pair_and_a_summary() -> None:
    agents = ["heuristic", "greedy", "heuristic:eager"]
    result = crossplay("classic_4p", agents, ["heuristic"], deals=6, seed=3, resamples=200)
    assert result.matrix().shape == (3, 3)
    assert [(c["p1"], c["p2"]) for c in result.cells] == [(a, b) for a in agents for b in agents]
    assert [c["self"] for c in result.cells] == [a == b for a in agents for b in agents]
    assert all(c["hands"] == 12 and c["deals"] == 6 for c in result.cells)
    assert result.deal_wins.shape == result.deal_margins.shape == (3, 3, 6)
    np.testing.assert_allclose(result.matrix("mean_margin"), result.deal_margins.mean(axis=2))
    rows = {r["group"]: r for r in result.summary()}
    assert len(rows) == 3 + 2 * len(agents)
    diag, off = result.matrix().diagonal().mean(), result.matrix()[~np.eye(3, dtype=bool)].mean()
    assert rows["self-play (diagonal)"]["win_rate"] == pytest.approx(diag)
    assert rows["cross-play (off the diagonal)"]["win_rate"] == pytest.approx(off)
    assert rows["self-play minus cross-play"]["win_rate"] == pytest.approx(diag - off)
    greedy = result.matrix()[1].sum() + result.matrix()[:, 1].sum() - 2 * result.matrix()[1, 1]
    assert rows["partner of others: greedy"]["win_rate"] == pytest.approx(greedy / 4)
    w = result.matrix()
    gap = np.mean([(w[1, 1] + w[b, b]) / 2 - (w[1, b] + w[b, 1]) / 2 for b in (0, 2)])
    assert rows["self-play minus cross-play: greedy"]["win_rate"] == pytest.approx(gap)
    each = [rows[f"self-play minus cross-play: {a}"]["mean_margin"] for a in agents]
    assert np.mean(each) == pytest.approx(rows["self-play minus cross-play"]["mean_margin"])
    for r in rows.values():
        assert r["win_lo"] <= r["win_rate"] <= r["win_hi"]
        assert r["margin_lo"] <= r["mean_margin"] <= r["margin_hi"]


def test_the_second_agent_sits_at_the_other_seats_of_the_side() -> None:
    plan = make_plan(load_rules("classic_4p"), ["side", "opponents"], 4, True, None, False)
    plan.second_seat = (2, 3)  # P1 is agent 0, its partner agent 2; opponents 1 and 3
    seats = seat_table(plan, (0, 1), np.array([0, 1]), 4)
    assert seats.tolist() == [[0, 1, 2, 3], [1, 0, 3, 2]]


@pytest.mark.parametrize("agent", ["random", "greedy"])
def test_the_diagonal_is_a_plain_tournament_on_the_same_deals(agent: str) -> None:
    """Self-play of an agent (random: its random streams matter too) against a random opponent gives
    the numbers of ``canasta tournament --duplicate`` of that agent against the opponent."""
    deals, seed = 8, 11
    result = crossplay("classic_4p", [agent, "heuristic"], ["random"], deals=deals, seed=seed, resamples=300)
    plain = run_tournament("classic_4p", [agent, "random"], 2 * deals, duplicate=True, seed=seed,
                           resamples=300, plots=False)
    row = plain.h2h_rows[0]
    assert row["a"] == agent and row["b"].startswith("random")  # the tournament labels a second random #2
    cell = result.cells[0]
    assert (cell["p1"], cell["p2"], cell["hands"]) == (agent, agent, row["hands"])
    assert {k: cell[k] for k in FIGURES} == {k: row[k] for k in FIGURES}


def test_a_seeded_run_is_reproduced_and_another_seed_plays_other_deals() -> None:
    def play(seed: int) -> dict:
        return crossplay("classic_4p", ["random", "greedy"], ["random", "heuristic"], deals=5, seed=seed,
                         resamples=100).to_json()

    first = play(4)
    assert play(4) == first
    assert play(5)["cells"] != first["cells"]
    assert first["opponents"] == ["random", "heuristic"]


def test_the_command_writes_csv_json_and_png(tmp_path, capsys) -> None:
    out = tmp_path / "cp"
    argv = ["crossplay", "--agents", "greedy", "heuristic", "--opponents", "heuristic", "--deals", "3",
            "--resamples", "50", "--out", str(out)]
    assert cli_main(argv) == 0
    shown = capsys.readouterr().out
    assert "self-play minus cross-play" in shown and "partner of others: greedy" in shown
    with (out / "crossplay.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["p1"], r["p2"]) for r in rows] == [("greedy", "greedy"), ("greedy", "heuristic"),
                                                  ("heuristic", "greedy"), ("heuristic", "heuristic")]
    with (out / "crossplay_summary.csv").open() as f:
        assert len(list(csv.DictReader(f))) == 3 + 2 * 2
    assert (out / "crossplay.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    saved = json.loads((out / "crossplay.json").read_text())
    assert cli_main([*argv, "--json", "--force"]) == 0  # --force: replace the first run's files
    printed = json.loads(capsys.readouterr().out)
    assert printed["cells"] == saved["cells"] and printed["command"].startswith("canasta crossplay")


OK = ["--agents", "greedy", "heuristic", "--opponents", "heuristic", "--deals", "2"]


@pytest.mark.parametrize(("argv", "says"), [
    (["--agents", "heuristic", "nonesuch", "--opponents", "heuristic"], "nonesuch"),
    (["--agents", "heuristic", "greedy", "--opponents", "nonesuch"], "nonesuch"),
    ([*OK, "--rules", "classic_2p"], "presets with partners: classic_4p"),
    ([*OK, "--rules", "railroad_4p"], "railroad_4p"),
    (["--agents", "heuristic", "--opponents", "heuristic"], "at least 2 agents"),
    (["--agents", "greedy", "greedy", "--opponents", "heuristic"], "greedy named twice"),
    (["--agents", "greedy", "heuristic", "--opponents", "random", "greedy", "heuristic"], "--opponents"),
    ([*OK, "--deals", "0"], "--deals 0"),
    ([*OK, "--deals", "-3"], "--deals -3"),
    ([*OK, "--resamples", "0"], "--resamples 0"),
    ([*OK, "--seed", "-1"], "--seed -1"),
    ([*OK, "--out", "{file}"], "must be a folder"),
])
def test_bad_input_is_refused_in_one_line_before_any_game(argv, says, tmp_path, capsys, monkeypatch) -> None:
    def no_game(*args, **kwargs):
        raise AssertionError("a game was played")

    monkeypatch.setattr(crossplay_module, "play_unit", no_game)
    (tmp_path / "a_file").write_text("x")
    argv = [a.replace("{file}", str(tmp_path / "a_file")) for a in argv]
    assert cli_main(["crossplay", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("canasta crossplay: error: ") and "\n" not in err
    assert says in err


def _no_game(monkeypatch) -> None:
    def no_game(*args, **kwargs):
        raise AssertionError("a game was played")

    monkeypatch.setattr(crossplay_module, "play_unit", no_game)


def test_an_earlier_runs_files_are_kept_unless_force(tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "cp"
    out.mkdir()
    (out / "crossplay.json").write_text("earlier")
    (out / "notes.txt").write_text("mine")
    _no_game(monkeypatch)
    assert cli_main(["crossplay", *OK, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "already holds crossplay.json" in err and "--force" in err
    assert (out / "crossplay.json").read_text() == "earlier"
    monkeypatch.undo()
    assert cli_main(["crossplay", *OK, "--resamples", "20", "--out", str(out), "--force"]) == 0
    assert json.loads((out / "crossplay.json").read_text())["deals"] == 2
    assert (out / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("force", [[], ["--force"]], ids=["plain", "force"])
def test_an_output_path_that_is_a_folder_is_refused_before_any_game(force, tmp_path, capsys,
                                                                    monkeypatch) -> None:
    (tmp_path / "crossplay.csv").mkdir()
    _no_game(monkeypatch)
    assert cli_main(["crossplay", *OK, "--out", str(tmp_path), *force]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "crossplay.csv there is a folder" in err


@pytest.mark.parametrize("as_json", [False, True], ids=["tables", "json"])
def test_the_results_are_printed_before_a_write_that_fails(as_json, tmp_path, capsys, monkeypatch) -> None:
    def full_disk(self, out, plots=True):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(crossplay_module.CrossplayResult, "save", full_disk)
    argv = ["crossplay", *OK, "--resamples", "20", "--out", str(tmp_path / "cp"), *["--json"] * as_json]
    assert cli_main(argv) == 2
    shown = capsys.readouterr()
    assert "No space left on device" in shown.err
    if as_json:
        assert len(json.loads(shown.out)["cells"]) == 4
    else:
        assert "self-play minus cross-play" in shown.out and "command: canasta crossplay" in shown.out
