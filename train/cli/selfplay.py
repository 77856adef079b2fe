"""``canasta selfplay``: PPO (either trainer) against a pool of the learner's own past checkpoints.

Same options, logs, checkpoints and resume as ``canasta train``; the opponent of each env episode is
the latest policy (probability ``latest_ratio``) or one of the last ``pool_size`` snapshots, taken
every ``snapshot_every`` learner steps and listed in each checkpoint's ``state.json``.
"""

from __future__ import annotations

import argparse

from train.cli.train import add_arguments, run_command

__all__ = ["add_arguments", "run"]


def run(ns: argparse.Namespace) -> int:
    """``canasta selfplay`` entry point."""
    return run_command(ns, selfplay=True)
