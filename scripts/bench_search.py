"""Strength and speed of the search agent: ``search`` vs ``heuristic`` on duplicate deals of a
fixed deal set (each deal once per seating, as ``agents.match.play_match``), win rate with a 95%
bootstrap interval over deals, and hands per second of wall time.

    python scripts/bench_search.py --rules classic_2p classic_4p --deals 200 --k 8 --n 4 --depth 0
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from agents import make_agent
from agents.match import play_match
from agents.search import DEFAULT_GUARD, DEFAULT_N, PHASES
from canasta_env.deal_sets import load_deal_set
from canasta_env.rules import load_rules


def bench(preset: str, deals: int, k: int | None, n: int, depth: int | None, deal_set: str, start: int,
          seed: int, **options: Any) -> dict[str, Any]:
    """One duplicate match on deals ``start .. start + deals`` of the set; summary plus speed."""
    rules = load_rules(preset)
    dealt = load_deal_set(deal_set, rules).deals(range(start, start + deals))
    search = make_agent("search", rules, k=k, n=n, depth=depth, seed=seed, **options)
    began = time.perf_counter()
    result = play_match(rules, search, make_agent("heuristic", rules), dealt, rng_seed=seed)
    wall = time.perf_counter() - began
    out = result.summary()
    out["hands_per_s"] = result.margins.size / wall
    out["wall_s"] = wall
    out["decisions"] = getattr(search, "stats", {})
    out["k"], out["depth"] = getattr(search, "k", k), getattr(search, "depth", depth)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", nargs="+", default=["classic_2p", "classic_4p"])
    parser.add_argument("--deals", type=int, default=200)
    parser.add_argument("--start", type=int, default=0, help="first deal of the set")
    parser.add_argument("--k", type=int, default=None, help="worlds (default: search.default_k)")
    parser.add_argument("--n", type=int, default=DEFAULT_N)
    parser.add_argument("--depth", type=int, default=None,
                        help="0: to the hand's end (default: search.default_depth)")
    parser.add_argument("--guard", type=float, default=DEFAULT_GUARD,
                        help="s.e. of paired gain needed to deviate from the policy's choice")
    parser.add_argument("--min-gain", type=float, default=0.0, help="points needed to deviate")
    parser.add_argument("--phases", default=",".join(PHASES), help="phases searched")
    parser.add_argument("--deal-set", default="v1")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for preset in args.rules:
        s = bench(preset, args.deals, args.k, args.n, args.depth, args.deal_set, args.start,
                  args.seed, guard=args.guard, min_gain=args.min_gain, phases=args.phases)
        print(f"{preset} search(k={s['k']}, n={args.n}, depth={s['depth']}, guard={args.guard}, "
              f"min_gain={args.min_gain}, phases={args.phases}) vs heuristic, "
              f"{int(s['deals'])} deals x seatings: {s['hands_per_s']:.2f} hands/s "
              f"({s['wall_s']:.0f} s), win rate {s['win_rate']:.3f} [{s['win_lo']:.3f}, "
              f"{s['win_hi']:.3f}], mean margin {s['mean_margin']:.1f} [{s['margin_lo']:.1f}, "
              f"{s['margin_hi']:.1f}]; searched decisions {s['decisions']}", flush=True)


if __name__ == "__main__":
    main()
