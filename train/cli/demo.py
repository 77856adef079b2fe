"""``canasta demo``: one hand of random agents, the final table and the score."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from train.common.options import RULES_HELP, add_options, check_seed, opt
from train.play.demo import play_hand, score_lines


@dataclass
class DemoOptions:
    """The options of ``canasta demo``."""

    rules: str = opt("classic_4p", RULES_HELP, metavar="RULES")
    seed: int = opt(0, "deal and agent seed")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``canasta demo``."""
    add_options(parser, DemoOptions)


def run(args: argparse.Namespace) -> int:
    """Entry point of ``canasta demo``; the seed is checked before a line is printed (a seed out of
    range printed the hand's title, then the engine's error naming ``init``, not ``--seed``)."""
    from canasta_env.engine.render import render
    from canasta_env.rules import load_rules

    check_seed(args.seed)
    rules = load_rules(args.rules)
    print(f"One hand of {rules.name}, every seat played by the uniform random agent (seed {args.seed}).")
    snapshots, mover, events, n = play_hand(rules, args.seed)
    for k, title in ((0, "the deal"), (n // 2, "halfway"), (n, "the end")):
        print(f"--- {title}: after {k} of {n} decisions ".ljust(70, "-"))
        print(render(snapshots[k], 0))
    print("\n".join(score_lines(snapshots[n], mover, events, n)))
    return 0
