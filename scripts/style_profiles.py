"""How the style profiles play: ``python scripts/style_profiles.py --rules classic_2p --deals 1000``.

Each profile of ``agents.rule_based.styles`` (and the plain heuristic) plays the plain heuristic on the first
``--deals`` deals of deal set v1, every deal in both seatings. Per profile: its win rate against the
heuristic (95% bootstrap interval), how often its side goes out, its pile takes per hand and the
decisions of a hand, a Markdown row each (docs/agents.md).
"""

from __future__ import annotations

import argparse

import numpy as np

from agents import make_agent
from agents.match import bootstrap_ci, play_games
from agents.rule_based.styles import style_agent_names
from canasta_env.deal_sets import load_deal_set
from canasta_env.rules import load_rules


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rules", default="classic_2p")
    parser.add_argument("--deals", type=int, default=1000)
    parser.add_argument("--profiles", nargs="+", metavar="NAME", help="only these agent names (default: "
                        "heuristic and every profile)")
    args = parser.parse_args()
    rules = load_rules(args.rules)
    sides, players = rules.num_sides, rules.num_players
    deals = load_deal_set("v1", rules).deals(range(args.deals))
    n = len(deals)
    seat_side = np.arange(players) % sides
    profile_side = np.repeat([0, 1], n)  # game g: the profile holds side 0 or side 1
    seats = (seat_side[None, :] != profile_side[:, None]).astype(np.int64)
    print(f"{rules.name}, {n} deals of v1 x 2 seatings against the plain heuristic\n")
    print("| profile | win rate vs heuristic | went out | pile takes / hand | decisions / hand |")
    print("|---|---|---|---|---|")
    held = set(style_agent_names(held_out=True))
    for name in args.profiles or style_agent_names():
        out = play_games(rules, [make_agent(name, rules), make_agent("heuristic", rules)], seats, deals * 2,
                         np.arange(2 * n))
        games = np.arange(2 * n)
        own = out.scores[games, profile_side]
        other = out.scores[games, 1 - profile_side]
        wins = ((own > other) + 0.5 * (own == other)).reshape(2, n).mean(axis=0)
        lo, hi = bootstrap_ci(wins)
        went = ((out.went_out >= 0) & (out.went_out % sides == profile_side)).mean()
        takes = out.pile_takes[games, profile_side].mean()
        label = f"{name} *" if name in held else name
        print(f"| {label} | {wins.mean():.3f} [{lo:.3f}, {hi:.3f}] | {went:.3f} | {takes:.2f} | "
              f"{out.decisions.mean():.0f} |", flush=True)


if __name__ == "__main__":
    main()
