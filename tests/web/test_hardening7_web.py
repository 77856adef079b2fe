"""Hardening, round seven, of the web table (``canasta serve``, ``train/web``). Each hostile case has
a twin showing the valid neighbouring input still works.

* Past uvicorn's ``limit_concurrency`` the answer was uvicorn's ``text/plain`` "Service Unavailable"
  without the security headers, and the page showed "HTTP 503"; it is now the API's one-line JSON
  503 (``Retry-After: 1``, the security headers, logged once per overload, not once per request).
* The page read an answer that is not a JSON object (a proxy's page, a plain-text refusal, ``null``)
  as "HTTP 503", or drew a 2xx one as a table of nothing; a server out of reach said "Failed to
  fetch". ``Cards.request`` says each in one line.
* A static file's bad ``Range`` was Starlette's plain-text 400 or 416; it is JSON as every refusal.
* A request with an ``Upgrade`` header logged two uvicorn lines advising a WebSocket library.
* A saved game whose ``agent_error`` holds line breaks (or nothing) was restored and answered with a
  502 error of several lines (or "is stopped: ;").
* ``--partners ''`` sat the first opponent's agent beside the human in silence.
"""

from __future__ import annotations

import html
import json
import logging
import socket
import subprocess
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from scripts.web_local import CHROMIUM, CHROMIUM_ARGS

REPO = Path(__file__).resolve().parents[2]
CSP = b"content-security-policy"


# ---- helpers -----------------------------------------------------------------------------------
@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """``make_client()``: a Starlette TestClient on a fresh app over ``tmp_path`` (a second call is
    a restart on the same record dir), ``random`` in the other seat, one hand a game."""
    from canasta_env.rules import load_rules
    from train.web.app import create_app
    from train.web.game import AgentPool
    from train.web.limits import Limits
    from train.web.store import GameStore

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient

    clients: list[Any] = []

    def make() -> Any:
        store = GameStore(AgentPool(load_rules("classic_2p")), tmp_path, opponents=("random",), partner=None,
                          hands=1, limits=Limits(think_seconds=60.0))
        client = TestClient(create_app(store), raise_server_exceptions=False)
        client.__enter__()
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


def one_line_json(r: Any, status: int) -> str:
    """The answer is ``status`` with a one-line JSON error and the security headers."""
    assert r.status_code == status, (r.status_code, r.text[:300])
    assert r.headers["content-type"] == "application/json" and "content-security-policy" in r.headers
    error = r.json()["error"]
    assert isinstance(error, str) and error and "\n" not in error, error
    return error


@contextmanager
def uvicorn_serving(app: Any, **caps: Any) -> Iterator[tuple[int, Any]]:
    """``app`` served by uvicorn as ``canasta serve`` serves it (``make_server``), on a thread:
    (port, uvicorn server)."""
    import uvicorn.config

    from train.web.limits import Limits
    from train.web.server import bind, bound_port, make_server

    sock = bind("127.0.0.1", 0)
    # uvicorn's dictConfig would close every logging handler of this process, pytest's own among
    # them (every later test of the worker then failed to capture); its loggers propagate instead
    with mock.patch.object(uvicorn.config.Config, "configure_logging", lambda self: None):
        server = make_server(app, Limits(**caps))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield bound_port(sock), server
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


def raw_request(port: int, request: bytes) -> tuple[int, dict[bytes, bytes], bytes]:
    """One request on a new connection: the status, headers (lower-case names) and body."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data or len(data.partition(b"\r\n\r\n")[2]) < _length(data):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    headers = dict(line.lower().split(b": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, body


def _length(data: bytes) -> int:
    for line in data.partition(b"\r\n\r\n")[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":")[1])
    return 0


GET_CONFIG = b"GET /api/config HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def _wait_connections(server: Any, n: int) -> None:
    deadline = time.monotonic() + 10
    while len(server.server_state.connections) != n:
        assert time.monotonic() < deadline, len(server.server_state.connections)
        time.sleep(0.02)


@pytest.fixture
def web_log() -> Iterator[list[str]]:
    """The lines the server logs (``train.web``) during the test."""
    lines: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger("train.web")
    logger.addHandler(handler)
    yield lines
    logger.removeHandler(handler)


# ---- the overload 503 ----------------------------------------------------------------------------
def test_past_the_connection_limit_the_answer_is_one_line_json(make_client: Any, web_log: list[str]) -> None:
    app = make_client().app
    with uvicorn_serving(app, max_connections=2) as (port, server):
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
        _wait_connections(server, 2)
        answers = [raw_request(port, GET_CONFIG) for _ in range(3)]
        for status, headers, body in answers:
            assert status == 503 and headers[b"content-type"] == b"application/json", (status, headers, body)
            assert headers[b"retry-after"] == b"1" and CSP in headers and headers[b"connection"] == b"close"
            error = json.loads(body)["error"]
            assert "at most 2 connections" in error and "\n" not in error, error
        assert len([line for line in web_log if "answering 503" in line]) == 1, web_log  # once, not 3 times
        for s in idle:
            s.close()
        _wait_connections(server, 0)
        status, headers, body = raw_request(port, GET_CONFIG)  # the twin: under the limit, served
        assert status == 200 and json.loads(body)["rules"] == "classic_2p" and CSP in headers


def test_an_upgrade_header_is_answered_as_plain_http_in_silence(make_client: Any,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    app = make_client().app
    with uvicorn_serving(app) as (port, _):
        for upgrade in (b"Connection: Upgrade\r\nUpgrade: websocket\r\n",
                        b"Connection: Upgrade\r\nUpgrade: h2c\r\n", b""):
            status, _, body = raw_request(port, GET_CONFIG.replace(b"\r\n\r\n", b"\r\n" + upgrade + b"\r\n"))
            assert status == 200 and json.loads(body)["rules"] == "classic_2p"
    said = [r.getMessage() for r in caplog.records if r.name.startswith("uvicorn")]
    assert not any("upgrade" in m.lower() or "websocket" in m.lower() for m in said), said


# ---- the page reads every answer in one line -----------------------------------------------------
PAGE_ANSWERS = r"""<html><body><pre id="out">pending</pre><script src="CARDS_JS"></script><script>
const cases = [
  [503, "Service Unavailable", "Service Unavailable", "text/plain; charset=utf-8"],
  [503, "", '{"error": "the server is busy: at most 512", "busy": false}', "application/json"],
  [502, "Bad Gateway", "<html><body>proxy error</body></html>", "text/html"],
  [200, "OK", "<html>a captive portal</html>", "text/html"],
  [500, "", "null", "application/json"],
  [400, "", '{"error": {"x": 1}}', "application/json"],
  [409, "", '{"error": "the agent is busy\\nsecond line", "busy": true}', "application/json"],
  [200, "OK", '{"id": "0123456789abcdef", "version": 3}', "application/json"],
  [202, "Accepted", '{"busy": true, "id": "0123456789abcdef"}', "application/json"],
  "unreachable",
];
(async () => {
  const out = [];
  for (const c of cases) {
    window.fetch = async () => {
      if (c === "unreachable") throw new TypeError("Failed to fetch");
      return new Response(c[2], { status: c[0], statusText: c[1], headers: { "content-type": c[3] } });
    };
    try {
      const r = await window.Cards.request("/api/x", {});
      out.push({ ok: true, status: r.status, data: r.data });
    } catch (e) {
      out.push({ ok: false, message: e.message, status: e.status, busy: e.busy });
    }
  }
  document.getElementById("out").textContent = JSON.stringify(out);
})();
</script></body></html>
"""


def test_the_page_reads_any_answer_as_one_line(tmp_path: Path) -> None:
    page = tmp_path / "answers.html"
    page.write_text(PAGE_ANSWERS.replace("CARDS_JS", (REPO / "train/web/static/cards.js").as_uri()))
    done = subprocess.run([CHROMIUM, *CHROMIUM_ARGS, "--virtual-time-budget=10000", "--dump-dom",
                           page.as_uri()], capture_output=True, text=True, timeout=120, check=True)
    got = json.loads(html.unescape(done.stdout.split('<pre id="out">')[1].split("</pre>")[0]))
    failed = [(g["status"], g["message"], g["busy"]) for g in got if not g["ok"]]
    assert failed == [
        (503, "the server answered HTTP 503 Service Unavailable without a readable message", False),
        (503, "the server is busy: at most 512", False),
        (502, "the server answered HTTP 502 Bad Gateway without a readable message", False),
        (200, "the server answered HTTP 200 OK without a readable message", False),
        (500, "the server answered HTTP 500 without a readable message", False),
        (400, "the server answered HTTP 400 without a readable message", False),
        (409, "the agent is busy", True),
        (0, "the server cannot be reached (is canasta serve still running?)", False),
    ]
    # the twins: a JSON object answered 2xx is the data, as before
    assert [(g["status"], g["data"]) for g in got if g["ok"]] == [
        (200, {"id": "0123456789abcdef", "version": 3}), (202, {"busy": True, "id": "0123456789abcdef"})]


# ---- static files ----------------------------------------------------------------------------------
@pytest.mark.parametrize("header, status", [("bytes=abc", 400), ("bytes=5-1", 400), ("bytes=99999999-", 416),
                                            ("lines=0-9", 400)])
def test_a_bad_range_of_a_static_file_is_a_json_refusal(make_client: Any, header: str, status: int) -> None:
    client = make_client()
    r = client.get("/static/cards.js", headers={"Range": header})
    assert one_line_json(r, status)  # Starlette's own words, whatever they are, on one line
    if status == 416:
        assert r.headers["content-range"].startswith("bytes */")
    twin = client.get("/static/cards.js", headers={"Range": "bytes=0-9"})
    assert twin.status_code == 206 and twin.content == b"// Cards d"
    assert "content-security-policy" in twin.headers
    assert twin.headers["content-type"].startswith("text/javascript")
    assert client.head("/static/cards.js", headers={"Range": header}).status_code == status


# ---- saved games -----------------------------------------------------------------------------------
@pytest.fixture
def stopped_game(make_client: Any, tmp_path: Path) -> dict[str, Any]:
    """A saved game at the human's turn, its file and its JSON."""
    view = make_client().post("/api/games", json={"seed": 7}).json()
    path = tmp_path / "games" / f"{view['id']}.json"
    return {"id": view["id"], "path": path, "data": json.loads(path.read_text())}


@pytest.mark.parametrize("failure", ["agent 'random' (seat 1) raised\nTraceback (most recent call last):",
                                     "line\r\nsecond", "", "  padded  ", "two  spaces", "tab\there"])
def test_a_saved_agent_error_that_is_not_one_line_is_410(stopped_game: dict[str, Any], make_client: Any,
                                                         failure: str) -> None:
    stopped_game["path"].write_text(json.dumps({**stopped_game["data"], "agent_error": failure}))
    error = one_line_json(make_client().get(f"/api/games/{stopped_game['id']}"), 410)
    assert "cannot be restored: 'agent_error'" in error and "is not one line of text" in error, error


def test_a_saved_one_line_agent_error_stops_the_game_with_it(stopped_game: dict[str, Any],
                                                             make_client: Any) -> None:
    failure = "agent 'random' (seat 1) raised RuntimeError: <b>boom</b> \u00e9\u202e"
    stopped_game["path"].write_text(json.dumps({**stopped_game["data"], "agent_error": failure}))
    r = make_client().get(f"/api/games/{stopped_game['id']}")
    assert one_line_json(r, 502).startswith(f"game {stopped_game['id']} is stopped: {failure}; ")
    assert r.json()["agent_failed"] is True


# ---- canasta serve's options -----------------------------------------------------------------------
def _serve(argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
           tmp_path: Path) -> tuple[int, str, list[Any]]:
    """``canasta serve ARGV`` with its serving replaced: the status, stderr and what was served."""
    import train.web.server
    from train.cli.main import main

    served: list[Any] = []
    monkeypatch.setattr(train.web.server, "serve", lambda app, *rest: served.append(app))
    code = main(["serve", "--port", "0", "--rules", "classic_4p", "--opponent", "random",
                 "--record-dir", str(tmp_path / "games"), *argv])
    return code, capsys.readouterr().err, served


@pytest.mark.parametrize("partners", ["", " "])
def test_serve_refuses_an_empty_partners(partners: str, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    code, err, served = _serve(["--partners", partners], capsys, monkeypatch, tmp_path)
    assert code == 2 and not served, err
    assert err.strip() == f"canasta serve: error: --partners {partners!r}: name an agent (leave the option " \
                          "out for the first opponent's agent)", err


def test_serve_seats_a_named_partner(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                     tmp_path: Path) -> None:
    code, err, served = _serve(["--partners", "greedy"], capsys, monkeypatch, tmp_path)
    assert code == 0 and len(served) == 1, err
    assert served[0].state.store.partner == "greedy"
