"""``canasta replay FILE``: step through recorded hands from any seat's view."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from rich.console import Console

from canasta_env.messages import short_repr
from train.common.options import add_options, opt
from train.play.replay import Replayer


@dataclass
class ReplayOptions:
    """The options of ``canasta replay``."""

    file: str = opt(help="a JSON-lines record file", positional=True, metavar="FILE")
    hand: int | None = opt(None, "replay only the N-th hand of the file (1-based; default: every hand)",
                           metavar="N")
    view: str = opt("omniscient", "whose view: omniscient or a seat number (others' hands hidden)",
                    metavar="omniscient|P")
    all: bool = opt(False, "print every step without waiting for Enter")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``canasta replay``."""
    add_options(parser, ReplayOptions)


def _view(text: str) -> int | None:
    if text == "omniscient":
        return None
    if text.isascii() and text.isdigit():  # not '²', which str.isdigit takes and int() refuses
        if len(text) > 100:  # int() refuses thousands of digits
            raise ValueError(f"--view {short_repr(text)}: there is no such seat")
        return int(text)
    raise ValueError(f"--view must be 'omniscient' or a seat number, got {text!r}")


def run(args: argparse.Namespace) -> int:
    """Entry point of ``canasta replay``. A file that cannot be read as records, or a bad flag,
    raises (``RecordError``, ``ValueError``, ``OSError``): the ``canasta`` command prints it on one
    line and exits with status 2. A record that reads but does not replay is reported here, on one
    line, with status 1."""
    from canasta_env.records import RecordError, read_records

    view = _view(args.view)
    records = read_records(args.file)
    total = len(records)
    numbers = list(range(1, total + 1)) if args.hand is None else [args.hand]
    if not records:
        raise ValueError(f"{args.file} holds no hand records")
    if not all(1 <= k <= total for k in numbers):
        raise ValueError(f"{args.file} holds {total} hand(s); no hand {args.hand}")
    for k in numbers:  # a bad --view is the user's flag, not the record: status 2, before any output
        seats = len(records[k - 1].seats)  # read_records checked: one label per player
        if view is not None and not 0 <= view < seats:
            raise ValueError(f"--view {view}: hand {k} of {args.file} has seats 0-{seats - 1}")
    replayer = Replayer(Console(highlight=False), view, wait=not args.all)
    for k in numbers:
        try:
            if not replayer.show(records[k - 1], k, total):
                return 0
        except (RecordError, ValueError) as exc:
            print(f"canasta replay: error: {args.file} hand {k}: {' '.join(str(exc).split())}",
                  file=sys.stderr)
            return 1
    return 0
