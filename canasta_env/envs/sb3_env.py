"""A Stable-Baselines3 ``VecEnv`` over the batch engine: the training fast path.

A thin adapter over ``CanastaVectorEnv``: one engine batch, no Python loop over envs except to
build the list of info dicts. Contract (each point tested):

* ``reset()`` and ``step_wait()`` return newly allocated arrays every call;
* ``env_method("action_masks")`` returns the ``(n, A)`` mask of the observations last returned (one
  engine call), so ``sb3_contrib.common.maskable.utils.get_action_masks`` works, wrapped or not;
* on an episode end ``done`` is true, ``info["terminal_observation"]`` is the learner's final view,
  ``info["TimeLimit.truncated"]`` marks step-cap truncations, and the returned observation is the
  first decision of the env's next deal;
* ``seed(s)`` makes env i play the deals of a Gym env reset with ``seed=s + i`` (``s + i`` must be
  an integer in [0, 2**64): checked at once);
* actions must be integers (a float array is refused, not truncated); a refused ``step_async``
  leaves nothing for ``step_wait`` to play;
* ``get_attr``, ``set_attr``, ``env_method`` and ``env_is_wrapped`` refuse an env index outside
  ``[0, num_envs)`` (``IndexError``); ``set_attr`` refuses a name the env does not have or one that
  fixes its shape (``num_envs``, ``venv``, the spaces): options are fixed at construction; it
  refuses a ``render_mode`` other than ``None`` (nothing renders; SB3's ``render()`` recursed);
* ``reset_infos[i]`` holds env i's ``learner_seat`` and ``action_mask`` at the start of its episode
  (set by ``reset()`` and by each autoreset), as ``DummyVecEnv`` keeps them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices

from canasta_env.engine.core import check_batch_size, check_memory, check_seed
from canasta_env.envs.gym_env import CanastaVectorEnv
from canasta_env.envs.learner import env_actions, vector_env_bytes
from canasta_env.messages import short_repr

# what set_attr may not change: the batch's size, engine and spaces
FIXED_ATTRS = frozenset({"num_envs", "venv", "observation_space", "action_space", "_actions",
                         "_seeds", "_options", "reset_infos"})
# per env, besides the learner batch: the reset and step info dicts SB3's interface keeps (the
# batch's growth per env measured about 950-1,030 bytes more than vector_env_bytes at 1,024-4,096 envs)
INFO_BYTES = 1152


class CanastaVecEnv(VecEnv):
    """``num_envs`` Canasta envs for one learner (``LearnerConfig`` options as keyword args)."""

    render_mode: str | None = None

    def __init__(self, num_envs: int = 64, rules: Any = "classic_2p", **options: Any) -> None:
        num_envs = check_batch_size(num_envs, "CanastaVecEnv", "num_envs")
        self.venv = CanastaVectorEnv(num_envs, rules, **options)
        core = self.venv.core  # nothing is allocated before the first reset, so refusing here is in time
        check_memory(vector_env_bytes(core.rules, core.config.episode, num_envs) + num_envs * INFO_BYTES,
                     f"{num_envs:,} {core.rules.name} envs", "CanastaVecEnv")
        super().__init__(num_envs, self.venv.single_observation_space,
                         self.venv.single_action_space)
        self._actions: npt.NDArray[np.int64] | None = None

    def reset(self) -> npt.NDArray[np.float32]:
        seeds = None if self._seeds[0] is None else [int(s) for s in self._seeds]  # type: ignore[arg-type]
        obs, infos = self.venv.reset(seed=seeds, options=self._options[0] or None)
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        _set_reset_infos(self.reset_infos, infos, range(self.num_envs))
        return obs.copy()

    def set_options(self, options: list[dict[str, Any]] | dict[str, Any] | None = None) -> None:
        """Options of the next ``reset()`` (``learner_seat``, as ``CanastaVectorEnv.reset`` takes
        them): one dict for every env, or a list of ``num_envs`` equal dicts; ``ValueError`` at once
        otherwise. The batch starts every env under one set of options, so a list that gives envs
        different ones (a seat per env) is refused: env 0's were applied to every env in silence."""
        fn = "CanastaVecEnv.set_options"
        if options is None or isinstance(options, dict):
            self._check_options(options, fn)
            super().set_options(options)
            return
        if isinstance(options, (str, bytes)) or not isinstance(options, Sequence):
            raise ValueError(f"{fn}: options must be a dict (every env) or a list of {self.num_envs} "
                             f"dicts, got {short_repr(options)}")
        items = list(options)
        if len(items) != self.num_envs or not all(item is None or isinstance(item, dict) for item in items):
            raise ValueError(f"{fn}: expected a list of {self.num_envs} dicts (one per env), got "
                             f"{short_repr(options)}")
        differs = next((i for i, item in enumerate(items) if not _same_options(item, items[0])), None)
        if differs is not None:
            raise ValueError(f"{fn}: env {differs} is given {short_repr(items[differs])}, env 0 "
                             f"{short_repr(items[0])}: this VecEnv resets every env with the same options "
                             "(make one env per seat, or give one dict)")
        self._check_options(items[0], fn)
        super().set_options(items[0])

    def _check_options(self, options: dict[str, Any] | None, fn: str) -> None:
        """Refuse a ``learner_seat`` the next ``reset()`` would refuse, naming ``fn``: checked only
        there, a seat of 7 was stored and every later ``reset()`` failed on it until new options."""
        if options:
            self.venv.core.check_seat(options.get("learner_seat"), fn)

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        """Env i plays the deals of seed ``seed + i`` from the next ``reset()``; ``ValueError`` at
        once unless every ``seed + i`` is an integer in [0, 2**64)."""
        if seed is not None:
            seed = check_seed(seed, "CanastaVecEnv.seed", span=self.num_envs)
        return super().seed(seed)

    def step_async(self, actions: npt.NDArray[Any]) -> None:
        self._actions = None  # a refused call leaves no earlier actions for step_wait() to replay
        self._actions = env_actions(actions, self.num_envs, "CanastaVecEnv step")

    def step_wait(self) -> tuple[Any, ...]:
        actions, self._actions = self._actions, None  # spent even when the step is refused
        if actions is None:
            raise RuntimeError("step_wait() without step_async()")
        obs, rewards, terminated, truncated, infos = self.venv.step(actions)
        dones = terminated | truncated
        out_infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        forced = infos["forced_steps"]
        for i in np.flatnonzero(dones | (forced > 0)):
            info = out_infos[i]
            if forced[i]:
                info["forced_steps"] = int(forced[i])
            if dones[i]:
                _set_reset_infos(self.reset_infos, infos, [i])
                info["terminal_observation"] = infos["final_obs"][i]
                info["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
                if infos["illegal_action"][i]:
                    info["illegal_action"] = True
        return (obs.copy(), rewards.astype(np.float32), dones.copy(), out_infos)

    def action_masks(self) -> npt.NDArray[np.bool_]:
        """(n, A) legal actions for the observations last returned."""
        return self.venv.action_masks()

    # ---- VecEnv plumbing -------------------------------------------------------------------
    def close(self) -> None:
        self.venv.close()

    def _indices(self, indices: VecEnvIndices, fn: str = "CanastaVecEnv") -> list[int]:
        """Env indices as SB3 gives them (``None``, an int or a sequence of ints), each in
        ``[0, num_envs)``; ``IndexError`` naming the first bad one."""
        if indices is None:
            return list(range(self.num_envs))
        items = [indices] if isinstance(indices, (int, np.integer)) else indices
        if isinstance(items, (str, bytes)) or not hasattr(items, "__iter__"):
            raise IndexError(f"{fn}: indices must be None, an int or a sequence of ints, got "
                             f"{short_repr(indices)}")
        out = []
        for i in items:
            if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)) or not (
                    0 <= i < self.num_envs):
                raise IndexError(f"{fn}: env index {short_repr(i)} is out of range for "
                                 f"{self.num_envs} envs")
            out.append(int(i))
        return out

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        n = len(self._indices(indices, "CanastaVecEnv.get_attr"))
        value = getattr(self, attr_name)
        return [value for _ in range(n)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set an attribute every env shares (``render_mode``); the envs' options and shapes are
        fixed at construction, so a name the env does not have (``shaping``: a silent no-op) or one
        of its structure (``num_envs``: steps then expect another count) is ``AttributeError``."""
        self._indices(indices, "CanastaVecEnv.set_attr")
        if not isinstance(attr_name, str) or attr_name in FIXED_ATTRS or not hasattr(self, attr_name):
            raise AttributeError(f"CanastaVecEnv.set_attr: cannot set {short_repr(attr_name)}: the "
                                 "env options and spaces are fixed at construction (make a new env)")
        if attr_name == "render_mode" and value is not None:  # SB3's render() then recursed or failed
            raise ValueError(f"CanastaVecEnv.set_attr: render_mode {short_repr(value)}: the VecEnv draws "
                             "nothing, only None is allowed (render a Canasta-v0 env to see a table)")
        setattr(self, attr_name, value)

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> Any:
        rows = self._indices(indices, "CanastaVecEnv.env_method")
        if method_name == "action_masks":
            masks = self.action_masks()
            return masks if indices is None else masks[rows]
        result = getattr(self, method_name)(*method_args, **method_kwargs)
        return [result for _ in rows]

    def has_attr(self, attr_name: str) -> bool:
        return hasattr(self, attr_name)

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        return [False for _ in self._indices(indices, "CanastaVecEnv.env_is_wrapped")]

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None for _ in range(self.num_envs)]


def _set_reset_infos(reset_infos: list[dict[str, Any]], infos: dict[str, Any], envs: Any) -> None:
    """Put the listed envs' new-episode infos (learner seat, action mask) in ``reset_infos``, as
    SB3's ``DummyVecEnv`` does at every reset and autoreset (they stayed empty: the seat a random
    ``learner_seat`` drew for an episode could not be known)."""
    for i in envs:
        reset_infos[i] = {"action_mask": infos["action_mask"][i],
                          "learner_seat": int(infos["learner_seat"][i])}


def _same_options(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """Whether two envs' reset options are the same (values that do not compare are not)."""
    try:
        return bool((a or {}) == (b or {}))
    except (TypeError, ValueError):  # an array inside: its == is elementwise
        return a is b
