"""``canasta import``: a ``MaskablePPO`` zip (from SB3 code or ``canasta export``) as a safe
checkpoint in a new run directory (``train.interop.import_sb3``; needs ``--trust``)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL.zip", help="a MaskablePPO zip (MaskablePPO.save)")
    parser.add_argument("run_dir", metavar="RUN_DIR", help="new run directory for the checkpoint")
    parser.add_argument("--rules", required=True, help="rules preset or YAML the model was trained on")
    parser.add_argument("--trust", action="store_true",
                        help="load the zip although it holds pickles (loading runs code inside it)")


def run(ns: argparse.Namespace) -> int:
    """``canasta import`` entry point."""
    from train.interop import import_sb3

    path = import_sb3(ns.model, ns.run_dir, ns.rules, trust=ns.trust)
    print(f"wrote {path}; play it with --agents {ns.run_dir} or resume it with "
          f"canasta train --run-dir {ns.run_dir} --resume")
    return 0
