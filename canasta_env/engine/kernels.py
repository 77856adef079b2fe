"""Batch kernels: the compiled loops over game rows that the Python API calls.

Each takes the packed row array, the mask array and the parameter vector (docs/engine.md: few packed
arguments per call) and loops over the batch serially.

Compile time: numba compiles each function it does not inline into a library of its own, which links,
re-optimises and re-generates everything the function calls, and compiles it again for every new
type of its arguments (a literal constant is a type of its own). So the engine inlines
(``inline="always"``) the helpers that have one caller and the one-line ones, passes constants that
would each compile a function again as run-time values or numpy scalars (``melds.KEEP_DISCARD``,
``final`` in ``fill_mask``), and copies arrays in loops (a slice assignment's shape check compiles
numba's string formatting): ``python -m train.common.warmup`` compiles it all in about 25 s on 2 cores.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from canasta_env.engine import layout as L
from canasta_env.engine.actions import END_HAND, NUM_ACTIONS
from canasta_env.engine.borrow import borrowed
from canasta_env.engine.deal import deal_from_order, deal_next
from canasta_env.engine.mask import fill_mask
from canasta_env.engine.prefetch import prefetch_next
from canasta_env.engine.score import finish_episode
from canasta_env.engine.turn import apply_action


@njit(cache=True, inline="always")
def _any(mask):
    """``mask.any()`` as a plain loop (numba's ``any`` is one more function to compile)."""
    for a in range(mask.shape[0]):
        if mask[a]:
            return True
    return False


@njit(cache=True)
def _buffers(prm):
    return np.empty(prm[L.P_DECK], np.int32), np.empty(prm[L.P_WIDTH] + 8, np.int32)


@njit(cache=True, nogil=True)
def step_kernel(data, masks, prm, rows, actions, rewards, illegal, terminated, truncated, events):
    """Apply ``actions[i]`` to row ``rows[i]`` if it is live and its mask allows it (else flag it
    ``illegal``, finished rows excepted); refresh that row's mask and report its episode flags.
    Outputs are indexed like ``rows``. Returns how many rows were left live with no legal action
    (an engine bug the caller reports), so the caller scans no array on the usual path."""
    order_buf, scratch = _buffers(prm)
    prm = borrowed(prm)
    dead_ends = 0
    for i in range(rows.shape[0]):
        b = rows[i]
        prefetch_next(data, rows, i)
        prefetch_next(masks, rows, i)
        row, mask = borrowed(data[b]), borrowed(masks[b])
        rewards[i, :] = 0
        events[i] = 0
        a = actions[i]
        live = row[L.F_STATUS] == L.ST_LIVE
        refused = live and (a < 0 or a >= NUM_ACTIONS or not mask[a])
        illegal[i] = refused
        if live and not refused:
            row[L.F_STEPS] += 1
            forced = row[L.F_PHASE] == L.PH_DRAW and row[L.F_STOCK_LEN] == 0 and not mask[END_HAND]
            events[i] = apply_action(row, prm, a, borrowed(rewards[i]), borrowed(order_buf))
            if forced:
                events[i] |= L.EV_FORCED_TAKE
            if row[L.F_STATUS] == L.ST_LIVE and row[L.F_STEPS] >= prm[L.P_MAX_STEPS]:
                row[L.F_TRUNC] = 1
                row[L.F_HAND_END] = L.HE_STEP_CAP
                finish_episode(row)
            fill_mask(row, prm, mask, borrowed(scratch))
            if row[L.F_STATUS] == L.ST_LIVE and not _any(mask):
                dead_ends += 1
        truncated[i] = row[L.F_TRUNC] == 1
        terminated[i] = row[L.F_STATUS] == L.ST_DONE and not truncated[i]
    return dead_ends


@njit(cache=True, nogil=True)
def deal_kernel(data, prm, rows, seed_lo, seed_hi, deal_rows, deal_index, events):
    """Start a new game on each listed row from its DealId ``(seed, deal_row, deal_index)``; the
    caller then refreshes those rows' masks with ``mask_rows``."""
    order_buf, _ = _buffers(prm)
    prm = borrowed(prm)
    for i in range(rows.shape[0]):
        row = borrowed(data[rows[i]])
        row[L.F_SEED_LO], row[L.F_SEED_HI] = seed_lo[i], seed_hi[i]
        row[L.F_DEAL_ROW], row[L.F_DEAL_INDEX] = deal_rows[i], deal_index[i]
        events[i] = deal_next(row, prm, borrowed(order_buf), True)


@njit(cache=True, nogil=True)
def explicit_deal_kernel(data, prm, rows, orders, dealers):
    """Start a new game on each listed row from an explicit deck order and dealer; the caller then
    refreshes those rows' masks with ``mask_rows``."""
    prm = borrowed(prm)
    for i in range(rows.shape[0]):
        row = borrowed(data[rows[i]])
        row[prm[L.O_SCORE]: prm[L.O_CREDIT]] = 0
        deal_from_order(row, prm, borrowed(orders[i]), np.int64(dealers[i]))  # int64 as from deal_next
        row[L.F_HAND_NO] = 0


@njit(cache=True, nogil=True)
def mask_rows(data, masks, prm, rows):
    """Recompute the masks of the listed rows (after a deal, or after a state was edited from
    Python, e.g. by a scenario). The only entry kernel besides ``step_kernel`` that links the
    legality solver: each one that does re-optimises all of it when compiled."""
    _, scratch = _buffers(prm)
    prm = borrowed(prm)
    for i in range(rows.shape[0]):
        prefetch_next(data, rows, i)
        fill_mask(borrowed(data[rows[i]]), prm, borrowed(masks[rows[i]]), borrowed(scratch))
