"""What every answer of the web table gets, and how every failure is answered.

``Guard`` (ASGI middleware, outermost in the app) adds the security headers to every answer (pages,
static files, JSON, refusals), refuses requests for other host names on a loopback bind (DNS
rebinding), turns an error nothing else caught into a one-line JSON 500 and one log line, and
rewrites a refusal that is not JSON (Starlette's plain-text 400 and 416 for a static file's bad
``Range``) as the one-line JSON error every other refusal is.
The exception handlers answer each refusal as one-line JSON: ``GameError`` with its status, a
Starlette refusal (no such route, wrong method), a client that left mid-body (logged in one line,
no traceback) and an OS error of the record dir (503, the record dir cannot be used now).
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from train.web.errors import GameError, log, reason

# the page's scripts are its own files only: no inline script, no eval, no other site's script
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
       "frame-ancestors 'none'; form-action 'none'")
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
]
_NAMES = {name for name, _ in SECURITY_HEADERS}


class Guard:
    """ASGI middleware: security headers on every answer, the host check, and a one-line JSON 500
    for an error nothing else caught (see the module docstring)."""

    def __init__(self, app: ASGIApp, allowed_hosts: list[str] | None = None) -> None:
        self.app = app
        self.allowed_hosts = {h.lower() for h in allowed_hosts or []}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False
        held: list[Message] = []  # a refusal that is not JSON, until its body is all here

        async def send_guarded(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() not in _NAMES]
                message = {**message, "headers": headers + SECURITY_HEADERS}
                if message["status"] >= 400 and not _is_json(headers):
                    held.append(message)
                    return
                started = True
            elif held and message["type"] == "http.response.body":
                held.append(message)
                if message.get("more_body"):
                    return
                started = True
                for part in _as_json(held):
                    await send(part)
                held.clear()
                return
            await send(message)

        if self.allowed_hosts and _host(scope) not in self.allowed_hosts:
            answer = JSONResponse({"error": "this server answers only requests for its own host name "
                                            f"({', '.join(sorted(self.allowed_hosts))})"}, status_code=400)
            await answer(scope, receive, send_guarded)
            return
        try:
            await self.app(scope, receive, send_guarded)
        except Exception as exc:  # a bug: answered, logged in one line with its traceback
            log.error("%s %s failed: %s: %s", scope.get("method"), scope.get("path"), type(exc).__name__,
                      exc, exc_info=True)
            if not started:
                answer = JSONResponse({"error": f"the server failed on this request ({type(exc).__name__})"},
                                      status_code=500)
                await answer(scope, receive, send_guarded)


def _is_json(headers: list[tuple[bytes, bytes]]) -> bool:
    return any(k.lower() == b"content-type" and v.split(b";")[0].strip().lower() == b"application/json"
               for k, v in headers)


def _as_json(held: list[Message]) -> list[Message]:
    """A refusal's start and body messages as ``{"error": its text's first line}`` (its status's
    name when the text says nothing or is encoded), its other headers kept."""
    start, status = held[0], held[0]["status"]
    encoded = any(k.lower() == b"content-encoding" for k, _ in start["headers"])
    said = b"".join(m.get("body", b"") for m in held[1:])[:2048].decode("utf-8", "replace")
    line = "" if encoded else " ".join(said.strip().split("\n")[0].split())[:300]
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = f"HTTP {status}"
    body = json.dumps({"error": line or phrase}).encode()
    headers = [(k, v) for k, v in start["headers"]
               if k.lower() not in (b"content-type", b"content-length", b"content-encoding")]
    return [{**start, "headers": [(b"content-type", b"application/json"),
                                  (b"content-length", b"%d" % len(body)), *headers]},
            {"type": "http.response.body", "body": body, "more_body": False}]


def _host(scope: Scope) -> str:
    """The request's host name (the ``Host`` header without its port), lower case."""
    for key, value in scope.get("headers", []):
        if key == b"host":
            host = value.decode("latin-1").strip().lower()
            if host.startswith("["):
                return host[: host.find("]") + 1] if "]" in host else host
            return host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    return ""


async def game_error(request: Request, exc: Exception) -> Response:
    """A ``GameError``: its status, ``{"error": message, ...extra}`` and its headers."""
    assert isinstance(exc, GameError)
    if exc.status >= 500 and not exc.extra.get("agent_failed"):  # logged once, where the agent failed
        log.warning("%s %s: %s", request.method, request.url.path, exc.message)
    return JSONResponse({"error": exc.message, **exc.extra}, status_code=exc.status, headers=exc.headers)


async def http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own refusals (no such route, wrong method) as JSON too."""
    assert isinstance(exc, HTTPException)
    return JSONResponse({"error": exc.detail}, status_code=exc.status_code, headers=exc.headers)


async def client_gone(request: Request, exc: Exception) -> Response:
    """A client that left before its whole body arrived: one log line, no traceback; the answer
    goes nowhere (the server drops what is sent to a closed connection)."""
    client = request.client
    who = f"{client.host}:{client.port}" if client else "a client"
    log.warning("%s left before sending the whole body of %s %s", who, request.method, request.url.path)
    return JSONResponse({"error": "the client left before sending its whole request"}, status_code=400)


async def os_error(request: Request, exc: Exception) -> Response:
    """An OS error reading or writing the record dir (gone, full, no permission): 503 and one
    log line; what the request was to change is left as the files say."""
    assert isinstance(exc, OSError)
    if isinstance(exc, (ConnectionError, TimeoutError)):  # OSErrors too, but not the disk's
        message = f"the server could not finish this request now: {type(exc).__name__}"
    else:
        message = f"the record dir cannot be used now: {reason(exc)}"
    log.warning("%s %s: %s", request.method, request.url.path, message)
    return JSONResponse({"error": message}, status_code=503)


HANDLERS: dict[Any, Any] = {GameError: game_error, HTTPException: http_error,
                            ClientDisconnect: client_gone, OSError: os_error}
