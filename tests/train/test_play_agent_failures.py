"""``canasta play`` with an agent that fails: it raises, returns None, an illegal or out-of-range
action, or floats (legal + 0.7, which ``int()`` used to truncate into a legal move). Each is one line
naming the agent and its seat, status 2, the human's moves of the hand in progress saved as q and
end of input save them; extra ``--opponent`` agents that no seat would take are refused."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest

import train.cli.main
from canasta_env.engine import init, observe
from canasta_env.records import read_records, replay
from canasta_env.rules import load_rules
from train.play.seats import AgentError, Seat, agent_move, build_seats
from train.play.terminal import PlaySession

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))
from failing_bots import FAILURES  # noqa: E402


@pytest.fixture
def failing_agent(monkeypatch: pytest.MonkeyPatch) -> str:
    """The name ``canasta play --opponent`` takes for the failing agent."""
    monkeypatch.syspath_prepend(str(TESTS))
    return "failing_bots:from_environment"


@pytest.mark.parametrize("mode", sorted(FAILURES))
def test_a_failing_agent_is_one_line_naming_it_and_the_hand_is_saved(
        mode: str, failing_agent: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    monkeypatch.setenv("BOOM_MODE", mode)
    monkeypatch.setenv("BOOM_AFTER", "1")  # one good move, then it fails: the human has moved by then
    monkeypatch.setattr(sys, "stdin", io.StringIO("1\n" * 400))
    record = tmp_path / "r.jsonl"
    code = train.cli.main.main(["play", "--opponent", failing_agent, "--seed", "3", "--record", str(record)])
    captured = capsys.readouterr()
    assert code == 2
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in captured.err + captured.out, captured.err
    assert err[0].startswith(f"canasta play: error: agent '{failing_agent}' (seat 1): "), err[0]
    assert FAILURES[mode] in err[0]
    assert "agent '" not in captured.out  # said once, on stderr
    assert "Game stopped (an agent failed) after 0 complete hand(s)" in captured.out
    assert f"1 hand record(s) appended to {record}" in captured.out
    (rec,) = read_records(record)
    assert rec.end == "unfinished" and len(rec.actions) >= 3  # the human's moves and the agent's one
    replay(rec)


def test_an_agent_that_changes_its_mask_copy_cannot_make_an_illegal_move_legal() -> None:
    class Cheat:
        def act(self, obs: np.ndarray, mask: np.ndarray, rng: object) -> np.ndarray:
            illegal = int(np.flatnonzero(~mask[0])[0])
            mask[:] = True
            return np.array([illegal])

    state = init("classic_2p", 1, 0)
    seat = int(state.current_player[0])
    with pytest.raises(AgentError, match=r"^agent 'cheat' \(seat \d\): act\(\) chose action \d+ "):
        agent_move(Cheat(), "cheat", seat, observe(state, [seat]), state.legal_action_mask.copy(),
                   np.random.default_rng(0))
    assert state.legal_action_mask[0].sum() < state.legal_action_mask.shape[1]  # the engine's untouched


def test_a_session_stops_on_a_failing_agent_and_raises_agent_error(capsys: pytest.CaptureFixture[str],
                                                                   tmp_path: Path) -> None:
    class Floats:
        def act(self, obs: np.ndarray, mask: np.ndarray, rng: object) -> np.ndarray:
            return np.flatnonzero(mask[0])[:1] + 0.7

    rules = load_rules("classic_2p")
    session = PlaySession(rules, [Seat("human"), Seat("floaty", Floats(), "floaty")], seed=3,
                          record=tmp_path / "f.jsonl", read_line=lambda prompt: "1")
    with pytest.raises(AgentError, match=r"^agent 'floaty' \(seat 1\): act\(\): actions must hold integers"):
        session.play()
    assert "Game stopped (an agent failed)" in capsys.readouterr().out
    (rec,) = read_records(tmp_path / "f.jsonl")
    assert rec.end == "unfinished" and rec.seats == ["human", "floaty"]


@pytest.mark.parametrize(("rules", "humans", "opponents", "refused"), [
    ("classic_2p", [0], ["random", "random", "random"], True),
    ("classic_2p", [0], ["random", "greedy"], True),
    ("classic_2p", [0], ["random"], False),
    ("classic_2p", [0, 1], ["random"], False),  # hot seat: the one default opponent is unused
    ("classic_3p", [0], ["random", "greedy"], False),
    ("classic_3p", [0], ["random", "greedy", "heuristic"], True),
    ("classic_4p", [0], ["random", "greedy"], False),
    ("classic_4p", [1], ["random", "greedy", "heuristic"], True),
])
def test_opponents_that_no_seat_takes_are_refused(rules: str, humans: list[int], opponents: list[str],
                                                  refused: bool) -> None:
    ruleset = load_rules(rules)
    if refused:
        with pytest.raises(ValueError, match=rf"^--opponent: {len(opponents)} agents named \("):
            build_seats(ruleset, humans, opponents, None)
    else:
        build_seats(ruleset, humans, opponents, None)
