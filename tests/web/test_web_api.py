"""The web table's HTTP API (Starlette TestClient): random legal games through HTTP, hostile
requests refused without a state change, games that survive a restart, records that replay."""

from __future__ import annotations

import json
import random
import socket
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from web_drill import JSON_LINES, hostile_requests, play_random_game

from canasta_env.records import read_records, replay
from scripts.web_local import free_port

GAMES = 30  # scripts/web_api_soak.py plays 1,000


def test_random_legal_games_through_http_have_no_errors_and_replay(make_client: Any, tmp_path: Path) -> None:
    client = make_client(opponents=("random",), hands=1)
    rng = random.Random(37)
    ids = []
    for seed in range(GAMES):
        view = play_random_game(client, rng, seed=seed)
        assert view["game_over"] and view["last_hand"]["record_file"] == f"{view['id']}.jsonl"
        assert view["legal"] == [] and not view["your_turn"]
        ids.append(view["id"])
    for game_id in ids:
        (record,) = read_records(tmp_path / f"{game_id}.jsonl")
        assert record.seats == ["human", "random"] and record.meta["source"] == "canasta serve"
        replay(record)  # the engine replays the recorded actions to the recorded outcome
    listed = {f["file"]: f["hands"] for f in client.get("/api/records").json()["files"]}
    assert listed == {f"{i}.jsonl": 1 for i in ids}


def test_hostile_requests_get_4xx_and_change_nothing(make_client: Any, tmp_path: Path) -> None:
    client = make_client(opponents=("random",), hands=1)
    view = client.post("/api/games", json={"seed": 5}).json()
    statuses = Counter(status for _, status in
                       hostile_requests(client, view, tmp_path / "games", 200, random.Random(1)))
    assert sum(statuses.values()) == 200
    assert {400, 403, 404, 405, 409, 413, 415, 422} <= set(statuses)
    move = {"seat": 0, "action": view["legal"][0]["id"], "version": view["version"]}
    assert client.post(f"/api/games/{view['id']}/actions", json=move).status_code == 200  # still playable


def test_a_move_is_refused_when_it_is_not_the_humans_turn_or_the_game_is_over(make_client: Any) -> None:
    client = make_client(opponents=("random",), hands=1)
    view = play_random_game(client, random.Random(0), seed=3)
    move = {"seat": 0, "action": 0, "version": view["version"]}
    r = client.post(f"/api/games/{view['id']}/actions", json=move)
    assert r.status_code == 409 and "over" in r.json()["error"]


def test_a_game_survives_a_page_reload_and_a_server_restart(make_client: Any, tmp_path: Path) -> None:
    client = make_client(opponents=("heuristic",), hands=None)
    rng = random.Random(2)
    view = client.post("/api/games", json={"seed": 11}).json()
    for _ in range(12):
        move = rng.choice(view["legal"])["id"]
        view = client.post(f"/api/games/{view['id']}/actions",
                           json={"seat": 0, "action": move, "version": view["version"]}).json()
    assert client.get(f"/api/games/{view['id']}").json() == view  # a reload
    restarted = make_client(opponents=("heuristic",), hands=None)
    assert restarted.get(f"/api/games/{view['id']}").json() == view
    move = view["legal"][0]["id"]
    r = restarted.post(f"/api/games/{view['id']}/actions", json={"seat": 0, "action": move,
                                                                  "version": view["version"]})
    assert r.status_code == 200 and r.json()["version"] > view["version"]
    other_rules = make_client(rules="classic_4p", opponents=("random",))
    assert other_rules.get(f"/api/games/{view['id']}").status_code == 410


def test_four_players_partner_agent_policy_hints_and_the_agents_moves_in_the_log(make_client: Any,
                                                                                  tmp_path: Path) -> None:
    client = make_client(rules="classic_4p", opponents=("random", "greedy"), partner="heuristic",
                         hands=1, show_policy=True)
    config = client.get("/api/config").json()
    assert config["num_players"] == 4 and config["show_policy"] is True
    view = client.post("/api/games", json={"seed": 4, "seat": 1}).json()
    assert [p["label"] for p in view["players"]] == ["random", "human", "greedy", "heuristic"]
    assert view["seat"] == 1 and view["hint"] and view["hint"][0][1] is None  # a rule agent's pick
    assert ["hand" in p for p in view["players"]] == [False, True, False, False]  # only the human's
    final = play_random_game_from(client, view, random.Random(9))
    agent_moves = [e for e in final["log"] if e["seat"] not in (-1, 1)]
    assert agent_moves and all(e["top"] and e["top"][0][0] == e["name"] for e in agent_moves)
    (record,) = read_records(tmp_path / f"{view['id']}.jsonl")
    top = record.meta["top_moves"]
    assert len(top) == len(record.actions)
    frames = client.get(f"/api/records/{view['id']}.jsonl/hands/0").json()
    assert len(frames["frames"]) == len(record.actions) + 1 and frames["matches"]
    assert all("hand" in p for p in frames["frames"][0]["players"])  # replay is omniscient
    assert [m["top"] for m in frames["moves"]] == top


def play_random_game_from(client: Any, view: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    while not view["game_over"]:
        move = rng.choice(view["legal"])["id"]
        r = client.post(f"/api/games/{view['id']}/actions",
                        json={"seat": view["seat"], "action": move, "version": view["version"]})
        assert r.status_code == 200, r.text
        view = r.json()
    return view


def test_clicking_a_card_offers_the_moves_that_use_it(make_client: Any) -> None:
    client = make_client(opponents=("random",))
    view = client.post("/api/games", json={"seed": 8}).json()
    for _ in range(40):
        for move in view["legal"]:
            name = move["name"]
            if name.startswith("DISCARD_"):
                assert move["cards"] == [name.removeprefix("DISCARD_")]
            elif name.startswith("MELD_NNN_"):
                assert move["cards"] == [name.removeprefix("MELD_NNN_")] * 3
            elif name == "DRAW_STOCK":
                assert move["cards"] == []
            hand = Counter(view["players"][0]["hand"])
            if not name.startswith("TAKE_PILE"):
                assert not Counter(move["cards"]) - hand, (name, move["cards"], hand)
        view = play_one(client, view)
        if view["game_over"]:
            break


def play_one(client: Any, view: dict[str, Any]) -> dict[str, Any]:
    move = view["legal"][-1]["id"]  # discards and melds more often than draws
    return client.post(f"/api/games/{view['id']}/actions",
                       json={"seat": 0, "action": move, "version": view["version"]}).json()


def test_replay_routes_list_read_and_upload_record_files(make_client: Any, tmp_path: Path) -> None:
    client = make_client(opponents=("random",))
    view = play_random_game(client, random.Random(4), seed=1)
    name = f"{view['id']}.jsonl"
    hands = client.get(f"/api/records/{name}").json()["hands"]
    assert len(hands) == 1 and hands[0]["seats"] == ["human", "random"]
    assert client.get(f"/api/records/{name}/hands/1").status_code == 404
    body = (tmp_path / name).read_bytes()
    assert client.post("/api/records", content=body).status_code == 415  # a form on another site
    assert client.post("/api/records", content=body, headers={"content-type": "text/plain"}).status_code \
        == 415
    assert not list(tmp_path.glob("upload-*"))
    up = client.post("/api/records", content=body, headers=JSON_LINES)
    assert up.status_code == 201 and up.json()["hands"] == 1
    again = client.post("/api/records", content=body, headers=JSON_LINES).json()
    assert again == up.json()  # named by content: one copy
    assert client.get(f"/api/records/{up.json()['file']}/hands/0").json()["moves"] == \
        client.get(f"/api/records/{name}/hands/0").json()["moves"]
    tampered = body.replace(b'"actions":[', b'"actions":[0,', 1)
    tampered_up = client.post("/api/records", content=tampered, headers=JSON_LINES)
    assert tampered_up.status_code == 422  # names and actions disagree
    (tmp_path / "broken.jsonl").write_text("not json\n")
    assert client.get("/api/records/broken.jsonl").status_code == 422
    assert not list(tmp_path.glob("*.part"))


@pytest.mark.parametrize(("argv", "message"), [
    (["--opponent", "no_such_agent"], "unknown agent"),
    (["--rules", "no_such_rules"], "no_such_rules"),
    (["--hands", "0"], "--hands must be at least 1"),
])
def test_bad_cli_input_is_one_line_error(argv: list[str], message: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    from train.cli.main import main

    code = main(["serve", "--port", str(free_port()), "--record-dir", str(tmp_path / "r"), *argv])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("canasta serve: error: ") and message in err
    assert len(err.strip().splitlines()) == 1


def test_a_port_in_use_is_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from train.cli.main import main

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code = main(["serve", "--port", str(port), "--record-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert err == f"canasta serve: error: 127.0.0.1:{port} is in use; choose another with --port\n"


def _tampered(client: Any, tmp_path: Path, game_id: str, **changes: Any) -> Any:
    """Rewrite saved game ``game_id`` with ``changes`` (a key set to ``...`` is removed; bytes
    replace the whole file), then ask a restarted server for it."""
    path = tmp_path / "games" / f"{game_id}.json"
    good = path.read_bytes()
    raw = changes.pop("raw", None)
    data = {k: v for k, v in {**json.loads(good), **changes}.items() if v is not ...}
    path.write_bytes(raw if raw is not None else json.dumps(data).encode())
    try:
        return client.get(f"/api/games/{game_id}")
    finally:
        path.write_bytes(good)


@pytest.mark.parametrize("changes", [
    {"raw": b"[1, 2]"},
    {"raw": b"[" * 100_000},
    {"raw": b"\xff\xfe"},
    {"id": "../../escaped"},
    {"id": "0123456789abcdef"},
    {"rules": "/etc/passwd"},
    {"rules": ...},
    {"seats": [None, "/tmp/a-checkpoint.pt"]},
    {"seats": ["random", "random"]},
    {"seats": [None]},
    {"human": 5},
    {"human": 1},
    {"human": True},
    {"hands": "x"},
    {"hands": 0},
    {"seed": -1},
    {"actions": [9999], "hints": [None]},
    {"actions": "0"},
    {"hints": [None]},
    {"log": 5},
    {"log": ["x"]},
    {"hands_recorded": [1]},
    {"show_policy": "yes"},
    {"rng": {"bit_generator": "MT19937"}},
    {"rng": 7},
])
def test_a_tampered_saved_game_is_a_clear_410_and_never_runs_code_or_escapes(
        make_client: Any, tmp_path: Path, changes: dict[str, Any]) -> None:
    client = make_client(opponents=("random",), hands=1)
    view = client.post("/api/games", json={"seed": 3}).json()
    r = _tampered(make_client(opponents=("random",), hands=1), tmp_path, view["id"], **changes)
    assert r.status_code == 410, r.text
    assert f"game {view['id']} cannot be restored: " in r.json()["error"]
    assert "root:" not in r.text  # a file the tampered game names is never read into the answer
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == [f"{view['id']}.json"]
    assert not (tmp_path.parent / "escaped.jsonl").exists()
    assert make_client(opponents=("random",), hands=1).get(f"/api/games/{view['id']}").json() == view


def test_a_game_restored_from_disk_plays_on_as_the_game_kept_in_memory(make_client: Any) -> None:
    """The agents' random stream is part of the saved game: a restart changes none of their moves."""
    def play(client: Any, view: dict[str, Any], moves: int) -> dict[str, Any]:
        for _ in range(moves):
            if view["game_over"]:
                break
            view = play_one(client, view)
        return view

    first = make_client(opponents=("random",), hands=1)
    view = play(first, first.post("/api/games", json={"seed": 6}).json(), 20)
    assert not view["game_over"]
    restarted = play(make_client(opponents=("random",), hands=1), view, 60)
    steady = make_client(opponents=("random",), hands=1)
    unbroken = play(steady, steady.post("/api/games", json={"seed": 6}).json(), 80)
    same = ("id", "record_file", "last_hand")
    assert {k: v for k, v in restarted.items() if k not in same} == \
        {k: v for k, v in unbroken.items() if k not in same}


def test_a_saved_game_naming_an_agent_the_server_was_not_started_with_imports_nothing(
        make_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "planted_agent.py").write_text("import pathlib\n"
                                               f"pathlib.Path({str(tmp_path / 'ran')!r}).touch()\n"
                                               "def agent(rules):\n    return None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    client = make_client(opponents=("random",), hands=1)
    view = client.post("/api/games", json={"seed": 3}).json()
    r = _tampered(make_client(opponents=("random",), hands=1), tmp_path, view["id"],
                  seats=[None, "planted_agent:agent"])
    assert r.status_code == 410 and "planted_agent:agent" in r.json()["error"]
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("top", ["<b>", [1], [[["DRAW_STOCK", "1"]]], [{"name": "x"}], [[["A", 0.5, 1]]]])
def test_recorded_top_choices_reach_the_page_only_in_the_shape_the_table_writes(
        make_client: Any, tmp_path: Path, top: Any) -> None:
    client = make_client(opponents=("random",), show_policy=True)
    view = play_random_game(client, random.Random(4), seed=1)
    (record,) = (json.loads(line) for line in (tmp_path / f"{view['id']}.jsonl").read_text().splitlines())
    assert len(record["meta"]["top_moves"]) == len(record["actions"])
    record["meta"]["top_moves"] = top * len(record["actions"]) if isinstance(top, list) else top
    up = client.post("/api/records", content=json.dumps(record) + "\n", headers=JSON_LINES).json()
    moves = client.get(f"/api/records/{up['file']}/hands/0").json()["moves"]
    assert [m["top"] for m in moves] == [None] * len(moves)
