"""``canasta train`` and ``canasta selfplay`` end to end in subprocesses: checkpoints, TensorBoard
events, and resume after a SIGKILL mid-rollout, mid-update and mid-checkpoint-write (the resumes, which
need no process of their own, run in this process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agents import make_agent
from agents.checkpoint import checkpoint_name, latest_checkpoint, list_checkpoints, load_checkpoint
from train.cli.main import main as cli_main

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


@pytest.fixture
def canasta_here(capsys: pytest.CaptureFixture[str], one_torch_thread: None
                 ) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``_canasta`` run in this process (``train.cli.main``, what the ``canasta`` script calls), for
    the runs that need no process of their own: a resume after the kill or stop that a subprocess
    took, a run that only makes a checkpoint for the next step. A subprocess spends about 5 s of CPU
    importing torch and loading the kernels before its first step. torch's thread count, which a
    run sets, is restored afterwards."""

    def run(command: str, run_dir: Path, steps: int, *extra: str, resume: bool = False
            ) -> subprocess.CompletedProcess[str]:
        assert not os.environ.get("CANASTA_TEST_KILL_AT")
        args = [command, *TINY, "--run_dir", str(run_dir), "--total_timesteps", str(steps), *extra,
                *(["--resume"] if resume else [])]
        capsys.readouterr()
        try:
            status = cli_main(args)
        except SystemExit as exc:  # argparse's own errors
            status = exc.code if isinstance(exc.code, int) else 1
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["canasta", *args], status, out, err)

    return run


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
def test_sigkill_resumes_from_last_complete_checkpoint(kill: str, algo: str, tmp_path: Path,
                                                       canasta_here: Callable[..., Any]) -> None:
    run = tmp_path / "run"
    killed = _canasta("train", run, 4096, "--algo", algo, kill=kill)
    assert killed.returncode in (-9, 137), (killed.returncode, killed.stderr[-2000:])
    before = latest_checkpoint(run)
    assert before is not None, "the run died before its first checkpoint"
    counter = _steps(before)
    resumed = canasta_here("train", run, 4096, "--algo", algo, resume=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    after = [_steps(p) for p in list_checkpoints(run)]
    assert after == sorted(after), "checkpoint counters must be monotone"
    assert _steps(latest_checkpoint(run)) >= 4096 > counter  # type: ignore[arg-type]
    assert not list(run.glob(".tmp-*")), "partial checkpoint directories left behind"


def test_unknown_config_key_is_refused(tmp_path: Path, cli_here: Callable[..., Any]) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("rules: classic_2p\nlearning_rat: 0.1\n")
    status, err = cli_here("train", "--config", str(config))
    assert status != 0
    assert "learning_rat" in err and str(config) in err


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


def test_league_in_partnerships_with_imitation_end_to_end(tmp_path: Path,
                                                          canasta_here: Callable[..., Any]) -> None:
    """``canasta league`` at 4 players: the policy first clones the heuristic (checkpoint at step
    0), then trains against the default league (heuristic, greedy, its snapshots) drawn by PFSP;
    the league's results are checkpointed and its scores and ratings logged; a resume keeps them."""
    run = tmp_path / "run"
    extra = ["--rules", "classic_4p", "--imitate", "heuristic", "--imitate_steps", "1024",
             "--imitate_epochs", "2"]
    proc = _canasta("league", run, 2048, *extra)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "imitate epoch 2/2: accuracy" in proc.stdout
    # what a run says while it runs, with the bar off: where, each evaluation, a final summary
    assert f"canasta: starting run {run}" in proc.stdout
    assert "eval at 1,024 steps (10 deals): vs random win rate" in proc.stdout
    assert "canasta: done, 2,048 learner steps" in proc.stdout and "best evaluation at" in proc.stdout
    names = [p.name for p in list_checkpoints(run)]
    assert names[0] == checkpoint_name(0) and len(names) >= 3
    state = json.loads((latest_checkpoint(run) / "state.json").read_text())  # type: ignore[operator]
    assert state["opponent_pool"]
    results = state["league_results"]
    assert {"heuristic", "greedy", *state["opponent_pool"]} <= set(results)
    assert sum(sum(results[n]) for n in ("heuristic", "greedy")) > 0  # games were counted
    header = (run / "tb" / "progress.csv").read_text().splitlines()[0]
    assert "league/score_vs_heuristic" in header and "league/elo_heuristic" in header
    config = json.loads((run / "config.json").read_text())
    assert config["league"] == ["heuristic", "greedy"] and config["pfsp"] is True
    resumed = canasta_here("league", run, 3072, *extra, resume=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "imitate" not in resumed.stdout  # the clone is not made again
    assert _steps(latest_checkpoint(run)) >= 3072  # type: ignore[arg-type]


def test_league_members_outside_self_play_are_refused(tmp_path: Path,
                                                      cli_here: Callable[..., tuple[int, str]]) -> None:
    status, err = cli_here("train", *TINY, "--run_dir", str(tmp_path / "run"), "--total_timesteps",
                           "512", "--league", "heuristic")
    assert status == 2 and "canasta league" in err
    assert len(err.strip().splitlines()) == 1


def _interrupt(args: list[str], once_printed: str, signals: int = 1, timeout: int = 120
               ) -> tuple[int, str, str]:
    """Run ``args``, send SIGINT ``signals`` times once a stdout line starts with ``once_printed``;
    the exit status, the rest of stdout and stderr."""
    import signal

    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith(once_printed):
                break
        for _ in range(signals):
            proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=timeout)
    finally:
        proc.kill()
    return proc.returncode, out, err


@pytest.mark.parametrize("algo", ["ppo", "maskable_ppo"])
def test_ctrl_c_stops_at_an_update_and_checkpoints(algo: str, tmp_path: Path,
                                                   canasta_here: Callable[..., Any]) -> None:
    """The first SIGINT ends the run at the next update with a checkpoint (none would be due for
    millions of steps) and exit status 130; the run then resumes from it."""
    run = tmp_path / "run"
    args = [sys.executable, "-m", "train.cli", "train", *TINY, "--run_dir", str(run), "--algo", algo,
            "--total_timesteps", "100000000", "--checkpoint_every", "100000000"]
    status, out, err = _interrupt(args, "eval at")  # the first evaluation line: training is under way
    assert status == 130, err[-2000:]
    assert "stopped by SIGINT; continue with: canasta train" in out
    assert "Traceback" not in err
    stopped = latest_checkpoint(run)
    assert stopped is not None
    counter = _steps(stopped)
    assert 1024 <= counter < 100_000_000
    # every evaluated policy is kept as a checkpoint, though none was due (the summary names it)
    lines = (run / "evaluations.jsonl").read_text().splitlines()
    evaluated = [json.loads(line)["num_timesteps"] for line in lines]
    assert evaluated and set(evaluated) <= {_steps(p) for p in list_checkpoints(run)}
    assert any(f"checkpoint {run / checkpoint_name(at)}" in out for at in evaluated)
    resumed = canasta_here("train", run, counter + 512, "--algo", algo, resume=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"resuming at {counter:,} steps" in resumed.stdout


def test_second_ctrl_c_stops_at_once(tmp_path: Path) -> None:
    run = tmp_path / "run"
    args = [sys.executable, "-m", "train.cli", "train", *TINY, "--run_dir", str(run),
            "--total_timesteps", "100000000", "--eval_every", "100000000"]
    status, _, err = _interrupt(args, "canasta: starting run", signals=2, timeout=60)
    assert status == 130, err[-2000:]
    assert "Traceback" not in err


def test_init_from_starts_a_new_run_from_a_checkpoints_weights(tmp_path: Path,
                                                                canasta_here: Callable[..., Any]) -> None:
    """``--init-from`` loads the weights only: the new run counts from 0; a checkpoint for other
    rules or another network is refused in one line."""
    import torch

    first = tmp_path / "first"
    assert canasta_here("train", first, 512, "--net_arch", "32").returncode == 0
    source = load_checkpoint(first)
    second = tmp_path / "second"
    proc = canasta_here("train", second, 0, "--net_arch", "32", "--init-from", str(first))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "starting from the weights of" in proc.stdout
    started = load_checkpoint(second)
    assert _steps(started.path) == 0
    assert all(torch.equal(started.policy_state[k], v) for k, v in source.policy_state.items())
    from agents.checkpoint import CheckpointError
    from train.learning.config import TrainArgs
    from train.learning.trainer import train

    refused = tmp_path / "refused"
    for change, words in (({"rules": "classic_4p"}, "rules"), ({"net_arch": [64]}, "net_arch"),
                          ({"init_from": str(tmp_path / "none")}, "no such checkpoint")):
        args = TrainArgs(**{"net_arch": [32], "init_from": str(first), "run_dir": str(refused), **change})
        with pytest.raises((ValueError, CheckpointError), match=words):
            train(args)
        assert not (refused / "config.json").exists()  # refused before the run writes anything


@pytest.mark.parametrize("workers", ["1", "2"])
def test_ctrl_c_during_imitation_stops_without_a_traceback(workers: str, tmp_path: Path) -> None:
    run = tmp_path / "run"
    args = [sys.executable, "-m", "train.cli", "league", *TINY, "--run_dir", str(run), "--rules",
            "classic_4p", "--imitate", "heuristic", "--imitate_steps", "1000000",
            "--imitate_workers", workers]
    status, out, err = _interrupt(args, "imitate heuristic: playing", timeout=60)
    assert status == 130, err[-2000:]
    assert "during behaviour cloning" in out and "--resume" in out
    assert "Traceback" not in err
    assert latest_checkpoint(run) is None
