"""Rule scenario tests for Pennies from Heaven, docs/rules.md P1-P6 (presets pennies_6p, pennies_4p).

As for the other variants: each test builds a position with ``canasta_env.scenario``, asserts the
complete legal set derived by hand from docs/rules.md, plays it and checks the state or the score; each
rule has a negative twin that differs minimally (one card, one meld size, one score, one option).

Seats alternate between the two teams (side = seat % 2): in pennies_4p P0 and P2 are side 0, P1
and P3 side 1; in pennies_6p P0, P2, P4 are side 0. Melds, closed canastas and minimums belong to
the side (``melds`` and ``closed`` are keyed by side); the foot belongs to the player. A seat not
named in ``reserves`` already holds its foot (empty, in hand). Undescribed cards lie in the stock
with aces on top.
"""

from __future__ import annotations

import numpy as np
import pytest

from canasta_env.engine import init
from canasta_env.engine.cards import JOKER, RED_THREE, SEVEN
from canasta_env.engine.core import State
from canasta_env.engine.layout import (
    EV_NO_DISCARD_END,
    EV_RESERVE_PICKUP,
    EV_WENT_OUT,
    HE_NO_DISCARD,
    HE_WENT_OUT,
    PH_MELD,
    RES_DOWN,
    RES_IN_HAND,
    deck_counts,
)
from canasta_env.rules import load_rules
from canasta_env.scenario import scenario
from tests.engine.test_rules_c17_c33 import K7, cards, discards, four, hand, legal, meld, parts, play
from tests.engine.test_rules_railroad import (
    ALL_KINDS,
    MIXED7,
    SEVENS7,
    WILD7,
    all_cards,
    assert_cards_conserved_in_play,
    kinds,
)

FOOT = "R3 4 4 5 5 6 6 8 8 T T"  # a face-down foot with a red three (P3)
FOOT_CARDS = "4 4 5 5 6 6 8 8 T T"


def six(**seats: str) -> list[str]:
    """Hands of pennies_6p: ``p0="..."`` etc.; the others hold a pair of fours."""
    return [seats.get(f"p{s}", "4 4") for s in range(6)]


# ---- P1: 6 players in two teams of 3; 216 cards; 13 cards + an 11-card foot; 72-card stock -----


@pytest.mark.parametrize(("preset", "players", "size", "hand_size", "foot", "left"), [
    ("pennies_6p", 6, 216, 13, 11, 72),
    ("pennies_4p", 4, 216, 13, 11, 120),  # our 4-player form: the same 216 cards
    ("classic_4p", 4, 108, 11, 0, 64),  # twin: classic partnership, 108 cards, no foot
])
def test_p1_deck_deal_and_stock(preset: str, players: int, size: int, hand_size: int, foot: int,
                                left: int) -> None:
    """P1/C6: 4 packs + 8 jokers; 13 cards and an 11-card face-down foot each; the cards left
    (stock before the upcard) are 72 at six players: they are now the stock, the pile and the red
    threes laid down from the hands (each replaced from the stock)."""
    rules = load_rules(preset)
    assert rules.deck_size == size and rules.num_players == players
    st = init(rules, 8, seed=2)
    counts = deck_counts(st.params)
    assert int(counts.sum()) == size
    if foot:
        assert int(counts[JOKER]) == 8
    assert (st.hands.sum(axis=2) == hand_size).all()
    assert (st.reserves.sum(axis=2) == foot).all()
    assert (st.reserve_state == (RES_DOWN if foot else RES_IN_HAND)).all()
    assert np.array_equal(st.stock_size + st.pile_size + st.red_threes.sum(axis=1), np.full(8, left))
    for b in range(8):
        assert np.array_equal(all_cards(st, b), counts)


@pytest.mark.parametrize("seat", range(6))
def test_p1_two_teams_of_three_alternating_seats(seat: int) -> None:
    """P1: pennies_6p has two sides, seats alternating: the K K K of side 0 takes a king from P0,
    P2 and P4 (their side's meld, C14), never from P1, P3 or P5."""
    st = scenario("pennies_6p", hands=six(**{f"p{seat}": "K 8 9"}), melds={0: ["K K K"]}, turn=seat,
                  phase="meld")
    assert st.num_sides == 2 and st.num_owners == 2
    own = seat % 2 == 0
    assert legal(st) == discards("K", "8", "9") | ({"ADD_NATURAL_K"} if own else set())


@pytest.mark.parametrize("preset", ["pennies_4p", "pennies_6p"])
def test_p1_cards_are_conserved_in_play(preset: str) -> None:
    """P1-P3: side melds closing and feet joining keep the 216-card deck whole."""
    assert_cards_conserved_in_play(preset)


# ---- P2: cap 7 per side; classic wild limit; sevens never mixed; closed rank starts again -----


@pytest.mark.parametrize("open_kings", [6, 5])
def test_p2_side_meld_closes_at_seven(open_kings: int) -> None:
    """P2: P2 adds a king to the side's open meld of kings (P0's); at seven it closes as the side's
    natural canasta and P2's three other kings start a new meld. The twin (five kings) stays open."""
    st = scenario("pennies_4p", hands=four("4 4", p2="K K K K 8 9"), melds={0: [" ".join("K" * open_kings)]},
                  turn=2, phase="meld")
    assert legal(st) == {"ADD_NATURAL_K"} | discards("K", "8", "9")
    play(st, "ADD_NATURAL_K")
    if open_kings == 6:
        assert kinds(st, 0) == [1, 0, 0, 0] and kinds(st, 1) == [0, 0, 0, 0]
        assert meld(st, 0, "K") == (0, 0, 0)
        assert legal(st) == {"MELD_NNN_K"} | discards("K", "8", "9")
    else:
        assert kinds(st, 0) == [0, 0, 0, 0] and meld(st, 0, "K") == (6, 0, 0)
        assert legal(st) == {"ADD_NATURAL_K"} | discards("K", "8", "9")


@pytest.mark.parametrize(("overrides", "third_wild"), [({}, False), ({"wild_le_naturals": False}, True)])
def test_p2_classic_wild_limit(overrides: dict, third_wild: bool) -> None:
    """P2/C13: K K 2 2 is a valid Pennies meld, a third wild on two naturals is not (Railroad's
    2 naturals + 3 wilds, the twin, is)."""
    st = scenario(load_rules("pennies_4p", **overrides), hands=four("K K 2 2 2 8 9"), melds={0: ["Q Q Q"]},
                  phase="meld")
    play(st, "MELD_NN2_K", "ADD_TWO_K")
    assert meld(st, 0, "K") == (2, 0, 2)
    assert ("ADD_TWO_K" in legal(st)) == third_wild


@pytest.mark.parametrize(("rank", "expected"), [
    ("7", {"ADD_JOKER_K"} | discards("JK", "8", "9")),  # no 7 7 JK; no seven discarded (P4)
    ("6", {"ADD_JOKER_K", "MELD_NNJ_6"} | discards("6", "JK", "8", "9")),  # twin
])
def test_p2_sevens_are_never_mixed(rank: str, expected: set[str]) -> None:
    st = scenario("pennies_4p", hands=four(f"{rank} {rank} JK 8 9"), melds={0: ["K K K"]}, phase="meld")
    assert legal(st) == expected


@pytest.mark.parametrize(("rank", "expected"), [
    ("7", {"DRAW_STOCK"}),  # a seven and a joker may not take: it would mix sevens
    ("6", {"DRAW_STOCK", "TAKE_PILE_NAT_JOKER"}),  # twin: classic C22 take with natural + wild
])
def test_p2_no_natural_and_wild_take_of_a_seven(rank: str, expected: set[str]) -> None:
    st = scenario("pennies_4p", hands=four(f"{rank} JK 8 9"), melds={0: ["K K K"]}, pile=f"5 {rank}")
    assert legal(st) == expected


@pytest.mark.parametrize(("closed", "melds", "expected"), [
    ([K7], ["Q Q Q"], {"MELD_NNN_K"} | discards("K", "8", "9")),  # a closed canasta's rank starts again
    ([], ["Q Q Q", "K K K"], {"ADD_NATURAL_K"} | discards("K", "8", "9")),  # twin: the meld is open
])
def test_p2_closed_rank_starts_a_new_meld(closed: list[str], melds: list[str], expected: set[str]) -> None:
    st = scenario("pennies_4p", hands=four("K K K 8 9"), melds={0: melds}, closed={0: closed}, phase="meld")
    assert legal(st) == expected


# ---- P3: the foot joins at once on a side meld brought to seven; no going out before ----------


@pytest.mark.parametrize(("open_meld", "joins"), [
    ("K K K K K K", True),  # natural canasta
    ("K K K K K JK", True),  # mixed: any canasta brings the foot in Pennies (not so in Railroad, R4)
    ("K K K K K", False),  # twin: six cards, still open
])
def test_p3_foot_joins_at_once_when_a_play_completes_a_canasta(open_meld: str, joins: bool) -> None:
    """P3/C8: P0's foot (a red three and ten cards) is face down, and so is P2's. P0's king
    completes the side's canasta: the foot joins P0's hand at once, its red three laid down and not
    replaced, and P0 plays on (now holding 8 8 8: a new meld). P2's foot stays face down."""
    st = scenario("pennies_4p", hands=four("K 8 9"), melds={0: [open_meld]},
                  reserves={0: FOOT, 2: "9 9 9 9 J J J J Q Q Q"}, phase="meld")
    stock = int(st.stock_size[0])
    events = play(st, "ADD_NATURAL_K")
    assert int(st.current_player[0]) == 0 and int(st.phase[0]) == PH_MELD
    assert int(st.reserve_state[0, 2]) == RES_DOWN
    assert int(st.stock_size[0]) == stock
    if joins:
        assert events & EV_RESERVE_PICKUP
        assert int(st.reserve_state[0, 0]) == RES_IN_HAND
        assert np.array_equal(hand(st, 0), cards("8 9 " + FOOT_CARDS))
        assert int(st.red_threes[0, 0]) == 1 and int(st.reserves[0, 0].sum()) == 0
        assert "MELD_NNN_8" in legal(st)
    else:
        assert not events & EV_RESERVE_PICKUP
        assert int(st.reserve_state[0, 0]) == RES_DOWN
        assert np.array_equal(hand(st, 0), cards("8 9"))
        assert legal(st) == discards("8", "9")


@pytest.mark.parametrize(("foot", "expected"), [
    (False, {"MELD_NNN_5"} | discards("5", "8")),
    (True, discards("5", "8")),  # twin: the foot is face down: no going out
])
def test_p3_no_going_out_with_the_foot_face_down(foot: bool, expected: set[str]) -> None:
    """P3/P6: side 0 holds one canasta of each kind; P0 holds 5 5 5 8 (melding 5 5 5 and discarding
    the 8 would go out): only once P0's foot is in hand."""
    st = scenario("pennies_4p", hands=four("5 5 5 8"), closed={0: ALL_KINDS},
                  reserves={0: FOOT} if foot else None, phase="meld")
    assert legal(st) == expected
    if not foot:
        assert play(st, "MELD_NNN_5", "DISCARD_8") & EV_WENT_OUT


@pytest.mark.parametrize(("open_kings", "expected"), [
    (5, {"ADD_NATURAL_K"} | discards("K")),  # K, K: the second king completes the canasta
    (4, discards("K")),  # twin: two kings make six, no canasta: the hand may not be emptied
])
def test_p3_empty_hand_only_with_a_play_completing_a_canasta(open_kings: int, expected: set[str]) -> None:
    """P3: P0 holds K K with the foot face down. Adding both kings empties the hand; that is legal
    only when the second completes the side's canasta, which brings the foot at once."""
    st = scenario("pennies_4p", hands=four("K K"), melds={0: [" ".join("K" * open_kings)]},
                  reserves={0: FOOT}, phase="meld")
    assert legal(st) == expected
    if open_kings == 5:
        play(st, "ADD_NATURAL_K")
        assert legal(st) == {"ADD_NATURAL_K"}  # one king left: discarding it would empty the hand
        assert play(st, "ADD_NATURAL_K") & EV_RESERVE_PICKUP
        assert kinds(st, 0) == [1, 0, 0, 0]
        assert int(st.reserve_state[0, 0]) == RES_IN_HAND and int(st.red_threes[0, 0]) == 1
        assert np.array_equal(hand(st, 0), cards(FOOT_CARDS))
        assert int(st.current_player[0]) == 0 and not bool(st.terminated[0])


@pytest.mark.parametrize(("open_kings", "expected"), [
    (6, {"ADD_NATURAL_K"} | discards("K", "T")),
    (5, discards("K", "T")),  # twin: six kings, no canasta, no foot: a lone T could not be discarded
])
def test_p3_the_foot_arrives_and_the_player_goes_out_that_turn(open_kings: int, expected: set[str]) -> None:
    """P3/P6: side 0 holds a mixed, a wild and a sevens canasta and six kings; P0 holds K T with the
    foot (5 5 5 8 8 8 9 9 9 T T) face down. The king completes the natural canasta, the foot joins
    at once and P0 melds every card to go out in the same turn."""
    st = scenario("pennies_4p", hands=four("K T"), melds={0: [" ".join("K" * open_kings)]},
                  closed={0: [MIXED7, WILD7, SEVENS7]}, reserves={0: "5 5 5 8 8 8 9 9 9 T T"}, phase="meld")
    assert legal(st) == expected
    if open_kings == 6:
        play(st, "ADD_NATURAL_K")
        assert int(st.reserve_state[0, 0]) == RES_IN_HAND
        events = play(st, "MELD_NNN_5", "MELD_NNN_8", "MELD_NNN_9", "MELD_NNN_T")
        assert events & EV_WENT_OUT and int(st.went_out[0]) == 0
        assert parts(st, 0)["going_out"] == 100 and parts(st, 0)["canastas"] == 3300


# ---- P4: no seven discarded until each side has a sevens canasta -------------------------------


@pytest.mark.parametrize(("closed", "seven_ok"), [
    ({0: [SEVENS7]}, False),  # side 1 has no sevens canasta
    ({0: [SEVENS7], 1: [SEVENS7]}, True),  # twin: each side has one
])
def test_p4_no_seven_discard_until_each_side_has_a_sevens_canasta(closed: dict, seven_ok: bool) -> None:
    """P4: P4 (side 0, pennies_6p) has no sevens canasta of their own, but it is the side's that
    counts: once both sides have one, P4 discards a seven."""
    st = scenario("pennies_6p", hands=six(p4="7 8 9"), closed=closed, turn=4, phase="meld")
    assert legal(st) == discards("8", "9") | (discards("7") if seven_ok else set())
    if seven_ok:
        play(st, "DISCARD_7")
        assert int(st.pile(0)[-1]) == SEVEN


@pytest.mark.parametrize(("last", "expected"), [
    ("7", discards("5", "7")),  # the go-out would end on a seven
    ("8", {"MELD_NNN_5"} | discards("5", "8")),  # twin
])
def test_p4_a_seven_is_never_the_final_discard(last: str, expected: set[str]) -> None:
    st = scenario("pennies_4p", hands=four(f"5 5 5 {last}"), closed={0: ALL_KINDS, 1: [SEVENS7]},
                  phase="meld")
    assert legal(st) == expected


@pytest.mark.parametrize(("held", "meld_ok"), [("5 5 5 7 7", False), ("5 5 5 7 8", True)])
def test_p4_no_meld_leaving_only_sevens(held: str, meld_ok: bool) -> None:
    """P4/R5: side 0 has its sevens canasta, side 1 not: a meld may not leave only sevens."""
    st = scenario("pennies_4p", hands=four(held), melds={0: ["K K K"]}, closed={0: [SEVENS7]}, phase="meld")
    assert legal(st) == discards(*(set(held.split()) - {"7"})) | ({"MELD_NNN_5"} if meld_ok else set())


@pytest.mark.parametrize("held", ["7 7 7", "7 7 8"])
def test_p4_only_sevens_when_melding_begins_ends_the_hand(held: str) -> None:
    """P4/C27a: side 0 has a sevens canasta, side 1 not. P0 draws two sevens onto 7 7 7: only
    sevens, none discardable: END_HAND ends the hand without a discard or a going-out bonus. The
    twin holds an 8 and discards it."""
    st = scenario("pennies_4p", hands=four(held), closed={0: [SEVENS7]}, stock_top="7 7")
    play(st, "DRAW_STOCK")
    if held == "7 7 7":
        assert legal(st) == {"MELD_NNN_7", "END_HAND"}
        assert play(st, "END_HAND") & EV_NO_DISCARD_END
        assert int(st.hand_end[0]) == HE_NO_DISCARD and int(st.went_out[0]) == -1
        assert parts(st, 0)["going_out"] == 0 and parts(st, 0)["hand"] == -25 - 10  # P2's 6 6
    else:
        assert legal(st) == {"MELD_NNN_7"} | discards("8")


# ---- P5: minimum bands by side score ------------------------------------------------------------


@pytest.mark.parametrize(("preset", "score", "minimum"), [
    ("pennies_4p", -5, 15), ("pennies_4p", 0, 50), ("pennies_4p", 495, 50), ("pennies_4p", 500, 90),
    ("pennies_4p", 995, 90), ("pennies_4p", 1000, 120), ("pennies_4p", 1495, 120),
    ("pennies_4p", 1500, 150), ("pennies_4p", 20000, 150), ("pennies_6p", 1000, 120),
    ("classic_4p", 1500, 90),  # twin: classic's table
    ("classic_4p", 500, 50),
])
def test_p5_minimum_bands(preset: str, score: int, minimum: int) -> None:
    n = load_rules(preset).num_players
    st = scenario(preset, hands=["5 6 8 9"] * n, scores=[score, 0])
    assert int(st.minimum[0]) == minimum


@pytest.mark.parametrize(("scores", "turn", "minimum"), [([1000, 0], 1, 50), ([0, 1000], 1, 120),
                                                          ([0, 1000], 3, 120), ([0, 1000], 2, 50)])
def test_p5_minimum_is_the_movers_side(scores: list[int], turn: int, minimum: int) -> None:
    st = scenario("pennies_4p", hands=four("5 6 8 9", "5 6 8 9", "5 6 8 9", "5 6 8 9"), scores=scores,
                  turn=turn)
    assert int(st.minimum[0]) == minimum


@pytest.mark.parametrize(("score", "meld_ok"), [(1495, True), (1500, False)])
def test_p5_minimum_150_from_1500(score: int, meld_ok: bool) -> None:
    """P5/P2: JK JK 2 (a wild meld, 120) opens at 1495 (minimum 120) but not at 1500 (150)."""
    st = scenario("pennies_4p", hands=four("JK JK 2 8 9"), scores=[score, 0], phase="meld")
    assert legal(st) == discards("JK", "2", "8", "9") | ({"MELD_WILD_2J1T"} if meld_ok else set())


# ---- P6: going out needs each kind per side; red threes; the foot counts minus -----------------


@pytest.mark.parametrize("missing", [None, 0, 1, 2, 3])
def test_p6_going_out_needs_each_kind_per_side(missing: int | None) -> None:
    """P6: P2 holds 5 5 5 8; the side's canastas (natural, mixed, wild, sevens) let them go out; each
    twin lacks one kind. Going out scores 100."""
    closed = [c for i, c in enumerate(ALL_KINDS) if i != missing]
    st = scenario("pennies_4p", hands=four("4 4", p2="5 5 5 8"), closed={0: closed}, turn=2, phase="meld")
    assert legal(st) == discards("5", "8") | ({"MELD_NNN_5"} if missing is None else set())
    if missing is None:
        assert play(st, "MELD_NNN_5", "DISCARD_8") & EV_WENT_OUT
        assert int(st.went_out[0]) == 2 and int(st.hand_end[0]) == HE_WENT_OUT
        assert parts(st, 0) == {"melds": 385 + 15, "canastas": 3300, "red_threes": 0, "going_out": 100,
                                "hand": -10}  # P0 still holds 4 4
        assert parts(st, 1)["hand"] == -30


@pytest.mark.parametrize(("overrides", "expected"), [
    ({}, {"MELD_NNN_5"} | discards("5")),  # Pennies: melding the last cards goes out
    ({"go_out_needs_discard": True}, discards("5")),  # twin: Railroad's final discard
])
def test_p6_going_out_by_melding_every_card(overrides: dict, expected: set[str]) -> None:
    st = scenario(load_rules("pennies_4p", **overrides), hands=four("5 5 5"), closed={0: ALL_KINDS},
                  phase="meld")
    assert legal(st) == expected
    if "MELD_NNN_5" in expected:
        assert play(st, "MELD_NNN_5") & EV_WENT_OUT
        assert parts(st, 0)["going_out"] == 100


def go_out_p0(red_threes: dict[int, int], closed1: list[str] | None = None, p1: str = "4 4",
              reserves: dict[int, str] | None = None) -> State:
    """P0 (side 0 holds one canasta of each kind) melds 5 5 5 and discards the 8 to go out."""
    st = scenario("pennies_4p", hands=four("5 5 5 8", p1), closed={0: ALL_KINDS, 1: closed1 or []},
                  red_threes=red_threes, reserves=reserves, phase="meld")
    play(st, "MELD_NNN_5", "DISCARD_8")
    assert int(st.hand_end[0]) == HE_WENT_OUT
    return st


@pytest.mark.parametrize(("red_threes", "side0"), [({0: 4, 2: 4}, 1000), ({0: 4, 2: 3}, 700)])
def test_p6_all_eight_red_threes_score_1000(red_threes: dict[int, int], side0: int) -> None:
    """P6/C10: side 0 (P0 and P2) laid down all eight red threes: 1000; the twin with seven: 700."""
    st = go_out_p0(red_threes)
    assert parts(st, 0)["red_threes"] == side0


@pytest.mark.parametrize(("closed1", "side1"), [([], -200), ([SEVENS7], 200)])
def test_p6_red_threes_minus_without_a_sevens_canasta(closed1: list[str], side1: int) -> None:
    """P6/C10: side 1 laid down two red threes but has no sevens canasta: -200; the twin (side 1
    holds one, 1500 bonus) scores +200."""
    st = go_out_p0({1: 2}, closed1)
    assert parts(st, 1)["red_threes"] == side1
    assert parts(st, 1)["canastas"] == (1500 if closed1 else 0)


@pytest.mark.parametrize("foot", ["down", "joined"])
def test_p6_face_down_foot_counts_minus_and_its_red_three_zero(foot: str) -> None:
    """P6/C32: P0 goes out while P1's foot (a red three, K K 5 5 6 6 8 8 9 9) is face down: its cards
    count minus with side 1's hands (P1 4 4, P3 9 9), its red three 0 (and not minus either, though
    side 1 has no sevens canasta). The twin: the foot had joined P1's hand (its red three laid down:
    -100 without a sevens canasta), the same cards count minus."""
    if foot == "down":
        st = go_out_p0({}, reserves={1: "R3 K K 5 5 6 6 8 8 9 9"})
        red = 0
    else:
        st = go_out_p0({1: 1}, p1="4 4 K K 5 5 6 6 8 8 9 9")
        red = -100
    assert parts(st, 1) == {"melds": 0, "canastas": 0, "red_threes": red, "going_out": 0, "hand": -110}
    assert int(st.reserves[0, 1, RED_THREE]) == (1 if foot == "down" else 0)

