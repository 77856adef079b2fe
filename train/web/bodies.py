"""Request bodies of the web table: declared as the right type, within a size and a time, JSON read
strictly. Every refusal is a ``GameError`` (a 4xx JSON answer) and happens before anything changes."""

from __future__ import annotations

from typing import Any

import anyio
from starlette.requests import Request

from train.web.errors import GameError
from train.web.schema import loads


def _declared_length(request: Request, limit: int) -> None:
    """413 when the declared ``Content-Length`` passes ``limit`` (or is not a number: checked
    before ``int()``, which fails on thousands of digits)."""
    declared = request.headers.get("content-length")
    if declared is None:
        return
    if not (declared.isascii() and declared.isdigit() and len(declared) <= 15) or int(declared) > limit:
        raise GameError(413, f"request body too large: the limit is {limit} bytes")


async def read_body(request: Request, limit: int, seconds: float) -> bytes:
    """The request body, refused with 413 once it passes ``limit`` bytes (the declared length is
    checked first, then the bytes as they arrive: a lying Content-Length gains nothing) and with
    408 unless it has all arrived within ``seconds`` (a client trickling a body holds nothing
    long). A client that leaves mid-body raises Starlette's ``ClientDisconnect``."""
    _declared_length(request, limit)
    chunks, size = [], 0
    try:
        with anyio.fail_after(seconds):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise GameError(413, f"request body too large: the limit is {limit} bytes")
                chunks.append(chunk)
    except TimeoutError:
        raise GameError(408, f"the request body did not arrive within {seconds:g} s") from None
    return b"".join(chunks)


def check_type(request: Request, accepted: tuple[str, ...]) -> None:
    """415 unless the body is declared as one of ``accepted``: a form or a ``no-cors`` fetch on
    another site can only send the types a browser lets through without asking this server, and
    none of those is accepted here, so another site cannot start games or upload files."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind not in accepted:
        raise GameError(415, f"send the body as {' or '.join(accepted)}")


async def read_json(request: Request, limit: int, seconds: float) -> dict[str, Any]:
    """A JSON object body (at most ``limit`` bytes, sent as ``application/json``, read strictly:
    UTF-8, no duplicate keys, no ``NaN``, bounded nesting); empty is ``{}``."""
    check_type(request, ("application/json",))
    body = await read_body(request, limit, seconds)
    if not body.strip():
        return {}
    try:
        data = loads(body, "the body")
    except ValueError as exc:
        raise GameError(400, str(exc)) from None
    if not isinstance(data, dict):
        raise GameError(400, f"the body must be a JSON object, got {type(data).__name__}")
    return data


def known_keys(data: dict[str, Any], keys: set[str]) -> None:
    """400 when the body has keys other than ``keys`` (a typo is not silently ignored)."""
    from train.web.errors import shown

    unknown = sorted(set(data) - keys)
    if unknown:
        raise GameError(400, f"unknown key(s) {', '.join(shown(k) for k in unknown[:5])}; known: "
                             f"{', '.join(sorted(keys))}")
