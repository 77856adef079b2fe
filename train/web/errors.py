"""The web table's refusals: ``GameError`` (a 4xx answer that changes nothing, a 503 when the
server cannot do it now, or the 502 of a game an agent stopped: ``agent_failed``) and the two checks
every request's values go through (``is_int``) and are quoted by (``shown``). Apart from the games
so that the app, the replays, the record-dir files and the saved-game checks can all refuse a
request the same way. ``log`` is the server's one-line log."""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("train.web")


class GameError(Exception):
    """A request the table refuses; ``status`` is the HTTP status it is answered with (4xx: the
    request is at fault and nothing changed; 503: the server cannot do it now), ``headers`` extra
    answer headers (``Retry-After``) and ``extra`` extra keys of the JSON answer (``busy``)."""

    def __init__(self, status: int, message: str, *, headers: dict[str, str] | None = None,
                 extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})
        self.extra = dict(extra or {})


def busy(game_id: str) -> GameError:
    """The answer to a request on a game whose agents are still thinking: a 409 the page retries."""
    return GameError(409, f"the agent is busy: game {game_id} waits for its agents' moves; ask again "
                          "in a moment", headers={"Retry-After": "1"}, extra={"busy": True})


def agent_failed(game: Any) -> GameError:
    """The answer about a game stopped by a failed agent (``game.failure`` says which and how): a
    502, as from a gateway whose upstream failed; the moves before the failure are kept."""
    return GameError(502, f"game {game.id} is stopped: {game.failure}; the moves before it are saved "
                          f"(version {game.version}); start a new game",
                     extra={"agent_failed": True, "id": game.id, "version": game.version})


def is_int(value: Any) -> bool:
    """Whether a JSON value is an integer (``true`` and ``false`` are not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def shown(value: Any) -> str:
    """A value a request sent, quoted short and safe for a message."""
    from canasta_env.messages import short_repr

    return short_repr(value, 40)


def reason(exc: OSError) -> str:
    """An OS error in a few words (``No such file or directory``), without the path it names."""
    return exc.strerror or type(exc).__name__
