"""Rule scenario tests for Railroad Canasta, docs/rules.md R1-R8 (presets railroad_2p, railroad_4p).

As for the classic and Regal rules: each test builds a position with ``canasta_env.scenario``,
asserts the complete legal set derived by hand from docs/rules.md, plays it and checks the state or the
score; each rule has a negative twin that differs minimally (one card, one meld size, one option)
so that the rule's effect disappears or flips.

Railroad is each for themselves: a side is a player and owns its melds. With a meld cap a meld
that reaches seven cards closes (``closed`` describes closed canastas). A seat not named in
``reserves`` already holds its kitty (it is empty and in hand), so only the kitty tests describe
one. Undescribed cards lie in the stock with aces on top, or in the pile with ``rest="pile"``.
"""

from __future__ import annotations

import numpy as np
import pytest

from canasta_env.engine import ACTION_NAMES, explicit_deal, init, init_from_deals, step_one
from canasta_env.engine.cards import BLACK_THREE, JOKER, NUM_KINDS, RED_THREE, SEVEN, TWO
from canasta_env.engine.core import State
from canasta_env.engine.layout import (
    EV_ALL_KINDS_OUT,
    EV_CANASTA,
    EV_NO_DISCARD_END,
    EV_RESERVE_PICKUP,
    EV_SEVENS_CANASTA,
    EV_WENT_OUT,
    EV_WILD_CANASTA,
    HE_NO_DISCARD,
    HE_STOCK_OUT,
    HE_WENT_OUT,
    K_MIXED,
    K_NATURAL,
    K_SEVENS,
    K_WILD,
    RES_DOWN,
    RES_IN_HAND,
    RES_SHOWN,
    deck_counts,
)
from canasta_env.rules import load_rules
from canasta_env.scenario import scenario
from tests.engine.test_rules_c17_c33 import K7, cards, discards, four, hand, legal, meld, parts, play

MIXED7 = "Q Q Q Q Q Q JK"  # a black (mixed) canasta: 60 + 50, bonus 300
WILD7 = "JK 2 2 2 2 2 2"  # a wild canasta: 50 + 120, bonus 1000
SEVENS7 = "7 7 7 7 7 7 7"  # a sevens canasta: 35, bonus 1500
ALL_KINDS = [K7, MIXED7, WILD7, SEVENS7]  # one canasta of each kind (R8): 385 in cards, 3300 bonus
SIX = {"num_players": 6, "packs": 12, "jokers": 12}  # a 6-player Railroad rule set (R1)
KITTY = "R3 4 4 5 5 6 6 8 8 T T"  # a face-down kitty with a red three (R4)


def wild_meld(st: State, owner: int) -> tuple[int, int]:
    """(jokers, twos) of an owner's open wild-only meld."""
    return int(st.meld_jokers[0, owner, 11]), int(st.meld_twos[0, owner, 11])


def kinds(st: State, owner: int) -> list[int]:
    """Closed canastas of an owner by kind: [red/natural, black/mixed, wild, sevens]."""
    return [int(v) for v in st.closed_canastas[0, owner]]


def all_cards(st: State, b: int = 0) -> np.ndarray:
    """Every card of row ``b`` by kind: hands, kitties, red threes, stock, pile, open and closed
    melds; equals the deck while cards are conserved."""
    total = st.hands[b].sum(axis=0) + st.reserves[b].sum(axis=0)
    total = total + np.bincount(st.stock(b), minlength=NUM_KINDS)
    total = total + np.bincount(st.pile(b), minlength=NUM_KINDS)
    total[RED_THREE] += int(st.red_threes[b].sum())
    for owner in range(st.num_owners):
        for slot in range(13):
            kind = BLACK_THREE if slot == 12 else slot + 4
            jokers = int(st.meld_jokers[b, owner, slot] + st.closed_jokers[b, owner, slot])
            twos = int(st.meld_twos[b, owner, slot] + st.closed_twos[b, owner, slot])
            total[JOKER] += jokers
            total[TWO] += twos
            if slot != 11:
                total[kind] += int(st.meld_naturals[b, owner, slot])
                closed = int(st.closed_slots[b, owner, slot])
                total[kind] += 7 * closed - int(st.closed_jokers[b, owner, slot]) \
                    - int(st.closed_twos[b, owner, slot])
    return total


# ---- R1: 2N packs + 2N jokers; 13 cards and an 11-card kitty each; draw 2 -----------------------


@pytest.mark.parametrize(("preset", "overrides", "size", "jokers"), [
    ("railroad_2p", {}, 212, 4),
    ("railroad_4p", {}, 424, 8),
    ("railroad_2p", SIX, 636, 12),
    ("classic_2p", {}, 108, 4),  # twin: classic's fixed 2 packs + 4 jokers at two players
])
def test_r1_deck_is_two_packs_and_two_jokers_per_player(preset: str, overrides: dict, size: int,
                                                        jokers: int) -> None:
    rules = load_rules(preset, **overrides)
    assert rules.deck_size == size
    counts = deck_counts(init(rules, 1, seed=0).params)
    assert int(counts.sum()) == size and int(counts[JOKER]) == jokers


@pytest.mark.parametrize(("preset", "overrides", "hand_size", "kitty"), [
    ("railroad_2p", {}, 13, 11),
    ("railroad_4p", {}, 13, 11),
    ("railroad_2p", SIX, 13, 11),
    ("classic_2p", {}, 15, 0),  # twin: classic deals 15 to two players and no kitty
])
def test_r1_deal_thirteen_cards_and_a_face_down_kitty(preset: str, overrides: dict, hand_size: int,
                                                      kitty: int) -> None:
    """R1/C6: a real deal gives every player 13 cards (red threes laid down and replaced) and an
    11-card kitty face down; every card of the deck is somewhere."""
    rules = load_rules(preset, **overrides)
    st = init(rules, 8, seed=3)
    assert (st.hands.sum(axis=2) == hand_size).all()
    assert (st.hands[:, :, RED_THREE] == 0).all()
    assert (st.reserves.sum(axis=2) == kitty).all()
    assert (st.reserve_state == (RES_DOWN if kitty else RES_IN_HAND)).all()
    deck = deck_counts(st.params)
    for b in range(8):
        assert np.array_equal(all_cards(st, b), deck)


def meld_first_playout(preset: str, seed: int, steps: int, check) -> int:
    """Play random legal actions, melds preferred (so canastas close and kitties join), calling
    ``check(state)`` after every step; returns the OR of the events."""
    rng = np.random.default_rng(seed)
    st = init(preset, 1, seed=seed)
    events = 0
    for _ in range(steps):
        if bool(st.terminated[0]) or bool(st.truncated[0]):
            break
        acts = st.legal_actions(0)
        melds = [a for a in acts if not ACTION_NAMES[a].startswith(("DISCARD", "DRAW", "END"))]
        pool = melds if melds and rng.random() < 0.9 else acts
        events |= int(step_one(st, int(rng.choice(pool))).events[0])
        check(st)
    return events


def assert_cards_conserved_in_play(preset: str) -> None:
    """Through random legal play, melds first, no card appears or vanishes; melds close and a
    kitty or foot joins a hand along the way."""
    deck = deck_counts(init(preset, 1).params)

    def check(st: State) -> None:
        assert np.array_equal(all_cards(st), deck)

    events = 0
    for seed in range(3):
        events |= meld_first_playout(preset, seed, 300, check)
    assert events & EV_CANASTA and events & EV_RESERVE_PICKUP


@pytest.mark.parametrize("preset", ["railroad_2p", "railroad_4p"])
def test_r1_cards_are_conserved_in_play(preset: str) -> None:
    """R1/R2/R4: melds closing and kitties joining keep the 2N-pack deck whole."""
    assert_cards_conserved_in_play(preset)


@pytest.mark.parametrize(("overrides", "expected"), [({}, "5 6 8 9 K Q"), ({"draw_count": 1}, "5 6 8 9 K")])
def test_r1_draw_two_cards(overrides: dict, expected: str) -> None:
    """R1/C7: a stock draw takes two cards (the twin with draw_count 1 takes one)."""
    st = scenario(load_rules("railroad_2p", **overrides), hands=["5 6 8 9", "4 4 6"], stock_top="K Q")
    play(st, "DRAW_STOCK")
    assert np.array_equal(hand(st, 0), cards(expected))


# ---- R2: melds closed at seven; four canasta kinds; 2 naturals + 3 wilds; wild melds ----------


@pytest.mark.parametrize("open_kings", [6, 5])
def test_r2_meld_closes_at_seven_and_the_rank_starts_again(open_kings: int) -> None:
    """R2: P0 holds K K K K 8 9 after drawing, with an open meld of six kings: the seventh king
    closes it (a red canasta); the slot is empty again and the three kings left start a new meld of
    kings. The twin (five kings on the table) reaches six: still open, kings can only join it."""
    st = scenario("railroad_2p", hands=["K K K K 8 9", "4 4 6"], melds={0: [" ".join("K" * open_kings)]},
                  phase="meld")
    assert legal(st) == {"ADD_NATURAL_K"} | discards("K", "8", "9")
    play(st, "ADD_NATURAL_K")
    if open_kings == 6:
        assert meld(st, 0, "K") == (0, 0, 0)
        assert kinds(st, 0) == [1, 0, 0, 0] and int(st.closed_slots[0, 0, 9]) == 1  # slot 9: kings
        assert legal(st) == {"MELD_NNN_K"} | discards("K", "8", "9")
        play(st, "MELD_NNN_K")
        assert meld(st, 0, "K") == (3, 0, 0) and kinds(st, 0) == [1, 0, 0, 0]
    else:
        assert meld(st, 0, "K") == (6, 0, 0) and kinds(st, 0) == [0, 0, 0, 0]
        assert legal(st) == {"ADD_NATURAL_K"} | discards("K", "8", "9")


@pytest.mark.parametrize(("open_kings", "expected"), [
    (5, {"DRAW_STOCK", "TAKE_PILE_LAYOFF"}),  # 5 + top + pair = 8: past seven
    (4, {"DRAW_STOCK", "TAKE_PILE_PAIR", "TAKE_PILE_LAYOFF"}),  # twin: 4 + 3 = 7 closes it
])
def test_r2_pile_take_past_seven_is_illegal(open_kings: int, expected: set[str]) -> None:
    """R2/C22: pile 5 K (not frozen, P0 opened), P0 holds K K 8 9 T with an open meld of kings.
    Taking with the pair would push a five-king meld to eight: illegal; the lay-off (six) is not."""
    st = scenario("railroad_2p", hands=["K K 8 9 T", "4 4 6"], melds={0: [" ".join("K" * open_kings)]},
                  pile="5 K")
    assert legal(st) == expected
    if open_kings == 4:
        play(st, "TAKE_PILE_PAIR")
        assert meld(st, 0, "K") == (0, 0, 0) and kinds(st, 0) == [1, 0, 0, 0]
        assert np.array_equal(hand(st, 0), cards("5 8 9 T"))


@pytest.mark.parametrize(("open_meld", "held", "action", "kind", "event", "cards_value", "bonus"), [
    ("K K K K K K", "K", "ADD_NATURAL_K", K_NATURAL, 0, 70, 500),  # red canasta
    ("K K K K K JK", "K", "ADD_NATURAL_K", K_MIXED, 0, 110, 300),  # twin: one wild makes it black
    ("JK 2 2 2 2 2", "2", "ADD_TWO_W", K_WILD, EV_WILD_CANASTA, 170, 1000),  # seven wilds
    ("7 7 7 7 7 7", "7", "ADD_NATURAL_7", K_SEVENS, EV_SEVENS_CANASTA, 35, 1500),  # seven sevens
])
def test_r2_canasta_kinds_and_bonuses(open_meld: str, held: str, action: str, kind: int, event: int,
                                      cards_value: int, bonus: int) -> None:
    """R2: P0 closes a canasta with its seventh card; it counts as exactly one kind, and scores its
    kind's bonus. The stock is empty (rest in the pile), so P1 ends the hand at once (C31b)."""
    st = scenario("railroad_2p", hands=[f"{held} 8 9", "4 4 6"], melds={0: [open_meld]}, phase="meld",
                  rest="pile")
    assert legal(st) == {action} | discards(held if held != "7" else "8", "8", "9")
    events = play(st, action)
    assert (events & event) == event
    expected = [0, 0, 0, 0]
    expected[kind] = 1
    assert kinds(st, 0) == expected
    assert int(st.meld_naturals[0, 0].sum() + st.meld_jokers[0, 0].sum() + st.meld_twos[0, 0].sum()) == 0
    play(st, "DISCARD_8")
    assert legal(st) == {"END_HAND"}
    play(st, "END_HAND")
    assert parts(st, 0) == {"melds": cards_value, "canastas": bonus, "red_threes": 0, "going_out": 0,
                            "hand": -10}


@pytest.mark.parametrize(("rank", "expected"), [
    ("7", {"ADD_JOKER_K"} | discards("JK", "8", "9")),  # no 7 7 JK; no seven discarded (R5)
    ("6", {"ADD_JOKER_K", "MELD_NNJ_6"} | discards("6", "JK", "8", "9")),  # twin: 6 6 JK is a meld
])
def test_r2_sevens_take_no_wilds(rank: str, expected: set[str]) -> None:
    st = scenario("railroad_2p", hands=[f"{rank} {rank} JK 8 9", "4 4 6"], melds={0: ["K K K"]},
                  phase="meld")
    assert legal(st) == expected


def test_r2_wilds_never_join_sevens() -> None:
    """R2: an open meld of sevens takes no joker (the twin, a meld of kings, does)."""
    st = scenario("railroad_2p", hands=["JK 8 9", "4 4 6"], melds={0: ["7 7 7", "K K K"]}, phase="meld")
    assert legal(st) == {"ADD_JOKER_K"} | discards("JK", "8", "9")


@pytest.mark.parametrize(("overrides", "third_wild"), [({}, True), ({"wild_le_naturals": True}, False)])
def test_r2_two_naturals_take_three_wilds(overrides: dict, third_wild: bool) -> None:
    """R2: 2 naturals + 3 wilds is a valid Railroad meld (wild_le_naturals false); the twin with the
    classic limit stops at two wilds."""
    st = scenario(load_rules("railroad_2p", **overrides), hands=["K K 2 2 2 8 9", "4 4 6"],
                  melds={0: ["Q Q Q"]}, phase="meld")
    play(st, "MELD_NN2_K", "ADD_TWO_K")
    assert ("ADD_TWO_K" in legal(st)) == third_wild
    if third_wild:
        play(st, "ADD_TWO_K")
        assert meld(st, 0, "K") == (2, 0, 3)


@pytest.mark.parametrize(("held", "expected"), [
    ("JK 2 2 8 9", {"MELD_WILD_1J2T"} | discards("JK", "2", "8", "9")),  # 50 + 20 + 20 = 90
    ("2 2 2 8 9", discards("2", "8", "9")),  # twin: 20 + 20 + 20 = 60 < 90
])
def test_r2_wild_meld_counts_toward_the_minimum(held: str, expected: set[str]) -> None:
    """R2/R7: at 5000 the minimum is 90. A wild-only meld counts at its card values: JK 2 2 (90)
    opens; the twin's 2 2 2 (60) falls short, so it may not be melded."""
    st = scenario("railroad_2p", hands=[held, "4 4 6"], scores=[5000, 0], phase="meld")
    assert int(st.minimum[0]) == 90
    if "MELD_WILD_1J2T" in expected:
        assert legal(st) == expected
        play(st, "MELD_WILD_1J2T")
        assert wild_meld(st, 0) == (1, 2) and int(st.turn_value[0]) == 90
        assert legal(st) == discards("8", "9")
        play(st, "DISCARD_8")
        assert int(st.opened[0, 0]) == 1
    else:
        assert legal(st) == expected


@pytest.mark.parametrize("wild_meld_cards", ["JK 2 2", "2 2 2"])
def test_r2_a_side_with_a_wild_meld_has_opened(wild_meld_cards: str) -> None:
    """R2/C18: a wild-only meld on the table means its side has opened (the scenario default for a
    side with melds), so P0 discards freely, whatever wilds the meld holds."""
    st = scenario("railroad_2p", hands=["8 9 T", "4 4 6"], melds={0: [wild_meld_cards]}, phase="meld")
    assert int(st.opened[0, 0]) == 1
    assert legal(st) == discards("8", "9", "T")


# ---- R3: black threes only when going out, any number of at least three, no wilds ------------


@pytest.mark.parametrize(("held", "closed", "overrides", "goes_out"), [
    ("B3 B3 B3 B3 B3 B3 B3 8", ALL_KINDS, {}, True),  # seven black threes: no cap, no bonus
    ("B3 B3 B3 B3 B3 B3 B3 8", ALL_KINDS, {"max_black_three_meld": 4}, False),  # twin: classic cap
    ("B3 B3 B3 B3 B3 B3 B3 8", [K7, MIXED7, WILD7], {}, False),  # twin: no going out, no threes
    ("B3 B3 JK 8", ALL_KINDS, {}, False),  # no wild joins black threes
])
def test_r3_black_threes_only_when_going_out(held: str, closed: list[str], overrides: dict,
                                             goes_out: bool) -> None:
    """R3/C11: P0 holds one canasta of each kind (R8). Black threes are melded only in the turn P0
    goes out (meld them all, discard the 8), in any number (seven here, past the meld cap of R2),
    never with a wild, and score 5 each without a canasta bonus."""
    st = scenario(load_rules("railroad_2p", **overrides), hands=[held, "4 4 6"], closed={0: closed},
                  phase="meld")
    kinds_held = sorted(set(held.split()), key=held.split().index)
    assert legal(st) == discards(*kinds_held) | ({"MELD_NNN_B3"} if goes_out else set())
    if goes_out:
        play(st, "MELD_NNN_B3")
        for _ in range(4):
            assert legal(st) == {"ADD_NATURAL_B3"}
            play(st, "ADD_NATURAL_B3")
        assert legal(st) == discards("8")
        assert play(st, "DISCARD_8") & EV_WENT_OUT
        assert meld(st, 0, "B3") == (7, 0, 0)
        assert parts(st, 0) == {"melds": 385 + 35, "canastas": 3300, "red_threes": 0, "going_out": 100,
                                "hand": 0}


# ---- R4: the kitty is shown on a red, wild or sevens canasta and joins after the discard ------


@pytest.mark.parametrize(("open_meld", "held", "action", "shown"), [
    ("K K K K K K", "K", "ADD_NATURAL_K", True),  # red
    ("JK 2 2 2 2 2", "2", "ADD_TWO_W", True),  # wild
    ("7 7 7 7 7 7", "7", "ADD_NATURAL_7", True),  # sevens
    ("K K K K K JK", "K", "ADD_NATURAL_K", False),  # twin: a black canasta does not show it
])
def test_r4_kitty_shown_on_a_non_black_canasta_joins_after_the_discard(open_meld: str, held: str,
                                                                       action: str, shown: bool) -> None:
    """R4/C8: P0's kitty (a red three and ten cards) is face down. Closing a red, wild or sevens
    canasta shows it at once; it joins P0's hand only after the discard, its red three laid down
    and not replaced. Closing a black canasta leaves it face down."""
    st = scenario("railroad_2p", hands=[f"{held} 8 9", "4 4 6"], melds={0: [open_meld]},
                  reserves={0: KITTY}, phase="meld")
    stock = int(st.stock_size[0])
    play(st, action)
    assert int(st.reserve_state[0, 0]) == (RES_SHOWN if shown else RES_DOWN)
    assert np.array_equal(hand(st, 0), cards("8 9"))  # not yet in hand
    assert legal(st) == discards("8", "9")  # the kitty is not in hand: no going out either
    events = play(st, "DISCARD_8")
    assert int(st.current_player[0]) == 1
    if shown:
        assert events & EV_RESERVE_PICKUP
        assert int(st.reserve_state[0, 0]) == RES_IN_HAND
        assert np.array_equal(hand(st, 0), cards("9 4 4 5 5 6 6 8 8 T T"))
        assert int(st.reserves[0, 0].sum()) == 0
        assert int(st.red_threes[0, 0]) == 1
    else:
        assert not events & EV_RESERVE_PICKUP
        assert int(st.reserve_state[0, 0]) == RES_DOWN
        assert np.array_equal(hand(st, 0), cards("9"))
        assert int(st.red_threes[0, 0]) == 0
    assert int(st.stock_size[0]) == stock  # nothing replaced


@pytest.mark.parametrize(("kitty", "expected"), [
    ("in_hand", {"MELD_NNN_5"} | discards("5", "8")),
    ("down", discards("5", "8")),  # twin: the kitty is face down: no going out
    ("shown", discards("5", "8")),  # shown this turn, joins after the discard: still no going out
])
def test_r4_no_going_out_before_the_kitty_joins(kitty: str, expected: set[str]) -> None:
    """R4/R8: P0 holds one canasta of each kind and 5 5 5 8: melding 5 5 5 and discarding the 8
    goes out, but only once the kitty is in P0's hand."""
    reserves = None if kitty == "in_hand" else {0: "9 9 9 9 T T T T J J J"}
    st = scenario("railroad_2p", hands=["5 5 5 8", "4 4 6"], closed={0: ALL_KINDS}, reserves=reserves,
                  reserve_shown=[0] if kitty == "shown" else [], phase="meld")
    assert legal(st) == expected
    if kitty == "in_hand":
        assert play(st, "MELD_NNN_5", "DISCARD_8") & EV_WENT_OUT


# ---- R5: no seven discarded until every player has a sevens canasta ---------------------------


@pytest.mark.parametrize(("owners", "seven_ok"), [
    ([0, 1, 2], False),  # P3 has no sevens canasta: nobody discards a seven
    ([0, 1, 2, 3], True),  # twin: every player has one
])
def test_r5_no_seven_discard_until_every_player_has_a_sevens_canasta(owners: list[int],
                                                                     seven_ok: bool) -> None:
    st = scenario("railroad_4p", hands=four("7 8 9", "4 4", "6 6", "9 9"),
                  closed={o: [SEVENS7] for o in owners}, phase="meld")
    assert legal(st) == discards("8", "9") | (discards("7") if seven_ok else set())
    if seven_ok:
        play(st, "DISCARD_7")
        assert int(st.pile(0)[-1]) == SEVEN


@pytest.mark.parametrize(("last", "expected"), [
    ("7", discards("5", "7")),  # going out would end on a seven: no meld of 5 5 5
    ("8", {"MELD_NNN_5"} | discards("5", "8")),  # twin: the 8 is the final discard
])
def test_r5_a_seven_is_never_the_final_discard(last: str, expected: set[str]) -> None:
    """R5/R8: both players have a sevens canasta, so sevens may be discarded, but never to go
    out: P0 (one canasta of each kind) cannot meld 5 5 5 and go out on the seven."""
    st = scenario("railroad_2p", hands=[f"5 5 5 {last}", "4 4 6"], closed={0: ALL_KINDS, 1: [SEVENS7]},
                  phase="meld")
    assert legal(st) == expected
    if last == "8":
        assert play(st, "MELD_NNN_5", "DISCARD_8") & EV_WENT_OUT


@pytest.mark.parametrize(("held", "closed", "meld_ok"), [
    ("5 5 5 7 7", {}, False),  # 5 5 5 would leave only sevens, which may not be discarded
    ("5 5 5 7 8", {}, True),  # twin: an 8 is left to discard
    ("5 5 5 7 7", {0: [SEVENS7], 1: [SEVENS7]}, True),  # twin: sevens may be discarded
])
def test_r5_no_meld_leaving_only_sevens(held: str, closed: dict, meld_ok: bool) -> None:
    st = scenario("railroad_2p", hands=[held, "4 4 6"], melds={0: ["K K K"]}, closed=closed,
                  phase="meld")
    seven_ok = bool(closed)
    kinds_held = set(held.split()) - (set() if seven_ok else {"7"})
    assert legal(st) == discards(*kinds_held) | ({"MELD_NNN_5"} if meld_ok else set())
    if meld_ok:
        play(st, "MELD_NNN_5")
        assert meld(st, 0, "5") == (3, 0, 0)


@pytest.mark.parametrize("held", ["7 7 7", "7 7 8"])
def test_r5_only_sevens_when_melding_begins_ends_the_hand(held: str) -> None:
    """R5/C27a: P0 holds 7 7 7 and draws two more sevens: every card is a seven and none may be
    discarded. P0 may meld as usual (7 7 7) and END_HAND then ends the hand without a discard and
    without a going-out bonus. The twin holds an 8 instead of a seven: it is discarded, no early
    end."""
    st = scenario("railroad_2p", hands=[held, "4 4 6"], melds={0: ["K K K"]}, stock_top="7 7")
    play(st, "DRAW_STOCK")
    if held == "7 7 7":
        assert legal(st) == {"MELD_NNN_7", "END_HAND"}
        play(st, "MELD_NNN_7")
        assert legal(st) == {"ADD_NATURAL_7", "END_HAND"}
        events = play(st, "END_HAND")
        assert events & EV_NO_DISCARD_END
        assert bool(st.terminated[0]) and int(st.hand_end[0]) == HE_NO_DISCARD
        assert int(st.went_out[0]) == -1
        assert parts(st, 0) == {"melds": 45, "canastas": 0, "red_threes": 0, "going_out": 0, "hand": -10}
    else:
        assert legal(st) == {"MELD_NNN_7"} | discards("8")
        play(st, "MELD_NNN_7")
        assert legal(st) == discards("8")


def test_r5_twin_sevens_discardable_no_early_end() -> None:
    """R5/C27a twin: when every player has a sevens canasta a hand of sevens discards one."""
    st = scenario("railroad_2p", hands=["7 7", "4 4 6"], closed={0: [SEVENS7], 1: [SEVENS7]}, phase="meld")
    assert legal(st) == discards("7")


# ---- R6: upcard kept; a natural pair takes any pile; never natural + wild; lay-off; stop ------


def test_r6_wild_or_red_three_upcard_is_kept_and_freezes() -> None:
    """R6/C5 keep: a deal whose upcard is a wild or a red three leaves it alone on the pile,
    frozen, and nobody may take; the same deal under cover_and_freeze (the twin) covers it."""
    rules = load_rules("railroad_2p")
    st = init(rules, 128, seed=5)
    rows = [b for b in range(128) if int(st.pile(b)[-1]) in (JOKER, TWO, RED_THREE)]
    assert rows, "no deal with a wild or red-three upcard among 128"
    b = rows[0]
    assert int(st.pile_size[b]) == 1 and int(st.pile_frozen[b]) == 1
    assert not any(ACTION_NAMES[a].startswith("TAKE_PILE") for a in st.legal_actions(b))
    covered = init_from_deals(load_rules("railroad_2p", upcard_policy="cover_and_freeze"),
                              [explicit_deal(rules, st.deal_id(b))])
    assert int(covered.pile_size[0]) > 1 and int(covered.pile(0)[0]) == int(st.pile(b)[0])


@pytest.mark.parametrize(("pile", "expected"), [
    ("5 6 K", {"DRAW_STOCK", "TAKE_PILE_PAIR"}),
    ("5 JK K", {"DRAW_STOCK", "TAKE_PILE_PAIR"}),  # frozen by a wild: the pair still takes
])
def test_r6_natural_pair_takes_frozen_or_not(pile: str, expected: set[str]) -> None:
    st = scenario("railroad_2p", hands=["K K 8 9", "4 4 6"], melds={0: ["Q Q Q"]}, pile=pile)
    assert legal(st) == expected
    play(st, "TAKE_PILE_PAIR")
    assert meld(st, 0, "K") == (3, 0, 0)


@pytest.mark.parametrize(("overrides", "wild", "expected"), [
    ({}, "JK", {"DRAW_STOCK"}),
    ({}, "2", {"DRAW_STOCK"}),
    ({"pile_take_with_wild": True}, "JK", {"DRAW_STOCK", "TAKE_PILE_NAT_JOKER"}),  # twin: classic C22
    ({"pile_take_with_wild": True}, "2", {"DRAW_STOCK", "TAKE_PILE_NAT_TWO"}),
])
def test_r6_natural_and_wild_never_take(overrides: dict, wild: str, expected: set[str]) -> None:
    """R6: one king and a wild never take an unfrozen pile topped by a king in Railroad."""
    st = scenario(load_rules("railroad_2p", **overrides), hands=[f"K {wild} 8 9", "4 4 6"],
                  melds={0: ["Q Q Q"]}, pile="5 6 K")
    assert legal(st) == expected


@pytest.mark.parametrize(("pile", "melds", "closed", "expected"), [
    ("5 K", ["K K K"], [], {"DRAW_STOCK", "TAKE_PILE_LAYOFF"}),
    ("5 JK K", ["K K K"], [], {"DRAW_STOCK"}),  # twin: frozen, the lay-off does not take
    ("5 K", ["Q Q Q"], [K7], {"DRAW_STOCK"}),  # twin: a closed canasta is no meld of kings (R2)
])
def test_r6_open_meld_of_the_rank_takes_an_unfrozen_pile(pile: str, melds: list[str], closed: list[str],
                                                         expected: set[str]) -> None:
    st = scenario("railroad_2p", hands=["K 8 9", "4 4 6"], melds={0: melds}, closed={0: closed}, pile=pile)
    assert legal(st) == expected
    if "TAKE_PILE_LAYOFF" in expected:
        play(st, "TAKE_PILE_LAYOFF")
        assert meld(st, 0, "K") == (4, 0, 0)
        assert np.array_equal(hand(st, 0), cards("5 K 8 9"))


@pytest.mark.parametrize(("pile", "expected"), [
    ("5 K B3", {"DRAW_STOCK"}),  # a black three on top stops the pile
    ("5 B3 K", {"DRAW_STOCK", "TAKE_PILE_PAIR"}),  # twin: covered, it has no effect
])
def test_r6_black_three_stops_the_pile(pile: str, expected: set[str]) -> None:
    st = scenario("railroad_2p", hands=["K K B3 B3 9", "4 4 6"], melds={0: ["Q Q Q"]}, pile=pile)
    assert legal(st) == expected


# ---- R7: minimum bands --------------------------------------------------------------------------


@pytest.mark.parametrize(("preset", "score", "minimum"), [
    ("railroad_2p", -5, 15), ("railroad_2p", 0, 50), ("railroad_2p", 4995, 50),
    ("railroad_2p", 5000, 90), ("railroad_2p", 9995, 90), ("railroad_2p", 10000, 120),
    ("railroad_2p", 14995, 120), ("railroad_2p", 15000, 150), ("railroad_2p", 30000, 150),
    ("classic_2p", 3000, 120),  # twin: classic's table reaches 120 at 3000
    ("railroad_2p", 3000, 50),
])
def test_r7_minimum_bands(preset: str, score: int, minimum: int) -> None:
    st = scenario(preset, hands=["5 6 8 9", "4 4 6"], scores=[score, 0])
    assert int(st.minimum[0]) == minimum


@pytest.mark.parametrize(("score", "meld_ok"), [(14995, True), (15000, False)])
def test_r7_minimum_150_from_15000(score: int, meld_ok: bool) -> None:
    """R7: JK JK 2 is worth 120: it opens at 14995 (minimum 120) but not at 15000 (150)."""
    st = scenario("railroad_2p", hands=["JK JK 2 8 9", "4 4 6"], scores=[score, 0], phase="meld")
    assert legal(st) == discards("JK", "2", "8", "9") | ({"MELD_WILD_2J1T"} if meld_ok else set())


# ---- R8: going out needs each kind and a final discard; red threes; kitty minus; optional take --


@pytest.mark.parametrize("missing", [None, 0, 1, 2, 3])
def test_r8_going_out_needs_one_canasta_of_each_kind(missing: int | None) -> None:
    """R8: P0 holds 5 5 5 8; melding 5 5 5 and discarding the 8 goes out only with a red, a black,
    a wild and a sevens canasta (each twin lacks one kind). Going out scores 100."""
    closed = [c for i, c in enumerate(ALL_KINDS) if i != missing]
    st = scenario("railroad_2p", hands=["5 5 5 8", "4 4 6"], closed={0: closed}, phase="meld")
    assert legal(st) == discards("5", "8") | ({"MELD_NNN_5"} if missing is None else set())
    if missing is None:
        events = play(st, "MELD_NNN_5", "DISCARD_8")
        assert events & EV_WENT_OUT and events & EV_ALL_KINDS_OUT
        assert int(st.hand_end[0]) == HE_WENT_OUT and int(st.went_out[0]) == 0
        assert parts(st, 0) == {"melds": 385 + 15, "canastas": 3300, "red_threes": 0, "going_out": 100,
                                "hand": 0}
        assert parts(st, 1)["hand"] == -15


@pytest.mark.parametrize(("overrides", "expected"), [
    ({}, discards("5")),  # melding the last three cards would go out without a discard
    ({"go_out_needs_discard": False}, {"MELD_NNN_5"} | discards("5")),  # twin
])
def test_r8_going_out_needs_a_final_discard(overrides: dict, expected: set[str]) -> None:
    st = scenario(load_rules("railroad_2p", **overrides), hands=["5 5 5", "4 4 6"], closed={0: ALL_KINDS},
                  phase="meld")
    assert legal(st) == expected


def test_r8_going_out_counts_a_canasta_closed_this_turn() -> None:
    """R8/C28: the sevens canasta closed this turn counts toward going out."""
    st = scenario("railroad_2p", hands=["7 5 5 5 8", "4 4 6"], closed={0: [K7, MIXED7, WILD7]},
                  melds={0: ["7 7 7 7 7 7"]}, phase="meld")
    assert legal(st) == {"ADD_NATURAL_7", "MELD_NNN_5"} | discards("5", "8")
    events = play(st, "ADD_NATURAL_7", "MELD_NNN_5", "DISCARD_8")
    assert events & EV_WENT_OUT and int(st.hand_end[0]) == HE_WENT_OUT
    assert parts(st, 0)["canastas"] == 3300


def go_out_p0(rules, red_threes: dict[int, int], **kwargs) -> State:
    """P0 (one canasta of each kind) holds 5 5 5 8 and goes out; P1 holds 4 4 6."""
    st = scenario(rules, hands=["5 5 5 8", kwargs.pop("p1", "4 4 6")], closed={0: ALL_KINDS},
                  red_threes=red_threes, phase="meld", **kwargs)
    play(st, "MELD_NNN_5", "DISCARD_8")
    assert int(st.hand_end[0]) == HE_WENT_OUT
    return st


@pytest.mark.parametrize(("overrides", "p1_red"), [({}, 100), ({"red3_negative_if": "no_meld"}, -100)])
def test_r8_red_threes_never_count_minus(overrides: dict, p1_red: int) -> None:
    """R8/C10: P0 laid down two red threes (+200); P1 laid down one and made no meld: +100 all the
    same in Railroad, -100 under classic's no_meld (the twin)."""
    st = go_out_p0(load_rules("railroad_2p", **overrides), {0: 2, 1: 1})
    assert parts(st, 0)["red_threes"] == 200
    assert parts(st, 1)["red_threes"] == p1_red


@pytest.mark.parametrize(("overrides", "red"), [({}, 800), ({"red3_all_bonus": 1000}, 1000)])
def test_r8_no_all_red_threes_bonus(overrides: dict, red: int) -> None:
    """R8: all eight red threes of the 2-player deck score 8 x 100; the twin with an all-threes
    bonus scores it instead."""
    st = go_out_p0(load_rules("railroad_2p", **overrides), {0: 8})
    assert parts(st, 0)["red_threes"] == red


@pytest.mark.parametrize("kitty", ["down", "joined"])
def test_r8_face_down_kitty_counts_minus_and_its_red_three_zero(kitty: str) -> None:
    """R8/C32: P0 goes out while P1's kitty (a red three, K K 5 5 6 6 8 8 9 9) is face down: its
    cards count minus with P1's hand, its red three 0. The twin: the kitty had joined P1's hand
    (its red three laid down: +100), the same cards count minus."""
    if kitty == "down":
        st = go_out_p0("railroad_2p", {}, p1="4 4", reserves={1: "R3 K K 5 5 6 6 8 8 9 9"})
        red = 0
    else:
        st = go_out_p0("railroad_2p", {1: 1}, p1="4 4 K K 5 5 6 6 8 8 9 9")
        red = 100
    assert parts(st, 1) == {"melds": 0, "canastas": 0, "red_threes": red, "going_out": 0, "hand": -90}
    assert int(st.hand_scores[0, 1]) == red - 90


@pytest.mark.parametrize(("overrides", "expected"), [
    ({}, {"TAKE_PILE_PAIR", "END_HAND"}),
    ({"exhausted_stock_take": "forced_if_legal"}, {"TAKE_PILE_PAIR"}),  # twin: Regal's compulsion
])
def test_r8_exhausted_stock_take_is_optional(overrides: dict, expected: set[str]) -> None:
    """R8/C31b: the stock is gone; P0 holds K K 8 and the pile's top is a king: taking is allowed
    but not compulsory, so END_HAND ends the hand (no going-out bonus)."""
    st = scenario(load_rules("railroad_2p", **overrides), hands=["K K 8", "4 4 6"], melds={0: ["Q Q Q"]},
                  pile="K", rest="pile")
    assert int(st.stock_size[0]) == 0
    assert legal(st) == expected
    if "END_HAND" in expected:
        play(st, "END_HAND")
        assert int(st.hand_end[0]) == HE_STOCK_OUT
        assert parts(st, 0)["going_out"] == 0 and parts(st, 0)["melds"] == 30

