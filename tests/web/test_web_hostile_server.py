"""Hostile connections to a real ``canasta serve`` (uvicorn in a subprocess): a request line sent
by halves or not at all is cut off, a client that leaves mid-body is one log line, oversized headers
and other host names are refused, every answer carries the security headers, a slow agent stalls
no other request, and ``--port 0`` prints the port it listens on."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from web_serve import start_serve, stop_all

from train.web.middleware import CSP

REPO = Path(__file__).resolve().parents[2]
Serve = Callable[..., tuple[str, Path, Path]]


def _address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").split(":")
    return host, int(port)


def _closed_within(sock: socket.socket, seconds: float) -> float:
    """Seconds until the server closes ``sock`` (reads return nothing), at most ``seconds``."""
    start = time.monotonic()
    sock.settimeout(seconds)
    try:
        while sock.recv(4096):
            pass
    except (TimeoutError, ConnectionResetError):
        pass
    return time.monotonic() - start


@pytest.fixture(scope="module")
def bounded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Path]]:
    """One server for the module's connection tests: ``--header-seconds 1``."""
    procs: list[Any] = []
    folder = tmp_path_factory.mktemp("bounded")
    yield start_serve(folder, procs, "--opponent", "random", "--header-seconds", "1")
    stop_all(procs)


@pytest.mark.parametrize("sent", [b"", b"GET /api/con", b"GET /api/config HTTP/1.1\r\nHost: 127.0.0.1\r\n"])
def test_a_request_line_or_headers_sent_too_slowly_are_cut_off(bounded: tuple[str, Path, Path],
                                                               sent: bytes) -> None:
    with socket.create_connection(_address(bounded[0])) as sock:
        sock.sendall(sent)
        assert _closed_within(sock, 8) < 4  # --header-seconds 1; uvicorn alone waited forever


def test_half_a_request_after_a_kept_alive_answer_is_cut_off(bounded: tuple[str, Path, Path]) -> None:
    with socket.create_connection(_address(bounded[0])) as sock:
        sock.sendall(b"GET /api/config HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert b"200 OK" in sock.recv(65536)
        sock.sendall(b"GET /api/con")  # stops uvicorn's keep-alive timer
        assert _closed_within(sock, 8) < 4


def test_a_client_that_leaves_mid_body_is_one_log_line_and_the_server_goes_on(
        bounded: tuple[str, Path, Path]) -> None:
    url, _, log = bounded
    with socket.create_connection(_address(url)) as sock:
        sock.sendall(b"POST /api/records HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Content-Type: application/x-ndjson\r\nContent-Length: 100000\r\n\r\n" + b'{"format": ')
        time.sleep(0.3)
    time.sleep(1.0)
    assert httpx.get(f"{url}/api/config").status_code == 200
    text = log.read_text()
    assert "Traceback" not in text, text
    gone = [line for line in text.splitlines() if "left before sending the whole body" in line]
    assert len(gone) == 1, text


def test_oversized_headers_and_other_host_names_are_refused(bounded: tuple[str, Path, Path]) -> None:
    url = bounded[0]
    with socket.create_connection(_address(url)) as sock:
        sock.sendall(b"GET /api/config HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"x" * 40_000 + b"\r\n\r\n")
        sock.settimeout(5)
        answer = sock.recv(65536)
        assert answer.startswith(b"HTTP/1.1 431") and b"nosniff" in answer, answer[:200]
    r = httpx.get(f"{url}/api/config", headers={"host": "evil.example"})
    assert r.status_code == 400 and "host name" in r.json()["error"]
    assert r.headers["content-security-policy"] == CSP
    with socket.create_connection(_address(url)) as sock:  # a length no one could send
        sock.sendall(b"POST /api/games HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: " + b"9" * 30 + b"\r\n\r\n{}")
        sock.settimeout(5)
        assert re.match(rb"HTTP/1.1 (400|413)", sock.recv(65536))
    assert httpx.get(f"{url}/api/config").status_code == 200


ROUTES = [("GET", "/"), ("GET", "/replay"), ("GET", "/static/cards.js"), ("GET", "/static/table.css"),
          ("GET", "/static/nothing.js"), ("GET", "/static/../app.py"), ("GET", "/api/config"),
          ("GET", "/api/records"), ("GET", "/api/games/0123456789abcdef"), ("GET", "/api/nothing"),
          ("PUT", "/api/games"), ("POST", "/api/games"), ("HEAD", "/")]


def test_every_answer_carries_the_security_headers(bounded: tuple[str, Path, Path]) -> None:
    url = bounded[0]
    for method, path in ROUTES:
        r = httpx.request(method, url + path)
        assert r.headers.get("content-security-policy") == CSP, (method, path, r.status_code)
        assert r.headers.get("x-content-type-options") == "nosniff", (method, path)
        assert "'unsafe-inline'" not in CSP.split("script-src")[1].split(";")[0]
        if r.status_code >= 400 and method != "HEAD":
            assert set(r.json()) == {"error"}, (method, path, r.text)
    assert httpx.get(f"{url}/static/cards.js").headers["content-type"].startswith("text/javascript")


def test_a_slow_agent_stalls_no_other_request(serve: Serve) -> None:
    url, _, _ = serve("--opponent", "web_drill:SlowAgent", "--think-seconds", "0.5",
                      env={"CANASTA_SLOW_AGENT_SECONDS": "2"})
    with httpx.Client(base_url=url, timeout=10) as client:
        start = time.monotonic()
        view = client.post("/api/games", json={"seed": 1}).json()  # seat 1 moves first: the agent
        if "legal" in view:
            move = {"seat": 0, "action": view["legal"][0]["id"], "version": view["version"]}
            view = client.post(f"/api/games/{view['id']}/actions", json=move).json()
        assert view["busy"] is True and time.monotonic() - start < 2.0
        for _ in range(5):  # other requests while it thinks
            t = time.monotonic()
            assert client.get("/api/config").status_code == 200 and time.monotonic() - t < 0.5
            t = time.monotonic()
            assert client.get(f"/api/games/{view['id']}").status_code == 409 and time.monotonic() - t < 0.5


def test_port_0_prints_the_port_it_listens_on(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "train.cli", "serve", "--port", "0", "--opponent", "random", "--record-dir",
           str(tmp_path)]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r"at http://127\.0\.0\.1:(\d+)/", line)
        assert match and int(match.group(1)) != 0, line
        assert httpx.get(f"http://127.0.0.1:{match.group(1)}/api/config", timeout=10).status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_bad_limits_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from train.cli.main import main

    for argv in (["--max-disk-mb", "0"], ["--think-seconds", "nan"], ["--max-games", "-1"]):
        code = main(["serve", "--port", "0", "--record-dir", str(tmp_path), *argv])
        err: Any = capsys.readouterr().err
        assert code == 2 and err.startswith("canasta serve: error: ") and len(err.strip().splitlines()) == 1


def test_the_listening_socket_says_tcp_so_answers_are_not_held_back() -> None:
    """asyncio sets TCP_NODELAY only on sockets whose protocol is IPPROTO_TCP: a socket made
    without it held every answer's second write ~40 ms (Nagle's algorithm and delayed ACKs)."""
    from train.web.server import bind, bound_port

    sock = bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP and bound_port(sock) > 0
    finally:
        sock.close()
