"""Hostile or mistaken output paths and files of the evaluation commands (gauntlet, tournament,
crossplay, ``python -m agents.match``): refused in one line, before any game, never a hang, a
traceback after the games or a JSON file with NaN in it; each case has a twin showing that the valid
neighbour still works."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import train.evaluation.crossplay as crossplay_module
import train.evaluation.tournament as tournament
from agents.match import main as match_main
from tests.one_line import one_error
from train.cli.crossplay import _check_out
from train.cli.main import main as cli_main
from train.evaluation.ratings import deals_to_separate

ROOT = Path(__file__).resolve().parents[2]
TOURNAMENT = ["tournament", "--agents", "random", "greedy", "--rules", "classic_2p", "--no-plots"]


def _strict_json(text: str) -> object:
    """``text`` parsed as JSON proper: NaN and Infinity are not JSON."""
    def refuse(name: str) -> None:
        raise ValueError(f"{name} in JSON")

    return json.loads(text, parse_constant=refuse)


def _no_game(monkeypatch: pytest.MonkeyPatch, module: object) -> None:
    def no_game(*args: object, **kwargs: object) -> None:
        raise AssertionError("a game was played")

    monkeypatch.setattr(module, "play_unit", no_game)


# gauntlet --json: NaN (a variance ratio over one deal) was written as NaN, not JSON; "" was ignored

def test_gauntlet_json_of_one_deal_is_strict_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "g.json"
    assert cli_main(["gauntlet", "greedy", "--opponents", "random", "--deals", "1", "--luck-correction",
                     "--json", str(path)]) == 0
    row = _strict_json(path.read_text())["rows"][0]  # before: "margin_var_ratio": NaN
    assert row["margin_var_ratio"] is None and row["win_var_ratio"] is None


def test_gauntlet_json_of_more_deals_keeps_its_numbers(tmp_path: Path) -> None:  # the twin
    path = tmp_path / "g.json"
    assert cli_main(["gauntlet", "greedy", "--opponents", "random", "--deals", "3", "--luck-correction",
                     "--json", str(path)]) == 0
    row = _strict_json(path.read_text())["rows"][0]
    assert isinstance(row["margin_var_ratio"], float) and 0 <= row["win_rate"] <= 1


def test_gauntlet_refuses_an_empty_json_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["gauntlet", "greedy", "--opponents", "random", "--deals", "1", "--json", ""]) == 2
    assert "--json ''" in one_error(capsys, "gauntlet")  # before: status 0, nothing written


# tournament --target-margin on one deal: "cannot convert float NaN to integer" after every game

def test_deals_to_separate_needs_two_deals() -> None:
    assert deals_to_separate(np.array([120.0]), 50.0) is None
    assert deals_to_separate(np.array([120.0, -40.0]), 50.0) == 41  # the twin: (2.80 * 113.1 / 50)^2 = 40.2


def test_tournament_target_margin_on_one_deal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "t"
    assert cli_main([*TOURNAMENT, "--hands", "1", "--target-margin", "10", "--out", str(out)]) == 0
    assert _strict_json((out / "results.json").read_text())["head_to_head"][0]["deals_needed"] is None
    assert cli_main([*TOURNAMENT, "--hands", "2", "--target-margin", "10"]) == 0  # the twin
    assert "deals for margin 10" in capsys.readouterr().out


# tournament --out holding a folder or pipe where it reads or writes a file

def _finished(tmp_path: Path) -> Path:
    """A tournament folder of two hands."""
    out = tmp_path / "t"
    assert cli_main([*TOURNAMENT, "--hands", "2", "--out", str(out)]) == 0
    return out


@pytest.mark.parametrize("name", ["results.json", "head_to_head.csv", "hands.csv"])
def test_tournament_refuses_a_folder_where_it_writes_a_file_before_any_game(
        name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    out = _finished(tmp_path)
    (out / "hands.csv").unlink()  # its hands to be played again
    (out / name).unlink(missing_ok=True)
    (out / name).mkdir()
    _no_game(monkeypatch, tournament)  # before: every game played, then IsADirectoryError
    assert cli_main([*TOURNAMENT, "--hands", "2", "--out", str(out)]) == 2
    assert f"{name} there is not a regular file" in one_error(capsys, "tournament")


def test_tournament_resumes_a_folder_of_regular_files(tmp_path: Path,  # the twin
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    out = _finished(tmp_path)
    first = (out / "results.json").read_text()
    _no_game(monkeypatch, tournament)  # everything is in the hand log
    assert cli_main([*TOURNAMENT, "--hands", "2", "--out", str(out)]) == 0
    assert (out / "results.json").read_text() == first


@pytest.mark.parametrize("name", ["tournament.json", "hands.csv"])
def test_tournament_refuses_a_pipe_in_its_folder_instead_of_waiting(name: str, tmp_path: Path) -> None:
    out = _finished(tmp_path)
    (out / name).unlink()
    os.mkfifo(out / name)
    try:  # before: reading the pipe waited for a writer forever
        done = subprocess.run([sys.executable, "-m", "train.cli", *TOURNAMENT, "--hands", "2", "--out",
                               str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail(f"canasta tournament waited on the pipe {name}")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and f"{name} there is not a regular file" in lines[0]


# tournament --ladder that counts this tournament but lost an entrant's rating: KeyError after the games

def test_a_ladder_missing_a_counted_entrant_is_refused_before_any_game(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    ladder = tmp_path / "ladder.json"
    argv = [*TOURNAMENT, "--hands", "2", "--ladder", str(ladder)]
    assert cli_main(argv) == 0
    data = json.loads(ladder.read_text())
    del data["ratings"]["greedy"]
    ladder.write_text(json.dumps(data))
    _no_game(monkeypatch, tournament)
    assert cli_main(argv) == 2
    assert "holds no rating for 'greedy'" in one_error(capsys, "tournament")


def test_a_ladder_that_counted_the_tournament_gives_its_ratings(tmp_path: Path,  # the twin
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    ladder = tmp_path / "ladder.json"
    argv = [*TOURNAMENT, "--hands", "2", "--ladder", str(ladder)]
    assert cli_main(argv) == 0
    before = ladder.read_text()
    assert cli_main(argv) == 0 and ladder.read_text() == before  # counted once


# crossplay --out --force over a pipe: every game played, then the write waited forever

def test_crossplay_force_refuses_a_pipe_before_any_game(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "cp"
    out.mkdir()
    os.mkfifo(out / "crossplay.csv")
    _no_game(monkeypatch, crossplay_module)
    assert cli_main(["crossplay", "--agents", "greedy", "random", "--opponents", "random", "--deals", "1",
                     "--out", str(out), "--force"]) == 2
    assert "crossplay.csv there is not a regular file" in one_error(capsys, "crossplay")


def test_crossplay_force_accepts_regular_files(tmp_path: Path) -> None:  # the twin
    out = tmp_path / "cp"
    out.mkdir()
    (out / "crossplay.csv").write_text("old\n")
    _check_out(str(out), True)
    with pytest.raises(ValueError, match="already holds crossplay.csv"):
        _check_out(str(out), False)


# python -m agents.match --seed out of range: the engine's message, not the flag's

@pytest.mark.parametrize("seed", ["-1", str(2**64)])
def test_agents_match_names_a_bad_seed_in_one_line(seed: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        match_main(["classic_2p", "greedy", "random", "--deals", "1", "--seed", seed])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1
    assert err.startswith(f"agents.match: error: --seed {seed}: want a whole number")


def test_agents_match_plays_the_largest_seed(capsys: pytest.CaptureFixture[str]) -> None:  # the twin
    match_main(["classic_2p", "greedy", "random", "--deals", "1", "--seed", str(2**64 - 1)])
    assert "1 deals x 2 seatings" in capsys.readouterr().out


# tournament --ladder in a folder that does not exist: every game played, then FileNotFoundError

def test_a_ladder_in_a_missing_folder_is_refused_before_any_game(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    _no_game(monkeypatch, tournament)
    assert cli_main([*TOURNAMENT, "--hands", "2", "--ladder", str(tmp_path / "none" / "ladder.json")]) == 2
    error = one_error(capsys, "tournament")
    assert "--ladder" in error and "no folder" in error
    # the twin, a new ladder in a folder that exists: test_a_ladder_that_counted_the_tournament_gives_..
