"""Counter-based random numbers for deals, keyed by a deal's address (docs/engine.md).

SplitMix64 over the key ``(seed, row, index, hand)``: pure integer arithmetic, so a deal is the same
on every platform and numpy build, costs no Python call, and never touches numba's global RNG.
"""

from __future__ import annotations

import warnings

import numpy as np
from numba import config, njit

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)

if getattr(config, "DISABLE_JIT", 0):  # the arithmetic below wraps by design; plain numpy warns when it does
    warnings.filterwarnings("ignore", "overflow encountered in scalar", RuntimeWarning, __name__)


@njit(cache=True, inline="always")
def mix64(z: np.uint64) -> np.uint64:
    """SplitMix64 finaliser: a bijective scramble of a 64-bit word."""
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
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
    k = mix64(seed + _GOLDEN)
    k = mix64(k ^ (_low32(row) + _GOLDEN))
    k = mix64(k ^ (_low32(index) * _M1 + _GOLDEN))
    return mix64(k ^ (_low32(hand) * _M2 + _GOLDEN))


@njit(cache=True, inline="always")
def next_below(key: np.uint64, counter: int, n: int) -> np.int64:
    """The ``counter``-th draw of the stream ``key``, uniform in [0, n) (Lemire's multiply-shift)."""
    x = mix64(key + np.uint64(counter + 1) * _GOLDEN)
    return np.int64(((x >> np.uint64(32)) * np.uint64(n)) >> np.uint64(32))
