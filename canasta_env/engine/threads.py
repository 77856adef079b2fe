"""Running a batch kernel over its rows on several cores (``State.threads``).

Each entry kernel has a parallel twin here that cuts the rows into consecutive chunks and runs the
kernel on each chunk in a numba ``prange`` loop. Each row is touched by one chunk only, so the
result is exactly that of one serial call. A numba launch costs a few microseconds where a Python
thread pool's hand-off cost about 90 (2-core AMD EPYC), which is what a batch of 1,024 rows can
spare. Serial is the default: training keeps the second core for the learner, and small batches
lose more to the hand-off than they gain.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
from numba import njit, prange

from canasta_env.engine import kernels
from canasta_env.engine.observation import observe_kernel

MIN_ROWS_PER_THREAD = 128  # below this a chunk costs more to hand off than it saves

# numba's workqueue threading layer aborts the process on two launches at once
_launch = threading.Lock()
_launched = False
_forked_after_launch = False


def _after_fork_in_child() -> None:
    """GNU OpenMP (numba's omp layer) aborts a forked child that launches after its parent did: such
    a child runs every kernel serially, with the same results."""
    global _forked_after_launch
    _forked_after_launch = _forked_after_launch or _launched


os.register_at_fork(after_in_child=_after_fork_in_child)


def check_threads(value: object, where: str) -> int:
    """``value`` as a thread count >= 1, else ``ValueError`` naming ``where`` ("init: threads")."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{where} must be an integer >= 1, got {value!r}")
    return int(value)


@njit(cache=True, inline="always")
def _cut(n, chunks, c):
    return c * n // chunks, (c + 1) * n // chunks


@njit(cache=True, nogil=True, parallel=True)
def _step(chunks, data, masks, prm, rows, actions, rewards, illegal, terminated, truncated, events):
    dead_ends = 0
    for c in prange(chunks):
        lo, hi = _cut(rows.shape[0], chunks, c)
        dead_ends += kernels.step_kernel(data, masks, prm, rows[lo:hi], actions[lo:hi], rewards[lo:hi],
                                         illegal[lo:hi], terminated[lo:hi], truncated[lo:hi], events[lo:hi])
    return dead_ends


@njit(cache=True, nogil=True, parallel=True)
def _mask(chunks, data, masks, prm, rows):
    for c in prange(chunks):
        lo, hi = _cut(rows.shape[0], chunks, c)
        kernels.mask_rows(data, masks, prm, rows[lo:hi])


@njit(cache=True, nogil=True, parallel=True)
def _deal(chunks, data, prm, rows, seed_lo, seed_hi, deal_rows, deal_index, events):
    for c in prange(chunks):
        lo, hi = _cut(rows.shape[0], chunks, c)
        kernels.deal_kernel(data, prm, rows[lo:hi], seed_lo[lo:hi], seed_hi[lo:hi], deal_rows[lo:hi],
                            deal_index[lo:hi], events[lo:hi])


@njit(cache=True, nogil=True, parallel=True)
def _explicit_deal(chunks, data, prm, rows, orders, dealers):
    for c in prange(chunks):
        lo, hi = _cut(rows.shape[0], chunks, c)
        kernels.explicit_deal_kernel(data, prm, rows[lo:hi], orders[lo:hi], dealers[lo:hi])


@njit(cache=True, nogil=True, parallel=True)
def _observe(chunks, data, prm, div, rows, players, out):
    for c in prange(chunks):
        lo, hi = _cut(rows.shape[0], chunks, c)
        observe_kernel(data, prm, div, rows[lo:hi], players[lo:hi], out[lo:hi])


PARALLEL: dict[Callable[..., Any], Callable[..., Any]] = {
    kernels.step_kernel: _step, kernels.mask_rows: _mask, kernels.deal_kernel: _deal,
    kernels.explicit_deal_kernel: _explicit_deal, observe_kernel: _observe,
}


def run_rows(threads: int, kernel: Callable[..., Any], shared: tuple[Any, ...],
             per_row: tuple[np.ndarray, ...]) -> Any:
    """``kernel(*shared, *per_row)``, its rows split into up to ``threads`` consecutive chunks run
    on as many cores (all ``per_row`` arrays are indexed like the rows, outputs written in place);
    returns the kernel's result (a count, for kernels that return one)."""
    n = per_row[0].shape[0]
    k = 1 if threads == 1 else min(threads, n // MIN_ROWS_PER_THREAD)  # serial: nothing to work out
    if k <= 1 or _forked_after_launch:
        return kernel(*shared, *per_row)
    global _launched
    with _launch:
        numba.set_num_threads(min(k, numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]
        _launched = True
        return PARALLEL[kernel](k, *shared, *per_row)
