"""``canasta import``: a ``MaskablePPO`` zip (from SB3 code or ``canasta export``) as a safe
checkpoint in a new run directory (``train.learning.interop.import_sb3``; needs ``--trust``)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from train.common.options import RULES_HELP, add_options, opt


@dataclass
class ImportOptions:
    """The options of ``canasta import``."""

    model: str = opt(help="a MaskablePPO zip (MaskablePPO.save)", positional=True, metavar="MODEL.zip")
    run_dir: str = opt(help="new run directory for the checkpoint", positional=True, metavar="RUN_DIR")
    rules: str = opt(help=f"{RULES_HELP} the model was trained on", metavar="RULES")
    trust: bool = opt(False, "load the zip although it holds pickles (loading runs code inside it)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``canasta import``."""
    add_options(parser, ImportOptions)


def run(ns: argparse.Namespace) -> int:
    """``canasta import`` entry point."""
    from train.learning.interop import import_sb3

    path, problem = import_sb3(ns.model, ns.run_dir, ns.rules, trust=ns.trust)
    if problem is None:
        print(f"wrote {path} and its config.json; play it with --agents {ns.run_dir} or resume it with "
              f"canasta train --run-dir {ns.run_dir} --resume")
    else:
        print(f"wrote {path}; play it with --agents {ns.run_dir} or export it (canasta train cannot "
              f"resume it: {problem})")
    return 0
