"""Run folders of ``canasta train|selfplay|league`` and their resume, round six: what ``--overwrite``
deletes, folders that cannot be run folders, a self-play run resumed by ``canasta train``, tampered
``config.json`` and ``latest``, a resume with nothing to train. Each hostile case is refused (or
reported) in one line with the folder left as it was; its twin shows the valid neighbour still works.

One tiny self-play run (two checkpoints, each a snapshot of the pool, one evaluation) is shared by
the module; each test works on a copy.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agents.checkpoint import latest_checkpoint, load_checkpoint
from tests.tiny_runs import TINY, copy_run, folder_digest
from train.cli.main import main as cli_main

TINY_RUN = [*TINY, "--eval-every", "256"]


def _resume(run: Path, steps: int, *extra: str, command: str = "selfplay") -> int:
    return cli_main([command, "--run-dir", str(run), "--resume", "--total-timesteps", str(steps),
                     "--progress", "false", *extra])


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("shared") / "run"
    assert cli_main(["selfplay", *TINY_RUN, "--run-dir", str(run), "--total-timesteps", "256"]) == 0
    assert latest_checkpoint(run).name == "ckpt_000000256"  # type: ignore[union-attr]
    assert (run / "evaluations.jsonl").is_file()
    return run


@pytest.fixture
def run(trained: Path, tmp_path: Path) -> Path:
    return copy_run(trained, tmp_path)


def test_overwrite_deletes_the_old_run_s_evaluations_and_exploiters_and_keeps_the_user_s_files(
        run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with (run / "evaluations.jsonl").open("a") as f:  # the old run's best evaluation
        f.write(json.dumps({"num_timesteps": 9999, "results": {"random": {"win_rate": 1.0}}}) + "\n")
    (run / "exploiters").mkdir()
    (run / "exploiters" / "rules_000000000128.json").write_text("{}")
    (run / "notes.txt").write_text("mine")
    (run / "data").mkdir()
    (run / "data" / "deals.npz").write_bytes(b"mine")
    capsys.readouterr()
    assert cli_main(["selfplay", *TINY_RUN, "--run-dir", str(run), "--total-timesteps", "256",
                     "--overwrite"]) == 0
    out = capsys.readouterr().out
    assert "9,999" not in out  # was: "best evaluation at 9,999 steps (mean win rate 1.000)"
    lines = [json.loads(line) for line in (run / "evaluations.jsonl").read_text().splitlines()]
    assert [line["num_timesteps"] for line in lines] == [256]
    assert not (run / "exploiters").exists()  # was kept: its records seeded the new run's rule search
    assert (run / "notes.txt").read_text() == "mine" and (run / "data" / "deals.npz").read_bytes() == b"mine"


def test_train_resume_of_a_self_play_run_is_refused_and_changes_nothing(
        run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = folder_digest(run)
    assert _resume(run, 384, command="train") == 2  # was: trained on against random, the pool dropped
    err = capsys.readouterr().err
    assert "a self-play run's checkpoint (its opponent pool holds 2 snapshots)" in err
    assert "canasta selfplay" in err and err.count("\n") == 1
    assert folder_digest(run) == before
    assert _resume(run, 384) == 0  # the twin: canasta selfplay continues it, pool and all
    state = load_checkpoint(run / "ckpt_000000384").state
    assert state["opponent_pool"][:2] == ["ckpt_000000128", "ckpt_000000256"]


def test_train_resume_of_a_run_without_a_pool_is_accepted(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert cli_main(["train", *TINY_RUN, "--run-dir", str(run), "--total-timesteps", "128"]) == 0
    assert _resume(run, 256, command="train") == 0
    assert latest_checkpoint(run).name == "ckpt_000000256"  # type: ignore[union-attr]


def test_a_config_json_with_a_key_twice_is_refused_and_changes_nothing(
        run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (run / "config.json").read_text()
    (run / "config.json").write_text(text.rstrip().rstrip("}") + ', "seed": 7\n}')
    before = folder_digest(run)
    assert _resume(run, 384) == 2  # was: the second seed taken in silence
    err = capsys.readouterr().err
    assert "config.json: unreadable (duplicate key 'seed')" in err and err.count("\n") == 1
    assert folder_digest(run) == before
    (run / "config.json").write_text(text)  # the twin: each key once
    assert _resume(run, 384) == 0


def test_a_config_json_that_is_a_folder_is_refused_before_a_word_of_resuming(
        run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (run / "config.json").unlink()
    (run / "config.json").mkdir()
    (run / "config.json" / "keep").write_text("mine")
    before = folder_digest(run)
    assert _resume(run, 384) == 2
    err = capsys.readouterr().err
    # was: "config.json is missing; resuming with ..." then "[Errno 21] Is a directory" after the
    # checkpoint loaded, and a .tmp-config.json left behind
    assert err == (f"canasta selfplay: error: {run / 'config.json'}: not a file (it holds the run's "
                   "options); remove it\n")
    assert folder_digest(run) == before and not list(run.glob(".tmp-*"))


def test_a_config_json_link_to_nothing_resumes_with_the_checkpoint_s_options(
        run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (run / "config.json").unlink()
    (run / "config.json").symlink_to("nowhere")
    assert _resume(run, 384) == 0
    assert "config.json is missing; resuming with the options" in capsys.readouterr().err
    assert (run / "config.json").is_file() and not (run / "config.json").is_symlink()


@pytest.mark.parametrize("text", ["../other/ckpt_000000256", "/tmp/ckpt_000000256", ".hidden", ""])
def test_latest_holding_no_checkpoint_name_is_reported_and_strict_resume_refuses(
        run: Path, capsys: pytest.CaptureFixture[str], text: str) -> None:
    (run / "latest").write_text(text + "\n")
    before = folder_digest(run)
    assert _resume(run, 384, "--strict-resume") == 2  # was: passed over in silence
    err = capsys.readouterr().err
    assert "'latest' holds no checkpoint name of this folder" in err and "--strict-resume" in err
    assert folder_digest(run) == before
    assert _resume(run, 384) == 0
    out, err = capsys.readouterr()
    assert "'latest' holds no checkpoint name" in err and "falling back to" in err
    assert "resuming at 256 steps" in out


def test_latest_naming_a_checkpoint_resumes_from_it_without_a_word(
        run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (run / "latest").write_text("ckpt_000000256\n")
    assert _resume(run, 384, "--strict-resume") == 0
    out, err = capsys.readouterr()
    assert "resuming at 256 steps" in out and err == ""


def _dangling(tmp_path: Path) -> tuple[Path, str]:
    (tmp_path / "dl").symlink_to(tmp_path / "nowhere")
    return tmp_path / "dl", "is a symbolic link to"


def _loop(tmp_path: Path) -> tuple[Path, str]:
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    return tmp_path / "loop", "which does not exist or loops"


def _under_file(tmp_path: Path) -> tuple[Path, str]:
    (tmp_path / "afile").write_text("mine")
    return tmp_path / "afile" / "run", f"{tmp_path / 'afile'} is a file, not a folder"


@pytest.mark.parametrize("make", [_dangling, _loop, _under_file])
def test_a_run_dir_that_cannot_be_a_folder_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     make: object) -> None:
    path, why = make(tmp_path)  # type: ignore[operator]
    before = sorted(os.listdir(tmp_path))
    assert cli_main(["train", *TINY_RUN, "--run-dir", str(path), "--total-timesteps", "128"]) == 2
    err = capsys.readouterr().err
    assert why in err and "File exists" not in err and "Errno" not in err and err.count("\n") == 1
    assert sorted(os.listdir(tmp_path)) == before


def test_a_checkpoint_as_run_dir_is_refused_and_a_link_to_a_folder_is_a_run_dir(
        run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = folder_digest(run)
    checkpoint = run / "ckpt_000000256"  # was: a run written into it, deleted when its run rewrites it
    assert cli_main(["train", *TINY_RUN, "--run-dir", str(checkpoint), "--total-timesteps", "128"]) == 2
    assert "a checkpoint, not a run directory" in capsys.readouterr().err
    assert folder_digest(run) == before
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")  # the twin: a link to a folder is a folder
    link = str(tmp_path / "link")
    assert cli_main(["train", *TINY_RUN, "--run-dir", link, "--total-timesteps", "128"]) == 0
    assert latest_checkpoint(tmp_path / "real").name == "ckpt_000000128"  # type: ignore[union-attr]


def test_a_resume_with_nothing_to_train_says_so_and_keeps_the_checkpoint(
        run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = ("policy.safetensors", "optimizer.pt", "state.json")
    before = {f: (run / "ckpt_000000256" / f).read_bytes() for f in files}
    assert _resume(run, 256) == 0
    out = capsys.readouterr().out
    assert "resuming at 256 steps" in out and "nothing to train (raise --total-timesteps to go on)" in out
    assert {f: (run / "ckpt_000000256" / f).read_bytes() for f in files} == before
    assert _resume(run, 384) == 0  # the twin: a higher total trains on, without the notice
    out = capsys.readouterr().out
    assert "nothing to train" not in out
    assert latest_checkpoint(run).name == "ckpt_000000384"  # type: ignore[union-attr]
