"""Running a batch kernel over its rows on several threads (``State.threads``).

The entry kernels release the GIL (``nogil``) and each touches only the rows it is given, so a batch
split into disjoint chunks of rows runs on several cores with exactly the result of one serial call.
Serial is the default: training keeps the second core for the learner, and small batches lose more
to the hand-off than they gain.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

MIN_ROWS_PER_THREAD = 128  # below this a chunk costs more to hand off than it saves

_pools: dict[int, ThreadPoolExecutor] = {}
# a forked child inherits the pools but not their threads: they would never run its work
os.register_at_fork(after_in_child=_pools.clear)


def check_threads(value: object, where: str) -> int:
    """``value`` as a thread count >= 1, else ``ValueError`` naming ``where`` ("init: threads")."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{where} must be an integer >= 1, got {value!r}")
    return int(value)


def run_rows(threads: int, kernel: Callable[..., Any], shared: tuple[Any, ...],
             per_row: tuple[np.ndarray, ...]) -> Any:
    """``kernel(*shared, *per_row)``, split into up to ``threads`` calls on consecutive chunks of the
    ``per_row`` arrays (all indexed like the rows, outputs written in place); returns the sum of the
    calls' results (a count, for kernels that return one)."""
    n = per_row[0].shape[0]
    k = 1 if threads == 1 else min(threads, n // MIN_ROWS_PER_THREAD)  # serial: nothing to work out
    if k <= 1:
        return kernel(*shared, *per_row)
    pool = _pools.get(k)
    if pool is None:
        pool = _pools[k] = ThreadPoolExecutor(k - 1, thread_name_prefix="canasta-engine")
    cuts = np.linspace(0, n, k + 1).astype(np.int64)
    chunks = [tuple(a[lo:hi] for a in per_row) for lo, hi in zip(cuts[:-1], cuts[1:], strict=True)]
    futures: list[Future[Any]] = [pool.submit(kernel, *shared, *c) for c in chunks[1:]]
    first = kernel(*shared, *chunks[0])  # the calling thread takes the first chunk
    rest = [f.result() for f in futures]
    return None if first is None else first + sum(rest)
