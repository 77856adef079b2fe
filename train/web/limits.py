"""The web table's bounds on what a client can make the server hold or wait for.

One place for every cap, so ``canasta serve``'s options, the app, the game store and the tests
agree: request bodies and uploads, the disk the record dir's games and uploads may fill, the games
held in memory, how long an answer waits for the agents, and how long a connection may take to
send its request. ``docs/web.md`` lists them with the answer each gives when it is reached.
"""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """Caps of one server; the defaults are ``canasta serve``'s."""

    max_body: int = 64 * 1024  # a move or a new game is well under 1 KiB
    max_upload: int = 8 * MIB  # a record file of a few dozen hands
    max_disk: int = 512 * MIB  # saved games, their hand records and uploads together
    max_games: int = 128  # games held in memory (the others are read back from disk when asked)
    think_seconds: float = 0.5  # an answer waits this long for the agents, then says they are busy
    agent_threads: int = 4  # agents of this many games think at once
    stale_seconds: float = 24 * 3600  # an unfinished game untouched this long may be removed when full
    body_seconds: float = 30.0  # a request body must arrive within this
    header_seconds: float = 10.0  # a connection must send its request line and headers within this
    keep_alive_seconds: int = 5  # an idle kept-alive connection is closed after this
    max_header_bytes: int = 16 * 1024  # request line and headers (h11_max_incomplete_event_size)
    max_connections: int = 512  # uvicorn's limit_concurrency: past it, 503
