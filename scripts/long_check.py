"""Long randomized engine check for the closing note: many hands per preset and agent.

    python scripts/long_check.py --hands 100000 [--rules classic_2p classic_3p classic_4p]
"""

from __future__ import annotations

import argparse
import time

from canasta_env.testing import check_random_play


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hands", type=int, default=100_000)
    parser.add_argument("--rules", nargs="+", default=["classic_2p", "classic_3p", "classic_4p"])
    parser.add_argument("--batch", type=int, default=1024)
    args = parser.parse_args()
    for preset in args.rules:
        for agent in ("random", "eager"):
            start = time.perf_counter()
            report = check_random_play(preset, args.hands, agent, batch=args.batch, seed=2026)
            secs = time.perf_counter() - start
            print(f"{preset} {agent}: {report.hands} hands, {report.decisions} decisions "
                  f"({report.decisions / report.hands:.1f}/hand, max {report.max_decisions_per_hand}), "
                  f"outcomes {dict(report.outcomes)}, {secs:.0f}s: all invariants held", flush=True)
            print("  coverage", dict(sorted(report.coverage.counts.items())), flush=True)


if __name__ == "__main__":
    main()
