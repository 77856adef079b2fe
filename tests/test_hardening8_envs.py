"""Hardening, round eight: the env adapters a Gymnasium, SB3 or RLlib user drives by hand. An injected
agent that fails between the learner's decisions leaves the table mid-turn, so every env refuses to
step until a reset (the learner's next action was played for the opponent); an agent class given
for an instance is refused at construction; SB3's ``set_options`` checks a learner seat at once;
``Canasta-v0`` names a render mode it lacks with its value; a PettingZoo step refused as illegal
keeps the mover's reward. Each hostile input has a twin showing the valid neighbour still works."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from canasta_env.engine import IllegalActionError
from canasta_env.envs.gym_env import CanastaEnv, CanastaVectorEnv
from canasta_env.envs.learner import LearnerBatch
from canasta_env.envs.pettingzoo_env import raw_env
from canasta_env.envs.sb3_env import CanastaVecEnv
from canasta_env.policy import RandomAgent


def _one_line(exc: pytest.ExceptionInfo[BaseException], *parts: str) -> str:
    text = str(exc.value)
    assert "\n" not in text and all(part in text for part in parts), text
    return text


class Flaky:
    """Plays the first legal action; raises once when ``fail`` (a remote agent timing out) or, with
    ``fail_hook``, in its next ``new_episode``."""

    def __init__(self) -> None:
        self.fail = self.fail_hook = False

    def act(self, observations: npt.NDArray[np.float32], legal_action_mask: npt.NDArray[np.bool_],
            rng: Any) -> npt.NDArray[np.int64]:
        if self.fail:
            self.fail = False
            raise TimeoutError("remote agent timed out")
        return legal_action_mask.argmax(axis=1)

    def new_episode(self, rows: npt.NDArray[np.int64], u: npt.NDArray[np.float64]) -> None:
        if self.fail_hook:
            self.fail_hook = False
            raise RuntimeError("pool is empty")


def _gym(agent: Flaky) -> tuple[Any, LearnerBatch, Callable[[], Any], Callable[[], Any]]:
    env = CanastaEnv(opponent=agent, learner_seat=0)
    return (env, env._core, lambda: env.step(int(env.action_masks().argmax())),
            lambda: env.reset(seed=0))


def _vector(agent: Flaky) -> tuple[Any, LearnerBatch, Callable[[], Any], Callable[[], Any]]:
    env = CanastaVectorEnv(2, opponent=agent, learner_seat=0)
    return env, env.core, lambda: env.step(env.action_masks().argmax(axis=1)), lambda: env.reset(seed=0)


def _sb3(agent: Flaky) -> tuple[Any, LearnerBatch, Callable[[], Any], Callable[[], Any]]:
    env = CanastaVecEnv(2, opponent=agent, learner_seat=0)
    env.seed(0)
    return env, env.venv.core, lambda: env.step(env.action_masks().argmax(axis=1)), env.reset


ADAPTERS = {"Canasta-v0": _gym, "CanastaVectorEnv": _vector, "CanastaVecEnv": _sb3}


def _step_until_the_agent_fails(step: Callable[[], Any], agent: Flaky, said: str) -> None:
    agent.fail = True
    with pytest.raises(ValueError, match=said):
        for _ in range(200):  # the opponent acts once the learner's turn ends
            step()


@pytest.mark.parametrize("make", ADAPTERS.values(), ids=ADAPTERS.keys())
def test_a_step_after_an_agent_failed_mid_turn_is_refused_until_a_reset(make: Any) -> None:
    agent = Flaky()
    _, core, step, reset = make(agent)
    reset()
    _step_until_the_agent_fails(step, agent, "act\\(\\) raised TimeoutError")
    before = core.require_state().data.copy()
    for _ in range(2):  # was: the learner's action played for the opponent, under its mask
        with pytest.raises(ValueError) as exc:
            step()
        _one_line(exc, "step: the last step or reset stopped mid-turn", "TimeoutError: remote agent "
                  "timed out", "call reset() first")
    assert np.array_equal(core.require_state().data, before)
    reset()  # the twin: a reset starts a table the learner moves at
    for _ in range(5):
        step()


@pytest.mark.parametrize("make", ADAPTERS.values(), ids=ADAPTERS.keys())
def test_a_failing_new_episode_hook_stops_the_table_until_a_reset(make: Any) -> None:
    agent = Flaky()
    _, _, step, reset = make(agent)
    agent.fail_hook = True
    with pytest.raises(RuntimeError, match="pool is empty"):
        reset()
    with pytest.raises(ValueError) as exc:  # was (vector envs): a deal no agent had played to the
        step()  # learner's turn; Canasta-v0 already refused a step after a refused reset
    said = _one_line(exc, "step: ", "call reset() first")
    assert make is _gym or "stopped mid-turn (RuntimeError: pool is empty)" in said, said
    reset()  # the twin
    step()


def test_a_refused_action_does_not_stop_the_table() -> None:
    """A refusal before anything changed (a float action, an illegal one under ``"raise"``) leaves
    the table as it was, and the next good action plays."""
    env = CanastaEnv(illegal_action="raise")
    _, info = env.reset(seed=0)
    with pytest.raises(ValueError, match="action must be an integer"):
        env.step(0.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="is not legal"):
        env.step(int(np.flatnonzero(info["action_mask"] == 0)[0]))
    _, _, _, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    env.step(int(np.flatnonzero(info["action_mask"])[0]))


@pytest.mark.parametrize("role", ["opponent", "partners"])
def test_an_agent_class_given_for_an_agent_is_refused(role: str) -> None:
    with pytest.raises(ValueError) as exc:  # was: "act() raised TypeError ... missing 'rng'" mid-step
        CanastaEnv("classic_4p", **{role: RandomAgent})
    _one_line(exc, f"{role} is the class RandomAgent, not an agent", "RandomAgent()")
    env = CanastaEnv("classic_4p", **{role: RandomAgent()}, learner_seat=1)  # the twin
    env.reset(seed=0)
    env.step(int(env.action_masks().argmax()))


@pytest.mark.parametrize("options", [{"learner_seat": 7}, [{"learner_seat": 2}] * 2,
                                     {"learner_seat": "1"}, {"learner_seat": 1.0}])
def test_sb3_set_options_checks_the_learner_seat_at_once(options: Any) -> None:
    env = CanastaVecEnv(2)
    env.set_options({"learner_seat": 1})
    with pytest.raises(ValueError) as exc:  # was: stored, then every reset() refused until new options
        env.set_options(options)
    _one_line(exc, "CanastaVecEnv.set_options", "learner_seat")
    env.reset()  # the options set before stand
    assert [info["learner_seat"] for info in env.reset_infos] == [1, 1]


def test_sb3_set_options_still_takes_a_seat_in_range() -> None:  # the twin
    env = CanastaVecEnv(2)
    for options in ({"learner_seat": np.int64(0)}, [{"learner_seat": 1}] * 2, None):
        env.set_options(options)
        env.reset()
    assert env.observation_space.contains(env.reset()[0])


@pytest.mark.parametrize("mode", ["rgb_array", "ANSI", 5])
def test_a_render_mode_canasta_v0_lacks_is_named_with_its_value(mode: object) -> None:
    with pytest.raises(ValueError) as exc:  # was: "render_mode must be one of [...]", no env, no value
        CanastaEnv(render_mode=mode)  # type: ignore[arg-type]
    _one_line(exc, "Canasta-v0: render_mode", repr(mode))
    env = CanastaEnv(render_mode="ansi")  # the twin
    env.reset(seed=0)
    assert "view of P" in str(env.render())


def _to_a_scored_hand(env: Any) -> float:
    """Play ``env`` (a game) until the agent to move holds a hand's reward; that reward."""
    rng = np.random.default_rng(0)
    for _ in range(20000):
        obs, reward, *_ = env.last()
        if reward:
            return float(reward)
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    raise AssertionError("no hand was scored")


def test_a_refused_pettingzoo_step_keeps_the_movers_reward() -> None:
    env = raw_env("classic_2p", episode="game")
    env.reset(seed=0)
    reward = _to_a_scored_hand(env)
    with pytest.raises(IllegalActionError):
        env.step(-1)
    assert env.last()[1] == reward  # was: 0.0, the hand's reward cleared by a move never played
    mover = env.agent_selection
    env.step(int(np.flatnonzero(env.last()[0]["action_mask"])[0]))  # the twin: a played move spends it
    assert env._cumulative_rewards[mover] == 0.0  # the move after a scored hand (a draw) scores nothing
