"""Build a one-game state from a readable description, for rule tests, notebooks and debugging.

Cards are written as kind tokens separated by spaces: ``JK 2 R3 B3 4 5 6 7 8 9 T J Q K A``
(``10`` is accepted for ``T``). A meld is the string of its cards (``"K K K JK"``); its natural
rank decides its slot. Cards the description does not place go to the stock **below** any
``stock_top`` cards, in kind order with jokers at the bottom (so, with no ``stock_top``, the next
cards drawn are aces, then kings, ...), or with ``rest="pile"`` under the described pile. A
description that needs more cards of a kind than the deck holds is refused.

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
    JOKER,
    KIND_BY_NAME,
    NUM_KINDS,
    RED_THREE,
    SEVEN,
    TWO,
)
from canasta_env.engine.core import _new_state
from canasta_env.engine.deal import start_turn
from canasta_env.engine.layout import (
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
    O_CREDIT,
    O_DECKCOUNT,
    O_NEW,
    O_PILE,
    O_STOCK,
    P_CAP,
    PHASE_NAMES,
    RES_DOWN,
    RES_IN_HAND,
    RES_SHOWN,
    ST_LIVE,
    TF_DREW,
    TF_TOOK,
    deck_counts,
)
from canasta_env.engine.turn import mark_sevens_only
from canasta_env.rules import RuleSet, load_rules

_ALIASES = {"10": "T", "JOKER": "JK", "JKR": "JK", "RED3": "R3", "BLACK3": "B3"}


class ScenarioError(ValueError):
    """The description is malformed or breaks card conservation."""


def parse_cards(text: str | Sequence[str], where: str = "cards") -> np.ndarray:
    """Counts per kind of a card string such as ``"JK 2 5 5 K"``."""
    tokens = text.split() if isinstance(text, str) else list(text)
    counts = np.zeros(NUM_KINDS, dtype=np.int32)
    for tok in tokens:
        key = _ALIASES.get(tok.upper(), tok.upper())
        if key not in KIND_BY_NAME:
            raise ScenarioError(f"{where}: unknown card {tok!r} (use JK 2 R3 B3 4-9 T J Q K A)")
        counts[KIND_BY_NAME[key]] += 1
    return counts


def card_list(text: str | Sequence[str], where: str = "cards") -> list[int]:
    """Kinds of a card string in the order written."""
    tokens = text.split() if isinstance(text, str) else list(text)
    return [int(np.flatnonzero(parse_cards([t], where))[0]) for t in tokens]


def _meld_slot(counts: np.ndarray, where: str) -> tuple[int, int, int, int]:
    """(slot, naturals, jokers, twos) of a meld's cards; only wilds: the wild-only slot (R2)."""
    naturals = [k for k in range(NUM_KINDS) if counts[k] and k not in (JOKER, TWO)]
    if not naturals and counts[JOKER] + counts[TWO] >= 3:
        return 11, 0, int(counts[JOKER]), int(counts[TWO])
    if len(naturals) != 1 or naturals[0] == RED_THREE:
        raise ScenarioError(f"{where}: a meld needs naturals of exactly one rank (not red threes)")
    kind = naturals[0]
    slot = 12 if kind == BLACK_THREE else kind - 4
    return slot, int(counts[kind]), int(counts[JOKER]), int(counts[TWO])


def _owner_melds(described: Mapping[int, Sequence[str]] | None, owners: int, what: str
                 ) -> list[tuple[int, str, np.ndarray, tuple[int, int, int, int]]]:
    """(owner, text, counts, (slot, naturals, jokers, twos)) of every meld described per owner."""
    out = []
    for owner, texts in (described or {}).items():
        if not 0 <= owner < owners:
            raise ScenarioError(f"{what}: owner {owner} out of range for {owners} meld owners")
        for text in texts:
            counts = parse_cards(text, f"{what}[{owner}]")
            out.append((owner, text, counts, _meld_slot(counts, f"{what}[{owner}] {text!r}")))
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

    Args:
        hands: cards per seat (a list for every seat or a mapping seat -> cards).
        melds: per meld owner (the side; the seat when players own their melds, G2), a list of
            melds, each the string of its cards.
        pile: the discard pile, bottom first (the last card is the top).
        pile_frozen: frozen for everyone (a wild inside); default: whether the pile holds a wild.
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
        credit: with ``took_pile``, the hand cards held before the take (count toward C17).
        new_slots: slots started this turn by the mover.
        closed: per meld owner, closed canastas under a meld cap (R2), each the string of its
            seven cards (``"7 7 7 7 7 7 7"``, ``"JK JK 2 2 2 2 2"``).
        reserves: face-down kitty or foot per seat (R1, P1); seats not named hold theirs already.
        reserve_shown: seats whose kitty was shown this turn and joins after the discard (R4).
    """
    rules = load_rules(rules) if isinstance(rules, str) else rules.resolved()
    state = _new_state(rules, 1, episode)
    used = np.zeros(NUM_KINDS, dtype=np.int64)
    _place_hands(state, hands, used)
    _place_melds(state, melds, used)
    _place_closed(state, closed, used)
    _place_reserves(state, reserves, reserve_shown, red_threes, used)
    _lay_stock_and_pile(state, used, pile=pile, stock_top=stock_top, rest=rest, pile_frozen=pile_frozen)
    _set_progress(state, scores=scores, opened=opened, has_melded=has_melded)
    _set_turn(state, turn=turn, dealer=dealer, phase=phase, took_pile=took_pile, turn_value=turn_value,
              credit=credit, new_slots=new_slots)
    state.refresh_mask()
    return state


def _place_hands(state: State, hands: Sequence[str] | Mapping[int, str], used: np.ndarray) -> None:
    n = state.num_players
    hand_items = hands.items() if isinstance(hands, Mapping) else enumerate(hands)
    for seat, text in hand_items:
        if not 0 <= seat < n:
            raise ScenarioError(f"hands: seat {seat} out of range for {n} players")
        counts = parse_cards(text, f"hands[{seat}]")
        if counts[RED_THREE]:
            raise ScenarioError(f"hands[{seat}]: red threes are never held (C8); use red_threes")
        state.hands[0, seat] = counts
        used += counts


def _place_melds(state: State, melds: Mapping[int, Sequence[str]] | None, used: np.ndarray) -> None:
    for side, text, counts, (slot, nat, jok, two) in _owner_melds(melds, state.num_owners, "melds"):
        if state.meld_naturals[0, side, slot]:
            raise ScenarioError(f"melds[{side}]: two melds in slot of {text!r} (C14)")
        state.meld_naturals[0, side, slot] = nat
        state.meld_jokers[0, side, slot] = jok
        state.meld_twos[0, side, slot] = two
        used += counts


def _place_closed(state: State, closed: Mapping[int, Sequence[str]] | None, used: np.ndarray) -> None:
    for owner, text, counts, (slot, nat, jok, two) in _owner_melds(closed, state.num_owners, "closed"):
        if not state.params[P_CAP] or nat + jok + two != 7 or slot == 12:
            raise ScenarioError(f"closed[{owner}] {text!r}: a closed canasta is seven cards of "
                                "a rank or of wilds, under a meld cap (R2)")
        kind = K_WILD if slot == 11 else K_SEVENS if slot + 4 == SEVEN else (
            K_NATURAL if jok + two == 0 else K_MIXED)
        state.closed_slots[0, owner, slot] += 1
        state.closed_jokers[0, owner, slot] += jok
        state.closed_twos[0, owner, slot] += two
        state.closed_canastas[0, owner, kind] += 1
        used += counts


def _place_reserves(state: State, reserves: Mapping[int, str] | None, reserve_shown: Sequence[int],
                    red_threes: Mapping[int, int] | None, used: np.ndarray) -> None:
    """The kitties or feet (every seat's still in hand unless described) and the red threes down."""
    state.reserve_state[0] = RES_IN_HAND
    for seat, text in (reserves or {}).items():
        counts = parse_cards(text, f"reserves[{seat}]")
        state.reserves[0, seat] = counts
        state.reserve_state[0, seat] = RES_SHOWN if seat in reserve_shown else RES_DOWN
        used += counts
    for seat, count in (red_threes or {}).items():
        state.red_threes[0, seat] = count
        used[RED_THREE] += count


def _lay_stock_and_pile(state: State, used: np.ndarray, *, pile: str, stock_top: str, rest: str,
                        pile_frozen: bool | None) -> None:
    """The described pile and stock top, the deck's other cards under them; refuses a description
    that uses more cards of a kind than the deck holds."""
    prm, row = state.params, state.data[0]
    deck = deck_counts(prm)
    pile_cards = card_list(pile, "pile")
    for c in pile_cards:
        used[c] += 1
    top_cards = card_list(stock_top, "stock_top")
    for c in top_cards:
        used[c] += 1
    over = [k for k in range(NUM_KINDS) if used[k] > deck[k]]
    if over:
        from canasta_env.engine.cards import KIND_NAMES

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
    wild_inside = any(c in (JOKER, TWO) for c in pile_cards)
    row[F_PILE_FROZEN] = int(wild_inside if pile_frozen is None else pile_frozen)
    row[prm[O_DECKCOUNT]: prm[O_DECKCOUNT] + NUM_KINDS] = deck


def _set_progress(state: State, *, scores: Sequence[int] | None, opened: Sequence[bool] | None,
                  has_melded: Sequence[int] | None) -> None:
    """Scores, which sides have opened and which seats have melded (by default from the melds)."""
    n, sides, owners = state.num_players, state.num_sides, state.num_owners
    if scores is not None:
        state.scores[0] = np.asarray(scores, dtype=np.int32)
    owner_has = (state.meld_naturals[0].sum(axis=1) + state.meld_jokers[0].sum(axis=1)
                 + state.meld_twos[0].sum(axis=1) + state.closed_slots[0].sum(axis=1)) > 0
    side_has = np.array([owner_has[s::sides].any() for s in range(sides)])
    state.opened[0] = np.asarray(side_has if opened is None else opened, dtype=np.int32)
    if has_melded is None:  # the first seat of every owner with melds
        has_melded = [next(p for p in range(n) if p % owners == o) for o in range(owners) if owner_has[o]]
    for seat in has_melded:
        state.has_melded[0, seat] = 1


def _set_turn(state: State, *, turn: int, dealer: int | None, phase: str, took_pile: bool, turn_value: int,
              credit: str | None, new_slots: Sequence[int]) -> None:
    """The game live, seat ``turn`` to move in ``phase``, with what it did earlier this turn."""
    prm, row = state.params, state.data[0]
    row[F_WENT_OUT], row[F_GAME_RESULT] = -1, -2
    row[F_DEALER] = (turn - 1) % state.num_players if dealer is None else dealer
    start_turn(row, prm, turn)
    row[F_STATUS] = ST_LIVE
    if phase not in PHASE_NAMES[:4] or phase == "answer":
        raise ScenarioError(f"phase must be draw, meld or final_meld, got {phase!r}")
    row[F_PHASE] = PHASE_NAMES.index(phase)
    if phase != "draw":
        row[F_TURN_FLAGS] |= TF_TOOK if took_pile else TF_DREW
    row[F_TURN_VALUE] = turn_value
    if took_pile:
        held = parse_cards(credit or "", "credit")
        row[prm[O_CREDIT]: prm[O_CREDIT] + NUM_KINDS] = held
    for slot in new_slots:
        row[prm[O_NEW] + slot] = 1
    if phase != "draw":
        mark_sevens_only(row, prm)
