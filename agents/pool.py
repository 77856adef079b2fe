"""A pool of agents that keeps one member per env episode (self-play opponents)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from canasta_env.policy import Agent


class PoolAgent:
    """Member 0 is the latest policy, the others past snapshots. Each env episode plays one member:
    the latest with probability ``latest_ratio``, otherwise a past snapshot chosen uniformly.

    Relies on the env-loop contract of ``canasta_env.policy.Agent``: ``new_episode(rows, u)`` at
    episode start and a ``RowRandom`` (with ``rows``) passed to ``act``.
    """

    name = "pool"

    def __init__(self, latest: Agent, num_envs: int, latest_ratio: float = 0.5,
                 pool_size: int = 10) -> None:
        if not 0.0 <= latest_ratio <= 1.0:
            raise ValueError(f"latest_ratio must be in [0, 1], got {latest_ratio}")
        self.members: list[Agent] = [latest]
        self.names: list[str] = ["latest"]
        self.latest_ratio = latest_ratio
        self.pool_size = pool_size
        self.assignment = np.zeros(num_envs, dtype=np.int64)

    def add(self, agent: Agent, name: str) -> None:
        """Add a past snapshot, dropping the oldest beyond ``pool_size``."""
        self.members.append(agent)
        self.names.append(name)
        if len(self.members) - 1 > self.pool_size:
            del self.members[1], self.names[1]
            self.assignment = np.where(self.assignment > 1, self.assignment - 1, self.assignment)

    @property
    def past(self) -> list[str]:
        return self.names[1:]

    def new_episode(self, rows: npt.NDArray[np.int64], u: npt.NDArray[np.float64]) -> None:
        past = len(self.members) - 1
        pick = np.zeros(rows.size, dtype=np.int64)
        if past:
            use_past = u >= self.latest_ratio
            # reuse the uniform's remainder to choose among the snapshots
            frac = (u - self.latest_ratio) / max(1.0 - self.latest_ratio, 1e-12)
            pick[use_past] = 1 + np.minimum((frac[use_past] * past).astype(np.int64), past - 1)
        self.assignment[rows] = pick

    def act(self, observations: npt.NDArray[np.float32], legal_action_mask: npt.NDArray[np.bool_],
            rng: Any) -> npt.NDArray[np.int64]:
        rows = getattr(rng, "rows", None)
        members = (np.zeros(len(legal_action_mask), dtype=np.int64) if rows is None
                   else np.minimum(self.assignment[rows], len(self.members) - 1))
        out = np.empty(len(legal_action_mask), dtype=np.int64)
        for m in np.unique(members):
            sel = np.flatnonzero(members == m)
            sub = rng.subset(sel) if rows is not None else rng
            out[sel] = self.members[int(m)].act(observations[sel], legal_action_mask[sel], sub)
        return out
