"""Rule legality of game rows: what every state reached by play obeys, beyond integrity.

``integrity.find_corrupt`` guards the kernels (indices in range, cards conserved). A row can pass it
and still be a table no game reaches: a meld of ``5 5 2 2 JK``, a red three in a hand, black threes
melded outside a going-out turn, a side with melds that never opened. ``find_illegal`` runs the
integrity pass and then these rule checks, so the scenario builder (``canasta_env/scenario.py``)
and the checks on reached states (tests/test_scenario_strict.py) are held to one set of checks:

* open melds (C13; R2, P2 under a meld cap): three cards or more, ``min_naturals`` naturals of one
  rank, at most ``max_wilds`` wilds and, with ``wild_le_naturals``, no more wilds than naturals;
  under a cap below seven cards, sevens without wilds, wild-only melds of three wilds or more (and
  only under a cap); black threes (C11) only as the mover's meld of this turn in the meld phase,
  ``3..max_black_three_meld`` of them, without wilds;
* closed canastas (R2) only under a cap, at most three wilds each, none in sevens, their kinds
  counted as the slots hold them;
* red threes never in a hand (C8); a live hand never empty except the mover's mid-turn (C19);
  a kitty or foot (R1, P1) face down with its full size, shown only by the mover (R4);
* a side that opened has melds and a side with melds opened (C16), except the mover's side
  mid-turn (the minimum is judged at the turn's end, C19a); a seat marked as having melded plays to
  an owner with melds, and an owner with melds has such a seat (C30);
* a pile holding a wild or a red three is frozen (C5, C20); ``final_meld`` only on an empty stock
  (C31a); a live row has a legal action (C19a).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from canasta_env.engine import cards as C
from canasta_env.engine import layout as L
from canasta_env.engine.integrity import BAD_ACTION, _bad, find_corrupt

(BAD_MELD_SHORT, BAD_MELD_NATURALS, BAD_MELD_WILDS, BAD_MELD_WILD_GT_NAT, BAD_MELD_CAP, BAD_SEVENS_WILD,
 BAD_WILD_MELD, BAD_B3_COUNT, BAD_B3_WILD, BAD_B3_TURN, BAD_CLOSED_NO_CAP, BAD_CLOSED_WILDS,
 BAD_CANASTA_KINDS, BAD_RED3_HAND, BAD_HAND_EMPTY, BAD_RESERVE, BAD_RESERVE_SHOWN, BAD_OPENED,
 BAD_NOT_OPENED, BAD_MELDED, BAD_OWNER_MELDED, BAD_PILE_FREEZE, BAD_FINAL_MELD,
 BAD_NO_MOVE) = range(BAD_ACTION + 1, BAD_ACTION + 25)

# what each rule code means, formatted with the report's (i, j, value, low, high); the rule id last
REASONS = {
    BAD_MELD_SHORT: "{value} cards, a meld needs at least {low} (C13, R2)",
    BAD_MELD_NATURALS: "{value} natural cards, a meld needs at least {low} (C13)",
    BAD_MELD_WILDS: "{value} wild cards, a meld holds at most {high} (C13)",
    BAD_MELD_WILD_GT_NAT: "more wild cards ({value}) than natural cards ({high}) (C13)",
    BAD_MELD_CAP: "{value} cards in an open meld, which closes as a canasta at {high} (R2, P2)",
    BAD_SEVENS_WILD: "{value} wild cards with sevens, sevens take no wild cards (R2, P2)",
    BAD_WILD_MELD: "a meld of wild cards only needs the four canasta kinds (C13, R2)",
    BAD_B3_COUNT: "{value} black threes, a black-three meld has {low} to {high} (C11, R3)",
    BAD_B3_WILD: "{value} wild cards with black threes, which take none (C11)",
    BAD_B3_TURN: "black threes are melded only by the mover in the meld phase of the turn they go "
                 "out in (C11)",
    BAD_CLOSED_NO_CAP: "closed canastas exist only under a meld cap (R2)",
    BAD_CLOSED_WILDS: "{value} wild cards in {low} closed canastas, each holds at most 3 (none in "
                      "sevens) (C13, R2)",
    BAD_CANASTA_KINDS: "canasta kind {j} counts {value}, the closed canastas make {low} (R2)",
    BAD_RED3_HAND: "{value} red threes in hand: they are laid down at once (C8)",
    BAD_HAND_EMPTY: "an empty hand in a live game: a player keeps a card unless going out (C19)",
    BAD_RESERVE: "{value} cards in the kitty or foot, the rules deal {high} (R1, P1)",
    BAD_RESERVE_SHOWN: "only the mover's kitty is shown, after its canasta this turn (R4)",
    BAD_OPENED: "side {i} has opened but has no melds (C16)",
    BAD_NOT_OPENED: "side {i} has melds but has not opened (C16)",
    BAD_MELDED: "seat {i} has melded but its melds are empty (C30)",
    BAD_OWNER_MELDED: "melds of owner {i} that no seat of it has melded (C30)",
    BAD_PILE_FREEZE: "the pile holds a wild card or red three but is not frozen (C5, C20)",
    BAD_FINAL_MELD: "final_meld with {value} stock cards: it follows the last card drawn (C31a)",
    BAD_NO_MOVE: "the player to move has no legal action (C19a)",
}
_NO_ACTIONS = np.zeros(0, dtype=np.int64)


@njit(cache=True)
def _rank_meld_ok(prm, o, s, nat, wild, report):
    """An open meld of a rank (C13; R2, P2 under a cap)."""
    cap = prm[L.P_CAP]
    if nat + wild < 3:
        return _bad(report, BAD_MELD_SHORT, o, s, nat + wild, 3, 0)
    if nat < prm[L.P_MIN_NAT]:
        return _bad(report, BAD_MELD_NATURALS, o, s, nat, prm[L.P_MIN_NAT], 0)
    if cap and s == C.SEVEN_SLOT and wild > 0:
        return _bad(report, BAD_SEVENS_WILD, o, s, wild, 0, 0)
    if wild > prm[L.P_MAX_WILD]:
        return _bad(report, BAD_MELD_WILDS, o, s, wild, 0, prm[L.P_MAX_WILD])
    if prm[L.P_WLE] and wild > nat:
        return _bad(report, BAD_MELD_WILD_GT_NAT, o, s, wild, 0, nat)
    if cap and nat + wild >= cap:
        return _bad(report, BAD_MELD_CAP, o, s, nat + wild, 0, cap)
    return True


@njit(cache=True)
def _open_melds_ok(row, prm, o, report):
    """Every open meld of owner ``o``: ranks, the wild-only meld, the black-three meld (C11)."""
    cap = prm[L.P_CAP]
    for s in range(C.NUM_SLOTS):
        m = L.slot_of(o, s)
        nat = row[prm[L.O_MNAT] + m]
        wild = row[prm[L.O_MJOK] + m] + row[prm[L.O_MTWO] + m]
        if nat + wild == 0:
            continue
        if s < C.WILD_SLOT:
            if not _rank_meld_ok(prm, o, s, nat, wild, report):
                return False
        elif s == C.WILD_SLOT:
            if not cap:
                return _bad(report, BAD_WILD_MELD, o, s, wild, 0, 0)
            if wild < 3:
                return _bad(report, BAD_MELD_SHORT, o, s, wild, 3, 0)
            if wild >= cap:
                return _bad(report, BAD_MELD_CAP, o, s, wild, 0, cap)
        else:
            if wild > 0:
                return _bad(report, BAD_B3_WILD, o, s, wild, 0, 0)
            if not 3 <= nat <= prm[L.P_B3_MAX]:
                return _bad(report, BAD_B3_COUNT, o, s, nat, 3, prm[L.P_B3_MAX])
            mover = row[L.F_CUR]
            if mover % prm[L.P_NOWNERS] != o or row[L.F_PHASE] != L.PH_MELD or not row[prm[L.O_NEW] + s]:
                return _bad(report, BAD_B3_TURN, o, s, nat, 0, 0)
    return True


@njit(cache=True)
def _closed_ok(row, prm, o, report):
    """Owner ``o``'s closed canastas (R2): only under a cap, three wilds at most each, none with
    sevens, and the per-kind counts as the slots make them."""
    total, wild_slot, sevens, rank_wilds = 0, 0, 0, 0
    for s in range(C.NUM_SLOTS):
        m = L.slot_of(o, s)
        closed = row[prm[L.O_CLOSED] + m]
        wild = row[prm[L.O_CJOK] + m] + row[prm[L.O_CTWO] + m]
        total += closed
        if closed and not prm[L.P_CAP]:
            return _bad(report, BAD_CLOSED_NO_CAP, o, s, closed, 0, 0)
        if s == C.WILD_SLOT:
            wild_slot = closed
        elif s == C.SEVEN_SLOT:
            sevens = closed
            if wild:
                return _bad(report, BAD_CLOSED_WILDS, o, s, wild, closed, 0)
        elif s < C.WILD_SLOT:
            rank_wilds += wild
            if wild > 3 * closed:
                return _bad(report, BAD_CLOSED_WILDS, o, s, wild, closed, 0)
    kinds = L.canasta_kinds_at(prm, o)
    nat, mixed = row[kinds + L.K_NATURAL], row[kinds + L.K_MIXED]
    if row[kinds + L.K_WILD] != wild_slot:
        return _bad(report, BAD_CANASTA_KINDS, o, L.K_WILD, row[kinds + L.K_WILD], wild_slot, 0)
    if row[kinds + L.K_SEVENS] != sevens:
        return _bad(report, BAD_CANASTA_KINDS, o, L.K_SEVENS, row[kinds + L.K_SEVENS], sevens, 0)
    rank_closed = total - wild_slot - sevens
    if nat + mixed != rank_closed or mixed > rank_wilds or 3 * mixed < rank_wilds:
        return _bad(report, BAD_CANASTA_KINDS, o, L.K_MIXED, mixed, rank_closed, 0)
    return True


@njit(cache=True)
def _owner_has_melds(row, prm, o):
    """Whether owner ``o`` has an open meld or a closed canasta."""
    for s in range(C.NUM_SLOTS):
        m = L.slot_of(o, s)
        if (row[prm[L.O_MNAT] + m] + row[prm[L.O_MJOK] + m] + row[prm[L.O_MTWO] + m]
                + row[prm[L.O_CLOSED] + m]) > 0:
            return True
    return False


@njit(cache=True)
def _players_ok(row, prm, report):
    """Hands (C8, C19) and kitties or feet (R1, P1, R4) of every seat."""
    mover, phase = row[L.F_CUR], row[L.F_PHASE]
    size = prm[L.P_RES_SIZE]
    for p in range(prm[L.P_NPLAYERS]):
        hand = L.hand_at(prm, p)
        if row[hand + C.RED_THREE]:
            return _bad(report, BAD_RED3_HAND, p, -1, row[hand + C.RED_THREE], 0, 0)
        if L.cards_in(row, hand) == 0 and (p != mover or phase == L.PH_DRAW):
            return _bad(report, BAD_HAND_EMPTY, p, -1, 0, 1, 0)
        held, state = L.cards_in(row, L.reserve_at(prm, p)), row[prm[L.O_RESSTATE] + p]
        if state == L.RES_IN_HAND:
            if held:
                return _bad(report, BAD_RESERVE, p, -1, held, 0, 0)
        elif held != size or size == 0:
            return _bad(report, BAD_RESERVE, p, -1, held, size, size)
        elif state == L.RES_SHOWN and (p != mover or phase == L.PH_DRAW
                                       or prm[L.P_RES_PICKUP] == L.PICKUP_IMMEDIATE):
            return _bad(report, BAD_RESERVE_SHOWN, p, -1, 0, 0, 0)
    return True


@njit(cache=True)
def _progress_ok(row, prm, report):
    """Opened sides and melded seats agree with the melds (C16, C30)."""
    n, sides, owners = prm[L.P_NPLAYERS], prm[L.P_NSIDES], prm[L.P_NOWNERS]
    mover_side, mid_turn = row[L.F_CUR] % sides, row[L.F_PHASE] != L.PH_DRAW
    for side in range(sides):
        has = False
        for o in range(side, owners, sides):
            has = has or _owner_has_melds(row, prm, o)
        opened = row[prm[L.O_OPENED] + side]
        if opened and not has:
            return _bad(report, BAD_OPENED, side, -1, opened, 0, 0)
        if has and not opened and not (side == mover_side and mid_turn):
            return _bad(report, BAD_NOT_OPENED, side, -1, 0, 1, 1)
    for o in range(owners):
        has, marked = _owner_has_melds(row, prm, o), False
        for p in range(o, n, owners):
            melded = row[prm[L.O_MELDED] + p] != 0
            marked = marked or melded
            if melded and not has:
                return _bad(report, BAD_MELDED, p, -1, 1, 0, 0)
        if has and not marked:
            return _bad(report, BAD_OWNER_MELDED, o, -1, 0, 1, 1)
    return True


@njit(cache=True)
def _table_ok(row, prm, mask, report):
    """The pile's freeze (C5, C20), the final_meld phase (C31a), a legal action (C19a)."""
    pile, length = prm[L.O_PILE], row[L.F_PILE_LEN]
    if not row[L.F_PILE_FROZEN]:
        for i in range(length):
            c = row[pile + i]
            if c == C.JOKER or c == C.TWO or c == C.RED_THREE:
                return _bad(report, BAD_PILE_FREEZE, i, -1, c, 0, 0)
    if row[L.F_PHASE] == L.PH_FINAL_MELD and row[L.F_STOCK_LEN] > 0:
        return _bad(report, BAD_FINAL_MELD, -1, -1, row[L.F_STOCK_LEN], 0, 0)
    for a in range(mask.shape[0]):
        if mask[a]:
            return True
    return _bad(report, BAD_NO_MOVE, row[L.F_CUR], -1, 0, 0, 0)


@njit(cache=True)
def row_legal(row, prm, mask, report):
    """Whether a live row obeys the rules above (a finished row is only held to integrity)."""
    if row[L.F_STATUS] != L.ST_LIVE or row[L.F_PHASE] == L.PH_OVER:
        return True
    for o in range(prm[L.P_NOWNERS]):
        if not (_open_melds_ok(row, prm, o, report) and _closed_ok(row, prm, o, report)):
            return False
    return (_players_ok(row, prm, report) and _progress_ok(row, prm, report)
            and _table_ok(row, prm, mask, report))


@njit(cache=True)
def find_illegal(data, prm, expected_prm, masks, rows, report):
    """Position in ``rows`` of the first row that is corrupt (``find_corrupt``, its codes) or breaks
    a rule (the codes above), -1 if none (-2: ``prm`` is not ``expected_prm``). ``masks`` must be
    current (``State.refresh_mask``); ``report`` gets what is wrong, as ``find_corrupt`` fills it."""
    bad = find_corrupt(data, prm, expected_prm, masks, rows, _NO_ACTIONS, report)
    if bad != -1:
        return bad
    for r in range(rows.shape[0]):
        b = rows[r]
        if not row_legal(data[b], prm, masks[b], report):
            return r
    return -1
