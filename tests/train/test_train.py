"""``canasta train`` and ``canasta selfplay`` end to end in subprocesses: checkpoints, TensorBoard
events, and resume after a SIGKILL mid-rollout, mid-update and mid-checkpoint-write."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents import make_agent
from agents.checkpoint import latest_checkpoint, list_checkpoints, load_checkpoint

TINY = ["--rules", "classic_2p", "--num_envs", "32", "--n_steps", "16", "--batch_size", "256",
        "--n_epochs", "1", "--checkpoint_every", "512", "--eval_every", "1024", "--eval_deals", "10",
        "--snapshot_every", "512", "--progress", "false"]


def _canasta(command: str, run_dir: Path, steps: int, *extra: str, kill: str | None = None,
             resume: bool = False) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("CANASTA_TEST_KILL_AT", None)
    if kill:
        env["CANASTA_TEST_KILL_AT"] = kill
    args = [sys.executable, "-m", "train.cli", command, *TINY, "--run_dir", str(run_dir),
            "--total_timesteps", str(steps), *extra, *(["--resume"] if resume else [])]
    return subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)


def _steps(path: Path) -> int:
    return int(json.loads((path / "state.json").read_text())["num_timesteps"])


@pytest.mark.parametrize(("command", "algo"), [("train", "ppo"), ("selfplay", "ppo"),
                                               ("train", "maskable_ppo"), ("selfplay", "maskable_ppo")])
def test_runs_end_to_end_and_leaves_a_loadable_checkpoint(command: str, algo: str, tmp_path: Path) -> None:
    run = tmp_path / "run"
    # evaluation on a fixed deal set, its hands recorded
    extra = ["--eval_deal_set", "v1", "--eval_records", "true"] if command == "train" else []
    proc = _canasta(command, run, 1024, "--algo", algo, *extra)
    assert proc.returncode == 0, proc.stderr[-2000:]
    latest = latest_checkpoint(run)
    assert latest is not None and _steps(latest) >= 1024
    ckpt = load_checkpoint(run, rules="classic_2p")
    assert ckpt.meta["rules"]["num_players"] == 2
    assert list((run / "tb").glob("events.out.tfevents.*")), "no TensorBoard events"
    agent = make_agent(str(run), "classic_2p")  # the learned policy plays as an agent
    assert agent.name.startswith("policy:")
    if command == "selfplay":
        assert json.loads((latest / "state.json").read_text())["opponent_pool"]
    else:  # every evaluation hand is a game record that replays exactly
        from canasta_env.records import read_records, replay

        records = read_records(run / "eval_records.jsonl")
        assert records and len(records) % (10 * 2) == 0  # 10 deals x 2 seatings per evaluation
        assert {records[0].seats[0], records[0].seats[1]} & {"random"}
        replay(records[0])


@pytest.mark.parametrize(("kill", "algo"), [
    ("rollout@40", "ppo"), ("update@3", "ppo"), ("checkpoint_write@2", "ppo"), ("checkpoint_rename@2", "ppo"),
    ("checkpoint_latest@2", "ppo"), ("rollout@40", "maskable_ppo"), ("update@3", "maskable_ppo")])
def test_sigkill_resumes_from_last_complete_checkpoint(kill: str, algo: str, tmp_path: Path) -> None:
    run = tmp_path / "run"
    killed = _canasta("train", run, 4096, "--algo", algo, kill=kill)
    assert killed.returncode in (-9, 137), (killed.returncode, killed.stderr[-2000:])
    before = latest_checkpoint(run)
    assert before is not None, "the run died before its first checkpoint"
    counter = _steps(before)
    resumed = _canasta("train", run, 4096, "--algo", algo, resume=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    after = [_steps(p) for p in list_checkpoints(run)]
    assert after == sorted(after), "checkpoint counters must be monotone"
    assert _steps(latest_checkpoint(run)) >= 4096 > counter  # type: ignore[arg-type]
    assert not list(run.glob(".tmp-*")), "partial checkpoint directories left behind"


def test_unknown_config_key_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("rules: classic_2p\nlearning_rat: 0.1\n")
    proc = subprocess.run([sys.executable, "-m", "train.cli", "train", "--config", str(config)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "learning_rat" in proc.stderr and str(config) in proc.stderr


@pytest.mark.parametrize("preset", ["railroad_2p", "pennies_6p"])
def test_variant_config_trains(preset: str, tmp_path: Path) -> None:
    """``canasta train --config`` with the shipped Railroad and Pennies configs (issue 6): a tiny
    run leaves a checkpoint whose policy plays the variant."""
    run = tmp_path / "run"
    args = [sys.executable, "-m", "train.cli", "train", "--config", f"configs/train/ppo_{preset}.yaml",
            "--num_envs", "16", "--n_steps", "16", "--batch_size", "256", "--n_epochs", "1",
            "--total_timesteps", "1024", "--checkpoint_every", "1024", "--eval_every", "1024",
            "--eval_deals", "4", "--progress", "false", "--run_dir", str(run)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert load_checkpoint(run, rules=preset).meta["rules"]["name"] == preset
    assert make_agent(str(run), preset).name.startswith("policy:")
