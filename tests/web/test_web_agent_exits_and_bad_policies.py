"""Agents that fail past ``agent_move``'s checks: one that raises ``SystemExit`` or a
``CancelledError`` (not ``Exception``s, so they got by as a text/plain 500, the game lost, and under
the test client the event loop stopped), and a learned policy whose ``action_probabilities`` raises
or gives NaN or 5.0 with ``--show-policy`` (a 500 for the move and every view after it; a NaN saved
into the game's file made it unrestorable). Now the first stops its game with a 502 naming the
agent, and the second plays on without top choices, its game saved and restored; the twins, an
agent that plays and a policy with true probabilities, show the neighbours unchanged."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import numpy as np
import pytest

from canasta_env.rules import load_rules
from train.web.game import AgentPool


class Odd:
    """Plays its first legal move, or raises ``exc`` when it is set."""

    name = "odd"

    def __init__(self, exc: BaseException | None = None) -> None:
        self.exc = exc

    def act(self, obs: Any, mask: Any, rng: Any) -> Any:
        if self.exc is not None:
            raise self.exc
        return np.array([int(np.flatnonzero(np.asarray(mask)[0])[0])])


class Policy(Odd):
    """A learned policy (it has ``action_probabilities``): uniform over the legal moves, or as
    ``probs`` says ("raise", "nan", "five")."""

    def __init__(self, probs: str = "ok") -> None:
        super().__init__()
        self.probs = probs

    def action_probabilities(self, obs: Any, mask: Any) -> Any:
        if self.probs == "raise":
            raise RuntimeError("the net is broken")
        p = np.asarray(mask, dtype=float)
        p /= p.sum(axis=1, keepdims=True)
        return {"nan": p * np.nan, "five": np.asarray(mask) * 5.0}.get(self.probs, p)


class Pool(AgentPool):
    def __init__(self, agent: Odd) -> None:
        super().__init__(load_rules("classic_2p"))
        self.agent = agent

    def get(self, spec: str) -> Any:
        return self.agent if spec == "odd" else super().get(spec)


def _client(make_client: Any, agent: Odd, **options: Any) -> Any:
    return make_client(opponents=("odd",), hands=None, pool=Pool(agent), **options)


@pytest.mark.parametrize("exc", [SystemExit(3), asyncio.CancelledError()],
                         ids=["SystemExit", "CancelledError"])
def test_an_agent_raising_past_exception_stops_its_game_with_a_502_naming_it(make_client: Any,
                                                                             exc: BaseException) -> None:
    agent = Odd()
    client = _client(make_client, agent)
    agent.exc = exc
    r = client.post("/api/games", json={"seat": 1, "seed": 3})  # P0, the agent, moves first
    assert r.status_code == 502 and r.headers["content-type"] == "application/json", (r.status_code, r.text)
    body = r.json()
    assert body["agent_failed"] is True and "server failed" not in body["error"]
    assert f"agent 'odd' (seat 0): act() raised {type(exc).__name__}" in body["error"]
    assert client.get(f"/api/games/{body['id']}").json() == body  # the game says why, not 404
    agent.exc = None  # the twin: the same agent playing, and the server played on
    assert client.post("/api/games", json={"seat": 1, "seed": 3}).status_code == 201


def _play(client: Any, view: dict[str, Any], moves: int) -> dict[str, Any]:
    for _ in range(moves):
        move = {"seat": view["seat"], "action": view["legal"][-1]["id"], "version": view["version"]}
        r = client.post(f"/api/games/{view['id']}/actions", json=move)
        assert r.status_code == 200, (r.status_code, r.text)
        view = r.json()
    return view


@pytest.mark.parametrize("probs", ["raise", "nan", "five"])
def test_a_policy_without_true_probabilities_plays_on_without_top_choices(make_client: Any, tmp_path: Any,
                                                                          probs: str) -> None:
    client = _client(make_client, Policy(probs), show_policy=True)
    r = client.post("/api/games", json={"seat": 1, "seed": 3})
    assert r.status_code == 201, (r.status_code, r.text)
    view = _play(client, r.json(), 4)
    assert view["hint"] is None and "no hint: agent 'odd'" in view["hint_error"]
    agent_moves = [e for e in view["log"] if e["seat"] == 0]
    assert agent_moves and not any(e.get("top") for e in agent_moves), [e.get("top") for e in agent_moves]
    saved = (tmp_path / "games" / f"{view['id']}.json").read_text()
    assert "NaN" not in saved and json.loads(saved)["actions"]
    restarted = _client(make_client, Policy(probs), show_policy=True)
    assert restarted.get(f"/api/games/{view['id']}").json()["version"] == view["version"]


def test_twin_a_policy_with_true_probabilities_shows_them(make_client: Any) -> None:
    client = _client(make_client, Policy(), show_policy=True)
    view = _play(client, client.post("/api/games", json={"seat": 1, "seed": 3}).json(), 4)
    assert view["hint"] and view["hint_error"] is None
    tops = [e["top"] for e in view["log"] if e["seat"] == 0]
    assert tops and all(0 <= p <= 1 for top in tops for _, p in top)
