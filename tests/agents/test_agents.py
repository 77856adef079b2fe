"""Rule-based agents: registry, legality on sampled states, information hiding, speed, strength."""

from __future__ import annotations

import time

import numpy as np
import pytest

from agents import agent_names, make_agent, register_agent
from agents.greedy import GreedyAgent
from agents.match import bootstrap_ci, play_match
from agents.rule_based.heuristic import HeuristicAgent, HeuristicConfig
from agents.rule_based.random import RandomAgent
from canasta_env.engine import clone, init, observe, reset_rows, step
from canasta_env.engine.actions import ANSWER_NO, ANSWER_YES, ASK_PARTNER
from canasta_env.policy import RandomAgent as PolicyRandomAgent
from canasta_env.rules import load_rules
from canasta_env.testing import keyed_actions, resample_hidden

NAMES = ("random", "greedy", "heuristic")


def _rules(preset: str):
    if preset == "classic_4p_ask":
        return load_rules("classic_4p", ask_partner=True)
    return load_rules(preset)


def sampled_states(rules, batch: int, steps: int, seed: int):
    """Yield the state after each move of a batch with auto-reset: keyed random / meld-eager moves
    on odd rows, the greedy agent on even rows (so hands reach canastas and going out); with
    ``ask_partner`` every mover asks when allowed (so partners have to answer)."""
    state = init(rules, batch, seed)
    greedy = GreedyAgent(rules)
    even = np.arange(batch) % 2 == 0
    for i in range(steps):
        yield state
        mask = state.legal_action_mask
        actions = keyed_actions(state.data, mask, 1000 + seed + i, i % 3 != 0)
        rows = np.flatnonzero(even & mask.any(axis=1))
        obs = observe(state, state.current_player[rows].astype(np.int64), rows)
        actions[rows] = greedy.act(obs, mask[rows], None)
        asks = mask[:, ASK_PARTNER]
        actions[asks] = ASK_PARTNER
        step(state, actions)
        done = np.flatnonzero(state.terminated | state.truncated)
        if done.size:
            reset_rows(state, done)


def test_registry():
    assert set(NAMES) <= set(agent_names())
    assert isinstance(make_agent("random", "classic_2p"), PolicyRandomAgent)
    assert RandomAgent is PolicyRandomAgent
    assert isinstance(make_agent("greedy", "classic_3p"), GreedyAgent)
    assert isinstance(make_agent("heuristic", load_rules("classic_4p")), HeuristicAgent)
    with pytest.raises(ValueError, match="unknown agent"):
        make_agent("nope", "classic_2p")
    with pytest.raises(ValueError, match="already registered"):
        register_agent("greedy", lambda rules: GreedyAgent(rules))


@pytest.mark.parametrize("name, words", [("", "is empty"), ("  ", "is empty"), (None, "is not a string")])
def test_an_empty_agent_name_is_named_as_such(name: object, words: str) -> None:
    """Not read as the current directory (a checkpoint path) or looked up as a module."""
    with pytest.raises(ValueError, match=words) as info:
        make_agent(name, "classic_2p")  # type: ignore[arg-type]
    assert "random" in str(info.value) and "\n" not in str(info.value)


def test_agent_refuses_other_table_size():
    obs = np.zeros((2, 219), np.float32)  # a classic_4p observation
    with pytest.raises(ValueError, match="expected observations"):
        GreedyAgent("classic_2p").act(obs, np.ones((2, 106), bool), np.random.default_rng(0))


@pytest.mark.parametrize("preset", ["classic_2p", "classic_3p", "classic_4p", "classic_4p_ask"])
def test_only_legal_actions(preset):
    rules = _rules(preset)
    agents = {name: make_agent(name, rules) for name in NAMES}
    rng = np.random.default_rng(0)
    checked = 0
    answers = 0
    for state in sampled_states(rules, batch=128, steps=120, seed=3):
        live = np.flatnonzero(state.legal_action_mask.any(axis=1))
        obs = observe(state, state.current_player[live].astype(np.int64), live)
        mask = state.legal_action_mask[live]
        answers += int(mask[:, ANSWER_YES].sum())
        for name, agent in agents.items():
            actions = agent.act(obs, mask, rng)
            assert actions.dtype == np.int64 and actions.shape == (live.size,)
            ok = mask[np.arange(live.size), actions]
            assert ok.all(), f"{name} chose an illegal action in {preset}"
        checked += live.size
    assert checked >= 5000
    if preset == "classic_4p_ask":
        assert answers > 0  # the answer phase was exercised


def test_rows_without_legal_actions_get_minus_one():
    rules = load_rules("classic_2p")
    state = init(rules, 4, 0)
    obs = observe(state, state.current_player.astype(np.int64))
    mask = state.legal_action_mask.copy()
    mask[1] = False
    for name in ("greedy", "heuristic"):
        actions = make_agent(name, rules).act(obs, mask, np.random.default_rng(0))
        assert actions[1] == -1 and (actions[[0, 2, 3]] >= 0).all()


@pytest.mark.parametrize("preset", ["classic_2p", "classic_3p", "classic_4p"])
def test_action_depends_only_on_what_the_mover_sees(preset):
    rules = _rules(preset)
    agents = {name: make_agent(name, rules) for name in NAMES}
    rng = np.random.default_rng(5)
    tried = 0
    for i, state in enumerate(sampled_states(rules, batch=16, steps=90, seed=9)):
        if i % 10 != 5:
            continue
        for b in range(state.num_games):
            if not state.legal_action_mask[b].any():
                continue
            one = clone(state, [b])
            me = int(one.current_player[0])
            other = resample_hidden(one, me, rng)
            assert np.array_equal(other.legal_action_mask, one.legal_action_mask)
            obs_a = observe(one, [me])
            obs_b = observe(other, [me])
            for name, agent in agents.items():
                a = agent.act(obs_a, one.legal_action_mask, np.random.default_rng(17))
                c = agent.act(obs_b, other.legal_action_mask, np.random.default_rng(17))
                assert a[0] == c[0], f"{name} reacted to hidden cards"
            tried += 1
    assert tried >= 100


def test_deterministic_and_batch_independent():
    rules = load_rules("classic_3p")
    states = list(sampled_states(rules, batch=64, steps=40, seed=2))
    state = states[-1]
    live = np.flatnonzero(state.legal_action_mask.any(axis=1))
    obs = observe(state, state.current_player[live].astype(np.int64), live)
    mask = state.legal_action_mask[live]
    for name in ("greedy", "heuristic"):
        agent = make_agent(name, rules)
        whole = agent.act(obs, mask, np.random.default_rng(0))
        again = agent.act(obs, mask, np.random.default_rng(123))
        alone = np.array([agent.act(obs[i: i + 1], mask[i: i + 1], None)[0] for i in range(live.size)])
        assert np.array_equal(whole, again) and np.array_equal(whole, alone)


def test_speed_at_batch_1024():
    """The brief asks for >= 100,000 decisions/s at batch 1,024; measured here it is tens of
    millions, so the floor below only catches a fall off the compiled path."""
    from scripts.bench_agents import sample_batch

    rules = load_rules("classic_4p")
    obs, mask = sample_batch(rules, 1024)
    for name in ("greedy", "heuristic"):
        agent = make_agent(name, rules)
        agent.act(obs, mask, None)
        start = time.perf_counter()
        for _ in range(20):
            agent.act(obs, mask, None)
        rate = 20 * 1024 / (time.perf_counter() - start)
        assert rate >= 100_000, f"{name}: {rate:,.0f} decisions/s"


def test_bootstrap_ci_brackets_mean():
    x = np.random.default_rng(0).normal(3.0, 1.0, 500)
    lo, hi = bootstrap_ci(x)
    assert lo < x.mean() < hi and hi - lo < 0.3


def test_strength_order_classic_2p():
    """Duplicate deals (each played with the seats swapped): greedy beats random and heuristic
    beats greedy on mean margin, with the bootstrap interval above zero."""
    rules = load_rules("classic_2p")
    random, greedy, heuristic = (make_agent(n, rules) for n in NAMES)
    g_vs_r = play_match(rules, greedy, random, deals=300, seed=101).summary()
    h_vs_g = play_match(rules, heuristic, greedy, deals=300, seed=202).summary()
    assert g_vs_r["margin_lo"] > 0 and g_vs_r["win_rate"] > 0.7, g_vs_r
    assert h_vs_g["margin_lo"] > 0 and h_vs_g["win_rate"] > 0.6, h_vs_g
    assert g_vs_r["truncated"] == 0 and h_vs_g["truncated"] == 0


def test_heuristic_config_by_draw_size():
    assert HeuristicConfig.for_rules(load_rules("classic_2p")).pair_take_pile == 8.0
    assert HeuristicConfig.for_rules(load_rules("classic_4p")).pair_take_pile == 4.0


def test_answer_no_when_behind():
    """With ask_partner the heuristic answers no when going out would not pay: checked on the
    answer states met while sampling (both answers occur over enough states or only yes)."""
    rules = load_rules("classic_4p", ask_partner=True)
    agent = make_agent("heuristic", rules)
    seen = set()
    for state in sampled_states(rules, batch=128, steps=80, seed=4):
        rows = np.flatnonzero(state.legal_action_mask[:, ANSWER_YES])
        if rows.size:
            obs = observe(state, state.current_player[rows].astype(np.int64), rows)
            seen.update(agent.act(obs, state.legal_action_mask[rows], None).tolist())
    assert seen and seen <= {ANSWER_YES, ANSWER_NO}


@pytest.mark.parametrize("name", ["greedy", "heuristic", "heuristic:eager", "random"])
def test_act_refuses_a_mask_that_does_not_fit_the_observations(name: str) -> None:
    """The kernels index the mask by the observations' rows and the action layout: a mask of
    another shape would be read outside it (a segfault at 200,000 rows before this check)."""
    from canasta_env import engine as E

    state = E.init("classic_2p", 1, 0)
    obs, mask = E.observe(state, 0), state.legal_action_mask.copy()
    agent = make_agent(name, "classic_2p")
    bad = [mask[:, :50], mask[0], None, np.ones((1, 200), dtype=bool)]
    if name != "random":  # random reads no observation
        bad.append(np.repeat(mask, 3, axis=0))
    for m in bad:
        with pytest.raises(ValueError, match="legal_action_mask of shape"):
            agent.act(obs, m, np.random.default_rng(0))
    assert mask[0, agent.act(obs, mask, np.random.default_rng(0))[0]]


@pytest.mark.parametrize("rules", ["nope", None])
def test_random_refuses_rules_that_are_no_table(rules: object) -> None:
    with pytest.raises(ValueError):
        make_agent("random", rules)  # type: ignore[arg-type]
