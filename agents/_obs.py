"""Observation decoding shared by the rule-based agents.

An observation's pieces (``canasta_env.engine.observation.pieces``) are scaled floats whose shapes
depend on the table size, so an agent is built for a rules preset. ``ObsDecoder`` undoes the
scaling: ``decode(obs)`` returns an int32 array of the same shape whose entries are card counts,
seat sizes, scores in points and 0/1 flags, in the observation's own layout; ``offsets`` gives each
piece's start in the order of ``PIECE_ORDER`` so that compiled kernels receive it as an argument
(never as a global from another module: numba's cache would not notice a change here).

The agents' shared input checks live here too, so that every agent refuses the same bad input in
the same one line: ``check_observations`` (a ``(B, D)`` batch of numbers within the layout's
bounds: NaN, infinities, another table's observations and a transposed batch are refused),
``check_legal_mask`` (``(B, NUM_ACTIONS)`` of booleans or 0/1 numbers) and an rng's draws
(``uniforms``), both from ``canasta_env.policy``, where the random agent uses them too. Each is one cheap
vectorized pass over the batch, and hands the kernels C-contiguous, writeable arrays (a read-only
or Fortran-ordered one would make numba compile another specialization, 10 s, on the hot path).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit

from canasta_env.engine.layout import (
    P_NOWNERS,
    P_NPLAYERS,
    P_NSIDES,
    pack_params,
)
from canasta_env.engine.observation import bounds, divisors, obs_dim, spans
from canasta_env.messages import one_line
from canasta_env.policy import check_legal_mask
from canasta_env.rules import RuleSet, load_rules

# order of the piece offsets handed to the kernels (``ObsDecoder.offsets``)
PIECE_ORDER = (
    "hand", "hand_sizes", "known", "red_threes", "melds", "opened", "scores", "minimums", "pile_top",
    "pile_counts", "pile_size", "pile_frozen", "stock_size", "to_move", "dealer", "phase", "turn",
    "new_this_turn",
)


class ObsDecoder:
    """Integer views of a batch of observations for one rules preset."""

    def __init__(self, rules: RuleSet | str) -> None:
        self.rules = load_rules(rules)
        self.params = pack_params(self.rules)
        p = self.params
        self.num_players = int(p[P_NPLAYERS])
        self.num_sides = int(p[P_NSIDES])
        self.num_owners = int(p[P_NOWNERS])  # rows of the melds piece (G2: one per player)
        self.obs_dim = obs_dim(p)
        starts = {piece.name: start for piece, start, _ in spans(p)}
        missing = [name for name in PIECE_ORDER if name not in starts]
        if missing:
            raise ValueError(f"observation layout changed: missing pieces {missing}")
        self.scale = divisors(p)
        self.low, self.high = (np.ascontiguousarray(b, dtype=np.float32) for b in bounds(p))
        self.piece_at = np.repeat([piece.name for piece, _, size in spans(p)],
                                  [size for _, _, size in spans(p)])
        self.offsets = np.array([starts[name] for name in PIECE_ORDER], dtype=np.int64)

    def check(self, observations: Any, who: str = "agent") -> npt.NDArray[np.float32]:
        """``observations`` as checked C-contiguous float32 ``(B, D)`` (``check_observations``)."""
        return check_observations(observations, who, self.low, self.high, self.rules.name,
                                  self.piece_at)

    def decode(self, observations: Any, who: str = "agent") -> npt.NDArray[np.int32]:
        """``(B, D)`` float observations -> ``(B, D)`` int32 counts, sizes, points and flags, checked
        as ``check`` does in the same pass (``decode_within``)."""
        obs = _as_float32_rows(observations, who, self.obs_dim, self.rules.name)
        out = np.empty(obs.shape, dtype=np.int32)
        row = decode_within(obs, self.scale, self.low, self.high, out)
        if row >= 0:
            _refuse_row(obs, row, who, self.low, self.high, self.rules.name, self.piece_at)
        return out

    def inputs(self, observations: Any, legal_action_mask: Any, who: str
               ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.bool_]]:
        """The decoded observations and the checked mask of one ``act`` call, or a one-line
        ``ValueError`` starting with ``who``."""
        g = self.decode(observations, who)
        return g, check_legal_mask(legal_action_mask, g.shape[0], who)


def _as_float32_rows(observations: Any, who: str, width: int | None, table: str) -> npt.NDArray[np.float32]:
    """``observations`` as a C-contiguous, writeable float32 ``(B, width)`` array (any width for
    None), or a one-line ``ValueError``: not numbers, another shape (another table's observations, a
    single row, a transposed batch). An array that already is one passes as it is."""
    obs = observations
    if not (type(obs) is np.ndarray and obs.dtype == np.float32 and obs.flags.c_contiguous
            and obs.flags.writeable):
        try:
            obs = np.ascontiguousarray(observations, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{who}: observations are not an array of numbers "
                             f"({type(observations).__name__}: {one_line(exc, 120)})") from None
        if not obs.flags.writeable:  # (another numba signature; torch warns of a read-only array)
            obs = obs.copy()
    if obs.ndim != 2 or (width is not None and obs.shape[1] != width):
        raise ValueError(f"{who}: expected observations of shape (B, {width or 'D'}) for {table}, "
                         f"got {obs.shape}")
    return obs


def _refuse_row(obs: npt.NDArray[np.float32], row: int, who: str, low: npt.NDArray[np.float32],
                high: npt.NDArray[np.float32], table: str, piece_at: npt.NDArray[np.str_] | None) -> None:
    """The ``ValueError`` for row ``row`` of ``obs``, which holds an entry outside ``[low, high]``."""
    col = int(np.flatnonzero(~((obs[row] >= low) & (obs[row] <= high)))[0])
    piece = f" ({piece_at[col]})" if piece_at is not None else ""
    within = "finite" if np.isinf(low[col]) and np.isinf(high[col]) else f"[{low[col]:g}, {high[col]:g}]"
    raise ValueError(f"{who}: observation row {row}, column {col}{piece} is {obs[row, col]}, outside "
                     f"{within}: not an observation of {table}")


def check_observations(observations: Any, who: str, low: npt.NDArray[np.float32] | None,
                       high: npt.NDArray[np.float32] | None, table: str,
                       piece_at: npt.NDArray[np.str_] | None = None) -> npt.NDArray[np.float32]:
    """``observations`` as a C-contiguous float32 ``(B, D)`` array, ``D = low.size``, every entry
    within ``[low, high]`` (the observation space's bounds; an engine observation always is), or
    a one-line ``ValueError`` starting with ``who`` that names what is wrong: not numbers, another
    shape (another table's observations, a single row, a transposed batch), NaN, an infinity or a
    value out of range (the first one, with its row, column and piece ``piece_at[column]``).
    ``low = high = None``: any width, finite numbers."""
    obs = _as_float32_rows(observations, who, None if low is None else low.size, table)
    if low is None or high is None:
        low = np.full(obs.shape[1], -np.inf, dtype=np.float32)
        high = np.full(obs.shape[1], np.inf, dtype=np.float32)
    low, high = np.asarray(low, dtype=np.float32), np.asarray(high, dtype=np.float32)
    row = first_row_outside(obs, low, high)
    if row >= 0:
        _refuse_row(obs, row, who, low, high, table, piece_at)
    return obs


@njit(cache=True, nogil=True)
def decode_within(obs, scale, low, high, out):
    """``out = rint(obs * scale)`` as int32, stopping at the first row with an entry outside
    ``[low, high]`` (NaN included), which it returns; -1 if none. One pass: the check costs nothing
    beside numpy's three (multiply, round, convert)."""
    for b in range(obs.shape[0]):
        ok = True
        for j in range(obs.shape[1]):  # no branch inside: the loop vectorizes
            v = obs[b, j]
            ok &= (v >= low[j]) & (v <= high[j])
            out[b, j] = np.int32(np.rint(v * scale[j]))  # (a NaN's value is never read: refused)
        if not ok:
            return b
    return -1


@njit(cache=True, nogil=True)
def first_row_outside(obs, low, high):
    """The first row of ``obs`` with an entry outside ``[low, high]`` (NaN included), -1 if none:
    one pass, four times faster than numpy's comparisons and ``all``."""
    for b in range(obs.shape[0]):
        ok = True
        for j in range(obs.shape[1]):
            v = obs[b, j]
            ok &= (v >= low[j]) & (v <= high[j])
        if not ok:
            return b
    return -1
