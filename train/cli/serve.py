"""``canasta serve``: the web table, a local page to play against agents and replay hands.

Starts a Starlette app on uvicorn (the ``web`` extra). The human takes a seat (seat 0 unless the
page asks for another); the other seats are played by ``--opponent`` agents (several names take
the opponents' seats in turn) and, in partnership games, the human's partner by ``--partners``.
Every finished hand is appended to ``<record dir>/<game id>.jsonl`` (``canasta replay`` reads it),
games are saved under ``<record dir>/games`` and survive a reload or a restart. Binds 127.0.0.1
unless ``--host`` says otherwise. Imports torch only when an agent is a learned policy.

The server is bounded against hostile and careless clients (``train.web.limits``): upload and disk
caps, games in memory, how long an answer waits for the agents, and the time a connection may take
to send its request (``train.web.server``). ``--port 0`` listens on a port the system picks and
prints it.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from train.common.options import AGENT_HELP, RULES_HELP, add_options, opt

LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass
class ServeOptions:
    """The options of ``canasta serve``."""

    rules: str = opt("classic_2p", RULES_HELP, metavar="RULES")
    opponent: list[str] = opt(help=f"agent(s) for the opponents' seats, in turn: {AGENT_HELP}",
                              factory=lambda: ["heuristic"], metavar="AGENT")
    partners: str | None = opt(None, "agent for the human's partner in partnership games (default: the "
                               "first opponent agent)", metavar="AGENT", aliases=("--partner",))
    host: str = opt("127.0.0.1", "address to bind (another than 127.0.0.1 exposes the table to the network)")
    port: int = opt(8000, "port to listen on (0: one the system picks, printed)")
    show_policy: bool = opt(False, "show the agents' top choices (a learned policy's probabilities, a rule "
                            "agent's pick) in the log and as a hint on your turn, and record them")
    record_dir: str = opt("canasta-games", "folder for the hand records (<game id>.jsonl) and saved games",
                          metavar="DIR")
    hands: int | None = opt(None, "hands per game (default: the whole game, until a side reaches the "
                            "target)", metavar="N")
    max_upload_mb: float = opt(8.0, "largest record file the replay page may upload, in MiB", metavar="MIB")
    max_disk_mb: float = opt(512.0, "disk the saved games, their records and uploads may fill, in MiB; past "
                             "it the oldest finished ones are removed", metavar="MIB")
    max_games: int = opt(128, "games held in memory (others are read back from disk when asked)", metavar="N")
    think_seconds: float = opt(0.5, "how long an answer waits for the agents' moves before it says they "
                               "are busy (they play on)", metavar="S")
    header_seconds: float = opt(10.0, "how long a connection may take to send its request line and "
                                "headers", metavar="S")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``canasta serve``."""
    add_options(parser, ServeOptions)


def limits_of(args: argparse.Namespace) -> Any:
    """The server's ``Limits`` from the options; ``ValueError`` for one out of range."""
    from train.web.limits import MIB, Limits

    checks = {"--max-upload-mb": args.max_upload_mb, "--max-disk-mb": args.max_disk_mb,
              "--max-games": args.max_games, "--think-seconds": args.think_seconds,
              "--header-seconds": args.header_seconds}
    for flag, value in checks.items():
        if not 0 < value < 10**9:  # NaN fails too
            raise ValueError(f"{flag} {value}: must be a positive number")
    return Limits(max_upload=int(args.max_upload_mb * MIB), max_disk=int(args.max_disk_mb * MIB),
                  max_games=args.max_games, think_seconds=args.think_seconds,
                  header_seconds=args.header_seconds)


def check_host(host: str) -> None:
    """Refuse an empty ``--host``: the system reads it as every interface, so an unset variable
    (``--host "$HOST"``) exposed the table to the network, printed as ``http://:8000/``."""
    if not host.strip():
        raise ValueError(f"--host {host!r}: name an address to listen on (127.0.0.1, or 0.0.0.0 for "
                         "every interface)")


def make_record_dir(text: str) -> Path:
    """The ``--record-dir`` folder, made if absent; ``ValueError`` naming the option for an empty
    name (``Path('')`` is the working folder, which filled with games in silence), a file in its
    place or a folder that cannot be made (under a file, no permission)."""
    if not text.strip():
        raise ValueError(f"--record-dir {text!r}: name a folder (. for the working folder)")
    record_dir = Path(text)
    if record_dir.exists() and not record_dir.is_dir():
        raise ValueError(f"--record-dir {record_dir}: not a folder")
    try:
        record_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"--record-dir {record_dir}: cannot be made: {exc.strerror or exc}") from None
    return record_dir


def build_app(args: argparse.Namespace, limits: Any = None) -> object:
    """The app for these options: rules loaded, every agent built, the record dir made."""
    from canasta_env.rules import load_rules
    from train.web.app import create_app
    from train.web.game import AgentPool
    from train.web.store import GameStore

    if args.hands is not None and args.hands < 1:
        raise ValueError("--hands must be at least 1")
    from train.play.seats import check_partners

    check_partners(args.partners)  # before the record dir is made
    limits = limits or limits_of(args)
    rules = load_rules(args.rules)
    record_dir = make_record_dir(args.record_dir)
    if args.partners and not rules.partnerships:
        print(f"canasta serve: --partners ignored: {rules.name} has no partnerships", file=sys.stderr)
    store = GameStore(AgentPool(rules), record_dir, opponents=args.opponent, partner=args.partners,
                      hands=args.hands, show_policy=args.show_policy, limits=limits)
    store.warm()
    hosts = ["127.0.0.1", "localhost", "[::1]", "::1"] if args.host in LOOPBACK else None
    return create_app(store, allowed_hosts=hosts)


def run(args: argparse.Namespace) -> int:
    """Entry point of ``canasta serve``: bind the port (before the engine and agents load, so a
    port in use is said at once), build the app, print where it listens, serve until Ctrl-C."""
    from train.web.server import bind, bound_port, serve

    start = time.perf_counter()
    limits = limits_of(args)
    check_host(args.host)
    sock = bind(args.host, args.port)
    try:
        app = build_app(args, limits)
        shown = f"[{args.host}]" if ":" in args.host else args.host
        where = f"http://{shown}:{bound_port(sock)}/"
        print(f"canasta serve: {args.rules} vs {' '.join(args.opponent)} at {where} "
              f"(ready in {time.perf_counter() - start:.1f} s; records in {args.record_dir}; Ctrl-C stops)",
              flush=True)
        serve(app, sock, limits)
    finally:
        sock.close()
    return 0
