"""Bytes that are not HTTP/1.1 (h11 refuses them) sent to a real ``canasta serve``: the answer is
a one-line JSON 400 with the security headers, as every other refusal is; uvicorn's own answer was
``text/plain`` without them. The twin: a valid request on the next connection is answered as ever,
and a refusal after a valid pipelined request follows that request's answer."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from web_serve import start_serve, stop_all

from train.web.middleware import SECURITY_HEADERS

GOOD = b"GET /api/config HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
MALFORMED = {
    "non-ascii target": b"GET /\xff HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    "non-ascii method": b"G\xc3\x89T /api/config HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    "negative length": b"POST /api/games HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -1\r\n\r\n{}",
    "two lengths": b"POST /api/games HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n"
                   b"Content-Length: 3\r\n\r\n{}",
    "bad chunk size": b"POST /api/games HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      b"Transfer-Encoding: chunked\r\n\r\nzz\r\n",
    "no host": b"GET /api/config HTTP/1.1\r\n\r\n",
    "TLS hello": b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + b"\x00" * 40,
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    procs: list[Any] = []
    url, _, _ = start_serve(tmp_path_factory.mktemp("malformed"), procs, "--opponent", "random")
    host, port = url.removeprefix("http://").split(":")
    yield host, int(port)
    stop_all(procs)


def _exchange(address: tuple[str, int], data: bytes) -> bytes:
    """What the server answers ``data`` with, until it closes the connection."""
    with socket.create_connection(address) as sock:
        sock.settimeout(10)
        sock.sendall(data)
        out = b""
        while chunk := sock.recv(65536):
            out += chunk
    return out


def _answers(raw: bytes) -> list[tuple[bytes, dict[bytes, bytes], bytes]]:
    """The answers in ``raw`` (each with a content-length): status line, headers, body."""
    out = []
    while raw:
        head, _, rest = raw.partition(b"\r\n\r\n")
        status, *lines = head.split(b"\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(b":") for line in lines)}
        size = int(headers[b"content-length"])
        out.append((status, headers, rest[:size]))
        raw = rest[size:]
    return out


def _json_400(answer: tuple[bytes, dict[bytes, bytes], bytes]) -> None:
    status, headers, body = answer
    assert status.startswith(b"HTTP/1.1 400 "), answer
    assert headers[b"content-type"] == b"application/json", answer
    assert all(headers.get(name) == value for name, value in SECURITY_HEADERS), headers
    error = json.loads(body)["error"]
    assert isinstance(error, str) and "\n" not in error


@pytest.mark.parametrize("name", list(MALFORMED))
def test_bytes_that_are_not_http_get_a_json_400_with_the_security_headers(server: tuple[str, int],
                                                                          name: str) -> None:
    answers = _answers(_exchange(server, MALFORMED[name]))
    assert len(answers) == 1
    _json_400(answers[0])
    twin = _answers(_exchange(server, GOOD.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n")))
    assert twin[0][0].startswith(b"HTTP/1.1 200 ") and json.loads(twin[0][2])["rules"] == "classic_2p"


def test_garbage_after_a_valid_pipelined_request_follows_its_answer(server: tuple[str, int]) -> None:
    first, refusal = _answers(_exchange(server, GOOD + b"GARBAGE\x00\r\n\r\n"))
    assert first[0].startswith(b"HTTP/1.1 200 ") and json.loads(first[2])["rules"] == "classic_2p"
    _json_400(refusal)
