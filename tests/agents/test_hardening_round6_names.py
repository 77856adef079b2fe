"""Agent names checked to the end, round six: a name accepted at the start does not fail later in play
without a one-line error naming the agent (a search's rollout agent, a training opponent, a league
member, a crossplay partner), and two spellings of one agent count as one agent where an agent may be
named only once. Each hostile case has its twin: the valid neighbouring input still works."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from agents import agent_key, make_agent
from canasta_env.rules import load_rules
from train.cli.main import main as cli_main

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))
from failing_bots import Boom  # noqa: E402

ZOO_2P = str(Path(__file__).resolve().parents[2] / "agents" / "zoo" / "classic_2p")
BOOM = "failing_bots:from_environment"


def _one_line_error(capsys: pytest.CaptureFixture[str], text: str) -> None:
    err = capsys.readouterr().err
    assert text in err, err
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(("mode", "message"), [
    ("float", "act(): actions must hold integers"),  # truncated into legal moves in silence
    ("illegal", "which is not legal there"),  # the search itself then chose an illegal move
    ("oor", "act() chose action 1000000"),  # an IndexError from inside the search
    ("none", "act(): actions must be a 1-D sequence of integers, got None"),  # int(None) TypeError
])
def test_a_search_names_its_rollout_agent_when_it_fails(monkeypatch: pytest.MonkeyPatch, mode: str,
                                                        message: str) -> None:
    from agents.match import play_match

    rules = load_rules("classic_2p")
    name = f"search:k=2,n=2,depth=4,rollout={BOOM}"
    monkeypatch.setenv("BOOM_MODE", mode)
    with pytest.raises(ValueError, match="rollout of search") as info:
        play_match(rules, make_agent(name, rules), make_agent("random", rules), 1)
    assert repr(BOOM) in str(info.value) and message in str(info.value) and "\n" not in str(info.value)
    # the twin: a rollout agent that plays legal integers is searched with
    monkeypatch.setenv("BOOM_MODE", "ok")
    result = play_match(rules, make_agent(name, rules), make_agent("random", rules), 1)
    assert result.margins.shape == (1, 2)


@pytest.mark.parametrize(("mode", "message"), [
    ("boom", "opponent agent Boom: act() raised RuntimeError: boom from agent"),  # was a traceback
    ("illegal", "opponent agent Boom chose action "),  # "an injected agent chose an illegal action"
    ("oor", "opponent agent Boom chose action 1000000 in env"),
])
def test_a_training_opponent_failing_is_one_line_naming_it(mode: str, message: str) -> None:
    from canasta_env.envs.sb3_env import CanastaVecEnv

    def play(env: CanastaVecEnv) -> None:  # the learner's first legal moves until the opponent has played
        env.seed(0)
        env.reset()
        for _ in range(8):
            env.step(env.action_masks().argmax(axis=1))

    with pytest.raises(ValueError) as info:
        play(CanastaVecEnv(2, "classic_2p", opponent=Boom(mode)))
    assert message in str(info.value) and "\n" not in str(info.value)
    # the twin: an opponent playing legal moves
    play(CanastaVecEnv(2, "classic_2p", opponent=Boom("ok")))


@pytest.mark.parametrize(("mode", "message"), [
    ("float", "act(): actions must hold integers"),  # truncated into the pool's int64 actions
    ("illegal", "which is not legal there"),  # named no agent
    ("boom", "act() raised RuntimeError: boom from agent"),
])
def test_a_league_member_failing_is_named(mode: str, message: str) -> None:
    from agents.learned.pool import PoolAgent
    from canasta_env.engine import DealId, init_from_deals, observe
    from canasta_env.policy import RowRandom

    rules = load_rules("classic_2p")
    state = init_from_deals(rules, [DealId(0, 0, 0)])
    obs = observe(state, state.current_player.astype(np.int64))
    mask = state.legal_action_mask
    pool = PoolAgent(Boom("ok"), 1, latest_ratio=0.0, league={"my.module:bot": Boom(mode)})
    pool.new_episode(np.array([0]), np.array([0.5]))  # the league member plays env 0
    with pytest.raises(ValueError, match=r"'my\.module:bot' \(pool member\)") as info:
        pool.act(obs, mask, RowRandom(np.array([1], dtype=np.uint64)))
    assert message in str(info.value)
    # the twin: a member playing legal moves
    good = PoolAgent(Boom("ok"), 1, latest_ratio=0.0, league={"my.module:bot": Boom("ok")})
    good.new_episode(np.array([0]), np.array([0.5]))
    action = int(good.act(obs, mask, RowRandom(np.array([1], dtype=np.uint64)))[0])
    assert mask[0, action]


def test_crossplay_names_a_failing_agent_by_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    from train.evaluation.crossplay import crossplay

    monkeypatch.setenv("BOOM_MODE", "boom")
    with pytest.raises(ValueError, match=f"agent {BOOM!r}: act\\(\\) raised RuntimeError"):  # "#2 (Boom)"
        crossplay("classic_4p", ["heuristic", BOOM], ["random"], deals=1, resamples=10)
    # the twin: the same roster with an agent that plays
    monkeypatch.setenv("BOOM_MODE", "ok")
    result = crossplay("classic_4p", ["heuristic", BOOM], ["random"], deals=1, resamples=10)
    assert result.agents == ["heuristic", BOOM]


def test_tournament_vs_spelt_as_in_agents() -> None:
    from train.evaluation.tournament import run

    # a folder with its trailing "/" is labelled without it: --vs spelt as in --agents was refused
    result = run("classic_2p", [ZOO_2P + "/", "random", "greedy"], hands=1, vs=ZOO_2P + "/", plots=False)
    assert result.labels == [ZOO_2P, "random", "greedy"] and result.config["vs"] == ZOO_2P
    assert sorted(set(result.hands["match"].tolist())) == [0, 1]  # a gauntlet: two matches, not three
    # the twin: a --vs that is no entrant is still refused
    with pytest.raises(ValueError, match="is not one of the entrants"):
        run("classic_2p", [ZOO_2P + "/", "random"], hands=1, vs="greedy", plots=False)


@pytest.mark.parametrize(("first", "second"), [
    ("heuristic:eager", "heuristic: eager"), ("heuristic:eager", "heuristic:eager "),
    ("heuristic:pile_fighter,freeze_pile=6", "heuristic:pile_fighter,freeze_pile=6.0"),
    ("search:k=8,n=2", "search:n=2,k=8"), ("search", "search:k=16"),
    ("search:phases=draw+meld", "search:phases=meld+draw"),
    ("zoo:classic_2p", ZOO_2P), (ZOO_2P, ZOO_2P + "/"),
])
def test_two_spellings_of_one_agent_have_one_key(first: str, second: str) -> None:
    assert agent_key(first, "classic_2p") == agent_key(second, "classic_2p")


@pytest.mark.parametrize(("first", "second"), [
    ("heuristic", "heuristic:eager"), ("search", "search:k=8"), ("zoo:classic_2p", "sampled:zoo:classic_2p"),
    ("random", "greedy"), ("nonesuch", "nonesuch "),
])
def test_different_agents_have_different_keys(first: str, second: str) -> None:
    assert agent_key(first, "classic_2p") != agent_key(second, "classic_2p")


def test_heuristic_exploit_refuses_one_agent_spelt_twice(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from train.cli import exploit

    seen: list[object] = []
    monkeypatch.setattr(exploit, "run_rule_search", lambda o: seen.append(o.also) or 0)
    base = ["exploit", "heuristic:eager", "--family", "heuristic", "--budget", "64", "--deals", "1",
            "--no-progress", "--run-dir", str(tmp_path / "run"), "--also"]
    assert cli_main([*base, "greedy", "heuristic:hoarder", "heuristic: hoarder"]) == 2
    _one_line_error(capsys, "--also names one agent twice, as 'heuristic:hoarder' and 'heuristic: hoarder'")
    assert cli_main([*base, "greedy", "heuristic: eager"]) == 2  # the exploited agent, spelt otherwise
    _one_line_error(capsys, "--also names 'heuristic: eager', the agent being exploited")
    # the twin: distinct agents
    assert cli_main([*base, "greedy", "heuristic:hoarder"]) == 0
    assert seen == [["greedy", "heuristic:hoarder"]]


@pytest.mark.parametrize(("option", "names", "message"), [
    ("--league", ["heuristic:eager", "heuristic: eager"], "training option 'league' = "),
    ("--eval-opponents", ["random", "random"], "training option 'eval_opponents' names 'random' twice"),
])
def test_league_refuses_one_agent_spelt_twice(tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str,
                                              names: list[str], message: str) -> None:
    from train.learning.config import TrainArgs
    from train.learning.setup import resolve

    run = tmp_path / "run"
    base = ["league", "--num-envs", "8", "--n-steps", "16", "--batch-size", "64", "--eval-deals", "2",
            "--progress", "false", "--total-timesteps", "128", "--run-dir", str(run)]
    assert cli_main([*base, option, *names]) == 2
    _one_line_error(capsys, message)
    assert not run.exists()
    # the twin: distinct agents pass the same check
    key = option[2:].replace("-", "_")
    args = TrainArgs(num_envs=8, n_steps=16, batch_size=64, progress=False,
                     **{key: ["heuristic:eager", "heuristic:hoarder"]})
    setup = resolve(args, load_rules("classic_2p"), run, selfplay=True)
    assert setup.rules.name == "classic_2p"
