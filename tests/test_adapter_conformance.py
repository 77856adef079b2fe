"""The env adapters against their libraries' own checkers and conventions, on every preset and the
shipped rules file ``configs/rules/railroad_6p.yaml``: PettingZoo's api, seed and render tests,
Gymnasium's and SB3's env checkers, RLlib's multi-agent env check and episode bookkeeping; and the
conventions a user of each library relies on: Gymnasium's human render mode, the same-step autoreset's
``final_info`` and ``np_random_seed`` of a vector env, SB3's ``reset_infos``. Each convention has a
twin: the neighbouring behaviour that already held still holds."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from pettingzoo.test import api_test, render_test, seed_test
from stable_baselines3.common.vec_env import DummyVecEnv

import canasta_env
from canasta_env.envs.gym_env import CanastaVectorEnv
from canasta_env.envs.sb3_env import CanastaVecEnv
from canasta_env.rules import preset_names

ROOT = Path(__file__).resolve().parents[1]
RULES_FILE = str(ROOT / "configs" / "rules" / "railroad_6p.yaml")  # a shipped table no preset covers
TABLES = [*preset_names(), RULES_FILE]
TABLE_IDS = [*preset_names(), "railroad_6p.yaml"]
ENV_ID = "canasta_env:Canasta-v0"


pytestmark = pytest.mark.usefixtures("pettingzoo_test_warnings")


def _pick(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks], dtype=np.int64)


# ---- the libraries' own checkers on the rules file ------------------------------------------------
@pytest.mark.parametrize("make", [canasta_env.env, canasta_env.raw_env], ids=["env", "raw_env"])
def test_pettingzoo_api_and_seed_tests_pass_on_the_rules_file(make: Any) -> None:
    api_test(make(RULES_FILE), num_cycles=1000, verbose_progress=False)
    seed_test(lambda: make(RULES_FILE), num_cycles=300)


@pytest.mark.parametrize("table", TABLES, ids=TABLE_IDS)
def test_pettingzoo_render_test_passes(table: str, capsys: pytest.CaptureFixture[str]) -> None:
    render_test(lambda render_mode=None: canasta_env.env(table, render_mode=render_mode))
    assert "view of P" in capsys.readouterr().out  # human mode printed the tables


@pytest.mark.usefixtures("one_torch_thread")
def test_gymnasium_and_sb3_checkers_pass_on_the_rules_file() -> None:
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the checkers' warnings are failures too
        for mode in (None, "ansi"):
            gym_check_env(gymnasium.make(ENV_ID, rules=RULES_FILE, render_mode=mode).unwrapped)
        sb3_check_env(gymnasium.make(ENV_ID, rules=RULES_FILE))


@pytest.mark.parametrize("table", TABLES, ids=TABLE_IDS)
def test_rllib_env_passes_rllibs_check_and_episode_bookkeeping(table: str) -> None:
    """RLlib's own env check, then a whole hand through ``MultiAgentEpisode`` (what an env runner
    builds from the env's dicts), every observation in its agent's space."""
    pytest.importorskip("ray")
    from ray.rllib.env.multi_agent_episode import MultiAgentEpisode
    from ray.rllib.utils.pre_checks.env import check_multiagent_environments

    from canasta_env.envs.rllib_env import CanastaMultiAgentEnv

    env = CanastaMultiAgentEnv({"rules": table})
    check_multiagent_environments(env)
    episode = MultiAgentEpisode(observation_space=env.observation_spaces, action_space=env.action_spaces)
    obs, infos = env.reset(seed=3)
    episode.add_env_reset(observations=obs, infos=infos)
    rng, done = np.random.default_rng(0), False
    while not done:
        assert all(env.observation_spaces[a].contains(o) for a, o in obs.items())
        (agent, o), = obs.items()
        action = int(rng.choice(np.flatnonzero(o["action_mask"])))
        obs, rewards, terminateds, truncateds, infos = env.step({agent: action})
        episode.add_env_step(observations=obs, actions={agent: action}, rewards=rewards, infos=infos,
                             terminateds=terminateds, truncateds=truncateds)
        done = terminateds["__all__"] or truncateds["__all__"]
    assert set(obs) == set(env.possible_agents)  # every agent sees the end
    assert all(env.observation_spaces[a].contains(o) for a, o in obs.items())
    episode.validate()
    assert episode.is_done


# ---- Gymnasium: human render mode -----------------------------------------------------------------
def test_human_render_draws_the_table_at_reset_and_each_step_without_printing_none(
        capsys: pytest.CaptureFixture[str]) -> None:
    env = gymnasium.make(ENV_ID, render_mode="human").unwrapped
    obs, info = env.reset(seed=0)
    shown = capsys.readouterr().out
    assert shown.count("view of P") == 1  # was: nothing at reset
    env.step(int(np.flatnonzero(info["action_mask"])[0]))
    shown = capsys.readouterr().out
    assert shown.count("view of P") == 1
    assert "None" not in shown.splitlines()  # was: the table, then "None"
    assert env.render() is None and capsys.readouterr().out.count("view of P") == 1


def test_ansi_render_returns_the_table_and_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    env = gymnasium.make(ENV_ID, render_mode="ansi").unwrapped  # the twin
    obs, info = env.reset(seed=0)
    env.step(int(np.flatnonzero(info["action_mask"])[0]))
    text = env.render()
    assert isinstance(text, str) and "view of P" in text
    assert capsys.readouterr().out == ""


# ---- Gymnasium vector env: same-step autoreset's final_info, np_random_seed ------------------------
@pytest.mark.parametrize("table", ["classic_3p", "classic_4p", RULES_FILE], ids=["classic_3p", "classic_4p",
                                                                               "railroad_6p.yaml"])
def test_vector_final_info_is_that_of_a_sync_vector_env(table: str) -> None:
    """Gymnasium's same-step autoreset puts a finished env's last info in ``infos["final_info"]``
    (with ``_final_info``): the finished episode's learner seat and zero mask. It was missing, and
    ``infos["learner_seat"]`` already held the next episode's seat."""
    n = 4
    fast = gymnasium.make_vec(ENV_ID, num_envs=n, vectorization_mode="vector_entry_point", rules=table)
    ref = SyncVectorEnv([lambda: gymnasium.make(ENV_ID, rules=table) for _ in range(n)],
                        autoreset_mode=AutoresetMode.SAME_STEP)
    _, info_f = fast.reset(seed=3)
    _, info_r = ref.reset(seed=3)
    rng, ends, quiet = np.random.default_rng(0), 0, 0
    while ends < 3:
        actions = _pick(info_r["action_mask"], rng)
        *_, term, trunc, info_f = fast.step(actions)
        *_, info_r = ref.step(actions)
        if not (term | trunc).any():  # the twin: no episode ended, no final_info, as SyncVectorEnv
            assert "final_info" not in info_f and "final_info" not in info_r
            quiet += 1
            continue
        ends += 1
        final_f, final_r = info_f["final_info"], info_r["final_info"]
        assert set(final_r) - set(final_f) == {"deal", "_deal"}  # the vector env reports no deals
        for key, value in final_f.items():
            assert value.dtype == final_r[key].dtype, key
            np.testing.assert_array_equal(value, final_r[key], err_msg=key)
        np.testing.assert_array_equal(info_f["_final_info"], term | trunc)
        np.testing.assert_array_equal(info_f["learner_seat"], info_r["learner_seat"])  # the next episode's
    assert quiet > 0


def test_vector_np_random_seed_is_the_seed_given() -> None:
    envs = CanastaVectorEnv(3)
    envs.reset(seed=5)
    assert envs.np_random_seed == 5  # was: a fresh 128-bit seed, as if reset without one


def test_vector_seeds_per_env_still_play_their_deals() -> None:  # the twin
    envs, single = CanastaVectorEnv(2), gymnasium.make(ENV_ID).unwrapped
    obs, _ = envs.reset(seed=[7, 9])
    np.testing.assert_array_equal(obs[1], single.reset(seed=9)[0])
    assert single.np_random_seed == 9
    obs, _ = envs.reset(seed=7)
    np.testing.assert_array_equal(obs[1], single.reset(seed=8)[0])


# ---- SB3: reset_infos -----------------------------------------------------------------------------
def test_sb3_reset_infos_hold_each_envs_episode_start_as_dummy_vec_env_does() -> None:
    """``reset_infos[i]`` is env i's new episode's learner seat and mask, after ``reset()`` and
    after each autoreset (it stayed ``{}``: the seat drawn for an episode was nowhere)."""
    n = 4
    fast = CanastaVecEnv(n, "classic_4p")
    ref = DummyVecEnv([lambda: gymnasium.make(ENV_ID, rules="classic_4p") for _ in range(n)])
    fast.seed(11)
    ref.seed(11)
    fast.reset()
    ref.reset()

    def same() -> None:
        for got, want in zip(fast.reset_infos, ref.reset_infos, strict=True):
            assert got["learner_seat"] == want["learner_seat"]
            np.testing.assert_array_equal(got["action_mask"], want["action_mask"])
            assert got["action_mask"].dtype == want["action_mask"].dtype == np.int8

    same()
    rng, ends = np.random.default_rng(1), 0
    while ends < 3:
        actions = _pick(fast.env_method("action_masks"), rng)
        _, _, dones, infos = fast.step(actions)
        _, _, ref_dones, _ = ref.step(actions)
        np.testing.assert_array_equal(dones, ref_dones)
        ends += int(dones.any())
        same()
    for i in np.flatnonzero(dones):  # the twin: a finished env still reports its final view
        assert fast.observation_space.contains(infos[i]["terminal_observation"])
