"""The agent protocol and the uniform random policy (so adapters need nothing above the engine).

An agent maps a batch of observations and legal-action masks to one action per row:
``act(observations, legal_action_mask, rng) -> int64 (B,)``.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt
from numba import njit


class Agent(Protocol):
    """Batched agent: sees only observations and masks, never the engine state."""

    def act(self, observations: npt.NDArray[np.float32], legal_action_mask: npt.NDArray[np.bool_],
            rng: np.random.Generator) -> npt.NDArray[np.int64]: ...


@njit(cache=True)
def pick_legal(mask, u):
    """Row b: the legal action at position floor(u[b] * number legal) among its legal actions;
    -1 for a row with none."""
    out = np.full(mask.shape[0], -1, np.int64)
    for b in range(mask.shape[0]):
        n = 0
        for a in range(mask.shape[1]):
            n += mask[b, a]
        if n == 0:
            continue
        target = min(int(u[b] * n), n - 1)
        for a in range(mask.shape[1]):
            if mask[b, a]:
                if target == 0:
                    out[b] = a
                    break
                target -= 1
    return out


class RandomAgent:
    """Uniform over legal actions: one uniform draw per row from ``rng``."""

    name = "random"

    def act(self, observations: npt.NDArray[np.float32], legal_action_mask: npt.NDArray[np.bool_],
            rng: np.random.Generator) -> npt.NDArray[np.int64]:
        mask = np.asarray(legal_action_mask, dtype=np.bool_)
        return pick_legal(mask, rng.random(mask.shape[0]))


def random_act(observations: npt.NDArray[np.float32], legal_action_mask: npt.NDArray[np.bool_],
               rng: np.random.Generator) -> npt.NDArray[np.int64]:
    """Functional form of ``RandomAgent().act``."""
    return RandomAgent().act(observations, legal_action_mask, rng)
