"""The search agent (agents/search.py): legal play, determinism, and a decision it must get right."""

from __future__ import annotations

import re

import numpy as np
import pytest

from agents import make_agent
from agents.match import play_match
from canasta_env.engine import action_index, init, observe, step
from canasta_env.policy import RandomAgent
from canasta_env.scenario import scenario


def test_search_plays_legal_moves_against_random() -> None:
    """play_match raises on any illegal action; a few hands per table size."""
    for preset in ("classic_2p", "classic_4p"):
        search = make_agent("search", preset, k=2, n=2, depth=12, seed=1)
        result = play_match(preset, search, RandomAgent(), 2, seed=11)
        assert result.margins.shape == (2, 2)
        assert result.truncated == 0


def _positions(preset: str, count: int) -> tuple[np.ndarray, np.ndarray]:
    state = init(preset, count, seed=4)
    rng = np.random.default_rng(0)
    for _ in range(9):
        step(state, RandomAgent().act(None, state.legal_action_mask, rng))
    movers = state.current_player.astype(np.int64)
    return observe(state, movers), state.legal_action_mask.copy()


def test_search_is_deterministic_given_the_rng() -> None:
    obs, mask = _positions("classic_2p", 6)
    agent = make_agent("search", "classic_2p", k=3, n=3, depth=20, seed=5)
    first = agent.act(obs, mask, np.random.default_rng(9))
    again = agent.act(obs, mask, np.random.default_rng(9))
    assert np.array_equal(first, again)
    assert mask[np.arange(6), first].all()
    # a row's choice does not depend on the other rows of the batch (given the same uniform)
    alone = agent.act(obs[:1], mask[:1], np.random.default_rng(9))
    assert alone[0] == first[0]


def _go_out_position(canastas: int) -> tuple[np.ndarray, np.ndarray]:
    """classic_2p, seat 0 to meld with K K K; the opponent holds a heavy hand. With two canastas
    on the table melding the kings goes out."""
    melds = ["Q Q Q Q Q Q Q", "J J J J J J J"][:canastas] + ["5 5 5"]
    state = scenario("classic_2p", hands=["K K K", "JK JK 2 2 A A A 9 8 6 4 4 T T"],
                     melds={0: melds, 1: ["9 9 9"]}, pile="4 6 8", turn=0, phase="meld")
    return observe(state, [0]), state.legal_action_mask.copy()


def test_search_goes_out_when_it_wins_big() -> None:
    agent = make_agent("search", "classic_2p", k=6, n=4, seed=2)
    meld_kings = action_index("MELD_NNN_K")
    obs, mask = _go_out_position(2)
    assert mask[0, meld_kings] and mask.sum() > 1
    assert agent.act(obs, mask, np.random.default_rng(0))[0] == meld_kings
    # negative twin: one canasta short, melding the kings would leave no card and no go-out
    obs, mask = _go_out_position(1)
    assert not mask[0, meld_kings]
    choice = agent.act(obs, mask, np.random.default_rng(0))[0]
    assert choice != meld_kings and mask[0, choice]


def test_search_guard_and_phases_fall_back_to_the_policy() -> None:
    """An unreachable gain threshold, or no searched phase, plays exactly the rollout policy's
    choice."""
    obs, mask = _positions("classic_4p", 8)
    heuristic = make_agent("heuristic", "classic_4p").act(obs, mask, np.random.default_rng(0))
    for options in ({"phases": ()}, {"min_gain": 1e9}):
        agent = make_agent("search", "classic_4p", k=2, n=3, depth=10, seed=3, **options)
        assert np.array_equal(agent.act(obs, mask, np.random.default_rng(1)), heuristic)


def test_a_prior_is_what_search_falls_back_to_and_orders_the_candidates() -> None:
    """With ``prior`` the candidates are the prior's, its choice first, and an unreachable gain plays
    exactly the prior's moves; the rollouts stay the heuristic's (the twin above: without a prior,
    the fallback is the rollout policy)."""
    obs, mask = _positions("classic_4p", 8)
    greedy = make_agent("greedy", "classic_4p").act(obs, mask, np.random.default_rng(0))
    heuristic = make_agent("heuristic", "classic_4p").act(obs, mask, np.random.default_rng(0))
    assert not np.array_equal(greedy, heuristic)
    for options in ({"phases": ()}, {"min_gain": 1e9}):
        agent = make_agent("search", "classic_4p", k=2, n=3, depth=10, seed=3, prior="greedy", **options)
        assert np.array_equal(agent.act(obs, mask, np.random.default_rng(1)), greedy)
    agent = make_agent("search:prior=greedy,k=2,n=3,depth=10", "classic_4p")
    assert [int(c[0]) for c in agent.candidates(obs, mask)] == greedy.tolist()
    assert type(agent.policy).__name__ == "HeuristicAgent"


def test_a_prior_names_another_agent() -> None:
    from agents import agent_key

    assert agent_key("search:prior=greedy", "classic_2p") != agent_key("search", "classic_2p")
    assert agent_key("search:prior=heuristic", "classic_2p") == agent_key("search", "classic_2p")  # twin


def test_search_defaults_per_table() -> None:
    """Partnership tables search more worlds, to a shallower depth, by default; the guard is on."""
    two, four = make_agent("search", "classic_2p"), make_agent("search", "classic_4p")
    assert (two.k, two.depth, four.k, four.depth) == (16, 60, 32, 40)
    assert two.guard == four.guard == 1.0


def test_search_options_by_name() -> None:
    """``search:OPTION=VALUE,...`` sets the keyword options (phases joined by ``+``); a learned
    rollout policy both orders the candidates and plays the rollouts."""
    agent = make_agent("search:k=3,n=2,depth=7,guard=0.5,phases=draw+meld,rollout=greedy", "classic_2p")
    assert (agent.k, agent.n, agent.depth, agent.guard) == (3, 2, 7, 0.5)
    assert agent.phases.tolist() == [True, True, False, False, False]
    assert type(agent.policy).__name__ == "GreedyAgent"
    assert make_agent("search:k=3", "classic_2p", k=5).k == 5  # keyword arguments win


@pytest.mark.parametrize(("spec", "message"), [
    ("search:", "'' is not OPTION=VALUE"), ("search:k", "'k' is not OPTION=VALUE"),
    ("search:width=3", "unknown option 'width'"), ("search:k=2.5", "k = '2.5' is not an integer"),
    ("search:guard=inf", "guard = 'inf' is not finite"), ("search:n=2,n=3", "n is given twice"),
    ("search:k=0", "k = 0 is outside"), ("search:phases=fly", "unknown phases"),
    ("search:rollout=nonesuch", "unknown agent 'nonesuch'"),
    ("search:prior=nonesuch", "unknown agent 'nonesuch'"),
    ("search:prior=search:k=2", "prior = 'search:k=2': a search cannot take its candidates from a search"),
])
def test_search_options_refuse_bad_specs_in_one_line(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as info:
        make_agent(spec, "classic_2p")
    assert "\n" not in str(info.value)
