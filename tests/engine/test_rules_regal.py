"""Rule scenario tests for the Regal house rules, docs/rules.md G1-G5 (presets regal_2p/3p/4p).

As for the classic rules: each test builds a position with ``canasta_env.scenario``, asserts the
complete legal set derived by hand from docs/rules.md, plays it and checks the state or the score; each
rule has a negative twin that differs minimally (who owns a meld, one score, one option).

Seats in regal_4p: P0 and P2 are side 0, P1 and P3 side 1. Each player owns their melds (G2):
``melds`` is keyed by side as everywhere, each meld naming its seat (``own`` writes them).
Undescribed cards lie in the stock with aces on top.
"""

from __future__ import annotations

import numpy as np
import pytest

from canasta_env.engine import explicit_deal, init, init_from_deals
from canasta_env.engine.cards import JOKER, RED_THREE, TWO
from canasta_env.engine.layout import EV_CONCEALED, EV_WENT_OUT, HE_LAST_RED3, PH_FINAL_MELD
from canasta_env.rules import load_rules
from canasta_env.scenario import scenario
from tests.engine.test_rules_c17_c33 import K7, cards, discards, four, hand, legal, meld, parts, play

# ---- G1: draw 1 at every table size; one canasta of the player's own to go out ----------------------


def own(by_seat: dict[int, list[str]]) -> dict[int, list[str]]:
    """regal_4p melds given per owning seat, as scenario takes them: by side, "P<seat>: " first (G2)."""
    out: dict[int, list[str]] = {}
    for seat, texts in by_seat.items():
        out.setdefault(seat % 2, []).extend(f"P{seat}: {t}" for t in texts)
    return out


@pytest.mark.parametrize(("overrides", "drawn"), [({}, 1), ({"draw_count": 2}, 2)])
def test_g1_draw_one_card(overrides: dict, drawn: int) -> None:
    """G1: regal_2p draws one card (the twin with draw_count 2, classic 2p's value, draws two)."""
    st = scenario(load_rules("regal_2p", **overrides), hands=["5 6 7 8 9", "4 4 6"])
    play(st, "DRAW_STOCK")
    assert int(st.hands[0, 0].sum()) == 5 + drawn


def test_g1_three_players_deal_thirteen() -> None:
    st = init("regal_3p", 4, seed=1)
    assert (st.hands.sum(axis=2) == 13).all()


@pytest.mark.parametrize(("owner", "expected"), [
    (2, discards("5", "7")),  # the canasta is the partner's: melding 5 5 5 would strand one card
    (0, {"MELD_NNN_5", "ASK_PARTNER"} | discards("5", "7")),  # twin: P0's own canasta: going out
])
def test_g1_going_out_needs_the_players_own_canasta(owner: int, expected: set[str]) -> None:
    """G1/G2: P0 holds 5 5 5 7 after drawing; a natural canasta of kings lies on the table. Going out
    (meld 5 5 5, discard 7) needs a canasta of P0's own: the partner's does not count. (Regal 4p
    lets a player who can go out ask the partner first, C29.)"""
    st = scenario("regal_4p", hands=four("5 5 5 7"), melds=own({owner: [K7]}), phase="meld")
    assert legal(st) == expected
    if owner == 0:
        assert play(st, "MELD_NNN_5", "DISCARD_7") & EV_WENT_OUT


@pytest.mark.parametrize(("preset", "canastas", "can_go_out"), [
    ("regal_2p", 1, True), ("classic_2p", 1, False), ("classic_2p", 2, True),
])
def test_g1_one_canasta_suffices_at_two_players(preset: str, canastas: int, can_go_out: bool) -> None:
    """G1: one canasta to go out at every table size; classic 2p needs two (the twin)."""
    melds = [K7] if canastas == 1 else [K7, "Q Q Q Q Q Q Q"]
    st = scenario(preset, hands=["5 5 5 7", "4 4 6"], melds={0: melds}, phase="meld")
    assert ("MELD_NNN_5" in legal(st)) == can_go_out


# ---- G2: each player plays only to their own melds; minimum and scores per team -----------------


@pytest.mark.parametrize(("owner", "expected"), [
    (2, discards("K", "7", "8", "9")),  # the K meld is the partner's: P0 may not add to it
    (0, {"ADD_NATURAL_K"} | discards("K", "7", "8", "9")),  # twin: P0's own meld
])
def test_g2_no_adding_to_a_partners_meld(owner: int, expected: set[str]) -> None:
    st = scenario("regal_4p", hands=four("K 7 8 9"), melds=own({owner: ["K K K"]}), phase="meld")
    assert legal(st) == expected


@pytest.mark.parametrize("owner", [2, 0])
def test_g2_partners_may_each_have_a_meld_of_a_rank(owner: int) -> None:
    """G2: with the partner's K K K on the table P0 starts a K meld of their own; the twin (P0 owns
    the K meld) offers only additions: one meld per rank per player."""
    st = scenario("regal_4p", hands=four("K K K 7 8"), melds=own({owner: ["K K K"]}), phase="meld")
    if owner == 2:
        assert legal(st) == {"MELD_NNN_K"} | discards("K", "7", "8")
        play(st, "MELD_NNN_K", "DISCARD_7")
        assert meld(st, 0, "K") == (3, 0, 0) and meld(st, 2, "K") == (3, 0, 0)
    else:
        assert legal(st) == {"ADD_NATURAL_K"} | discards("K", "7", "8")


@pytest.mark.parametrize("owner", [2, 0])
def test_g2_layoff_take_needs_the_players_own_meld(owner: int) -> None:
    """G2: pile 5 K (not frozen, side opened), P0 holds one K: the top king can only be laid off on
    a K meld of P0's own."""
    st = scenario("regal_4p", hands=four("K 7 8 9"), melds=own({owner: ["K K K"]}), pile="5 K")
    if owner == 2:
        assert legal(st) == {"DRAW_STOCK"}
    else:
        assert legal(st) == {"DRAW_STOCK", "TAKE_PILE_LAYOFF"}
        play(st, "TAKE_PILE_LAYOFF")
        assert meld(st, 0, "K") == (4, 0, 0)
        assert np.array_equal(hand(st, 0), cards("K 5 7 8 9"))


@pytest.mark.parametrize(("owner", "meld_ok"), [(2, True), (1, False)])
def test_g2_minimum_is_per_team(owner: int, meld_ok: bool) -> None:
    """G2/C18: once the partner opened (P2's K K K), P0 melds 5 5 5 (15 < 50) freely; when only an
    opponent has opened (the twin), P0's side still needs its minimum."""
    st = scenario("regal_4p", hands=four("5 5 5 7 8"), melds=own({owner: ["K K K"]}), phase="meld")
    assert legal(st) == discards("5", "7", "8") | ({"MELD_NNN_5"} if meld_ok else set())


@pytest.mark.parametrize(("q_owner", "side0_melds", "side1_melds"), [(2, 115, 0), (1, 85, 30)])
def test_g2_scores_add_up_per_team(q_owner: int, side0_melds: int, side1_melds: int) -> None:
    """G2/C32: P0 (own canasta of kings) goes out; the team's score adds both partners' melds. In the
    twin the Q Q Q belongs to P1 and scores for side 1."""
    st = scenario("regal_4p", hands=four("5 5 5 7"), melds=own({0: [K7], q_owner: ["Q Q Q"]}), phase="meld")
    play(st, "MELD_NNN_5", "DISCARD_7")
    assert parts(st, 0) == {"melds": side0_melds, "canastas": 500, "red_threes": 0, "going_out": 100,
                            "hand": -10}  # P2 still holds 6 6
    assert parts(st, 1)["melds"] == side1_melds
    assert int(st.hand_scores[0, 0]) == side0_melds + 500 + 100 - 10


# ---- G3: a negative score needs no minimum; the upcard is kept ------------------------------------


@pytest.mark.parametrize(("score", "minimum", "meld_ok"), [(-50, 0, True), (0, 50, False)])
def test_g3_negative_score_has_minimum_zero(score: int, minimum: int, meld_ok: bool) -> None:
    """G3: below 0 the minimum is 0 (classic: 15), so 5 5 5 opens; at 0 (the twin) it is 50."""
    st = scenario("regal_2p", hands=["5 5 5 7 8", "4 4 6"], scores=[score, 0], phase="meld")
    assert int(st.minimum[0]) == minimum
    assert legal(st) == discards("5", "7", "8") | ({"MELD_NNN_5"} if meld_ok else set())


def test_g3_wild_or_red_three_upcard_is_kept_and_freezes() -> None:
    """G3/C5 keep: a deal whose first upcard is a wild or a red three leaves it alone on the pile,
    frozen, and nobody may take (C21); the same deal under classic's cover_and_freeze (the twin)
    covers it with more stock cards."""
    st = init("regal_2p", 256, seed=5)
    rows = [b for b in range(256)
            if int(st.pile_size[b]) == 1 and int(st.pile(b)[-1]) in (JOKER, TWO, RED_THREE)]
    assert rows, "no deal with a wild or red-three upcard among 256"
    b = rows[0]
    assert int(st.pile_frozen[b]) == 1
    assert not any(name.startswith("TAKE_PILE") for name in legal_row(st, b))
    classic = init_from_deals("classic_2p", [explicit_deal("regal_2p", st.deal_id(b))])
    assert int(classic.pile_size[0]) > 1 and int(classic.pile(0)[0]) == int(st.pile(b)[0])


def legal_row(st, b: int) -> set[str]:
    from canasta_env.engine import ACTION_NAMES

    return {ACTION_NAMES[a] for a in st.legal_actions(b)}


# ---- G4: at least 2 naturals, at most 3 wilds (wilds may outnumber naturals) --------------------


@pytest.mark.parametrize(("overrides", "third_wild"), [({}, True), ({"wild_le_naturals": True}, False)])
def test_g4_two_naturals_take_three_wilds(overrides: dict, third_wild: bool) -> None:
    st = scenario(load_rules("regal_2p", **overrides), hands=["K K 2 2 2 7 8", "4 4 6"],
                  melds={0: ["Q Q Q"]}, phase="meld")
    play(st, "MELD_NN2_K", "ADD_TWO_K")
    assert ("ADD_TWO_K" in legal(st)) == third_wild
    if third_wild:
        play(st, "ADD_TWO_K")
        assert meld(st, 0, "K") == (2, 0, 3)


# ---- G5: concealed needs the minimum; last red three ends at once; forced take; red threes ------


@pytest.mark.parametrize(("overrides", "expected"), [
    ({}, discards("4", "5")),
    ({"concealed_requires_minimum": False}, {"MELD_NNN_4"} | discards("4", "5")),
])
def test_g5_concealed_go_out_needs_the_minimum(overrides: dict, expected: set[str]) -> None:
    """G5/C30: unopened (minimum 50) after a draw, P0 holds seven 4s and a 5: going out concealed
    (canasta of 4s, discard the 5) is worth 35 < 50, so it is not allowed; without the option (the
    twin) it is, and scores the concealed bonus, 200 in total."""
    st = scenario(load_rules("regal_2p", **overrides), hands=["4 4 4 4 4 4 4 5", "6 6 9"], phase="meld")
    assert legal(st) == expected
    if "MELD_NNN_4" in expected:
        events = play(st, "MELD_NNN_4", *["ADD_NATURAL_4"] * 4, "DISCARD_5")
        assert events & EV_CONCEALED
        assert parts(st, 0)["going_out"] == 200


@pytest.mark.parametrize("mode", ["end_immediately", "may_meld_no_discard"])
def test_g5_last_card_red_three_ends_the_hand_at_once(mode: str) -> None:
    st = scenario(load_rules("regal_2p", last_card_red3=mode), hands=["5 5 5 7 8", "4 4 6"],
                  melds={0: ["K K K"]}, stock_top="R3", rest="pile")
    play(st, "DRAW_STOCK")
    if mode == "end_immediately":
        assert bool(st.terminated[0]) and int(st.hand_end[0]) == HE_LAST_RED3
        assert parts(st, 0)["going_out"] == 0
    else:  # the twin: C31a's final meld phase
        assert int(st.phase[0]) == PH_FINAL_MELD and not bool(st.terminated[0])


@pytest.mark.parametrize(("mode", "expected"), [
    ("forced_if_legal", {"TAKE_PILE_PAIR"}),
    ("forced_if_layoff", {"TAKE_PILE_PAIR", "END_HAND"}),
])
def test_g5_exhausted_stock_take_forced_whenever_legal(mode: str, expected: set[str]) -> None:
    """G5/C31b: empty stock, P0 holds K K and the pile's top is a K: under Regal the legal take is
    compulsory; under classic's rule (the twin) only a lay-off would be, so ending is allowed."""
    st = scenario(load_rules("regal_2p", exhausted_stock_take=mode), hands=["K K 7 8", "4 4 6"],
                  melds={0: ["Q Q Q"]}, pile="K", rest="pile")
    assert int(st.stock_size[0]) == 0
    assert legal(st) == expected


@pytest.mark.parametrize(("mode", "red"), [("player_no_meld", 0), ("no_meld", 200)])
def test_g5_red_threes_minus_per_player_without_melds(mode: str, red: int) -> None:
    """G5/C10: P0 (melded) and P2 (no meld this hand) each laid down a red three; P0 goes out.
    Per player, P2's counts minus: +100 - 100 = 0. Under no_meld (the twin) the side melded: +200."""
    st = scenario(load_rules("regal_4p", red3_negative_if=mode), hands=four("5 5 5 7"),
                  melds={0: [K7]}, red_threes={0: 1, 2: 1}, phase="meld")
    play(st, "MELD_NNN_5", "DISCARD_7")
    assert parts(st, 0)["red_threes"] == red


@pytest.mark.parametrize(("opened", "expected"), [
    (False, {"DRAW_STOCK"}), (True, {"DRAW_STOCK", "TAKE_PILE_NAT_JOKER"}),
])
def test_g5_pile_frozen_against_an_unopened_side(opened: bool, expected: set[str]) -> None:
    """G5/C20: the manual is silent; docs/rules.md keeps the freeze against an unopened side: with one K
    and a joker P0 may take an unfrozen pile topped by a K only once the side has opened (twin)."""
    st = scenario("regal_2p", hands=["K JK 7 8 9", "4 4 6"], melds={0: ["Q Q Q"]} if opened else None,
                  pile="5 K")
    assert legal(st) == expected
