"""How much duplicate deals narrow the intervals: ``python scripts/duplicate_gain.py [--runs 20]``.

For ``heuristic`` vs ``greedy`` on classic_2p, plays ``--runs`` pairs of tournaments at equal hands,
one with ``--duplicate`` and one without (each on its own seed), and reports the ratio of the widths
of the 95% intervals on the mean margin per hand and on the win rate: the mean ratio over the runs
with a bootstrap interval over runs; then how much the deal decides a hand: the correlation, over
the deals of one duplicate tournament, between the two seatings' score differences of the same seats
(the same cards, the agents swapped).
"""

from __future__ import annotations

import argparse

import numpy as np

from agents.match import bootstrap_ci
from train.evaluation.tournament import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--hands", type=int, default=2000)
    parser.add_argument("--rules", default="classic_2p")
    parser.add_argument("--agents", nargs=2, default=["heuristic", "greedy"])
    args = parser.parse_args()
    margin_ratio, win_ratio = [], []
    for r in range(args.runs):
        dup, = run(args.rules, args.agents, args.hands, duplicate=True, seed=100 + r).h2h_rows
        single, = run(args.rules, args.agents, args.hands, duplicate=False, seed=500 + r).h2h_rows
        # per deal, a duplicate deal's margin is a mean over its seatings: both are per-hand margins
        width = (dup["margin_hi"] - dup["margin_lo"]) / (single["margin_hi"] - single["margin_lo"])
        margin_ratio.append(width)
        win_ratio.append((dup["win_hi"] - dup["win_lo"]) / (single["win_hi"] - single["win_lo"]))
    for name, ratios in (("mean margin", margin_ratio), ("win rate", win_ratio)):
        lo, hi = bootstrap_ci(ratios)
        print(f"{args.rules} {args.agents[0]} vs {args.agents[1]}, {args.hands} hands, {args.runs} runs: "
              f"interval width with / without --duplicate on the {name}: {np.mean(ratios):.3f} "
              f"[{lo:.3f}, {hi:.3f}]")
    hands = run(args.rules, args.agents, 2 * args.hands, duplicate=True, seed=7).hands
    diff = hands["side0_score"] - hands["side1_score"]  # seat side 0 minus side 1, same cards
    first, second = (diff[hands["seating"] == k] for k in (0, 1))  # rows are in deal order
    print(f"correlation across the two seatings of a deal of the side-0 minus side-1 score, "
          f"{first.size} deals: {np.corrcoef(first, second)[0, 1]:.3f}")


if __name__ == "__main__":
    main()
