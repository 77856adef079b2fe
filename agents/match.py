"""Head-to-head play of two agents on the batch engine, with duplicate deals.

``play_match(rules, a, b, deals)`` deals ``deals`` hands (``DealId(seed, row, 0)``) and plays each
once per side assignment: agent A holds side ``k`` (all its seats) and agent B every other side, for
``k`` in each side. Each step the rows whose mover sits on A's side get A's action, the others B's.
A deal's margin is the mean over the seatings of A's hand score minus the mean hand score of the
other sides, so the luck of the deal cancels as far as the seatings allow.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from canasta_env.engine import init, observe, raise_illegal, step
from canasta_env.policy import RowRandom, stream_keys
from canasta_env.rules import RuleSet, load_rules


@dataclass
class MatchResult:
    margins: npt.NDArray[np.float64]  # (deals, seatings) A's score minus the others' mean
    truncated: int  # games stopped by the step cap
    decisions: int
    went_out: npt.NDArray[np.bool_]  # (deals, seatings) A's side went out
    opened: npt.NDArray[np.bool_]  # (deals, seatings) A's side met its minimum (melded)

    @property
    def deal_margins(self) -> npt.NDArray[np.float64]:
        return self.margins.mean(axis=1)

    @property
    def deal_wins(self) -> npt.NDArray[np.float64]:
        """Per deal, the share of seatings A won (a tie counts a half)."""
        return ((self.margins > 0) + 0.5 * (self.margins == 0)).mean(axis=1)

    def summary(self, resamples: int = 2000, seed: int = 0) -> dict[str, float]:
        m_lo, m_hi = bootstrap_ci(self.deal_margins, resamples, seed)
        w_lo, w_hi = bootstrap_ci(self.deal_wins, resamples, seed)
        return {"deals": float(self.margins.shape[0]), "mean_margin": float(self.deal_margins.mean()),
                "margin_lo": m_lo, "margin_hi": m_hi, "win_rate": float(self.deal_wins.mean()),
                "win_lo": w_lo, "win_hi": w_hi, "truncated": float(self.truncated),
                "went_out": float(self.went_out.mean()), "opened": float(self.opened.mean())}


def bootstrap_ci(values: npt.ArrayLike, resamples: int = 2000, seed: int = 0,
                 level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values``."""
    x = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1)
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(means, [tail, 100.0 - tail])
    return float(lo), float(hi)


def play_match(rules: RuleSet | str, agent_a, agent_b, deals: int, seed: int = 0,
               rng_seed: int = 0) -> MatchResult:
    """Play ``deals`` deals once per seating of A; see the module docstring."""
    rules = load_rules(rules)
    sides = rules.num_sides
    margins = np.zeros((deals, sides))
    went_out = np.zeros((deals, sides), dtype=bool)
    opened = np.zeros((deals, sides), dtype=bool)
    truncated = decisions = 0
    for a_side in range(sides):
        state = init(rules, deals, seed)
        # one random stream per deal and seating, so an agent's sampling in one deal never
        # depends on the batch or on the other deals
        rng = RowRandom(stream_keys(np.full(deals, rng_seed, dtype=np.uint64),
                                    np.arange(deals) * sides + a_side, 0x3A7C))
        for agent in (agent_a, agent_b):
            new_episode = getattr(agent, "new_episode", None)
            if new_episode is not None:
                new_episode(np.arange(deals), rng.random(deals))
        while True:
            live = np.flatnonzero(~(state.terminated | state.truncated))
            if live.size == 0:
                break
            movers = state.current_player[live].astype(np.int64)
            mask = state.legal_action_mask[live]
            actions = np.empty(live.size, np.int64)
            on_a = (movers % sides) == a_side
            for agent, sel in ((agent_a, on_a), (agent_b, ~on_a)):
                if not sel.any():
                    continue
                rows = live[sel]
                obs = observe(state, movers[sel], rows)
                actions[sel] = agent.act(obs, mask[sel], rng.subset(rows))
            result = step(state, actions, live)
            if result.illegal.any():
                bad = int(np.flatnonzero(result.illegal)[0])
                raise_illegal(state, int(live[bad]), int(actions[bad]))
            decisions += live.size
        scores = state.hand_scores.astype(np.float64)
        others = (scores.sum(axis=1) - scores[:, a_side]) / max(sides - 1, 1)
        margins[:, a_side] = scores[:, a_side] - others
        went_out[:, a_side] = (state.went_out >= 0) & (state.went_out % sides == a_side)
        opened[:, a_side] = state.opened[:, a_side] > 0
        truncated += int(state.truncated.sum())
    return MatchResult(margins, truncated, decisions, went_out, opened)


def main(argv: list[str] | None = None) -> None:
    """``python -m agents.match PRESET A B --deals N``: duplicate match with bootstrap intervals."""
    import argparse

    from agents import make_agent

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("preset")
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--deals", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rules = load_rules(args.preset)
    result = play_match(rules, make_agent(args.a, rules), make_agent(args.b, rules), args.deals, args.seed)
    s = result.summary()
    print(f"{args.preset} {args.a} vs {args.b}, {args.deals} deals x {result.margins.shape[1]} seatings: "
          f"mean margin {s['mean_margin']:.1f} [{s['margin_lo']:.1f}, {s['margin_hi']:.1f}], "
          f"win rate {s['win_rate']:.3f} [{s['win_lo']:.3f}, {s['win_hi']:.3f}], "
          f"opened {s['opened']:.3f}, went out {s['went_out']:.3f}, truncated {int(s['truncated'])}")


if __name__ == "__main__":
    main()
