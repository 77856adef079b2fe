"""``canasta play``: Canasta in the terminal against agents, hands optionally recorded."""

from __future__ import annotations

import argparse
import secrets
import sys
from dataclasses import dataclass
from pathlib import Path

from train.common.options import AGENT_HELP, RULES_HELP, add_options, check_seed, opt
from train.play.seats import build_seats
from train.play.terminal import PlaySession


@dataclass
class PlayOptions:
    """The options of ``canasta play``."""

    rules: str = opt("classic_2p", RULES_HELP, metavar="RULES")
    opponent: str = opt("heuristic", f"agent for the other seats: {AGENT_HELP}", metavar="AGENT")
    human: list[int] = opt(help="human seats; several humans share the keyboard", factory=lambda: [0],
                           metavar="SEAT")
    partners: str | None = opt(None, "agent for a human's partner seat in partnership games (default: the "
                               "opponent agent)", metavar="AGENT", aliases=("--partner",))
    seed: int | None = opt(None, "deal and agent seed (default: random)")
    record: str | None = opt(None, "append every played hand to this JSON-lines record file", metavar="FILE")
    hands: int | None = opt(None, "stop after N hands (default: play the whole game; 1: a single hand)",
                            metavar="N")
    show_policy: bool = opt(False, "with a learned-policy agent: show its most probable moves when it plays "
                            "(this reveals what it holds) and as a hint on your turn")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``canasta play``."""
    add_options(parser, PlayOptions)


def check_record_file(path: str | Path) -> None:
    """Refuse a ``--record`` file before any hand is played (else the first hand would be lost when
    it is saved): one that cannot be appended to (a missing folder, a directory, a pipe without a
    reader), or an existing file that holds something other than hand records (a typo such as
    ``--record README.md``) or a bad line among them (a last line cut short: the hands appended
    after it would be in a file that does not read). Creates the file, empty, if it does not exist."""
    import os
    import stat

    from canasta_env.records import RecordError, iter_records

    try:  # O_NONBLOCK: a named pipe without a reader is an error, not a wait
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o644)
    except (OSError, ValueError) as exc:
        raise ValueError(f"--record {path}: cannot append to it: "
                         f"{getattr(exc, 'strerror', None) or exc}") from None
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    if stat.S_ISREG(st.st_mode) and st.st_size:
        try:
            for _ in iter_records(path):
                pass
        except RecordError as exc:
            raise ValueError(f"--record {path}: holds something other than hand records, so nothing "
                             f"is appended to it ({exc})") from None


def run(args: argparse.Namespace) -> int:
    """Entry point of ``canasta play``."""
    from canasta_env.rules import load_rules

    if args.hands is not None and args.hands < 1:
        raise ValueError("--hands must be at least 1")
    repeated = sorted({h for h in args.human if args.human.count(h) > 1})
    if repeated:  # a typo more likely than a wish: refuse rather than merge
        raise ValueError(f"--human: seat(s) {repeated} given more than once")
    rules = load_rules(args.rules)
    seats = build_seats(rules, sorted(set(args.human)), args.opponent, args.partners)
    if args.partners and not rules.partnerships:
        print(f"canasta play: --partners ignored: {rules.name} has no partnerships", file=sys.stderr)
    if args.record is not None:
        check_record_file(args.record)
    check_seed(args.seed)
    seed = secrets.randbelow(2**31) if args.seed is None else args.seed
    session = PlaySession(rules, seats, seed=seed, hands=args.hands, record=args.record,
                          show_policy=args.show_policy)
    return session.play()
