"""Dealing a hand (C4-C6) and starting a turn, over one game row."""

from __future__ import annotations

import numpy as np
from numba import njit

from canasta_env.engine.cards import (
    BLACK_THREE,
    JOKER,
    NUM_KINDS,
    NUM_SLOTS,
    RED_THREE,
    TWO,
)
from canasta_env.engine.layout import (
    EV_FROZEN_UPCARD,
    F_ASKER,
    F_CONCEALED,
    F_CUR,
    F_DEAL_INDEX,
    F_DEAL_ROW,
    F_DEALER,
    F_GAME_RESULT,
    F_HAND_END,
    F_HAND_NO,
    F_MAX_KIND,
    F_MINIMUM,
    F_NEEDS_MIN,
    F_PHASE,
    F_PILE_FROZEN,
    F_PILE_LEN,
    F_SEED_HI,
    F_SEED_LO,
    F_STATUS,
    F_STEPS,
    F_STOCK_LEN,
    F_TRUNC,
    F_TURN_FLAGS,
    F_TURN_MELDS,
    F_TURN_VALUE,
    F_WENT_OUT,
    HEADER,
    O_CREDIT,
    O_DECKCOUNT,
    O_MELDED,
    O_NEW,
    O_OPENED,
    O_PILE,
    O_RED3,
    O_RESSTATE,
    O_SCORE,
    O_STOCK,
    P_DECK,
    P_HAND_SIZE,
    P_JOKERS,
    P_MTAB_LO,
    P_MTAB_MIN,
    P_MTAB_N,
    P_NPLAYERS,
    P_PACKS,
    P_RES_SIZE,
    P_UPCARD_KEEP,
    P_WIDTH,
    PH_DRAW,
    RES_DOWN,
    RES_IN_HAND,
    ST_LIVE,
    TF_MELDED_BEFORE,
    hand_at,
    reserve_at,
)
from canasta_env.engine.melds import side_of
from canasta_env.engine.rng import deal_key, next_below

CREDIT_ALL = 1 << 20  # every card held counts toward the minimum (no pile taken this turn)


@njit(cache=True)
def minimum_for(prm, score):
    """Initial-meld minimum for a side with cumulative ``score`` (C16)."""
    need = prm[P_MTAB_MIN]
    for i in range(prm[P_MTAB_N]):
        if score >= prm[P_MTAB_LO + i]:
            need = prm[P_MTAB_MIN + i]
    return need


@njit(cache=True)
def start_turn(row, prm, player):
    """Make ``player`` the mover at the start of a turn: draw phase, turn bookkeeping cleared."""
    row[F_CUR] = player
    row[F_PHASE] = PH_DRAW
    row[F_TURN_VALUE] = 0
    row[F_TURN_MELDS] = 0
    row[F_ASKER] = -1
    row[F_TURN_FLAGS] = TF_MELDED_BEFORE if row[prm[O_MELDED] + player] else 0
    side = side_of(prm, player)
    row[F_NEEDS_MIN] = 1 - row[prm[O_OPENED] + side]
    row[F_MINIMUM] = minimum_for(prm, row[prm[O_SCORE] + side])
    row[prm[O_NEW]: prm[O_NEW] + NUM_SLOTS] = 0
    row[prm[O_CREDIT]: prm[O_CREDIT] + NUM_KINDS] = CREDIT_ALL


@njit(cache=True)
def shuffled_order(prm, seed_lo, seed_hi, deal_row, deal_index, hand_no, out):
    """Fill ``out`` with the deck in dealing order (top = last) and return the dealer."""
    counts = deck_counts(prm)
    pos = 0
    for k in range(NUM_KINDS):
        for _ in range(counts[k]):
            out[pos] = k
            pos += 1
    key = deal_key(seed_lo, seed_hi, deal_row, deal_index, hand_no)
    n = prm[P_DECK]
    for i in range(n - 1, 0, -1):
        j = next_below(key, i, i + 1)
        out[i], out[j] = out[j], out[i]
    return next_below(key, 0, prm[P_NPLAYERS])


@njit(cache=True)
def deck_counts(prm):
    """Count of each kind in the deck (C1)."""
    counts = np.full(NUM_KINDS, 4 * prm[P_PACKS], np.int64)
    counts[JOKER] = prm[P_JOKERS]
    counts[RED_THREE] = 2 * prm[P_PACKS]
    counts[BLACK_THREE] = 2 * prm[P_PACKS]
    return counts


@njit(cache=True)
def pop_stock(row, prm):
    """Take the top stock card."""
    n = row[F_STOCK_LEN] - 1
    row[F_STOCK_LEN] = n
    return row[prm[O_STOCK] + n]


@njit(cache=True)
def push_pile(row, prm, card):
    """Put a card on top of the discard pile."""
    row[prm[O_PILE] + row[F_PILE_LEN]] = card
    row[F_PILE_LEN] += 1


@njit(cache=True)
def clear_hand_state(row, prm):
    """Zero everything that belongs to one hand (keeps the game's scores and deal address)."""
    keep_from = prm[O_SCORE]  # cumulative scores, last hand's scores and parts are contiguous
    keep_to = prm[O_CREDIT]
    scores = row[keep_from:keep_to].copy()
    row[HEADER: prm[P_WIDTH]] = 0
    row[keep_from:keep_to] = scores
    for f in (F_PHASE, F_STEPS, F_STATUS, F_TRUNC, F_STOCK_LEN, F_PILE_LEN, F_PILE_FROZEN,
              F_TURN_VALUE, F_TURN_FLAGS, F_TURN_MELDS, F_CONCEALED, F_HAND_END):
        row[f] = 0
    row[F_WENT_OUT] = -1
    row[F_ASKER] = -1
    row[F_GAME_RESULT] = -2


@njit(cache=True)
def deal_from_order(row, prm, order, dealer):
    """Deal a hand from an explicit deck order (top = last) and dealer: C4-C6. Returns events."""
    clear_hand_state(row, prm)
    n = prm[P_NPLAYERS]
    deck = prm[P_DECK]
    counts = deck_counts(prm)
    maxk = 0
    for k in range(NUM_KINDS):
        row[prm[O_DECKCOUNT] + k] = counts[k]
        maxk = max(maxk, counts[k])
    row[F_MAX_KIND] = maxk
    row[prm[O_STOCK]: prm[O_STOCK] + deck] = order[:deck]
    row[F_STOCK_LEN] = deck
    row[F_DEALER] = dealer
    for _ in range(prm[P_HAND_SIZE]):
        for j in range(n):
            p = (dealer + 1 + j) % n
            row[hand_at(prm, p) + pop_stock(row, prm)] += 1
    for _ in range(prm[P_RES_SIZE]):  # the kitty or foot, face down (R1, P1)
        for j in range(n):
            p = (dealer + 1 + j) % n
            row[reserve_at(prm, p) + pop_stock(row, prm)] += 1
    for p in range(n):
        row[prm[O_RESSTATE] + p] = RES_DOWN if prm[P_RES_SIZE] > 0 else RES_IN_HAND
    for j in range(n):
        p = (dealer + 1 + j) % n
        while row[hand_at(prm, p) + RED_THREE] > 0:
            row[hand_at(prm, p) + RED_THREE] -= 1
            row[prm[O_RED3] + p] += 1
            row[hand_at(prm, p) + pop_stock(row, prm)] += 1
    return turn_upcard(row, prm)


@njit(cache=True)
def turn_upcard(row, prm):
    """Start the discard pile (C5) and give the turn to the dealer's left."""
    events = 0
    card = pop_stock(row, prm)
    push_pile(row, prm, card)
    if prm[P_UPCARD_KEEP]:
        if card == JOKER or card == TWO or card == RED_THREE:
            row[F_PILE_FROZEN] = 1
            events |= EV_FROZEN_UPCARD
    else:
        while (card == JOKER or card == TWO or card == RED_THREE) and row[F_STOCK_LEN] > 0:
            row[F_PILE_FROZEN] = 1
            events |= EV_FROZEN_UPCARD
            card = pop_stock(row, prm)
            push_pile(row, prm, card)
    row[F_STATUS] = ST_LIVE
    start_turn(row, prm, (row[F_DEALER] + 1) % prm[P_NPLAYERS])
    return events


@njit(cache=True)
def deal_next(row, prm, order_buf, new_game):
    """Deal the row's next hand from its DealId; a new game also resets scores and picks a dealer."""
    hand_no = 0 if new_game else row[F_HAND_NO] + 1
    dealer = shuffled_order(prm, row[F_SEED_LO], row[F_SEED_HI], row[F_DEAL_ROW],
                            row[F_DEAL_INDEX], hand_no, order_buf)
    if new_game:
        row[prm[O_SCORE]: prm[O_CREDIT]] = 0
    else:
        dealer = (row[F_DEALER] + 1) % prm[P_NPLAYERS]
    events = deal_from_order(row, prm, order_buf, dealer)
    row[F_HAND_NO] = hand_no
    return events
