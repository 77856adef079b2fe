"""Agents that fail on demand, for the tests of how play and the web table report a failing agent:
it raises, returns None, an illegal or an out-of-range action, or floats (legal + 0.7, which
``int()`` used to truncate into a legal move)."""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

# mode -> what the one-line error says
FAILURES = {
    "boom": "act() raised RuntimeError: boom from agent",
    "none": "act(): actions must be a 1-D sequence of integers, got None",
    "illegal": "which is not legal now; legal: ",
    "oor": "act() chose action 1000000 (out of range), which is not legal now",
    "float": "act(): actions must hold integers, got dtype float64",
}


class Boom:
    """Plays its first legal move while ``mode`` is "ok" and for its first ``after`` calls, then
    fails as ``mode`` says (each call after ``delay`` seconds)."""

    name = "boom"

    def __init__(self, mode: str = "ok", after: int = 0, delay: float = 0.0) -> None:
        self.mode, self.after, self.delay, self.calls = mode, after, delay, 0

    def act(self, obs: Any, mask: Any, rng: Any) -> Any:
        time.sleep(self.delay)
        self.calls += 1
        mask = np.asarray(mask)
        legal = np.array([int(np.flatnonzero(m)[0]) for m in mask])
        if self.mode == "ok" or self.calls <= self.after:
            return legal
        if self.mode == "boom":
            raise RuntimeError("boom from agent")
        if self.mode == "none":
            return None
        if self.mode == "illegal":
            return np.array([int(np.flatnonzero(~m)[0]) for m in mask])
        if self.mode == "oor":
            return np.full(len(mask), 10**6)
        return legal + 0.7


def from_environment(rules: Any = None) -> Boom:
    """A ``Boom`` failing as ``BOOM_MODE`` says after ``BOOM_AFTER`` good moves (for a CLI run)."""
    return Boom(os.environ.get("BOOM_MODE", "ok"), int(os.environ.get("BOOM_AFTER", "0")))
