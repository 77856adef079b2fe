"""Misuse of the env adapters gets the same one-line ValueError in each: a wrong action shape in the
vector envs, an unknown agent name in PettingZoo, a bad action in the wrapped PettingZoo env (with or
without asserts), a step after the episode ended in Canasta-v0, partners where there are none."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import gymnasium
import numpy as np
import pytest

import canasta_env
from canasta_env import canasta_v0
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


# ---- the wrapped PettingZoo env checks an action before PettingZoo's wrappers see it ------------------
BAD_ACTIONS = [(0.5, "got 0.5 (float)"), (np.array([0]), "got array([0])"), (None, "got None"),
               ("0", "got '0' (str)"), (True, "got True"), (np.float64(2.0), "got np.float64(2.0)"),
               (10**6, "action 1000000 is out of range"), (-1, "action -1 is out of range")]


@pytest.mark.parametrize(("action", "says"), BAD_ACTIONS, ids=[repr(a) for a, _ in BAD_ACTIONS])
@pytest.mark.parametrize("make", [canasta_env.env, canasta_v0.env], ids=["canasta_env.env", "canasta_v0.env"])
def test_wrapped_pettingzoo_env_names_a_bad_action_in_one_line(make, action: object, says: str) -> None:
    env = make("classic_4p")
    env.reset(seed=0)
    agent, before = env.agent_selection, env.unwrapped.state.data.copy()
    with pytest.raises(ValueError) as info:
        env.step(action)
    message = str(info.value)
    assert message.startswith("canasta_v0 step: ") and says in message and "\n" not in message
    assert env.agent_selection == agent and not any(env.terminations.values())  # nothing was played
    assert np.array_equal(env.unwrapped.state.data, before)


def test_wrapped_pettingzoo_env_checks_actions_under_python_O() -> None:
    """Without asserts PettingZoo's wrappers index the mask with the action: 0.5 and 10**6 raised an
    IndexError and -1 was played as an illegal move (the last action's mask entry)."""
    script = """
import canasta_env
for action in (0.5, 10**6, -1, True):
    env = canasta_env.env("classic_4p")
    env.reset(seed=0)
    try:
        env.step(action)
    except ValueError as e:
        assert str(e).startswith("canasta_v0 step: action") and not any(env.terminations.values()), e
    else:
        raise SystemExit(f"{action!r} was played")
print("ok")
"""
    done = subprocess.run([sys.executable, "-O", "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


# ---- Canasta-v0 --------------------------------------------------------------------------------------
def _legal(info: dict) -> int:
    return int(np.flatnonzero(info["action_mask"])[0])


def test_gym_env_refuses_a_step_after_the_episode_ended() -> None:
    env = gymnasium.make("canasta_env:Canasta-v0", rules="classic_2p")
    _, info = env.reset(seed=0)
    terminated = truncated = False
    while not (terminated or truncated):
        _, _, terminated, truncated, info = env.step(_legal(info))
    for _ in range(2):
        with pytest.raises(ValueError, match=r"^Canasta-v0 step: the episode is over; call reset\(\) first$"):
            env.step(0)
    _, info = env.reset()
    env.step(_legal(info))  # a new episode steps again


def test_gym_env_refuses_a_step_after_an_illegal_action_ended_the_episode() -> None:
    env = gymnasium.make("canasta_env:Canasta-v0", rules="classic_2p")
    _, info = env.reset(seed=1)
    _, reward, terminated, _, info = env.step(int(np.flatnonzero(info["action_mask"] == 0)[0]))
    assert terminated and reward == -1.0
    with pytest.raises(ValueError, match="the episode is over"):
        env.step(0)


def test_gym_vector_autoreset_still_steps_past_episode_ends() -> None:
    """Gymnasium's SyncVectorEnv (next-step autoreset) resets a finished env instead of stepping it."""
    envs = gymnasium.make_vec("canasta_env:Canasta-v0", num_envs=2, vectorization_mode="sync")
    _, info = envs.reset(seed=0)
    ended = 0
    for _ in range(400):
        actions = [_legal({"action_mask": m}) if m.any() else 0 for m in info["action_mask"]]
        _, _, terminated, truncated, info = envs.step(np.array(actions))
        ended += int((terminated | truncated).sum())
    assert ended >= 2
    envs.close()


@pytest.mark.parametrize("rules", ["classic_2p", "classic_3p", "railroad_4p"])
def test_partners_on_rules_without_partners_is_refused_in_one_line(rules: str) -> None:
    for make in (lambda: gymnasium.make("canasta_env:Canasta-v0", rules=rules, partners="greedy"),
                 lambda: CanastaVecEnv(2, rules, partners="greedy")):
        with pytest.raises(ValueError) as info:
            make()
        message = str(info.value)
        assert "partners" in message and rules in message and "\n" not in message
    gymnasium.make("canasta_env:Canasta-v0", rules="classic_4p", partners="greedy").reset(seed=0)
