"""Hardening, round nine: the env adapters after the end and under misuse. PettingZoo's ``last()``
once every agent is done (the loop over ``agent_iter()`` has ended) is one line, as ``step`` is, in
the raw and the wrapped env (PettingZoo's own ``AECEnv.last`` looked the removed agent up: a
``KeyError``), and the wrapped env's ``state()`` says it has no global state; reset options whose
keys are of mixed types are warned of and ignored (sorting them raised ``TypeError``, and SB3 kept
them, failing every reset); a ``deal`` given as a 0-d array is named. Each hostile input has a twin
showing the valid neighbour still works."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

from canasta_env import canasta_v0
from canasta_env.engine import State
from canasta_env.envs.gym_env import CanastaEnv, CanastaVectorEnv
from canasta_env.envs.pettingzoo_env import raw_env
from canasta_env.envs.sb3_env import CanastaVecEnv

MAKERS = {"raw_env": canasta_v0.raw_env, "env": canasta_v0.env}


def _one_line(exc: pytest.ExceptionInfo[BaseException], *parts: str) -> str:
    text = str(exc.value)
    assert "\n" not in text and all(part in text for part in parts), text
    return text


def _play_out(env: Any, *, illegal_first: bool = False) -> dict[str, float]:
    """Play ``env`` through ``agent_iter()`` to its end (every agent stepped out with ``None``),
    taking the first legal action (or, with ``illegal_first``, an illegal one at once); each agent's
    reward summed over its ``last()`` calls."""
    returns = dict.fromkeys(env.possible_agents, 0.0)
    for agent in env.agent_iter():
        obs, reward, termination, truncation, _ = env.last()
        returns[agent] += reward
        mask = obs["action_mask"]
        if termination or truncation:
            action = None
        elif illegal_first:
            action, illegal_first = int(np.flatnonzero(mask == 0)[0]), False
        else:
            action = int(np.flatnonzero(mask)[0])
        env.step(action)
    return returns


# ---- PettingZoo: last() after the end -----------------------------------------------------------
@pytest.mark.parametrize("observe", [True, False])
@pytest.mark.parametrize("make", MAKERS.values(), ids=MAKERS.keys())
def test_last_once_every_agent_is_done_is_one_line(make: Any, observe: bool) -> None:
    env = make("classic_2p")
    env.reset(seed=1)
    returns = _play_out(env)
    assert not env.agents
    with pytest.raises(ValueError) as exc:  # was: KeyError: 'player_0'
        env.last(observe)
    _one_line(exc, "canasta_v0 last", "every agent is done", "reset()")
    assert any(returns.values())  # the twin: the hand's rewards came from last() inside the loop
    env.reset(seed=1)
    obs, reward, termination, truncation, info = env.last(observe)
    assert (obs is None) != observe and reward == 0.0 and not (termination or truncation)
    assert info["action_mask"].any()


def test_wrapped_last_after_an_illegal_move_ended_the_game_is_one_line() -> None:
    env = canasta_v0.env("classic_2p")
    env.reset(seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PettingZoo's "illegal move made, game terminating"
        returns = _play_out(env, illegal_first=True)
    assert -1.0 in returns.values()  # the offender's
    with pytest.raises(ValueError) as exc:  # was: KeyError naming the offender
        env.last()
    _one_line(exc, "canasta_v0 last", "reset()")


def test_last_while_agents_are_stepped_out_still_reports_each_one() -> None:  # the twin
    env = raw_env("classic_2p")
    env.reset(seed=1)
    while not env.terminations[env.agent_selection]:
        env.step(int(np.flatnonzero(env.last()[0]["action_mask"])[0]))
    seen = []
    while env.agents:
        _, reward, termination, *_ = env.last()
        assert termination
        seen.append((env.agent_selection, reward))
        env.step(None)  # type: ignore[arg-type]
    assert sorted(agent for agent, _ in seen) == env.possible_agents
    assert sum(reward for _, reward in seen) == 0.0 and any(reward for _, reward in seen)


def test_raw_last_before_reset_names_the_reset() -> None:
    with pytest.raises(RuntimeError) as exc:  # was: AttributeError: no attribute 'agent_selection'
        raw_env("classic_2p").last()
    _one_line(exc, "canasta_v0: reset()")
    with pytest.raises(AttributeError, match="before reset"):  # the wrapped env: PettingZoo's own line
        canasta_v0.env("classic_2p").last()


def test_raw_agent_iter_before_reset_and_after_close_names_the_reset() -> None:
    env = raw_env("classic_2p")
    with pytest.raises(RuntimeError) as exc:  # was: AttributeError: no attribute 'agents'
        env.agent_iter()
    _one_line(exc, "canasta_v0", "reset()")
    env.reset(seed=0)
    assert next(iter(env.agent_iter())) == env.agent_selection  # the twin
    env.close()
    with pytest.raises(RuntimeError, match="canasta_v0: reset"):
        env.agent_iter()


def test_wrapped_state_says_there_is_no_global_state() -> None:
    env = canasta_v0.env("classic_2p")
    env.reset(seed=0)
    with pytest.raises(NotImplementedError) as exc:  # was: TypeError: 'State' object is not callable
        env.state()
    _one_line(exc, "canasta_v0", "state()", "env.unwrapped.state")
    assert isinstance(env.unwrapped.state, State)  # the twin: the engine's state is still there
    assert str(env) == "CheckedActionWrapper<canasta_v0>"  # printed as PettingZoo's wrapper printed it


# ---- reset options with keys of mixed types -----------------------------------------------------
def test_gym_reset_options_with_mixed_key_types_are_warned_of() -> None:
    env = CanastaEnv(learner_seat=0)
    with pytest.warns(UserWarning, match=r"unknown reset options \['x', 1\]"):  # was: TypeError '<'
        env.reset(seed=0, options={1: 2, "x": 3})  # type: ignore[dict-item]
    with pytest.warns(UserWarning, match=r"\[1\]"):  # the twin: a known option beside it is taken
        _, info = env.reset(seed=0, options={1: 2, "learner_seat": 1})  # type: ignore[dict-item]
    assert info["learner_seat"] == 1


def test_vector_reset_options_with_mixed_key_types_are_warned_of() -> None:
    env = CanastaVectorEnv(2, learner_seat=0)
    with pytest.warns(UserWarning, match="unknown reset options"):  # was: TypeError '<'
        env.reset(seed=0, options={1: 2, "x": 3, "learner_seat": 1})  # type: ignore[dict-item]
    assert env.core.seat.tolist() == [1, 1]


def test_sb3_options_with_mixed_key_types_do_not_stop_every_reset() -> None:
    env = CanastaVecEnv(2, learner_seat=0)
    env.set_options({1: 2, "x": 3, "learner_seat": 1})  # type: ignore[dict-item]
    with pytest.warns(UserWarning, match="unknown reset options"):  # was: TypeError, at every reset
        env.reset()
    assert [info["learner_seat"] for info in env.reset_infos] == [1, 1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the twin: the options were spent, the next reset is plain
        env.reset()
    assert [info["learner_seat"] for info in env.reset_infos] == [0, 0]


# ---- the deal option as an array ----------------------------------------------------------------
def _reset_gym(deal: Any) -> tuple[int, ...]:
    return tuple(CanastaEnv().reset(options={"deal": deal})[1]["deal"])


def _reset_pettingzoo(deal: Any) -> tuple[int, ...]:
    env = raw_env("classic_2p")
    env.reset(options={"deal": deal})
    return tuple(env.state.deal_id(0))  # type: ignore[union-attr]


RESETS = {"Canasta-v0": ("Canasta-v0 reset", _reset_gym),
          "canasta_v0": ("canasta_v0 reset", _reset_pettingzoo)}


@pytest.mark.parametrize("deal", [np.array(5), np.zeros((3, 2), np.int64), np.arange(4)],
                         ids=["0-d", "3x2", "4"])
@pytest.mark.parametrize("fn, reset", RESETS.values(), ids=RESETS.keys())
def test_a_deal_array_of_another_shape_is_named(fn: str, reset: Any, deal: Any) -> None:
    with pytest.raises(ValueError) as exc:  # was: TypeError: len() of unsized object (0-d)
        reset(deal)
    _one_line(exc, fn, "option 'deal' must be a DealId")
    assert reset(np.array([4, 0, 1])) == (4, 0, 1)  # the twin: an array of three is a DealId

