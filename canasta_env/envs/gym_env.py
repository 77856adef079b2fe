"""Gymnasium environments: ``Canasta-v0`` (one learner against injected agents) and its
``gymnasium.vector.VectorEnv`` over the batch engine.

Action space: ``Discrete(NUM_ACTIONS)`` (``canasta_env.engine.actions``); legal actions from
``action_masks()`` (bool, for sb3-contrib) or ``info["action_mask"]`` (int8, for
``Discrete.sample(mask)``). Observation space: ``Box(low, high, (D,), float32)`` from the seat the
learner is playing (``canasta_env.engine.observation`` lists the pieces). Reward: at the end of each
hand, the learner side's hand score minus the best other side's, times ``reward_scale`` (or +1/0/-1
with ``reward_mode="win_loss"``); optional potential-based shaping. An episode is a hand (or a game
with ``episode="game"``); ``truncated`` only from the engine's step cap.

Version history: v0 - first release (classic rules; the action layout, observation layout and
reward definition are pinned in ``tests/test_versions.py``).
"""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from canasta_env.engine import NUM_ACTIONS, ExplicitDeal, init_from_deals
from canasta_env.engine.core import check_action, check_batch_size, check_seed
from canasta_env.engine.layout import pack_params
from canasta_env.engine.observation import bounds
from canasta_env.engine.render import render
from canasta_env.envs.learner import LearnerBatch, LearnerConfig, deal_option
from canasta_env.messages import short_repr

RESET_OPTIONS = ("learner_seat", "deal")


def _spaces(batch: LearnerBatch) -> tuple[gym.spaces.Box, gym.spaces.Discrete]:
    low, high = bounds(pack_params(batch.rules, batch.config.episode))
    return gym.spaces.Box(low, high, dtype=np.float32), gym.spaces.Discrete(NUM_ACTIONS)


class CanastaEnv(gym.Env[npt.NDArray[np.float32], int]):
    """Canasta for one learner; the other seats are played by injected agents (random by default).

    Args:
        rules: preset name, YAML path or ``RuleSet``.
        render_mode: ``"ansi"`` (returns the learner's view as text) or ``"human"`` (prints it).
        **options: ``LearnerConfig`` fields (opponent, partners, learner_seat, illegal_action,
            skip_forced, reward_mode, reward_scale, shaping, episode, illegal_reward).
    """

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 4}

    def __init__(self, rules: Any = "classic_2p", render_mode: str | None = None,
                 **options: Any) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"Canasta-v0: render_mode must be 'ansi', 'human' or None, got "
                             f"{short_repr(render_mode)}")
        self.render_mode = render_mode
        self._core = LearnerBatch(LearnerConfig(rules=rules, **options), 1)
        self.observation_space, self.action_space = _spaces(self._core)  # type: ignore[assignment]
        self._base_seed: int | None = None
        self._over = False  # the episode ended: step() is refused until reset()

    @property
    def rules(self) -> Any:
        return self._core.rules

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[npt.NDArray[np.float32], dict[str, Any]]:
        """New deal: ``reset(seed=s)`` plays DealId(s, 0, 0), later resets DealId(s, 0, k); ``s``
        must be an integer in [0, 2**64)."""
        if seed is not None:
            seed = check_seed(seed, "Canasta-v0 reset")
        seat, deal = _episode_options(options, "Canasta-v0 reset", self._core)
        self._over = True  # until the new episode has started: a reset refused below keeps step() refused
        _check_explicit_deal(deal, "Canasta-v0 reset", self._core)
        super().reset(seed=seed)
        if seed is not None or self._base_seed is None:
            self._base_seed = int(seed) if seed is not None else int(
                self.np_random.integers(0, 2**63 - 1))
            self._core.reset([self._base_seed], seat)
            if deal is not None:
                self._core.reset_rows(np.array([0]), deal, seat)
        else:
            self._core.reset_rows(np.array([0]), deal, seat)
        self._over = False
        if self.render_mode == "human":
            self.render()
        return self._core.observations()[0], self._info()

    def step(self, action: int) -> tuple[npt.NDArray[np.float32], float, bool, bool, dict[str, Any]]:
        """Play an integer action (a float such as 3.7 is refused, not truncated). Once the episode
        has ended (terminated or truncated) ``ValueError`` until ``reset()``, as the RLlib env does."""
        if self._over:
            raise ValueError("Canasta-v0 step: the episode is over; call reset() first")
        out = self._core.step(np.array([check_action(action, "Canasta-v0 step")]),
                              "Canasta-v0 step")
        self._over = bool(out.terminated[0] or out.truncated[0])
        info = self._info()
        info["forced_steps"] = int(out.forced[0])
        info["illegal_action"] = bool(out.illegal[0])
        if self.render_mode == "human":
            self.render()
        return (out.obs[0], float(out.rewards[0]), bool(out.terminated[0]),
                bool(out.truncated[0]), info)

    def action_masks(self) -> npt.NDArray[np.bool_]:
        """Legal actions of the learner (sb3-contrib's MaskablePPO calls this)."""
        return self._core.action_masks()[0]

    def _info(self) -> dict[str, Any]:
        state = self._core.require_state()
        return {"action_mask": self.action_masks().astype(np.int8),
                "learner_seat": int(self._core.seat[0]), "deal": tuple(state.deal_id(0))}

    def render(self) -> str | None:  # type: ignore[override]
        """The learner's view as text: returned under ``"ansi"``, printed under ``"human"`` (which
        ``reset`` and ``step`` also do, as Gymnasium's human mode asks; ``step`` printed it and then
        ``None``, and ``reset`` drew nothing), ``None`` without a render mode."""
        text = render(self._core.require_state(), 0, player=int(self._core.acting_seat(
            np.array([0]))[0]))
        if self.render_mode == "ansi":
            return text
        if self.render_mode == "human":
            print(text)
        return None


def _episode_options(options: dict[str, Any] | None, fn: str, core: LearnerBatch
                     ) -> tuple[int | None, Any]:
    """Per-episode reset options: ``learner_seat`` and ``deal`` (a DealId or ExplicitDeal), checked
    before the reset changes anything (an ExplicitDeal's cards are checked when it is dealt)."""
    if not options:
        return None, None
    if not isinstance(options, dict):
        warnings.warn(f"reset options must be a dict, got {type(options).__name__}; ignored",
                      stacklevel=3)
        return None, None
    unknown = sorted(set(options) - set(RESET_OPTIONS), key=repr)  # keys of mixed types (1, "x") sort
    if unknown:
        warnings.warn(f"unknown reset options {unknown} ignored; known: {list(RESET_OPTIONS)}",
                      stacklevel=3)
    seat = options.get("learner_seat")
    deal = options.get("deal")
    return core.check_seat(seat, fn), deal_option(deal, fn)


def _check_explicit_deal(deal: object, fn: str, core: LearnerBatch) -> None:
    """Refuse an ``ExplicitDeal`` that is not a deal of ``core``'s rules (its cards, its dealer)
    before the reset changes the env's seed, naming the option: checked only when dealt, a bad one
    had already started the new seed's deals, so later resets no longer continued the env's own."""
    if isinstance(deal, ExplicitDeal):
        try:
            init_from_deals(core.rules, [deal], episode=core.config.episode)
        except ValueError as exc:
            raise ValueError(f"{fn}: option 'deal': {str(exc).removeprefix('init_from_deals: ')}") from None


class CanastaVectorEnv(VectorEnv):
    """``num_envs`` copies of ``Canasta-v0`` on one engine batch (same-step autoreset: a finished
    env's last observation is in ``infos["final_obs"]``, its last info in ``infos["final_info"]``,
    and the returned ones start its next deal).

    ``reset(seed=s)`` gives env i the deals of ``CanastaEnv.reset(seed=s + i)``.
    """

    metadata = {"render_modes": [], "autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(self, num_envs: int = 8, rules: Any = "classic_2p", **options: Any) -> None:
        render_mode = options.pop("render_mode", None)
        if render_mode is not None:  # was dropped silently: the caller expected frames
            raise ValueError(f"CanastaVectorEnv: render_mode {short_repr(render_mode)}: the vector env "
                             "draws nothing; leave it None (a single Canasta-v0 env renders 'ansi')")
        num_envs = check_batch_size(num_envs, "CanastaVectorEnv", "num_envs")
        self.num_envs = num_envs
        self._core = LearnerBatch(LearnerConfig(rules=rules, **options), num_envs,
                                  "CanastaVectorEnv")
        self.single_observation_space, self.single_action_space = _spaces(self._core)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)

    @property
    def core(self) -> LearnerBatch:
        return self._core

    def reset(self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
              ) -> tuple[npt.NDArray[np.float32], dict[str, Any]]:
        """``seed``: an int s (env i plays the deals of seed s + i; ``np_random_seed`` is s, as
        Gymnasium's ``VectorEnv.reset`` sets it) or one seed per env, integers in [0, 2**64); ``None``
        continues each env's own deals (fresh seeds on the first reset)."""
        fn = "CanastaVectorEnv reset"
        seeds = None if seed is None else self._seeds(seed, fn)
        seat, deal = _episode_options(options, fn, self._core)
        if deal is not None:
            warnings.warn("the vector env ignores the 'deal' reset option", stacklevel=2)
        if seed is None and self._core.state is not None:  # continue every env's own deals
            self._core.reset_rows(np.arange(self.num_envs), seat=seat)
            return self._core.observations(), self._infos()
        if seeds is None:
            seeds = self._seeds(int(np.random.SeedSequence().generate_state(2, np.uint64)[0]
                                    >> np.uint64(1)), fn)
        self._core.reset(seeds, seat)
        if seed is not None and np.ndim(seed) == 0:  # np_random_seed was a fresh one, not s
            super().reset(seed=seeds[0])
        return self._core.observations(), self._infos()

    def _seeds(self, seed: Any, fn: str) -> list[int]:
        """One seed per env from an int (``seed + i``) or a sequence, each checked."""
        if np.ndim(seed) == 0:
            first = check_seed(seed, fn, span=self.num_envs)
            return [first + i for i in range(self.num_envs)]
        items = np.asarray(seed, dtype=object)
        if items.ndim != 1:  # a (1, n) array is a mistake, not n seeds
            raise ValueError(f"{fn}: seed must be an int or a 1-D sequence of {self.num_envs} ints, "
                             f"got shape {items.shape} ({short_repr(seed)})")
        seeds = [check_seed(s, fn, f"seed[{i}]") for i, s in enumerate(items)]
        if len(seeds) != self.num_envs:
            raise ValueError(f"{fn}: got {len(seeds)} seeds for {self.num_envs} envs")
        return seeds

    def step(self, actions: npt.ArrayLike) -> tuple[Any, ...]:
        """Play one integer action per env (floats are refused, not truncated)."""
        out = self._core.step(actions, "CanastaVectorEnv step")
        done = np.flatnonzero(out.terminated | out.truncated)
        infos = self._infos()
        infos["forced_steps"] = out.forced
        infos["illegal_action"] = out.illegal
        obs = out.obs
        if done.size:
            final = np.empty(self.num_envs, dtype=object)
            for b in done:
                final[b] = obs[b].copy()
            has_final = np.zeros(self.num_envs, dtype=bool)
            has_final[done] = True
            infos["final_obs"], infos["_final_obs"] = final, has_final
            infos["final_info"], infos["_final_info"] = _final_info(infos, has_final), has_final.copy()
            self._core.reset_rows(done)
            obs = self._core.observations()
            infos.update(self._infos())
        return obs, out.rewards, out.terminated, out.truncated, infos

    def action_masks(self) -> npt.NDArray[np.bool_]:
        """(num_envs, A) legal actions of the learner in each env."""
        return self._core.action_masks()

    def _infos(self) -> dict[str, Any]:
        return {"action_mask": self.action_masks().astype(np.int8),
                "learner_seat": self._core.seat.copy()}

    def close_extras(self, **kwargs: Any) -> None:
        core = getattr(self, "_core", None)  # absent when __init__ refused its arguments
        if core is not None:
            core.state = None


def _final_info(infos: dict[str, Any], done: npt.NDArray[np.bool_]) -> dict[str, Any]:
    """The finished envs' last infos (``done``), batched as Gymnasium's same-step autoreset gives
    ``infos["final_info"]``: each key's values (zero for the other envs) and its ``_key`` mask. Without
    it the finished episode's learner seat and action mask were lost: ``infos`` holds the next
    deal's, and a consumer of the convention found no ``final_info``."""
    out: dict[str, Any] = {}
    for key, value in infos.items():
        if key.startswith("_") or key == "final_obs":
            continue
        keep = done.reshape(-1, *([1] * (np.ndim(value) - 1)))
        out[key] = np.where(keep, value, np.zeros_like(value))
        out[f"_{key}"] = done.copy()
    return out


def make_vector(num_envs: int, rules: Any = "classic_2p", **options: Any) -> CanastaVectorEnv:
    """``vector_entry_point`` of ``Canasta-v0`` (gymnasium passes ``num_envs`` and the kwargs)."""
    return CanastaVectorEnv(num_envs, rules, **options)


__all__ = ["CanastaEnv", "CanastaVectorEnv", "make_vector"]
