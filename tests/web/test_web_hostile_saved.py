"""Hostile saved games: a file under ``<record dir>/games`` edited by anyone who can write the record
dir. Each is refused (410 cannot be restored, 403 a link or not a regular file) with a one-line
JSON error before it is used: numpy's generator never sees a state it cannot hold (an uncaught
``OverflowError`` was a 500), the page never gets a log entry it cannot draw or that holds markup
where a number belongs, and no file outside the record dir is read into an answer or changed."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_web_hostile_requests import refused
from web_serve import files_of

PAYLOAD = '<img src=x onerror="window.__pwned=1">'
Change = Callable[[dict[str, Any]], Any]


def _rng(**state: Any) -> Change:
    def change(d: dict[str, Any]) -> None:
        d["rng"]["state"].update(state)
    return change


def _rng_key(key: str, value: Any) -> Change:
    def change(d: dict[str, Any]) -> None:
        if value is ...:
            del d["rng"][key]
        else:
            d["rng"][key] = value
    return change


def _log(**entry: Any) -> Change:
    def change(d: dict[str, Any]) -> None:
        d["log"][0].update({k: v for k, v in entry.items() if v is not ...})
        for k in [k for k, v in entry.items() if v is ...]:
            del d["log"][0][k]
    return change


def _set(**fields: Any) -> Change:
    return lambda d: d.update(fields)


CHANGES: dict[str, Change] = {
    "rng state -1": _rng(state=-1),
    "rng state 10**60": _rng(state=10**60),
    "rng state 2**128": _rng(state=2**128),
    "rng increment -1": _rng(inc=-1),
    "rng increment 2**200": _rng(inc=2**200),
    "rng state as text": _rng(state="1"),
    "rng state true": _rng(state=True),
    "rng without its increment": lambda d: d["rng"]["state"].pop("inc"),
    "rng with one more key": _rng(evil=1),
    "rng has_uint32 2": _rng_key("has_uint32", 2),
    "rng uinteger 2**32": _rng_key("uinteger", 2**32),
    "rng uinteger -1": _rng_key("uinteger", -1),
    "rng of another generator": _rng_key("bit_generator", "MT19937"),
    "rng without has_uint32": _rng_key("has_uint32", ...),
    "rng a list": _set(rng=[1, 2]),
    "log seat as markup": _log(seat=PAYLOAD),
    "log seat 99": _log(seat=99),
    "log seat -2": _log(seat=-2),
    "log top zzz": _log(top="zzz"),
    "log top numbers": _log(top=[[1, 2]]),
    "log top probability 2": _log(top=[["DRAW_STOCK", 2]]),
    "log top unknown move": _log(top=[[PAYLOAD, 0.5]]),
    "log top of 50 choices": _log(top=[["DRAW_STOCK", None]] * 50),
    "log who of 10,000 characters": _log(who="x" * 10_000),
    "log who a number": _log(who=5),
    "log who a lone surrogate": _log(who="\ud800"),
    "log text null": _log(text=None),
    "log name markup": _log(name="<script>"),
    "log drew text": _log(drew="x"),
    "log drew numbers": _log(drew=[1]),
    "log drew unknown cards": _log(drew=["ZZ"]),
    "log entry without text": _log(text=...),
    "log entry with another key": _log(html=PAYLOAD),
    "log entry i 10**9": _log(i=10**9),
    "log entry hand 0": _log(hand=0),
    "log entry a string": lambda d: d["log"].__setitem__(0, "x"),
    "log entry null": lambda d: d["log"].__setitem__(0, None),
    "log longer than the game": lambda d: d["log"].extend(d["log"] * (2 * len(d["actions"]) + 2)),
    "hints zzz": lambda d: d.update(hints=["zzz"] * len(d["actions"])),
    "hints one short": lambda d: d.update(hints=d["hints"][:-1]),
    "actions -1": lambda d: d.update(actions=[-1] + d["actions"][1:]),
    "actions 10**60": lambda d: d.update(actions=[10**60] + d["actions"][1:]),
    "actions past the last id": lambda d: d.update(actions=[106] + d["actions"][1:]),
    "actions 300,000": lambda d: d.update(actions=[0] * 300_000, hints=[None] * 300_000),
    "seed 2**64": _set(seed=2**64),
    "hands 10**9": _set(hands=10**9),
    "hands_recorded -1": _set(hands_recorded=-1),
    "over yes": _set(over="yes"),
    "one more key": _set(evil=PAYLOAD),
    "version 2": _set(version=2),
}


@pytest.fixture
def saved(make_client: Any, tmp_path: Path, outside: Path) -> dict[str, Any]:
    client = make_client(opponents=("random",), hands=1, show_policy=True)
    view = client.post("/api/games", json={"seed": 3}).json()
    for _ in range(3):  # a log, hints and the agents' random stream to tamper with
        move = {"seat": 0, "action": view["legal"][-1]["id"], "version": view["version"]}
        view = client.post(f"/api/games/{view['id']}/actions", json=move).json()
    path = tmp_path / "games" / f"{view['id']}.json"
    return {"view": view, "path": path, "good": path.read_bytes(), "outside": outside,
            "outside_before": files_of(outside), "make": make_client, "dir": tmp_path}


def _restart_and_ask(s: dict[str, Any]) -> Any:
    return s["make"](opponents=("random",), hands=1, show_policy=True).get(f"/api/games/{s['view']['id']}")


def _after(s: dict[str, Any], r: Any, *statuses: int) -> None:
    error = refused(r, *statuses)
    assert "root:" not in r.text and "Traceback" not in r.text, error
    assert files_of(s["outside"]) == s["outside_before"]
    if s["path"].is_symlink() or not s["path"].is_file():
        s["path"].unlink() if not s["path"].is_dir() else s["path"].rmdir()
    s["path"].write_bytes(s["good"])
    assert _restart_and_ask(s).json() == s["view"]  # the good file still restores


@pytest.mark.parametrize("name", list(CHANGES))
def test_a_tampered_saved_game_is_410_before_it_is_used(saved: dict[str, Any], name: str) -> None:
    data = json.loads(saved["good"])
    assert "rng" in data and data["log"] and data["hints"]
    changed = copy.deepcopy(data)
    CHANGES[name](changed)
    saved["path"].write_text(json.dumps(changed))
    r = _restart_and_ask(saved)
    _after(saved, r, 410)
    assert "cannot be restored" in r.json()["error"]


RAW: dict[str, Callable[[bytes], bytes]] = {
    "a BOM first": lambda good: b"\xef\xbb\xbf" + good,
    "UTF-16": lambda good: good.decode().encode("utf-16"),
    "not UTF-8": lambda good: good.replace(b'"format"', b'"\xff"', 1),
    "NaN": lambda good: good.replace(b'"seed":3', b'"seed":NaN', 1),
    "a duplicate key": lambda good: good.replace(b'"seed":3', b'"seed":3,"seed":4', 1),
    "an integer of 5,000 digits": lambda good: good.replace(b'"seed":3', b'"seed":' + b"9" * 5000, 1),
    "nesting 100,000 deep": lambda good: b"[" * 100_000,
    "nothing": lambda good: b"",
    "a NUL byte": lambda good: good + b"\x00",
    "cut short": lambda good: good[: len(good) // 2],
    "33 MiB": lambda good: good[:-1] + b', "pad": "' + b"x" * (33 << 20) + b'"}',
}


@pytest.mark.parametrize("name", list(RAW))
def test_a_saved_game_that_is_not_strict_json_is_410(saved: dict[str, Any], name: str) -> None:
    saved["path"].write_bytes(RAW[name](saved["good"]))
    _after(saved, _restart_and_ask(saved), 410)


@pytest.mark.parametrize("kind", ["link to a file outside", "link to a saved game outside", "folder", "fifo"])
def test_a_saved_game_that_is_not_a_regular_file_is_403_and_never_read(saved: dict[str, Any],
                                                                        kind: str) -> None:
    path, outside = saved["path"], saved["outside"]
    path.unlink()
    if kind == "link to a file outside":
        path.symlink_to(outside / "secret.txt")
    elif kind == "link to a saved game outside":
        (outside / "game.json").write_bytes(saved["good"])
        saved["outside_before"] = files_of(outside)
        path.symlink_to(outside / "game.json")
    elif kind == "folder":
        path.mkdir()
    else:
        os.mkfifo(path)  # a reader that waited for a writer would hang the server
    _after(saved, _restart_and_ask(saved), 403)


def test_a_saved_game_replaced_by_a_link_is_saved_as_a_file_never_through_the_link(
        saved: dict[str, Any], make_client: Any) -> None:
    client = make_client(opponents=("random",), hands=1, show_policy=True)
    view = client.get(f"/api/games/{saved['view']['id']}").json()  # now held in memory
    saved["path"].unlink()
    saved["path"].symlink_to(saved["outside"] / "victim.json")
    move = {"seat": 0, "action": view["legal"][0]["id"], "version": view["version"]}
    assert client.post(f"/api/games/{view['id']}/actions", json=move).status_code == 200
    assert not saved["path"].is_symlink() and json.loads(saved["path"].read_bytes())["id"] == view["id"]
    assert files_of(saved["outside"]) == saved["outside_before"]
