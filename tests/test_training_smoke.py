"""MaskablePPO (sb3-contrib) trains on ``Canasta-v0`` and on ``CanastaVecEnv`` without error, and the
README's Gymnasium example passes the legal actions to ``predict``.

Tiny budgets: these check the plumbing (spaces, masks, autoreset, terminal observations), not
learning. torch runs on one thread (more only slow small networks down, 40x for MaskablePPO here).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest

torch = pytest.importorskip("torch")
sb3_contrib = pytest.importorskip("sb3_contrib")

from sb3_contrib import MaskablePPO  # noqa: E402
from sb3_contrib.common.maskable.utils import get_action_masks  # noqa: E402
from stable_baselines3.common.vec_env import VecMonitor  # noqa: E402

from canasta_env.envs.sb3_env import CanastaVecEnv  # noqa: E402
from canasta_env.rules import load_rules, preset_names  # noqa: E402

ENV_ID = "canasta_env:Canasta-v0"
README = Path(__file__).resolve().parent.parent / "README.md"



pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _play_hand(env: Any, model: Any, seed: int) -> float:
    """One hand with the model's masked, deterministic choices; every choice must be legal."""
    obs, info = env.reset(seed=seed)
    total = 0.0
    for _ in range(10_000):
        mask = get_action_masks(env)
        np.testing.assert_array_equal(mask, info["action_mask"].astype(bool))
        action, _ = model.predict(obs, action_masks=mask, deterministic=True)
        assert mask[int(action)]
        obs, reward, terminated, truncated, info = env.step(action)
        assert not info["illegal_action"]
        total += reward
        if terminated or truncated:
            return total
    raise AssertionError("the hand did not end")


def test_maskable_ppo_trains_on_the_gym_env() -> None:
    env = gymnasium.make(ENV_ID, rules="classic_2p")
    model = MaskablePPO("MlpPolicy", env, n_steps=512, batch_size=128, n_epochs=2, seed=0,
                        device="cpu")
    model.learn(total_timesteps=2048)
    assert model.num_timesteps >= 2048
    assert len(model.ep_info_buffer) > 0  # hands finished and were recorded by the Monitor
    assert np.isfinite(_play_hand(env, model, seed=7))


@pytest.mark.parametrize("preset", preset_names())
def test_maskable_ppo_trains_on_the_sb3_vec_env(preset: str) -> None:
    # Railroad and Pennies hands run to 100-300 learner steps: fewer envs so hands finish
    envs = 64 if load_rules(preset).reserve_size == 0 else 8
    venv = VecMonitor(CanastaVecEnv(envs, preset))
    model = MaskablePPO("MlpPolicy", venv, n_steps=32, batch_size=512, n_epochs=2, seed=0,
                        device="cpu")
    model.learn(total_timesteps=4096)
    assert model.num_timesteps >= 4096
    assert len(model.ep_info_buffer) > 0
    obs = venv.reset()
    masks = get_action_masks(venv)
    actions, _ = model.predict(obs, action_masks=masks, deterministic=True)
    assert masks[np.arange(envs), actions].all()
    _, rewards, _, infos = venv.step(actions)
    assert np.isfinite(rewards).all()
    assert not any(info.get("illegal_action") for info in infos)


def test_readme_gymnasium_example_predicts_legal_actions() -> None:
    """The README's Gymnasium + MaskablePPO block (test_readme runs every block as written; here it
    also has to pass the masks to ``predict`` and end the hand with legal moves)."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    (code,) = [b for b in blocks if "MaskablePPO" in b and "gymnasium.make(" in b]
    assert "action_masks=" in code and "torch.set_num_threads(1)" in code
    names: dict[str, Any] = {}
    exec(compile(code, "README.md", "exec"), names)
    env, model = names["env"], names["model"]
    assert names["done"] and isinstance(names["reward"], float)
    assert np.isfinite(_play_hand(env, model, seed=3))


def test_readme_has_an_example_per_api() -> None:
    text = README.read_text()
    section = text[text.index("## Environments"):text.index("## Rules presets")]
    assert text.index("## The engine in ten lines") < text.index("## Environments")
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    for needle in ("canasta_env.env(", "gymnasium.make(", "CanastaVecEnv(", "gymnasium.make_vec("):
        assert sum(needle in b for b in blocks) == 1, needle
    for block in blocks:
        assert len(block.strip().splitlines()) <= 20
        if "MaskablePPO" in block:
            assert "action_masks=" in block
