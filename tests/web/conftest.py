"""Fixtures of the web table's tests: a game store in a temporary record dir and a client for it,
a real ``canasta serve`` in a subprocess, and a folder beside the record dir that no request may
change (the target of the symbolic links the hostile tests plant)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from web_serve import Served, start_serve, stop_all


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """``make_client(rules="classic_2p", opponents=("random",), ...)``: a Starlette TestClient on
    a fresh app over ``tmp_path`` (the same record dir each call: a second call is a restart)."""
    import warnings

    from canasta_env.rules import load_rules
    from train.web.app import create_app
    from train.web.game import AgentPool
    from train.web.limits import Limits
    from train.web.store import GameStore

    with warnings.catch_warnings():  # Starlette >= 1 prefers httpx2; httpx works the same here
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient

    clients: list[Any] = []

    def make(rules: str = "classic_2p", opponents: tuple[str, ...] = ("random",), partner: str | None = None,
             hands: int | None = 1, show_policy: bool = False, limits: Any = None,
             record_dir: Path | None = None, pool: Any = None, **caps: Any) -> Any:
        """``limits`` or ``caps`` (``Limits`` fields) set the server's caps; the agents get 60 s
        to think unless told (a cold numba cache compiles during the first game)."""
        limits = limits or Limits(**{"think_seconds": 60.0, **caps})
        store = GameStore(pool or AgentPool(load_rules(rules)), record_dir or tmp_path, opponents=opponents,
                          partner=partner, hands=hands, show_policy=show_policy, limits=limits)
        client = TestClient(create_app(store), raise_server_exceptions=False)
        client.__enter__()  # one event loop for all its requests (not one per request)
        client.store = store  # type: ignore[attr-defined]
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the record dir with files a hostile record dir links to; no request may
    change it (``files_of`` before and after)."""
    folder = tmp_path.parent / f"{tmp_path.name}-outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("root:x:0:0:secret\n")
    (folder / "target.jsonl").write_text("")
    (folder / "victim.json").write_text('{"keep": "me"}\n')
    return folder


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    """``serve(*options)``: ``canasta serve`` in a subprocess (``start_serve``); returns (base
    URL, record dir, log file). Every server started is stopped after the test."""
    procs: list[Any] = []
    yield lambda *options, env=None: start_serve(tmp_path, procs, *options, env=env)
    stop_all(procs)


@pytest.fixture
def server(serve: Callable[..., Served]) -> tuple[str, Path]:
    """``canasta serve --opponent heuristic --hands 1`` in a subprocess: (base URL, record dir)."""
    url, record_dir, _ = serve()
    return url, record_dir
