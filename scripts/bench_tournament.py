"""Tournament throughput: ``python scripts/bench_tournament.py [--hands 20000]``.

Plays ``canasta tournament --rules classic_2p --agents greedy heuristic --duplicate`` (the issue's
throughput bar: at least 300 hands/s on 2 cores) and reports hands per second for the play alone and
for the whole run including the statistics (2,000 bootstrap resamples, permutation test, OpenSkill).

``--ray-cpus N [N ...]`` then plays the same tournament on a local Ray instance of each size (after
one untimed warm-up tournament that starts its workers) and reports its whole-run rate against the
local one: the A/B of ``canasta tournament --ray`` in one process.
"""

from __future__ import annotations

import argparse
import time

import agents.match as match_module
from train.evaluation.tournament import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hands", type=int, default=20_000)
    parser.add_argument("--rules", default="classic_2p")
    parser.add_argument("--agents", nargs="+", default=["greedy", "heuristic"])
    parser.add_argument("--ray-cpus", type=int, nargs="*", default=[], metavar="N")
    parser.add_argument("--luck-correction", action="store_true", help="track the luck (canasta_env.luck)")
    args = parser.parse_args()
    luck = args.luck_correction
    run(args.rules, args.agents, hands=64, duplicate=True, luck_correction=luck)  # compile and warm up
    play_time = 0.0
    real = match_module.play_games

    def timed(*a, **kw):
        nonlocal play_time
        start = time.perf_counter()
        out = real(*a, **kw)
        play_time += time.perf_counter() - start
        return out

    match_module.play_games = timed
    start = time.perf_counter()
    result = run(args.rules, args.agents, hands=args.hands, duplicate=True, luck_correction=luck)
    total = time.perf_counter() - start
    hands = len(result.hands["deal"])
    print(f"{args.rules} {' vs '.join(args.agents)} --duplicate{' --luck-correction' * luck}, {hands} hands: "
          f"play {hands / play_time:,.0f} hands/s, whole run {hands / total:,.0f} hands/s ({total:.1f} s)")
    match_module.play_games = real
    for cpus in args.ray_cpus:
        import ray

        ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, logging_level="warning")
        run(args.rules, args.agents, hands=2048 * cpus, duplicate=True, on_ray="local")  # workers up
        start = time.perf_counter()
        run(args.rules, args.agents, hands=args.hands, duplicate=True, on_ray="local")
        secs = time.perf_counter() - start
        print(f"  on Ray with {cpus} CPU(s): whole run {hands / secs:,.0f} hands/s ({secs:.1f} s), "
              f"{total / secs:.2f}x the local run")
        ray.shutdown()


if __name__ == "__main__":
    main()
