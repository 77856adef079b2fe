"""Turn completability under a meld cap with the four canasta kinds (R2-R8, P2-P6, C19a).

With melds closed at seven cards, the naturals of one rank may fill the open meld, close it and
start another, and wilds may go to any rank or to wild-only melds; going out needs one canasta of
each kind. The analytic shortcuts of ``melds.py`` no longer hold, so both questions are answered by
a small exact dynamic programme over the meld slots, with the wilds used so far as state:

* ``discard_ok``: can the mover meld enough for the minimum and still end the turn by a discard
  (keeping a discardable card while sevens may not be discarded), by the C27a end, or (P3) by a
  play that completes a canasta and brings the foot?
* ``meld_all``: can the whole hand be melded so that the owner then holds every canasta kind
  (``meld_everything`` adds the minimum's value; ``going_out.py`` tries each final discard around
  it)?

``slot_outcomes`` says, for one slot, which canasta kinds adding ``a`` naturals and ``b`` wilds can
close; it is the only place that knows how a rank's cards split into capped melds.

The seven rule (R5, P4) is judged when the turn ends: a sevens canasta the mover closes this turn
lifts it when theirs was the last side without one. A meld may never leave only sevens in hand
while the rule holds (the mask checks each meld); every plan the programme accepts can be played
in an order that respects this (sevens first), so the programme need not track it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from canasta_env.engine import cards as C
from canasta_env.engine import layout as L
from canasta_env.engine.melds import KEEP_LAST, NEG, credited_value, minimum_shortfall, owner_of

NO = np.bool_(False)  # a numpy bool: best_value compiles once, not again for a literal False
ALL_FOUR_KINDS = 0b1111  # kind-mask state: natural, mixed, wild and sevens canasta closed (R8, P6)


@njit(cache=True, inline="always")
def _open_wilds(prm, naturals):
    """Most wilds an open (not yet seven-card) meld of ``naturals`` naturals may hold (C13)."""
    limit = prm[L.P_MAX_WILD]
    if prm[L.P_WLE] and naturals < limit:
        limit = naturals
    return limit


@njit(cache=True)
def slot_outcomes(prm, slot, n0, w0, a, b):
    """Bit set over kind masks (bit m: the canastas closed are exactly kinds ``m``) reachable by
    adding ``a`` naturals and ``b`` wilds to a slot whose open meld holds ``n0`` naturals and ``w0``
    wilds; 0 if no valid arrangement exists. The open meld closes first (at most one open meld of
    a rank, R2), then new melds follow, each of 2+ naturals and at most 3 wilds."""
    if a + b == 0:
        return 1
    if slot == C.WILD_SLOT:  # wild-only melds: three or more wilds, closed at seven (R2)
        t = w0 + b
        r = t % C.CANASTA_SIZE
        if r == 1 or r == 2:
            return 0
        return 1 << (1 << L.K_WILD) if t >= C.CANASTA_SIZE else 1
    n, w = n0 + a, w0 + b
    if slot == C.SEVEN_SLOT and w > 0:  # sevens are never mixed
        return 0
    t = n + w
    k = t // C.CANASTA_SIZE
    r = t - k * C.CANASTA_SIZE
    if r == 1 or r == 2:
        return 0
    if slot == C.SEVEN_SLOT:
        return 1 << (1 << L.K_SEVENS) if k >= 1 else 1
    out = 0
    u0 = min(3, C.CANASTA_SIZE - n0)  # wilds the first (existing) meld can hold once closed
    for wr in range(4):
        if r == 0 and wr > 0:
            break
        nr = r - wr
        if r > 0 and (nr < 2 or wr > _open_wilds(prm, nr)):
            continue
        wc = w - wr  # wilds in the closed melds
        if wc < 0:
            continue
        if k == 0:
            if wc == 0:
                out |= 1
            continue
        if wc < w0 or wc > u0 + 3 * (k - 1):
            continue
        if wc == 0:
            out |= 1 << (1 << L.K_NATURAL)
        if wc >= max(1, w0) + k - 1:
            out |= 1 << (1 << L.K_MIXED)
        if k >= 2 and wc >= 1 and wc <= (3 * (k - 1) if w0 == 0 else u0 + 3 * (k - 2)):
            out |= 1 << ((1 << L.K_NATURAL) | (1 << L.K_MIXED))
    return out


@njit(cache=True, inline="always")
def _spread(states, outcomes):
    """Kind-mask states reachable from ``states`` (bit set) by closing any of ``outcomes``."""
    out = 0
    for f in range(1 << L.NUM_CANASTA_KINDS):
        if (states >> f) & 1:
            for m in range(1 << L.NUM_CANASTA_KINDS):
                if (outcomes >> m) & 1:
                    out |= 1 << (f | m)
    return out


@njit(cache=True)
def owner_kinds(row, prm, owner):
    """Mask of the canasta kinds ``owner`` has closed."""
    have = 0
    for kind in range(L.NUM_CANASTA_KINDS):
        if row[L.canasta_kinds_at(prm, owner) + kind] > 0:
            have |= 1 << kind
    return have


@njit(cache=True, inline="always")
def _side_has_sevens(row, prm, side):
    """Whether a side (any of its meld owners) has closed a sevens canasta."""
    sides = prm[L.P_NSIDES]
    for owner in range(side, prm[L.P_NOWNERS], sides):
        if row[L.canasta_kinds_at(prm, owner) + L.K_SEVENS] > 0:
            return True
    return False


@njit(cache=True)
def sevens_blocked(row, prm):
    """R5, P4: no seven may be discarded until every side has a sevens canasta."""
    if prm[L.P_SEVEN_RULE] == 0:
        return False
    for side in range(prm[L.P_NSIDES]):
        if not _side_has_sevens(row, prm, side):
            return True
    return False


@njit(cache=True)
def _last_without_sevens(row, prm, player):
    """Whether the player's side is the only side without a sevens canasta (its own sevens
    canasta would then lift the seven rule, R5/P4)."""
    mine = player % prm[L.P_NSIDES]
    for side in range(prm[L.P_NSIDES]):
        if _side_has_sevens(row, prm, side) == (side == mine):
            return False
    return True


@njit(cache=True, inline="always")
def meld_all(row, prm, owner, h):
    """Whether every card of ``h`` can join valid melds so that ``owner`` then has every kind."""
    mnat, mjok, mtwo = L.naturals_at(prm, owner), L.jokers_at(prm, owner), L.twos_at(prm, owner)
    b3 = h[C.BLACK_THREE]
    if b3 > 0:
        on_table = row[mnat + C.BLACK_THREE_SLOT] + b3
        if on_table < 3 or on_table > prm[L.P_B3_MAX]:
            return False
    wilds = h[C.JOKER] + h[C.TWO]
    have = owner_kinds(row, prm, owner)
    # necessary conditions first: they settle almost every state without the programme
    wild_melded = row[mjok + C.WILD_SLOT] + row[mtwo + C.WILD_SLOT]
    if not (have >> L.K_WILD) & 1 and wild_melded + wilds < C.CANASTA_SIZE:
        return False
    if not (have >> L.K_SEVENS) & 1 and row[mnat + C.SEVEN_SLOT] + h[C.SEVEN] < C.CANASTA_SIZE:
        return False
    nat_ok = (have >> L.K_NATURAL) & 1
    mix_ok = (have >> L.K_MIXED) & 1
    for s in range(C.NUM_RANK_SLOTS):
        c = h[s + C.FOUR]
        n0 = row[mnat + s]
        if n0 == 0 and (c == 1 or (c == 2 and wilds == 0)):
            return False
        if s != C.SEVEN_SLOT:
            if n0 + c >= C.CANASTA_SIZE:
                nat_ok = 1
            if n0 + row[mjok + s] + row[mtwo + s] + c + wilds >= C.CANASTA_SIZE and n0 + c >= 2:
                mix_ok = 1
    if not (nat_ok and mix_ok):
        return False
    reach = np.zeros(wilds + 1, np.int32)
    nxt = np.zeros(wilds + 1, np.int32)
    reach[0] = 1 << have
    for s in range(C.NUM_RANK_SLOTS):
        c = h[s + C.FOUR]
        n0 = row[mnat + s]
        w0 = row[mjok + s] + row[mtwo + s]
        if c == 0 and n0 == 0:  # no meld and no naturals: nothing can go here
            continue
        nxt[:] = 0
        for w in range(wilds + 1):
            if reach[w] == 0:
                continue
            for b in range(wilds - w + 1):
                outs = slot_outcomes(prm, s, n0, w0, c, b)
                if outs:
                    nxt[w + b] |= _spread(reach[w], outs)
        reach, nxt = nxt, reach
    w0 = row[mjok + C.WILD_SLOT] + row[mtwo + C.WILD_SLOT]
    for w in range(wilds + 1):
        if reach[w] == 0:
            continue
        outs = slot_outcomes(prm, C.WILD_SLOT, 0, w0, 0, wilds - w)
        if outs and (_spread(reach[w], outs) >> ALL_FOUR_KINDS) & 1:
            return True
    return False


@njit(cache=True, inline="always")
def meld_everything(row, prm, owner, h, credit, need_value):
    """``melds.meld_everything`` under the cap: ``meld_all``, with credited cards worth
    ``need_value``."""
    return meld_all(row, prm, owner, h) and (need_value <= 0 or credited_value(h, credit) >= need_value)


@njit(cache=True)
def _wild_value(used, cj, ct):
    """Credited value of the ``used`` most valuable wilds."""
    j = min(used, cj)
    return j * C.CARD_VALUES[C.JOKER] + min(used - j, ct) * C.CARD_VALUES[C.TWO]


# ``best_value``'s state besides the wilds used: cards kept (capped at 2) x a non-seven kept x the
# canastas closed (bit 0: any, bit 1: sevens), flattened with the wilds used as ``_state`` says.
KEPT_STATES, OTHER_STATES, CLOSED_STATES = 3, 2, 4
STATES_PER_WILD = KEPT_STATES * OTHER_STATES * CLOSED_STATES


@njit(cache=True, inline="always")
def _state(w, kept, other, closed):
    return ((w * KEPT_STATES + kept) * OTHER_STATES + other) * CLOSED_STATES + closed


@njit(cache=True, inline="always")
def _unstate(i):
    """``(w, kept, other, closed)`` of a flat state index (``_state``'s inverse)."""
    closed = i % CLOSED_STATES
    i //= CLOSED_STATES
    other = i % OTHER_STATES
    i //= OTHER_STATES
    return i // KEPT_STATES, i % KEPT_STATES, other, closed


@njit(cache=True)
def best_value(row, prm, owner, h, credit, keep, need_other, foot, lift):
    """Best credited value meldable from ``h`` that keeps at least ``keep`` cards (one of them not
    a seven when ``need_other``, unless ``lift`` and the melding closes a sevens canasta: the
    mover's side was the last without one, R5/P4); with ``foot``, a melding that closes a canasta
    may keep none (the foot then arrives, P3). ``NEG`` if no melding qualifies."""
    mnat, mjok, mtwo = L.naturals_at(prm, owner), L.jokers_at(prm, owner), L.twos_at(prm, owner)
    wilds = h[C.JOKER] + h[C.TWO]
    cur = np.full((wilds + 1) * STATES_PER_WILD, NEG, np.int64)
    nxt = np.full((wilds + 1) * STATES_PER_WILD, NEG, np.int64)
    kept0 = h[C.BLACK_THREE]
    cur[_state(0, min(kept0, 2), 1 if kept0 > 0 else 0, 0)] = 0
    for s in range(C.NUM_RANK_SLOTS):
        k = s + C.FOUR
        c = h[k]
        n0 = row[mnat + s]
        w0 = row[mjok + s] + row[mtwo + s]
        if c == 0 and n0 == 0:
            continue
        nxt[:] = NEG
        for i in range(cur.size):
            v0 = cur[i]
            if v0 == NEG:
                continue
            w, kept, other, closed = _unstate(i)
            for a in range(c + 1):
                v = v0 + min(a, credit[k]) * C.CARD_VALUES[k]
                kk = min(2, kept + c - a)
                oo = other | (1 if (c - a > 0 and k != C.SEVEN) else 0)
                for b in range(wilds - w + 1):
                    if a + b > 0 and n0 + a < 2 and n0 == 0:
                        break
                    if slot_outcomes(prm, s, n0, w0, a, b) == 0:
                        continue
                    shut = a + b > 0 and n0 + w0 + a + b >= C.CANASTA_SIZE
                    cc = closed | ((3 if k == C.SEVEN else 1) if shut else 0)
                    j = _state(w + b, kk, oo, cc)
                    if v > nxt[j]:
                        nxt[j] = v
        cur, nxt = nxt, cur
    # the wild-only slot last: whatever wilds are left either join it or stay in hand
    cj = min(h[C.JOKER], credit[C.JOKER])
    ct = min(h[C.TWO], credit[C.TWO])
    w0 = row[mjok + C.WILD_SLOT] + row[mtwo + C.WILD_SLOT]
    best = NEG
    for i in range(cur.size):
        v0 = cur[i]
        if v0 == NEG:
            continue
        w, kept, other, closed = _unstate(i)
        for bw in range(wilds - w + 1):
            if slot_outcomes(prm, C.WILD_SLOT, 0, w0, 0, bw) == 0:
                continue
            left = wilds - w - bw
            kk = kept + left
            oo = other | (1 if left > 0 else 0)
            cc = closed | (1 if (bw > 0 and w0 + bw >= C.CANASTA_SIZE) else 0)
            ok = kk >= keep and (oo or not need_other or (lift and cc & 2))
            if not ok and not (foot and cc):
                continue
            v = v0 + _wild_value(w + bw, cj, ct)
            if v > best:
                best = v
    return best


@njit(cache=True)
def _only_sevens(h):
    total = 0
    for k in range(C.NUM_KINDS):
        total += h[k]
    return total > 0 and h[C.SEVEN] == total


@njit(cache=True)
def discard_ok(row, prm, keep):
    """Whether the mover can end the turn without going out, holding ``keep`` cards before the
    discard (2), or before the no-discard end of C31a (1); includes the C27a end and the P3 foot."""
    if row[L.F_TURN_FLAGS] & L.TF_YES:
        return False
    p = row[L.F_CUR]
    owner = owner_of(prm, p)
    if row[L.naturals_at(prm, owner) + C.BLACK_THREE_SLOT] > 0:  # black threes only when going out (C11, R3)
        return False
    h = row[L.hand_at(prm, p): L.hand_at(prm, p) + C.NUM_KINDS]
    credit = row[prm[L.O_CREDIT]: prm[L.O_CREDIT] + C.NUM_KINDS]
    short = minimum_shortfall(row, prm)
    blocked = keep == 2 and sevens_blocked(row, prm)
    lift = blocked and _last_without_sevens(row, prm, p)
    foot = prm[L.P_RES_PICKUP] == L.PICKUP_IMMEDIATE and row[prm[L.O_RESSTATE] + p] == L.RES_DOWN
    if short == 0:
        total = 0
        for k in range(C.NUM_KINDS):
            total += h[k]
        if total >= keep and (not blocked or total > h[C.SEVEN]):
            return True
    if best_value(row, prm, owner, h, credit, keep, blocked, foot, lift) >= short:
        return True
    if blocked and row[L.F_TURN_FLAGS] & L.TF_SEVENS_ONLY and _only_sevens(h):  # C27a
        return best_value(row, prm, owner, h, credit, KEEP_LAST, NO, foot, NO) >= short
    return False


@njit(cache=True)
def only_sevens_left(row, prm):
    """R5, P4: after a meld, the hand holds only sevens while none may be discarded, and did not
    when melding began (a meld may not leave the player so)."""
    p = row[L.F_CUR]
    h = row[L.hand_at(prm, p): L.hand_at(prm, p) + C.NUM_KINDS]
    return (_only_sevens(h) and not row[L.F_TURN_FLAGS] & L.TF_SEVENS_ONLY
            and sevens_blocked(row, prm))


@njit(cache=True)
def no_discard_end_ok(row, prm):
    """C27a: the hand held only sevens when melding began and none may be discarded."""
    p = row[L.F_CUR]
    h = row[L.hand_at(prm, p): L.hand_at(prm, p) + C.NUM_KINDS]
    return (bool(row[L.F_TURN_FLAGS] & L.TF_SEVENS_ONLY) and sevens_blocked(row, prm)
            and _only_sevens(h) and minimum_shortfall(row, prm) == 0)
