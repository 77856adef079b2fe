"""A scripted client of the web table's API: random legal games and hostile requests.

Shared by tests/web/test_web_api.py (a few dozen games in CI) and scripts/web_api_soak.py (1,000
games and 200 hostile requests). Works with any client that has ``get``/``post``/``request`` like
httpx's (Starlette's ``TestClient``, or ``httpx.Client`` against a running server).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from canasta_env.engine import NUM_ACTIONS


class SlowAgent:
    """A random agent that takes ``seconds`` over each move (sleeping: the GIL is free meanwhile,
    as for an agent waiting on a GPU or another process): the agent a server must not let stall
    its other games. ``canasta serve --opponent web_drill:SlowAgent`` with tests/web on the path;
    ``CANASTA_SLOW_AGENT_SECONDS`` sets the time (default 3)."""

    name = "slow"

    def __init__(self, rules: Any = None, seconds: float | None = None) -> None:
        import os

        default = float(os.environ.get("CANASTA_SLOW_AGENT_SECONDS", 3.0))
        self.seconds = default if seconds is None else seconds

    def act(self, observations: Any, legal_action_mask: Any, rng: np.random.Generator) -> Any:
        time.sleep(self.seconds)
        legal = np.flatnonzero(np.asarray(legal_action_mask)[0])
        return np.array([int(rng.choice(legal))])


def settled(client: Any, r: Any, status: int, *, wait: float = 60.0) -> dict[str, Any]:
    """The table of answer ``r`` (which must be ``status``), or, when the server answered 202
    (the agents are still thinking), the table asked for again until they are done."""
    if r.status_code == 202 and r.json().get("busy"):
        game_id = r.json()["id"]
        deadline = time.monotonic() + wait
        while True:
            time.sleep(0.05)
            r = client.get(f"/api/games/{game_id}")
            if not (r.status_code == 409 and r.json().get("busy")) or time.monotonic() > deadline:
                break
        status = 200
    assert r.status_code == status, (r.status_code, r.text)
    view: dict[str, Any] = r.json()
    return view


def play_random_game(client: Any, rng: random.Random, *, seed: int, seat: int = 0,
                     max_moves: int = 5000) -> dict[str, Any]:
    """Start a game and play random legal moves until it is over; returns the last view. Every
    answer must be a 2xx: an AssertionError names the first that is not."""
    view = settled(client, client.post("/api/games", json={"seed": seed, "seat": seat}), 201)
    for _ in range(max_moves):
        if view["game_over"]:
            return view
        assert view["your_turn"] and view["legal"], view
        move = rng.choice(view["legal"])
        r = client.post(f"/api/games/{view['id']}/actions",
                        json={"seat": view["seat"], "action": move["id"], "version": view["version"]})
        after = settled(client, r, 200)
        assert after["version"] > view["version"]
        view = after
    raise AssertionError(f"game {view['id']} not over after {max_moves} moves")


HostileRequest = Callable[[Any, dict[str, Any]], Any]
JSON_LINES = {"content-type": "application/x-ndjson"}  # how the replay page uploads a record file
FORM = {"content-type": "application/x-www-form-urlencoded"}  # what a form on another site can send
JSON = {"content-type": "application/json"}


def _move(view: dict[str, Any], **changes: Any) -> dict[str, Any]:
    body = {"seat": view["seat"], "action": view["legal"][0]["id"], "version": view["version"]}
    body.update(changes)
    return body


def _illegal_action(view: dict[str, Any]) -> int:
    legal = {m["id"] for m in view["legal"]}
    return next(a for a in range(NUM_ACTIONS) if a not in legal)


def hostile_kinds() -> dict[str, HostileRequest]:
    """Named tampered requests against the game of ``view``: each must be refused with a 4xx."""
    def act(client: Any, view: dict[str, Any], body: Any = None, **kw: Any) -> Any:
        return client.post(f"/api/games/{view['id']}/actions", json=body, **kw)

    return {
        "illegal action": lambda c, v: act(c, v, _move(v, action=_illegal_action(v))),
        "action out of range": lambda c, v: act(c, v, _move(v, action=NUM_ACTIONS + 7)),
        "negative action": lambda c, v: act(c, v, _move(v, action=-1)),
        "action as text": lambda c, v: act(c, v, _move(v, action=str(v["legal"][0]["id"]))),
        "action as float": lambda c, v: act(c, v, _move(v, action=float(v["legal"][0]["id"]))),
        "action true": lambda c, v: act(c, v, _move(v, action=True)),
        "huge action": lambda c, v: act(c, v, _move(v, action=10**30)),
        "wrong seat": lambda c, v: act(c, v, _move(v, seat=(v["seat"] + 1) % v["num_players"])),
        "seat as text": lambda c, v: act(c, v, _move(v, seat="0")),
        "stale version": lambda c, v: act(c, v, _move(v, version=v["version"] - 1)),
        "future version": lambda c, v: act(c, v, _move(v, version=v["version"] + 1)),
        "version missing": lambda c, v: act(c, v, {"seat": v["seat"], "action": v["legal"][0]["id"]}),
        "unknown key": lambda c, v: act(c, v, {**_move(v), "cheat": 1}),
        "unknown game": lambda c, v: c.post("/api/games/0123456789abcdef/actions", json=_move(v)),
        "malformed game id": lambda c, v: c.post("/api/games/..%2F..%2Fetc/actions", json=_move(v)),
        "long game id": lambda c, v: c.get("/api/games/" + "a" * 5000),
        "oversized body": lambda c, v: c.post(f"/api/games/{v['id']}/actions",
                                              content=json.dumps({**_move(v), "pad": "x" * 70_000}),
                                              headers={"content-type": "application/json"}),
        "malformed json": lambda c, v: c.post(f"/api/games/{v['id']}/actions", content=b'{"seat": 0,',
                                              headers={"content-type": "application/json"}),
        "json array": lambda c, v: act(c, v, [_move(v)]),
        "deep json": lambda c, v: c.post(f"/api/games/{v['id']}/actions", content="[" * 50_000,
                                         headers={"content-type": "application/json"}),
        "not json content type": lambda c, v: c.post(f"/api/games/{v['id']}/actions",
                                                     content=json.dumps(_move(v)),
                                                     headers={"content-type": "text/plain"}),
        "not utf-8": lambda c, v: c.post(f"/api/games/{v['id']}/actions", content=b"\xff\xfe{}",
                                         headers={"content-type": "application/json"}),
        "wrong method": lambda c, v: c.get(f"/api/games/{v['id']}/actions"),
        "put a game": lambda c, v: c.request("PUT", f"/api/games/{v['id']}", json=_move(v)),
        "new game bad seat": lambda c, v: c.post("/api/games", json={"seat": 99}),
        "new game bad seed": lambda c, v: c.post("/api/games", json={"seed": "x"}),
        "record path traversal": lambda c, v: c.get("/api/records/..%2Fgames%2Fx.jsonl"),
        "record not jsonl": lambda c, v: c.get("/api/records/games"),
        "record bad hand": lambda c, v: c.get("/api/records/nothing-here.jsonl/hands/0"),
        "record huge hand index": lambda c, v: c.get("/api/records/x.jsonl/hands/" + "9" * 5000),
        "new game from a form": lambda c, v: c.post("/api/games", content=b"", headers=FORM),
        "new game without a type": lambda c, v: c.post("/api/games"),
        "upload not records": lambda c, v: c.post("/api/records", content=b'{"format": "x"}\n',
                                                  headers=JSON_LINES),
        "upload as text": lambda c, v: c.post("/api/records", content=b"{}\n",
                                              headers={"content-type": "text/plain"}),
        "upload oversized": lambda c, v: c.post("/api/records", content=b"x" * (8 * 1024 * 1024 + 1),
                                                headers=JSON_LINES),
        **_more_kinds(),
    }


def _raw_move(v: dict[str, Any], text: str) -> bytes:
    """A move body with ``text`` (raw JSON) spliced in as its action."""
    return json.dumps(_move(v, action="@")).replace('"@"', text).encode()


def _more_kinds() -> dict[str, HostileRequest]:
    """Bodies strict JSON refuses (NaN, duplicate keys, lone surrogates, a BOM) and uploads that
    are not UTF-8 or hold NaN."""
    def raw(c: Any, v: dict[str, Any], body: bytes) -> Any:
        return c.post(f"/api/games/{v['id']}/actions", content=body, headers=JSON)

    return {
        "action NaN": lambda c, v: raw(c, v, _raw_move(v, "NaN")),
        "action 1e400": lambda c, v: raw(c, v, _raw_move(v, "1e400")),
        "action of 5000 digits": lambda c, v: raw(c, v, _raw_move(v, "7" * 5000)),
        "action a lone surrogate": lambda c, v: raw(c, v, _raw_move(v, '"\\ud800"')),
        "duplicate key": lambda c, v: raw(c, v, _raw_move(v, '0, "action": 1')),
        "BOM first": lambda c, v: raw(c, v, b"\xef\xbb\xbf" + json.dumps(_move(v)).encode()),
        "upload not utf-8": lambda c, v: c.post("/api/records", content=b"\xff\xfe\n", headers=JSON_LINES),
        "upload with NaN": lambda c, v: c.post("/api/records", content=b'{"a": NaN}\n', headers=JSON_LINES),
    }


Snapshot = tuple[str, dict[str, bytes]]


def snapshot(client: Any, game_id: str, games_dir: Path, *, only: bool = False) -> Snapshot:
    """The game as the page sees it and every saved game file (``only``: the game's own, when
    other games are played meanwhile): what a refused request must keep."""
    view = client.get(f"/api/games/{game_id}")
    assert view.status_code == 200, view.text
    files = {p.name: p.read_bytes() for p in sorted(games_dir.glob(f"{game_id}.json" if only else "*.json"))}
    return view.text, files


def hostile_requests(client: Any, view: dict[str, Any], games_dir: Path, count: int,
                     rng: random.Random, *, only: bool = False) -> Iterator[tuple[str, int]]:
    """Fire ``count`` hostile requests (kinds drawn in turn, then at random) at the game of
    ``view``, which must be the human's turn; yields (kind, status). Asserts each is a 4xx JSON
    error and that neither the game nor any saved file (``only``: its own) changed."""
    kinds = hostile_kinds()
    names = list(kinds)
    before = snapshot(client, view["id"], games_dir, only=only)
    for i in range(count):
        name = names[i] if i < len(names) else rng.choice(names)
        r = kinds[name](client, view)
        assert 400 <= r.status_code < 500, (name, r.status_code, r.text[:300])
        assert "error" in r.json(), (name, r.text[:300])
        assert snapshot(client, view["id"], games_dir, only=only) == before, name
        yield name, r.status_code
