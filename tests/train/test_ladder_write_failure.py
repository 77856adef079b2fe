"""A tournament whose ladder cannot be written (a full disk) keeps its games: the tables are printed,
and saved under ``--out`` where given, before one error line says the ladder was not updated (the
games were lost without ``--out``); the twin, a ladder that can be written, is updated as before."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

import train.evaluation.ladder as ladder_module
from tests.one_line import one_error
from train.cli.main import main as cli_main
from train.evaluation.tournament import LadderNotUpdated
from train.evaluation.tournament import run as run_tournament

TOURNAMENT = ["tournament", "--agents", "random", "greedy", "--hands", "2", "--no-plots", "--resamples", "20"]


def _full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    def write_atomic(path: Path, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(ladder_module, "write_atomic", write_atomic)


def test_a_ladder_that_cannot_be_written_prints_the_tables_then_one_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _full_disk(monkeypatch)
    ladder = tmp_path / "ladder.json"
    assert cli_main([*TOURNAMENT, "--ladder", str(ladder)]) == 2
    out, _ = capsys.readouterr()
    assert "random" in out and "greedy" in out and "head to head" in out.lower()
    assert not ladder.exists()


def test_the_error_is_one_line_naming_the_ladder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    _full_disk(monkeypatch)
    ladder = tmp_path / "ladder.json"
    cli_main([*TOURNAMENT, "--ladder", str(ladder)])
    line = one_error(capsys, "tournament")
    assert f"--ladder {ladder}: not updated" in line and "No space left" in line


def test_with_out_the_results_are_saved_though_the_ladder_is_not(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _full_disk(monkeypatch)
    with pytest.raises(LadderNotUpdated) as caught:
        run_tournament("classic_2p", ["random", "greedy"], 2, resamples=20, plots=False,
                       out=tmp_path / "out", ladder=tmp_path / "ladder.json")
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert caught.value.result.labels == ["random", "greedy"]
    assert [r["entrant"] for r in saved["ratings"]] == ["random", "greedy"]


def test_a_ladder_that_can_be_written_is_updated(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:  # the twin
    ladder = tmp_path / "ladder.json"
    assert cli_main([*TOURNAMENT, "--ladder", str(ladder)]) == 0
    assert sorted(json.loads(ladder.read_text())["ratings"]) == ["greedy", "random"]
    assert "head to head" in capsys.readouterr().out.lower()
