"""Counter-based random numbers for deals, keyed by a deal's address (docs/engine.md).

SplitMix64 over the key ``(seed, row, index, hand)``: pure integer arithmetic, so a deal is the same
on every platform and numpy build, costs no Python call, and never touches numba's global RNG.
``mix64_array`` is the same finaliser over numpy arrays, for the per-row streams agents draw from
(``canasta_env.policy.RowRandom``): one generator for the whole project.
"""

from __future__ import annotations

import warnings

import numpy as np
import numpy.typing as npt
from numba import config, njit

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
M1 = np.uint64(0xBF58476D1CE4E5B9)
M2 = np.uint64(0x94D049BB133111EB)

if getattr(config, "DISABLE_JIT", 0):  # the arithmetic below wraps by design; plain numpy warns when it does
    warnings.filterwarnings("ignore", "overflow encountered in scalar", RuntimeWarning, __name__)


@njit(cache=True, inline="always")
def mix64(z: np.uint64) -> np.uint64:
    """SplitMix64 finaliser: a bijective scramble of a 64-bit word."""
    z = (z ^ (z >> np.uint64(30))) * M1
    z = (z ^ (z >> np.uint64(27))) * M2
    return z ^ (z >> np.uint64(31))


def mix64_array(z: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """``mix64`` over a numpy array (plain numpy: wrapping uint64 arithmetic)."""
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * M1
        z = (z ^ (z >> np.uint64(27))) * M2
    return z ^ (z >> np.uint64(31))


@njit(cache=True, inline="always")
def _low32(x: int) -> np.uint64:
    """The low 32 bits of an integer of any width and sign (widened first, so that plain numpy
    under ``NUMBA_DISABLE_JIT=1`` does not refuse the mask on an int32)."""
    return np.uint64(np.int64(x) & np.int64(0xFFFFFFFF))


@njit(cache=True)
def deal_key(seed_lo: int, seed_hi: int, row: int, index: int, hand: int) -> np.uint64:
    """Stream key of one hand of one deal address."""
    seed = (_low32(seed_hi) << np.uint64(32)) | _low32(seed_lo)
    k = mix64(seed + GOLDEN)
    k = mix64(k ^ (_low32(row) + GOLDEN))
    k = mix64(k ^ (_low32(index) * M1 + GOLDEN))
    return mix64(k ^ (_low32(hand) * M2 + GOLDEN))


@njit(cache=True, inline="always")
def next_below(key: np.uint64, counter: int, n: int) -> np.int64:
    """The ``counter``-th draw of the stream ``key``, uniform in [0, n) (Lemire's multiply-shift)."""
    x = mix64(key + np.uint64(counter + 1) * GOLDEN)
    return np.int64(((x >> np.uint64(32)) * np.uint64(n)) >> np.uint64(32))
