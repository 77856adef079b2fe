"""Hostile requests to the web table's API (Starlette TestClient): bodies of every wrong type,
size, encoding and content type, game ids and record names with path tricks, uploads that do not
parse or do not replay. Each is refused with a 4xx one-line JSON error, and neither the game, the
record dir nor any file outside it changes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from web_drill import JSON_LINES, play_random_game, snapshot
from web_serve import files_of

UPLOAD_CAP = 256 * 1024
JSON = {"content-type": "application/json"}


def refused(r: Any, *statuses: int) -> str:
    """The answer is one of ``statuses`` with a one-line JSON error; returns the error."""
    assert r.status_code in statuses, (r.status_code, r.text[:300])
    assert r.headers["content-type"].startswith("application/json"), r.headers
    error = r.json()["error"]
    assert isinstance(error, str) and "\n" not in error and 0 < len(error) < 600, error
    assert "Traceback" not in r.text
    return error


@pytest.fixture
def table(make_client: Any, tmp_path: Path, outside: Path) -> dict[str, Any]:
    """A game at the human's turn, the record dir's and the outside folder's files before."""
    client = make_client(opponents=("random",), hands=1, max_upload=UPLOAD_CAP)
    view = client.post("/api/games", json={"seed": 5}).json()
    assert view["your_turn"]
    t = {"client": client, "view": view, "dir": tmp_path, "outside": outside}
    t["before"] = _state(t)
    return t


def _state(t: dict[str, Any]) -> Any:
    """The game as the page sees it, the record dir's files and the outside folder's."""
    game = snapshot(t["client"], t["view"]["id"], t["dir"] / "games")
    return game, files_of(t["dir"]), files_of(t["outside"])


def unchanged(t: dict[str, Any]) -> None:
    assert _state(t) == t["before"]


def _move(v: dict[str, Any], **changes: Any) -> bytes:
    body = {"seat": v["seat"], "action": v["legal"][0]["id"], "version": v["version"]}
    body.update(changes)
    return json.dumps(body).encode()


def _raw(v: dict[str, Any], key: str, text: str) -> bytes:
    """A move whose ``key`` is the raw JSON ``text`` (what json.dumps cannot write)."""
    body = {"seat": v["seat"], "action": v["legal"][0]["id"], "version": v["version"], key: "@"}
    return json.dumps(body).replace('"@"', text).encode()


Body = Callable[[dict[str, Any]], bytes]
MOVE_BODIES: dict[str, tuple[Body, int]] = {
    "seat as text": (lambda v: _move(v, seat="0"), 403),
    "seat as float": (lambda v: _move(v, seat=0.0), 403),
    "seat null": (lambda v: _move(v, seat=None), 403),
    "seat list": (lambda v: _move(v, seat=[0]), 403),
    "seat huge": (lambda v: _move(v, seat=10**30), 403),
    "seat negative": (lambda v: _move(v, seat=-1), 403),
    "seat true": (lambda v: _move(v, seat=True), 403),
    "seat html": (lambda v: _move(v, seat="<img src=x onerror=alert(1)>"), 403),
    "action null": (lambda v: _move(v, action=None), 400),
    "action object": (lambda v: _move(v, action={"id": 1}), 400),
    "action float": (lambda v: _move(v, action=1.5), 400),
    "action huge": (lambda v: _move(v, action=10**30), 422),
    "action negative": (lambda v: _move(v, action=-1), 422),
    "action 5000 digits": (lambda v: _raw(v, "action", "9" * 5000), 400),
    "action 1e400": (lambda v: _raw(v, "action", "1e400"), 400),
    "action NaN": (lambda v: _raw(v, "action", "NaN"), 400),
    "action Infinity": (lambda v: _raw(v, "action", "Infinity"), 400),
    "action -Infinity": (lambda v: _raw(v, "action", "-Infinity"), 400),
    "action lone surrogate": (lambda v: _raw(v, "action", '"\\ud800"'), 400),
    "version text": (lambda v: _move(v, version=str(v["version"])), 400),
    "version float": (lambda v: _move(v, version=float(v["version"])), 400),
    "version null": (lambda v: _move(v, version=None), 400),
    "version huge": (lambda v: _move(v, version=10**40), 409),
    "version negative": (lambda v: _move(v, version=-5), 409),
    "duplicate key": (lambda v: _move(v)[:-1] + b', "seat": 0}', 400),
    "unknown key": (lambda v: _move(v, cheat=1), 400),
    "empty key": (lambda v: _move(v, **{"": 1}), 400),
    "surrogate key": (lambda v: _move(v)[:-1] + b', "\\udc00": 1}', 400),
    "nothing": (lambda v: b"{}", 400),
    "array": (lambda v: b"[" + _move(v) + b"]", 400),
    "string": (lambda v: b'"move"', 400),
    "number": (lambda v: b"5", 400),
    "null": (lambda v: b"null", 400),
    "true": (lambda v: b"true", 400),
    "deep lists": (lambda v: b"[" * 60_000, 400),
    "deep objects": (lambda v: b'{"a":' * 12_000, 400),
    "nested 100 deep but valid": (lambda v: _raw(v, "x", "[" * 100 + "]" * 100), 400),
    "not utf-8": (lambda v: b"\xff\xfe{}", 400),
    "utf-16": (lambda v: _move(v).decode().encode("utf-16"), 400),
    "utf-8 BOM": (lambda v: b"\xef\xbb\xbf" + _move(v), 400),
    "NUL byte": (lambda v: _move(v) + b"\x00", 400),
    "cut short": (lambda v: _move(v)[:-3], 400),
    "trailing garbage": (lambda v: _move(v) + b"x", 400),
    "oversized": (lambda v: _move(v, pad="x" * 70_000), 413),
}


@pytest.mark.parametrize("name", list(MOVE_BODIES))
def test_a_hostile_move_body_is_refused_and_changes_nothing(table: dict[str, Any], name: str) -> None:
    make, status = MOVE_BODIES[name]
    r = table["client"].post(f"/api/games/{table['view']['id']}/actions", content=make(table["view"]),
                             headers=JSON)
    refused(r, status)
    unchanged(table)


NOT_JSON = [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data",
            "application/jsonx", "application/json-patch+json", "text/json", "application/x-ndjson"]


@pytest.mark.parametrize("kind", NOT_JSON)
def test_a_move_not_sent_as_json_is_415(table: dict[str, Any], kind: str | None) -> None:
    headers = {"content-type": kind} if kind else {}
    r = table["client"].post(f"/api/games/{table['view']['id']}/actions", content=_move(table["view"]),
                             headers=headers)
    refused(r, 415)
    unchanged(table)


NEW_GAMES: list[Any] = [{"seat": "0"}, {"seat": 2}, {"seat": -1}, {"seat": 10**30}, {"seat": 1.0},
                        {"seat": True}, {"seed": -1}, {"seed": 2**63}, {"seed": "1"}, {"seed": 1.5},
                        {"seed": 10**400}, {"players": 4}, [0], "seat", {"seat": None}]


@pytest.mark.parametrize("body", NEW_GAMES, ids=[str(i) for i in range(len(NEW_GAMES))])
def test_a_hostile_new_game_is_refused_and_saves_nothing(table: dict[str, Any], body: Any) -> None:
    refused(table["client"].post("/api/games", json=body), 400)
    unchanged(table)


@pytest.mark.parametrize("raw", [b'{"seed": ' + b"9" * 5000 + b"}", b'{"seed": NaN}',
                                 b'{"seat": 0, "seat": 1}', b'{"seed": 1e999}'])
def test_a_new_game_of_unreadable_numbers_is_400(table: dict[str, Any], raw: bytes) -> None:
    refused(table["client"].post("/api/games", content=raw, headers=JSON), 400)
    unchanged(table)


GAME_IDS = ["x" * 5000, "0123456789ABCDEF", "0123456789abcde", "0123456789abcdef0", "..%2F..%2Fsecret",
            "%00", "%E2%80%AE0123456789abcdef", "0123456789abcdeg", "%200123456789abcdef", "games",
            "0123456789abcdef.json", "..", "%2e%2e"]


@pytest.mark.parametrize("game_id", GAME_IDS)
def test_a_bad_game_id_is_404(table: dict[str, Any], game_id: str) -> None:
    refused(table["client"].get(f"/api/games/{game_id}"), 404)
    refused(table["client"].post(f"/api/games/{game_id}/actions", content=_move(table["view"]), headers=JSON),
            404)
    unchanged(table)


RECORD_PATHS = ["..%2Fsecret.txt", ".hidden.jsonl", "games", "x.json", "a" * 200 + ".jsonl", "%2e%2e.jsonl",
                "nothing.jsonl", "x.jsonl%00", "x.jsonl/hands/0", "..%2F..%2Foutside%2Ftarget.jsonl",
                "x.jsonl/hands/-1", "x.jsonl/hands/1e3", "x.jsonl/hands/" + "9" * 5000,
                "x.jsonl/hands/%D9%A3", "%E2%80%AE.jsonl"]


@pytest.mark.parametrize("path", RECORD_PATHS)
def test_a_bad_record_path_is_404(table: dict[str, Any], path: str) -> None:
    refused(table["client"].get(f"/api/records/{path}"), 404)
    unchanged(table)


@pytest.fixture(scope="module")
def good_record(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One hand record as the table writes it (a random hand played through the API)."""
    import random
    import warnings

    from canasta_env.rules import load_rules
    from train.web.app import create_app
    from train.web.game import AgentPool
    from train.web.store import GameStore

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient
    folder = tmp_path_factory.mktemp("record")
    store = GameStore(AgentPool(load_rules("classic_2p")), folder, opponents=["random"], partner=None,
                      hands=1, show_policy=True)
    with TestClient(create_app(store)) as client:
        view = play_random_game(client, random.Random(2), seed=2)
    record: dict[str, Any] = json.loads((folder / f"{view['id']}.jsonl").read_text())
    return record


def _line(record: dict[str, Any], **changes: Any) -> bytes:
    return (json.dumps({**record, **changes}) + "\n").encode()


Upload = Callable[[dict[str, Any]], bytes]
UPLOADS: dict[str, Upload] = {
    "not json": lambda r: b"hello\n",
    "not utf-8": lambda r: b"\xff\xfe\n",
    "json array": lambda r: b"[1, 2]\n",
    "empty": lambda r: b"",
    "blank lines": lambda r: b"\n\n   \n",
    "NaN in meta": lambda r: _line(r, meta={"x": 1}).replace(b'"x": 1', b'"x": NaN'),
    "Infinity in scores": lambda r: _line(r).replace(b'"scores_after": [', b'"scores_after": [Infinity, ', 1),
    "lone surrogate seat": lambda r: _line(r, seats=["\ud800", "random"]),
    "seat label of 10,000 characters": lambda r: _line(r, seats=["x" * 10_000, "random"]),
    "huge score": lambda r: _line(r, scores_after=[10**60, 0]),
    "huge deal id": lambda r: _line(r, deal={**r["deal"], "deal_id": [10**60, 0, 0]}),
    "negative hand number": lambda r: _line(r, hand_number=-1),
    "deep meta": lambda r: _line(r).replace(b'"meta": {', b'"meta": {"d":' + b"[" * 99 + b"]" * 99 + b",", 1),
    "duplicate key": lambda r: _line(r).replace(b'"end": ', b'"end": "x", "end": ', 1),
    "an action changed": lambda r: _line(r, actions=[r["actions"][0] ^ 1, *r["actions"][1:]],
                                         action_names=None),
    "scores it did not reach": lambda r: _line(r, scores_after=[s + 100 for s in r["scores_after"]]),
    "another end": lambda r: _line(r, end="step_cap" if r["end"] != "step_cap" else "went_out"),
    "one action more": lambda r: _line(r, actions=[*r["actions"], 0], action_names=None),
    "cut short": lambda r: _line(r, actions=r["actions"][:-5], action_names=None),
    "a bad second line": lambda r: _line(r) + b"x\n",
    "a hand that does not replay after a good one": lambda r: _line(r) + _line(r, scores_after=[1, 2]),
    "rules named by 10,000 characters": lambda r: _line(r, rules={**r["rules"], "name": "x" * 10_000}),
    "unknown key": lambda r: _line(r, cheat=True),
    "top choices with NaN": lambda r: _line(r).replace(b'"meta": {', b'"meta": {"p": NaN, ', 1),
    "record of another format": lambda r: _line(r, format="something-else"),
    "a line over the cap": lambda r: _line(r, meta={"pad": "x" * UPLOAD_CAP}),
}


@pytest.mark.parametrize("name", list(UPLOADS))
def test_an_upload_that_does_not_parse_or_replay_is_refused_and_not_stored(
        table: dict[str, Any], good_record: dict[str, Any], name: str) -> None:
    r = table["client"].post("/api/records", content=UPLOADS[name](good_record), headers=JSON_LINES)
    refused(r, 422, 413)
    assert not list(table["dir"].glob("upload-*"))
    unchanged(table)


@pytest.mark.parametrize("kind", [None, "text/plain", "application/x-www-form-urlencoded",
                                  "multipart/form-data", "application/octet-stream"])
def test_an_upload_not_sent_as_json_lines_is_415(table: dict[str, Any], good_record: dict[str, Any],
                                                 kind: str | None) -> None:
    headers = {"content-type": kind} if kind else {}
    refused(table["client"].post("/api/records", content=_line(good_record), headers=headers), 415)
    unchanged(table)


def test_a_good_upload_is_kept_and_its_twin_with_crlf_lines_too(table: dict[str, Any],
                                                              good_record: dict[str, Any]) -> None:
    client = table["client"]
    up = client.post("/api/records", content=_line(good_record), headers=JSON_LINES)
    assert up.status_code == 201 and up.json()["hands"] == 1
    crlf = client.post("/api/records", content=_line(good_record).replace(b"\n", b"\r\n"), headers=JSON_LINES)
    assert crlf.status_code == 201 and crlf.json()["file"] != up.json()["file"]
    assert files_of(table["outside"]) == table["before"][2]
