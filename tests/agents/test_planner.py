"""The planner (agents.rule_based.planner): each of its decisions on a described table, with a twin
table where the other choice is right; its names and their refusals; legal, deterministic play on
every preset."""

from __future__ import annotations

import numpy as np
import pytest

from agents import agent_key, make_agent
from agents.match import play_match
from agents.rule_based.planner import FIELD_RANGES, FIELDS, PROFILES, planner_config
from canasta_env.engine import observe
from canasta_env.engine.actions import DISCARD, DRAW_STOCK, MELD_NNN, TAKE_PILE_PAIR
from canasta_env.engine.cards import FIVE, KING, SEVEN
from canasta_env.scenario import scenario

PRESETS = ("classic_2p", "classic_3p", "classic_4p", "regal_2p", "regal_4p", "railroad_2p", "railroad_4p",
           "pennies_4p", "pennies_6p")


def planner_move(name: str = "planner", **table: object) -> int:
    """The planner's action for seat 0 of the classic_2p table ``scenario`` builds from ``table``."""
    state = scenario("classic_2p", **table)  # type: ignore[arg-type]
    agent = make_agent(name, "classic_2p")
    obs = observe(state, np.zeros(1, np.int64), np.zeros(1, np.int64))
    return int(agent.act(obs, state.legal_action_mask[:1].copy())[0])


HAND = "K K 9 8 6 5 4 4 J J 7 Q"
MELDS = {0: ["A A A"], 1: ["9 9 9"]}


def test_a_big_pile_is_taken_with_a_pair() -> None:
    assert planner_move(hands=[HAND, "A A A 9 9"], pile="8 6 T Q Q K", melds=MELDS) == TAKE_PILE_PAIR


def test_a_one_card_pile_is_left_for_a_stock_draw() -> None:
    assert planner_move(hands=[HAND, "A A A 9 9"], pile="K", melds=MELDS) == DRAW_STOCK


def test_with_its_canastas_and_ahead_it_lays_the_hand_down_to_go_out() -> None:
    melds = {0: ["Q Q Q Q Q Q Q", "J J J J J J J"], 1: ["9 9 9"]}
    move = planner_move(hands=["5 5 5 9", "A A A 8 8"], melds=melds, opened=[True, True], phase="meld")
    assert move == MELD_NNN + FIVE - 4


def test_without_its_canastas_it_keeps_its_hand() -> None:
    melds = {0: ["Q Q Q Q Q Q Q", "J J J J"], 1: ["9 9 9"]}
    move = planner_move(hands=["5 5 5 9", "A A A 8 8"], melds=melds, opened=[True, True], phase="meld")
    assert DISCARD <= move < DISCARD + 15  # no meld: three fives would leave it a card


def test_it_does_not_discard_a_rank_the_next_side_can_lay_off() -> None:
    move = planner_move(hands=["7 K Q Q J J", "8 8 9 9"], melds={0: ["A A A"], 1: ["K K K"]},
                        opened=[True, True], phase="meld", pile="4 6")
    assert move == DISCARD + SEVEN


def test_twin_it_discards_the_king_when_the_next_side_melded_sevens() -> None:
    move = planner_move(hands=["7 K Q Q J J", "8 8 9 9"], melds={0: ["A A A"], 1: ["7 7 7"]},
                        opened=[True, True], phase="meld", pile="4 6")
    assert move == DISCARD + KING


# ---- names --------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec, words", [
    ("nosuch", "unknown profile 'nosuch'"),
    ("racer,speed=3", "'speed=3' is not FIELD=VALUE"),
    ("racer,safety", "'safety' is not FIELD=VALUE"),
    ("racer,safety=fast", "safety = 'fast' is not a number"),
    ("racer,safety=nan", "safety = 'nan' is outside [0, 5]"),
    ("racer,safety=inf", "safety = 'inf' is outside"),
    ("racer,safety=5.5", "safety = '5.5' is outside [0, 5]"),
    ("racer,out_margin=-2001", "out_margin = '-2001' is outside [-2000, 2000]"),
])
def test_a_bad_planner_name_is_one_line(spec: str, words: str) -> None:
    with pytest.raises(ValueError, match="planner") as err:
        make_agent(f"planner:{spec}", "classic_2p")
    assert words in str(err.value) and "\n" not in str(err.value)


def test_twin_profiles_and_fields_are_read() -> None:
    assert all(FIELD_RANGES[f][0] <= v <= FIELD_RANGES[f][1] for name in PROFILES
               for f, v in zip(FIELDS, planner_config(name), strict=True))
    assert planner_config("racer,out_margin=-2000")[list(FIELDS).index("out_margin")] == -2000
    racer = planner_config("racer")
    changed = planner_config("racer, safety = 2.5")
    assert (changed != racer).sum() == 1 and changed.max() >= 2.5
    assert all(planner_config(name).shape == racer.shape for name in PROFILES)
    assert (planner_config("safety=3") != planner_config("balanced")).sum() == 1


def test_spellings_of_one_planner_are_one_agent() -> None:
    assert agent_key("planner", "classic_2p") == agent_key("planner:balanced", "classic_2p")
    assert agent_key("planner: racer", "classic_2p") == agent_key("planner:racer,safety=1", "classic_2p")
    assert agent_key("planner:racer", "classic_2p") != agent_key("planner:banker", "classic_2p")


# ---- play ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("preset", PRESETS)
def test_it_plays_every_preset_legally_and_the_same_way_twice(preset: str) -> None:
    first = play_match(preset, make_agent("planner", preset), make_agent("heuristic", preset), 6, seed=3)
    again = play_match(preset, make_agent("planner", preset), make_agent("heuristic", preset), 6, seed=3)
    assert first.truncated == 0 and np.array_equal(first.margins, again.margins)
