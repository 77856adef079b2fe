"""``canasta export``: a checkpoint as a MaskablePPO zip (``--format sb3``) or an ONNX policy."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from train.common.options import add_options, opt
from train.learning.interop import FORMATS, check_out, export_onnx, export_sb3


# ---- canasta export ---------------------------------------------------------------------------
@dataclass
class ExportOptions:
    """The options of ``canasta export``."""

    source: str = opt(help="a checkpoint, a run directory (its latest checkpoint) or zoo:NAME",
                      positional=True, metavar="RUN_OR_CKPT")
    out: str = opt(help="file to write (.zip for sb3, .onnx for onnx)", positional=True, metavar="OUT")
    format: str = opt(help="sb3: a MaskablePPO zip (MaskablePPO.load); onnx: observation and mask in, "
                      "masked logits out", choices=FORMATS)
    force: bool = opt(False, "replace OUT if it exists")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``canasta export``."""
    add_options(parser, ExportOptions)


def run(ns: argparse.Namespace) -> int:
    """``canasta export`` entry point."""
    out = check_out(ns.out, sb3=ns.format == "sb3")  # before the slow load; "" would mean "."
    source = ns.source
    if source.startswith("zoo:"):
        from agents.learned.zoo import zoo_path

        source = str(zoo_path(source))
    if (out.exists() or out.is_symlink()) and not ns.force:  # a broken link: writing follows it
        raise ValueError(f"{out}: already exists; pass --force to replace it")
    written = export_sb3(source, out) if ns.format == "sb3" else export_onnx(source, out)
    print(f"wrote {written}")
    return 0
