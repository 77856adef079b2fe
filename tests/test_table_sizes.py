"""Five and six players: three-pack classic tables, each for themselves and in two teams of three,
and Railroad at 6 players (R1: 12 packs + 12 jokers, 636 cards), which has no preset. The engine's
invariants and every adapter's contract must hold as at 2-4 players (Pennies at 6 players is a
preset and runs with the others)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest
from pettingzoo.test import api_test, seed_test

import canasta_env
from agents import make_agent
from canasta_env.engine import init, observe, step
from canasta_env.rules import RulesError, load_rules
from canasta_env.testing import check_batch_independence, check_expansion, check_random_play

RAILROAD_6P = load_rules(Path(__file__).parents[1] / "configs" / "rules" / "railroad_6p.yaml").to_dict()
TABLES = {
    "five": {"name": "five", "num_players": 5, "packs": 3, "jokers": 6},
    "six": {"name": "six", "num_players": 6, "packs": 3, "jokers": 6},
    "six_teams": {"name": "six_teams", "num_players": 6, "partnerships": True, "packs": 3, "jokers": 6},
    "railroad_6p": RAILROAD_6P,
}


@pytest.fixture(params=list(TABLES))
def rules(request: Any) -> Any:
    return load_rules(TABLES[request.param])


def test_sizes_and_sides() -> None:
    six, teams = load_rules(TABLES["six"]), load_rules(TABLES["six_teams"])
    assert (six.num_sides, six.hand_size, six.draw_count) == (6, 13, 1)
    assert teams.num_sides == 2  # seats 0, 2, 4 against 1, 3, 5
    st = init(teams, 8, seed=1)
    assert st.hands.shape == (8, 6, 15) and (st.hands.sum(axis=2) == 13).all()
    assert st.scores.shape == (8, 2) and st.meld_naturals.shape == (8, 2, 13)
    with pytest.raises(RulesError, match="two teams of 2 or 3 players"):
        load_rules({"num_players": 5, "partnerships": True, "packs": 3, "jokers": 6})
    with pytest.raises(RulesError, match="4-player partnership"):
        load_rules(dict(TABLES["six_teams"], ask_partner=True))


def test_random_play_invariants(rules: Any) -> None:
    """Conservation of the 162- or 636-card deck, live masks, no step cap, scores = independent
    parts. Railroad's 6-player hands are long (a 491-card stock drawn two at a time, about 1,100
    decisions) and seldom go out (every canasta kind is needed): fewer hands, kitties instead.
    Measured at these sizes (per agent, seed 5): 99 to 500 go-outs at three packs, about 700
    kitty pickups in Railroad, the longest hands 290 and 964 decisions."""
    railroad = rules.name == "railroad_6p"
    hands, most = (100, 1600) if railroad else (500, 400)
    for agent in ("random", "eager"):
        report = check_random_play(rules, hands, agent, seed=5, batch=64 if railroad else 256)
        assert report.hands >= hands and report.max_decisions_per_hand < most
        assert report.coverage.counts["canasta"] > 0
        assert report.coverage.counts["reserve_pickup" if railroad else "went_out"] > 0


def test_railroad_6p_vec_env_matches_gym_envs() -> None:
    """The SB3 VecEnv differential test (tests/test_sb3_env.py) at Railroad's 6-player table: 400
    learner steps of 16 rows (a random learner decides about 190 times a hand here; measured: 50
    hands, every row through two or more hand ends and their next deals)."""
    from test_sb3_env import _run_sb3_differential

    hands, _, rows_ended = _run_sb3_differential(load_rules(RAILROAD_6P), 16, 400, seed=6)
    assert hands >= 16 and rows_ended == 16


def test_batch_rows_and_expansion(rules: Any) -> None:
    check_batch_independence(rules, batch=256, rows=16, games=2)
    assert check_expansion(rules, 2000) > 2000


def test_team_scores_are_shared() -> None:
    """In two teams of three every seat of a side gets its side's reward."""
    rules = load_rules(TABLES["six_teams"])
    st = init(rules, 64, seed=2)
    rng = np.random.default_rng(0)
    for _ in range(2000):
        live = np.flatnonzero(~(st.terminated | st.truncated))
        if live.size == 0:
            break
        keys = np.where(st.legal_action_mask[live], rng.random((live.size, st.num_actions)), -1)
        result = step(st, keys.argmax(axis=1), live)
        done = live[result.terminated]
        for b in done:
            r = result.rewards[np.flatnonzero(live == b)[0]]
            assert r[0] == r[2] == r[4] and r[1] == r[3] == r[5] and r[0] == -r[1]
    assert (st.terminated | st.truncated).all()


@pytest.mark.filterwarnings("ignore:canasta_v0 reset options other than",
                            "ignore:Observation space for each agent probably",
                            "ignore:Observation is not a NumPy array")
@pytest.mark.parametrize("make", [canasta_env.env, canasta_env.raw_env], ids=["env", "raw_env"])
def test_pettingzoo_api(rules: Any, make: Any) -> None:
    api_test(make(rules), num_cycles=500, verbose_progress=False)


def test_pettingzoo_seed(rules: Any) -> None:
    seed_test(lambda: canasta_env.env(rules), num_cycles=300)


def test_gymnasium_and_sb3_check_env(rules: Any) -> None:
    from gymnasium.utils.env_checker import check_env as gym_check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gym_check_env(gymnasium.make("canasta_env:Canasta-v0", rules=rules).unwrapped)
        sb3_check_env(gymnasium.make("canasta_env:Canasta-v0", rules=rules))


def test_rule_agents_play_legally(rules: Any) -> None:
    st = init(rules, 128, seed=4)
    agents = [make_agent(name, rules) for name in ("greedy", "heuristic")]
    for i in range(600):
        live = np.flatnonzero(~(st.terminated | st.truncated))
        if live.size == 0:
            break
        obs = observe(st, st.current_player[live].astype(np.int64), live)
        actions = agents[i % 2].act(obs, st.legal_action_mask[live], None)
        assert st.legal_action_mask[live, actions].all()
        step(st, actions, live)


@pytest.mark.usefixtures("one_torch_thread")
def test_maskable_ppo_smoke(rules: Any) -> None:
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import VecMonitor

    from canasta_env.envs.sb3_env import CanastaVecEnv

    venv = VecMonitor(CanastaVecEnv(32, rules))
    model = MaskablePPO("MlpPolicy", venv, n_steps=32, batch_size=256, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=1024)
    assert model.num_timesteps >= 1024
