"""Ray, on one local cluster of 2 CPUs shared by this module (one xdist group): ``canasta tournament
--ray`` gives hand logs, records and ratings byte for byte those of the local run, and a worker killed
mid-unit loses and duplicates nothing; ``canasta league --ray`` trains with 2 rollout actors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents import make_agent
from agents.checkpoint import latest_checkpoint, load_checkpoint
from train.evaluation.ray_units import KILL_ENV
from train.evaluation.tournament import run

pytestmark = pytest.mark.xdist_group("ray")  # the Ray tests share one cluster (tests/train/conftest.py)

OUTPUTS = ("hands.csv", "records.jsonl", "ratings.csv", "head_to_head.csv", "results.json")
# a round robin of three (three matches, so both workers have units), every hand recorded
TOURNAMENT = {"rules": "classic_2p", "entrants": ["random", "greedy", "heuristic"], "hands": 24,
              "duplicate": True, "deal_set": "v1", "records": True, "plots": False}




@pytest.fixture(scope="module")
def local_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("local")
    run(TOURNAMENT["rules"], TOURNAMENT["entrants"], TOURNAMENT["hands"], duplicate=True,
        deal_set="v1", records=True, plots=False, out=out)
    return out


def _same_outputs(a: Path, b: Path) -> None:
    for name in OUTPUTS:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_ray_tournament_is_byte_identical_to_local(cluster: str, local_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "ray"
    result = run(TOURNAMENT["rules"], TOURNAMENT["entrants"], TOURNAMENT["hands"], duplicate=True,
                 deal_set="v1", records=True, plots=False, out=out, on_ray=cluster)
    _same_outputs(local_run, out)
    assert len(result.hands["deal"]) == 3 * 24


def test_killed_worker_is_retried_without_losing_or_duplicating_hands(cluster: str, local_run: Path,
                                                                      tmp_path: Path) -> None:
    out, marker = tmp_path / "ray", tmp_path / "killed"
    env = {**os.environ, KILL_ENV: f"ray_unit@{marker}"}
    proc = subprocess.run([sys.executable, "-m", "train.cli", "tournament", "--rules", "classic_2p",
                           "--agents", *TOURNAMENT["entrants"], "--hands", "24", "--duplicate",
                           "--deal-set", "v1", "--records", "--no-plots", "--out", str(out),
                           "--ray", cluster], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert marker.exists(), "no worker was killed"
    _same_outputs(local_run, out)


def test_unreachable_cluster_is_one_line(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "train.cli", "tournament", "--agents", "random", "greedy",
                           "--hands", "2", "--ray", "127.0.0.1:1"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    (line,) = proc.stderr.strip().splitlines()
    assert "--ray 127.0.0.1:1" in line


def test_league_collects_on_two_ray_workers_and_checkpoints(cluster: str, tmp_path: Path) -> None:
    """Rollouts on 2 actors, their pools mirroring the driver's (snapshots join mid-run), a few
    updates, a checkpoint that loads and plays, the league's results gathered from the workers."""
    run_dir = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "train.cli", "league", "--rules", "classic_2p",
                           "--num-envs", "32", "--n-steps", "16", "--batch-size", "256", "--n-epochs", "1",
                           "--total-timesteps", "2560", "--snapshot-every", "512",
                           "--checkpoint-every", "1024", "--eval-every", "100000", "--progress", "false",
                           "--run-dir", str(run_dir), "--ray", cluster, "--num-workers", "2"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ckpt = load_checkpoint(run_dir, rules="classic_2p")
    assert ckpt.state["num_timesteps"] >= 2560
    assert len(ckpt.state["opponent_pool"]) >= 3  # snapshots made while the workers played
    results = ckpt.state["league_results"]
    assert sum(sum(results[name]) for name in ("heuristic", "greedy")) > 0  # games counted on the workers
    assert make_agent(str(latest_checkpoint(run_dir)), "classic_2p").name.startswith("policy:")
    # the stored config says ray; --ray none resumes it here without Ray
    resumed = subprocess.run([sys.executable, "-m", "train.cli", "league", "--run-dir", str(run_dir),
                              "--resume", "--total-timesteps", "3072", "--ray", "none"],
                             capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert json.loads((run_dir / "config.json").read_text())["ray"] is None
    assert load_checkpoint(run_dir).state["num_timesteps"] >= 3072


def test_ray_training_needs_the_lean_trainer(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "train.cli", "train", "--algo", "maskable_ppo", "--ray",
                           "--run-dir", str(tmp_path / "run")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert "ray needs algo 'ppo'" in line


def test_more_rollout_workers_than_cluster_cpus_is_refused(cluster: str, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "train.cli", "train", "--ray", cluster, "--num-workers",
                           "64", "--run-dir", str(run_dir)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    (line,) = proc.stderr.strip().splitlines()
    assert "num_workers = 64" in line and "2 CPUs" in line
    assert not (run_dir / "config.json").exists()
