"""Going out, and whether a turn can still be finished, under either meld solver (C19, C19a, C28).

Going out is one rule whatever the variant: every card but an optional (or, R8, compulsory) final
discard must be melded, never discarding a seven while the seven rule holds (R5, P4), with the
kitty or foot already in hand (R4, P3). Only the question "can this hand be melded entirely?"
differs: ``melds.py`` answers it for open-ended melds, ``capped.py`` for melds capped at seven cards
with the four canasta kinds (``P_CAP``).
"""

from __future__ import annotations

from numba import njit

from canasta_env.engine import capped, melds
from canasta_env.engine import cards as C
from canasta_env.engine import layout as L


@njit(cache=True)
def _melds_entirely(row, prm, owner, h, credit, need_value):
    """Whether ``owner`` can meld all of hand ``h``, worth ``need_value`` in credited cards."""
    if prm[L.P_CAP]:
        return capped.meld_everything(row, prm, owner, h, credit, need_value)
    return melds.meld_everything(row, prm, owner, h, credit, need_value)


@njit(cache=True, inline="always")
def _stranded(row, prm, owner, h):
    """Bit set of the kinds of ``h`` that no melding takes as the table stands, under either
    solver: a lone natural of a rank ``owner`` has no meld of (C13), black threes that make no meld
    of three up to the cap (C11). Going out must discard them, and one discard removes one kind."""
    mnat = L.naturals_at(prm, owner)
    bits = 0
    for s in range(C.NUM_RANK_SLOTS):
        if h[s + C.FOUR] == 1 and row[mnat + s] == 0:
            bits |= 1 << (s + C.FOUR)
    b3 = h[C.BLACK_THREE]
    if b3 > 0 and not 3 <= row[mnat + C.BLACK_THREE_SLOT] + b3 <= prm[L.P_B3_MAX]:
        bits |= 1 << C.BLACK_THREE
    return bits


@njit(cache=True)
def go_out_ok(row, prm):
    """Whether the mover can still go out this turn (C28, C19, R4/P3, R5/P4, R8/P6)."""
    if row[L.F_TURN_FLAGS] & L.TF_NO:
        return False
    p = row[L.F_CUR]
    if row[prm[L.O_RESSTATE] + p] != L.RES_IN_HAND:
        return False
    owner = melds.owner_of(prm, p)
    h = row[L.hand_at(prm, p): L.hand_at(prm, p) + C.NUM_KINDS]
    credit = row[prm[L.O_CREDIT]: prm[L.O_CREDIT] + C.NUM_KINDS]
    stranded = _stranded(row, prm, owner, h)
    if stranded & (stranded - 1):  # two kinds to discard
        return False
    need_value = melds.go_out_value_needed(row, prm)
    if not stranded and not prm[L.P_GO_DISCARD] and _melds_entirely(row, prm, owner, h, credit, need_value):
        return True
    discards = stranded if stranded else (1 << C.NUM_KINDS) - 1  # a stranded kind must be the discard
    for d in range(C.NUM_KINDS):
        if h[d] == 0 or not (discards >> d) & 1 or (d == C.SEVEN and prm[L.P_SEVEN_RULE] != 0):
            continue
        h[d] -= 1
        old = credit[d]
        credit[d] = min(old, h[d])
        ok = _melds_entirely(row, prm, owner, h, credit, need_value)
        h[d] += 1
        credit[d] = old
        if ok:
            return True
    return False


@njit(cache=True, inline="always")
def last_discard_ok(row, prm, d):
    """Whether the mover, holding one card, may discard kind ``d`` to go out (C28, R4/P3, R5/P4)."""
    p = row[L.F_CUR]
    if row[L.F_TURN_FLAGS] & L.TF_NO or row[prm[L.O_RESSTATE] + p] != L.RES_IN_HAND:
        return False
    if d == C.SEVEN and prm[L.P_SEVEN_RULE] != 0:
        return False
    h = row[L.hand_at(prm, p): L.hand_at(prm, p) + C.NUM_KINDS]
    credit = row[prm[L.O_CREDIT]: prm[L.O_CREDIT] + C.NUM_KINDS]
    h[d] -= 1
    ok = _melds_entirely(row, prm, melds.owner_of(prm, p), h, credit, melds.go_out_value_needed(row, prm))
    h[d] += 1
    return ok


@njit(cache=True)
def turn_finishable(row, prm):
    """C19a: whether the mover's turn can still be finished legally from this meld-phase state."""
    if prm[L.P_CAP]:
        return capped.discard_ok(row, prm, melds.KEEP_DISCARD) or go_out_ok(row, prm)
    return melds.discard_path_ok(row, prm, melds.KEEP_DISCARD) or go_out_ok(row, prm)
