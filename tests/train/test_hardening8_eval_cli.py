"""The evaluation commands (gauntlet, crossplay) given hostile or careless input, round eight: each
case is refused in one line before any game, or no longer gives a wrong answer, a half-written output
or a figure of gigabytes; its twin shows that the valid neighbouring input still works."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import numpy as np
import pytest

import train.evaluation.crossplay as crossplay_module
from canasta_env.rules import load_rules
from tests.one_line import one_error
from train.cli.main import main as cli_main
from train.evaluation.crossplay import CrossplayResult, check_setup, crossplay
from train.evaluation.ratings import MAX_BOOTSTRAP

GAUNTLET = ["gauntlet", "random", "--deals", "1"]
CROSSPLAY = ["crossplay", "--opponents", "random", "--deals", "1", "--resamples", "10"]


def _no_game(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_game(*args: object, **kwargs: object) -> None:
        raise AssertionError("a game was played")

    monkeypatch.setattr(crossplay_module, "play_unit", no_game)


def _rows(path: Path) -> list[str]:
    return [row["opponent"] for row in json.loads(path.read_text())["rows"]]


# ---- gauntlet: one agent under two spellings played twice, two rows of one opponent ------------------

def test_gauntlet_plays_an_opponent_spelt_twice_once(tmp_path: Path) -> None:
    path = tmp_path / "g.json"
    assert cli_main([*GAUNTLET, "--opponents", "heuristic:eager", "heuristic: eager", "--json",
                     str(path)]) == 0
    assert _rows(path) == ["heuristic:eager"]  # before: heuristic:eager and heuristic: eager


def test_gauntlet_keeps_two_agents_as_two_rows(tmp_path: Path) -> None:  # the twin
    path = tmp_path / "g.json"
    assert cli_main([*GAUNTLET, "--opponents", "heuristic:eager", "heuristic:hoarder", "--json",
                     str(path)]) == 0
    assert _rows(path) == ["heuristic:eager", "heuristic:hoarder"]


# ---- gauntlet --deal-set '': read as the working folder ----------------------------------------------

def test_gauntlet_refuses_an_empty_deal_set(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main([*GAUNTLET, "--opponents", "greedy", "--deal-set", ""]) == 2
    # before: "deal set .: is a directory, not a file"
    assert "--deal-set '': not a deal set" in one_error(capsys, "gauntlet")


def test_gauntlet_takes_a_deal_set_by_version(capsys: pytest.CaptureFixture[str]) -> None:  # the twin
    assert cli_main([*GAUNTLET, "--opponents", "greedy", "--deal-set", "v1"]) == 0
    assert "deals of classic_2p-v1" in capsys.readouterr().out


# ---- gauntlet's table: one deal's interval was printed as [nan, nan] ---------------------------------

def test_gauntlet_table_of_one_deal_shows_no_interval(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main([*GAUNTLET, "--opponents", "greedy", "--luck-correction"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| greedy"))
    assert row.count("[-, -]") == 4 and "[nan" not in out, row
    assert "minimum win rate: 0.000 [-, -] against greedy" in out


def test_gauntlet_table_of_two_deals_shows_intervals(capsys: pytest.CaptureFixture[str]) -> None:  # twin
    assert cli_main(["gauntlet", "random", "--deals", "2", "--opponents", "greedy"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| greedy"))
    assert "[-, -]" not in row and row.count("[") == 2, row


# ---- gauntlet --json: a failed write left half a file in place of the last run's ---------------------

def test_gauntlet_json_failing_write_keeps_the_file_there_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "g.json"
    path.write_text('{"old": true}\n')
    write_bytes = Path.write_bytes

    def half_then_full(self: Path, data: bytes | str, *args: object, **kwargs: object) -> int:
        # the disk fills halfway through the write, whichever Path method makes it
        data = data.encode() if isinstance(data, str) else data
        write_bytes(self, data[:len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", half_then_full)
    monkeypatch.setattr(Path, "write_text", half_then_full)
    assert cli_main([*GAUNTLET, "--opponents", "greedy", "--json", str(path)]) == 2
    assert "cannot write it (No space left on device)" in one_error(capsys, "gauntlet")
    assert path.read_text() == '{"old": true}\n'  # before: the first half of the new JSON
    assert [p.name for p in tmp_path.iterdir()] == ["g.json"]


def test_gauntlet_json_replaces_the_file_there_was(tmp_path: Path) -> None:  # the twin
    path = tmp_path / "g.json"
    path.write_text('{"old": true}\n')
    path.chmod(0o640)
    assert cli_main([*GAUNTLET, "--opponents", "greedy", "--json", str(path)]) == 0
    assert _rows(path) == ["greedy"] and path.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["g.json"]


# ---- crossplay --agents: one agent under two spellings was paired with itself as cross-play ----------

def test_crossplay_refuses_an_agent_spelt_twice_before_any_game(monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    _no_game(monkeypatch)
    assert cli_main([*CROSSPLAY, "--agents", "heuristic:eager", "heuristic: eager"]) == 2
    line = one_error(capsys, "crossplay")
    assert "--agents names one agent twice, as 'heuristic:eager' and 'heuristic: eager'" in line


def test_crossplay_takes_two_agents(capsys: pytest.CaptureFixture[str]) -> None:  # the twin
    assert cli_main([*CROSSPLAY, "--agents", "heuristic:eager", "heuristic:hoarder", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["agents"] == ["heuristic:eager", "heuristic:hoarder"]


# ---- crossplay --opponents: one agent under two spellings was seated as two opponents ----------------

def test_crossplay_plays_an_opponent_spelt_twice_as_one() -> None:
    twice = crossplay("classic_4p", ["random", "greedy"], ["heuristic:eager", "heuristic: eager"], deals=2,
                      resamples=10)
    once = crossplay("classic_4p", ["random", "greedy"], ["heuristic:eager"], deals=2, resamples=10)
    assert twice.opponents == ["heuristic:eager"]  # before: both spellings, on two streams
    assert twice.cells == once.cells


def test_crossplay_keeps_two_opponents_as_two() -> None:  # the twin
    result = crossplay("classic_4p", ["random", "greedy"], ["heuristic:eager", "greedy"], deals=2,
                       resamples=10)
    assert result.opponents == ["heuristic:eager", "greedy"]


# ---- crossplay --deals x --resamples: 25 GB of bootstrap weights after every game ---------------------

def test_crossplay_refuses_a_bootstrap_past_its_bound_before_any_game(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _no_game(monkeypatch)
    assert cli_main(["crossplay", "--agents", "random", "greedy", "--opponents", "random", "--deals", "10000",
                     "--resamples", "100000"]) == 2
    line = one_error(capsys, "crossplay")
    assert "--deals 10000 with --resamples 100000: the bootstrap would hold 1,000,000,000 weights" in line


def test_crossplay_takes_a_bootstrap_at_its_bound() -> None:  # the twin
    check_setup(load_rules("classic_4p"), ["random", "greedy"], ["random"], 1000,
                MAX_BOOTSTRAP // 1000)
    check_setup(load_rules("classic_4p"), ["random", "greedy"], ["random"], 10**6, 100)


def test_a_tournament_refuses_a_bootstrap_past_its_bound_before_any_game(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import train.evaluation.tournament as tournament

    monkeypatch.setattr(tournament, "play_unit", lambda *a, **k: pytest.fail("a game was played"))
    assert cli_main(["tournament", "--agents", "random", "greedy", "--hands", "20000", "--resamples",
                     "100000", "--no-plots"]) == 2
    line = one_error(capsys, "tournament")
    assert "--hands 20000 (20,000 deals a match) with --resamples 100000: the bootstrap would hold" in line
    monkeypatch.undo()
    played = tournament.run("classic_2p", ["random", "greedy"], 2, plots=False, resamples=20)  # the twin
    assert len(played.rating_rows) == 2


# ---- crossplay --out: a failed write left this run's tables beside the last run's heatmap ------------

def _result(k: int = 2) -> CrossplayResult:
    agents = [f"a{i}" for i in range(k)]
    cells = [{"p1": a, "p2": b, "self": a == b, "win_rate": 0.5, "win_lo": 0.4, "win_hi": 0.6,
              "mean_margin": 0.0, "margin_lo": -1.0, "margin_hi": 1.0} for a in agents for b in agents]
    return CrossplayResult("classic_4p", agents, ["random"], 2, 0, 10, cells, np.full((k, k, 2), 0.5),
                           np.zeros((k, k, 2)))


def test_crossplay_save_failing_keeps_every_file_there_was(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    old = {name: f"old {name}\n" for name in crossplay_module.OUTPUT_NAMES}
    for name, text in old.items():
        (tmp_path / name).write_text(text)

    def failing_plot(self: CrossplayResult, path: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(CrossplayResult, "plot", failing_plot)
    with pytest.raises(OSError, match="No space left"):
        _result().save(tmp_path)
    # before: crossplay.csv, crossplay_summary.csv and crossplay.json of this run, the heatmap of the last
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == old


def test_crossplay_save_replaces_every_file(tmp_path: Path) -> None:  # the twin
    for name in crossplay_module.OUTPUT_NAMES:
        (tmp_path / name).write_text("old\n")
    written = _result().save(tmp_path)
    assert [p.name for p in written] == list(crossplay_module.OUTPUT_NAMES)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(crossplay_module.OUTPUT_NAMES)
    assert json.loads((tmp_path / "crossplay.json").read_text())["agents"] == ["a0", "a1"]
    assert (tmp_path / "crossplay.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ---- crossplay's heatmap: its size grew with the agents (120 agents: 9 GB and two minutes) -----------

def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_crossplay_heatmap_of_many_agents_stays_small(tmp_path: Path) -> None:
    size = _png_size(_result(40).plot(tmp_path / "many.png"))
    assert size == _png_size(_result(16).plot(tmp_path / "sixteen.png"))  # before: 5720 x 4576 pixels
    assert size == (round((2.2 + 1.25 * 16) * 110), round((1.6 + 16) * 110))


def test_crossplay_heatmap_of_a_few_agents_keeps_its_size(tmp_path: Path) -> None:  # the twin
    assert _png_size(_result(3).plot(tmp_path / "three.png")) == (round((2.2 + 3.75) * 110), round(4.6 * 110))
