"""``canasta demo``: one hand played by random agents, shown at a few moments, then its score.

A short tour for new users of what the engine holds: the omniscient table view of
``canasta_env.engine.render.render`` at the deal, halfway through and at the end of the hand, then
each side's score split into the parts of ``layout.PART_NAMES``. Never imports torch.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any

from train.options import RULES_HELP, add_options, opt

HAND_END_TEXT = {  # layout.HE_* -> how the hand ended
    1: "P{mover} went out",
    2: "the stock ran out",
    3: "the last stock card was a red three",
    4: "nobody could discard",
    5: "the step cap was hit (truncated)",
}


@dataclass
class DemoOptions:
    """The options of ``canasta demo``."""

    rules: str = opt("classic_4p", RULES_HELP, metavar="RULES")
    seed: int = opt(0, "deal and agent seed")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``canasta demo``."""
    add_options(parser, DemoOptions)


def play_hand(rules: Any, seed: int) -> tuple[list[Any], int, int, int]:
    """Play one hand with ``RandomAgent`` on a batch of one.

    Returns:
        (snapshot of the state before every decision and after the last, the seat that made the
        last decision, the last step's event bits, number of decisions).
    """
    import numpy as np

    from canasta_env.engine import clone, init, step
    from canasta_env.policy import RandomAgent

    state = init(rules, 1, seed)
    agent, rng = RandomAgent(), np.random.default_rng(seed)
    no_obs = np.empty((1, 0), np.float32)  # the random agent ignores observations
    snapshots, mover, events = [clone(state)], -1, 0
    while not (state.terminated[0] or state.truncated[0]):
        mover = int(state.current_player[0])
        result = step(state, agent.act(no_obs, state.legal_action_mask, rng))
        events = int(result.events[0])
        snapshots.append(clone(state))
    return snapshots, mover, events, len(snapshots) - 1


def score_lines(state: Any, mover: int, events: int, decisions: int) -> list[str]:
    """How the hand ended and each side's score parts, hand total and game score."""
    from canasta_env.engine.layout import EV_CONCEALED, PART_NAMES

    how = HAND_END_TEXT.get(int(state.hand_end[0]), "the hand ended").format(mover=mover)
    if events & EV_CONCEALED:
        how += " concealed"
    lines = [f"=== hand over after {decisions} decisions: {how}"]
    cols = [*PART_NAMES, "hand total", "game score"]
    width = max(len(c) for c in cols) + 1
    lines.append(" " * 16 + "".join(c.rjust(width) for c in cols))
    for side in range(state.num_sides):
        seats = " ".join(f"P{p}" for p in range(state.num_players) if p % state.num_sides == side)
        values = [*state.score_parts[0, side], state.hand_scores[0, side], state.scores[0, side]]
        lines.append(f"side {side} ({seats})".ljust(16) + "".join(str(int(v)).rjust(width)
                                                                for v in values))
    return lines


def run(args: argparse.Namespace) -> int:
    """Entry point of ``canasta demo``."""
    from canasta_env.engine.render import render
    from canasta_env.rules import load_rules

    rules = load_rules(args.rules)
    print(f"One hand of {rules.name}, every seat played by the uniform random agent (seed {args.seed}).")
    snapshots, mover, events, n = play_hand(rules, args.seed)
    for k, title in ((0, "the deal"), (n // 2, "halfway"), (n, "the end")):
        print(f"--- {title}: after {k} of {n} decisions ".ljust(70, "-"))
        print(render(snapshots[k], 0))
    print("\n".join(score_lines(snapshots[n], mover, events, n)))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="canasta demo", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
