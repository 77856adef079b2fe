"""PettingZoo AEC env ``canasta_v0`` over a batch of one game.

Agents ``player_0 ..``; every decision of a turn is exposed (a turn is several decisions by the same
agent, so there is no Parallel API). Observation: ``{"observation": float32 (D,), "action_mask":
int8 (A,)}`` (the mask is all zero for agents not to move; also in ``infos[agent]["action_mask"]``).
Rewards are set for every agent when a hand is scored: its side's hand score minus the best other
side's, times ``reward_scale`` (or +1/0/-1). An episode is a hand, or a game with
``episode="game"``; truncation only from the engine's step cap.

Version history: v0 - first release.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import numpy.typing as npt
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.env import AECIterable

from canasta_env.engine import (
    ACTION_NAMES,
    NUM_ACTIONS,
    DealId,
    State,
    init_from_deals,
    observe,
    step_one,
)
from canasta_env.engine.core import check_action, check_seed
from canasta_env.engine.layout import EPISODES, EV_HAND_END, pack_params
from canasta_env.engine.observation import bounds
from canasta_env.engine.render import render
from canasta_env.envs.learner import (
    REWARD_MODES,
    check_real,
    deal_option,
    default_reward_scale,
    hand_reward,
)
from canasta_env.messages import check_choice, short_repr
from canasta_env.rules import RuleSet, load_rules


def env(rules: Any = "classic_4p", **options: Any) -> AECEnv:
    """``raw_env`` behind PettingZoo's standard wrappers: an illegal move ends the game with -1
    for the offender; calls must follow the AEC order. An action that is not an integer in
    ``[0, NUM_ACTIONS)`` (``None`` only once the agent is done) is refused with a one-line
    ``ValueError`` naming it (``CheckedActionWrapper``) before the other wrappers see it; ``last()``
    once every agent is done and ``state()`` are refused in one line (``CheckedOrderWrapper``)."""
    aec: AECEnv = raw_env(rules, **options)
    aec = wrappers.TerminateIllegalWrapper(aec, illegal_reward=-1)
    aec = wrappers.AssertOutOfBoundsWrapper(aec)
    return CheckedOrderWrapper(CheckedActionWrapper(aec))


class CheckedOrderWrapper(wrappers.OrderEnforcingWrapper):
    """PettingZoo's ``OrderEnforcingWrapper`` with ``last()`` the raw env's checked one (the
    wrapper's own is ``AECEnv.last``, which looked the removed agent up: a ``KeyError``) and
    ``state()`` refused as PettingZoo refuses a global state an env lacks (it called the raw env's
    ``state`` attribute, the engine's ``State``: ``TypeError: 'State' object is not callable``)."""

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if self._has_reset:  # before it, PettingZoo's "agent_selection cannot be accessed before reset"
            self.unwrapped.check_not_over("last")
        return super().last(observe)

    def state(self) -> npt.NDArray[Any]:
        raise NotImplementedError("canasta_v0 has no global state() (PettingZoo's optional API); the "
                                  "engine's State is env.unwrapped.state")

    def __str__(self) -> str:
        return str(self.env)


class CheckedActionWrapper(wrappers.BaseWrapper):
    """Refuses a bad action in one line before PettingZoo's wrappers see it: their assert names no
    value (and under ``python -O`` they index the mask with it: an IndexError for 0.5, -1 played as
    an illegal move). ``None`` passes for an agent that is done (the AEC way to step it out)."""

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if action is None and (self.terminations[agent] or self.truncations[agent]):
            super().step(action)
            return
        a = check_action(action, "canasta_v0 step")  # the raw env's own check: 3.7, "0", True, arrays
        if not 0 <= a < NUM_ACTIONS:
            raise ValueError(f"canasta_v0 step: action {a} is out of range: actions are integers in "
                             f"[0, {NUM_ACTIONS})")
        super().step(a)


class raw_env(AECEnv):  # noqa: N801 - PettingZoo's naming convention
    """Canasta for ``num_players`` agents; an illegal move raises ``IllegalActionError``.

    Args:
        rules: preset name, YAML path or ``RuleSet``.
        render_mode: ``"ansi"`` or ``"human"``: the view of the agent to move.
        omniscient_render: render every hand and the pile contents (debugging).
        episode: ``"hand"`` or ``"game"``.
        reward_mode, reward_scale: as for ``Canasta-v0``.
    """

    metadata = {"render_modes": ["ansi", "human"], "name": "canasta_v0",
                "is_parallelizable": False, "render_fps": 4}

    def __init__(self, rules: Any = "classic_4p", render_mode: str | None = None, *,
                 omniscient_render: bool = False, episode: str = "hand",
                 reward_mode: str = "margin", reward_scale: float | None = None) -> None:
        super().__init__()
        self.rules: RuleSet = rules.resolved() if isinstance(rules, RuleSet) else load_rules(rules)
        if render_mode is not None and render_mode not in ("ansi", "human"):
            raise ValueError(f"canasta_v0: render_mode must be 'ansi' or 'human', got "
                             f"{short_repr(render_mode)}")
        check_choice(reward_mode, "reward_mode", REWARD_MODES, "canasta_v0")
        check_choice(episode, "episode", EPISODES, "canasta_v0")
        if not isinstance(omniscient_render, (bool, np.bool_)):
            raise ValueError(f"canasta_v0: omniscient_render must be True or False, got "
                             f"{short_repr(omniscient_render)}")
        self.render_mode = render_mode
        self.omniscient_render = omniscient_render
        self.episode = episode
        self.reward_mode = reward_mode
        self.reward_scale = default_reward_scale(self.rules) if reward_scale is None else check_real(
            reward_scale, "reward_scale", "canasta_v0", positive=True)
        n = self.rules.num_players
        self.possible_agents = [f"player_{i}" for i in range(n)]
        self.agent_name_mapping = {a: i for i, a in enumerate(self.possible_agents)}
        self.state: State | None = None
        self._base_seed: int | None = None
        self._episode_index = 0
        low, high = bounds(pack_params(self.rules, episode))
        obs_space = spaces.Dict({
            "observation": spaces.Box(low, high, dtype=np.float32),
            "action_mask": spaces.Box(0, 1, (NUM_ACTIONS,), dtype=np.int8),
        })
        self._obs_spaces = {a: obs_space for a in self.possible_agents}
        # annotated: gymnasium 1.2's Discrete is generic in its int type, which mypy cannot infer
        self._act_spaces: dict[str, spaces.Space] = {a: spaces.Discrete(NUM_ACTIONS)
                                                    for a in self.possible_agents}

    def observation_space(self, agent: str) -> spaces.Space:
        return self._obs_spaces[self.possible_agents[self._seat(agent, "observation_space")]]

    def action_space(self, agent: str) -> spaces.Space:
        return self._act_spaces[self.possible_agents[self._seat(agent, "action_space")]]

    def _seat(self, agent: object, fn: str) -> int:
        """The seat of ``agent`` (``player_N``); ``ValueError`` naming the known agents otherwise."""
        if not isinstance(agent, str) or agent not in self.agent_name_mapping:
            raise ValueError(f"canasta_v0 {fn}: unknown agent {short_repr(agent)}; the agents are "
                             f"{', '.join(self.possible_agents)}")
        return self.agent_name_mapping[agent]

    @staticmethod
    def action_to_string(action: int) -> str:
        """Readable name of an action, e.g. ``MELD_NNN_K``: an integer in ``[0, NUM_ACTIONS)``, else
        ``ValueError`` (-1 named the last action, 1.7 and ``"3"`` were read as actions 1 and 3)."""
        a = check_action(action, "canasta_v0 action_to_string")
        if not 0 <= a < NUM_ACTIONS:
            raise ValueError(f"canasta_v0 action_to_string: action {a} is out of range: actions are "
                             f"integers in [0, {NUM_ACTIONS})")
        return ACTION_NAMES[a]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """New deal: ``reset(seed=s)`` plays DealId(s, 0, 0), later resets DealId(s, 0, k);
        ``options={"deal": DealId or ExplicitDeal}`` plays that deal."""
        fn = "canasta_v0 reset"
        deal = None
        if options and not isinstance(options, dict):
            warnings.warn(f"{fn}: options must be a dict, got {type(options).__name__}; ignored",
                          stacklevel=2)
        elif options:
            extra = set(options) - {"deal"}
            if extra:
                warnings.warn(f"canasta_v0 reset options other than 'deal' are ignored: "
                              f"{sorted(map(str, extra))}", stacklevel=2)
            deal = deal_option(options.get("deal"), fn)
        if seed is not None:
            seed = check_seed(seed, fn)
        # the new deal is made before the seed and episode count change: a refused reset keeps them
        if seed is not None or self._base_seed is None:
            base_seed = seed if seed is not None else int(
                np.random.SeedSequence().generate_state(1, np.uint64)[0] >> np.uint64(1))
            index = 0
        else:
            base_seed, index = self._base_seed, self._episode_index + 1
        if deal is None:
            state = init_from_deals(self.rules, [DealId(base_seed, 0, index)], episode=self.episode)
        else:
            try:
                state = init_from_deals(self.rules, [deal], episode=self.episode)  # type: ignore[arg-type]
            except ValueError as exc:  # an ExplicitDeal whose cards are not the deck's
                raise ValueError(f"{fn}: option 'deal': "
                                 f"{str(exc).removeprefix('init_from_deals: ')}") from None
        self.state, self._base_seed, self._episode_index = state, base_seed, index
        self.agents = self.possible_agents[:]
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self._sync()

    def _state(self) -> State:
        if self.state is None:
            raise RuntimeError("canasta_v0: reset() must be called first")
        return self.state

    def agent_iter(self, max_iter: int = 2**63) -> AECIterable:
        """PettingZoo's ``agent_iter()``, refused in one line before ``reset()`` (and after
        ``close()``): it raised ``AttributeError: 'raw_env' object has no attribute 'agents'``."""
        self._state()
        return super().agent_iter(max_iter)

    def _mover(self) -> int | None:
        """The seat to move, or None once the episode is over."""
        state = self._state()
        if state.terminated[0] or state.truncated[0]:
            return None
        return int(state.current_player[0])

    def _mask(self, agent: str, mover: int | None) -> npt.NDArray[np.int8]:
        if self.agent_name_mapping[agent] != mover:
            return np.zeros(NUM_ACTIONS, dtype=np.int8)
        return self._state().legal_action_mask[0].astype(np.int8)

    def _sync(self) -> None:
        state = self._state()
        self.agent_selection = self.possible_agents[int(state.current_player[0])]
        mover = self._mover()
        for a in self.agents:
            self.infos[a] = {"action_mask": self._mask(a, mover)}

    def check_not_over(self, fn: str) -> None:
        """``ValueError`` naming ``fn`` once every agent has been stepped out with ``None`` (``agents``
        empty): the selected agent's reward, flags and info are gone, so there is nothing to report."""
        self._state()
        if self.agent_selection not in self._cumulative_rewards:
            raise ValueError(f"canasta_v0 {fn}: every agent is done; call reset() first")

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """PettingZoo's ``last()``; once every agent is done (the loop over ``agent_iter()`` has
        ended) a one-line ``ValueError``: ``AECEnv.last`` raised ``KeyError: 'player_0'``. Each
        agent's final reward is the one ``last()`` gave it before its ``step(None)``."""
        self.check_not_over("last")
        return super().last(observe)

    def observe(self, agent: str) -> dict[str, npt.NDArray[Any]]:
        seat = self._seat(agent, "observe")
        return {"observation": observe(self._state(), [seat])[0],
                "action_mask": self._mask(agent, self._mover())}

    def step(self, action: int) -> None:
        state = self._state()
        if not self.agents:
            raise ValueError("canasta_v0 step: every agent is done; call reset() first")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        action = check_action(action, "canasta_v0 step")  # 3.7 is refused, not played as 3
        result = step_one(state, action)  # an illegal action raises here: the mover keeps its reward
        self._cumulative_rewards[agent] = 0.0
        self.rewards = {a: 0.0 for a in self.agents}
        if result.events[0] & EV_HAND_END:  # a hand was scored
            rewards = hand_reward(result.rewards[0], self.reward_mode, self.reward_scale)
            for a in self.agents:
                self.rewards[a] = float(rewards[self.agent_name_mapping[a]])
        if result.terminated[0] or result.truncated[0]:
            for a in self.agents:
                self.terminations[a] = bool(result.terminated[0])
                self.truncations[a] = bool(result.truncated[0])
            self._accumulate_rewards()
            self.agent_selection = self.possible_agents[int(state.current_player[0])]
            for a in self.agents:
                self.infos[a] = {"action_mask": np.zeros(NUM_ACTIONS, dtype=np.int8)}
        else:
            self._sync()
            self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def render(self) -> str | None:
        if self.render_mode is None:
            warnings.warn("render() called without a render_mode", stacklevel=2)
            return None
        state = self._state()
        player = None if self.omniscient_render else int(state.current_player[0])
        text = render(state, 0, player=player)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        self.state = None
