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
* actions must be integers (a float array is refused, not truncated).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices

from canasta_env.engine.core import check_batch_size, check_seed
from canasta_env.envs.gym_env import CanastaVectorEnv
from canasta_env.envs.learner import env_actions


class CanastaVecEnv(VecEnv):
    """``num_envs`` Canasta envs for one learner (``LearnerConfig`` options as keyword args)."""

    render_mode: str | None = None

    def __init__(self, num_envs: int = 64, rules: Any = "classic_2p", **options: Any) -> None:
        num_envs = check_batch_size(num_envs, "CanastaVecEnv", "num_envs")
        self.venv = CanastaVectorEnv(num_envs, rules, **options)
        super().__init__(num_envs, self.venv.single_observation_space,
                         self.venv.single_action_space)
        self._actions: npt.NDArray[np.int64] | None = None

    def reset(self) -> npt.NDArray[np.float32]:
        seeds = None if self._seeds[0] is None else [int(s) for s in self._seeds]  # type: ignore[arg-type]
        obs, _ = self.venv.reset(seed=seeds, options=self._options[0] or None)
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return obs.copy()

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        """Env i plays the deals of seed ``seed + i`` from the next ``reset()``; ``ValueError`` at
        once unless every ``seed + i`` is an integer in [0, 2**64)."""
        if seed is not None:
            seed = check_seed(seed, "CanastaVecEnv.seed", span=self.num_envs)
        return super().seed(seed)

    def step_async(self, actions: npt.NDArray[Any]) -> None:
        self._actions = env_actions(actions, self.num_envs, "CanastaVecEnv step")

    def step_wait(self) -> tuple[Any, ...]:
        if self._actions is None:
            raise RuntimeError("step_wait() without step_async()")
        obs, rewards, terminated, truncated, infos = self.venv.step(self._actions)
        self._actions = None
        dones = terminated | truncated
        out_infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        forced = infos["forced_steps"]
        for i in np.flatnonzero(dones | (forced > 0)):
            info = out_infos[i]
            if forced[i]:
                info["forced_steps"] = int(forced[i])
            if dones[i]:
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

    def _indices(self, indices: VecEnvIndices) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        if isinstance(indices, int):
            return [indices]
        return list(indices)

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        value = getattr(self, attr_name)
        return [value for _ in self._indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        setattr(self, attr_name, value)

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> Any:
        if method_name == "action_masks":
            masks = self.action_masks()
            return masks if indices is None else masks[self._indices(indices)]
        result = getattr(self, method_name)(*method_args, **method_kwargs)
        return [result for _ in self._indices(indices)]

    def has_attr(self, attr_name: str) -> bool:
        return hasattr(self, attr_name)

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        return [False for _ in self._indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None for _ in range(self.num_envs)]
