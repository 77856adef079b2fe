"""The web table's refusals: ``GameError`` (a 4xx answer that changes nothing) and the two checks
every request's values go through (``is_int``) and are quoted by (``shown``). Apart from the games
so that the app, the replays and the saved-game checks can all refuse a request the same way."""

from __future__ import annotations

from typing import Any


class GameError(Exception):
    """A request the table refuses; ``status`` is the HTTP status (4xx) it is answered with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def is_int(value: Any) -> bool:
    """Whether a JSON value is an integer (``true`` and ``false`` are not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def shown(value: Any) -> str:
    """A value a request sent, quoted short and safe for a message."""
    from canasta_env.messages import short_repr

    return short_repr(value, 40)
