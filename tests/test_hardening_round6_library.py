"""Hardening, round six: the library API a researcher calls directly (env adapters, records, rules,
scenarios, luck correction, agents). Each hostile input has a twin showing the valid neighbour
still works."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from agents import make_agent
from canasta_env.engine import DealId, ExplicitDeal, explicit_deal, init, step
from canasta_env.envs.gym_env import CanastaEnv
from canasta_env.envs.pettingzoo_env import raw_env
from canasta_env.envs.sb3_env import CanastaVecEnv
from canasta_env.luck import LuckTracker
from canasta_env.policy import RandomAgent
from canasta_env.records import BatchRecorder, HandRecord, RecordError, read_records, replay, write_records
from canasta_env.rules import RulesError, load_rules
from canasta_env.scenario import ScenarioError, scenario


def _one_line(exc: pytest.ExceptionInfo[BaseException], *parts: str) -> None:
    text = str(exc.value)
    assert "\n" not in text, text
    for part in parts:
        assert part in text, text


# ---- the random agent's mask ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def table() -> tuple[np.ndarray, np.ndarray]:
    state = init("classic_2p", 4, seed=1)
    return np.zeros((4, 0), np.float32), state.legal_action_mask.copy()


@pytest.mark.parametrize("spoil", [lambda m: m.astype(str), lambda m: np.where(m, 1.0, np.nan),
                                   lambda m: m.astype(np.int64) * 2])
def test_the_random_agent_refuses_a_mask_that_is_not_booleans(table, spoil) -> None:
    obs, mask = table
    with pytest.raises(ValueError) as exc:  # before: 'False' and NaN read as legal, illegal actions played
        RandomAgent().act(obs, spoil(mask), np.random.default_rng(0))
    _one_line(exc, "random: act", "legal_action_mask")


def test_the_random_agent_still_plays_a_bool_or_0_1_mask(table) -> None:  # the twin
    obs, mask = table
    for given in (mask, mask.astype(np.int8), mask.astype(np.float32), mask.tolist()):
        acts = make_agent("random", "classic_2p").act(obs, given, np.random.default_rng(0))
        assert mask[np.arange(4), acts].all()
    assert RandomAgent().act(obs, np.zeros_like(mask), np.random.default_rng(0)).tolist() == [-1] * 4


# ---- PettingZoo's action_to_string ----------------------------------------------------------------

@pytest.mark.parametrize("action", [-1, 106, 10**30, 1.7, "3", True, None])
def test_action_to_string_refuses_what_is_no_action(action) -> None:
    with pytest.raises(ValueError) as exc:  # before: -1 'ANSWER_NO', 1.7 'END_HAND', 106 IndexError
        raw_env.action_to_string(action)
    _one_line(exc, "canasta_v0 action_to_string")


def test_action_to_string_still_names_actions() -> None:  # the twin
    assert raw_env.action_to_string(0) == "DRAW_STOCK"
    assert raw_env.action_to_string(np.int64(1)) == "END_HAND"


# ---- writing records -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def hand() -> HandRecord:
    state = init("classic_2p", 1, seed=3)
    recorder, agent, rng = BatchRecorder(state, ["a", "b"]), RandomAgent(), np.random.default_rng(0)
    out: list[HandRecord] = []
    while not out:
        acts = agent.act(np.zeros((1, 0), np.float32), state.legal_action_mask, rng)
        out = recorder.record(acts, step(state, acts))
    return out[0]


@pytest.mark.parametrize(("edit", "said"), [
    (lambda r: {"meta": {"round": np.int64(3)}}, "not JSON serializable"),
    (lambda r: {"actions": [-1, *r.actions[1:]]}, "action #0 = -1"),
    (lambda r: {"actions": [*r.actions, 500]}, "= 500"),
    (lambda r: {"actions": [np.int64(a) for a in r.actions]}, "action #0 = np.int64"),
    (lambda r: {"scores_before": [0, 0, 0]}, "scores_before"),
])
def test_write_records_refuses_a_record_that_would_not_read_back(hand, tmp_path: Path, edit, said) -> None:
    path = tmp_path / "hands.jsonl"
    write_records(path, [hand])
    before = path.read_bytes()
    bad = dataclasses.replace(hand, **edit(hand))
    with pytest.raises(RecordError) as exc:  # before: written, and the reader refused the file from there
        write_records(path, [hand, bad])  # (or a TypeError / IndexError traceback)
    _one_line(exc, "record 1", said)
    assert path.read_bytes() == before  # nothing of the call written
    assert read_records(path) == [hand]


def test_write_records_still_writes_and_reads_back_records(hand, tmp_path: Path) -> None:  # the twin
    path = tmp_path / "hands.jsonl"
    noted = dataclasses.replace(hand, meta={"round": 3, "note": [1, "x"]})
    assert write_records(path, [hand, noted]) == 2
    assert read_records(path) == [hand, noted]
    assert replay(dataclasses.replace(hand, actions=[np.int64(a) for a in hand.actions])) is not None


# ---- SB3's set_options ---------------------------------------------------------------------------

@pytest.mark.parametrize("options", [[{"learner_seat": 0}, {"learner_seat": 1}], [{"learner_seat": 1}],
                                     5, "learner_seat", [{"learner_seat": 0}, 3]])
def test_sb3_set_options_refuses_options_it_cannot_apply_per_env(options) -> None:
    env = CanastaVecEnv(2)
    with pytest.raises(ValueError) as exc:  # before: env 0's seat for every env, or a TypeError at reset
        env.set_options(options)
    _one_line(exc, "CanastaVecEnv.set_options")


def test_sb3_set_options_still_sets_one_seat_for_every_env() -> None:  # the twin
    env = CanastaVecEnv(2)
    same = [{"learner_seat": 1}, {"learner_seat": 1}]
    for options, seats in ((same, [1, 1]), ({"learner_seat": 0}, [0, 0])):
        env.set_options(options)
        env.reset()
        assert env.venv.core.seat.tolist() == seats


# ---- the search agent's rules --------------------------------------------------------------------

def test_the_search_agent_takes_rules_as_every_agent_does(tmp_path: Path) -> None:
    rules = load_rules("classic_2p")
    path = tmp_path / "two.yaml"
    path.write_text("name: two\nnum_players: 2\n")
    for given in (rules.to_dict(), path):  # before: AttributeError 'dict' has no attribute 'resolved'
        agent = make_agent("search:k=2", given)
        assert agent.rules == load_rules(given)


def test_the_search_agent_refuses_no_rules_in_one_line() -> None:  # the twin: still refused
    with pytest.raises(RulesError) as exc:
        make_agent("search:k=2", None)  # type: ignore[arg-type]
    _one_line(exc, "rules must be")


# ---- the luck tracker ------------------------------------------------------------------------------

def test_the_luck_tracker_refuses_a_game_episode_or_a_hand_under_way() -> None:
    with pytest.raises(ValueError) as exc:  # before: a RuntimeError after the whole first hand
        LuckTracker(init("classic_2p", 2, seed=1, episode="game"))
    _one_line(exc, "luck correction", "episode='game'")
    state = init("classic_2p", 2, seed=1)
    step(state, state.legal_action_mask.argmax(axis=1))
    with pytest.raises(ValueError) as exc:  # before: features of hands in play, biased in silence
        LuckTracker(state)
    _one_line(exc, "luck correction", "row 0", "right after the deal")


def test_the_luck_tracker_still_starts_on_a_fresh_deal() -> None:  # the twin
    assert LuckTracker(init("classic_2p", 2, seed=1)).features.shape[:2] == (2, 2)


# ---- scenario seats, the meld table -----------------------------------------------------------------

def test_a_scenario_seat_prefix_of_other_digits_is_refused_naming_the_meld() -> None:
    hands = ["5 5 5 K", "Q Q 9", "4 4", "6 6"]
    with pytest.raises(ScenarioError) as exc:  # before: "invalid literal for int()"
        scenario("regal_4p", hands=hands, melds={0: ["P²: K K K"]})
    _one_line(exc, "melds[0][0]", "not a seat of side 0")
    assert scenario("regal_4p", hands=hands, melds={0: ["P2: K K K"]}).meld_naturals[0, 2].sum() == 3


def test_a_meld_table_bound_given_twice_is_refused() -> None:
    with pytest.raises(RulesError) as exc:  # before: accepted, the row [0, 50] never used
        load_rules("classic_2p", initial_meld_table=[[None, 15], [0, 50], [0, 90]])
    _one_line(exc, "initial_meld_table", "increasing")
    rules = load_rules("classic_2p", initial_meld_table=[[None, 15], [0, 50], [1, 90]])  # the twin
    assert (rules.minimum_for(0), rules.minimum_for(1)) == (50, 90)


# ---- Canasta-v0's explicit deal option --------------------------------------------------------------

def test_a_refused_explicit_deal_keeps_the_envs_own_deals() -> None:
    good = explicit_deal("classic_2p", DealId(1, 0, 0))
    env = CanastaEnv()
    env.reset(seed=5)
    with pytest.raises(ValueError) as exc:  # before: "redeal: ...", after seed 9's deals had started
        env.reset(seed=9, options={"deal": ExplicitDeal(good.order, 7)})
    _one_line(exc, "Canasta-v0 reset: option 'deal'", "dealer")
    assert env.reset()[1]["deal"] == (5, 0, 1)  # before: (9, 0, 1)
    _, info = env.reset(seed=9, options={"deal": good})  # the twin
    assert info["deal"] == (9, 0, 0) and env.action_masks().any()
