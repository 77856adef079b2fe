"""A scripted client of the web table's API: random legal games and hostile requests.

Shared by tests/web/test_web_api.py (a few dozen games in CI) and scripts/web_api_soak.py (1,000
games and 200 hostile requests). Works with any client that has ``get``/``post``/``request`` like
httpx's (Starlette's ``TestClient``, or ``httpx.Client`` against a running server).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from canasta_env.engine import NUM_ACTIONS


def play_random_game(client: Any, rng: random.Random, *, seed: int, seat: int = 0,
                     max_moves: int = 5000) -> dict[str, Any]:
    """Start a game and play random legal moves until it is over; returns the last view. Every
    answer must be a 2xx: an AssertionError names the first that is not."""
    r = client.post("/api/games", json={"seed": seed, "seat": seat})
    assert r.status_code == 201, r.text
    view = r.json()
    for _ in range(max_moves):
        if view["game_over"]:
            return view
        assert view["your_turn"] and view["legal"], view
        move = rng.choice(view["legal"])
        r = client.post(f"/api/games/{view['id']}/actions",
                        json={"seat": view["seat"], "action": move["id"], "version": view["version"]})
        assert r.status_code == 200, (r.status_code, r.text)
        after = r.json()
        assert after["version"] > view["version"]
        view = after
    raise AssertionError(f"game {view['id']} not over after {max_moves} moves")


HostileRequest = Callable[[Any, dict[str, Any]], Any]
JSON_LINES = {"content-type": "application/x-ndjson"}  # how the replay page uploads a record file
FORM = {"content-type": "application/x-www-form-urlencoded"}  # what a form on another site can send


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
    }


def snapshot(client: Any, game_id: str, games_dir: Path) -> tuple[str, dict[str, bytes]]:
    """The game as the page sees it and every saved game file: what a refused request must keep."""
    view = client.get(f"/api/games/{game_id}")
    assert view.status_code == 200, view.text
    files = {p.name: p.read_bytes() for p in sorted(games_dir.glob("*.json"))}
    return view.text, files


def hostile_requests(client: Any, view: dict[str, Any], games_dir: Path, count: int,
                     rng: random.Random) -> Iterator[tuple[str, int]]:
    """Fire ``count`` hostile requests (kinds drawn in turn, then at random) at the game of
    ``view``, which must be the human's turn; yields (kind, status). Asserts each is a 4xx JSON
    error and that neither the game nor any saved file changed."""
    kinds = hostile_kinds()
    names = list(kinds)
    before = snapshot(client, view["id"], games_dir)
    for i in range(count):
        name = names[i] if i < len(names) else rng.choice(names)
        r = kinds[name](client, view)
        assert 400 <= r.status_code < 500, (name, r.status_code, r.text[:300])
        assert "error" in r.json(), (name, r.text[:300])
        assert snapshot(client, view["id"], games_dir) == before, name
        yield name, r.status_code
