"""Serving the web table on uvicorn, bounded against slow and idle clients.

uvicorn's settings bound the idle time of a kept-alive connection between requests
(``timeout_keep_alive``), the size of a request line and headers (``h11_max_incomplete_event_size``)
and the connections served at once (``limit_concurrency``, then 503). No setting bounds how long a
client may take to *send* its request line and headers: the keep-alive timer runs only after a
response and stops at the first byte of the next request, and none runs on a new connection, so a
client that connects and sends half a request line holds its connection as long as it likes.
``BoundedH11Protocol`` adds that deadline (``Limits.header_seconds``, counted from the connection or
from the first byte of a request) and closes the connection when it passes; it also caps the size
of a request's line and headers however they arrive (431). The body has its own deadline in the app
(``train.web.bodies.read_body``: 408). Past ``limit_concurrency`` it answers the one-line JSON 503 every
other refusal of the API has, with the security headers (uvicorn's own was ``text/plain``).

``bind`` binds the listening socket before the app is built (a port in use is one clear line, and
``--port 0`` learns the port the system chose), ``serve`` runs uvicorn on it.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import socket
import sys
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from train.web.errors import log
from train.web.limits import Limits
from train.web.middleware import SECURITY_HEADERS


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for a request's line and headers, and a cap on their
    size however they arrive (module docstring)."""

    header_seconds = 10.0
    max_header_bytes = 16 * 1024
    overloaded = False  # a 503 was answered since the last request served: logged once

    def __init__(self, config: Any, server_state: Any, app_state: dict[str, Any],
                 _loop: asyncio.AbstractEventLoop | None = None) -> None:
        """uvicorn's protocol, its concurrency limit checked by ``_limited`` instead of by uvicorn
        (whose 503 was plain text without the security headers)."""
        super().__init__(config, server_state, app_state, _loop)
        self.max_concurrency, self.limit_concurrency = self.limit_concurrency, None
        self.inner_app, self.app = self.app, self._limited

    async def _limited(self, scope: Any, receive: Any, send: Any) -> None:
        """The app, or a JSON 503 when ``max_concurrency`` connections are open or requests under
        way (uvicorn's test, counted once this request's task is among ``tasks``); the connection
        is then closed, as uvicorn closed it."""
        limit = self.max_concurrency
        if limit is None or (len(self.connections) < limit and len(self.tasks) <= limit):
            type(self).overloaded = False
            await self.inner_app(scope, receive, send)
            return
        if not type(self).overloaded:
            type(self).overloaded = True
            log.warning("%d connections or requests at once (the limit): answering 503 until fewer", limit)
        body = json.dumps({"error": f"the server is busy: it serves at most {limit} connections at "
                                    "once; try again in a moment"}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body)),
                   (b"connection", b"close"), (b"retry-after", b"1"), *SECURITY_HEADERS]
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})

    def connection_made(self, transport: asyncio.BaseTransport) -> None:  # type: ignore[override]
        """A new connection: its request line and headers are due within ``header_seconds``."""
        super().connection_made(transport)  # type: ignore[arg-type]
        self._header_timer: asyncio.TimerHandle | None = None
        self._head_bytes = 0
        self._arm()

    def data_received(self, data: bytes) -> None:
        """Bytes in: refused past the header cap; the deadline stops once a request has come,
        and starts at the first byte of the next one."""
        if self.conn.their_state is h11.IDLE and self._head_too_large(data):
            return
        super().data_received(data)
        if self._waiting_for_request():
            if self._header_timer is None:
                self._arm()
        else:
            self._disarm()

    def send_400_response(self, msg: str) -> None:
        """Bytes that are not an HTTP/1.1 request (h11 refused them): a one-line JSON 400 with the
        security headers, then close. uvicorn's own answer was ``text/plain`` without them."""
        body = json.dumps({"error": "not a valid HTTP/1.1 request"}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body)),
                   (b"connection", b"close"), *SECURITY_HEADERS]
        try:
            for event in (h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
                          h11.Data(data=body), h11.EndOfMessage()):
                self.transport.write(self.conn.send(event) or b"")
        except h11.LocalProtocolError:  # an answer had begun on this connection: only close it
            pass
        self.transport.close()

    def _unsupported_upgrade_warning(self) -> None:
        """An ``Upgrade`` header (the table has no WebSocket): the request is answered as plain HTTP,
        in silence; uvicorn logged two lines per such request, advising a WebSocket library."""

    def connection_lost(self, exc: Exception | None) -> None:
        """The connection closed: no deadline left to run."""
        self._disarm()
        super().connection_lost(exc)

    def _head_too_large(self, data: bytes) -> bool:
        """Count the bytes of a request's line and headers; past ``max_header_bytes`` answer 431
        and close. (h11's ``max_incomplete_event_size`` bounds only headers that arrive in pieces:
        40 KiB of headers in one read went through.)"""
        end = data.find(b"\r\n\r\n")
        head = self._head_bytes + (end + 4 if end >= 0 else len(data))
        self._head_bytes = 0 if end >= 0 else head
        if head <= self.max_header_bytes:
            return False
        body = b'{"error": "the request line and headers are over %d bytes"}' % self.max_header_bytes
        head_lines = [b"HTTP/1.1 431 Request Header Fields Too Large", b"content-type: application/json",
                      b"content-length: %d" % len(body), b"connection: close",
                      *(name + b": " + value for name, value in SECURITY_HEADERS)]
        self.transport.write(b"\r\n".join(head_lines) + b"\r\n\r\n" + body)
        self.transport.close()
        self._disarm()
        return True

    def _waiting_for_request(self) -> bool:
        """No request is being answered: the next one's line and headers are still to come (or
        the rest of a body answered early, a 413, before the next request)."""
        return self.cycle is None or self.cycle.response_complete

    def _arm(self) -> None:
        self._header_timer = self.loop.call_later(self.header_seconds, self._too_slow)

    def _disarm(self) -> None:
        if getattr(self, "_header_timer", None) is not None:
            self._header_timer.cancel()  # type: ignore[union-attr]
            self._header_timer = None

    def _too_slow(self) -> None:
        self._header_timer = None
        if self._waiting_for_request() and not self.transport.is_closing():
            self.transport.close()


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: one the system picks); ``OSError`` with a
    plain message when it cannot be bound (in use, no such address)."""
    if not 0 <= port <= 65535:
        raise ValueError(f"--port {port}: a port is 0-65535")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and without
    # it every answer waited ~40 ms (Nagle and delayed ACKs) for its second write
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except socket.gaierror as exc:
        sock.close()
        raise OSError(f"--host {host}: {exc.strerror}") from None
    except OSError as exc:
        sock.close()
        why = "is in use" if exc.errno == errno.EADDRINUSE else f"cannot be bound ({exc.strerror or exc})"
        raise OSError(f"{host}:{port} {why}; choose another with --port") from None
    return sock


def bound_port(sock: socket.socket) -> int:
    """The port ``sock`` listens on (the real one when it was bound to port 0)."""
    return int(sock.getsockname()[1])


def log_to_stderr() -> None:
    """The server's own log lines (``train.web``: a client gone mid-body, a full record dir) on
    stderr, one line each, prefixed like the command's other messages."""
    logger = logging.getLogger("train.web")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("canasta serve: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.WARNING)
        logger.propagate = False


def make_server(app: Any, limits: Limits) -> Any:
    """A ``uvicorn.Server`` for ``app`` with ``limits``' timeouts and caps, on ``BoundedH11Protocol``."""
    import uvicorn

    protocol = type("BoundedH11", (BoundedH11Protocol,), {"header_seconds": limits.header_seconds,
                                                         "max_header_bytes": limits.max_header_bytes})
    config = uvicorn.Config(app, log_level="warning", http=protocol, ws="none", lifespan="on",
                            timeout_keep_alive=limits.keep_alive_seconds,
                            h11_max_incomplete_event_size=limits.max_header_bytes,
                            limit_concurrency=limits.max_connections, timeout_graceful_shutdown=5)
    return uvicorn.Server(config)


def serve(app: Any, sock: socket.socket, limits: Limits) -> None:
    """Run uvicorn on ``sock`` with ``limits``' timeouts and caps until Ctrl-C."""
    log_to_stderr()
    make_server(app, limits).run(sockets=[sock])
