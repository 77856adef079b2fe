"""The SB3 ``VecEnv`` contract of ``CanastaVecEnv`` and the differential tests of the batched envs.

Contract points (the environments issue), one test each:

* ``reset()`` and ``step_wait()`` return newly allocated arrays every call;
* ``env_method("action_masks")`` is the ``(n, A)`` mask of the observations last returned, auto-reset
  rows included; ``has_attr("action_masks")``; ``get_action_masks(VecMonitor(env))`` is the engine's;
* on a hand end: ``done``, ``info["terminal_observation"]`` a copy of the learner's final view,
  ``info["TimeLimit.truncated"]`` only for step-cap truncations, and the returned observation the
  first decision of the row's next deal;
* ``seed(s)`` makes env i play the deals of a Gym env reset with ``seed=s + i``.

Differential tests: the batched envs against a vector of single ``Canasta-v0`` envs (SB3's
``DummyVecEnv``; Gymnasium's ``SyncVectorEnv`` in same-step autoreset mode), both seeded ``s`` and
driven by the same per-row random learner actions (one uniform per row and step, mapped onto each
side's own mask by ``pick_legal``), must agree exactly: observations, masks, rewards, dones
(terminations, truncations) and terminal observations.

The issue's full size is 256 envs for 2,000 steps per preset (651 s for the six differential runs
on the 2-core reference machine, measured while other work ran); the default plays 16 envs for
300 learner steps per preset. The cost is that of the reference side (one ``Canasta-v0`` step per
row and step), so it scales with envs x steps; 300 steps keep every row through two or more hand
ends in every preset (a random learner decides about 60 times per classic hand, about 140 times
per Railroad hand; measured: 32 to 123 hands over the 16 rows), so the auto-reset, terminal
observation and next-deal paths are compared in every row, and the rows still run in parallel in
one batch. Full size::

    CANASTA_DIFF_ENVS=256 CANASTA_DIFF_STEPS=2000 .venv/bin/python -m pytest tests/test_sb3_env.py
"""

from __future__ import annotations

import os
from typing import Any

import gymnasium
import numpy as np
import numpy.typing as npt
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from sb3_contrib.common.maskable.utils import get_action_masks
from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor

from canasta_env.engine import NUM_ACTIONS
from canasta_env.envs.gym_env import CanastaEnv
from canasta_env.envs.sb3_env import CanastaVecEnv
from canasta_env.policy import pick_legal
from canasta_env.rules import load_rules, preset_names

ENV_ID = "canasta_env:Canasta-v0"
PRESETS = tuple(preset_names())  # every shipped preset, variants included
DIFF_ENVS = int(os.environ.get("CANASTA_DIFF_ENVS", "16"))
DIFF_STEPS = int(os.environ.get("CANASTA_DIFF_STEPS", "300"))



def _random_steps(env: CanastaVecEnv, rng: np.random.Generator) -> npt.NDArray[np.int64]:
    return pick_legal(env.action_masks(), rng.random(env.num_envs))


class Replay:
    """Single ``CanastaEnv``s replaying rows of a ``CanastaVecEnv`` seeded ``seed``: row i against a
    Gym env reset with ``seed + i``, fed the same learner actions."""

    def __init__(self, rules: Any, seed: int, rows: list[int]) -> None:
        self.rows = rows
        self.envs = [CanastaEnv(rules) for _ in rows]
        self.seed = seed
        self.hands = 0

    def check_reset(self, vec: CanastaVecEnv, obs: npt.NDArray[np.float32]) -> None:
        state = vec.venv.core.require_state()
        for row, env in zip(self.rows, self.envs, strict=True):
            first, info = env.reset(seed=self.seed + row)
            assert info["deal"] == (self.seed + row, 0, 0)
            assert tuple(state.deal_id(row)) == info["deal"]
            np.testing.assert_array_equal(obs[row], first)
            np.testing.assert_array_equal(vec.env_method("action_masks")[row], env.action_masks())

    def check_step(self, vec: CanastaVecEnv, actions: npt.NDArray[np.int64], out: tuple[Any, ...]
                   ) -> None:
        obs, rewards, dones, infos = out
        state = vec.venv.core.require_state()
        masks = vec.env_method("action_masks")
        for row, env in zip(self.rows, self.envs, strict=True):
            final, reward, terminated, truncated, _ = env.step(int(actions[row]))
            assert rewards[row] == np.float32(reward)
            assert bool(dones[row]) == (terminated or truncated)
            if dones[row]:
                self.hands += 1
                terminal = infos[row]["terminal_observation"]
                np.testing.assert_array_equal(terminal, final)  # the learner's final view
                assert not np.shares_memory(terminal, obs)
                assert infos[row]["TimeLimit.truncated"] == (truncated and not terminated)
                # The returned observation and mask are the first decision of the next deal.
                first, info = env.reset()
                assert info["deal"][2] >= 1 and tuple(state.deal_id(row)) == info["deal"]
                np.testing.assert_array_equal(obs[row], first)
            else:
                assert "terminal_observation" not in infos[row]
                np.testing.assert_array_equal(obs[row], final)
            np.testing.assert_array_equal(masks[row], env.action_masks())


# ---- the contract -------------------------------------------------------------------------------

def test_reset_and_step_return_new_arrays() -> None:
    """Scribbling over everything returned must not change what the env does next (MaskablePPO
    keeps the previous obs and dones), and no returned array is a view of an earlier one."""
    n, seed = 8, 3
    clean, scribbled = CanastaVecEnv(n, "classic_2p"), CanastaVecEnv(n, "classic_2p")
    clean.seed(seed)
    scribbled.seed(seed)
    history: list[tuple[npt.NDArray[Any], npt.NDArray[Any]]] = []
    obs_c, obs_s = clean.reset(), scribbled.reset()
    np.testing.assert_array_equal(obs_c, obs_s)
    obs_s[:] = np.nan
    history.append((obs_s, obs_s.copy()))
    rng = np.random.default_rng(0)
    dones_seen = 0
    for _ in range(150):
        actions = _random_steps(clean, rng)
        obs_c, rew_c, done_c, info_c = clean.step(actions)
        obs_s, rew_s, done_s, info_s = scribbled.step(actions.copy())
        np.testing.assert_array_equal(obs_c, obs_s)
        np.testing.assert_array_equal(rew_c, rew_s)
        np.testing.assert_array_equal(done_c, done_s)
        dones_seen += int(done_s.sum())
        for old, _ in history:
            for new in (obs_s, rew_s, done_s):
                assert not np.shares_memory(old, new)
        for old, snapshot in history:  # earlier arrays are left as the caller last wrote them
            np.testing.assert_array_equal(old, snapshot)
        for i in np.flatnonzero(done_s):
            np.testing.assert_array_equal(info_c[i]["terminal_observation"],
                                          info_s[i]["terminal_observation"])
            info_s[i]["terminal_observation"][:] = -7.0
        obs_s[:] = np.nan
        rew_s[:] = 99.0
        done_s[:] = ~done_s
        history = [*history[-3:], (obs_s, obs_s.copy()), (rew_s, rew_s.copy()),
                   (done_s, done_s.copy())]
    assert dones_seen > 0
    again = scribbled.reset()
    assert not any(np.shares_memory(again, old) for old, _ in history)


def test_action_masks_are_those_of_the_observations_last_returned() -> None:
    n, seed = 16, 11
    env = CanastaVecEnv(n, "classic_2p")
    env.seed(seed)
    replay = Replay("classic_2p", seed, rows=[0, 5, 15])
    obs = env.reset()
    replay.check_reset(env, obs)
    assert env.has_attr("action_masks")
    rng = np.random.default_rng(1)
    reset_rows = 0
    for _ in range(150):
        actions = _random_steps(env, rng)
        out = env.step(actions)
        masks = env.env_method("action_masks")
        assert isinstance(masks, np.ndarray) and masks.dtype == np.bool_
        assert masks.shape == (n, NUM_ACTIONS)
        # Every env is at a learner decision (finished rows were re-dealt): the engine's mask.
        np.testing.assert_array_equal(masks, env.venv.core.require_state().legal_action_mask)
        assert masks[out[2]].any(axis=1).all()
        reset_rows += int(out[2].sum())
        np.testing.assert_array_equal(env.env_method("action_masks", indices=[3, 1]),
                                      masks[[3, 1]])
        np.testing.assert_array_equal(env.env_method("action_masks", indices=2), masks[[2]])
        replay.check_step(env, actions, out)
    assert reset_rows > 0 and replay.hands > 0


def test_get_action_masks_through_vec_monitor_equals_the_engine_mask() -> None:
    env = CanastaVecEnv(32, "classic_4p")
    env.seed(0)
    monitored = VecMonitor(env)
    monitored.reset()
    rng = np.random.default_rng(2)
    dones = 0
    for _ in range(120):
        masks = get_action_masks(monitored)
        assert masks.shape == (32, NUM_ACTIONS) and masks.dtype == np.bool_
        np.testing.assert_array_equal(masks, env.venv.core.action_masks())
        np.testing.assert_array_equal(masks, env.venv.core.require_state().legal_action_mask)
        _, _, done, _ = monitored.step(pick_legal(masks, rng.random(32)))
        dones += int(done.sum())
    assert dones > 0


@pytest.mark.parametrize("preset", PRESETS)
def test_hand_end_terminal_observation_and_next_deal(preset: str) -> None:
    n, seed = 12, 1000
    env = CanastaVecEnv(n, preset)
    env.seed(seed)
    replay = Replay(preset, seed, rows=list(range(n)))
    replay.check_reset(env, env.reset())
    rng = np.random.default_rng(3)
    for _ in range(1000):  # Railroad's hands take a few hundred decisions
        actions = _random_steps(env, rng)
        out = env.step(actions)
        for i in np.flatnonzero(out[2]):
            assert out[3][i]["TimeLimit.truncated"] is False  # no step cap reached
        replay.check_step(env, actions, out)
        if replay.hands >= n:
            break
    assert replay.hands >= n


def test_time_limit_truncated_only_for_step_cap_truncations() -> None:
    """A cap of 100 engine decisions per hand (the loader's minimum) truncates most random hands;
    the twin Gymnasium VectorEnv says which dones were terminations and which truncations."""
    rules = load_rules("classic_2p", max_steps_per_hand=100)
    n, seed = 32, 5
    env = CanastaVecEnv(n, rules)
    twin = gymnasium.make_vec(ENV_ID, num_envs=n, vectorization_mode="vector_entry_point",
                              rules=rules)
    env.seed(seed)
    np.testing.assert_array_equal(env.reset(), twin.reset(seed=seed)[0])
    replay = Replay(rules, seed, rows=[0, 1, 2])
    replay.check_reset(env, env.venv.core.observations())
    rng = np.random.default_rng(4)
    truncations = terminations = 0
    for _ in range(150):
        actions = _random_steps(env, rng)
        out = env.step(actions)
        _, _, terminated, truncated, _ = twin.step(actions)
        assert not (terminated & truncated).any()
        np.testing.assert_array_equal(out[2], terminated | truncated)
        for i in np.flatnonzero(out[2]):
            assert out[3][i]["TimeLimit.truncated"] == bool(truncated[i])
            assert out[3][i]["terminal_observation"].shape == env.observation_space.shape
        truncations += int(truncated.sum())
        terminations += int(terminated.sum())
        replay.check_step(env, actions, out)
    assert truncations > 0
    assert terminations < truncations  # 100 decisions is below a typical random hand (133)


def test_seed_plays_the_deals_of_gym_envs_seeded_s_plus_i() -> None:
    n, seed = 6, 2**40 + 17
    env = CanastaVecEnv(n, "classic_3p")
    assert env.seed(seed) == [seed + i for i in range(n)]
    obs = env.reset()
    state = env.venv.core.require_state()
    for i in range(n):
        single = gymnasium.make(ENV_ID, rules="classic_3p")
        first, info = single.reset(seed=seed + i)
        assert tuple(state.deal_id(i)) == info["deal"] == (seed + i, 0, 0)
        np.testing.assert_array_equal(obs[i], first)
        assert int(env.venv.core.seat[i]) == info["learner_seat"]
    # Without seed() the envs get fresh, distinct deals.
    other = CanastaVecEnv(n, "classic_3p")
    other.reset()
    seeds = {other.venv.core.require_state().deal_id(i).seed for i in range(n)}
    assert len(seeds) == n and not seeds & {seed + i for i in range(n)}


def test_second_reset_continues_the_seeded_deals() -> None:
    n, seed = 4, 21
    fast = CanastaVecEnv(n, "classic_2p")
    ref = DummyVecEnv([lambda: gymnasium.make(ENV_ID, rules="classic_2p") for _ in range(n)])
    fast.seed(seed)
    ref.seed(seed)
    fast.reset()
    ref.reset()
    np.testing.assert_array_equal(fast.reset(), ref.reset())  # the deals (s + i, 0, 1)


def test_second_vector_env_reset_continues_the_seeded_deals() -> None:
    n, seed = 4, 21
    fast = gymnasium.make_vec(ENV_ID, num_envs=n, vectorization_mode="vector_entry_point")
    ref = SyncVectorEnv([lambda: gymnasium.make(ENV_ID) for _ in range(n)],
                        autoreset_mode=AutoresetMode.SAME_STEP)
    fast.reset(seed=seed)
    ref.reset(seed=seed)
    np.testing.assert_array_equal(fast.reset()[0], ref.reset()[0])


# ---- differential tests -------------------------------------------------------------------------

def _sb3_pair(rules: Any, n: int) -> tuple[CanastaVecEnv, DummyVecEnv]:
    fast = CanastaVecEnv(n, rules)
    ref = DummyVecEnv([lambda: gymnasium.make(ENV_ID, rules=rules) for _ in range(n)])
    return fast, ref


def _run_sb3_differential(rules: Any, n: int, steps: int, seed: int) -> tuple[int, int, int]:
    """Hands finished, step-cap truncations among them, and rows that finished at least one hand."""
    fast, ref = _sb3_pair(rules, n)
    assert fast.seed(seed) == ref.seed(seed)
    obs_f, obs_r = fast.reset(), ref.reset()
    np.testing.assert_array_equal(obs_f, obs_r)
    rng = np.random.default_rng(seed)
    hands = truncations = 0
    ended = np.zeros(n, dtype=bool)
    for t in range(steps):
        mask_f, mask_r = get_action_masks(fast), get_action_masks(ref)
        np.testing.assert_array_equal(mask_f, mask_r, err_msg=f"mask, step {t}")
        u = rng.random(n)
        obs_f, rew_f, done_f, info_f = fast.step(pick_legal(mask_f, u))
        obs_r, rew_r, done_r, info_r = ref.step(pick_legal(mask_r, u))
        np.testing.assert_array_equal(obs_f, obs_r, err_msg=f"obs, step {t}")
        np.testing.assert_array_equal(rew_f, rew_r, err_msg=f"reward, step {t}")
        assert rew_f.dtype == rew_r.dtype
        np.testing.assert_array_equal(done_f, done_r, err_msg=f"done, step {t}")
        for i in np.flatnonzero(done_r):
            np.testing.assert_array_equal(info_f[i]["terminal_observation"],
                                          info_r[i]["terminal_observation"],
                                          err_msg=f"terminal obs, env {i}, step {t}")
            assert info_f[i]["TimeLimit.truncated"] == info_r[i]["TimeLimit.truncated"]
            truncations += int(info_r[i]["TimeLimit.truncated"])
        for i in np.flatnonzero(~done_r):
            assert "terminal_observation" not in info_f[i]
        hands += int(done_r.sum())
        ended |= done_r
    return hands, truncations, int(ended.sum())


@pytest.mark.parametrize("preset", PRESETS)
def test_sb3_vec_env_matches_dummy_vec_env_of_gym_envs(preset: str) -> None:
    hands, _, rows_ended = _run_sb3_differential(preset, DIFF_ENVS, DIFF_STEPS, seed=12345)
    assert hands >= DIFF_ENVS  # every env finished about one hand or more
    assert rows_ended == DIFF_ENVS  # every row went through a hand end and its next deal


def test_sb3_vec_env_matches_dummy_vec_env_with_step_cap_truncations() -> None:
    rules = load_rules("classic_4p", max_steps_per_hand=100)
    hands, truncations, _ = _run_sb3_differential(rules, 16, 150, seed=77)
    assert truncations > 0 and hands > truncations // 2


@pytest.mark.parametrize("preset", PRESETS)
def test_gymnasium_vector_env_matches_sync_vector_env_of_gym_envs(preset: str) -> None:
    n, seed = DIFF_ENVS, 54321
    fast = gymnasium.make_vec(ENV_ID, num_envs=n, vectorization_mode="vector_entry_point",
                              rules=preset)
    ref = SyncVectorEnv([lambda: gymnasium.make(ENV_ID, rules=preset) for _ in range(n)],
                        autoreset_mode=AutoresetMode.SAME_STEP)
    assert fast.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert fast.single_observation_space == ref.single_observation_space
    obs_f, info_f = fast.reset(seed=seed)
    obs_r, info_r = ref.reset(seed=seed)
    np.testing.assert_array_equal(obs_f, obs_r)
    rng = np.random.default_rng(seed)
    hands = 0
    ended = np.zeros(n, dtype=bool)
    for t in range(DIFF_STEPS):
        np.testing.assert_array_equal(info_f["action_mask"], info_r["action_mask"],
                                      err_msg=f"mask, step {t}")
        np.testing.assert_array_equal(info_f["learner_seat"], info_r["learner_seat"])
        np.testing.assert_array_equal(fast.unwrapped.action_masks(), info_r["action_mask"] == 1)
        u = rng.random(n)
        out_f = fast.step(pick_legal(info_f["action_mask"].astype(bool), u))
        out_r = ref.step(pick_legal(info_r["action_mask"].astype(bool), u))
        for name, a, b in zip(("obs", "reward", "terminated", "truncated"), out_f[:4], out_r[:4],
                              strict=True):
            np.testing.assert_array_equal(a, b, err_msg=f"{name}, step {t}")
        obs_f, _, term, trunc, info_f = out_f
        info_r = out_r[4]
        done = term | trunc
        assert ("_final_obs" in info_f) == ("_final_obs" in info_r) == bool(done.any())
        if done.any():
            np.testing.assert_array_equal(info_f["_final_obs"], info_r["_final_obs"])
            np.testing.assert_array_equal(info_f["_final_obs"], done)
            for i in np.flatnonzero(done):
                np.testing.assert_array_equal(info_f["final_obs"][i], info_r["final_obs"][i],
                                              err_msg=f"final obs, env {i}, step {t}")
        hands += int(done.sum())
        ended |= done
    assert hands >= n
    assert ended.all()  # every row went through a hand end and its next deal
