"""Run directories and tournament folders: one writer at a time, no silent overwrite, loud resume.

One tiny training run (two checkpoints) is shared by the module; each test works on a copy.
"""

from __future__ import annotations

import csv
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agents.checkpoint import latest_checkpoint, list_checkpoints
from tests.tiny_runs import folder_digest
from train.cli.main import main as cli_main
from train.common.folder_lock import FolderLock, FolderLockedError

TINY = ["--rules", "classic_2p", "--num_envs", "32", "--n_steps", "16", "--batch_size", "256",
        "--n_epochs", "1", "--checkpoint_every", "512", "--eval_every", "100000", "--eval_deals", "4",
        "--progress", "false"]


def _train(run: Path, steps: int, *extra: str) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, "-m", "train.cli", "train", *TINY, "--run_dir", str(run),
            "--total_timesteps", str(steps), *extra]
    return subprocess.run(args, capture_output=True, text=True, timeout=300)


def _progress(run: Path) -> list[dict[str, str]]:
    with (run / "tb" / "progress.csv").open() as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("shared") / "run"
    proc = _train(run, 1024)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert len(list_checkpoints(run)) == 2
    return run


@pytest.fixture
def run(trained: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(trained, copy)
    return copy


def test_fresh_train_on_an_existing_run_is_refused_and_changes_nothing(
        run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = folder_digest(run)
    assert cli_main(["train", *TINY, "--run_dir", str(run), "--total_timesteps", "512"]) == 2
    err = capsys.readouterr().err
    assert "already holds a run" in err and "--resume" in err and "Traceback" not in err
    assert folder_digest(run) == before


def test_resume_on_a_folder_without_a_run_is_refused(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "typo"
    assert cli_main(["train", *TINY, "--run_dir", str(missing), "--resume"]) == 2
    assert "holds no run" in capsys.readouterr().err
    assert not missing.exists()


def test_overwrite_replaces_the_old_run(run: Path) -> None:
    (run / "notes.txt").write_text("mine")
    (run / "data").mkdir()
    (run / "data" / "meta.json").write_text("{}")  # not a checkpoint: kept
    proc = _train(run, 512, "--overwrite")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [p.name for p in list_checkpoints(run)] == ["ckpt_000000512"]
    assert (run / "notes.txt").read_text() == "mine", "files a run did not write are kept"
    assert (run / "data" / "meta.json").read_text() == "{}"
    assert len(_progress(run)) == 1  # one rollout of 512 steps; the old rows are gone


def test_damaged_latest_is_reported_and_strict_resume_refuses(run: Path) -> None:
    latest = latest_checkpoint(run)
    assert latest is not None and latest.name == "ckpt_000001024"
    optimizer = latest / "optimizer.pt"
    optimizer.write_bytes(optimizer.read_bytes()[:100])  # truncated
    config = (run / "config.json").read_bytes()
    strict = _train(run, 1536, "--resume", "--strict-resume")
    assert strict.returncode == 2 and "Traceback" not in strict.stderr
    assert "optimizer.pt" in strict.stderr and "--strict-resume" in strict.stderr
    assert (run / "config.json").read_bytes() == config, "a refused resume leaves the run as it was"
    rows_before = _progress(run)
    loose = _train(run, 1536, "--resume")
    assert loose.returncode == 0, loose.stderr[-2000:]
    assert "warning:" in loose.stderr and "optimizer.pt" in loose.stderr
    assert "falling back to" in loose.stderr and "ckpt_000000512" in loose.stderr
    assert latest_checkpoint(run).name == "ckpt_000001536"  # type: ignore[union-attr]
    rows_after = _progress(run)
    kept = [{k: r[k] for k in rows_before[0]} for r in rows_after[:len(rows_before)]]
    assert kept == rows_before, "a resume must append, not truncate"
    assert len(rows_after) > len(rows_before)


def test_resume_with_another_network_is_one_line_and_changes_nothing(
        run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = folder_digest(run)
    assert cli_main(["train", *TINY, "--run_dir", str(run), "--resume", "--net_arch", "32"]) == 2
    err = capsys.readouterr().err
    assert "keeps the run's net_arch" in err and "Traceback" not in err and err.count("\n") == 1
    assert folder_digest(run) == before


@pytest.mark.parametrize("change", [["--rules", "classic_4p"], ["--algo", "maskable_ppo"],
                                    ["--reward_mode", "win_loss"]])
def test_resume_never_changes_what_the_run_was_trained_as(
        run: Path, change: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    before = folder_digest(run)
    tiny = [a for a in TINY if a not in ("--rules", "classic_2p")]
    assert cli_main(["train", *tiny, "--run_dir", str(run), "--resume", *change]) == 2
    err = capsys.readouterr().err
    assert f"keeps the run's {change[0][2:]}" in err and "--overwrite" in err and "Traceback" not in err
    assert folder_digest(run) == before, "a refused resume leaves the run as it was"


def test_resume_with_every_checkpoint_damaged_stops_and_changes_nothing(
        run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for ckpt in list_checkpoints(run):
        policy = ckpt / "policy.safetensors"
        policy.write_bytes(policy.read_bytes()[:64])
    before = folder_digest(run)
    assert cli_main(["train", *TINY, "--run_dir", str(run), "--resume", "--total_timesteps", "2048"]) == 2
    err = capsys.readouterr().err
    assert "no intact checkpoint" in err and "nothing was changed" in err and "Traceback" not in err
    assert err.count("\n") == 1
    assert folder_digest(run) == before, "a resume must not start over on a damaged run"


@pytest.mark.parametrize("damaged", ["every", "newest"])
def test_resume_without_latest_never_passes_over_a_damaged_checkpoint(
        run: Path, damaged: str, capsys: pytest.CaptureFixture[str]) -> None:
    (run / "latest").unlink()
    checkpoints = list_checkpoints(run)
    for ckpt in checkpoints if damaged == "every" else checkpoints[-1:]:
        policy = ckpt / "policy.safetensors"
        policy.write_bytes(policy.read_bytes()[:100])  # incomplete: its size no longer matches
    before = folder_digest(run)
    args = ["train", *TINY, "--run_dir", str(run), "--resume", "--total_timesteps", "2048"]
    assert cli_main(args if damaged == "every" else [*args, "--strict-resume"]) == 2
    err = capsys.readouterr().err
    assert "ckpt_000001024 is incomplete" in err and "Traceback" not in err and err.count("\n") == 1
    assert ("no intact checkpoint" if damaged == "every" else "--strict-resume") in err
    assert folder_digest(run) == before, "a resume must not start over or write over damaged checkpoints"


def test_resume_without_config_json_takes_the_checkpoint_s_options_and_says_so(
        run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (run / "config.json").unlink()
    before = folder_digest(run)
    assert cli_main(["train", *TINY, "--run_dir", str(run), "--resume", "--net_arch", "32"]) == 2
    err = capsys.readouterr().err
    assert "config.json is missing; resuming with the options" in err and "ckpt_000001024" in err
    assert "keeps the run's net_arch" in err and "meta.json" in err  # the stored options, not defaults
    assert folder_digest(run) == before


def test_a_directory_in_place_of_latest_is_refused_before_training(
        run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (run / "latest").unlink()
    (run / "latest").mkdir()
    before = folder_digest(run)
    assert cli_main(["train", *TINY, "--run_dir", str(run), "--resume", "--total_timesteps", "2048"]) == 2
    err = capsys.readouterr().err
    assert "latest: not a file" in err and err.count("\n") == 1
    assert folder_digest(run) == before


def test_a_locked_run_directory_is_refused_naming_the_holder(run: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    with FolderLock(run, "run directory"):
        before = folder_digest(run)
        assert cli_main(["train", *TINY, "--run_dir", str(run), "--resume"]) == 2
        assert folder_digest(run) == before
    err = capsys.readouterr().err
    assert f"PID {os.getpid()}" in err and "in use" in err


def test_two_concurrent_trains_second_exits_at_once_first_completes(tmp_path: Path) -> None:
    run = tmp_path / "run"
    args = [sys.executable, "-m", "train.cli", "train", *TINY, "--run_dir", str(run),
            "--total_timesteps", "1024"]
    first = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (run / "config.json").exists():
        assert first.poll() is None, first.communicate()[1][-2000:]
        assert time.monotonic() < deadline
        time.sleep(0.1)
    start = time.monotonic()
    second = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert time.monotonic() - start < 15  # the refusal itself is immediate; most of this is imports
    assert second.returncode == 2 and f"PID {first.pid}" in second.stderr, second.stderr[-2000:]
    assert first.wait(timeout=300) == 0, first.communicate()[1][-2000:]
    assert [p.name for p in list_checkpoints(run)] == ["ckpt_000000512", "ckpt_000001024"]
    steps = [int(r["time/total_timesteps"]) for r in _progress(run)]
    assert steps == sorted(steps) and len(steps) == len(set(steps)), "rows of one run, in order"


def test_lock_is_released_when_its_holder_is_killed(tmp_path: Path) -> None:
    code = ("import sys, time; from train.common.folder_lock import FolderLock; "
            f"FolderLock({str(tmp_path)!r}).acquire(); print('held', flush=True); time.sleep(60)")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    with pytest.raises(FolderLockedError, match=f"PID {holder.pid}"):
        FolderLock(tmp_path).acquire()
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    FolderLock(tmp_path).acquire().release()  # the stale lock file does not block


def test_a_locked_tournament_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    with FolderLock(out, "tournament folder"):
        assert cli_main(["tournament", "--agents", "random", "greedy", "--hands", "4", "--out", str(out),
                         "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert f"PID {os.getpid()}" in err and "Traceback" not in err
    assert not (out / "hands.csv").exists()
    assert cli_main(["tournament", "--agents", "random", "greedy", "--hands", "4", "--out", str(out),
                     "--no-plots"]) == 0
    assert (out / "hands.csv").exists()
