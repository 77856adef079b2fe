"""``canasta bench --api aec|gym|vec``: the env APIs under random legal play."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ENV_KEYS = ("api", "rules", "batch", "steps_per_s", "hands_per_s", "steps_per_hand", "seconds",
            "compile_s")


def _run_python(code: str) -> subprocess.CompletedProcess[str]:
    # Generous timeout: on a cold numba cache the first engine call compiles for tens of seconds.
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          timeout=600)


def _lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def _check(row: dict, api: str, rules: str, batch: int) -> None:
    assert tuple(row) == ENV_KEYS
    assert (row["api"], row["rules"], row["batch"]) == (api, rules, batch)
    for key in ("steps_per_s", "hands_per_s", "steps_per_hand", "seconds", "compile_s"):
        assert isinstance(row[key], (int, float)) and row[key] > 0, (key, row)
    assert row["steps_per_hand"] == pytest.approx(row["steps_per_s"] / row["hands_per_s"], rel=1e-3)


def test_aec_and_gym_json_lines_without_torch() -> None:
    code = (
        "import sys\n"
        "import train.cli.main\n"
        "for api in ('aec', 'gym'):\n"
        "    train.cli.main.main(['bench', '--api', api, '--rules', 'classic_2p', 'classic_4p',\n"
        "                    '--seconds', '0.25', '--json'])\n"
        "print('torch' in sys.modules)\n"
    )
    proc = _run_python(code)
    assert proc.returncode == 0, proc.stderr
    rows = _lines(proc.stdout)
    assert [(r["api"], r["rules"]) for r in rows] == [
        ("aec", "classic_2p"), ("aec", "classic_4p"), ("gym", "classic_2p"), ("gym", "classic_4p")]
    for r in rows:
        _check(r, r["api"], r["rules"], 1)
    aec_2p, _, gym_2p, _ = rows
    # An AEC step is one decision, a gym step one learner decision with the opponent's in between.
    assert 110 < aec_2p["steps_per_hand"] < 170
    assert gym_2p["steps_per_hand"] < aec_2p["steps_per_hand"] * 0.7
    assert proc.stdout.splitlines()[-1] == "False"


def test_vec_json_lines_and_default_batch() -> None:
    code = (
        "import train.cli.main\n"
        "train.cli.main.main(['bench', '--api', 'vec', '--rules', 'classic_3p', '--batch', '8', '64',\n"
        "                '--seconds', '0.3', '--stagger', '64', '--json'])\n"
        "train.cli.main.main(['bench', '--api', 'vec', '--rules', 'classic_2p', '--seconds', '0.05',\n"
        "                '--stagger', '0', '--json'])\n"
    )
    proc = _run_python(code)
    assert proc.returncode == 0, proc.stderr
    rows = _lines(proc.stdout)
    assert [(r["rules"], r["batch"]) for r in rows] == [
        ("classic_3p", 8), ("classic_3p", 64), ("classic_2p", 1024)]
    for r in rows[:2]:
        _check(r, "vec", "classic_3p", r["batch"])
    assert rows[2]["steps_per_s"] > 0


def test_env_api_table() -> None:
    proc = subprocess.run([sys.executable, "-m", "train.cli", "bench", "--api", "gym", "--rules",
                           "classic_3p", "--seconds", "0.1"], cwd=REPO, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    for text in ("--api gym", "classic_3p", "steps/s", "steps/hand"):
        assert text in proc.stdout


@pytest.mark.parametrize("args", [["--api", "aec", "--batch", "4"], ["--api", "gym", "--observe"],
                                  ["--api", "vec", "--observe"], ["--api", "nope"]])
def test_bad_env_api_options(args: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "train.cli", "bench", *args, "--rules",
                           "classic_2p", "--seconds", "0.05", "--json"], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    assert proc.stdout == ""
    assert args[1] in proc.stderr or "--observe" in proc.stderr
