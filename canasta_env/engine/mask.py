"""The legal-action mask of one game row: exactly the actions the rules allow (C19a).

Open-ended meld actions are tried in place on the row and undone; capped melds (which may close a
canasta and bring the foot) and pile takes (which move many cards) are tried on a scratch copy.
Either way the question is the same: can the turn still be finished legally?
"""

from __future__ import annotations

from numba import njit

from canasta_env.engine import actions as A
from canasta_env.engine import capped
from canasta_env.engine import cards as C
from canasta_env.engine import layout as L
from canasta_env.engine.going_out import go_out_ok, last_discard_ok, turn_finishable
from canasta_env.engine.melds import (
    KEEP_DISCARD,
    KEEP_LAST,
    discard_path_ok,
    minimum_shortfall,
    owner_of,
    side_of,
    wild_room,
)
from canasta_env.engine.turn import (
    TAKE_LAYOFF,
    TAKE_NAT_JOKER,
    TAKE_NAT_TWO,
    TAKE_PAIR,
    apply_take,
    hand_size,
    meld_cards,
    place_meld,
)

EXH_LAYOFF, EXH_LEGAL = 0, 1


@njit(cache=True)
def fill_mask(row, prm, mask, scratch):
    """Write the legal actions of ``row`` into the bool vector ``mask``."""
    mask[:] = False
    if row[L.F_STATUS] != L.ST_LIVE:
        return
    phase = row[L.F_PHASE]
    if phase == L.PH_DRAW:
        _draw_phase(row, prm, mask, scratch)
    elif phase == L.PH_MELD or phase == L.PH_FINAL_MELD:
        final = phase == L.PH_FINAL_MELD  # a runtime bool: each meld solver compiles once
        if prm[L.P_CAP]:
            _capped_meld_phase(row, prm, mask, scratch, final)
        else:
            _meld_phase(row, prm, mask, scratch, final)
        if final:
            mask[A.END_HAND] = minimum_shortfall(row, prm) == 0
        elif prm[L.P_CAP]:
            _discards(row, prm, mask)
            mask[A.END_HAND] = capped.no_discard_end_ok(row, prm)
        else:
            _discards(row, prm, mask)
            _ask(row, prm, mask)
    elif phase == L.PH_ANSWER:
        partner = row[L.F_CUR]
        row[L.F_CUR] = row[L.F_ASKER]
        mask[A.ANSWER_YES] = True
        mask[A.ANSWER_NO] = (capped.discard_ok(row, prm, KEEP_DISCARD) if prm[L.P_CAP]
                             else discard_path_ok(row, prm, KEEP_DISCARD))
        row[L.F_CUR] = partner


@njit(cache=True, inline="always")
def _take_shapes(row, prm, out):
    """Which of the four ways to take the pile are allowed by C20-C25, before completability."""
    out[:] = False
    n = row[L.F_PILE_LEN]
    if n == 0:
        return -1
    top = row[prm[L.O_PILE] + n - 1]
    if top == C.JOKER or top == C.TWO or top == C.RED_THREE or top == C.BLACK_THREE:  # C21
        return -1
    p = row[L.F_CUR]
    side = side_of(prm, p)
    hand = L.hand_at(prm, p)
    if prm[L.P_FORBID_SINGLE] and n == 1 and hand_size(row, prm, p) == 1:  # C25
        return -1
    opened = row[prm[L.O_OPENED] + side] == 1
    if prm[L.P_PILE_REQ_OPEN] and not opened:  # C23 option
        return -1
    frozen = row[L.F_PILE_FROZEN] == 1 or not opened  # C20
    slot = top - C.FOUR
    m = L.slot_of(owner_of(prm, p), slot)
    has_meld = row[prm[L.O_MNAT] + m] > 0
    held = row[hand + top]
    out[TAKE_PAIR] = held >= 2
    if prm[L.P_CAP] and row[prm[L.O_MNAT] + m] + row[prm[L.O_MJOK] + m] + row[prm[L.O_MTWO] + m] + 3 > \
            prm[L.P_CAP]:
        out[TAKE_PAIR] = False  # would push the open meld past seven (R2)
    with_wild = prm[L.P_TAKE_WILD] and not (prm[L.P_CAP] and top == C.SEVEN)  # R6; sevens unmixed (R2)
    if with_wild and not frozen and not has_meld and held >= 1 and wild_room(prm, 2, 0) >= 1:
        out[TAKE_NAT_JOKER] = row[hand + C.JOKER] >= 1
        out[TAKE_NAT_TWO] = row[hand + C.TWO] >= 1
    out[TAKE_LAYOFF] = not frozen and has_meld
    return top


@njit(cache=True, inline="always")
def _draw_phase(row, prm, mask, scratch):
    """Draw, take the pile in one of its shapes, or (empty stock) end the hand (C26, C31b)."""
    width = prm[L.P_WIDTH]
    stock_empty = row[L.F_STOCK_LEN] == 0
    mask[A.DRAW_STOCK] = not stock_empty
    shapes = scratch[width: width + 4]
    _take_shapes(row, prm, shapes)
    any_take = False
    for how in range(4):
        if shapes[how]:
            work = scratch[:width]
            L.copy_row(row, work, width)
            apply_take(work, prm, how)
            if turn_finishable(work, prm):
                mask[A.TAKE_PILE_PAIR + how] = True
                any_take = True
    if stock_empty:
        forced = (prm[L.P_EXH] == EXH_LAYOFF and mask[A.TAKE_PILE_LAYOFF]) or (
            prm[L.P_EXH] == EXH_LEGAL and any_take)
        mask[A.END_HAND] = not forced


@njit(cache=True)
def _try_capped(row, prm, mask, scratch, action, final):
    """Legal iff the turn can still be finished after the meld (C19a). A capped meld may close a
    canasta and bring the foot (P3), so it is tried on a scratch copy of the row."""
    width = prm[L.P_WIDTH]
    work = scratch[:width]
    L.copy_row(row, work, width)
    place_meld(work, prm, action)
    if not final and capped.only_sevens_left(work, prm):  # R5, P4: never meld down to sevens
        return
    if final:
        ok = capped.discard_ok(work, prm, KEEP_LAST)
    elif hand_size(work, prm, work[L.F_CUR]) == 0:
        ok = go_out_ok(work, prm)
    else:
        ok = turn_finishable(work, prm)
    if ok:
        mask[action] = True


@njit(cache=True, inline="always")
def _mover_melds(row, prm):
    """The mover, the offset of their hand, and the offsets of their side's melds (naturals,
    jokers, twos per rank slot)."""
    p = row[L.F_CUR]
    owner = owner_of(prm, p)
    return p, L.hand_at(prm, p), L.naturals_at(prm, owner), L.jokers_at(prm, owner), L.twos_at(prm, owner)


@njit(cache=True, inline="always")
def _minimum_settled(row, mnat):
    """No meld this turn can fail for the minimum or a pending question: the minimum is met or
    not asked, no yes/no answer is awaited, and no black-three meld is on the table."""
    return ((not row[L.F_NEEDS_MIN] or row[L.F_TURN_VALUE] >= row[L.F_MINIMUM])
            and not row[L.F_TURN_FLAGS] & L.TF_YES and row[mnat + C.BLACK_THREE_SLOT] == 0)


@njit(cache=True)
def _try_meld(row, prm, mask, action, final):
    """Legal iff, after placing the cards, the turn can still be finished (C19a). The few fields
    a meld action touches are saved as scalars and restored (no allocation in the hot path)."""
    p = row[L.F_CUR]
    owner = owner_of(prm, p)
    slot, _, _, _ = meld_cards(action)
    kind = slot + C.FOUR if slot < C.WILD_SLOT else C.BLACK_THREE
    hand = L.hand_at(prm, p)
    known = L.known_at(prm, p)
    credit = prm[L.O_CREDIT]
    m = L.slot_of(owner, slot)
    saved_cards = (row[hand + kind], row[hand + C.JOKER], row[hand + C.TWO],
                   row[credit + kind], row[credit + C.JOKER], row[credit + C.TWO],
                   row[known + kind], row[known + C.JOKER], row[known + C.TWO])
    saved_meld = (row[prm[L.O_MNAT] + m], row[prm[L.O_MJOK] + m], row[prm[L.O_MTWO] + m],
                  row[prm[L.O_NEW] + slot], row[prm[L.O_MELDED] + p])
    saved_turn = (row[L.F_TURN_VALUE], row[L.F_TURN_FLAGS], row[L.F_TURN_MELDS])
    place_meld(row, prm, action)
    if final:
        ok = discard_path_ok(row, prm, KEEP_LAST)
    elif hand_size(row, prm, p) == 0:
        ok = go_out_ok(row, prm)
    else:
        ok = turn_finishable(row, prm)
    (row[hand + kind], row[hand + C.JOKER], row[hand + C.TWO], row[credit + kind], row[credit + C.JOKER],
     row[credit + C.TWO], row[known + kind], row[known + C.JOKER], row[known + C.TWO]) = saved_cards
    (row[prm[L.O_MNAT] + m], row[prm[L.O_MJOK] + m], row[prm[L.O_MTWO] + m], row[prm[L.O_NEW] + slot],
     row[prm[L.O_MELDED] + p]) = saved_meld
    row[L.F_TURN_VALUE], row[L.F_TURN_FLAGS], row[L.F_TURN_MELDS] = saved_turn
    if ok:
        mask[action] = True


@njit(cache=True, inline="always")
def _try(row, prm, mask, scratch, action, final, cap):
    """Legal iff the turn can still be finished after the meld (C19a). A capped meld may close a
    canasta and bring the foot (P3), so it is tried on a scratch copy of the row; an open-ended one
    touches a few fields, saved and restored in place."""
    if cap:
        _try_capped(row, prm, mask, scratch, action, final)
    else:
        _try_meld(row, prm, mask, action, final)


@njit(cache=True, inline="always")
def _consider(row, prm, mask, scratch, action, final, spare, spare_other, used, sevens, cap):
    """Try ``action`` unless it surely leaves a discard path: enough cards kept (``spare``), one
    of them discardable while sevens are blocked (``spare_other``), the minimum already met."""
    if spare >= used and spare_other >= used - sevens:
        mask[action] = True
    else:
        _try(row, prm, mask, scratch, action, final, cap)


@njit(cache=True, inline="always")
def _meld_phase(row, prm, mask, scratch, final):
    """Every meld action whose cards are in hand, that keeps its meld valid and the turn
    finishable: ranks, and black threes when going out (C11)."""
    _melds(row, prm, mask, scratch, final, False)


@njit(cache=True, inline="always")
def _capped_meld_phase(row, prm, mask, scratch, final):
    """The same under the cap (R2, P2): also sevens without wilds and wild-only melds (R3 for the
    black threes)."""
    _melds(row, prm, mask, scratch, final, True)


@njit(cache=True, inline="always")
def _melds(row, prm, mask, scratch, final, cap):
    """The body of both meld phases. Each phase passes ``cap`` as a constant, so each compiles to
    its own loop with the other's branches folded away: one branch on ``prm[P_CAP]`` here instead
    cost the classic mask 6% (and 13-15% in an earlier merge)."""
    p, hand, mnat, mjok, mtwo = _mover_melds(row, prm)
    jokers, twos = row[hand + C.JOKER], row[hand + C.TWO]
    # When the minimum is no concern, a meld that keeps two cards, one of them discardable, is legal.
    easy = _minimum_settled(row, mnat)
    total = hand_size(row, prm, p)
    spare = total - (1 if final else 2) if easy else -100
    spare_other = spare + 1  # cards beyond one discardable card
    if cap and easy and not final and capped.sevens_blocked(row, prm):
        spare_other = total - row[hand + C.SEVEN] - 1
    for s in range(C.WILD_SLOT + 1 if cap else C.NUM_RANK_SLOTS):
        wild_action, used = -1, 1  # the joker version of this slot's wild meld, if it has one
        if s == C.WILD_SLOT:
            if row[mjok + s] + row[mtwo + s] == 0:
                for j in range(4):
                    if jokers >= j and twos >= 3 - j:
                        _consider(row, prm, mask, scratch, A.MELD_WILD + j, final, spare, spare_other, 3, 0,
                                  cap)
            else:
                wild_action = A.ADD_JOKER + s
        else:
            c = row[hand + s + C.FOUR]
            n0 = row[mnat + s]
            sv = 1 if cap and s + C.FOUR == C.SEVEN else 0  # sevens used per natural (R2: no wilds)
            if n0 == 0:
                if c >= 3:
                    _consider(row, prm, mask, scratch, A.MELD_NNN + s, final, spare, spare_other, 3, 3 * sv,
                              cap)
                if c >= 2 and not sv and wild_room(prm, 2, 0) >= 1:
                    wild_action, used = A.MELD_NNJ + s, 3
            else:
                if c >= 1:
                    _consider(row, prm, mask, scratch, A.ADD_NATURAL + s, final, spare, spare_other, 1, sv,
                              cap)
                if not sv and wild_room(prm, n0, row[mjok + s] + row[mtwo + s]) >= 1:
                    wild_action = A.ADD_JOKER + s
        if wild_action >= 0:
            if jokers:
                _consider(row, prm, mask, scratch, wild_action, final, spare, spare_other, used, 0, cap)
            if twos:
                _consider(row, prm, mask, scratch, wild_action + A.TWO_FOR_JOKER, final, spare, spare_other,
                          used, 0, cap)
    if final:
        return
    b3 = row[hand + C.BLACK_THREE]
    if row[mnat + C.BLACK_THREE_SLOT] == 0 and b3 >= 3:  # C11: only in a turn that goes out
        _try(row, prm, mask, scratch, A.MELD_NNN + C.BLACK_THREE_SLOT, final, cap)
    elif row[mnat + C.BLACK_THREE_SLOT] > 0 and b3 >= 1 and row[mnat + C.BLACK_THREE_SLOT] < prm[L.P_B3_MAX]:
        _try(row, prm, mask, scratch, A.ADD_NATURAL + C.BLACK_THREE_SLOT, final, cap)


@njit(cache=True, inline="always")
def _discards(row, prm, mask):
    """A discard ends the turn (hand >= 2, the turn's melds complete, no seven while the seven rule
    holds: C19, R5/P4) or goes out (C28)."""
    p = row[L.F_CUR]
    hand = L.hand_at(prm, p)
    if hand_size(row, prm, p) >= 2:
        black_threes = row[L.naturals_at(prm, owner_of(prm, p)) + C.BLACK_THREE_SLOT]
        if row[L.F_TURN_FLAGS] & L.TF_YES or black_threes > 0 or minimum_shortfall(row, prm) > 0:
            return
        blocked = capped.sevens_blocked(row, prm)
        for k in range(C.NUM_KINDS):
            if row[hand + k] > 0 and not (blocked and k == C.SEVEN):
                mask[A.DISCARD + k] = True
        return
    for k in range(C.NUM_KINDS):
        if row[hand + k] > 0:
            mask[A.DISCARD + k] = last_discard_ok(row, prm, k)


@njit(cache=True, inline="always")
def _ask(row, prm, mask):
    """C29: ask once per turn, before melding, if going out is reachable."""
    if not (prm[L.P_ASK] and prm[L.P_PARTNERS]):
        return
    if row[L.F_TURN_FLAGS] & L.TF_ASKED or row[L.F_TURN_MELDS] > 0:
        return
    if hand_size(row, prm, row[L.F_CUR]) >= 2 and go_out_ok(row, prm):
        mask[A.ASK_PARTNER] = True
