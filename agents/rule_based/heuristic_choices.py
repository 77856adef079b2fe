"""The heuristic's kernel inputs by name and its choice functions (draw, answer, meld, discard).

``agents.rule_based.heuristic`` holds the strategy's description (its module docstring) and the
compiled ``heuristic_kernel``, which inlines the functions here. The name tuples ``KERNEL_PIECES``,
``KERNEL_PARAMS`` and ``KERNEL_CONFIG`` declare what the kernel's three plain arrays hold; the
index records made from them (``off[PIECE.melds]``, ``cfg[CFG.go_out_margin]``) read them by name,
so the order of the observation's pieces or of the config's fields cannot change play. numba's
on-disk cache entries are stamped with the sources of this whole folder (``canasta_env.engine``'s
cache locator), so an edit here recompiles the kernel of ``heuristic.py`` too.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from numba import njit

from canasta_env.engine.actions import (
    ADD_JOKER,
    ADD_NATURAL,
    ADD_TWO,
    ANSWER_NO,
    ANSWER_YES,
    DISCARD,
    DRAW_STOCK,
    END_HAND,
    MELD_NN2,
    MELD_NNJ,
    MELD_NNN,
    MELD_WILD,
    TAKE_PILE_LAYOFF,
    TAKE_PILE_NAT_JOKER,
    TAKE_PILE_NAT_TWO,
    TAKE_PILE_PAIR,
)
from canasta_env.engine.cards import CARD_VALUES, SLOT_KIND

KERNEL_PIECES = ("hand", "hand_sizes", "known", "red_threes", "melds", "opened", "pile_counts",
                 "pile_size", "pile_frozen", "stock_size", "phase", "turn")
KERNEL_PARAMS = ("go_req", "go_bonus", "nat_bonus", "mix_bonus", "red3_bonus", "per_rank", "meld_cap")
KERNEL_CONFIG = ("wild_take_pile", "threat_hand", "late_stock", "card_estimate", "b3_pile",
                 "freeze_pile", "pair_take_pile", "go_out_margin", "dump_canastas", "layoff_take_pile",
                 "keep_cards", "danger_weight", "freeze_cost", "pair_keep", "wild_free", "hold_open",
                 "open_take_discount", "wild_keep", "wild_min_meld", "hold_new", "go_out_extra", "fish",
                 "value_weight")


def _indices(name: str, fields: tuple[str, ...]) -> Any:
    """A named tuple whose field ``f`` holds the index of ``f`` in ``fields``."""
    return namedtuple(name, fields)._make(range(len(fields)))


PIECE = _indices("PieceIndex", KERNEL_PIECES)
PARAM = _indices("ParamIndex", KERNEL_PARAMS)
CFG = _indices("ConfigIndex", KERNEL_CONFIG)


@njit(cache=True, nogil=True, inline="always")
def _draw_choice(m, psize, opened, cfg):
    """Take the pile when it pays, else draw; with an empty stock a pair take, else END_HAND. An
    unopened side lowers the pair and wild thresholds by ``open_take_discount``."""
    discount = 0.0 if opened else cfg[CFG.open_take_discount]
    if m[TAKE_PILE_PAIR] and psize >= cfg[CFG.pair_take_pile] - discount:
        return TAKE_PILE_PAIR
    if m[TAKE_PILE_LAYOFF] and psize >= cfg[CFG.layoff_take_pile]:
        return TAKE_PILE_LAYOFF
    if m[TAKE_PILE_NAT_TWO] and psize >= cfg[CFG.wild_take_pile] - discount:
        return TAKE_PILE_NAT_TWO
    if m[TAKE_PILE_NAT_JOKER] and psize >= cfg[CFG.wild_take_pile] - discount:
        return TAKE_PILE_NAT_JOKER
    if m[DRAW_STOCK]:
        return DRAW_STOCK
    if m[TAKE_PILE_PAIR]:
        return TAKE_PILE_PAIR
    if m[END_HAND]:
        return END_HAND
    return -1


@njit(cache=True, nogil=True, inline="always")
def _answer_choice(m, go_out_ok):
    """The answer to a partner's "may I go out?": yes when going out is allowed."""
    if go_out_ok and m[ANSWER_YES]:
        return ANSWER_YES
    if m[ANSWER_NO]:
        return ANSWER_NO
    return -1


@njit(cache=True, nogil=True, inline="always")
def _concealed_out(row, off, prm):
    """Whether the hand alone looks able to go out this turn (every card melded but at most one
    discard, the canastas going out needs): the release of ``hold_open``. A count over ranks, not a
    search; never with the four canasta kinds (``meld_cap`` > 0)."""
    if prm[PARAM.meld_cap] > 0:
        return False
    hand = off[PIECE.hand]
    spare = row[hand] + row[hand + 1]  # wilds
    b3 = row[hand + 3]
    loose = b3 if b3 < 3 else 0  # cards no meld takes: at most one (the discard)
    room = 0  # wilds the melds can still take
    canastas = 0
    for k in range(4, 15):
        c = row[hand + k]
        if c == 1:
            loose += 1
        elif c == 2:
            spare -= 1  # two naturals and a wild
            room += 1
        elif c >= 3:
            room += min(3, c)
            if c >= 7:
                canastas += 1
    if spare < 0:
        return False
    for short in range(1, 4):  # complete canastas with the wilds left, nearest first
        for k in range(4, 15):
            if 7 - short == row[hand + k] and spare >= short:
                spare -= short
                room -= short
                canastas += 1
    loose += max(spare - room, 0)
    return loose <= 1 and canastas >= prm[PARAM.go_req]


@njit(cache=True, nogil=True, inline="always")
def _meld_choice(m, row, off, h, wilds, wild_free, keep, keep_new, wild_ok, min_meld, pairs_first,
                 wild_melds):
    """The preferred meld ("Melding" in heuristic's docstring), -1 for none: ``h`` cards in hand,
    ``wilds`` of them wild; ``keep`` cards stay in hand after any meld, ``keep_new`` after a new one;
    wilds are melded only when ``wild_ok``, onto a meld of ``min_meld`` cards or more outside the
    free-melding times; ``pairs_first`` ranks two naturals + a wild above wild additions."""
    choice = -1
    best = 0.0
    pair_score = 750.0 if pairs_first else 400.0
    for slot in range(13):
        kind = SLOT_KIND[slot]
        v = 0.0
        if kind >= 0:
            v = float(CARD_VALUES[kind])
        base = off[PIECE.melds] + slot * 3
        size = row[base] + row[base + 1] + row[base + 2]
        natural_canasta = size >= 7 and row[base + 1] + row[base + 2] == 0
        if m[ADD_NATURAL + slot] and h - 1 >= keep and 900.0 + v > best:
            best = 900.0 + v
            choice = ADD_NATURAL + slot
        if m[MELD_NNN + slot] and h - 3 >= keep_new and 800.0 + 3 * v > best:
            best = 800.0 + 3 * v
            choice = MELD_NNN + slot
        if h - 1 >= keep and wild_ok:
            for act, bonus in ((ADD_TWO, 5.0), (ADD_JOKER, 0.0)):
                if not m[act + slot]:
                    continue
                score = 0.0
                if size == 6:
                    score = 700.0
                elif size == 5 and wilds >= 2:
                    score = 650.0
                elif min_meld <= size < 7:
                    score = 600.0 + 10.0 * size
                elif natural_canasta:
                    score = 100.0 if wild_free else 0.0
                elif wild_free:
                    score = 300.0
                if score > 0 and score + bonus > best:
                    best = score + bonus
                    choice = act + slot
        if wild_free and wild_ok and h - 3 >= keep_new:
            for act, bonus in ((MELD_NN2, 5.0), (MELD_NNJ, 0.0)):
                if m[act + slot] and pair_score + 2 * v + bonus > best:
                    best = pair_score + 2 * v + bonus
                    choice = act + slot
    wild_meld_score = 750.0 if wild_melds else 200.0
    for j in range(4):
        if (wild_free or wild_melds) and wild_ok and h - 3 >= keep_new and m[MELD_WILD + j] \
                and wild_meld_score > best:
            best = wild_meld_score
            choice = MELD_WILD + j
    if wild_melds and wild_ok and h - 1 >= keep:  # grow the wild-only meld (its canasta pays 1000)
        for act in (ADD_JOKER, ADD_TWO):
            if m[act + 11] and 760.0 > best:
                best = 760.0
                choice = act + 11
    return choice


@njit(cache=True, nogil=True, inline="always")
def _danger(row, off, k, next_side, frozen_next, n, owners, per_rank):
    """Danger of discarding natural kind ``k`` (before the pile-size weight): what the next player
    may do with it, and the cards of its rank not seen anywhere."""
    slot = k - 4
    danger = 0.0
    if row[off[PIECE.melds] + (next_side * 13 + slot) * 3] > 0 and not frozen_next:
        danger += 80.0
    kn = row[off[PIECE.known] + k]  # the next player is the first of the known seats
    if kn >= 2:
        danger += 100.0
    elif kn == 1 and not frozen_next:
        danger += 50.0
    seen = row[off[PIECE.hand] + k] + row[off[PIECE.pile_counts] + k]
    for owner in range(owners):
        seen += row[off[PIECE.melds] + (owner * 13 + slot) * 3]
    for j in range(n - 1):
        seen += row[off[PIECE.known] + j * 15 + k]
    unseen = max(per_rank - seen, 0.0)
    danger += 4.0 * unseen
    return danger


@njit(cache=True, nogil=True, inline="always")
def _discard_choice(m, row, off, n, sides, owners, prm, cfg):
    """The cheapest legal discard ("Discarding safely" in heuristic's docstring), -1 for none."""
    psize = row[off[PIECE.pile_size]]
    frozen_all = row[off[PIECE.pile_frozen]] > 0
    next_side = 1 % sides
    next_open = row[off[PIECE.opened] + next_side] > 0
    frozen_next = frozen_all or not next_open
    w = 1.0 + psize / 6.0
    freeze = (not frozen_all) and next_open and psize >= cfg[CFG.freeze_pile]
    choice = -1
    best = 1e18
    for k in range(15):
        if not m[DISCARD + k]:
            continue
        c = row[off[PIECE.hand] + k]
        if k == 0:
            cost = cfg[CFG.freeze_cost] + 20.0 if freeze else 400.0
        elif k == 1:
            cost = cfg[CFG.freeze_cost] if freeze else 300.0
        elif k == 3:
            cost = 0.0 if psize >= cfg[CFG.b3_pile] else 25.0
        else:
            v = cfg[CFG.value_weight] * float(CARD_VALUES[k])
            if c >= 3:
                cost = 90.0 + v - cfg[CFG.fish]
            elif c == 2:
                cost = cfg[CFG.pair_keep] + v
            else:
                cost = v
            if row[off[PIECE.melds] + (k - 4) * 3] > 0:
                cost += 30.0
            danger = _danger(row, off, k, next_side, frozen_next, n, owners, prm[PARAM.per_rank])
            cost += w * cfg[CFG.danger_weight] * danger
        if cost < best:
            best = cost
            choice = DISCARD + k
    return choice


@njit(cache=True, nogil=True, inline="always")
def _fallback_choice(m):
    """Any meld, naturals first, then END_HAND (when no meld is preferred and no discard is legal:
    opening under way, or only going-out moves left); -1 for none."""
    choice = -1
    best = -1.0
    for slot in range(13):
        for act, score in ((ADD_NATURAL, 6.0), (MELD_NNN, 5.0), (ADD_TWO, 4.0),
                           (MELD_NN2, 3.0), (ADD_JOKER, 2.0), (MELD_NNJ, 1.0)):
            if m[act + slot] and score > best:
                best = score
                choice = act + slot
    for j in range(4):
        if m[MELD_WILD + j] and 0.5 > best:
            best = 0.5
            choice = MELD_WILD + j
    if choice < 0 and m[END_HAND]:
        choice = END_HAND
    return choice
