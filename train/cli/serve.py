"""``canasta serve``: the web table, a local page to play against agents and replay hands.

Starts a Starlette app on uvicorn (the ``web`` extra). The human takes a seat (seat 0 unless the
page asks for another); the other seats are played by ``--opponent`` agents (several names take
the opponents' seats in turn) and, in partnership games, the human's partner by ``--partners``.
Every finished hand is appended to ``<record dir>/<game id>.jsonl`` (``canasta replay`` reads it),
games are saved under ``<record dir>/games`` and survive a reload or a restart. Binds 127.0.0.1
unless ``--host`` says otherwise. Imports torch only when an agent is a learned policy.
"""

from __future__ import annotations

import argparse
import errno
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path

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
    port: int = opt(8000, "port to listen on")
    show_policy: bool = opt(False, "show the agents' top choices (a learned policy's probabilities, a rule "
                            "agent's pick) in the log and as a hint on your turn, and record them")
    record_dir: str = opt("canasta-games", "folder for the hand records (<game id>.jsonl) and saved games",
                          metavar="DIR")
    hands: int | None = opt(None, "hands per game (default: the whole game, until a side reaches the "
                            "target)", metavar="N")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``canasta serve``."""
    add_options(parser, ServeOptions)


def check_port(host: str, port: int) -> None:
    """``OSError`` with a plain message when ``host:port`` cannot be bound (in use, no such
    address), before the engine and agents are loaded."""
    if not 0 <= port <= 65535:
        raise ValueError(f"--port {port}: a port is 0-65535")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            why = "is in use" if exc.errno == errno.EADDRINUSE else f"cannot be bound ({exc.strerror or exc})"
            raise OSError(f"{host}:{port} {why}; choose another with --port") from None
        except socket.gaierror as exc:
            raise OSError(f"--host {host}: {exc.strerror}") from None


def build_app(args: argparse.Namespace) -> object:
    """The app for these options: rules loaded, every agent built, the record dir made."""
    from canasta_env.rules import load_rules
    from train.web.app import create_app
    from train.web.game import AgentPool, GameStore

    if args.hands is not None and args.hands < 1:
        raise ValueError("--hands must be at least 1")
    rules = load_rules(args.rules)
    record_dir = Path(args.record_dir)
    if record_dir.exists() and not record_dir.is_dir():
        raise ValueError(f"--record-dir {record_dir}: not a folder")
    record_dir.mkdir(parents=True, exist_ok=True)
    if args.partners and not rules.partnerships:
        print(f"canasta serve: --partners ignored: {rules.name} has no partnerships", file=sys.stderr)
    store = GameStore(AgentPool(rules), record_dir, opponents=args.opponent, partner=args.partners,
                      hands=args.hands, show_policy=args.show_policy)
    store.warm()
    hosts = ["127.0.0.1", "localhost", "[::1]", "::1"] if args.host in LOOPBACK else None
    return create_app(store, allowed_hosts=hosts)


def run(args: argparse.Namespace) -> int:
    """Entry point of ``canasta serve``: serve until Ctrl-C."""
    import uvicorn

    start = time.perf_counter()
    check_port(args.host, args.port)
    app = build_app(args)
    shown = f"[{args.host}]" if ":" in args.host else args.host
    print(f"canasta serve: {args.rules} vs {' '.join(args.opponent)} at http://{shown}:{args.port}/ "
          f"(ready in {time.perf_counter() - start:.1f} s; records in {args.record_dir}; Ctrl-C stops)",
          flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")  # type: ignore[arg-type]
    return 0
