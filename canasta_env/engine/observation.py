"""Observations: what one player may know, as a flat float32 vector relative to that player.

Every piece is declared once in ``pieces(params)`` as ``(name, shape, low, high, scale, divisor)``;
``divisors`` tiles the declared divisors into one vector, which the kernel divides each count by
as it writes the pieces in that order, and which undoes the scaling (``agents._obs.ObsDecoder``). Seats are
relative (own seat first, then the others in turn order from the next player) and sides likewise
(own side first), so one policy can play any seat. Never included: the stock order, other players'
unknown cards.
"""

from __future__ import annotations

import functools
import hashlib
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
from numba import njit

from canasta_env.engine import cards as C
from canasta_env.engine import layout as L
from canasta_env.engine.actions import ACTION_NAMES
from canasta_env.engine.borrow import borrowed
from canasta_env.engine.capped import sevens_blocked
from canasta_env.engine.deal import minimum_for
from canasta_env.engine.prefetch import prefetch_next

SCORE_CLIP = 4.0  # scores are scaled by the target and clipped to [-4, 4] targets
NUM_PHASES = 5
NUM_TURN_FLAGS = 5


class Piece(NamedTuple):
    name: str
    shape: tuple[int, ...]
    low: float
    high: float
    scale: str  # what a stored 1.0 means
    # stored value x divisor = the integer it encodes (cards, points, percent); tiled over the
    # piece's elements; 0: not an integer (e.g. a credit share)
    divisor: tuple[float, ...] = (1.0,)


def pieces(params: npt.NDArray[np.int32]) -> list[Piece]:
    """The observation's pieces for a table of ``params`` (their order is the vector's order)."""
    n, s, o = int(params[L.P_NPLAYERS]), int(params[L.P_NSIDES]), int(params[L.P_NOWNERS])
    maxk = float(max(int(L.deck_counts(params).max()), 1))
    deck = float(params[L.P_DECK])
    jokers = float(max(int(params[L.P_JOKERS]), 1))
    top_min = float(max(int(params[L.P_MTAB_MIN + max(int(params[L.P_MTAB_N]) - 1, 0)]), 1))
    variant = [
        Piece("closed_canastas", (o, L.NUM_CANASTA_KINDS), 0, 1,
              "closed canastas per owner (own first): natural, mixed, wild, sevens / 8, clipped", (8.0,)),
        Piece("reserves", (n, 2), 0, 1,
              "kitty/foot cards not in hand / reserve size; shown (joins after the discard), "
              "own seat first", (float(max(int(params[L.P_RES_SIZE]), 1)), 1.0)),
        Piece("sevens_blocked", (1,), 0, 1, "no seven may be discarded yet (R5, P4)"),
    ] if params[L.P_CAP] else []
    return [
        Piece("hand", (C.NUM_KINDS,), 0, 1, "count / deck count of the kind", (maxk,)),
        Piece("hand_sizes", (n,), 0, 1, "cards / deck size, own seat first", (deck,)),
        Piece("known", (n - 1, C.NUM_KINDS), 0, 1, "cards others are known to hold / deck count", (maxk,)),
        Piece("red_threes", (s,), 0, 1, "red threes / deck's red threes, own side first",
              (2.0 * int(params[L.P_PACKS]),)),
        Piece("melds", (o, C.NUM_SLOTS, 3), 0, 1, "naturals, jokers, twos per slot / deck count" + (
            "" if o == s else "; per player, own seat first (players own their melds, G2)"),
            (maxk, jokers, maxk)),
        Piece("opened", (s,), 0, 1, "side has opened"),
        Piece("scores", (s,), -SCORE_CLIP, SCORE_CLIP, "cumulative score / target, clipped",
              (float(params[L.P_TARGET]),)),
        Piece("minimums", (s,), 0, 1, "initial-meld minimum / largest minimum", (top_min,)),
        Piece("pile_top", (C.NUM_KINDS + 1,), 0, 1, "one-hot kind of the top card, last = empty pile"),
        Piece("pile_counts", (C.NUM_KINDS,), 0, 1, "cards in the pile / deck count", (maxk,)),
        Piece("pile_size", (1,), 0, 1, "cards / deck size", (deck,)),
        Piece("pile_frozen", (2,), 0, 1, "frozen for all (wild inside); frozen for own side"),
        Piece("stock_size", (1,), 0, 1, "cards / deck size", (deck,)),
        Piece("to_move", (n,), 0, 1, "one-hot seat to move, relative"),
        Piece("dealer", (n,), 0, 1, "one-hot dealer, relative"),
        Piece("phase", (NUM_PHASES,), 0, 1, "one-hot turn phase (layout.PHASE_NAMES)"),
        Piece("turn", (3 + NUM_TURN_FLAGS,), 0, 1,
              "mover: value melded / minimum, needs minimum, credit left; drew, took, asked, "
              "yes, no",  # the credit left is divided by kinds x deck count, clipped
              (100.0, 1.0, maxk * C.NUM_KINDS) + (1.0,) * NUM_TURN_FLAGS),  # value melded in percent
        Piece("new_this_turn", (C.NUM_SLOTS,), 0, 1, "slots the mover started this turn"),
    ] + variant + ([
        Piece("discards", (n, C.NUM_KINDS), 0, 1, "cards each seat discarded this hand / deck count, "
              "clipped, own seat first (only with the option observe_discards)", (maxk,)),
    ] if params[L.P_OBS_DISCARDS] else [])


def spans(params: npt.NDArray[np.int32]) -> list[tuple[Piece, int, int]]:
    """Each piece with its start and size in the observation vector."""
    out, pos = [], 0
    for p in pieces(params):
        size = int(np.prod(p.shape))
        out.append((p, pos, size))
        pos += size
    return out


def divisors(params: npt.NDArray[np.int32]) -> npt.NDArray[np.float32]:
    """``(D,)``: each element's declared divisor (``Piece.divisor`` tiled over the piece)."""
    return np.concatenate([np.resize(np.asarray(p.divisor, np.float32), size)
                           for p, _, size in spans(params)])


def obs_dim(params: npt.NDArray[np.int32]) -> int:
    """Length D of the observation vector."""
    return _obs_dim(int(params[L.P_NPLAYERS]), int(params[L.P_NSIDES]), int(params[L.P_NOWNERS]),
                    int(params[L.P_CAP]), int(params[L.P_OBS_DISCARDS]))


@functools.cache
def _obs_dim(num_players: int, num_sides: int, num_owners: int, cap: int, discards: int) -> int:
    params = np.zeros(L.NUM_PARAMS, dtype=np.int32)
    params[L.P_NPLAYERS], params[L.P_NSIDES], params[L.P_NOWNERS] = num_players, num_sides, num_owners
    params[L.P_CAP], params[L.P_OBS_DISCARDS] = cap, discards
    return sum(int(np.prod(p.shape)) for p in pieces(params))


def bounds(params: npt.NDArray[np.int32]) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """Elementwise low and high of the observation Box."""
    parts = spans(params)
    return (np.concatenate([np.full(size, p.low, np.float32) for p, _, size in parts]),
            np.concatenate([np.full(size, p.high, np.float32) for p, _, size in parts]))


def views(obs: npt.NDArray[np.float32], params: npt.NDArray[np.int32]) -> dict[str, np.ndarray]:
    """Named views of a batch of observations ``(B, D)``: ``{name: (B, *shape)}``."""
    return {p.name: obs[..., pos: pos + size].reshape(*obs.shape[:-1], *p.shape)
            for p, pos, size in spans(params)}


def layout_hash(params: npt.NDArray[np.int32]) -> str:
    """Hash of the declared pieces and of the action layout (stored with checkpoints)."""
    text = repr([tuple(p)[:5] for p in pieces(params)]) + repr(ACTION_NAMES)  # divisors follow from these
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@njit(cache=True, inline="always")
def _encode(row, prm, div, me, out):
    """Seat ``me``'s view of ``row`` into ``out``, each count divided by its declared divisor
    ``div`` (``divisors``, in float64: the quotients are those of the integers)."""
    n, sides = prm[L.P_NPLAYERS], prm[L.P_NSIDES]
    my_side = me % sides
    pos = 0
    hand = L.hand_at(prm, me)
    for k in range(C.NUM_KINDS):
        out[pos + k] = row[hand + k] / div[pos + k]
    pos += C.NUM_KINDS
    for j in range(n):
        out[pos + j] = L.cards_in(row, L.hand_at(prm, (me + j) % n)) / div[pos + j]
    pos += n
    for j in range(1, n):
        p = (me + j) % n
        for k in range(C.NUM_KINDS):
            out[pos + k] = row[L.known_at(prm, p) + k] / div[pos + k]
        pos += C.NUM_KINDS
    for j in range(sides):
        side = (my_side + j) % sides
        t = 0
        for p in range(n):
            if p % sides == side:
                t += row[prm[L.O_RED3] + p]
        out[pos + j] = t / div[pos + j]
    pos += sides
    owners = prm[L.P_NOWNERS]
    for j in range(owners):
        owner = (me + j) % owners  # own melds first, then in turn order
        for s in range(C.NUM_SLOTS):
            out[pos] = row[L.naturals_at(prm, owner) + s] / div[pos]
            out[pos + 1] = row[L.jokers_at(prm, owner) + s] / div[pos + 1]
            out[pos + 2] = row[L.twos_at(prm, owner) + s] / div[pos + 2]
            pos += 3
    for j in range(sides):
        side = (my_side + j) % sides
        out[pos + j] = row[prm[L.O_OPENED] + side]
        score = row[prm[L.O_SCORE] + side] / div[pos + sides + j]
        out[pos + sides + j] = min(max(score, -SCORE_CLIP), SCORE_CLIP)
        out[pos + 2 * sides + j] = minimum_for(prm, row[prm[L.O_SCORE] + side]) / div[pos + 2 * sides + j]
    pos += 3 * sides
    plen = row[L.F_PILE_LEN]
    out[pos: pos + C.NUM_KINDS + 1] = 0.0
    out[pos + (row[prm[L.O_PILE] + plen - 1] if plen > 0 else C.NUM_KINDS)] = 1.0
    pos += C.NUM_KINDS + 1
    out[pos: pos + C.NUM_KINDS] = 0.0
    for i in range(plen):
        out[pos + row[prm[L.O_PILE] + i]] += 1.0 / div[pos]
    pos += C.NUM_KINDS
    out[pos] = plen / div[pos]
    out[pos + 1] = row[L.F_PILE_FROZEN]
    out[pos + 2] = 1.0 if (row[L.F_PILE_FROZEN] or not row[prm[L.O_OPENED] + my_side]) else 0.0
    out[pos + 3] = row[L.F_STOCK_LEN] / div[pos + 3]
    pos += 4
    out[pos: pos + 2 * n] = 0.0
    out[pos + (row[L.F_CUR] - me) % n] = 1.0
    out[pos + n + (row[L.F_DEALER] - me) % n] = 1.0
    pos += 2 * n
    out[pos: pos + 5] = 0.0
    out[pos + min(row[L.F_PHASE], 4)] = 1.0
    pos += 5
    mover_side = row[L.F_CUR] % sides
    out[pos: pos + 8] = 0.0
    if mover_side == my_side:
        minimum = max(row[L.F_MINIMUM], 1)
        out[pos] = min(row[L.F_TURN_VALUE] / minimum, 1.0)  # a ratio: its divisor reads it as percent
        out[pos + 1] = row[L.F_NEEDS_MIN]
        if row[L.F_CUR] == me:  # the credit left is private: it depends on the mover's hand
            credit = 0
            for k in range(C.NUM_KINDS):
                credit += min(row[prm[L.O_CREDIT] + k], row[L.hand_at(prm, me) + k])
            out[pos + 2] = min(credit / div[pos + 2], 1.0)
        flags = row[L.F_TURN_FLAGS]
        for i in range(NUM_TURN_FLAGS):
            out[pos + 3 + i] = 1.0 if flags & (1 << i) else 0.0
    pos += 8
    for s in range(C.NUM_SLOTS):
        out[pos + s] = row[prm[L.O_NEW] + s] if mover_side == my_side else 0.0
    pos += C.NUM_SLOTS
    if prm[L.P_CAP]:
        for j in range(owners):
            base = L.canasta_kinds_at(prm, ((me + j) % owners))
            for kind in range(L.NUM_CANASTA_KINDS):
                out[pos + kind] = min(row[base + kind] / div[pos + kind], 1.0)
            pos += L.NUM_CANASTA_KINDS
        for j in range(n):
            p = (me + j) % n
            out[pos] = L.cards_in(row, L.reserve_at(prm, p)) / div[pos]
            out[pos + 1] = 1.0 if row[prm[L.O_RESSTATE] + p] == L.RES_SHOWN else 0.0
            pos += 2
        out[pos] = 1.0 if sevens_blocked(row, prm) else 0.0
        pos += 1
    if prm[L.P_OBS_DISCARDS]:
        for j in range(n):
            base = L.discards_at(prm, (me + j) % n)
            for k in range(C.NUM_KINDS):
                out[pos + k] = min(row[base + k] / div[pos + k], 1.0)  # a card taken back is thrown again
            pos += C.NUM_KINDS
    return pos


@njit(cache=True, nogil=True)
def observe_kernel(data, prm, div, rows, players, out):
    """Encode row ``rows[i]`` from seat ``players[i]``'s view into ``out[i]`` (``div``: the
    declared ``divisors`` in float64)."""
    prm, div = borrowed(prm), borrowed(div)
    for i in range(rows.shape[0]):
        prefetch_next(data, rows, i)
        _encode(borrowed(data[rows[i]]), prm, div, players[i], borrowed(out[i]))


def describe(params: npt.NDArray[np.int32]) -> str:
    """Markdown table of the pieces with their offsets (docs/observation.md is generated from it)."""
    lines = ["| offset | piece | shape | range | meaning | x divisor |", "|---|---|---|---|---|---|"]
    for p, pos, size in spans(params):
        times = ", ".join(f"{d:g}" for d in p.divisor)
        lines.append(f"| {pos}-{pos + size - 1} | `{p.name}` | {p.shape} | [{p.low:g}, {p.high:g}] "
                     f"| {p.scale} | {times} |")
    return "\n".join(lines) + f"\n\nD = {obs_dim(params)}, layout_hash `{layout_hash(params)}`\n"
