"""``canasta tournament``: the command line of ``train.tournament`` (see its docstring)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``canasta tournament``."""
    parser.add_argument("--rules", default="classic_2p",
                        help="rule preset or YAML file (default: %(default)s)")
    parser.add_argument("--agents", nargs="+", required=True, metavar="AGENT",
                        help="entrants: random, greedy, heuristic, or checkpoint/run folders")
    parser.add_argument("--hands", type=int, default=2000, help="hands per match (default: %(default)s)")
    parser.add_argument("--duplicate", action="store_true",
                        help="replay every deal in every seating (sides swapped; 6 permutations at 3p)")
    parser.add_argument("--vs", help="gauntlet: this entrant against each other one")
    parser.add_argument("--partners", metavar="AGENT",
                        help="4 players: this agent partners every entrant (default: two copies of one)")
    parser.add_argument("--seed", type=int, default=0, help="deals and agent streams (default: %(default)s)")
    parser.add_argument("--deal-set", help="fixed deal set: v1, classic_2p-v1 or a .npz path")
    parser.add_argument("--target-margin", type=float,
                        help="estimate the deals needed to detect this mean margin per pair")
    parser.add_argument("--resamples", type=int, default=2000,
                        help="bootstrap resamples (default: %(default)s)")
    parser.add_argument("--out", help="folder for hands.csv, results.json and plots; re-run to resume")
    parser.add_argument("--records", action="store_true",
                        help="also write every hand as a game record to OUT/records.jsonl (canasta replay)")
    parser.add_argument("--ladder", metavar="FILE",
                        help="OpenSkill ratings kept across tournaments in this JSON file (updated)")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")


def run(args: argparse.Namespace) -> int:
    """Run the tournament the options describe and print its tables."""
    from train.tournament import run as run_tournament

    try:
        result = run_tournament(args.rules, args.agents, args.hands, duplicate=args.duplicate, vs=args.vs,
                                partners=args.partners, seed=args.seed, deal_set=args.deal_set, out=args.out,
                                resamples=args.resamples, target_margin=args.target_margin,
                                records=args.records, ladder=args.ladder, progress=True,
                                plots=not args.no_plots)
    except ValueError as e:
        print(f"canasta tournament: {e}")
        return 2
    result.print_tables()
    if args.out:
        print(f"results in {args.out}/ (hands.csv, results.json, ratings.csv, head_to_head.csv, "
              f"outcomes.csv{'' if args.no_plots else ', ratings.png, head_to_head.png'})")
    return 0

