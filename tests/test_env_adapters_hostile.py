"""Env adapters and option files under misuse: each refusal leaves the env as it was (a
reset refused for its learner seat or deal, a step_async refused for its actions), Python ints past
64 bits are out-of-range actions like any other, SB3's get_attr/set_attr/env_method check their
indices and names, PettingZoo and RLlib name a bad call in one line, and YAML's octal numbers and
merge keys are refused instead of read silently. Each refusal has a twin: the valid neighbour."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from canasta_env.engine import DealId, ExplicitDeal, explicit_deal
from canasta_env.envs.gym_env import CanastaEnv, CanastaVectorEnv
from canasta_env.envs.pettingzoo_env import raw_env
from canasta_env.envs.sb3_env import CanastaVecEnv
from canasta_env.rules import RulesError, load_rules


def _first_legal(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _one_line(exc: pytest.ExceptionInfo[BaseException], *words: str) -> None:
    text = str(exc.value)
    assert "\n" not in text and all(w in text for w in words), text


# ---- Gymnasium: a refused reset changes nothing -------------------------------------------------
@pytest.mark.parametrize("seat", [5, -1])
def test_a_refused_learner_seat_leaves_the_episode_as_it_was(seat: int) -> None:
    env, twin = CanastaEnv(), CanastaEnv()
    _, info = env.reset(seed=3)
    twin.reset(seed=3)
    with pytest.raises(ValueError) as exc:  # was: the seed-4 deal dealt, its opponent seat unplayed
        env.reset(seed=4, options={"learner_seat": seat})
    _one_line(exc, "Canasta-v0 reset", "learner_seat", str(seat))
    action = _first_legal(info["action_mask"])
    got, want = env.step(action), twin.step(action)
    assert np.array_equal(got[0], want[0]) and got[1:4] == want[1:4]


def test_a_refused_learner_seat_on_a_fresh_env_leaves_nothing_to_step() -> None:
    env = CanastaEnv()
    with pytest.raises(ValueError, match="learner_seat"):
        env.reset(seed=0, options={"learner_seat": 2})
    with pytest.raises(RuntimeError, match="reset"):  # was: the learner's move played for seat 1
        env.step(0)


def test_a_learner_seat_in_range_is_still_taken() -> None:  # the twin
    env = CanastaEnv()
    for seat in (0, 1, np.int64(1)):
        _, info = env.reset(seed=0, options={"learner_seat": seat})
        assert info["learner_seat"] == seat


def test_the_vector_env_refuses_a_learner_seat_before_resetting() -> None:
    env, twin = CanastaVectorEnv(2), CanastaVectorEnv(2)
    env.reset(seed=7)
    twin.reset(seed=7)
    with pytest.raises(ValueError) as exc:
        env.reset(seed=8, options={"learner_seat": 9})
    _one_line(exc, "CanastaVectorEnv reset", "learner_seat", "9")
    actions = env.action_masks().argmax(axis=1)
    assert np.array_equal(env.step(actions)[0], twin.step(actions)[0])
    _, infos = env.reset(seed=8, options={"learner_seat": 1})  # the twin
    assert infos["learner_seat"].tolist() == [1, 1]


def test_a_refused_deal_option_names_the_reset_and_a_refused_explicit_deal_needs_a_reset() -> None:
    env = CanastaEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError) as exc:  # was: "redeal: deals[0].seed ..."
        env.reset(options={"deal": (-1, 0, 0)})
    _one_line(exc, "Canasta-v0 reset", "deal.seed", "-1")
    with pytest.raises(ValueError, match="Canasta-v0 reset: option 'deal'"):
        env.reset(options={"deal": "abc"})
    with pytest.raises(ValueError, match="permutation"):  # dealt after the seed-1 deal had started
        env.reset(seed=1, options={"deal": ExplicitDeal(np.zeros(5, np.int8), 0)})
    with pytest.raises(ValueError, match="call reset"):  # was: played on in the seed-1 deal
        env.step(0)


def test_good_deal_options_still_play_their_deal() -> None:  # the twin
    env = CanastaEnv()
    for deal in (DealId(5, 0, 2), (5, 0, 2), [5, 0, 2], np.array([5, 0, 2])):
        _, info = env.reset(options={"deal": deal})
        assert info["deal"] == (5, 0, 2)
    order = explicit_deal(env.rules, DealId(5, 0, 2))
    obs, _ = env.reset(seed=9, options={"deal": order})
    assert env.step(_first_legal(env.action_masks())) is not None


def test_the_vector_env_refuses_a_2d_seed_array() -> None:
    env = CanastaVectorEnv(3)
    with pytest.raises(ValueError) as exc:  # was: flattened into 3 seeds
        env.reset(seed=[[1, 2, 3]])
    _one_line(exc, "CanastaVectorEnv reset", "shape (1, 3)")
    obs, _ = env.reset(seed=[1, 2, 3])  # the twin
    assert obs.shape[0] == 3


# ---- actions: a Python int past 64 bits is out of range, not "not an integer" ---------------------
@pytest.mark.parametrize("action", [10**30, -(10**30), 2**64])
def test_a_huge_python_int_is_an_illegal_action(action: int) -> None:
    env = CanastaEnv()
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(action)  # was: ValueError "actions must be integers"
    assert terminated and info["illegal_action"] and reward == -1.0


def test_a_huge_python_int_in_a_vector_step_is_illegal_in_its_env_only() -> None:
    env = CanastaVectorEnv(2)
    env.reset(seed=0)
    legal = env.action_masks().argmax(axis=1)
    _, _, _, _, infos = env.step([10**30, int(legal[1])])
    assert infos["illegal_action"].tolist() == [True, False]
    _, _, _, _, infos = env.step([2**40, int(env.action_masks().argmax(axis=1)[1])])  # the twin
    assert infos["illegal_action"].tolist() == [True, False]


@pytest.mark.parametrize("actions", [[1.5, 0], [None, 0], [True, 0], [[0], [0]]])
def test_non_integer_actions_are_still_refused(actions: object) -> None:
    env = CanastaVectorEnv(2)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="CanastaVectorEnv step"):
        env.step(actions)


# ---- SB3 VecEnv ----------------------------------------------------------------------------------
def test_a_refused_step_async_leaves_no_actions_to_replay() -> None:
    env = CanastaVecEnv(2)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(2, dtype=np.int64))  # refused in step_wait: the actions stayed behind
    env.reset()
    with pytest.raises(ValueError, match="integers"):
        env.step_async(np.zeros(2, dtype=np.float32))
    with pytest.raises(RuntimeError, match="without step_async"):  # was: replayed [0, 0]
        env.step_wait()
    env.step_async(env.action_masks().argmax(axis=1))  # the twin
    assert len(env.step_wait()) == 4


def test_set_attr_refuses_what_it_cannot_change() -> None:
    env = CanastaVecEnv(2)
    for name in ("num_envs", "venv", "shaping", 5):  # was: num_envs 7 over a 2-env batch; a no-op
        with pytest.raises(AttributeError) as exc:
            env.set_attr(name, 7)  # type: ignore[arg-type]
        _one_line(exc, "CanastaVecEnv.set_attr")
    assert env.num_envs == 2
    env.set_attr("render_mode", None)  # the twin
    assert env.get_attr("render_mode") == [None, None]


@pytest.mark.parametrize("indices", [[5], [-1], 2, "ab", [0.5], [True]])
def test_indices_out_of_range_are_index_errors(indices: object) -> None:
    env = CanastaVecEnv(2)
    env.reset()
    for call in (lambda: env.get_attr("num_envs", indices),  # was: silently one value per index
                 lambda: env.env_method("action_masks", indices=indices),
                 lambda: env.env_is_wrapped(object, indices)):  # type: ignore[arg-type]
        with pytest.raises(IndexError) as exc:
            call()
        _one_line(exc, "CanastaVecEnv")


def test_good_indices_still_work() -> None:  # the twin
    env = CanastaVecEnv(3)
    env.reset()
    assert env.get_attr("num_envs", [0, 2]) == [3, 3]
    assert env.env_method("action_masks", indices=np.int64(1)).shape[0] == 1
    assert env.env_method("action_masks", indices=range(3)).shape[0] == 3


# ---- PettingZoo ----------------------------------------------------------------------------------
@pytest.mark.parametrize("options", [[1], "deal", 7])
def test_pettingzoo_reset_options_that_are_not_a_dict_are_ignored_with_a_warning(options: object) -> None:
    env = raw_env("classic_2p")
    with pytest.warns(UserWarning, match="options must be a dict"):  # was: TypeError for a list
        env.reset(seed=0, options=options)  # type: ignore[arg-type]
    assert env.agents == ["player_0", "player_1"]


def test_a_refused_pettingzoo_deal_keeps_the_seeded_sequence() -> None:
    env, twin = raw_env("classic_2p"), raw_env("classic_2p")
    env.reset(seed=0)
    twin.reset(seed=0)
    with pytest.raises(ValueError) as exc:
        env.reset(options={"deal": (-1, 0, 0)})
    _one_line(exc, "canasta_v0 reset", "deal.seed")
    with pytest.raises(ValueError, match="canasta_v0 reset: option 'deal'"):
        env.reset(options={"deal": ExplicitDeal(np.zeros(3, np.int8), 0)})
    env.reset()  # was: DealId(0, 0, 3): each refused reset had spent an episode index
    twin.reset()
    assert np.array_equal(env.observe("player_0")["observation"], twin.observe("player_0")["observation"])
    env.reset(options={"deal": [4, 0, 1]})  # the twin
    assert tuple(env.state.deal_id(0)) == (4, 0, 1)  # type: ignore[union-attr]


def test_pettingzoo_raw_step_before_reset_and_after_the_end_is_one_line() -> None:
    env = raw_env("classic_2p")
    with pytest.raises(RuntimeError, match="reset"):  # was: AttributeError agent_selection
        env.step(0)
    env.reset(seed=1)
    while env.agents:
        agent = env.agent_selection
        done = env.terminations[agent] or env.truncations[agent]
        env.step(None if done else _first_legal(env.infos[agent]["action_mask"]))
    with pytest.raises(ValueError) as exc:  # was: KeyError 'player_0'
        env.step(0)
    _one_line(exc, "canasta_v0 step", "reset")


@pytest.mark.parametrize("flag", ["yes", 1, None])
def test_pettingzoo_omniscient_render_must_be_a_bool(flag: object) -> None:
    with pytest.raises(ValueError, match="canasta_v0: omniscient_render"):
        raw_env("classic_2p", omniscient_render=flag)  # type: ignore[arg-type]
    env = raw_env("classic_2p", render_mode="ansi", omniscient_render=True)  # the twin
    env.reset(seed=0)
    assert isinstance(env.render(), str)


# ---- RLlib ---------------------------------------------------------------------------------------
@pytest.fixture
def rllib_env() -> type:
    pytest.importorskip("ray")
    from canasta_env.envs.rllib_env import CanastaMultiAgentEnv

    return CanastaMultiAgentEnv


@pytest.mark.parametrize("action_dict", [None, [0], 0])
def test_rllib_step_with_something_other_than_a_dict_is_one_line(rllib_env: type,
                                                                 action_dict: object) -> None:
    env = rllib_env({"rules": "classic_2p"})
    obs, _ = env.reset(seed=0)
    with pytest.raises(ValueError) as exc:  # was: TypeError 'NoneType' object is not iterable
        env.step(action_dict)
    _one_line(exc, "CanastaMultiAgentEnv step", "dict")
    (agent, o), = obs.items()  # the twin
    assert env.step({agent: _first_legal(o["action_mask"])})[3]["__all__"] is False


def test_rllib_config_seed_survives_a_refused_first_reset(rllib_env: type) -> None:
    env, twin = rllib_env({"seed": 5}), rllib_env({"seed": 5})
    with pytest.raises(ValueError, match="deal"):
        env.reset(options={"deal": (-1, 0, 0)})
    got, _ = env.reset()  # was: a fresh random deal, the config seed spent on the refused reset
    want, _ = twin.reset()
    assert got.keys() == want.keys()
    for agent in got:
        assert np.array_equal(got[agent]["observations"], want[agent]["observations"])


# ---- YAML: numbers that YAML 1.1 reads differently, merge keys -----------------------------------
@pytest.mark.parametrize("text", ["target_score: 0100\n", "hand_size: 011\n", "target_score: +0100\n",
                                  "target_score: 0_100\n", "target_score: -00\n"])
def test_yaml_octal_numbers_are_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(text)
    with pytest.raises(RulesError) as exc:  # was: 0100 read as 64, 011 as 9
        load_rules(path)
    _one_line(exc, str(path), "line 1", "octal")


def test_numbers_without_leading_zeros_still_read(tmp_path: Path) -> None:  # the twin
    path = tmp_path / "r.yaml"
    path.write_text("target_score: 100\ngo_out_requires: 0\npacks: 0x3\njokers: 0b10\nname: '0100'\n")
    rules = load_rules(path)
    assert (rules.target_score, rules.go_out_requires, rules.packs, rules.jokers, rules.name) == (
        100, 0, 3, 2, "0100")


@pytest.mark.parametrize("text", ["<<: {packs: 3}\npacks: 2\n", "packs: 2\n<<: {packs: 3}\n",
                                  "<<: {packs: 3}\n"])
def test_yaml_merge_keys_are_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(text)
    with pytest.raises(RulesError) as exc:  # was: packs 2, the merged 3 silently dropped
        load_rules(path)
    _one_line(exc, str(path), "merge keys")


def test_a_quoted_merge_key_is_just_an_unknown_option(tmp_path: Path) -> None:  # the twin
    path = tmp_path / "r.yaml"
    path.write_text("'<<': 3\npacks: 3\n")
    with pytest.raises(RulesError, match="unknown rule option"):
        load_rules(path)
    path.write_text("packs: 3\n")
    assert load_rules(path).packs == 3


def test_good_reset_options_warn_of_nothing() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # not RuntimeWarning: NUMBA_DISABLE_JIT's hashes wrap
        env = CanastaEnv()
        env.reset(seed=0, options={"learner_seat": 0, "deal": (1, 0, 0)})
        raw = raw_env("classic_2p")
        raw.reset(seed=0, options={"deal": DealId(1, 0, 0)})
