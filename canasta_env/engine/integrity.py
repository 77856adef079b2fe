"""State integrity: whether the kernels may safely run on game rows edited from Python.

The kernels index rows without bounds checks (numba), so a field edited through a ``State`` view
(``state.stock_size[:] = 10**6``, a card kind of 99 in the pile, a player of -5) would make them read
or write outside the state. ``find_corrupt`` checks, before the public API runs a kernel, every
field a kernel uses as an index or a loop bound: the seats (mover, dealer, asker), the phase, the
stock and pile lengths and the card kinds they hold, every card count (hands, reserves, red threes,
open and closed melds), and card conservation (each kind adds up to the deck's count, which bounds
every count and keeps the pile within its block). With ``actions`` it also checks that an action the
mask allows can be played from the row (its cards are in hand, the pile has a natural on top, an
answer has an asker): a stale or edited mask could otherwise apply an impossible action and leave
a row that the same kernel call then indexes. One pass over the rows, no allocation per row.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from canasta_env.engine import actions as A
from canasta_env.engine import cards as C
from canasta_env.engine import layout as L
from canasta_env.engine.borrow import borrowed
from canasta_env.engine.deal import deck_counts
from canasta_env.engine.turn import meld_cards

# what ``find_corrupt`` found wrong: report[0] (names for messages in FIELDS)
(BAD_PARAMS, BAD_CUR, BAD_PHASE, BAD_DEALER, BAD_ASKER, BAD_STOCK_SIZE, BAD_PILE_SIZE, BAD_STOCK,
 BAD_PILE, BAD_HANDS, BAD_RESERVES, BAD_RED3, BAD_MNAT, BAD_MJOK, BAD_MTWO, BAD_CLOSED, BAD_CJOK,
 BAD_CTWO, BAD_CLOSED_CARDS, BAD_CARDS, BAD_STATUS, BAD_TURN_FLAGS, BAD_NEEDS_MIN, BAD_OPENED,
 BAD_ACTION) = range(25)  # BAD_ACTION last: legality.py numbers its codes after it
FIELDS = ("params", "current_player", "phase", "dealer", "asker", "stock_size", "pile_size",
          "stock", "pile", "hands", "reserves", "red_threes", "meld_naturals", "meld_jokers",
          "meld_twos", "closed_slots", "closed_jokers", "closed_twos", "closed canastas",
          "cards", "status", "turn_flags", "needs_minimum", "opened", "legal_action_mask")
ALL_TURN_FLAGS = 2 * L.TF_NEW_CANASTA - 1  # every TF_* bit
REPORT_SIZE = 6  # code, index i, index j (-1: none), value, low, high


@njit(cache=True, inline="always")
def _bad(report, code, i, j, value, low, high):
    """Fill ``report`` and return False (the row is corrupt, or breaks a rule: ``legality``)."""
    report[0], report[1], report[2] = code, i, j
    report[3], report[4], report[5] = value, low, high
    return False


@njit(cache=True)
def _header_ok(row, prm, report):
    """Seats, phase and the stock and pile lengths are in range."""
    n, deck = prm[L.P_NPLAYERS], prm[L.P_DECK]
    if not 0 <= row[L.F_CUR] < n:
        return _bad(report, BAD_CUR, -1, -1, row[L.F_CUR], 0, n - 1)
    if not 0 <= row[L.F_PHASE] <= L.PH_OVER:
        return _bad(report, BAD_PHASE, -1, -1, row[L.F_PHASE], 0, L.PH_OVER)
    if not 0 <= row[L.F_DEALER] < n:
        return _bad(report, BAD_DEALER, -1, -1, row[L.F_DEALER], 0, n - 1)
    low = 0 if row[L.F_PHASE] == L.PH_ANSWER else -1  # the asker answers to: a seat while asked
    if not low <= row[L.F_ASKER] < n:
        return _bad(report, BAD_ASKER, -1, -1, row[L.F_ASKER], low, n - 1)
    if not 0 <= row[L.F_STOCK_LEN] <= deck:
        return _bad(report, BAD_STOCK_SIZE, -1, -1, row[L.F_STOCK_LEN], 0, deck)
    if not 0 <= row[L.F_PILE_LEN] <= deck:
        return _bad(report, BAD_PILE_SIZE, -1, -1, row[L.F_PILE_LEN], 0, deck)
    # flags the legality of every move reads: a value no play reaches leaves a row with none
    if not L.ST_LIVE <= row[L.F_STATUS] <= L.ST_DONE:
        return _bad(report, BAD_STATUS, -1, -1, row[L.F_STATUS], L.ST_LIVE, L.ST_DONE)
    if not 0 <= row[L.F_TURN_FLAGS] <= ALL_TURN_FLAGS:
        return _bad(report, BAD_TURN_FLAGS, -1, -1, row[L.F_TURN_FLAGS], 0, ALL_TURN_FLAGS)
    if not 0 <= row[L.F_NEEDS_MIN] <= 1:
        return _bad(report, BAD_NEEDS_MIN, -1, -1, row[L.F_NEEDS_MIN], 0, 1)
    for side in range(prm[L.P_NSIDES]):
        if not 0 <= row[prm[L.O_OPENED] + side] <= 1:
            return _bad(report, BAD_OPENED, side, -1, row[prm[L.O_OPENED] + side], 0, 1)
    return True


@njit(cache=True)
def _cards_ok(row, start, length, code, counts, report):
    """The ``length`` card kinds from ``start`` (stock or pile) are kinds; count them."""
    for i in range(length):
        c = row[start + i]
        if not 0 <= c < C.NUM_KINDS:
            return _bad(report, code, i, -1, c, 0, C.NUM_KINDS - 1)
        counts[c] += 1
    return True


@njit(cache=True)
def _block_ok(row, start, rows, cols, code, high, report):
    """Every count of a ``rows x cols`` block is in ``[0, high]`` (a branch-free pass, then a
    search for the first bad count only when there is one)."""
    block = row[start: start + rows * cols]
    bad = False
    for v in block:
        bad |= (v < 0) | (v > high)
    if not bad:
        return True
    for i in range(block.shape[0]):
        if not 0 <= block[i] <= high:
            return _bad(report, code, i // cols, i % cols if cols > 1 else -1, block[i], 0, high)
    return True


# the count blocks ``_counts_ok`` checks: (offset key, one row per owner (else per player), columns,
# report code), read at run time so that ``_block_ok`` compiles once
_COUNT_BLOCKS = np.array([
    (L.O_HANDS, 0, C.NUM_KINDS, BAD_HANDS), (L.O_RESERVE, 0, C.NUM_KINDS, BAD_RESERVES),
    (L.O_RED3, 0, 1, BAD_RED3), (L.O_MNAT, 1, C.NUM_SLOTS, BAD_MNAT), (L.O_MJOK, 1, C.NUM_SLOTS, BAD_MJOK),
    (L.O_MTWO, 1, C.NUM_SLOTS, BAD_MTWO), (L.O_CLOSED, 1, C.NUM_SLOTS, BAD_CLOSED),
    (L.O_CJOK, 1, C.NUM_SLOTS, BAD_CJOK), (L.O_CTWO, 1, C.NUM_SLOTS, BAD_CTWO)], np.int64)


@njit(cache=True, inline="always")
def _counts_ok(row, prm, report):
    """No card count is negative or beyond the deck size."""
    for b in range(_COUNT_BLOCKS.shape[0]):
        rows = prm[L.P_NOWNERS] if _COUNT_BLOCKS[b, 1] else prm[L.P_NPLAYERS]
        if not _block_ok(row, prm[_COUNT_BLOCKS[b, 0]], rows, _COUNT_BLOCKS[b, 2], _COUNT_BLOCKS[b, 3],
                         prm[L.P_DECK], report):
            return False
    return True


@njit(cache=True, inline="always")
def _count_table(row, prm, counts, report):
    """Add the cards of the hands, reserves, red threes and melds to ``counts``; False when a meld
    slot holds cards it never can (naturals in the wild slot, a closed black-three canasta, a
    closed canasta with more wilds than cards)."""
    n, owners = prm[L.P_NPLAYERS], prm[L.P_NOWNERS]
    hands = row[L.hand_at(prm, 0): L.hand_at(prm, n)]
    reserves = row[L.reserve_at(prm, 0): L.reserve_at(prm, n)]
    for p in range(n):
        for k in range(C.NUM_KINDS):
            counts[k] += hands[p * C.NUM_KINDS + k] + reserves[p * C.NUM_KINDS + k]
        counts[C.RED_THREE] += row[prm[L.O_RED3] + p]
    size = owners * C.NUM_SLOTS
    mnat, mjok = row[prm[L.O_MNAT]: prm[L.O_MNAT] + size], row[prm[L.O_MJOK]: prm[L.O_MJOK] + size]
    mtwo, closed = row[prm[L.O_MTWO]: prm[L.O_MTWO] + size], row[prm[L.O_CLOSED]: prm[L.O_CLOSED] + size]
    cjok, ctwo = row[prm[L.O_CJOK]: prm[L.O_CJOK] + size], row[prm[L.O_CTWO]: prm[L.O_CTWO] + size]
    for o in range(owners):
        for s in range(C.NUM_SLOTS):
            m = L.slot_of(o, s)
            counts[C.JOKER] += mjok[m] + cjok[m]
            counts[C.TWO] += mtwo[m] + ctwo[m]
            closed_nat = C.CANASTA_SIZE * closed[m] - cjok[m] - ctwo[m]
            if closed_nat < 0:
                return _bad(report, BAD_CLOSED_CARDS, o, s, closed_nat, 0, 0)
            if s < C.WILD_SLOT:
                counts[s + C.FOUR] += mnat[m] + closed_nat
        w, b3 = L.slot_of(o, C.WILD_SLOT), L.slot_of(o, C.BLACK_THREE_SLOT)
        if mnat[w] != 0:
            return _bad(report, BAD_MNAT, o, C.WILD_SLOT, mnat[w], 0, 0)
        wild_nat = C.CANASTA_SIZE * closed[w] - cjok[w] - ctwo[w]
        if wild_nat != 0 or closed[b3] + cjok[b3] + ctwo[b3] != 0:
            return _bad(report, BAD_CLOSED_CARDS, o, C.WILD_SLOT if wild_nat else C.BLACK_THREE_SLOT,
                        wild_nat, 0, 0)
        counts[C.BLACK_THREE] += mnat[b3]
    return True


@njit(cache=True, inline="always")
def _row_ok(row, prm, deck, counts, report):
    """Every index and loop bound of the row is in range and its cards are the deck's."""
    if not (_header_ok(row, prm, report) and _counts_ok(row, prm, report)):
        return False
    counts[:] = 0
    if not (_cards_ok(row, prm[L.O_STOCK], row[L.F_STOCK_LEN], BAD_STOCK, counts, report)
            and _cards_ok(row, prm[L.O_PILE], row[L.F_PILE_LEN], BAD_PILE, counts, report)
            and _count_table(row, prm, counts, report)):
        return False
    for k in range(C.NUM_KINDS):
        if counts[k] != deck[k]:
            return _bad(report, BAD_CARDS, k, -1, counts[k], deck[k], deck[k])
    return True


@njit(cache=True)
def _cards_needed(row, prm, a):
    """(kind, naturals of it, jokers, twos) action ``a`` moves from the mover's hand; kind -1 when
    the row cannot play it at all (no natural on top of the pile, naturals for the wild slot, an
    answer with nobody asking)."""
    if A.TAKE_PILE_PAIR <= a <= A.TAKE_PILE_LAYOFF:
        length = row[L.F_PILE_LEN]
        top = row[prm[L.O_PILE] + length - 1] if length > 0 else -1
        if top < C.FOUR:
            return -1, 0, 0, 0
        how = a - A.TAKE_PILE_PAIR
        return top, (2, 1, 1, 0)[how], (0, 1, 0, 0)[how], (0, 0, 1, 0)[how]
    if A.MELD_NNN <= a < A.DISCARD:
        slot, naturals, jokers, twos = meld_cards(a)
        if slot == C.WILD_SLOT and naturals > 0:
            return -1, 0, 0, 0
        return (slot + C.FOUR if slot < C.WILD_SLOT else C.BLACK_THREE), naturals, jokers, twos
    if A.DISCARD <= a < A.ASK_PARTNER:
        return a - A.DISCARD, 1, 0, 0
    if (a == A.ANSWER_YES or a == A.ANSWER_NO) and row[L.F_ASKER] < 0:
        return -1, 0, 0, 0
    return C.JOKER, 0, 0, 0


@njit(cache=True, inline="always")
def _action_ok(row, prm, mask, a, report):
    """An action the step kernel would apply (live row, the mask allows it) can be played."""
    if row[L.F_STATUS] != L.ST_LIVE or a < 0 or a >= A.NUM_ACTIONS or not mask[a]:
        return True  # the kernel leaves the row as it is (no-op or illegal)
    kind, naturals, jokers, twos = _cards_needed(row, prm, a)
    hand = L.hand_at(prm, row[L.F_CUR])
    if kind < 0 or row[hand + kind] < naturals or row[hand + C.JOKER] < jokers \
            or row[hand + C.TWO] < twos:
        return _bad(report, BAD_ACTION, a, -1, 1, 0, 0)
    return True


@njit(cache=True, nogil=True)
def find_corrupt(data, prm, expected_prm, masks, rows, actions, report):
    """Position in ``rows`` of the first row the kernels could not safely run on, -1 if none (-2:
    ``prm`` differs from ``expected_prm``, the parameters of the state's rules); ``report`` gets
    what is wrong (``REPORT_SIZE`` entries, see ``FIELDS``). ``actions``, one per row or empty,
    are also checked against the rows they are for."""
    for i in range(L.NUM_PARAMS):
        if prm[i] != expected_prm[i]:
            _bad(report, BAD_PARAMS, i, -1, prm[i], expected_prm[i], expected_prm[i])
            return -2
    deck = deck_counts(prm)
    counts = np.zeros(C.NUM_KINDS, np.int64)
    prm, report = borrowed(prm), borrowed(report)
    for r in range(rows.shape[0]):
        b = rows[r]
        row = borrowed(data[b])
        if not _row_ok(row, prm, borrowed(deck), borrowed(counts), report):
            return r
        if actions.shape[0] > 0 and not _action_ok(row, prm, borrowed(masks[b]), actions[r], report):
            return r
    return -1
