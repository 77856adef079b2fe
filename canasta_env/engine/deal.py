"""Dealing a hand (C4-C6) and starting a turn, over one game row."""

from __future__ import annotations

import numpy as np
from numba import njit

from canasta_env.engine import cards as C
from canasta_env.engine import layout as L
from canasta_env.engine.melds import side_of
from canasta_env.engine.rng import deal_key, next_below

CREDIT_ALL = 1 << 20  # every card held counts toward the minimum (no pile taken this turn)


@njit(cache=True)
def minimum_for(prm, score):
    """Initial-meld minimum for a side with cumulative ``score`` (C16)."""
    need = prm[L.P_MTAB_MIN]
    for i in range(prm[L.P_MTAB_N]):
        if score >= prm[L.P_MTAB_LO + i]:
            need = prm[L.P_MTAB_MIN + i]
    return need


@njit(cache=True)
def start_turn(row, prm, player):
    """Make ``player`` the mover at the start of a turn: draw phase, turn bookkeeping cleared."""
    row[L.F_CUR] = player
    row[L.F_PHASE] = L.PH_DRAW
    row[L.F_TURN_VALUE] = 0
    row[L.F_TURN_MELDS] = 0
    row[L.F_ASKER] = -1
    row[L.F_TURN_FLAGS] = L.TF_MELDED_BEFORE if row[prm[L.O_MELDED] + player] else 0
    side = side_of(prm, player)
    row[L.F_NEEDS_MIN] = 1 - row[prm[L.O_OPENED] + side]
    row[L.F_MINIMUM] = minimum_for(prm, row[prm[L.O_SCORE] + side])
    row[prm[L.O_NEW]: prm[L.O_NEW] + C.NUM_SLOTS] = 0
    row[prm[L.O_CREDIT]: prm[L.O_CREDIT] + C.NUM_KINDS] = CREDIT_ALL


@njit(cache=True)
def shuffled_order(prm, seed_lo, seed_hi, deal_row, deal_index, hand_no, out):
    """Fill ``out`` with the deck in dealing order (top = last) and return the dealer."""
    counts = deck_counts(prm)
    pos = 0
    for k in range(C.NUM_KINDS):
        for _ in range(counts[k]):
            out[pos] = k
            pos += 1
    key = deal_key(seed_lo, seed_hi, deal_row, deal_index, hand_no)
    n = prm[L.P_DECK]
    for i in range(n - 1, 0, -1):
        j = next_below(key, i, i + 1)
        out[i], out[j] = out[j], out[i]
    return next_below(key, 0, prm[L.P_NPLAYERS])


@njit(cache=True)
def deck_counts(prm):
    """Count of each kind in the deck (C1)."""
    counts = np.full(C.NUM_KINDS, 4 * prm[L.P_PACKS], np.int64)
    counts[C.JOKER] = prm[L.P_JOKERS]
    counts[C.RED_THREE] = 2 * prm[L.P_PACKS]
    counts[C.BLACK_THREE] = 2 * prm[L.P_PACKS]
    return counts


@njit(cache=True)
def pop_stock(row, prm):
    """Take the top stock card."""
    n = row[L.F_STOCK_LEN] - 1
    row[L.F_STOCK_LEN] = n
    return row[prm[L.O_STOCK] + n]


@njit(cache=True)
def push_pile(row, prm, card):
    """Put a card on top of the discard pile."""
    row[prm[L.O_PILE] + row[L.F_PILE_LEN]] = card
    row[L.F_PILE_LEN] += 1


@njit(cache=True)
def clear_hand_state(row, prm):
    """Zero everything that belongs to one hand (keeps the game's scores and deal address)."""
    keep_from = prm[L.O_SCORE]  # cumulative scores, last hand's scores and parts are contiguous
    keep_to = prm[L.O_CREDIT]
    for j in range(L.HEADER, prm[L.P_WIDTH]):  # loops, not slice copies: no shape checks to compile
        if j < keep_from or j >= keep_to:
            row[j] = 0
    for f in (L.F_PHASE, L.F_STEPS, L.F_STATUS, L.F_TRUNC, L.F_STOCK_LEN, L.F_PILE_LEN, L.F_PILE_FROZEN,
              L.F_TURN_VALUE, L.F_TURN_FLAGS, L.F_TURN_MELDS, L.F_CONCEALED, L.F_HAND_END):
        row[f] = 0
    row[L.F_WENT_OUT] = -1
    row[L.F_ASKER] = -1
    row[L.F_GAME_RESULT] = -2


@njit(cache=True)
def deal_from_order(row, prm, order, dealer):
    """Deal a hand from an explicit deck order (top = last) and dealer: C4-C6. Returns events."""
    clear_hand_state(row, prm)
    n = prm[L.P_NPLAYERS]
    deck = prm[L.P_DECK]
    counts = deck_counts(prm)
    for k in range(C.NUM_KINDS):
        row[prm[L.O_DECKCOUNT] + k] = counts[k]
    for i in range(deck):
        row[prm[L.O_STOCK] + i] = order[i]
    row[L.F_STOCK_LEN] = deck
    row[L.F_DEALER] = dealer
    for _ in range(prm[L.P_HAND_SIZE]):
        for j in range(n):
            p = (dealer + 1 + j) % n
            row[L.hand_at(prm, p) + pop_stock(row, prm)] += 1
    for _ in range(prm[L.P_RES_SIZE]):  # the kitty or foot, face down (R1, P1)
        for j in range(n):
            p = (dealer + 1 + j) % n
            row[L.reserve_at(prm, p) + pop_stock(row, prm)] += 1
    for p in range(n):
        row[prm[L.O_RESSTATE] + p] = L.RES_DOWN if prm[L.P_RES_SIZE] > 0 else L.RES_IN_HAND
    for j in range(n):
        p = (dealer + 1 + j) % n
        while row[L.hand_at(prm, p) + C.RED_THREE] > 0:
            row[L.hand_at(prm, p) + C.RED_THREE] -= 1
            row[prm[L.O_RED3] + p] += 1
            row[L.hand_at(prm, p) + pop_stock(row, prm)] += 1
    return turn_upcard(row, prm)


@njit(cache=True, inline="always")
def turn_upcard(row, prm):
    """Start the discard pile (C5) and give the turn to the dealer's left."""
    events = 0
    card = pop_stock(row, prm)
    push_pile(row, prm, card)
    if prm[L.P_UPCARD_KEEP]:
        if card == C.JOKER or card == C.TWO or card == C.RED_THREE:
            row[L.F_PILE_FROZEN] = 1
            events |= L.EV_FROZEN_UPCARD
    else:
        while (card == C.JOKER or card == C.TWO or card == C.RED_THREE) and row[L.F_STOCK_LEN] > 0:
            row[L.F_PILE_FROZEN] = 1
            events |= L.EV_FROZEN_UPCARD
            card = pop_stock(row, prm)
            push_pile(row, prm, card)
    row[L.F_STATUS] = L.ST_LIVE
    start_turn(row, prm, (row[L.F_DEALER] + 1) % prm[L.P_NPLAYERS])
    return events


@njit(cache=True, inline="always")
def deal_next(row, prm, order_buf, new_game):
    """Deal the row's next hand from its DealId; a new game also resets scores and picks a dealer."""
    hand_no = np.int64(0) if new_game else row[L.F_HAND_NO] + 1  # not a literal: one shuffle compiles
    dealer = shuffled_order(prm, row[L.F_SEED_LO], row[L.F_SEED_HI], row[L.F_DEAL_ROW],
                            row[L.F_DEAL_INDEX], hand_no, order_buf)
    if new_game:
        row[prm[L.O_SCORE]: prm[L.O_CREDIT]] = 0
    else:
        dealer = (row[L.F_DEALER] + 1) % prm[L.P_NPLAYERS]
    events = deal_from_order(row, prm, order_buf, dealer)
    row[L.F_HAND_NO] = hand_no
    return events
