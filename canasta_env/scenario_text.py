"""Card strings both ways for ``canasta_env.scenario``: parsing them, and ``describe``, which writes
a game row as the ``scenario`` arguments that rebuild it (tests/test_scenario_strict.py rebuilds
reached states through it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from canasta_env.engine import State
from canasta_env.engine.cards import (
    BLACK_THREE,
    BLACK_THREE_SLOT,
    FOUR,
    JOKER,
    KIND_BY_NAME,
    KIND_NAMES,
    NUM_KINDS,
    NUM_RANK_SLOTS,
    NUM_SLOTS,
    RED_THREE,
    SEVEN_SLOT,
    TWO,
    WILD_SLOT,
)
from canasta_env.engine.deal import CREDIT_ALL
from canasta_env.engine.layout import (
    F_CUR,
    F_DEALER,
    F_PHASE,
    F_PILE_FROZEN,
    F_PILE_LEN,
    F_STATUS,
    F_STOCK_LEN,
    F_TURN_FLAGS,
    F_TURN_VALUE,
    K_MIXED,
    O_CREDIT,
    O_NEW,
    O_PILE,
    O_STOCK,
    P_EPISODE_GAME,
    PHASE_NAMES,
    RES_IN_HAND,
    RES_SHOWN,
    ST_LIVE,
    TF_TOOK,
)

_ALIASES = {"10": "T", "JOKER": "JK", "JKR": "JK", "RED3": "R3", "BLACK3": "B3"}


class ScenarioError(ValueError):
    """The description is malformed, breaks card conservation or describes an unreachable table."""



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


def cards_text(counts: Sequence[int] | np.ndarray) -> str:
    """The card string of counts per kind (naturals by rank, then black threes, jokers and twos)."""
    order = [*range(FOUR, NUM_KINDS), BLACK_THREE, RED_THREE, JOKER, TWO]
    return " ".join(KIND_NAMES[k] for k in order for _ in range(int(counts[k])))


def _closed_texts(state: State, b: int, owner: int) -> list[str]:
    """One owner's closed canastas as seven-card strings, their wilds spread so that as many are
    mixed as the owner's kind counts say (scenario sums them back per slot)."""
    slots = state.closed_slots[b, owner]
    wilds = state.closed_jokers[b, owner] + state.closed_twos[b, owner]
    mixed_left = int(state.closed_canastas[b, owner, K_MIXED])
    ranks = [s for s in range(NUM_RANK_SLOTS) if s != SEVEN_SLOT and slots[s]]
    mixed = {s: -(-int(wilds[s]) // 3) for s in ranks}  # the fewest mixed canastas their wilds fill
    mixed_left -= sum(mixed.values())
    for s in ranks:
        extra = max(0, min(mixed_left, min(int(slots[s]), int(wilds[s])) - mixed[s]))
        mixed[s], mixed_left = mixed[s] + extra, mixed_left - extra
    texts = []
    for s in range(NUM_SLOTS):
        pool = [JOKER] * int(state.closed_jokers[b, owner, s]) + [TWO] * int(state.closed_twos[b, owner, s])
        count = int(slots[s])
        shares = [7] * count if s == WILD_SLOT else [0] * count
        for n in range(len(pool) if s != WILD_SLOT else 0):
            shares[n % mixed[s]] += 1
        for share in shares:
            counts = np.zeros(NUM_KINDS, dtype=np.int64)
            for card in pool[:share]:
                counts[card] += 1
            pool = pool[share:]
            if s != WILD_SLOT:
                counts[s + FOUR] = 7 - share
            texts.append(cards_text(counts))
    return texts


def describe(state: State, row: int = 0) -> dict[str, Any]:
    """The ``scenario`` arguments that rebuild row ``row`` of ``state`` (the inverse of
    ``scenario``): every card where it lies (the whole stock as ``stock_top``), scores, opened
    sides, melded seats and the turn so far. Not described: what the row remembers of play (the
    deal address, decision and hand counters, the last hand's score, the cards known to come from
    the pile, each seat's discards this hand, the meld actions and ask of this turn, whether the
    mover melded before this turn)."""
    data, prm = state.data[row], state.params
    phase = PHASE_NAMES[int(data[F_PHASE])]
    if phase not in ("draw", "meld", "final_meld") or data[F_STATUS] != ST_LIVE:
        raise ScenarioError(f"describe: row {row} is {phase!r} (status {int(data[F_STATUS])}); "
                            "scenario builds live rows in draw, meld or final_meld")
    sides, owners, n = state.num_sides, state.num_owners, state.num_players
    prefix = owners != sides
    melds: dict[int, list[str]] = {}
    closed: dict[int, list[str]] = {}
    for o in range(owners):
        tag = f"P{o}: " if prefix else ""
        for s in range(NUM_SLOTS):
            counts = np.zeros(NUM_KINDS, dtype=np.int64)
            counts[JOKER], counts[TWO] = state.meld_jokers[row, o, s], state.meld_twos[row, o, s]
            if s != WILD_SLOT:
                counts[BLACK_THREE if s == BLACK_THREE_SLOT else s + FOUR] = state.meld_naturals[row, o, s]
            if counts.sum():
                melds.setdefault(o % sides, []).append(tag + cards_text(counts))
        closed_o = [tag + t for t in _closed_texts(state, row, o)]
        if closed_o:
            closed.setdefault(o % sides, []).extend(closed_o)
    stock = data[prm[O_STOCK]: prm[O_STOCK] + data[F_STOCK_LEN]]
    pile = data[prm[O_PILE]: prm[O_PILE] + data[F_PILE_LEN]]
    credit = data[prm[O_CREDIT]: prm[O_CREDIT] + NUM_KINDS]
    res_state = state.reserve_state[row]
    took = bool(data[F_TURN_FLAGS] & TF_TOOK)
    return dict(
        rules=state.rules, hands=[cards_text(state.hands[row, p]) for p in range(n)], melds=melds,
        closed=closed, pile=" ".join(KIND_NAMES[c] for c in pile), pile_frozen=bool(data[F_PILE_FROZEN]),
        stock_top=" ".join(KIND_NAMES[c] for c in stock[::-1]), rest="stock",
        red_threes={p: int(state.red_threes[row, p]) for p in range(n) if state.red_threes[row, p]},
        scores=state.scores[row].tolist(), opened=[bool(x) for x in state.opened[row]],
        has_melded=[p for p in range(n) if state.has_melded[row, p]], turn=int(data[F_CUR]),
        dealer=int(data[F_DEALER]), phase=phase, took_pile=took, turn_value=int(data[F_TURN_VALUE]),
        credit=cards_text(credit) if took or credit.max() < CREDIT_ALL // 2 else None,
        new_slots=[s for s in range(NUM_SLOTS) if data[prm[O_NEW] + s]],
        reserves={p: cards_text(state.reserves[row, p]) for p in range(n) if res_state[p] != RES_IN_HAND},
        reserve_shown=[p for p in range(n) if res_state[p] == RES_SHOWN],
        episode="game" if prm[P_EPISODE_GAME] else "hand")
