"""``--resume`` on damaged, partial or mismatched run folders: resumed exactly (and said so) or refused
in one line, the folder left as it was; never started over in silence. The twin of each: the intact
run resumes from its latest checkpoint without a word.

One tiny league run (two checkpoints, each a snapshot of the pool) is shared by the module; each test
works on a copy.
"""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

import pytest

from agents.checkpoint import latest_checkpoint
from tests.tiny_runs import TINY, copy_run, folder_digest
from train.cli.main import main as cli_main

TINY_RUN = [*TINY, "--eval-every", "100000"]


def _resume(run: Path, steps: int, *extra: str) -> int:
    return cli_main(["league", "--run-dir", str(run), "--resume", "--total-timesteps", str(steps),
                     "--progress", "false", *extra])


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("shared") / "run"
    assert cli_main(["league", *TINY_RUN, "--league", "greedy", "--run-dir", str(run),
                     "--total-timesteps", "256"]) == 0
    assert latest_checkpoint(run).name == "ckpt_000000256"  # type: ignore[union-attr]
    return run


@pytest.fixture
def run(trained: Path, tmp_path: Path) -> Path:
    return copy_run(trained, tmp_path)


def test_the_intact_run_resumes_from_its_latest_checkpoint_without_a_word(
        run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _resume(run, 384) == 0
    out, err = capsys.readouterr()
    assert "resuming at 256 steps" in out and err == ""
    assert latest_checkpoint(run).name == "ckpt_000000384"  # type: ignore[union-attr]


def test_latest_set_back_by_hand_resumes_from_it_and_names_the_newer_checkpoints(
        run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (run / "latest").write_text("ckpt_000000128\n")
    assert _resume(run, 256) == 0
    out, err = capsys.readouterr()
    assert "resuming at 128 steps" in out  # before: the same, and ckpt_000000256 replaced in silence
    assert err.strip() == (f"warning: {run}: 'latest' names ckpt_000000128; the newer checkpoints "
                           "ckpt_000000256 are kept until training reaches their steps and writes them again")


def test_resume_without_config_json_continues_with_the_checkpoint_s_options(
        run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # meta.json's config holds reward_scale beside the options: it was refused as unknown
    (run / "config.json").unlink()
    assert _resume(run, 384) == 0
    out, err = capsys.readouterr()
    assert "config.json is missing; resuming with the options" in err and "resuming at 256 steps" in out
    assert latest_checkpoint(run).name == "ckpt_000000384"  # type: ignore[union-attr]
    assert "reward_scale" not in (run / "config.json").read_text()


def test_a_deeply_nested_config_json_is_one_line_and_changes_nothing(
        run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (run / "config.json").write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    before = folder_digest(run)
    assert _resume(run, 384) == 2  # was a RecursionError traceback
    err = capsys.readouterr().err
    assert "config.json: unreadable" in err and "remove it to resume" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert folder_digest(run) == before


def test_a_checkpoint_whose_name_disagrees_with_its_state_is_not_resumed_from_silently(
        run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (run / "ckpt_000000256").rename(run / "ckpt_000009999")  # a copy or rename by hand
    (run / "latest").write_text("ckpt_000009999\n")
    before = folder_digest(run)
    assert _resume(run, 384, "--strict-resume") == 2
    err = capsys.readouterr().err
    assert "ckpt_000009999 holds a checkpoint of step 256" in err and "--strict-resume" in err
    assert folder_digest(run) == before
    assert _resume(run, 384) == 0
    out, err = capsys.readouterr()
    assert "ckpt_000009999 holds a checkpoint of step 256" in err and "falling back to" in err
    assert "resuming at 128 steps" in out


def test_a_missing_pool_snapshot_is_named_and_changes_nothing(
        run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.rmtree(run / "ckpt_000000128")  # deleted to save space; ckpt_000000256's pool holds it
    before = folder_digest(run)
    assert _resume(run, 384) == 2
    err = capsys.readouterr().err
    assert "its opponent pool holds the snapshot ckpt_000000128" in err and "nothing was changed" in err
    assert err.count("\n") == 1
    assert folder_digest(run) == before


def test_a_full_disk_at_a_checkpoint_says_where_and_how_to_continue(
        run: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import agents.checkpoint

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(agents.checkpoint, "save_checkpoint", full)
    assert _resume(run, 384) == 2
    err = capsys.readouterr().err
    assert f"{run}: the checkpoint at 384 learner steps could not be written" in err
    assert "No space left on device" in err and "--resume" in err and err.count("\n") == 1
    assert latest_checkpoint(run).name == "ckpt_000000256"  # type: ignore[union-attr]
