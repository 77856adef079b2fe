"""Output paths and resource limits of ``canasta exploit --family heuristic``, ``canasta export
--format sb3`` and ``canasta bench``, refused in one line (exit 2) before the work, never after it
or as a traceback; each with its valid neighbour."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from canasta_env.engine import core
from train.cli import bench
from train.evaluation import rule_exploit

Cli = Callable[..., tuple[int, str]]
SEARCH = ("heuristic", "--family", "heuristic", "--budget", "3", "--deals", "2", "--fresh-deals", "2",
          "--no-progress")


@pytest.mark.parametrize("under", ["", "sub"])
def test_heuristic_run_dir_under_a_file_is_refused_before_the_search(
        cli_here: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, under: str) -> None:
    (tmp_path / "afile").write_text("keep")
    monkeypatch.setattr(rule_exploit, "exploit_rules", lambda *a, **k: pytest.fail("searched"))
    status, err = cli_here("exploit", *SEARCH, "--run-dir", str(tmp_path / "afile" / under))
    assert status == 2 and err.count("\n") == 1 and "--run-dir" in err and "is a file" in err, err
    assert (tmp_path / "afile").read_text() == "keep"


def test_heuristic_run_dir_new_nested_folder_is_made(cli_here: Cli, tmp_path: Path) -> None:
    status, err = cli_here("exploit", *SEARCH, "--run-dir", str(tmp_path / "a" / "b"))
    assert status == 0, err
    assert (tmp_path / "a" / "b" / "exploit.json").is_file()


def test_sb3_export_refuses_a_missing_folder_and_a_broken_link(cli_here: Cli, tmp_path: Path) -> None:
    status, err = cli_here("export", "zoo:classic_2p", "--format", "sb3", str(tmp_path / "nodir" / "m.zip"))
    assert status == 2 and "no folder" in err and err.count("\n") == 1, err
    assert not (tmp_path / "nodir").exists()  # SB3 would have made it
    (tmp_path / "link.zip").symlink_to(tmp_path / "elsewhere.zip")
    status, err = cli_here("export", "zoo:classic_2p", "--format", "sb3", str(tmp_path / "link.zip"))
    assert status == 2 and "--force" in err, err
    assert not (tmp_path / "elsewhere.zip").exists()
    status, err = cli_here("export", "zoo:classic_2p", "--format", "sb3", str(tmp_path / "m.zip"))
    assert status == 0 and (tmp_path / "m.zip").is_file(), err  # the twin: an existing folder


def test_bench_out_of_memory_is_one_line(cli_here: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    def starved(*args: object, **kwargs: object) -> None:
        raise MemoryError

    monkeypatch.setattr(bench, "run_env_bench", starved)
    monkeypatch.setattr(core, "available_memory", lambda: None)  # past bench's own estimate
    status, err = cli_here("bench", "--api", "vec", "--batch", "2000000", "--rules", "classic_2p", "--json")
    assert status == 2 and err.count("\n") == 1 and "--batch 2000000: out of memory" in err, err


def test_bench_small_vec_batch_still_measures(cli_here: Cli, capsys: pytest.CaptureFixture[str]) -> None:
    status, err = cli_here("bench", "--api", "vec", "--batch", "2", "--rules", "classic_2p", "--seconds",
                           "0.05", "--json")
    assert status == 0, err


def test_a_refused_start_leaves_no_run_folder_behind(tmp_path: Path, cli_here: Any) -> None:
    new = tmp_path / "new" / "run"
    status, err = cli_here("league", "--rules", "classic_2p", "--league", "nosuch", "--run-dir", str(new),
                           "--total-timesteps", "256")
    assert status == 2 and "nosuch" in err
    assert not (tmp_path / "new").exists()  # before: new/run holding only its .lock
    status, _ = cli_here("exploit", "random", "--rules", "classic_2p", "--init-from", "zoo:classic_4p",
                         "--run-dir", str(new), "--budget", "256")
    assert status == 2 and not (tmp_path / "new").exists()
    mine = tmp_path / "mine"  # the twin: a folder that was there before stays, and what is in it
    mine.mkdir()
    (mine / "notes.txt").write_text("kept")
    status, _ = cli_here("league", "--rules", "classic_2p", "--league", "nosuch", "--run-dir", str(mine),
                         "--total-timesteps", "256")
    assert status == 2 and (mine / "notes.txt").read_text() == "kept"


def test_exploit_names_its_own_flags_for_its_run_dir(tmp_path: Path, cli_here: Any) -> None:
    status, err = cli_here("exploit", "random", "--rules", "classic_2p", "--run-dir", "", "--budget", "256")
    assert status == 2 and "--run-dir '': not a folder name" in err  # before: the default folder, silently
    run = tmp_path / "held"
    run.mkdir()
    (run / "config.json").write_text("{}")
    status, err = cli_here("exploit", "random", "--rules", "classic_2p", "--run-dir", str(run),
                           "--budget", "256")
    assert status == 2 and "already holds a run; give --overwrite" in err and "--resume" not in err
