"""Fixtures of the web table's tests: a game store in a temporary record dir and a client for it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """``make_client(rules="classic_2p", opponents=("random",), ...)``: a Starlette TestClient on
    a fresh app over ``tmp_path`` (the same record dir each call: a second call is a restart)."""
    import warnings

    from canasta_env.rules import load_rules
    from train.web.app import create_app
    from train.web.game import AgentPool, GameStore

    with warnings.catch_warnings():  # Starlette >= 1 prefers httpx2; httpx works the same here
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient

    clients: list[Any] = []

    def make(rules: str = "classic_2p", opponents: tuple[str, ...] = ("random",), partner: str | None = None,
             hands: int | None = 1, show_policy: bool = False) -> Any:
        store = GameStore(AgentPool(load_rules(rules)), tmp_path, opponents=opponents, partner=partner,
                          hands=hands, show_policy=show_policy)
        client = TestClient(create_app(store))
        client.__enter__()  # one event loop for all its requests (not one per request)
        client.store = store  # type: ignore[attr-defined]
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)
