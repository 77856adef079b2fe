"""Misuse of the env adapters gets the same one-line ValueError in each: a wrong action shape in the
vector envs, an unknown agent name in PettingZoo."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import canasta_env
from canasta_env.envs.sb3_env import CanastaVecEnv

BAD_SHAPES = [np.zeros((4, 1), dtype=np.int64), np.zeros((2, 2), dtype=np.int64), np.zeros(3, dtype=np.int64),
              np.int64(0), [[0], [0], [0], [0]]]


@pytest.mark.parametrize("actions", BAD_SHAPES, ids=["4x1", "2x2", "3", "scalar", "nested-list"])
def test_vector_envs_refuse_actions_of_another_shape(actions: object) -> None:
    sb3 = CanastaVecEnv(4, "classic_2p")
    sb3.reset()
    vec = gymnasium.make_vec("canasta_env:Canasta-v0", num_envs=4, rules="classic_2p")
    vec.reset(seed=0)
    for step in (sb3.step, vec.step):
        with pytest.raises(ValueError) as info:
            step(actions)
        assert "shape (4,)" in str(info.value) and "\n" not in str(info.value)
    vec.close()


def test_vector_envs_take_a_flat_array_and_a_list() -> None:
    sb3 = CanastaVecEnv(2, "classic_2p")
    sb3.reset()
    first = np.flatnonzero(sb3.action_masks()[0])[0]
    second = np.flatnonzero(sb3.action_masks()[1])[0]
    sb3.step(np.array([first, second]))
    sb3.step([int(np.flatnonzero(m)[0]) for m in sb3.action_masks()])


@pytest.mark.parametrize("agent", ["player_9", "player_", "", 3, None])
@pytest.mark.parametrize("method", ["observe", "observation_space", "action_space"])
def test_pettingzoo_names_an_unknown_agent_in_one_line(agent: object, method: str) -> None:
    env = canasta_env.raw_env("classic_2p")
    env.reset(seed=0)
    with pytest.raises(ValueError) as info:
        getattr(env, method)(agent)
    assert "unknown agent" in str(info.value) and "player_0, player_1" in str(info.value)
    assert "\n" not in str(info.value)
