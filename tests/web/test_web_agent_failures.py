"""The web table with an agent that fails (raises, returns None, an illegal or out-of-range action,
or floats that ``int()`` used to truncate): a 502 naming the agent, in the foreground and after a
202; the game stopped where it stands (the human's move kept, saved, said again by every request on
it, after a restart too), other games served on. At start-up a failing agent, or more ``--opponent``
agents than the rules have opponent seats, is one line and status 2."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from web_serve import free_port

from canasta_env.rules import load_rules
from train.web.game import AgentPool

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from failing_bots import FAILURES, Boom  # noqa: E402


class Pool(AgentPool):
    """The server's agents, ``boom`` being this test's ``Boom``."""

    def __init__(self, agent: Boom) -> None:
        super().__init__(load_rules("classic_2p"))
        self.boom = agent

    def get(self, spec: str) -> Any:
        return self.boom if spec == "boom" else super().get(spec)


def _client(make_client: Any, agent: Boom, **options: Any) -> Any:
    return make_client(opponents=("boom",), hands=None, pool=Pool(agent), **options)


def _failed(r: Any, game_id: str | None = None) -> dict[str, Any]:
    """The 502 of a game an agent stopped, naming the agent."""
    assert r.status_code == 502, (r.status_code, r.text)
    body: dict[str, Any] = r.json()
    assert body["agent_failed"] is True and "server failed" not in body["error"]
    assert f"game {game_id or body['id']} is stopped: agent 'boom' (seat " in body["error"]
    return body


@pytest.mark.parametrize("mode", sorted(FAILURES))
def test_an_agent_failing_on_a_new_game_is_a_502_naming_it(mode: str, make_client: Any) -> None:
    agent = Boom()
    client = _client(make_client, agent)
    agent.mode = mode
    r = client.post("/api/games", json={"seat": 1, "seed": 3})  # P0 moves first: the agent
    body = _failed(r)
    assert FAILURES[mode] in body["error"] and "agent 'boom' (seat 0)" in body["error"]
    assert client.get(f"/api/games/{body['id']}").json() == body  # the game says why, not 404
    agent.mode = "ok"  # the server plays other games on
    assert client.post("/api/games", json={"seat": 1, "seed": 3}).status_code == 201
    assert client.get(f"/api/games/{body['id']}").json() == body  # still stopped: no move was played


def test_an_agent_failing_after_a_202_is_said_by_the_next_get(make_client: Any) -> None:
    agent = Boom()
    client = _client(make_client, agent, think_seconds=0.05)
    agent.mode, agent.delay = "boom", 0.3
    r = client.post("/api/games", json={"seat": 1, "seed": 3})
    assert r.status_code == 202 and r.json()["busy"]
    game_id = r.json()["id"]
    deadline = time.monotonic() + 30
    while (r := client.get(f"/api/games/{game_id}")).status_code == 409 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert FAILURES["boom"] in _failed(r, game_id)["error"]


def test_a_mid_game_failure_keeps_the_humans_move_saved_and_said_after_a_restart(
        make_client: Any, tmp_path: Path) -> None:
    agent = Boom()
    client = _client(make_client, agent)
    view = client.post("/api/games", json={"seat": 0, "seed": 3}).json()
    agent.mode = "float"
    while True:  # the human's moves until the agent is to reply
        move = {"seat": 0, "action": view["legal"][0]["id"], "version": view["version"]}
        r = client.post(f"/api/games/{view['id']}/actions", json=move)
        if r.status_code != 200:
            break
        view = r.json()
    body = _failed(r, view["id"])
    assert FAILURES["float"] in body["error"] and "agent 'boom' (seat 1)" in body["error"]
    assert body["version"] == view["version"] + 1  # the human's move was played, not rolled back
    saved = json.loads((tmp_path / "games" / f"{view['id']}.json").read_text())
    assert len(saved["actions"]) == body["version"] and FAILURES["float"] in saved["agent_error"]
    assert client.get(f"/api/games/{view['id']}").json() == body
    again = {"seat": 0, "action": view["legal"][0]["id"], "version": body["version"]}
    assert client.post(f"/api/games/{view['id']}/actions", json=again).json() == body
    restarted = _client(make_client, Boom())  # a restart reads the game back, stopped as it was
    assert restarted.get(f"/api/games/{view['id']}").json() == body


def test_a_failing_adviser_leaves_no_hint_and_says_why(make_client: Any) -> None:
    agent = Boom()
    client = _client(make_client, agent, show_policy=True)
    agent.mode = "none"
    r = client.post("/api/games", json={"seat": 0, "seed": 3})  # the human moves first: a hint asked
    assert r.status_code == 201, r.text
    view = r.json()
    assert view["hint"] is None and view["your_turn"]
    assert view["hint_error"].startswith("no hint: agent 'boom': act(): actions must be a 1-D sequence")


@pytest.fixture
def no_serving(monkeypatch: pytest.MonkeyPatch) -> None:
    """``canasta serve`` stops before it would serve (a test must not hang on a server)."""
    def serve(*args: Any) -> None:
        raise AssertionError("the server started")

    monkeypatch.setattr("train.web.server.serve", serve)


def test_an_agent_failing_its_first_move_at_start_up_is_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        no_serving: None) -> None:
    from train.cli.main import main

    (tmp_path / "failing_web_agent.py").write_text(
        "class Boom:\n    def act(self, obs, mask, rng):\n        raise RuntimeError('boom at start-up')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "failing_web_agent", raising=False)
    code = main(["serve", "--port", str(free_port()), "--record-dir", str(tmp_path / "r"),
                 "--opponent", "failing_web_agent:Boom"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith("canasta serve: error: agent 'failing_web_agent:Boom': act() raised RuntimeError: "
                          "boom at start-up (its first move, tried before serving)")


def test_more_opponents_than_opponent_seats_are_refused_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], no_serving: None) -> None:
    from train.cli.main import main

    code = main(["serve", "--port", str(free_port()), "--record-dir", str(tmp_path / "r"),
                 "--opponent", "random", "random", "random"])
    err = capsys.readouterr().err
    assert code == 2 and err == ("canasta serve: error: --opponent: 3 agents named (random random random) "
                                 "for the 1 opponent seat(s) of classic_2p; name at most 1\n")
