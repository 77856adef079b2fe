"""Hand scoring (C10, C15, C30, C32) and the end of a game (C33), over one game row."""

from __future__ import annotations

import numpy as np
from numba import njit

from canasta_env.engine.cards import (
    BLACK_THREE_SLOT,
    CANASTA_SIZE,
    CARD_VALUES,
    FOUR,
    JOKER,
    NUM_KINDS,
    NUM_SLOTS,
    RED_THREE,
    SLOT_KIND,
    TWO,
    WILD_SLOT,
)
from canasta_env.engine.layout import (
    EV_ALL_RED3,
    EV_GAME_END,
    EV_HAND_END,
    EV_RED3_NEGATIVE,
    F_CONCEALED,
    F_GAME_RESULT,
    F_HAND_NO,
    F_PHASE,
    F_STATUS,
    F_TRUNC,
    F_WENT_OUT,
    K_MIXED,
    K_NATURAL,
    K_SEVENS,
    K_WILD,
    O_DECKCOUNT,
    O_HSCORE,
    O_MELDED,
    O_RED3,
    O_SCORE,
    P_CONC_BONUS,
    P_EPISODE_GAME,
    P_GO_BONUS,
    P_MAX_HANDS,
    P_MIX_BONUS,
    P_NAT_BONUS,
    P_NOWNERS,
    P_NPLAYERS,
    P_NSIDES,
    P_RED3_ALL,
    P_RED3_BONUS,
    P_RED3_NEG,
    P_SEVENS_BONUS,
    P_TARGET,
    P_TIE,
    P_WILD_BONUS,
    PART_CANASTAS,
    PART_GOING_OUT,
    PART_HAND,
    PART_MELDS,
    PART_RED_THREES,
    PH_OVER,
    ST_DONE,
    canasta_kinds_at,
    closed_at,
    closed_jokers_at,
    closed_twos_at,
    hand_at,
    jokers_at,
    naturals_at,
    parts_at,
    reserve_at,
    twos_at,
)
from canasta_env.engine.melds import side_of

RED3_NO_MELD, RED3_NO_CANASTA, RED3_PLAYER_NO_MELD, RED3_NO_SEVENS, RED3_NEVER = range(5)


@njit(cache=True)
def meld_parts(row, prm, owner):
    """(card value of melds, canasta bonuses, number of melds, number of canastas) of one owner."""
    mnat, mjok, mtwo = naturals_at(prm, owner), jokers_at(prm, owner), twos_at(prm, owner)
    cards = 0
    bonus = 0
    melds = 0
    canastas = 0
    for s in range(NUM_SLOTS):
        n, j, t = row[mnat + s], row[mjok + s], row[mtwo + s]
        if n + j + t == 0:
            continue
        kind = max(SLOT_KIND[s], 0)  # the wild slot holds no naturals
        cards += n * CARD_VALUES[kind] + j * CARD_VALUES[JOKER] + t * CARD_VALUES[TWO]
        melds += 1
        if s < WILD_SLOT and n + j + t >= CANASTA_SIZE:
            canastas += 1
            bonus += prm[P_NAT_BONUS] if j + t == 0 else prm[P_MIX_BONUS]
    kinds = canasta_kinds_at(prm, owner)  # closed canastas under a meld cap (R2, P2)
    closed = row[kinds + K_NATURAL] + row[kinds + K_MIXED] + row[kinds + K_WILD] + row[kinds + K_SEVENS]
    for s in range(BLACK_THREE_SLOT):
        k = row[closed_at(prm, owner) + s]
        if k:
            j, t = row[closed_jokers_at(prm, owner) + s], row[closed_twos_at(prm, owner) + s]
            cards += j * CARD_VALUES[JOKER] + t * CARD_VALUES[TWO]
            if s < WILD_SLOT:
                cards += (CANASTA_SIZE * k - j - t) * CARD_VALUES[s + FOUR]
    bonus += (row[kinds + K_NATURAL] * prm[P_NAT_BONUS] + row[kinds + K_MIXED] * prm[P_MIX_BONUS]
              + row[kinds + K_WILD] * prm[P_WILD_BONUS] + row[kinds + K_SEVENS] * prm[P_SEVENS_BONUS])
    return cards, bonus, melds + closed, canastas + closed


@njit(cache=True)
def red_three_part(row, prm, side, melds, canastas, sevens):
    """Red-three score of a side (C10): 100 each or the all-threes bonus, minus when penalised.

    Under ``player_no_meld`` (G5) each player's red threes are judged alone: minus when that player
    made no meld; with every red three on the side, each counts its share of the all-threes bonus."""
    n = prm[P_NPLAYERS]
    count = 0
    unmelded = 0  # red threes of players who made no meld
    for p in range(n):
        if side_of(prm, p) == side:
            count += row[prm[O_RED3] + p]
            if row[prm[O_MELDED] + p] == 0:
                unmelded += row[prm[O_RED3] + p]
    if count == 0:
        return 0, False, False
    every = count == row[prm[O_DECKCOUNT] + RED_THREE] and prm[P_RED3_ALL] > 0
    value = prm[P_RED3_ALL] if every else count * prm[P_RED3_BONUS]
    mode = prm[P_RED3_NEG]
    if mode == RED3_PLAYER_NO_MELD:
        minus = value * unmelded // count
        return value - 2 * minus, every, minus > 0
    negative = ((mode == RED3_NO_MELD and melds == 0)
                or (mode == RED3_NO_CANASTA and canastas == 0)
                or (mode == RED3_NO_SEVENS and sevens == 0))
    return (-value if negative else value), every, negative


@njit(cache=True)
def score_hand(row, prm):
    """Score the hand per side into the row (C32) and return the event bits it raised."""
    events = EV_HAND_END
    n = prm[P_NPLAYERS]
    sides = prm[P_NSIDES]
    for side in range(sides):
        cards = bonus = melds = canastas = sevens = 0
        for owner in range(side, prm[P_NOWNERS], sides):  # the side's own melds, or its players'
            c, b, m, k = meld_parts(row, prm, owner)
            cards, bonus, melds, canastas = cards + c, bonus + b, melds + m, canastas + k
            sevens += row[canasta_kinds_at(prm, owner) + K_SEVENS]
        red3, every, negative = red_three_part(row, prm, side, melds, canastas, sevens)
        if every:
            events |= EV_ALL_RED3
        if negative:
            events |= EV_RED3_NEGATIVE
        out = 0
        if row[F_WENT_OUT] >= 0 and side_of(prm, row[F_WENT_OUT]) == side:
            out = prm[P_CONC_BONUS] if row[F_CONCEALED] else prm[P_GO_BONUS]
        held = 0
        for p in range(n):
            if side_of(prm, p) == side:
                for k in range(NUM_KINDS):  # a kitty or foot not yet in hand counts too (R8, P6)
                    held += (row[hand_at(prm, p) + k]
                             + row[reserve_at(prm, p) + k]) * CARD_VALUES[k]
        parts = parts_at(prm, side)
        row[parts + PART_MELDS], row[parts + PART_CANASTAS], row[parts + PART_RED_THREES] = cards, bonus, red3
        row[parts + PART_GOING_OUT], row[parts + PART_HAND] = out, -held
        total = cards + bonus + red3 + out - held
        row[prm[O_HSCORE] + side] = total
        row[prm[O_SCORE] + side] += total
    return events


@njit(cache=True)
def hand_rewards(row, prm, out):
    """Per-seat reward in points: own side's hand score minus the best opposing side's."""
    sides = prm[P_NSIDES]
    for p in range(prm[P_NPLAYERS]):
        mine = side_of(prm, p)
        best = -(1 << 30)
        for s in range(sides):
            if s != mine:
                best = max(best, row[prm[O_HSCORE] + s])
        out[p] = row[prm[O_HSCORE] + mine] - best


@njit(cache=True)
def game_decision(row, prm):
    """After a scored hand: 1 if the episode ends, 0 if another hand is to be dealt (C33)."""
    if not prm[P_EPISODE_GAME]:
        return 1
    sides = prm[P_NSIDES]
    best = -(1 << 30)
    for s in range(sides):
        best = max(best, row[prm[O_SCORE] + s])
    if best >= prm[P_TARGET]:
        leaders = 0
        leader = -1
        for s in range(sides):
            if row[prm[O_SCORE] + s] == best:
                leaders += 1
                leader = s
        if leaders == 1:
            row[F_GAME_RESULT] = leader
            return 1
        if prm[P_TIE]:
            row[F_GAME_RESULT] = -1
            return 1
    if row[F_HAND_NO] + 1 >= prm[P_MAX_HANDS]:
        row[F_TRUNC] = 1
        return 1
    return 0


@njit(cache=True)
def finish_episode(row):
    """Mark the row's episode over."""
    row[F_STATUS] = ST_DONE
    row[F_PHASE] = PH_OVER


_ = (np, EV_GAME_END)
