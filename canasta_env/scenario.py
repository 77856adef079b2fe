"""Build a one-game state from a readable description, for rule tests, notebooks and debugging.

Cards are written as kind tokens separated by spaces: ``JK 2 R3 B3 4 5 6 7 8 9 T J Q K A``
(``10`` is accepted for ``T``). A meld is the string of its cards (``"K K K JK"``); its natural
rank decides its slot. Cards the description does not place go to the stock **below** any
``stock_top`` cards, in kind order with jokers at the bottom (so, with no ``stock_top``, the next
cards drawn are aces, then kings, ...), or with ``rest="pile"`` under the described pile. A
description that needs more cards of a kind than the deck holds is refused.

**Melds are keyed by side** in every preset: ``melds={side: [...]}`` and ``closed={side: [...]}``
with ``side`` the index the game scores (``seat % num_sides``: partners sit opposite, C0, C4).
Where each player owns their melds (``meld_ownership: player``, G2, ``regal_4p``) a meld names its
owner with a seat prefix, ``melds={0: ["P2: K K K"]}`` (seat 2 of side 0); without one it is the
side's first seat's (seat ``side``). Where sides own melds a prefix is refused.

**Only reachable tables are built.** After building, the state goes through the engine's own
checks (``engine.legality.find_illegal``: integrity, then every rule a reached state obeys: meld
composition and sizes, closed canastas, red and black threes, kitties and feet, hands, opened
sides, the pile's freeze, a legal move for the mover). A table that fails them raises
``ScenarioError`` with one line naming the piece and the rule, e.g.
``melds[0][1] '5 5 2 2 JK': more wild cards (3) than natural cards (2) (C13)``.
``describe(state, row)`` is the inverse: the arguments that rebuild a row.

Example::

    state = scenario("classic_2p", hands=["5 5 5 K K 7", "Q Q 9"], melds={1: ["9 9 9 JK"]},
                     pile="4 8 K", turn=0, phase="draw", scores=[0, 1500])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from canasta_env.engine import State
from canasta_env.engine.cards import (
    BLACK_THREE,
    BLACK_THREE_SLOT,
    FOUR,
    JOKER,
    KIND_NAMES,
    NUM_KINDS,
    NUM_SLOTS,
    RED_THREE,
    SEVEN_SLOT,
    TWO,
    WILD_SLOT,
)
from canasta_env.engine.core import _corruption, _new_state
from canasta_env.engine.deal import start_turn
from canasta_env.engine.integrity import REPORT_SIZE
from canasta_env.engine.layout import (
    F_CUR,
    F_DEALER,
    F_GAME_RESULT,
    F_PHASE,
    F_PILE_FROZEN,
    F_PILE_LEN,
    F_STATUS,
    F_STOCK_LEN,
    F_TURN_FLAGS,
    F_TURN_VALUE,
    F_WENT_OUT,
    K_MIXED,
    K_NATURAL,
    K_SEVENS,
    K_WILD,
    KIND_BONUS_NAMES,
    O_CREDIT,
    O_DECKCOUNT,
    O_NEW,
    O_PILE,
    O_STOCK,
    P_CAP,
    P_NOWNERS,
    P_NSIDES,
    PHASE_NAMES,
    RES_DOWN,
    RES_IN_HAND,
    RES_SHOWN,
    ST_LIVE,
    TF_DREW,
    TF_TOOK,
    deck_counts,
)
from canasta_env.engine.legality import (
    BAD_B3_TURN,
    BAD_CANASTA_KINDS,
    BAD_CLOSED_NO_CAP,
    BAD_CLOSED_WILDS,
    BAD_FINAL_MELD,
    BAD_HAND_EMPTY,
    BAD_MELDED,
    BAD_NOT_OPENED,
    BAD_OPENED,
    BAD_OWNER_MELDED,
    BAD_PILE_FREEZE,
    BAD_RED3_HAND,
    BAD_RESERVE,
    BAD_RESERVE_SHOWN,
    REASONS,
    find_illegal,
)
from canasta_env.engine.turn import mark_sevens_only
from canasta_env.messages import short_repr
from canasta_env.rules import RuleSet, load_rules
from canasta_env.scenario_text import ScenarioError, card_list, cards_text, describe, parse_cards

__all__ = ["ScenarioError", "card_list", "cards_text", "describe", "parse_cards", "scenario"]

MAX_SCORE = 10**7  # |a cumulative score| below this
MAX_TURN_VALUE = 10**5


# ---- argument checks: each refuses with a one-line ScenarioError naming the argument ------------

def _int_in(value: object, where: str, low: int, stop: int, what: str = "an int", hint: str = "") -> int:
    """``value`` as an int in ``[low, stop)``: an int or numpy integer, never a bool or a float;
    ``hint`` ends the error message."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or not low <= value < stop:
        raise ScenarioError(f"{where} = {short_repr(value)} is not {what} in [{low}, {stop}){hint}")
    return int(value)


def _seat(value: object, where: str, n: int) -> int:
    """``value`` as a seat of ``n`` players (every argument that names a seat)."""
    return _int_in(value, where, 0, n, "a seat")


def _flag(value: object, where: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ScenarioError(f"{where} = {short_repr(value)} is not a bool (True or False)")
    return bool(value)


def _text(value: object, where: str) -> str:
    """A card string such as ``"5 5 K JK"``."""
    if not isinstance(value, str):
        raise ScenarioError(f"{where} = {short_repr(value)} is not a card string such as '5 5 K JK'")
    return value


def _listed(value: object, where: str, expected: str, length: int | None = None) -> list[object]:
    """``value`` as a list: a list, tuple or 1-d array (not a string), of ``length`` items if given."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)) \
            or (isinstance(value, np.ndarray) and value.ndim != 1):
        raise ScenarioError(f"{where}: expected {expected}, got {type(value).__name__} {short_repr(value)}")
    items = list(value)
    if length is not None and len(items) != length:
        raise ScenarioError(f"{where}: expected {expected}, got {len(items)} items {short_repr(value)}")
    return items


def _mapped(value: object, where: str, expected: str) -> list[tuple[object, object]]:
    """``value``'s items, when it is a mapping."""
    if not isinstance(value, Mapping):
        raise ScenarioError(f"{where}: expected {expected}, got {type(value).__name__} {short_repr(value)}")
    return list(value.items())

def _meld_slot(counts: np.ndarray, where: str) -> tuple[int, int, int, int]:
    """(slot, naturals, jokers, twos) of a meld's cards; only wilds: the wild-only slot (R2)."""
    naturals = [k for k in range(NUM_KINDS) if counts[k] and k not in (JOKER, TWO)]
    if not naturals and counts[JOKER] + counts[TWO] >= 3:
        return WILD_SLOT, 0, int(counts[JOKER]), int(counts[TWO])
    if len(naturals) != 1 or naturals[0] == RED_THREE:
        raise ScenarioError(f"{where}: a meld needs natural cards of exactly one rank, not red threes (C13)")
    kind = naturals[0]
    slot = BLACK_THREE_SLOT if kind == BLACK_THREE else kind - FOUR
    return slot, int(counts[kind]), int(counts[JOKER]), int(counts[TWO])


def _owner_of(text: str, side: int, prm: np.ndarray, where: str) -> tuple[int, str]:
    """(meld owner, cards) of a meld of ``side``: the seat a ``P<seat>:`` prefix names under G2,
    else the side (whose first seat owns it under G2)."""
    head, sep, cards = text.partition(":")
    if not sep:
        return side, text
    sides, owners = int(prm[P_NSIDES]), int(prm[P_NOWNERS])
    seat = head.strip().upper().removeprefix("P")
    if owners == sides:
        raise ScenarioError(f"{where}: sides own melds in these rules (C14); drop {head.strip()!r}")
    if not (seat.isascii() and seat.isdigit()) or not 0 <= int(seat) < owners or int(seat) % sides != side:
        raise ScenarioError(f"{where}: {head.strip()!r} is not a seat of side {side} (seats "
                            f"{list(range(side, owners, sides))}, G2)")
    return int(seat), cards


def _side_melds(described: Mapping[int, Sequence[str]] | None, prm: np.ndarray, what: str
                ) -> list[tuple[int, str, np.ndarray, tuple[int, int, int, int]]]:
    """(owner, where, counts, (slot, naturals, jokers, twos)) of every meld described per side;
    ``where`` names it as ``melds[side][index] 'text'``."""
    out = []
    sides = int(prm[P_NSIDES])
    expected = "a mapping side -> list of meld strings, e.g. {0: ['K K K']}"
    for key, texts in _mapped({} if described is None else described, what, expected):
        side = _int_in(key, f"{what} key", 0, sides, "a side", " (melds are keyed by side, seat % num_sides)")
        for index, item in enumerate(_listed(texts, f"{what}[{side}]", "a list of meld strings")):
            text = _text(item, f"{what}[{side}][{index}]")
            where = f"{what}[{side}][{index}] {text!r}"
            owner, cards = _owner_of(text, side, prm, where)
            counts = parse_cards(cards, where)
            out.append((owner, where, counts, _meld_slot(counts, where)))
    return out


def scenario(
    rules: RuleSet | str,
    hands: Sequence[str] | Mapping[int, str],
    *,
    melds: Mapping[int, Sequence[str]] | None = None,
    pile: str = "",
    pile_frozen: bool | None = None,
    stock_top: str = "",
    rest: str = "stock",
    red_threes: Mapping[int, int] | None = None,
    scores: Sequence[int] | None = None,
    opened: Sequence[bool] | None = None,
    has_melded: Sequence[int] | None = None,
    turn: int = 0,
    dealer: int | None = None,
    phase: str = "draw",
    took_pile: bool = False,
    turn_value: int = 0,
    credit: str | None = None,
    new_slots: Sequence[int] = (),
    closed: Mapping[int, Sequence[str]] | None = None,
    reserves: Mapping[int, str] | None = None,
    reserve_shown: Sequence[int] = (),
    episode: str = "hand",
) -> State:
    """A batch-of-one state as described (see the module docstring).

    Raises ``ScenarioError`` for a malformed description or a table no game reaches (see the
    module docstring).

    Args:
        hands: cards per seat (a list for every seat or a mapping seat -> cards).
        melds: per side (``seat % num_sides``), a list of melds, each the string of its cards;
            under G2 a ``"P<seat>: "`` prefix names the owning seat (default: seat ``side``).
        pile: the discard pile, bottom first (the last card is the top).
        pile_frozen: frozen for everyone; default: whether the pile holds a wild or a red three (which
            only a frozen pile holds, C5, C20).
        stock_top: cards on top of the stock, the first one written drawn first.
        rest: where undescribed cards go: ``"stock"`` (below ``stock_top``) or ``"pile"`` (under
            the described pile, in kind order), e.g. to describe an exhausted stock (C31).
        red_threes: red threes laid down per seat.
        scores: cumulative score per side (sets the minimum, C16).
        opened: per side; default: a side with melds has opened.
        has_melded: seats that melded earlier this hand (C30); default: the first seat of every
            side with melds.
        turn: seat to move; dealer defaults to the seat before it.
        phase: ``"draw"`` (turn start) or ``"meld"`` (after the draw, or after a take with
            ``took_pile``) or ``"final_meld"``.
        turn_value: value melded toward the minimum earlier this turn.
        credit: the hand cards whose melding still counts toward the minimum (C17): with
            ``took_pile`` those held before the take; after a foot joined (P3) the hand before it.
            Default: every card held (no pile taken), or none with ``took_pile``.
        new_slots: slots started this turn by the mover.
        closed: per side like ``melds``, closed canastas under a meld cap (R2), each the string of its
            seven cards (``"7 7 7 7 7 7 7"``, ``"JK JK 2 2 2 2 2"``).
        reserves: face-down kitty or foot per seat (R1, P1); seats not named hold theirs already.
        reserve_shown: seats whose kitty was shown this turn and joins after the discard (R4).
    """
    # anything but a RuleSet goes through load_rules, which refuses what it cannot read (None, 5)
    rules = rules.resolved() if isinstance(rules, RuleSet) else load_rules(rules)
    state = _new_state(rules, 1, episode)
    used = np.zeros(NUM_KINDS, dtype=np.int64)
    pieces: dict[tuple[str, int, int], str] = {}
    _place_hands(state, hands, used)
    _place_melds(state, melds, used, pieces)
    _place_closed(state, closed, used, pieces)
    _place_reserves(state, reserves, reserve_shown, red_threes, used)
    _lay_stock_and_pile(state, used, pile=pile, stock_top=stock_top, rest=rest, pile_frozen=pile_frozen)
    _set_progress(state, scores=scores, opened=opened, has_melded=has_melded)
    _set_turn(state, turn=turn, dealer=dealer, phase=phase, took_pile=took_pile, turn_value=turn_value,
              credit=credit, new_slots=new_slots)
    state.refresh_mask()
    _refuse_unreachable(state, pieces)
    return state


def _place_hands(state: State, hands: Sequence[str] | Mapping[int, str], used: np.ndarray) -> None:
    n = state.num_players
    expected = "a list of card strings, one per seat, or a mapping seat -> card string"
    hand_items = _mapped(hands, "hands", expected) if isinstance(hands, Mapping) \
        else list(enumerate(_listed(hands, "hands", expected)))
    for key, text in hand_items:
        seat = _seat(key, "hands seat", n)
        counts = parse_cards(_text(text, f"hands[{seat}]"), f"hands[{seat}]")
        if counts[RED_THREE]:
            raise ScenarioError(f"hands[{seat}]: red threes are never held (C8); use red_threes")
        state.hands[0, seat] = counts
        used += counts


def _meld_sizes(state: State) -> np.ndarray:
    """``(owners, slots)``: the cards of each owner's open meld in each slot (0: no meld)."""
    return state.meld_naturals[0] + state.meld_jokers[0] + state.meld_twos[0]


def _place_melds(state: State, melds: Mapping[int, Sequence[str]] | None, used: np.ndarray,
                 pieces: dict[tuple[str, int, int], str]) -> None:
    for owner, where, counts, (slot, nat, jok, two) in _side_melds(melds, state.params, "melds"):
        if _meld_sizes(state)[owner, slot]:
            raise ScenarioError(f"{where}: a second open meld of its rank for one owner (C14, R2)")
        state.meld_naturals[0, owner, slot] = nat
        state.meld_jokers[0, owner, slot] = jok
        state.meld_twos[0, owner, slot] = two
        pieces["melds", owner, slot] = where
        used += counts


def _place_closed(state: State, closed: Mapping[int, Sequence[str]] | None, used: np.ndarray,
                  pieces: dict[tuple[str, int, int], str]) -> None:
    for owner, where, counts, (slot, nat, jok, two) in _side_melds(closed, state.params, "closed"):
        if not state.params[P_CAP] or nat + jok + two != 7 or slot == BLACK_THREE_SLOT:
            raise ScenarioError(f"{where}: a closed canasta is seven cards of a rank or of wilds, "
                                "under a meld cap (R2)")
        kind = K_WILD if slot == WILD_SLOT else K_SEVENS if slot == SEVEN_SLOT else (
            K_NATURAL if jok + two == 0 else K_MIXED)
        state.closed_slots[0, owner, slot] += 1
        state.closed_jokers[0, owner, slot] += jok
        state.closed_twos[0, owner, slot] += two
        state.closed_canastas[0, owner, kind] += 1
        pieces.setdefault(("closed", owner, slot), where)
        used += counts


def _place_reserves(state: State, reserves: Mapping[int, str] | None, reserve_shown: Sequence[int],
                    red_threes: Mapping[int, int] | None, used: np.ndarray) -> None:
    """The kitties or feet (every seat's still in hand unless described) and the red threes down."""
    n = state.num_players
    shown = [_seat(s, "reserve_shown", n) for s in _listed(reserve_shown, "reserve_shown", "a list of seats")]
    state.reserve_state[0] = RES_IN_HAND
    described = _mapped({} if reserves is None else reserves, "reserves", "a mapping seat -> card string")
    for key, text in described:
        seat = _seat(key, "reserves seat", n)
        counts = parse_cards(_text(text, f"reserves[{seat}]"), f"reserves[{seat}]")
        state.reserves[0, seat] = counts
        state.reserve_state[0, seat] = RES_SHOWN if seat in shown else RES_DOWN
        used += counts
    for seat in shown:
        if state.reserve_state[0, seat] != RES_SHOWN:
            raise ScenarioError(f"reserve_shown: seat {seat} has no kitty or foot described in reserves (R4)")
    deck_threes = int(deck_counts(state.params)[RED_THREE])
    for key, count in _mapped({} if red_threes is None else red_threes, "red_threes",
                              "a mapping seat -> count"):
        seat = _seat(key, "red_threes seat", n)
        state.red_threes[0, seat] = _int_in(count, f"red_threes[{seat}]", 0, deck_threes + 1, "a count")
        used[RED_THREE] += state.red_threes[0, seat]


def _lay_stock_and_pile(state: State, used: np.ndarray, *, pile: str, stock_top: str, rest: str,
                        pile_frozen: bool | None) -> None:
    """The described pile and stock top, the deck's other cards under them; refuses a description
    that uses more cards of a kind than the deck holds."""
    prm, row = state.params, state.data[0]
    deck = deck_counts(prm)
    pile_cards = card_list(_text(pile, "pile"), "pile")
    for c in pile_cards:
        used[c] += 1
    top_cards = card_list(_text(stock_top, "stock_top"), "stock_top")
    for c in top_cards:
        used[c] += 1
    over = [k for k in range(NUM_KINDS) if used[k] > deck[k]]
    if over:
        detail = ", ".join(f"{KIND_NAMES[k]}: {used[k]} > {deck[k]}" for k in over)
        raise ScenarioError(f"description uses more cards than the deck holds ({detail})")
    if rest not in ("stock", "pile"):
        raise ScenarioError(f"rest must be 'stock' or 'pile', got {rest!r}")
    undescribed = np.repeat(np.arange(NUM_KINDS), deck - used).tolist()
    if rest == "pile":
        pile_cards, undescribed = undescribed + pile_cards, []
    stock = np.array(undescribed + top_cards[::-1], dtype=np.int32)
    row[prm[O_STOCK]: prm[O_STOCK] + len(stock)] = stock
    row[F_STOCK_LEN] = len(stock)
    row[prm[O_PILE]: prm[O_PILE] + len(pile_cards)] = pile_cards
    row[F_PILE_LEN] = len(pile_cards)
    wild_inside = any(c in (JOKER, TWO, RED_THREE) for c in pile_cards)  # a red three: the upcard (C5)
    row[F_PILE_FROZEN] = int(wild_inside if pile_frozen is None else _flag(pile_frozen, "pile_frozen"))
    row[prm[O_DECKCOUNT]: prm[O_DECKCOUNT] + NUM_KINDS] = deck


def _set_progress(state: State, *, scores: Sequence[int] | None, opened: Sequence[bool] | None,
                  has_melded: Sequence[int] | None) -> None:
    """Scores, which sides have opened and which seats have melded (by default from the melds)."""
    n, sides, owners = state.num_players, state.num_sides, state.num_owners
    if scores is not None:
        listed = _listed(scores, "scores", f"a list of {sides} ints, one per side", sides)
        state.scores[0] = [_int_in(x, f"scores[{s}]", 1 - MAX_SCORE, MAX_SCORE) for s, x in enumerate(listed)]
    owner_has = (_meld_sizes(state).sum(axis=1) + state.closed_slots[0].sum(axis=1)) > 0
    side_has = np.array([owner_has[s::sides].any() for s in range(sides)])
    if opened is None:
        state.opened[0] = side_has
    else:
        listed = _listed(opened, "opened", f"a list of {sides} bools, one per side", sides)
        state.opened[0] = [_flag(x, f"opened[{s}]") for s, x in enumerate(listed)]
    if has_melded is None:  # the first seat of every owner with melds
        seats = [next(p for p in range(n) if p % owners == o) for o in range(owners) if owner_has[o]]
    else:
        seats = [_seat(s, "has_melded", n) for s in _listed(has_melded, "has_melded", "a list of seats")]
    for seat in seats:
        state.has_melded[0, seat] = 1


def _set_turn(state: State, *, turn: int, dealer: int | None, phase: str, took_pile: bool, turn_value: int,
              credit: str | None, new_slots: Sequence[int]) -> None:
    """The game live, seat ``turn`` to move in ``phase``, with what it did earlier this turn."""
    prm, row, n = state.params, state.data[0], state.num_players
    # every argument checked before the first kernel runs (a bad seat would index out of the row)
    turn = _seat(turn, "turn", n)
    dealer = (turn - 1) % n if dealer is None else _seat(dealer, "dealer", n)
    if not isinstance(phase, str) or phase not in ("draw", "meld", "final_meld"):
        raise ScenarioError(f"phase must be draw, meld or final_meld, got {short_repr(phase)}")
    took_pile = _flag(took_pile, "took_pile")
    turn_value = _int_in(turn_value, "turn_value", 0, MAX_TURN_VALUE + 1)
    held = None if not took_pile and credit is None else parse_cards(
        "" if credit is None else _text(credit, "credit"), "credit")
    slots = [_int_in(s, "new_slots", 0, NUM_SLOTS, "a meld slot")
             for s in _listed(new_slots, "new_slots", "a list of meld slots")]
    if slots and phase == "draw":
        raise ScenarioError("new_slots: the mover starts no meld before drawing (phase 'draw')")
    owner = turn % int(prm[P_NOWNERS])
    for slot in slots:  # under a cap a meld started this turn may have closed, leaving its slot empty
        if not prm[P_CAP] and not _meld_sizes(state)[owner, slot]:
            raise ScenarioError(f"new_slots: slot {slot} holds no meld of the mover's "
                                f"{'seat' if prm[P_NOWNERS] != prm[P_NSIDES] else 'side'}")
    row[F_WENT_OUT], row[F_GAME_RESULT] = -1, -2
    row[F_DEALER] = dealer
    start_turn(row, prm, turn)
    row[F_STATUS] = ST_LIVE
    row[F_PHASE] = PHASE_NAMES.index(phase)
    if phase != "draw":
        row[F_TURN_FLAGS] |= TF_TOOK if took_pile else TF_DREW
    row[F_TURN_VALUE] = turn_value
    if held is not None:
        row[prm[O_CREDIT]: prm[O_CREDIT] + NUM_KINDS] = held
    for slot in slots:
        row[prm[O_NEW] + slot] = 1
    if phase != "draw":
        mark_sevens_only(row, prm)


def _refuse_unreachable(state: State, pieces: dict[tuple[str, int, int], str]) -> None:
    """Raise ``ScenarioError`` naming the piece when the built row fails the engine's checks."""
    report = np.zeros(REPORT_SIZE, dtype=np.int64)
    rows = np.zeros(1, dtype=np.int64)
    if find_illegal(state.data, state.params, state.params, state.legal_action_mask, rows, report) < 0:
        return
    code, i, j, value, low, high = (int(x) for x in report)
    if code not in REASONS:
        raise ScenarioError("the table is not one the game reaches: "
                            + _corruption(code, i, j, value, low, high))
    reason = REASONS[code].format(i=i, j=KIND_BONUS_NAMES[j] if code == BAD_CANASTA_KINDS else j,
                                  value=value, low=low, high=high)
    raise ScenarioError(f"{_piece(state, code, i, j, pieces)}: {reason}")


def _piece(state: State, code: int, i: int, j: int, pieces: dict[tuple[str, int, int], str]) -> str:
    """The argument a rule code points at (``melds[0][1] '5 5 2 2 JK'``, ``hands[1]``, ...)."""
    side = i % state.num_sides
    if code in (BAD_CLOSED_NO_CAP, BAD_CLOSED_WILDS):
        return pieces.get(("closed", i, j), f"closed[{side}]")
    if code == BAD_CANASTA_KINDS:
        return f"closed[{side}]"
    if code <= BAD_B3_TURN:
        return pieces.get(("melds", i, j), f"melds[{side}]")
    phase = PHASE_NAMES[int(state.data[0, F_PHASE])]
    return {BAD_RED3_HAND: f"hands[{i}]", BAD_HAND_EMPTY: f"hands[{i}]", BAD_RESERVE: f"reserves[{i}]",
            BAD_RESERVE_SHOWN: f"reserve_shown [{i}]", BAD_OPENED: f"opened[{i}]",
            BAD_NOT_OPENED: f"opened[{i}]", BAD_MELDED: f"has_melded [{i}]",
            BAD_OWNER_MELDED: "has_melded", BAD_PILE_FREEZE: "pile_frozen", BAD_FINAL_MELD: "phase",
            }.get(code, f"turn {state.data[0, F_CUR]} in phase {phase!r}")
