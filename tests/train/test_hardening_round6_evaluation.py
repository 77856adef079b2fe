"""The evaluation commands given hostile or mistaken input, round six: each case is refused in one
line before any game, or no longer gives a wrong answer in silence; its twin shows that the valid
neighbouring input still works."""

from __future__ import annotations

import errno
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

import agents.match as match_module
import train.evaluation.tournament as tournament
from agents import make_agent
from agents.match import bootstrap_ci
from canasta_env.rules import load_rules
from tests.one_line import one_error
from train.cli.main import main as cli_main
from train.evaluation.ratings import PairData, bootstrap_mean_ci, bt_ratings, resample_weights
from train.evaluation.tournament import build_entrants

ROOT = Path(__file__).resolve().parents[2]
GAUNTLET = ["gauntlet", "random", "--opponents", "greedy", "--deals", "1"]
TOURNAMENT = ["tournament", "--agents", "random", "greedy", "--no-plots", "--resamples", "20"]


def _no_game(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_game(*args: object, **kwargs: object) -> None:
        raise AssertionError("a game was played")

    monkeypatch.setattr(match_module, "play_match", no_game)
    monkeypatch.setattr(tournament, "play_unit", no_game)


# ---- gauntlet --json: a pipe hung after every game, a broken link failed after them -------------------

@pytest.mark.parametrize("kind", ["pipe", "broken link"])
def test_gauntlet_refuses_a_json_path_that_is_not_a_regular_file_before_any_game(
        kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "g.json"
    if kind == "pipe":
        os.mkfifo(path)
    else:
        path.symlink_to(tmp_path / "missing" / "g.json")
    _no_game(monkeypatch)
    assert cli_main([*GAUNTLET, "--json", str(path)]) == 2
    assert "not a regular file" in one_error(capsys, "gauntlet")


def test_gauntlet_replaces_an_existing_regular_json_file(tmp_path: Path) -> None:  # the twin
    path = tmp_path / "g.json"
    path.write_text("old\n")
    assert cli_main([*GAUNTLET, "--json", str(path)]) == 0
    assert json.loads(path.read_text())["rows"][0]["opponent"] == "greedy"


def test_gauntlet_names_json_when_its_write_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # a full disk was "[Errno 28] No space left on device", naming neither the flag nor the file
    path = tmp_path / "g.json"
    write_bytes = Path.write_bytes

    def full(self: Path, *args: object, **kwargs: object) -> int:
        if self.parent == tmp_path:  # g.json, or the temporary file it is written through
            raise OSError(errno.ENOSPC, "No space left on device")
        return write_bytes(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "write_bytes", full)
    assert cli_main([*GAUNTLET, "--json", str(path)]) == 2
    line = one_error(capsys, "gauntlet")
    assert f"--json {path}: cannot write it (No space left on device)" in line


# ---- tournament entrants: a label taken twice merged two entrants' results ---------------------------

def test_entrant_labels_never_repeat_one_already_taken() -> None:
    rules = load_rules("classic_2p")
    agent = make_agent("random", rules)
    labels = [e.label for e in build_entrants(rules, [("a#2", agent), ("a", agent), ("a", agent)])]
    assert labels == ["a#2", "a", "a#3"]  # before: a#2, a, a#2
    # the twin: copies of one name are numbered as before (resumed tournaments keep their labels)
    assert [e.label for e in build_entrants(rules, ["random", "random", "random"])] == \
        ["random", "random#2", "random#3"]


# ---- tournament --ladder: one of --out's files, or in the folder --out makes -------------------------

@pytest.mark.parametrize("name", ["results.json", "hands.csv", "tournament.json"])
def test_a_ladder_named_as_a_file_of_out_is_refused_before_any_game(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # results.json replaced the ladder in silence; hands.csv was refused as a ladder after every game
    out = tmp_path / "t"
    _no_game(monkeypatch)
    ladder = out / ".." / "t" / name
    assert cli_main([*TOURNAMENT, "--hands", "2", "--out", str(out), "--ladder", str(ladder)]) == 2
    assert "a file the tournament writes in --out" in one_error(capsys, "tournament")
    assert not (out / name).exists()


def test_the_shipped_config_runs_on_a_fresh_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # its ladder results/ladder_classic_2p.json lies beside --out results/classic_2p: "no folder
    # results to write it in", though the tournament makes that folder before any game
    monkeypatch.chdir(tmp_path)
    config = ROOT / "configs" / "tournament" / "classic_2p.yaml"
    assert cli_main([*TOURNAMENT, "--config", str(config), "--hands", "2"]) == 0
    ladder = json.loads((tmp_path / "results" / "ladder_classic_2p.json").read_text())
    assert set(ladder["ratings"]) == {"random", "greedy"}
    out = tmp_path / "inside"  # a ladder in the --out folder itself, made by the tournament too
    ladder_in = out / "ladder.json"
    assert cli_main([*TOURNAMENT, "--hands", "2", "--out", str(out), "--ladder", str(ladder_in)]) == 0
    assert (out / "ladder.json").is_file() and (out / "results.json").is_file()


def test_a_ladder_in_a_missing_folder_elsewhere_is_still_refused(  # the twin
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _no_game(monkeypatch)
    assert cli_main([*TOURNAMENT, "--hands", "2", "--out", str(tmp_path / "t"),
                     "--ladder", str(tmp_path / "other" / "ladder.json")]) == 2
    assert "no folder" in one_error(capsys, "tournament")
    assert not (tmp_path / "t").exists()


# ---- intervals from a single deal: a 95% interval of zero width, as if one deal were certain ---------

def _pair(margins: list[float]) -> PairData:
    m = np.array(margins)
    return PairData(0, 1, (m > 0).astype(float), (m == 0).astype(float), (m < 0).astype(float), m)


def test_intervals_of_one_deal_are_nan() -> None:
    one = np.array([-855.0])
    assert all(math.isnan(x) for x in bootstrap_ci(one))  # before: (-855.0, -855.0)
    assert all(math.isnan(x) for x in bootstrap_mean_ci(one, resample_weights(1, 50, 0)))
    ratings = bt_ratings([_pair([-855.0])], 2, resamples=50)
    assert np.isnan(ratings.lo).all() and np.isnan(ratings.hi).all() and np.isfinite(ratings.rating).all()


def test_intervals_of_two_deals_are_numbers() -> None:  # the twin
    two = np.array([-855.0, 120.0])
    lo, hi = bootstrap_ci(two)
    assert lo <= two.mean() <= hi and lo < hi
    lo, hi = bootstrap_mean_ci(two, resample_weights(2, 200, 0))
    assert -855.0 <= lo < hi <= 120.0
    ratings = bt_ratings([_pair([-855.0, 120.0])], 2, resamples=200)
    assert np.isfinite(ratings.lo).all() and (ratings.lo <= ratings.rating).all()


def test_a_tournament_of_one_hand_shows_no_interval(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "t"
    assert cli_main([*TOURNAMENT, "--hands", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "[-, -]" in printed and "nan" not in printed  # before: "0.000 [0.000, 0.000]"
    data = json.loads((out / "results.json").read_text())
    assert data["head_to_head"][0]["win_lo"] is None and data["ratings"][0]["lo"] is None
    assert cli_main([*TOURNAMENT, "--hands", "4"]) == 0  # the twin: intervals of numbers
    assert "[-, -]" not in capsys.readouterr().out


def test_a_gauntlet_of_one_deal_writes_no_interval(tmp_path: Path) -> None:
    path = tmp_path / "g.json"
    assert cli_main([*GAUNTLET, "--json", str(path)]) == 0
    row = json.loads(path.read_text())["rows"][0]
    assert row["win_lo"] is None and row["margin_hi"] is None and row["win_rate"] == 0.0
    assert cli_main([*GAUNTLET[:-1], "2", "--json", str(path)]) == 0  # the twin
    row = json.loads(path.read_text())["rows"][0]
    assert isinstance(row["win_lo"], float) and isinstance(row["margin_hi"], float)


# ---- the files a tournament rewrites go through a temporary file of a new name each time --------------

def test_leftovers_at_fixed_temporary_names_no_longer_block_a_tournament(tmp_path: Path) -> None:
    # a folder at OUT/hands.tmp failed the resume, one at LADDER.tmp failed after every game
    out, ladder = tmp_path / "t", tmp_path / "ladder.json"
    args = [*TOURNAMENT, "--hands", "2", "--out", str(out), "--records"]
    assert cli_main(args) == 0
    for name in ("hands.tmp", "records.tmp"):
        (out / name).mkdir()
    (tmp_path / "ladder.json.tmp").mkdir()
    assert cli_main([*args, "--ladder", str(ladder)]) == 0
    assert set(json.loads(ladder.read_text())["ratings"]) == {"random", "greedy"}
    # the twin: what was written keeps the usual file mode, not mkstemp's 0o600
    assert {oct(p.stat().st_mode & 0o777) for p in (ladder, out / "hands.csv")} == {oct(0o644)}
