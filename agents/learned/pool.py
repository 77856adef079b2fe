"""A pool of agents that keeps one member per env episode: the opponents of self-play and of the
league (``canasta selfplay`` / ``canasta league``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from canasta_env.messages import short_repr
from canasta_env.policy import Agent

# Results count half as much after this many newer episodes against the pool (prioritized sampling
# follows the learner as it improves, instead of its whole history).
RESULT_HALF_LIFE = 5000.0
LATEST = "latest"  # member 0's name
MAX_RESULT = 1e15  # a stored result count above this is damage (decayed counts stay near the half-life)


def clashing_name(name: str) -> bool:
    """Whether a fixed member's ``name`` is one the pool gives its own members: ``latest`` or a
    snapshot's checkpoint name (``ckpt_000000128``, a checkpoint folder named from the working
    folder). Their results and league logs were merged with that member's in silence."""
    from agents.checkpoint import CHECKPOINT_NAME

    return name == LATEST or CHECKPOINT_NAME.fullmatch(name) is not None


def pfsp_weights(win_rate: npt.NDArray[np.float64], power: float = 2.0) -> npt.NDArray[np.float64]:
    """Prioritized fictitious self-play (AlphaStar's "hard" weighting): a member the learner beats
    with probability p is drawn with weight ``(1 - p) ** power``, so the opponents it beats least
    get most of the games; a floor keeps every member in play."""
    return np.maximum((1.0 - win_rate) ** power, 0.01)


class PoolAgent:
    """Member 0 is the latest policy, then the fixed ``league`` members (rule agents, checkpoints),
    then past snapshots. Each env episode plays one member: the latest with probability
    ``latest_ratio``; otherwise a snapshot or fixed member, uniformly, or with ``prioritized`` by
    ``pfsp_weights`` of the learner's recent results against each (counted from ``episode_end``,
    halved every ``RESULT_HALF_LIFE`` episodes, one win and one loss assumed before any game).

    Relies on the env-loop contract of ``canasta_env.policy.Agent``: ``new_episode(rows, u)`` at
    episode start, ``episode_end(rows, points)`` at its end and a ``RowRandom`` (with ``rows``)
    passed to ``act``.
    """

    name = "pool"

    def __init__(self, latest: Agent, num_envs: int, latest_ratio: float = 0.5,
                 pool_size: int = 10, league: dict[str, Agent] | None = None,
                 prioritized: bool = False) -> None:
        if not 0.0 <= latest_ratio <= 1.0:
            raise ValueError(f"latest_ratio must be in [0, 1], got {latest_ratio}")
        league = league or {}
        clash = next((name for name in league if clashing_name(name)), None)
        if clash is not None:
            raise ValueError(f"league member {short_repr(clash)}: the pool names its own members so; spell "
                             f"it as another path (./{clash})")
        self.members: list[Agent] = [latest, *league.values()]
        self.names: list[str] = [LATEST, *league]
        self.num_fixed = len(league)
        self.latest_ratio = latest_ratio
        self.pool_size = pool_size
        self.prioritized = prioritized
        self.assignment = np.zeros(num_envs, dtype=np.int64)
        self.results = np.zeros((len(self.members), 3))  # learner's (wins, ties, losses) per member

    def add(self, agent: Agent, name: str) -> None:
        """Add a past snapshot, dropping the oldest beyond ``pool_size``."""
        self.members.append(agent)
        self.names.append(name)
        self.results = np.vstack([self.results, np.zeros((1, 3))])
        if len(self.members) - 1 - self.num_fixed > self.pool_size:
            oldest = 1 + self.num_fixed
            del self.members[oldest], self.names[oldest]
            self.results = np.delete(self.results, oldest, axis=0)
            self.assignment = np.where(self.assignment > oldest, self.assignment - 1, self.assignment)

    @property
    def past(self) -> list[str]:
        """The snapshots' checkpoint names, oldest first."""
        return self.names[1 + self.num_fixed:]

    def win_rates(self) -> npt.NDArray[np.float64]:
        """The learner's recent score (win 1, tie 1/2) against each member, with one win and one
        loss assumed before any game."""
        wins, ties, losses = self.results.T
        return (wins + 0.5 * ties + 1.0) / (wins + ties + losses + 2.0)

    def weights(self) -> npt.NDArray[np.float64]:
        """Probability of each member other than the latest being drawn for an episode that does
        not play the latest (sums to 1; empty when there is none)."""
        others = len(self.members) - 1
        if not others:
            return np.zeros(0)
        w = pfsp_weights(self.win_rates()[1:]) if self.prioritized else np.ones(others)
        return w / w.sum()

    def new_episode(self, rows: npt.NDArray[np.int64], u: npt.NDArray[np.float64]) -> None:
        others = len(self.members) - 1
        pick = np.zeros(rows.size, dtype=np.int64)
        if others:
            use_other = u >= self.latest_ratio
            # reuse the uniform's remainder to choose among the others
            frac = (u[use_other] - self.latest_ratio) / max(1.0 - self.latest_ratio, 1e-12)
            if self.prioritized:
                cdf = np.cumsum(self.weights())
                pick[use_other] = 1 + np.minimum(np.searchsorted(cdf, frac, side="right"), others - 1)
            else:
                pick[use_other] = 1 + np.minimum((frac * others).astype(np.int64), others - 1)
        self.assignment[rows] = pick

    def episode_end(self, rows: npt.NDArray[np.int64], points: npt.NDArray[np.float64]) -> None:
        """Count the learner's results of the episodes of ``rows`` against their members."""
        self.results *= 0.5 ** (rows.size / RESULT_HALF_LIFE)
        members = np.minimum(self.assignment[rows], len(self.members) - 1)
        for column, hit in enumerate((points > 0, points == 0, points < 0)):
            np.add.at(self.results[:, column], members[hit], 1.0)

    def state(self) -> dict[str, Any]:
        """The results per member name, for a checkpoint (``load_state`` restores them)."""
        return {name: [float(x) for x in row] for name, row in zip(self.names, self.results, strict=True)}

    def load_state(self, results: dict[str, Any]) -> None:
        """Restore ``state()``'s results; a row that is not three counts in [0, 1e15] is left at
        zero (a checkpoint's state.json is untrusted: 10**400 neither fits a float nor is finite)."""
        for i, name in enumerate(self.names):
            row = results.get(name)
            if isinstance(row, list) and len(row) == 3 and all(
                    type(x) in (int, float) and 0 <= x <= MAX_RESULT for x in row):
                self.results[i] = row

    def act(self, observations: npt.NDArray[np.float32], legal_action_mask: npt.NDArray[np.bool_],
            rng: Any) -> npt.NDArray[np.int64]:
        """Each row's action by the member its episode plays, checked (``checked_legal_act``): a
        member failing is one line naming it (a league member's floats were truncated into actions
        in silence, its illegal action named no agent)."""
        from canasta_env.policy import checked_legal_act

        rows = getattr(rng, "rows", None)
        members = (np.zeros(len(legal_action_mask), dtype=np.int64) if rows is None
                   else np.minimum(self.assignment[rows], len(self.members) - 1))
        out = np.empty(len(legal_action_mask), dtype=np.int64)
        for m in np.unique(members):
            sel = np.flatnonzero(members == m)
            sub = rng.subset(sel) if rows is not None else rng
            who = f"{short_repr(self.names[int(m)])} (pool member)"
            out[sel] = checked_legal_act(self.members[int(m)], who, observations[sel],
                                         legal_action_mask[sel], sub)
        return out
