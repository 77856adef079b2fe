"""RLlib's default PPO torch module with Canasta's action mask applied to its logits.

The network sees the ``observations`` part of ``CanastaMultiAgentEnv``'s observation; the
``action_mask`` part sets the logits of illegal actions to the float minimum, so exploration
samples, greedy play and the PPO loss only ever weigh legal actions. Written after RLlib's example
``ActionMaskingTorchRLModule``, on the non-deprecated ``DefaultPPOTorchRLModule`` and without
changing the batches it is given. Imported by ``canasta_env.envs.rllib_env.ppo_config`` (``rllib`` extra).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch
from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
from ray.rllib.core.columns import Columns
from ray.rllib.utils.torch_utils import FLOAT_MIN


class MaskedPPOTorchRLModule(DefaultPPOTorchRLModule):
    """PPO actor-critic over ``obs["observations"]``, logits masked by ``obs["action_mask"]``."""

    def __init__(self, *, observation_space: gym.Space | None = None, **kwargs: Any) -> None:
        if not isinstance(observation_space, gym.spaces.Dict) or set(observation_space.spaces) != {
                "action_mask", "observations"}:
            raise ValueError("MaskedPPOTorchRLModule needs a Dict observation space of 'action_mask' "
                             f"and 'observations', got {observation_space}")
        self._space_with_mask = observation_space
        super().__init__(observation_space=observation_space["observations"], **kwargs)

    def setup(self) -> None:
        super().setup()  # the networks are built for the observations alone
        self.observation_space = self._space_with_mask

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, batch = _split(batch)
        return _masked(super()._forward(batch, **kwargs), mask)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, batch = _split(batch)
        return _masked(super()._forward_train(batch, **kwargs), mask)

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Any:
        return super().compute_values(_split(batch)[1], embeddings)


def _split(batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, Any]]:
    """The mask, and a shallow copy of ``batch`` whose observations are the network's input."""
    obs = batch[Columns.OBS]
    return obs["action_mask"], {**batch, Columns.OBS: obs["observations"]}


def _masked(out: dict[str, Any], mask: torch.Tensor) -> dict[str, Any]:
    logits = out[Columns.ACTION_DIST_INPUTS]
    out[Columns.ACTION_DIST_INPUTS] = logits.masked_fill(mask == 0, FLOAT_MIN)
    return out
