"""``canasta replay FILE``: step through recorded hands from any seat's view."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import islice
from typing import Any

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


def _seats_error(view: int | None, record: Any, k: int, path: str) -> ValueError | None:
    """The error of a ``--view`` that is no seat of ``record`` (hand ``k`` of ``path``), or None."""
    seats = len(record.seats)  # iter_records checked: one label per player
    if view is not None and not 0 <= view < seats:
        return ValueError(f"--view {view}: hand {k} of {path} has seats 0-{seats - 1}")
    return None


def _scan(path: str, stop: int, view: int | None = None) -> tuple[int, Any]:
    """Read the records of ``path`` one at a time, never the whole file at once (a tournament's
    records may hold a million hands): up to hand ``stop`` (1-based), returned as ``(stop, record)``
    without reading further, or, when the file holds fewer, to the end, returned as ``(hands in the
    file, None)`` once ``view`` is checked against every hand's seats (after the whole file is read,
    so a damaged line is reported first)."""
    from canasta_env.records import iter_records

    count, bad = 0, None
    for count, record in enumerate(iter_records(path), start=1):
        if count == stop:
            return count, record
        bad = bad or _seats_error(view, record, count, path)
    if bad is not None:
        raise bad
    return count, None


def run(args: argparse.Namespace) -> int:
    """Entry point of ``canasta replay``. A file that cannot be read as records, or a bad flag,
    raises (``RecordError``, ``ValueError``, ``OSError``): the ``canasta`` command prints it on one
    line and exits with status 2. A record that reads but does not replay is reported here, on one
    line, with status 1. ``--hand N`` reads the file only up to hand N; without it the file is read
    twice, to check and count its hands and to replay them: one record at a time is in memory."""
    from canasta_env.records import RecordError, iter_records

    view = _view(args.view)
    if not args.file.strip():  # '' is read as the working folder: "is a directory" named nothing
        raise ValueError(f"FILE {args.file!r}: not a file name; name a record file")
    if args.hand is None:
        total, found = _scan(args.file, 0, view)
    else:
        total, found = _scan(args.file, args.hand)
    if total == 0:
        raise ValueError(f"{args.file} holds no hand records")
    if args.hand is not None and found is None:
        raise ValueError(f"{args.file} holds {total} hand(s); no hand {args.hand}")
    if found is not None:
        bad = _seats_error(view, found, args.hand, args.file)
        if bad is not None:  # the user's flag, not the record: status 2, before any output
            raise bad
    replayer = Replayer(Console(highlight=False), view, wait=not args.all)
    if found is not None:
        hands: Iterable[tuple[int, Any]] = [(args.hand, found)]
    else:  # the hands counted: not those appended since (``canasta play --record`` still writing)
        hands = enumerate(islice(iter_records(args.file), total), start=1)
    for k, record in hands:
        try:
            if not replayer.show(record, k, None if found is not None else total):
                return 0
        except (RecordError, ValueError) as exc:
            print(f"canasta replay: error: {args.file} hand {k}: {' '.join(str(exc).split())}",
                  file=sys.stderr)
            return 1
    return 0
