"""A hostile or broken record dir, and the server's caps (Starlette TestClient, plus one ASGI call).

Links planted in the record dir are never followed (a record file, a game's record file about to be
appended to, an upload's name); a record dir that goes away is made again, a file in its place is a
clear 503; the disk of games and uploads stays under its cap (the oldest finished removed first),
the games in memory under theirs; a slow agent answers 202 "busy" and stalls no other game; a
client that leaves mid-body is one log line."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import random
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from test_web_hostile_requests import refused
from web_drill import JSON_LINES, SlowAgent, play_random_game
from web_serve import files_of


def _finished_record(make_client: Any, folder: Path) -> bytes:
    client = make_client(opponents=("random",), hands=1, record_dir=folder)
    view = play_random_game(client, random.Random(1), seed=1)
    return (folder / f"{view['id']}.jsonl").read_bytes()


@pytest.mark.parametrize("kind", ["link outside", "link to a record outside", "fifo", "folder"])
def test_a_record_file_that_is_not_a_regular_file_is_403_and_not_listed(
        make_client: Any, tmp_path: Path, outside: Path, kind: str) -> None:
    client = make_client()
    (outside / "good.jsonl").write_bytes(_finished_record(make_client, tmp_path / "elsewhere"))
    before = files_of(outside)
    planted = tmp_path / "planted.jsonl"
    if kind == "link outside":
        planted.symlink_to(outside / "secret.txt")
    elif kind == "link to a record outside":
        planted.symlink_to(outside / "good.jsonl")
    elif kind == "fifo":
        os.mkfifo(planted)
    else:
        planted.mkdir()
    assert "planted.jsonl" not in {f["file"] for f in client.get("/api/records").json()["files"]}
    error = refused(client.get("/api/records/planted.jsonl"), 403)
    refused(client.get("/api/records/planted.jsonl/hands/0"), 403)
    assert "root:" not in error and files_of(outside) == before


def test_a_games_record_file_planted_as_a_link_is_never_appended_to(
        make_client: Any, tmp_path: Path, outside: Path) -> None:
    client = make_client(opponents=("random",), hands=1)
    view = client.post("/api/games", json={"seed": 1}).json()
    (tmp_path / f"{view['id']}.jsonl").symlink_to(outside / "target.jsonl")
    before, rng, answers = files_of(outside), random.Random(1), []
    for _ in range(2000):
        move = {"seat": 0, "action": rng.choice(view["legal"])["id"], "version": view["version"]}
        r = client.post(f"/api/games/{view['id']}/actions", json=move)
        answers.append(r.status_code)
        if r.status_code != 200:
            break
        view = r.json()
    assert "symbolic link" in refused(r, 403)
    assert files_of(outside) == before
    assert client.get(f"/api/games/{view['id']}").json()["version"] == view["version"]  # the move undone


def test_an_upload_whose_name_is_a_planted_link_replaces_the_link_not_its_target(
        make_client: Any, tmp_path: Path, outside: Path) -> None:
    body = _finished_record(make_client, tmp_path / "elsewhere")
    client = make_client()
    name = f"upload-{hashlib.sha256(body).hexdigest()[:16]}.jsonl"
    (tmp_path / name).symlink_to(outside / "target.jsonl")
    before = files_of(outside)
    assert client.post("/api/records", content=body, headers=JSON_LINES).status_code == 201
    assert not (tmp_path / name).is_symlink() and (tmp_path / name).read_bytes() == body
    assert files_of(outside) == before


def test_a_record_dir_that_goes_away_is_made_again(make_client: Any, tmp_path: Path) -> None:
    record_dir = tmp_path / "records"
    client = make_client(record_dir=record_dir)
    shutil.rmtree(record_dir)
    r = client.post("/api/games", json={"seed": 1})
    assert r.status_code == 201, r.text
    assert (record_dir / "games" / f"{r.json()['id']}.json").is_file()
    shutil.rmtree(record_dir / "games")
    view = r.json()
    move = {"seat": 0, "action": view["legal"][0]["id"], "version": view["version"]}
    assert client.post(f"/api/games/{view['id']}/actions", json=move).status_code == 200


@pytest.mark.parametrize("what", ["games folder is a file", "games folder is a link outside",
                                  "record dir is a file"])
def test_a_record_dir_that_cannot_be_used_is_a_clear_503_and_changes_nothing(
        make_client: Any, tmp_path: Path, outside: Path, what: str) -> None:
    record_dir = tmp_path / "records"
    client = make_client(record_dir=record_dir)
    view = client.post("/api/games", json={"seed": 1}).json()
    before = files_of(outside)
    if what == "record dir is a file":
        shutil.rmtree(record_dir)
        record_dir.write_text("not a folder")
    else:
        shutil.rmtree(record_dir / "games")
        if what == "games folder is a file":
            (record_dir / "games").write_text("not a folder")
        else:
            (record_dir / "games").symlink_to(outside)
    assert "move it away" in refused(client.post("/api/games", json={"seed": 2}), 503)
    move = {"seat": 0, "action": view["legal"][0]["id"], "version": view["version"]}
    refused(client.post(f"/api/games/{view['id']}/actions", json=move), 503)
    refused(client.post("/api/records", content=b"{}\n", headers=JSON_LINES), 503, 422)
    assert client.get(f"/api/games/{view['id']}").json()["version"] == view["version"]  # unchanged
    assert files_of(outside) == before


def test_finished_games_are_removed_oldest_first_to_stay_under_the_disk_cap(
        make_client: Any, tmp_path: Path) -> None:
    (tmp_path / "mine.jsonl").write_text("a record copied here by hand: never counted or removed\n")
    client = make_client(opponents=("random",), hands=1, max_disk=120_000)
    ids = [play_random_game(client, random.Random(g), seed=g)["id"] for g in range(12)]
    store = client.store
    assert store.quota.usage() <= 120_000 and store.quota.removed > 0
    assert client.get(f"/api/games/{ids[-1]}").status_code == 200  # the newest kept
    assert client.get(f"/api/games/{ids[0]}").status_code == 404  # the oldest removed, records too
    assert not (tmp_path / f"{ids[0]}.jsonl").exists()
    assert (tmp_path / "mine.jsonl").exists()


def test_uploads_are_removed_oldest_first_to_stay_under_the_disk_cap(make_client: Any,
                                                                      tmp_path: Path) -> None:
    record = json.loads(_finished_record(make_client, tmp_path / "elsewhere"))
    size = len(json.dumps(record)) + 100
    client = make_client(max_disk=4 * size)
    names = []
    for k in range(10):
        body = json.dumps({**record, "meta": {**record["meta"], "copy": k}}) + "\n"
        up = client.post("/api/records", content=body, headers=JSON_LINES)
        assert up.status_code == 201, up.text
        names.append(up.json()["file"])
        time.sleep(0.01)  # distinct modification times
    kept = {p.name for p in tmp_path.glob("upload-*.jsonl")}
    assert names[-1] in kept and names[0] not in kept and len(kept) <= 4
    assert client.store.quota.usage() <= 4 * size


def test_a_full_record_dir_of_games_in_play_is_a_clear_503(make_client: Any, tmp_path: Path) -> None:
    client = make_client(opponents=("random",), hands=None, max_disk=1000)
    assert "record dir is full" in refused(client.post("/api/games", json={"seed": 1}), 503)


def test_games_in_memory_stay_under_their_cap_and_the_others_are_read_back(make_client: Any) -> None:
    client = make_client(opponents=("random",), hands=1, max_games=3)
    views = [client.post("/api/games", json={"seed": s}).json() for s in range(8)]
    assert client.store.held() <= 3
    for view in views:
        assert client.get(f"/api/games/{view['id']}").json() == view
    assert client.store.held() <= 3


def test_a_slow_agent_answers_busy_and_stalls_no_other_game(make_client: Any) -> None:
    from canasta_env.rules import load_rules
    from train.web.game import AgentPool

    pool = AgentPool(load_rules("classic_2p"))
    pool._made["slow"] = SlowAgent(seconds=1.0)
    client = make_client(opponents=("random",), pool=pool, think_seconds=0.2)
    client.store.agents.add("slow")
    client.store.opponents_for = lambda seed: ["slow"] if seed == 1 else ["random"]
    start = time.monotonic()
    slow = client.post("/api/games", json={"seed": 1})  # seed 1: the slow agent's game
    assert slow.status_code in (201, 202)
    if slow.status_code == 201:  # the human moves first: make the agent think
        view = slow.json()
        slow = client.post(f"/api/games/{view['id']}/actions",
                           json={"seat": 0, "action": view["legal"][0]["id"], "version": view["version"]})
    assert slow.status_code == 202 and slow.json()["busy"] is True and time.monotonic() - start < 1.5
    game_id = slow.json()["id"]
    busy = client.get(f"/api/games/{game_id}")
    assert busy.status_code == 409 and busy.json()["busy"] and busy.headers["retry-after"] == "1"
    started = time.monotonic()
    other = play_random_game(client, random.Random(3), seed=2)  # served while the slow one thinks
    assert other["game_over"] and time.monotonic() - started < 30
    deadline = time.monotonic() + 60
    while client.get(f"/api/games/{game_id}").status_code == 409 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert client.get(f"/api/games/{game_id}").status_code == 200


def test_a_client_that_leaves_mid_body_is_one_log_line(make_client: Any,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    app = make_client().app
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
             "scheme": "http", "path": "/api/records", "raw_path": b"/api/records", "query_string": b"",
             "root_path": "", "client": ("127.0.0.1", 5555), "server": ("127.0.0.1", 80),
             "headers": [(b"host", b"testserver"), (b"content-type", b"application/x-ndjson"),
                         (b"content-length", b"100000")]}
    messages = iter([{"type": "http.request", "body": b'{"format"', "more_body": True},
                     {"type": "http.disconnect"}])
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return next(messages)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    with caplog.at_level(logging.WARNING, logger="train.web"):
        asyncio.run(app(scope, receive, send))
    lines = [r for r in caplog.records if r.name == "train.web"]
    assert len(lines) == 1 and "left before sending the whole body" in lines[0].getMessage()
    assert lines[0].exc_info is None
