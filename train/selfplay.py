"""``canasta selfplay``: MaskablePPO against a pool of the learner's own past checkpoints.

Same options, logs, checkpoints and resume as ``canasta train``; the opponent of each env episode is
the latest policy (probability ``latest_ratio``) or one of the last ``pool_size`` snapshots, taken
every ``snapshot_every`` learner steps and listed in each checkpoint's ``state.json``.
"""

from __future__ import annotations

import argparse

from train.ppo import add_flags, load_args, train

add_arguments = add_flags


def run(ns: argparse.Namespace) -> int:
    """``canasta selfplay`` entry point."""
    skip = {"config", "resume", "command", "_run"}
    overrides = {k: v for k, v in vars(ns).items() if k not in skip}
    train(load_args(ns.config, overrides), resume=ns.resume, selfplay=True)
    return 0
