"""``canasta league``: self-play against a league, the learner's past snapshots plus fixed members
(``league``: rule agents, checkpoints, zoo agents; default heuristic and greedy), each episode's
opponent drawn by prioritized fictitious self-play (``pfsp``: weight on the members the learner beats
least). Partnerships included: the learner plays every seat of its side, one league member the
other side's. Same options, logs, checkpoints and resume as ``canasta selfplay``; the league's
scores, draw chances and ratings are logged under ``league/`` (docs/training.md).
"""

from __future__ import annotations

import argparse

from train.cli.train import add_arguments, run_command

__all__ = ["add_arguments", "run"]


def run(ns: argparse.Namespace) -> int:
    """``canasta league`` entry point."""
    return run_command(ns, league=True)
