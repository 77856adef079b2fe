"""Meld rules and turn completability (C13-C19a, C28, C30), as numba functions over one game row.

The mask asks one question of every candidate action: can the turn still be finished legally from
the state the action leaves (C19a)? A turn finishes either with a discard, keeping at least one card
and reaching the minimum if the side has not opened (``discard_path_ok``), or by going out
(``going_out.py``, around ``meld_everything``). Both are answered exactly and without search:

* Every meld on the table is valid after every action (see ``actions.py``), so only the minimum,
  the cards left in hand and the canastas needed to go out remain open questions.
* The best card value still meldable while keeping ``keep`` cards is found greedily (all naturals
  of meldable ranks, pairs activated by wilds in order of value, wilds into free places, the most
  valuable first) and, when that leaves fewer than ``keep`` cards, by holding back one card of each
  kind in turn (at most two levels deep).
* Going out fixes where every natural goes; only the optional discard and the wilds are free, and
  the most canastas are made by filling the melds closest to seven first.

Cards count toward the minimum only while ``credit`` (the hand before a pile take, C17) lasts.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from canasta_env.engine import cards as C
from canasta_env.engine import layout as L

NEG = -(1 << 30)
# cards kept before a discard, or before the no-discard end of C31a (``keep`` of the solvers):
# numpy ints, so that each solver compiles once for both rather than once per literal
KEEP_DISCARD, KEEP_LAST = np.int64(2), np.int64(1)


@njit(cache=True, inline="always")
def wild_room(prm: np.ndarray, naturals: int, wilds: int) -> int:
    """How many more wilds a meld of ``naturals`` naturals and ``wilds`` wilds may take (C13)."""
    limit = prm[L.P_MAX_WILD]
    if prm[L.P_WLE] and naturals < limit:
        limit = naturals
    return max(0, limit - wilds)


@njit(cache=True, inline="always")
def side_of(prm: np.ndarray, player: int) -> int:
    """Side of a player: partners sit opposite (C4), so it is the seat modulo the side count."""
    return player % prm[L.P_NSIDES]


@njit(cache=True, inline="always")
def owner_of(prm: np.ndarray, player: int) -> int:
    """Whose melds a player plays to: the side's (C14), or the player's own (G2). Owners are seats
    modulo the owner count, like sides."""
    return player % prm[L.P_NOWNERS]


@njit(cache=True)
def _best_pairs(row, mnat, h, credit, count):
    """Credited value of the ``count`` most valuable pairs (ranks with exactly two naturals in
    hand and no meld); selection without allocating."""
    total = 0
    taken = 0  # bit set of slots already chosen
    for _ in range(count):
        best, best_slot = -1, -1
        for s in range(C.NUM_RANK_SLOTS):
            k = s + C.FOUR
            if h[k] == 2 and row[mnat + s] == 0 and not (taken >> s) & 1:
                v = min(2, credit[k]) * C.CARD_VALUES[k]
                if v > best:
                    best, best_slot = v, s
        taken |= 1 << best_slot
        total += best
    return total


@njit(cache=True)
def _free_value(row, prm, owner, h, credit):
    """Best credited value meldable from ``h`` with no cards kept, and the cards left over."""
    mnat, mjok, mtwo = L.naturals_at(prm, owner), L.jokers_at(prm, owner), L.twos_at(prm, owner)
    value = 0
    melded = 0
    places = 0
    npairs = 0
    pairs_value = 0
    for s in range(C.NUM_RANK_SLOTS):
        k = s + C.FOUR
        c = h[k]
        cv = min(c, credit[k]) * C.CARD_VALUES[k]
        n0 = row[mnat + s]
        if n0 > 0:
            value += cv
            melded += c
            places += wild_room(prm, n0 + c, row[mjok + s] + row[mtwo + s])
        elif c >= 3:
            value += cv
            melded += c
            places += wild_room(prm, c, 0)
        elif c == 2:
            npairs += 1
            pairs_value += cv
    wilds = h[C.JOKER] + h[C.TWO]
    active = min(npairs, wilds)
    if active == npairs:
        value += pairs_value
    else:
        value += _best_pairs(row, mnat, h, credit, active)
    melded += 2 * active
    placed = min(wilds, active * (1 + wild_room(prm, 2, 1)) + places)
    cj = min(h[C.JOKER], credit[C.JOKER])
    ct = min(h[C.TWO], credit[C.TWO])
    t = min(placed, cj)
    value += t * C.CARD_VALUES[C.JOKER]
    t2 = min(placed - t, ct)
    value += t2 * C.CARD_VALUES[C.TWO]
    melded += placed
    total = 0
    for k in range(C.NUM_KINDS):
        total += h[k]
    return value, total - melded


@njit(cache=True)
def _held_back(row, prm, owner, h, credit, k):
    """Best free value with one card of kind ``k`` held back (an uncredited copy if any)."""
    h[k] -= 1
    old = credit[k]
    credit[k] = min(old, h[k])
    value, left = _free_value(row, prm, owner, h, credit)
    h[k] += 1
    credit[k] = old
    return value, left


@njit(cache=True)
def max_meld_value(row, prm, owner, h, credit, keep):
    """Best credited value still meldable from hand ``h`` keeping at least ``keep`` (<= 2) cards.

    Returns ``NEG`` if no such melding exists. ``h`` and ``credit`` are restored. (No recursion:
    numba's cache cannot reload recursive functions.)
    """
    value, left = _free_value(row, prm, owner, h, credit)
    if left >= keep:
        return value
    best = NEG
    for k in range(C.NUM_KINDS):
        if h[k] == 0:
            continue
        v, left1 = _held_back(row, prm, owner, h, credit, k)
        if left1 + 1 >= keep:
            best = max(best, v)
            continue
        h[k] -= 1
        old = credit[k]
        credit[k] = min(old, h[k])
        for k2 in range(C.NUM_KINDS):
            if h[k2] > 0:
                v2, _ = _held_back(row, prm, owner, h, credit, k2)
                best = max(best, v2)
        h[k] += 1
        credit[k] = old
    return best


@njit(cache=True, inline="always")
def _all_in(row, mnat, mjok, mtwo, h, s):
    """(naturals, wilds) of slot s's meld once every natural of its rank in hand joins it;
    (-1, 0) if those naturals cannot form a meld by themselves (fewer than three, no meld)."""
    c = h[s + C.FOUR]
    n0 = row[mnat + s]
    if n0 > 0:
        return n0 + c, row[mjok + s] + row[mtwo + s]
    if c >= 3 or c == 0:
        return c, 0
    return -1, 0


@njit(cache=True)
def _fill_canastas(row, prm, mnat, mjok, mtwo, h, need, free):
    """Whether ``free`` spare wilds can complete ``need`` more canastas once every natural in hand
    is melded: fill the melds closest to seven first."""
    for d in range(1, C.CANASTA_SIZE):
        for s in range(C.NUM_RANK_SLOTS):
            n, w = _all_in(row, mnat, mjok, mtwo, h, s)
            if n > 0 and n + w == C.CANASTA_SIZE - d and d <= wild_room(prm, n, w) and free >= d:
                free -= d
                need -= 1
                if need == 0:
                    return True
    return False


@njit(cache=True, inline="always")
def meld_everything(row, prm, owner, h, credit, need_value):
    """Whether every card of ``h`` can join valid melds with enough canastas to go out (C28)."""
    mnat, mjok, mtwo = L.naturals_at(prm, owner), L.jokers_at(prm, owner), L.twos_at(prm, owner)
    pairs = 0
    places = 0
    canastas = 0
    for s in range(C.NUM_RANK_SLOTS):
        n, w = _all_in(row, mnat, mjok, mtwo, h, s)
        if n == 0:
            continue
        if n < 0:
            if h[s + C.FOUR] == 1:
                return False
            pairs += 1  # two naturals: a wild must join them
            places += wild_room(prm, 2, 1)
            continue
        room = wild_room(prm, n, w)
        places += room
        if n + w >= C.CANASTA_SIZE:
            canastas += 1
    b3 = h[C.BLACK_THREE]
    if b3 > 0 and not 3 <= row[mnat + C.BLACK_THREE_SLOT] + b3 <= prm[L.P_B3_MAX]:
        return False
    wilds = h[C.JOKER] + h[C.TWO]
    if pairs > wilds:
        return False
    free = wilds - pairs
    if free > places:
        return False
    need = prm[L.P_GO_REQ] - canastas
    if need > 0 and not _fill_canastas(row, prm, mnat, mjok, mtwo, h, need, free):
        return False
    return need_value <= 0 or credited_value(h, credit) >= need_value


@njit(cache=True)
def credited_value(h, credit):
    """Point value of the cards of ``h`` whose melding counts toward the initial-meld minimum: at
    most ``credit[k]`` cards of kind k (the row's credit block, C17)."""
    v = 0
    for k in range(C.NUM_KINDS):
        v += min(h[k], credit[k]) * C.CARD_VALUES[k]
    return v


@njit(cache=True)
def go_out_value_needed(row, prm):
    """Minimum still to reach when going out: none for an unopened side that drew and goes out
    concealed, unless ``concealed_requires_minimum`` (C30); a pile take always needs it (C23)."""
    if row[L.F_NEEDS_MIN] and ((row[L.F_TURN_FLAGS] & L.TF_TOOK) or prm[L.P_CONC_MIN]):
        return row[L.F_MINIMUM] - row[L.F_TURN_VALUE]
    return 0


@njit(cache=True)
def owner_has_meld(row, prm, owner):
    """Whether ``owner`` has any meld on the table, open or closed (R2)."""
    mnat = L.naturals_at(prm, owner)
    closed = L.closed_at(prm, owner)
    for s in range(C.NUM_SLOTS):
        if row[mnat + s] > 0 or row[closed + s] > 0:
            return True
    wild = L.slot_of(owner, C.WILD_SLOT)  # a wild-only meld holds no naturals
    return row[prm[L.O_MJOK] + wild] + row[prm[L.O_MTWO] + wild] > 0


@njit(cache=True)
def minimum_shortfall(row, prm):
    """Value still needed this turn for the minimum (C16), or 0 if none is needed."""
    if not row[L.F_NEEDS_MIN]:
        return 0
    if not owner_has_meld(row, prm, owner_of(prm, row[L.F_CUR])):  # an unopened side's melds are all new
        return 0
    return max(0, row[L.F_MINIMUM] - row[L.F_TURN_VALUE])


@njit(cache=True)
def discard_path_ok(row, prm, keep):
    """Whether the mover can end the turn without going out, holding ``keep`` cards before the
    discard (2 for a discard, 1 for the no-discard end of C31a)."""
    if row[L.F_TURN_FLAGS] & L.TF_YES:
        return False
    p = row[L.F_CUR]
    owner = owner_of(prm, p)
    if row[L.naturals_at(prm, owner) + C.BLACK_THREE_SLOT] > 0:
        return False
    h = row[L.hand_at(prm, p): L.hand_at(prm, p) + C.NUM_KINDS]
    total = 0
    for k in range(C.NUM_KINDS):
        total += h[k]
    if total < keep:
        return False
    short = minimum_shortfall(row, prm)
    if short == 0:
        return True
    credit = row[prm[L.O_CREDIT]: prm[L.O_CREDIT] + C.NUM_KINDS]
    return max_meld_value(row, prm, owner, h, credit, keep) >= short
