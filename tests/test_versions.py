"""Env versioning: what a trained policy depends on is pinned per preset and per env version.

A change to the action layout, the observation layout or the reward definition makes old
checkpoints and results meaningless for the same env id. When this test fails on purpose:

1. bump the env version (``Canasta-vN`` in ``canasta_env/__init__.py``, ``canasta_vN`` in
   ``pettingzoo_env.raw_env.metadata``),
2. add a line ``vN - what changed`` to "Version history" in the docstrings of
   ``canasta_env/envs/gym_env.py`` and ``canasta_env/envs/pettingzoo_env.py``,
3. add a ``"vN"`` entry to ``PINNED`` below with the new values (keep the old entries).
"""

from __future__ import annotations

import hashlib
from types import ModuleType

import gymnasium
import numpy as np
import pytest

from canasta_env import load_rules
from canasta_env.engine import ACTION_NAMES, NUM_ACTIONS, action_index, step_one
from canasta_env.engine.layout import pack_params
from canasta_env.engine.observation import layout_hash, obs_dim
from canasta_env.envs import gym_env, pettingzoo_env
from canasta_env.envs.learner import REWARD_MODES, LearnerConfig, default_reward_scale
from canasta_env.scenario import scenario

PINNED: dict[str, dict[str, dict[str, object]]] = {
    "v0": {
        "classic_2p": {
            "num_actions": 106, "action_layout": "da62b8b007d0b8aa",
            "observation_layout": "0e0628c0f7cccfc8", "obs_dim": 183,
            "reward": "modes=margin,win_loss default=margin scale=0.001 illegal=-1.0 shaping=0.0 "
                      "probe=[1365, -1365]",
        },
        "classic_3p": {
            "num_actions": 106, "action_layout": "da62b8b007d0b8aa",
            "observation_layout": "d4710305adc4e6f7", "obs_dim": 244,
            "reward": "modes=margin,win_loss default=margin scale=0.001 illegal=-1.0 shaping=0.0 "
                      "probe=[1365, -1365, -1365]",
        },
        "classic_4p": {
            "num_actions": 106, "action_layout": "da62b8b007d0b8aa",
            "observation_layout": "3ffa2bc53b2a6e94", "obs_dim": 219,
            "reward": "modes=margin,win_loss default=margin scale=0.001 illegal=-1.0 shaping=0.0 "
                      "probe=[1365, -1365, 1365, -1365]",
        },
    },
}
ENV_VERSION = max(PINNED, key=lambda v: int(v[1:]))
PRESETS = list(PINNED[ENV_VERSION])

HOW_TO_BUMP = ("the env's {what} changed for {preset}: {got!r} != pinned {pinned!r} for "
               "{version}. Bump the env version (Canasta-vN and canasta_vN), add a line "
               "'vN - what changed' to 'Version history' in the docstrings of "
               "canasta_env/envs/gym_env.py and canasta_env/envs/pettingzoo_env.py, and add a 'vN' entry "
               "with the new values to PINNED in tests/test_versions.py.")


def action_layout_hash() -> str:
    return hashlib.sha256("\n".join(ACTION_NAMES).encode()).hexdigest()[:16]


def reward_probe(preset: str) -> list[int]:
    """Engine reward points (own side's hand score - best other side's) of every seat in a fixed
    hand: seat 0 goes out next to its side's natural canastas of kings and aces."""
    rules = load_rules(preset)
    hands = ["Q Q 9 7 7"] * rules.num_players
    hands[0] = "5 5 5 9"
    state = scenario(rules, hands, melds={0: ["K K K K K K K", "A A A A A A A"]}, turn=0,
                     phase="meld")
    step_one(state, action_index("MELD_NNN_5"))
    result = step_one(state, action_index("DISCARD_9"))
    assert result.terminated[0]
    return [int(x) for x in np.asarray(result.rewards[0]).round()]


def reward_definition(preset: str) -> str:
    config = LearnerConfig(rules=preset)
    return (f"modes={','.join(REWARD_MODES)} default={config.reward_mode} "
            f"scale={default_reward_scale(load_rules(preset))} illegal={config.illegal_reward} "
            f"shaping={config.shaping} probe={reward_probe(preset)}")


def current(preset: str) -> dict[str, object]:
    params = pack_params(load_rules(preset), "hand")
    return {"num_actions": NUM_ACTIONS, "action_layout": action_layout_hash(),
            "observation_layout": layout_hash(params), "obs_dim": obs_dim(params),
            "reward": reward_definition(preset)}


@pytest.mark.parametrize("preset", PRESETS)
def test_pinned_layouts_and_rewards(preset: str) -> None:
    got, pinned = current(preset), PINNED[ENV_VERSION][preset]
    for what in pinned:
        assert got[what] == pinned[what], HOW_TO_BUMP.format(
            what=what, preset=preset, got=got[what], pinned=pinned[what], version=ENV_VERSION)


@pytest.mark.parametrize("preset", PRESETS)
def test_layout_hash_does_not_depend_on_episode_kind(preset: str) -> None:
    rules = load_rules(preset)
    assert layout_hash(pack_params(rules, "hand")) == layout_hash(pack_params(rules, "game"))


def test_env_ids_carry_the_pinned_version() -> None:
    assert f"Canasta-{ENV_VERSION}" in gymnasium.registry, (
        f"PINNED's latest version is {ENV_VERSION} but Canasta-{ENV_VERSION} is not registered")
    registered = sorted(k for k in gymnasium.registry if k.startswith("Canasta-v"))
    assert registered[-1] == f"Canasta-{ENV_VERSION}", (
        f"registered {registered}: add a PINNED entry for the newest version")
    assert pettingzoo_env.raw_env.metadata["name"] == f"canasta_{ENV_VERSION}"


@pytest.mark.parametrize("module", [gym_env, pettingzoo_env], ids=["gym_env", "pettingzoo_env"])
def test_version_history_lists_every_version(module: ModuleType) -> None:
    doc = module.__doc__ or ""
    assert "Version history" in doc
    history = doc.split("Version history", 1)[1]
    for version in PINNED:
        assert f"{version} -" in history, (
            f"{module.__name__}: add '{version} - what changed' to the docstring's Version history")
