"""Rule scenario tests for docs/rules.md C17-C33 (C19a included), classic presets.

Every test builds a position with ``canasta_env.scenario``, asserts the complete legal action set
(derived by hand from docs/rules.md and docs/engine.md, not copied from engine output), plays the
action(s) with ``step_one`` and checks the state or score. Each rule has a positive case and a
negative twin that differs minimally (one card, one score band, one option) so that the action
flips between legal and illegal or the score moves by the rule's amount.

Seats: in 4-player classic side = seat % 2 (P0 and P2 are partners). Undescribed cards lie in the
stock with aces on top, so a 4-player stock draw gives an ace.
"""

from __future__ import annotations

import numpy as np
import pytest

from canasta_env.engine import ACTION_NAMES, action_index, step_one
from canasta_env.engine.cards import KIND_BY_NAME
from canasta_env.engine.core import State
from canasta_env.engine.layout import (
    EV_ASK,
    EV_CANASTA,
    EV_CONCEALED,
    EV_FROZEN_TAKE,
    EV_GAME_END,
    EV_HAND_END,
    EV_LAST_RED3,
    EV_OPEN_BY_TAKE,
    EV_OPENED,
    EV_PILE_TAKE,
    EV_RED3_DRAWN,
    EV_STOCK_OUT_END,
    EV_WENT_OUT,
    HE_LAST_RED3,
    HE_STOCK_OUT,
    HE_WENT_OUT,
    PART_NAMES,
    PH_ANSWER,
    PH_DRAW,
    PH_FINAL_MELD,
    PH_MELD,
)
from canasta_env.rules import RulesError, RuleSet, load_rules
from canasta_env.scenario import parse_cards, scenario

# ---- helpers ------------------------------------------------------------------------------------

K7 = "K K K K K K K"  # a natural canasta (70 + 500)
Q7 = "Q Q Q Q Q Q Q"


def legal(state: State) -> set[str]:
    """The full legal set of the (only) row, as action names."""
    return {ACTION_NAMES[a] for a in state.legal_actions(0)}


def play(state: State, *names: str) -> int:
    """Apply the named actions in order; return the OR of their event bits."""
    events = 0
    for name in names:
        events |= int(step_one(state, action_index(name)).events[0])
    return events


def hand(state: State, seat: int) -> np.ndarray:
    return state.hands[0, seat].copy()


def cards(text: str) -> np.ndarray:
    return parse_cards(text)


def meld(state: State, side: int, rank: str) -> tuple[int, int, int]:
    """(naturals, jokers, twos) of a side's meld of ``rank``."""
    slot = KIND_BY_NAME[rank] - 4 if rank != "B3" else 12
    return (int(state.meld_naturals[0, side, slot]), int(state.meld_jokers[0, side, slot]),
            int(state.meld_twos[0, side, slot]))


def parts(state: State, side: int) -> dict[str, int]:
    return {name: int(v) for name, v in zip(PART_NAMES, state.score_parts[0, side], strict=True)}


def four(p0: str, p1: str = "4 4", p2: str = "6 6", p3: str = "9 9") -> list[str]:
    return [p0, p1, p2, p3]


def discards(*kinds: str) -> set[str]:
    return {f"DISCARD_{k}" for k in kinds}


# ---- C17: opening by a pile take counts only the top card and cards held before -------------------


def test_c17_pile_cards_do_not_count_toward_the_minimum() -> None:
    """C17: unopened (minimum 50), K K in hand, pile A A A K. Top K + K K = 30; the three aces
    from the pile would make 90 but count 0, so the take cannot reach 50: only the draw."""
    st = scenario("classic_2p", hands=["K K 5 6 7 8 9", "4 4 6"], pile="A A A K")
    assert legal(st) == {"DRAW_STOCK"}


def test_c17_twin_one_held_ace_reaches_the_minimum() -> None:
    """C17 twin: the same with one ace held (9 -> A). Top K + K K (30) + the held ace (20) = 50;
    the two pile aces complete the A meld but still count 0."""
    st = scenario("classic_2p", hands=["K K A 5 6 7 8", "4 4 6"], pile="A A A K")
    assert legal(st) == {"DRAW_STOCK", "TAKE_PILE_PAIR"}
    events = play(st, "TAKE_PILE_PAIR")
    assert events & EV_OPEN_BY_TAKE
    assert int(st.turn_value[0]) == 30  # top + held pair
    assert meld(st, 0, "K") == (3, 0, 0)
    assert np.array_equal(hand(st, 0), cards("A A A A 5 6 7 8"))
    # minimum not met yet (30 < 50): no discard; the aces are the only way to 50
    assert legal(st) == {"MELD_NNN_A"}
    play(st, "MELD_NNN_A")
    assert int(st.turn_value[0]) == 50  # only one of the three melded aces was held
    assert legal(st) == {"ADD_NATURAL_A"} | discards("A", "5", "6", "7", "8")
    play(st, "ADD_NATURAL_A", "DISCARD_5")
    assert int(st.opened[0, 0]) == 1
    assert int(st.current_player[0]) == 1


# ---- C18: a partner melds without minimum once the side opened; 3p: own minimum ----------------


@pytest.mark.parametrize(
    ("meld_side", "expected"),
    [
        (0, {"MELD_NNN_5"} | discards("5", "7", "8")),  # partner P0 opened side 0
        (1, discards("5", "7", "8")),  # twin: the opponents opened, not P2's side
    ],
)
def test_c18_partner_melds_without_minimum(meld_side: int, expected: set[str]) -> None:
    """C18 (4p): P2 after drawing holds 5 5 5 7 8 (15 < 50). Once side 0 has opened (meld by P0)
    P2 melds 5 5 5 freely; when only the other side has opened, 5 5 5 is below the minimum."""
    st = scenario("classic_4p", hands=four("4 4", p2="5 5 5 7 8"), melds={meld_side: ["K K K"]},
                  turn=2, phase="meld")
    assert legal(st) == expected
    if "MELD_NNN_5" in expected:
        play(st, "MELD_NNN_5", "DISCARD_7")
        assert meld(st, 0, "5") == (3, 0, 0)
        assert int(st.current_player[0]) == 3


@pytest.mark.parametrize(
    ("owner", "scores", "meld_ok"),
    [
        (0, [0, 0, 0], True),  # P0 opened himself
        (1, [0, 0, 0], False),  # another player's opening does not free P0 (no partners)
        (2, [0, 0, 0], False),
        (1, [-10, 0, 0], True),  # P0's own score band: minimum 15
        (1, [0, -10, -10], False),  # the others' low scores do not lower P0's minimum
    ],
)
def test_c18_three_players_each_have_their_own_minimum(owner: int, scores: list[int],
                                                       meld_ok: bool) -> None:
    """C18 (3p): every player is a side with their own minimum (C16 by their own score)."""
    st = scenario("classic_3p", hands=["5 5 5 7 8", "4 4", "6 6"], melds={owner: ["K K K"]},
                  scores=scores, phase="meld")
    expected = discards("5", "7", "8") | ({"MELD_NNN_5"} if meld_ok else set())
    assert legal(st) == expected


# ---- C19: a player who does not go out keeps a card ------------------------------------------------


def test_c19_meld_leaving_one_card_without_canasta_is_illegal() -> None:
    """C19: side opened (K K K), no canasta, hand 5 5 5 7: melding 5 5 5 would leave one card,
    whose discard would be a go-out without a canasta (C28). Only discards remain."""
    st = scenario("classic_4p", hands=four("5 5 5 7"), melds={0: ["K K K"]}, phase="meld")
    assert legal(st) == discards("5", "7")


def test_c19_twin_one_more_card_allows_the_meld() -> None:
    """C19 twin: one more card (5 5 5 7 8): the meld leaves two cards, one to discard, one kept."""
    st = scenario("classic_4p", hands=four("5 5 5 7 8"), melds={0: ["K K K"]}, phase="meld")
    assert legal(st) == {"MELD_NNN_5"} | discards("5", "7", "8")
    play(st, "MELD_NNN_5")
    assert legal(st) == discards("7", "8")
    play(st, "DISCARD_7")
    assert np.array_equal(hand(st, 0), cards("8"))
    assert int(st.current_player[0]) == 1


def test_c19_twin_with_a_canasta_the_meld_leads_to_going_out() -> None:
    """C19 twin: with a canasta on the side the one-card meld is legal because the last card can
    be discarded to go out (C28)."""
    st = scenario("classic_4p", hands=four("5 5 5 7"), melds={0: [K7]}, phase="meld")
    assert legal(st) == {"MELD_NNN_5"} | discards("5", "7")
    play(st, "MELD_NNN_5")
    assert legal(st) == discards("7")
    events = play(st, "DISCARD_7")
    assert events & EV_WENT_OUT
    assert bool(st.terminated[0])


# ---- C19a: a take whose compulsory melds leave < 2 cards needs a possible go-out -------------------


@pytest.mark.parametrize(
    ("p0", "pile", "side_melds", "take_ok"),
    [
        ("Q Q", "Q", ["K K K"], False),  # take melds every card: a go-out without canasta
        ("Q Q", "Q", [K7], True),  # twin: with a canasta the take goes out
        ("Q Q", "7 Q", ["K K K"], False),  # one card (7) left after the take, no canasta
        ("Q Q", "7 Q", [K7], True),  # twin: the 7 is discarded to go out
        ("Q Q 5", "7 Q", ["K K K"], True),  # twin: one more card, 5 7 left: discard one
    ],
)
def test_c19a_take_leaving_fewer_than_two_cards(p0: str, pile: str, side_melds: list[str],
                                                take_ok: bool) -> None:
    """C19a: a pile take is legal exactly when the turn can still be finished from there."""
    st = scenario("classic_4p", hands=four(p0), melds={0: side_melds}, pile=pile)
    assert legal(st) == ({"DRAW_STOCK", "TAKE_PILE_PAIR"} if take_ok else {"DRAW_STOCK"})


def test_c19a_take_that_melds_the_last_cards_goes_out() -> None:
    """C19a/C28: Q Q in hand, pile Q, side canasta: the take melds every card and goes out."""
    st = scenario("classic_4p", hands=four("Q Q"), melds={0: [K7]}, pile="Q")
    events = play(st, "TAKE_PILE_PAIR")
    assert events & EV_WENT_OUT
    assert bool(st.terminated[0])
    assert int(st.hand_end[0]) == HE_WENT_OUT
    assert meld(st, 0, "Q") == (3, 0, 0)
    assert parts(st, 0)["going_out"] == 100


def test_c19a_take_leaving_one_card_then_discard_goes_out() -> None:
    """C19a: after the take (pile 7 Q) only the 7 is left; the only action is its go-out discard."""
    st = scenario("classic_4p", hands=four("Q Q"), melds={0: [K7]}, pile="7 Q")
    play(st, "TAKE_PILE_PAIR")
    assert legal(st) == discards("7")
    assert play(st, "DISCARD_7") & EV_WENT_OUT


# ---- C20: frozen pile ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pile", "frozen", "side_melds", "take"),
    [
        ("4 7 Q", None, {0: ["K K K"]}, True),  # unfrozen, side opened: natural + joker
        ("2 7 Q", None, {0: ["K K K"]}, False),  # twin: a two in the pile freezes it
        ("JK 7 Q", None, {0: ["K K K"]}, False),  # a joker in the pile freezes it
        ("R3 7 Q", True, {0: ["K K K"]}, False),  # red-three upcard covered (C5): frozen
        ("4 7 Q", None, {1: ["K K K"]}, False),  # twin: frozen against the unopened side
    ],
)
def test_c20_frozen_pile_only_pair(pile: str, frozen: bool | None, side_melds: dict[int, list[str]],
                                   take: bool) -> None:
    """C20: P0 holds one Q and a joker. Q Q JK (70) would open, so only the freeze (a wild in the
    pile, or P0's side not opened) stops the natural + joker take."""
    st = scenario("classic_4p", hands=four("Q JK 5 6 7"), melds=side_melds, pile=pile,
                  pile_frozen=frozen)
    assert legal(st) == ({"DRAW_STOCK", "TAKE_PILE_NAT_JOKER"} if take else {"DRAW_STOCK"})
    if take:
        play(st, "TAKE_PILE_NAT_JOKER")
        assert meld(st, 0, "Q") == (2, 1, 0)


def test_c20_frozen_pile_pair_take_unfreezes() -> None:
    """C20: a pile frozen by a wild stays frozen until taken; the natural-pair take ends it."""
    st = scenario("classic_4p", hands=four("Q Q 5 6 7"), melds={0: ["K K K"]}, pile="2 7 Q")
    assert int(st.pile_frozen[0]) == 1
    assert legal(st) == {"DRAW_STOCK", "TAKE_PILE_PAIR"}
    events = play(st, "TAKE_PILE_PAIR")
    assert events & EV_FROZEN_TAKE
    assert int(st.pile_frozen[0]) == 0
    assert int(st.pile_size[0]) == 0
    assert np.array_equal(hand(st, 0), cards("2 5 6 7 7"))


@pytest.mark.parametrize("opens", [True, False])
def test_c20_freeze_against_a_side_ends_when_it_opens(opens: bool) -> None:
    """C20: P0 (side 0 unopened) melds K K K + A A A (90) and discards; P1 discards a 7; partner
    P2 may then take with 7 + joker. Twin: P0 only discards, the side stays unopened and the same
    take is refused (frozen against side 0)."""
    st = scenario("classic_4p", hands=four("K K K A A A 5 6", "7 8 9", "7 JK 4 4", "T T"),
                  melds={1: ["Q Q Q"]}, pile="4 9", phase="meld")
    if opens:
        assert legal(st) == {"MELD_NNN_K", "MELD_NNN_A"} | discards("K", "A", "5", "6")
        play(st, "MELD_NNN_K", "MELD_NNN_A")
    play(st, "DISCARD_5")
    assert int(st.opened[0, 0]) == int(opens)
    play(st, "DRAW_STOCK", "DISCARD_7")
    assert int(st.current_player[0]) == 2
    assert legal(st) == ({"DRAW_STOCK", "TAKE_PILE_NAT_JOKER"} if opens else {"DRAW_STOCK"})


# ---- C21: no take with a wild or black three on top -------------------------------------------


@pytest.mark.parametrize("top", ["JK", "2", "B3"])
def test_c21_no_take_with_wild_or_black_three_on_top(top: str) -> None:
    """C21: P0 holds 7 7 JK, side opened; with a joker, two or black three on top nobody takes."""
    st = scenario("classic_4p", hands=four("7 7 JK 5 6"), melds={0: ["K K K"]}, pile=f"7 {top}")
    assert legal(st) == {"DRAW_STOCK"}


@pytest.mark.parametrize(
    ("under", "expected"),
    [
        ("JK", {"DRAW_STOCK", "TAKE_PILE_PAIR"}),  # covered wild: still frozen (C20), pair only
        ("2", {"DRAW_STOCK", "TAKE_PILE_PAIR"}),
        ("B3", {"DRAW_STOCK", "TAKE_PILE_PAIR", "TAKE_PILE_NAT_JOKER"}),  # covered stop card: no effect
    ],
)
def test_c21_twin_card_covered_by_a_seven(under: str, expected: set[str]) -> None:
    """C21 twin: the same cards in the other order (7 on top)."""
    st = scenario("classic_4p", hands=four("7 7 JK 5 6"), melds={0: ["K K K"]}, pile=f"{under} 7")
    assert legal(st) == expected


# ---- C22: taking an unfrozen pile --------------------------------------------------------------


@pytest.mark.parametrize(
    ("p0", "q_meld", "expected"),
    [
        ("Q Q JK 2 5 6", False, {"TAKE_PILE_PAIR", "TAKE_PILE_NAT_JOKER", "TAKE_PILE_NAT_TWO"}),
        ("Q JK 5 6 7", False, {"TAKE_PILE_NAT_JOKER"}),
        ("Q 2 5 6 7", False, {"TAKE_PILE_NAT_TWO"}),
        ("Q 5 6 7 8", False, set()),  # twin: one natural, no wild
        ("JK 2 5 6 7", False, set()),  # twin: wilds but no natural Q
        ("5 6 7 8 9", True, {"TAKE_PILE_LAYOFF"}),  # the side's Q meld takes the top card
        ("Q Q JK 5 6", True, {"TAKE_PILE_PAIR", "TAKE_PILE_LAYOFF"}),
        ("Q JK 5 6 7", True, {"TAKE_PILE_LAYOFF"}),  # with a Q meld: layoff, then ADD_* (docs)
    ],
)
def test_c22_unfrozen_take_shapes(p0: str, q_meld: bool, expected: set[str]) -> None:
    """C22: top Q on an unfrozen pile, side opened: pair, natural + wild (new meld only), or
    layoff onto the side's Q meld."""
    melds = ["K K K"] + (["Q Q Q"] if q_meld else [])
    st = scenario("classic_4p", hands=four(p0), melds={0: melds}, pile="4 9 Q")
    assert legal(st) == {"DRAW_STOCK"} | expected


@pytest.mark.parametrize(
    ("p0", "q_meld", "action", "after_meld", "after_hand"),
    [
        ("Q Q JK 2 5 6", False, "TAKE_PILE_PAIR", (3, 0, 0), "JK 2 5 6 4 9"),
        ("Q Q JK 2 5 6", False, "TAKE_PILE_NAT_JOKER", (2, 1, 0), "Q 2 5 6 4 9"),
        ("Q Q JK 2 5 6", False, "TAKE_PILE_NAT_TWO", (2, 0, 1), "Q JK 5 6 4 9"),
        ("Q JK 5 6 7", True, "TAKE_PILE_LAYOFF", (4, 0, 0), "Q JK 5 6 7 4 9"),
    ],
)
def test_c22_take_shapes_place_the_cards(p0: str, q_meld: bool, action: str,
                                         after_meld: tuple[int, int, int], after_hand: str) -> None:
    """C22/C24: the top card and the named hand cards form or join the Q meld; the rest of the
    pile joins the hand."""
    melds = ["K K K"] + (["Q Q Q"] if q_meld else [])
    st = scenario("classic_4p", hands=four(p0), melds={0: melds}, pile="4 9 Q")
    events = play(st, action)
    assert events & EV_PILE_TAKE
    assert meld(st, 0, "Q") == after_meld
    assert np.array_equal(hand(st, 0), cards(after_hand))
    assert int(st.pile_size[0]) == 0
    assert int(st.phase[0]) == PH_MELD


# ---- C23: taking a frozen pile ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("p0", "take"),
    [("Q Q JK 5 6", True), ("Q JK 5 6 7", False)],  # twin: natural + joker does not take frozen
)
def test_c23_frozen_pile_needs_a_natural_pair(p0: str, take: bool) -> None:
    """C23: a pile frozen by a two in it is taken only with two natural Qs from hand."""
    st = scenario("classic_4p", hands=four(p0), melds={0: ["K K K"]}, pile="2 9 Q")
    assert legal(st) == ({"DRAW_STOCK", "TAKE_PILE_PAIR"} if take else {"DRAW_STOCK"})


def test_c23_frozen_pair_take_joins_the_existing_meld() -> None:
    """C23: with a Q meld (Q Q Q JK) the frozen-pile pair take puts the three Qs on it (no
    layoff on a frozen pile), completing a mixed canasta."""
    st = scenario("classic_4p", hands=four("Q Q 5 6"), melds={0: ["Q Q Q JK"]}, pile="2 9 Q")
    assert legal(st) == {"DRAW_STOCK", "TAKE_PILE_PAIR"}
    events = play(st, "TAKE_PILE_PAIR")
    assert events & EV_FROZEN_TAKE and events & EV_CANASTA
    assert meld(st, 0, "Q") == (6, 1, 0)
    assert np.array_equal(hand(st, 0), cards("2 5 6 9"))


def test_c23_twin_unfrozen_pile_also_allows_the_layoff() -> None:
    """C23 twin: the same with the two replaced by a 4 (unfrozen): the layoff is offered too."""
    st = scenario("classic_4p", hands=four("Q Q 5 6"), melds={0: ["Q Q Q JK"]}, pile="4 9 Q")
    assert legal(st) == {"DRAW_STOCK", "TAKE_PILE_PAIR", "TAKE_PILE_LAYOFF"}


@pytest.mark.parametrize(
    ("p0", "scores", "option", "take"),
    [
        ("Q Q 5 5 5 6", [0, 0], False, False),  # 30 + 15 = 45 < 50
        ("Q Q K K K 6", [0, 0], False, True),  # twin (cards): 30 + 30 = 60
        ("Q Q 5 5 5 6", [-10, 0], False, True),  # twin (score band): minimum 15
        ("Q Q 5 5 5 6", [-10, 0], True, False),  # twin (option): pile_take_requires_opened_side
    ],
)
def test_c23_unopened_side_must_reach_the_minimum(p0: str, scores: list[int], option: bool,
                                                  take: bool) -> None:
    """C23: an unopened side takes (frozen against it) only with a natural pair and only if the
    top card and held cards can reach its minimum."""
    rules = load_rules("classic_4p", pile_take_requires_opened_side=option)
    st = scenario(rules, hands=four(p0), melds={1: ["8 8 8"]}, pile="4 9 Q", scores=scores)
    assert legal(st) == ({"DRAW_STOCK", "TAKE_PILE_PAIR"} if take else {"DRAW_STOCK"})


def test_c23_unopened_take_then_melds_to_the_minimum() -> None:
    """C23/C24(2): after Q Q + top Q (30 of 50) the K K K meld from hand is compulsory."""
    st = scenario("classic_4p", hands=four("Q Q K K K 6"), melds={1: ["8 8 8"]}, pile="4 9 Q")
    play(st, "TAKE_PILE_PAIR")
    assert int(st.turn_value[0]) == 30
    assert legal(st) == {"MELD_NNN_K"}
    events = play(st, "MELD_NNN_K")
    assert events & EV_OPENED
    assert legal(st) == discards("4", "6", "9")


def test_c23_low_band_take_opens_at_once() -> None:
    """C23: with minimum 15 the pair take alone opens; melding is free afterwards."""
    st = scenario("classic_4p", hands=four("Q Q 5 5 5 6"), melds={1: ["8 8 8"]}, pile="4 9 Q",
                  scores=[-10, 0])
    events = play(st, "TAKE_PILE_PAIR")
    assert events & EV_OPEN_BY_TAKE and events & EV_OPENED
    assert legal(st) == {"MELD_NNN_5"} | discards("4", "5", "6", "9")


# ---- C24: take procedure ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pile", "frozen", "red3", "after_hand"),
    [
        ("R3 7 9 Q", True, 1, "Q 5 6 7 9"),  # red-three upcard in the pile: laid down
        ("4 7 9 Q", None, 0, "Q 4 5 6 7 9"),  # twin: a 4 instead joins the hand
    ],
)
def test_c24_take_procedure(pile: str, frozen: bool | None, red3: int, after_hand: str) -> None:
    """C24: (1) the top Q is melded with the pair, never entering the hand; more Qs from hand may
    join; (3) the rest of the pile joins the hand, a red three in it laid down without
    replacement (C8)."""
    st = scenario("classic_4p", hands=four("Q Q Q 5 6"), melds={0: ["K K K"]}, pile=pile,
                  pile_frozen=frozen)
    stock_before = int(st.stock_size[0])
    assert legal(st) == {"DRAW_STOCK", "TAKE_PILE_PAIR"}
    play(st, "TAKE_PILE_PAIR")
    assert meld(st, 0, "Q") == (3, 0, 0)
    assert np.array_equal(hand(st, 0), cards(after_hand))
    assert int(st.red_threes[0, 0]) == red3
    assert int(st.stock_size[0]) == stock_before  # no replacement
    assert int(st.pile_size[0]) == 0 and int(st.pile_frozen[0]) == 0
    # the pile cards other than the top are now known to be in P0's hand
    known = cards(" ".join(c for c in pile.split()[:-1] if c != "R3"))
    assert np.array_equal(st.known[0, 0], known)
    rest = sorted(set(after_hand.split()))
    assert legal(st) == {"ADD_NATURAL_Q"} | discards(*rest)


# ---- C25: one card in hand, one-card pile ---------------------------------------------------------


@pytest.mark.parametrize(
    ("pile", "forbid", "take"),
    [
        ("Q", True, False),  # C25: one card may not take a one-card pile
        ("Q", False, True),  # twin (option off): the layoff goes out
        ("7 Q", True, True),  # twin (one more pile card): allowed
    ],
)
def test_c25_single_card_pile(pile: str, forbid: bool, take: bool) -> None:
    """C25: P0 holds one Q; the side has a Q meld and a canasta (going out is possible)."""
    rules = load_rules("classic_4p", forbid_single_card_pile_take=forbid)
    st = scenario(rules, hands=four("Q"), melds={0: [K7, "Q Q Q"]}, pile=pile)
    assert legal(st) == ({"DRAW_STOCK", "TAKE_PILE_LAYOFF"} if take else {"DRAW_STOCK"})
    if take and pile == "Q":
        play(st, "TAKE_PILE_LAYOFF")
        assert meld(st, 0, "Q") == (4, 0, 0)
        # the held Q is the last card: melding it or discarding it goes out (C28)
        assert legal(st) == {"ADD_NATURAL_Q", "DISCARD_Q"}
        assert play(st, "ADD_NATURAL_Q") & EV_WENT_OUT


# ---- C26: taking is optional while the stock has cards ------------------------------------------


def test_c26_take_is_optional() -> None:
    """C26: both the draw and the layoff take are offered; drawing leaves the pile alone."""
    st = scenario("classic_4p", hands=four("5 6 7 8"), melds={0: ["Q Q Q"]}, pile="4 Q")
    assert legal(st) == {"DRAW_STOCK", "TAKE_PILE_LAYOFF"}
    play(st, "DRAW_STOCK")
    assert np.array_equal(hand(st, 0), cards("5 6 7 8 A"))
    assert int(st.pile_size[0]) == 2
    assert meld(st, 0, "Q") == (3, 0, 0)
    # the twin (empty stock: the take becomes compulsory) is test_c31b_empty_stock case 'layoff'


# ---- C27: any card may be discarded; a wild discard freezes -------------------------------------


def test_c27_any_card_may_be_discarded() -> None:
    """C27: a joker, a two, a black three and naturals are all discardable."""
    st = scenario("classic_4p", hands=four("JK 2 B3 5 9"), melds={0: ["K K K"]}, phase="meld")
    assert legal(st) == {"ADD_JOKER_K", "ADD_TWO_K"} | discards("JK", "2", "B3", "5", "9")


@pytest.mark.parametrize(("discard", "frozen"), [("2", True), ("5", False)])
def test_c27_wild_discard_freezes_the_pile(discard: str, frozen: bool) -> None:
    """C27/C20: P0 discards a two (twin: a 5); P1 draws and discards an 8; P2 (side 0, opened)
    holds 8 + joker: natural + joker takes only if the pile is not frozen by the two beneath."""
    st = scenario("classic_4p", hands=four("2 5 9", p1="8 6 7", p2="8 JK 4 6"),
                  melds={0: ["K K K"], 1: ["Q Q Q"]}, pile="4 9", phase="meld")
    play(st, f"DISCARD_{discard}")
    assert int(st.pile_frozen[0]) == int(frozen)
    play(st, "DRAW_STOCK", "DISCARD_8")
    assert int(st.current_player[0]) == 2
    assert legal(st) == ({"DRAW_STOCK"} if frozen else {"DRAW_STOCK", "TAKE_PILE_NAT_JOKER"})


# ---- C28: going out needs the canastas ----------------------------------------------------------


@pytest.mark.parametrize(
    ("preset", "side_melds", "can_go_out"),
    [
        ("classic_2p", [K7], False),  # 2 players: two canastas
        ("classic_2p", [K7, Q7], True),
        ("classic_3p", [K7], True),  # 3 and 4 players: one
        ("classic_4p", [K7], True),
        ("classic_4p", ["K K K K K K"], False),  # twin: six cards are no canasta
    ],
)
def test_c28_going_out_needs_canastas(preset: str, side_melds: list[str], can_go_out: bool) -> None:
    """C28: hand 5 5 5 7: melding 5 5 5 leaves one card, so it is legal only if discarding the 7
    may go out."""
    n = load_rules(preset).num_players
    hands = ["5 5 5 7"] + ["4 4"] * (n - 1)
    st = scenario(preset, hands=hands, melds={0: side_melds}, phase="meld")
    assert legal(st) == discards("5", "7") | ({"MELD_NNN_5"} if can_go_out else set())
    if can_go_out:
        play(st, "MELD_NNN_5")
        assert legal(st) == discards("7")
        events = play(st, "DISCARD_7")
        assert events & EV_WENT_OUT and bool(st.terminated[0])
        assert parts(st, 0)["going_out"] == 100


@pytest.mark.parametrize(("k_meld", "completes"), [("K K K K K K", True), ("K K K K K", False)])
def test_c28_canasta_completed_this_turn_counts_melding_everything(k_meld: str,
                                                                   completes: bool) -> None:
    """C28: hand K 5 5 5. With six Ks down, adding the K completes a canasta this turn and then
    melding 5 5 5 (the last cards) goes out. Twin: five Ks down, no canasta: no going out."""
    st = scenario("classic_4p", hands=four("K 5 5 5"), melds={0: [k_meld]}, phase="meld")
    if completes:
        assert legal(st) == {"ADD_NATURAL_K", "MELD_NNN_5"} | discards("K", "5")
    else:
        assert legal(st) == {"ADD_NATURAL_K"} | discards("K", "5")
    events = play(st, "ADD_NATURAL_K")
    if completes:
        assert events & EV_CANASTA
        assert legal(st) == {"MELD_NNN_5"} | discards("5")
        events = play(st, "MELD_NNN_5")
        assert events & EV_WENT_OUT and bool(st.terminated[0])
        assert int(st.hands[0, 0].sum()) == 0
    else:
        assert legal(st) == discards("5")


def test_c28_going_out_by_melding_everything_with_wilds() -> None:
    """C28: with a side canasta, hand 5 5 JK 7 7 2 goes out by two natural + wild melds."""
    st = scenario("classic_4p", hands=four("5 5 JK 7 7 2", "4 4", "6 6", "9 9"), melds={0: [K7]},
                  phase="meld")
    # a wild may also go on the natural K canasta (C15 allow_wild_on_natural_canasta)
    assert legal(st) == ({"MELD_NNJ_5", "MELD_NN2_5", "MELD_NNJ_7", "MELD_NN2_7", "ADD_JOKER_K",
                          "ADD_TWO_K"} | discards("JK", "2", "5", "7"))
    play(st, "MELD_NNJ_5")
    # 7 7 2 is the last meld (goes out); or the 2 goes elsewhere and 7 7 stays for a discard
    assert legal(st) == {"MELD_NN2_7", "ADD_TWO_5", "ADD_TWO_K"} | discards("2", "7")
    events = play(st, "MELD_NN2_7")
    assert events & EV_WENT_OUT
    assert meld(st, 0, "5") == (2, 1, 0) and meld(st, 0, "7") == (2, 0, 1)


@pytest.mark.parametrize(("k_meld", "completes"), [("K K K K K", True), ("K K K K", False)])
def test_c28_wilds_complete_the_canasta_this_turn(k_meld: str, completes: bool) -> None:
    """C28: hand JK 2 7: two wilds on five Ks make a mixed canasta this turn, so after the joker
    the two may go on and leave the 7 for the go-out discard. Twin: four Ks reach only six."""
    st = scenario("classic_4p", hands=four("JK 2 7"), melds={0: [k_meld]}, phase="meld")
    assert legal(st) == {"ADD_JOKER_K", "ADD_TWO_K"} | discards("JK", "2", "7")
    play(st, "ADD_JOKER_K")
    assert legal(st) == ({"ADD_TWO_K"} if completes else set()) | discards("2", "7")
    if completes:
        play(st, "ADD_TWO_K", "DISCARD_7")
        assert bool(st.terminated[0])
        assert parts(st, 0)["canastas"] == 300


# ---- C29: asking the partner --------------------------------------------------------------------


def _ask_state(ask: bool = True, side_melds: list[str] | None = None, p0: str = "5 5 5 7") -> State:
    rules = load_rules("classic_4p", ask_partner=ask)
    return scenario(rules, hands=four(p0), melds={0: side_melds or [K7]}, phase="meld")


def test_c29_ask_offered_only_with_the_option() -> None:
    """C29: with ask_partner the player who can go out may ask; twin: option off, no ASK."""
    base = {"MELD_NNN_5"} | discards("5", "7")
    assert legal(_ask_state(True)) == base | {"ASK_PARTNER"}
    assert legal(_ask_state(False)) == base


def test_c29_no_ask_when_going_out_is_unreachable() -> None:
    """C29 twin: without a canasta going out is unreachable, so no question (and no 5 5 5 meld)."""
    assert legal(_ask_state(True, ["K K K K K K"])) == discards("5", "7")


def test_c29_yes_forces_going_out() -> None:
    """C29: ask -> partner (P2) answers -> play returns to P0, who after yes must go out."""
    st = _ask_state()
    assert play(st, "ASK_PARTNER") & EV_ASK
    assert int(st.current_player[0]) == 2 and int(st.phase[0]) == PH_ANSWER
    assert legal(st) == {"ANSWER_YES", "ANSWER_NO"}
    play(st, "ANSWER_YES")
    assert int(st.current_player[0]) == 0 and int(st.phase[0]) == PH_MELD
    assert legal(st) == {"MELD_NNN_5"}  # no discard that keeps cards, no second question
    play(st, "MELD_NNN_5")
    assert legal(st) == discards("7")
    assert play(st, "DISCARD_7") & EV_WENT_OUT


def test_c29_no_forbids_going_out() -> None:
    """C29: after no the player may not go out: the one-card meld is gone, discards remain."""
    st = _ask_state()
    play(st, "ASK_PARTNER", "ANSWER_NO")
    assert int(st.current_player[0]) == 0
    assert legal(st) == discards("5", "7")
    play(st, "DISCARD_7")
    assert int(st.current_player[0]) == 1 and not bool(st.terminated[0])


def test_c29_ask_only_before_melding() -> None:
    """C29: the question comes before melding any other card; after a meld it is gone."""
    st = _ask_state(p0="5 5 5 7 8 8 8")
    assert "ASK_PARTNER" in legal(st)
    play(st, "MELD_NNN_8")
    assert legal(st) == {"MELD_NNN_5"} | discards("5", "7")  # going out still reachable


def test_c29_no_ask_with_one_card() -> None:
    """C29: asking needs at least two cards: after a take that leaves one card (C19a) the player
    can go out but may not ask."""
    rules = load_rules("classic_4p", ask_partner=True)
    st = scenario(rules, hands=four("Q Q"), melds={0: [K7]}, pile="7 Q")
    play(st, "TAKE_PILE_PAIR")
    assert legal(st) == discards("7")


def test_c29_ask_after_a_take_is_allowed() -> None:
    """C29: 'after the draw or take': the take's own meld does not use up the question."""
    rules = load_rules("classic_4p", ask_partner=True)
    st = scenario(rules, hands=four("Q Q 5 5"), melds={0: [K7]}, pile="5 Q")
    play(st, "TAKE_PILE_PAIR")
    assert legal(st) == {"MELD_NNN_5", "ASK_PARTNER"} | discards("5")


@pytest.mark.parametrize("preset", ["classic_2p", "classic_3p"])
def test_c29_no_ask_without_partners(preset: str) -> None:
    """C29: 4-player partnerships only; the option is refused at 2 or 3 players."""
    with pytest.raises(RulesError, match="partnership"):
        load_rules(preset, ask_partner=True)


# ---- C30: concealed going out -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requires_min", "meld_ok"),
    [(False, True), (True, False)],  # twin: concealed_requires_minimum
)
def test_c30_concealed_go_out_without_minimum(requires_min: bool, meld_ok: bool) -> None:
    """C30: side 0 unopened, P0 drew and holds seven 4s and a 7. The 4s are only 35 (< 50), but
    a concealed go-out after a stock draw needs no minimum, so 4 4 4 may start (every melded
    card must then go out). With concealed_requires_minimum the meld is illegal."""
    rules = load_rules("classic_4p", concealed_requires_minimum=requires_min)
    st = scenario(rules, hands=four("4 4 4 4 4 4 4 7", "T T"), melds={1: ["8 8 8"]},
                  phase="meld")
    assert legal(st) == discards("4", "7") | ({"MELD_NNN_4"} if meld_ok else set())
    if not meld_ok:
        return
    play(st, "MELD_NNN_4")
    assert legal(st) == {"ADD_NATURAL_4"}  # below the minimum: no discard while 4s remain
    play(st, "ADD_NATURAL_4", "ADD_NATURAL_4", "ADD_NATURAL_4")
    assert legal(st) == {"ADD_NATURAL_4"}
    play(st, "ADD_NATURAL_4")
    assert legal(st) == discards("7")
    events = play(st, "DISCARD_7")
    assert events & EV_WENT_OUT and events & EV_CONCEALED
    assert parts(st, 0) == {"melds": 35, "canastas": 500, "red_threes": 0, "going_out": 200,
                            "hand": -10}  # P2 holds 6 6


def test_c30_twin_pile_take_always_needs_the_minimum() -> None:
    """C30 twin: the same seven 4s reached by a pile take (top 4 + 4 4 held) must reach 50 (C23):
    35 < 50, so the take is illegal although a go-out would follow it."""
    st = scenario("classic_4p", hands=four("4 4 4 4 4 4 7", "T T"), melds={1: ["8 8 8"]},
                  pile="4")
    assert legal(st) == {"DRAW_STOCK"}


CONCEALED_CASES = [
    # (id, side-0 melds, has_melded, P0 red threes, P0 hand, actions, bonus)
    ("all conditions", ["Q Q Q"], [2, 1], 0, "K K K K K K K 7",
     ["MELD_NNN_K"] + ["ADD_NATURAL_K"] * 4 + ["DISCARD_7"], 200),
    ("red three is no meld (1)", ["Q Q Q"], [2, 1], 1, "K K K K K K K 7",
     ["MELD_NNN_K"] + ["ADD_NATURAL_K"] * 4 + ["DISCARD_7"], 200),
    ("melded before (1)", ["Q Q Q"], [0, 1], 0, "K K K K K K K 7",
     ["MELD_NNN_K"] + ["ADD_NATURAL_K"] * 4 + ["DISCARD_7"], 100),
    ("added to partner's meld (3)", ["Q Q Q"], [2, 1], 0, "K K K K K K K Q 7",
     ["MELD_NNN_K"] + ["ADD_NATURAL_K"] * 4 + ["ADD_NATURAL_Q", "DISCARD_7"], 100),
    ("own canasta (4)", [Q7], [2, 1], 0, "5 5 5 5 5 5 5 7",
     ["MELD_NNN_5"] + ["ADD_NATURAL_5"] * 4 + ["DISCARD_7"], 200),
    ("no own canasta (4)", [Q7], [2, 1], 0, "5 5 5 7", ["MELD_NNN_5", "DISCARD_7"], 100),
]


@pytest.mark.parametrize(("case", "side_melds", "has_melded", "red3", "p0", "actions", "bonus"),
                         CONCEALED_CASES, ids=[c[0] for c in CONCEALED_CASES])
def test_c30_concealed_bonus(case: str, side_melds: list[str], has_melded: list[int], red3: int,
                             p0: str, actions: list[str], bonus: int) -> None:
    """C30: 200 when (1) no meld or addition by P0 before this turn (red threes aside), (3) no
    card added to the partner's meld and (4) a canasta wholly P0's from this turn; else 100."""
    st = scenario("classic_4p", hands=four(p0), melds={0: side_melds, 1: ["8 8 8"]},
                  has_melded=has_melded, red_threes={0: red3}, phase="meld")
    events = play(st, *actions)
    assert events & EV_WENT_OUT
    assert bool(events & EV_CONCEALED) == (bonus == 200)
    assert parts(st, 0)["going_out"] == bonus


def test_c30_concealed_bonus_legal_set() -> None:
    """C30: the concealed go-out is built from ordinary actions (legal set at the start)."""
    st = scenario("classic_4p", hands=four("K K K K K K K Q 7"), melds={0: ["Q Q Q"], 1: ["8 8 8"]},
                  has_melded=[2, 1], phase="meld")
    assert legal(st) == {"MELD_NNN_K", "ADD_NATURAL_Q"} | discards("K", "Q", "7")


# ---- C31a: the last stock card is a red three ---------------------------------------------------

# Wilds live in the pile (rest="pile"), so the pile is frozen; the top 9 cannot be taken by P0.
def _last_red3_state(rules: RuleSet | str, p0: str) -> State:
    """One stock card left, a red three; the rest lies under a 9 in the (frozen) pile."""
    return scenario(rules, hands=four(p0, "4", "6", "8"), melds={0: ["K K K"], 1: ["Q Q Q"]},
                    pile="9", stock_top="R3", rest="pile")


@pytest.mark.parametrize(
    ("p0", "expected"),
    [("5 5 5 7", {"MELD_NNN_5", "END_HAND"}), ("5 5 5", {"END_HAND"})],  # twin: last card stays
)
def test_c31a_last_card_red_three_may_meld_no_discard(p0: str, expected: set[str]) -> None:
    """C31a (may_meld_no_discard): the red three is laid down, then the player may meld but not
    the last card, may not discard, and ends the hand."""
    st = _last_red3_state("classic_4p", p0)
    assert int(st.stock_size[0]) == 1
    assert legal(st) == {"DRAW_STOCK"}
    events = play(st, "DRAW_STOCK")
    assert events & EV_LAST_RED3 and events & EV_RED3_DRAWN
    assert int(st.red_threes[0, 0]) == 1 and int(st.stock_size[0]) == 0
    assert int(st.phase[0]) == PH_FINAL_MELD
    assert np.array_equal(hand(st, 0), cards(p0))
    assert legal(st) == expected
    if "MELD_NNN_5" in expected:
        play(st, "MELD_NNN_5")
        assert legal(st) == {"END_HAND"}
    events = play(st, "END_HAND")
    assert events & EV_HAND_END and not events & EV_WENT_OUT
    assert bool(st.terminated[0]) and int(st.hand_end[0]) == HE_LAST_RED3
    # C31c: no going-out bonus
    melded5 = 15 if "MELD_NNN_5" in expected else 0
    left = -5 if "MELD_NNN_5" in expected else -15
    assert parts(st, 0) == {"melds": 30 + melded5, "canastas": 0, "red_threes": 100,
                            "going_out": 0, "hand": left - 5}  # P2 holds a 6
    assert parts(st, 1) == {"melds": 30, "canastas": 0, "red_threes": 0, "going_out": 0,
                            "hand": -15}  # P1 4, P3 8


def test_c31a_end_immediately() -> None:
    """C31a twin (option end_immediately, Regal): the hand ends with the draw."""
    rules = load_rules("classic_4p", last_card_red3="end_immediately")
    st = _last_red3_state(rules, "5 5 5 7")
    events = play(st, "DRAW_STOCK")
    assert events & EV_LAST_RED3 and events & EV_HAND_END
    assert bool(st.terminated[0]) and int(st.hand_end[0]) == HE_LAST_RED3
    assert parts(st, 0) == {"melds": 30, "canastas": 0, "red_threes": 100, "going_out": 0,
                            "hand": -25}


@pytest.mark.parametrize(
    ("stock_top", "final"),
    [("A R3", True), ("R3 A", False)],  # twin: the red three is replaced by the last card
)
def test_c31a_only_when_the_red_three_is_the_last_card_taken(stock_top: str, final: bool) -> None:
    """C31a/C7 (2p, draw 2): the stock holds A then R3 (R3 taken last): final_meld. Twin: R3
    first, replaced by the A, and the stock is gone before the second card: the player keeps the
    A and plays on. (stock_top is written in drawing order, as the implementation reads it.)"""
    st = scenario("classic_2p", hands=["5 5 5 7", "4 4"], melds={0: ["K K K"], 1: ["Q Q Q"]},
                  pile="9", stock_top=stock_top, rest="pile")
    events = play(st, "DRAW_STOCK")
    assert int(st.red_threes[0, 0]) == 1
    assert np.array_equal(hand(st, 0), cards("5 5 5 7 A"))
    assert bool(events & EV_LAST_RED3) == final
    if final:
        assert int(st.phase[0]) == PH_FINAL_MELD
        assert legal(st) == {"MELD_NNN_5", "END_HAND"}
    else:
        assert int(st.phase[0]) == PH_MELD
        assert legal(st) == {"MELD_NNN_5"} | discards("5", "7", "A")


# ---- C31b: a turn that starts with an empty stock ------------------------------------------------

# The stock is empty (rest="pile"); the wilds sit in P1's and P3's hands so that the pile holds no
# wild (C20). Two cases move one two into the pile to freeze it.
WILDS = "JK JK 2 2 2 2"
RED3_DOWN = {2: 2, 3: 2}  # an unfrozen pile holds no red three (C5, C20): they lie face up instead


@pytest.mark.parametrize(
    ("case", "mode", "p0", "p1", "pile", "expected"),
    [
        ("layoff", "forced_if_layoff", "5 6 7 8", WILDS, "Q", {"TAKE_PILE_LAYOFF"}),
        ("pair", "forced_if_layoff", "J J 5 6", WILDS, "J", {"TAKE_PILE_PAIR", "END_HAND"}),
        ("pair", "forced_if_legal", "J J 5 6", WILDS, "J", {"TAKE_PILE_PAIR"}),
        ("layoff", "forced_if_legal", "5 6 7 8", WILDS, "Q", {"TAKE_PILE_LAYOFF"}),
        ("layoff", "optional", "5 6 7 8", WILDS, "Q", {"TAKE_PILE_LAYOFF", "END_HAND"}),
        ("no take", "forced_if_legal", "5 6 7 8", WILDS, "9", {"END_HAND"}),
        ("stop card", "forced_if_legal", "5 6 7 8", WILDS, "B3", {"END_HAND"}),
        ("frozen", "forced_if_layoff", "Q Q 5 6", "JK JK 2 2 2", "2 Q",
         {"TAKE_PILE_PAIR", "END_HAND"}),
        ("frozen", "forced_if_legal", "Q Q 5 6", "JK JK 2 2 2", "2 Q", {"TAKE_PILE_PAIR"}),
    ],
)
def test_c31b_empty_stock(case: str, mode: str, p0: str, p1: str, pile: str,
                          expected: set[str]) -> None:
    """C31b: END_HAND replaces the draw. forced_if_layoff: the take is compulsory when the top
    card can be laid off on an unfrozen pile; forced_if_legal: whenever a take is legal;
    optional: never. A take forbidden by C21 is never compulsory. (Also C26's twin: with no
    stock the layoff take is no longer optional.)"""
    rules = load_rules("classic_4p", exhausted_stock_take=mode)
    st = scenario(rules, hands=four(p0, p1, "4 4", WILDS), melds={0: ["Q Q Q"], 1: ["K K K"]},
                  pile=pile, rest="pile", red_threes=RED3_DOWN)
    assert int(st.stock_size[0]) == 0
    assert legal(st) == expected


@pytest.mark.parametrize(("side1", "expected"), [
    (["5 5 5"], {"TAKE_PILE_LAYOFF"}),  # the 5 discarded onto the pile fits P1's side meld
    (["K K K"], {"END_HAND"}),  # twin: no 5 meld, no take: P1 ends the hand
])
def test_c31b_next_turn_starts_with_the_empty_stock(side1: list[str], expected: set[str]) -> None:
    """C7/C31b: P0 draws the last stock card (an ace) and plays on; P1's turn starts with an empty
    stock, so END_HAND replaces the draw unless the layoff take is compulsory."""
    st = scenario("classic_4p", hands=four("5 6 7", WILDS, "4 4", WILDS),
                  melds={0: ["Q Q Q"], 1: side1}, pile="9", stock_top="A", rest="pile", red_threes=RED3_DOWN)
    assert legal(st) == {"DRAW_STOCK"}  # P0 holds no 9s to take the (unfrozen) pile
    play(st, "DRAW_STOCK")
    assert int(st.stock_size[0]) == 0 and int(st.phase[0]) == PH_MELD
    assert legal(st) == discards("5", "6", "7", "A")
    play(st, "DISCARD_5")
    assert int(st.current_player[0]) == 1
    assert legal(st) == expected


def test_c31b_end_hand_scores_without_going_out_bonus() -> None:
    """C31b/C31c: END_HAND ends the hand at once (no meld, no discard) and nobody gets a
    going-out bonus; the parts are melds and hands only."""
    st = scenario("classic_4p", hands=four("J J 5 6", WILDS, "4 4", WILDS),
                  melds={0: ["Q Q Q"], 1: ["K K K"]}, pile="J", rest="pile", pile_frozen=True)
    events = play(st, "END_HAND")
    assert events & EV_STOCK_OUT_END and events & EV_HAND_END
    assert bool(st.terminated[0]) and int(st.hand_end[0]) == HE_STOCK_OUT
    assert parts(st, 0) == {"melds": 30, "canastas": 0, "red_threes": 0, "going_out": 0,
                            "hand": -40}
    assert parts(st, 1) == {"melds": 30, "canastas": 0, "red_threes": 0, "going_out": 0,
                            "hand": -360}


def test_c31b_forced_take_lays_down_pile_red_threes() -> None:
    """C31b/C24: the forced take takes the whole pile; its four red threes are laid down. Red threes
    lie in the pile only under a red-three upcard, which freezes it (C5, C20), so the forced take
    is the pair take of forced_if_legal (a layoff take of that pile is unreachable)."""
    rules = load_rules("classic_4p", exhausted_stock_take="forced_if_legal")
    st = scenario(rules, hands=four("Q Q 7 8", WILDS, "4 4", WILDS),
                  melds={0: ["Q Q Q"], 1: ["K K K"]}, pile="Q", rest="pile", pile_frozen=True)
    pile_len = int(st.pile_size[0])
    assert legal(st) == {"TAKE_PILE_PAIR"}
    events = play(st, "TAKE_PILE_PAIR")
    assert events & EV_PILE_TAKE
    assert int(st.red_threes[0, 0]) == 4
    assert int(st.hands[0, 0].sum()) == 4 - 2 + pile_len - 1 - 4
    assert meld(st, 0, "Q") == (6, 0, 0)


# ---- C32: the hand score is the sum of its parts ------------------------------------------------


@pytest.mark.parametrize(("p2", "p2_value"), [("A 2 4", 45), ("A 2 4 T", 55)])  # twin: +1 card
def test_c32_score_parts(p2: str, p2_value: int) -> None:
    """C32: melds + canasta bonuses + red threes + going out - cards in hand, per side."""
    st = scenario("classic_4p", hands=four("7 7 7 9", "JK 6", p2, "B3 T"),
                  melds={0: ["K K K K K K JK", Q7, "5 5 5"], 1: ["8 8 8 2"]},
                  red_threes={0: 1, 2: 1, 1: 1}, scores=[1000, 2000], phase="meld")
    assert legal(st) == {"MELD_NNN_7"} | discards("7", "9")
    result = step_one(st, action_index("MELD_NNN_7"))
    assert not bool(st.terminated[0])
    result = step_one(st, action_index("DISCARD_9"))
    assert bool(result.terminated[0]) and int(result.events[0]) & EV_WENT_OUT
    side0 = {"melds": 60 + 50 + 70 + 15 + 15, "canastas": 300 + 500, "red_threes": 200,
             "going_out": 100, "hand": -p2_value}
    side1 = {"melds": 30 + 20, "canastas": 0, "red_threes": 100, "going_out": 0,
             "hand": -(50 + 5) - (5 + 10)}
    assert parts(st, 0) == side0 and parts(st, 1) == side1
    total0, total1 = sum(side0.values()), sum(side1.values())
    assert [int(x) for x in st.hand_scores[0]] == [total0, total1]
    assert [int(x) for x in st.scores[0]] == [1000 + total0, 2000 + total1]
    assert [float(x) for x in result.rewards[0]] == [total0 - total1, total1 - total0] * 2


# ---- C33: the end of the game -------------------------------------------------------------------

# P0 goes out by melding 5 5 5: side 0 scores 70 + 500 + 15 + 100 - 5 (P2's 4) = 680;
# side 1 scores its melds minus P1's and P3's cards.


def _game_state(scores: list[int], side1: list[str], tie_rule: str = "extra_hand") -> State:
    rules = load_rules("classic_4p", tie_rule=tie_rule)
    return scenario(rules, hands=four("5 5 5", "6", "4", "7"), melds={0: [K7], 1: side1},
                    scores=scores, phase="meld", episode="game")


@pytest.mark.parametrize(
    ("scores", "side1", "tie_rule", "over", "result"),
    [
        ([4400, 0], ["Q Q Q"], "extra_hand", True, 0),  # 5080: side 0 wins
        ([4300, 0], ["Q Q Q"], "extra_hand", False, -2),  # twin: 4980, next hand
        ([4400, 4600], [Q7], "extra_hand", True, 1),  # both pass 5000: the higher (5160) wins
        ([4400, 4520], [Q7], "extra_hand", False, -2),  # tie at 5080: another hand
        ([4400, 4520], [Q7], "draw", True, -1),  # twin (option): a draw
    ],
)
def test_c33_game_end(scores: list[int], side1: list[str], tie_rule: str, over: bool,
                      result: int) -> None:
    """C33: the game ends after the hand in which a side reaches 5000; the highest total wins;
    a tie for the highest plays another hand (extra_hand) or is a draw."""
    st = _game_state(scores, side1, tie_rule)
    assert legal(st) == {"MELD_NNN_5"} | discards("5")
    events = play(st, "MELD_NNN_5")
    assert events & EV_WENT_OUT and events & EV_HAND_END
    side1_hand = (30 if side1 == ["Q Q Q"] else 570) - 10
    assert [int(x) for x in st.hand_scores[0]] == [680, side1_hand]
    assert [int(x) for x in st.scores[0]] == [scores[0] + 680, scores[1] + side1_hand]
    assert bool(st.terminated[0]) == over
    assert bool(events & EV_GAME_END) == over
    assert int(st.game_result[0]) == result
    if not over:  # the next hand is dealt
        assert int(st.hand_number[0]) == 1
        assert int(st.phase[0]) == PH_DRAW


def test_c33_hand_episode_never_reports_a_game_result() -> None:
    """C33: with episode='hand' the episode ends with the hand; no game result is decided."""
    st = scenario("classic_4p", hands=four("5 5 5", "6", "4", "7"), melds={0: [K7], 1: ["Q Q Q"]},
                  scores=[4400, 0], phase="meld")
    events = play(st, "MELD_NNN_5")
    assert bool(st.terminated[0]) and not events & EV_GAME_END
    assert int(st.game_result[0]) == -2


@pytest.mark.parametrize(("max_hands", "truncated"), [(1, True), (2, False)])
def test_c33_max_hands_truncates(max_hands: int, truncated: bool) -> None:
    """C33: max_hands stops a game that has not reached the target, reported as truncation."""
    rules = load_rules("classic_4p", max_hands=max_hands)
    st = scenario(rules, hands=four("5 5 5", "6", "4", "7"), melds={0: [K7], 1: ["Q Q Q"]},
                  phase="meld", episode="game")
    result = step_one(st, action_index("MELD_NNN_5"))
    assert bool(result.truncated[0]) == truncated
    assert not bool(result.terminated[0])
    assert int(st.hand_number[0]) == (0 if truncated else 1)
