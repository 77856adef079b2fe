"""Hand scoring (C10, C15, C30, C32) and the end of a game (C33), over one game row."""

from __future__ import annotations

import numpy as np
from numba import njit

from canasta_env.engine import cards as C
from canasta_env.engine import layout as L
from canasta_env.engine.melds import side_of

RED3_NO_MELD, RED3_NO_CANASTA, RED3_PLAYER_NO_MELD, RED3_NO_SEVENS, RED3_NEVER = range(5)


@njit(cache=True, inline="always")
def meld_parts(row, prm, owner):
    """(card value of melds, canasta bonuses, number of melds, number of canastas) of one owner."""
    mnat, mjok, mtwo = L.naturals_at(prm, owner), L.jokers_at(prm, owner), L.twos_at(prm, owner)
    cards = 0
    bonus = 0
    melds = 0
    canastas = 0
    for s in range(C.NUM_SLOTS):
        n, j, t = row[mnat + s], row[mjok + s], row[mtwo + s]
        if n + j + t == 0:
            continue
        kind = max(C.SLOT_KIND[s], 0)  # the wild slot holds no naturals
        cards += n * C.CARD_VALUES[kind] + j * C.CARD_VALUES[C.JOKER] + t * C.CARD_VALUES[C.TWO]
        melds += 1
        if s < C.WILD_SLOT and n + j + t >= C.CANASTA_SIZE:
            canastas += 1
            bonus += prm[L.P_NAT_BONUS] if j + t == 0 else prm[L.P_MIX_BONUS]
    kinds = L.canasta_kinds_at(prm, owner)  # closed canastas under a meld cap (R2, P2)
    closed = (row[kinds + L.K_NATURAL] + row[kinds + L.K_MIXED] + row[kinds + L.K_WILD]
              + row[kinds + L.K_SEVENS])
    for s in range(C.BLACK_THREE_SLOT):
        k = row[L.closed_at(prm, owner) + s]
        if k:
            j, t = row[L.closed_jokers_at(prm, owner) + s], row[L.closed_twos_at(prm, owner) + s]
            cards += j * C.CARD_VALUES[C.JOKER] + t * C.CARD_VALUES[C.TWO]
            if s < C.WILD_SLOT:
                cards += (C.CANASTA_SIZE * k - j - t) * C.CARD_VALUES[s + C.FOUR]
    bonus += (row[kinds + L.K_NATURAL] * prm[L.P_NAT_BONUS] + row[kinds + L.K_MIXED] * prm[L.P_MIX_BONUS]
              + row[kinds + L.K_WILD] * prm[L.P_WILD_BONUS] + row[kinds + L.K_SEVENS] * prm[L.P_SEVENS_BONUS])
    return cards, bonus, melds + closed, canastas + closed


@njit(cache=True, inline="always")
def red_three_part(row, prm, side, melds, canastas, sevens):
    """Red-three score of a side (C10): 100 each or the all-threes bonus, minus when penalised.

    Under ``player_no_meld`` (G5) each player's red threes are judged alone: minus when that player
    made no meld; with every red three on the side, each counts its share of the all-threes bonus."""
    n = prm[L.P_NPLAYERS]
    count = 0
    unmelded = 0  # red threes of players who made no meld
    for p in range(n):
        if side_of(prm, p) == side:
            count += row[prm[L.O_RED3] + p]
            if row[prm[L.O_MELDED] + p] == 0:
                unmelded += row[prm[L.O_RED3] + p]
    if count == 0:
        return 0, False, False
    every = count == row[prm[L.O_DECKCOUNT] + C.RED_THREE] and prm[L.P_RED3_ALL] > 0
    value = prm[L.P_RED3_ALL] if every else count * prm[L.P_RED3_BONUS]
    mode = prm[L.P_RED3_NEG]
    if mode == RED3_PLAYER_NO_MELD:
        minus = value * unmelded // count
        return value - 2 * minus, every, minus > 0
    negative = ((mode == RED3_NO_MELD and melds == 0)
                or (mode == RED3_NO_CANASTA and canastas == 0)
                or (mode == RED3_NO_SEVENS and sevens == 0))
    return (-value if negative else value), every, negative


@njit(cache=True, inline="always")
def score_hand(row, prm):
    """Score the hand per side into the row (C32) and return the event bits it raised."""
    events = L.EV_HAND_END
    n = prm[L.P_NPLAYERS]
    sides = prm[L.P_NSIDES]
    for side in range(sides):
        cards = bonus = melds = canastas = sevens = 0
        for owner in range(side, prm[L.P_NOWNERS], sides):  # the side's own melds, or its players'
            c, b, m, k = meld_parts(row, prm, owner)
            cards, bonus, melds, canastas = cards + c, bonus + b, melds + m, canastas + k
            sevens += row[L.canasta_kinds_at(prm, owner) + L.K_SEVENS]
        red3, every, negative = red_three_part(row, prm, side, melds, canastas, sevens)
        if every:
            events |= L.EV_ALL_RED3
        if negative:
            events |= L.EV_RED3_NEGATIVE
        out = 0
        if row[L.F_WENT_OUT] >= 0 and side_of(prm, row[L.F_WENT_OUT]) == side:
            out = prm[L.P_CONC_BONUS] if row[L.F_CONCEALED] else prm[L.P_GO_BONUS]
        held = 0
        for p in range(n):
            if side_of(prm, p) == side:
                for k in range(C.NUM_KINDS):  # a kitty or foot not yet in hand counts too (R8, P6)
                    held += (row[L.hand_at(prm, p) + k]
                             + row[L.reserve_at(prm, p) + k]) * C.CARD_VALUES[k]
        parts = L.parts_at(prm, side)
        row[parts + L.PART_MELDS], row[parts + L.PART_CANASTAS] = cards, bonus
        row[parts + L.PART_RED_THREES] = red3
        row[parts + L.PART_GOING_OUT], row[parts + L.PART_HAND] = out, -held
        total = cards + bonus + red3 + out - held
        row[prm[L.O_HSCORE] + side] = total
        row[prm[L.O_SCORE] + side] += total
    return events


@njit(cache=True)
def hand_rewards(row, prm, out):
    """Per-seat reward in points: own side's hand score minus the best opposing side's."""
    sides = prm[L.P_NSIDES]
    for p in range(prm[L.P_NPLAYERS]):
        mine = side_of(prm, p)
        best = -(1 << 30)
        for s in range(sides):
            if s != mine:
                best = max(best, row[prm[L.O_HSCORE] + s])
        out[p] = row[prm[L.O_HSCORE] + mine] - best


@njit(cache=True)
def game_decision(row, prm):
    """After a scored hand: 1 if the episode ends, 0 if another hand is to be dealt (C33)."""
    if not prm[L.P_EPISODE_GAME]:
        return 1
    sides = prm[L.P_NSIDES]
    best = -(1 << 30)
    for s in range(sides):
        best = max(best, row[prm[L.O_SCORE] + s])
    if best >= prm[L.P_TARGET]:
        leaders = 0
        leader = -1
        for s in range(sides):
            if row[prm[L.O_SCORE] + s] == best:
                leaders += 1
                leader = s
        if leaders == 1:
            row[L.F_GAME_RESULT] = leader
            return 1
        if prm[L.P_TIE]:
            row[L.F_GAME_RESULT] = -1
            return 1
    if row[L.F_HAND_NO] + 1 >= prm[L.P_MAX_HANDS]:
        row[L.F_TRUNC] = 1
        return 1
    return 0


@njit(cache=True)
def finish_episode(row):
    """Mark the row's episode over."""
    row[L.F_STATUS] = L.ST_DONE
    row[L.F_PHASE] = L.PH_OVER


_ = (np, L.EV_GAME_END)
