"""Randomized invariants over many hands for every shipped preset (canasta_env.testing)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from canasta_env.engine import ACTION_NAMES, action_index, step_one
from canasta_env.engine.cards import KIND_NAMES
from canasta_env.engine.layout import (
    EV_ALL_KINDS_OUT,
    EV_BLACK3_MELD,
    EV_CONCEALED,
    EV_LAST_RED3,
    EV_RED3_NEGATIVE,
    EV_WENT_OUT,
)
from canasta_env.rules import load_rules, preset_names
from canasta_env.scenario import scenario
from canasta_env.testing import (
    RuleCoverage,
    check_batch_independence,
    check_expansion,
    check_random_play,
)

PRESETS = preset_names()  # every shipped preset, variants included
# The two sweeps below build classic situations; Regal's versions (concealed needs the minimum, the
# last red three ends the hand at once, red threes judged per player) are tests/engine/test_rules_regal.py
CLASSIC = [p for p in PRESETS if p.startswith("classic")]
# Railroad and Pennies: capped melds, four canasta kinds, kitty or foot (R1-R8, P1-P6)
VARIANTS = [p for p in PRESETS if load_rules(p).canasta_kinds == "four"]
# Hands per agent. 1,000 keep every listed path at 46 or more hits over both agents, twice the
# threshold below (measured at seed 11: classic_3p all_red3 48, regal_3p all_red3 47, pennies_4p
# wild_canasta 48, railroad_4p wild_canasta 46); the two presets whose rarest path stays under 40
# at 1,000 (pennies_6p wild_canasta 19, railroad_2p wild_canasta 25) play twice as many.
HANDS = int(os.environ.get("CANASTA_CHECK_HANDS", "1000"))
HANDS_FOR = {"pennies_6p": 2 * HANDS, "railroad_2p": 2 * HANDS}
# Rule paths every classic preset must exercise in random play (>= 20 times over both agents).
COMMON_PATHS = ["went_out", "pile_take", "frozen_take", "open_by_take", "layoff_take",
                "red3_drawn", "canasta", "opened", "black3_meld", "stop_card", "stock_out_end",
                "frozen_upcard", "all_red3"]  # last_red3 and red3_negative: swept below
# The variants' paths; going out with every kind (and the black-three meld with it) is swept below:
# random play seldom closes a wild canasta, which going out needs.
VARIANT_PATHS = ["pile_take", "frozen_take", "open_by_take", "layoff_take", "red3_drawn", "canasta",
                 "opened", "stop_card", "stock_out_end", "frozen_upcard", "last_red3",
                 "reserve_pickup", "wild_canasta", "sevens_canasta", "sevens_held", "no_discard_end"]
# Most decisions a hand may take, documented in docs/engine.md "Decisions per hand": the variants'
# stocks are 2-5 times classic's, so their hands are longer.
MAX_DECISIONS = {"railroad_2p": 500, "railroad_4p": 900, "pennies_4p": 400, "pennies_6p": 400}


@pytest.mark.parametrize("preset", PRESETS)
def test_random_play_invariants_and_coverage(preset: str) -> None:
    """Conservation, live masks, no step cap, scores = independent parts; paths all fire."""
    coverage = RuleCoverage()
    hands = HANDS_FOR.get(preset, HANDS)
    for agent in ("random", "eager"):
        report = check_random_play(preset, hands, agent, seed=11)
        assert report.hands >= hands
        assert report.max_decisions_per_hand < MAX_DECISIONS.get(preset, 400), \
            "a hand took more decisions than documented"
        coverage.counts.update(report.coverage.counts)
    paths = VARIANT_PATHS if preset in VARIANTS else COMMON_PATHS
    if preset.startswith("pennies"):  # P6: all eight red threes on one side is rarer (>= 5 here)
        paths = paths + ["red3_negative", "forced_take"]
        assert coverage.counts["all_red3"] >= 5, dict(coverage.counts)
    assert coverage.missing(paths) == [], dict(coverage.counts)


_KIND_PARTS = {  # an open meld one play short of its canasta kind, and the hand card that closes it
    0: ("K K K K K K", "K"),
    1: ("Q Q Q Q JK", "Q 2"),
    2: ("JK 2 2 2 2 2", "2"),
    3: ("7 7 7 7 7 7", "7"),
}
_CLOSED = {0: "A A A A A A A", 1: "9 9 9 9 9 2 JK", 2: "JK JK 2 2 2 2 2", 3: "7 7 7 7 7 7 7"}


def _others(players: int) -> dict[int, str]:
    """A black three for every seat but 0: no live game has an empty hand (C19), and a held black
    three plays no part in the sweeps below."""
    return {p: "B3" for p in range(1, players)}


@pytest.mark.parametrize("preset", VARIANTS)
def test_sweep_go_out_with_every_kind(preset: str) -> None:
    """R8, P6: going out with one canasta of each kind is rare in random play; sweep built states
    where one kind is a play away and play random legal moves, melds first."""
    rng = np.random.default_rng(17)
    rules = load_rules(preset)
    out = b3 = 0
    for _ in range(100):
        missing = int(rng.integers(4))
        open_meld, closer = _KIND_PARTS[missing]
        extra = rng.choice(["5 5 5", "B3 B3 B3", "J J J JK", "6 6 6 6"])
        hand = f"{closer} {extra} 8"
        closed = [_CLOSED[k] for k in range(4) if k != missing]
        state = scenario(preset, {0: hand, **_others(rules.num_players)}, melds={0: [open_meld]},
                         closed={0: closed},
                         phase="meld", scores=[0] * rules.num_sides)
        seen = 0
        while int(state.current_player[0]) == 0 and not state.terminated[0]:
            names = [ACTION_NAMES[a] for a in state.legal_actions(0)]
            melds = [n for n in names if not n.startswith("DISCARD")]
            choice = rng.choice(melds) if melds and rng.random() < 0.9 else rng.choice(names)
            seen |= int(step_one(state, action_index(str(choice))).events[0])
        if seen & EV_WENT_OUT:
            assert seen & EV_ALL_KINDS_OUT
            assert state.closed_canastas[0, 0].min() >= 1
            assert state.score_parts[0, 0, 3] == rules.go_out_bonus
            out += 1
            b3 += bool(seen & EV_BLACK3_MELD)
    assert out >= 20 and b3 >= 5, (out, b3)


@pytest.mark.parametrize("preset", PRESETS)
def test_batch_rows_play_like_batch_of_one(preset: str) -> None:
    check_batch_independence(preset, batch=1024, rows=64, games=3)


@pytest.mark.parametrize("preset", PRESETS)
def test_every_legal_action_expands(preset: str) -> None:
    assert check_expansion(preset, 5000) > 5000


def _concealed_hand(rng: np.random.Generator) -> tuple[str, int, int, str]:
    ranks = rng.choice(np.arange(4, 15), size=3, replace=False)
    r, q, extra = (KIND_NAMES[int(k)] for k in ranks)
    return " ".join([r] * 7 + [q] * 3 + [extra]), int(ranks[0]), int(ranks[1]), extra


@pytest.mark.parametrize("preset", CLASSIC)
def test_sweep_concealed_go_out(preset: str) -> None:
    """C30 is rare in random play: sweep 1,000 built states where a concealed go-out is played."""
    rng = np.random.default_rng(5)
    hits, players = 0, load_rules(preset).num_players
    for _ in range(1000 // len(CLASSIC) + 1):
        hand, r, q, extra = _concealed_hand(rng)
        state = scenario(preset, {0: hand, **_others(players)}, phase="meld",
                         scores=[int(rng.integers(-500, 3500))] * (2 if preset != "classic_3p" else 3))
        slot_r, slot_q = KIND_NAMES[r], KIND_NAMES[q]
        plays = [f"MELD_NNN_{slot_r}"] + [f"ADD_NATURAL_{slot_r}"] * 4 + [f"MELD_NNN_{slot_q}"]
        if preset == "classic_2p":  # two canastas needed with 2 players (C28): no go-out here
            assert f"DISCARD_{extra}" in {ACTION_NAMES[a] for a in state.legal_actions(0)}
            continue
        for name in plays:
            step_one(state, action_index(name))
        result = step_one(state, action_index(f"DISCARD_{extra}"))
        assert result.events[0] & EV_CONCEALED
        assert state.score_parts[0, 0, 3] == 200
        hits += 1
    assert hits >= 300 or preset == "classic_2p"


@pytest.mark.parametrize("preset", CLASSIC)
def test_sweep_red_three_negative_and_last_card(preset: str) -> None:
    """C10 minus and C31a: sweep built states; both paths must fire."""
    rng = np.random.default_rng(9)
    negative = last = 0
    sides = 3 if preset == "classic_3p" else 2
    for _ in range(300):
        seat_reds = int(rng.integers(1, 3))
        state = scenario(preset, {0: "4 9 K Q", **_others(load_rules(preset).num_players)},
                         red_threes={1: seat_reds}, rest="pile",
                         stock_top="R3", pile_frozen=True, turn=0, scores=[0] * sides)
        result = step_one(state, action_index("DRAW_STOCK"))
        last += bool(result.events[0] & EV_LAST_RED3)
        assert state.hands[0, 0].sum() == 4  # the red three was laid down, no replacement left
        # meld nothing and end the hand: seat 1's side has no meld, so its red threes count minus
        result = step_one(state, action_index("END_HAND"))
        negative += bool(result.events[0] & EV_RED3_NEGATIVE)
        side1 = 1 % sides
        assert state.score_parts[0, side1, 2] == -100 * seat_reds
    assert negative >= 20 and last >= 20
