"""``scripts/average_checkpoints.py``: the mean of several checkpoints' policy weights."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from agents.checkpoint import load_checkpoint, save_checkpoint
from scripts import average_checkpoints

REPO = Path(__file__).resolve().parents[2]
ZOO = REPO / "agents" / "zoo" / "classic_2p"


def _variant(run_dir: Path, name: str, shift: float, steps: int) -> Path:
    base = load_checkpoint(ZOO)
    weights = {k: v + shift if v.is_floating_point() else v for k, v in base.policy_state.items()}
    return save_checkpoint(run_dir, name, policy_state=weights, optimizer_state=base.optimizer_state,
                           state={**base.state, "num_timesteps": steps},
                           meta=base.meta)


def test_weights_are_the_mean_and_the_rest_is_the_last_checkpoints(tmp_path: Path) -> None:
    a = _variant(tmp_path / "run", "a", 0.0, 100)
    b = _variant(tmp_path / "run", "b", 1.0, 200)
    out = average_checkpoints.average([str(a), str(b)], str(tmp_path / "avg"))
    avg, base = load_checkpoint(out), load_checkpoint(ZOO)
    for key, value in base.policy_state.items():
        want = value + 0.5 if value.is_floating_point() else value
        torch.testing.assert_close(avg.policy_state[key], want)
    assert avg.state["num_timesteps"] == 200
    assert avg.meta["averaged_from"] == [str(a), str(b)]


def test_other_networks_are_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _variant(tmp_path / "run", "a", 0.0, 100)
    other = REPO / "agents" / "zoo" / "classic_4p"
    assert average_checkpoints.main([str(tmp_path / "avg"), str(a), str(other)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("average_checkpoints: ") and "\n" not in err
    assert not (tmp_path / "avg").exists()
