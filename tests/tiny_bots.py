"""A tiny outside agent for the tests that load agents by ``module:attribute`` and by entry point:
it plays the lowest legal action."""

from __future__ import annotations

from typing import Any

import numpy as np


class FirstLegal:
    name = "first_legal"

    def act(self, observations: Any, legal_action_mask: Any, rng: Any) -> np.ndarray:
        return np.asarray(legal_action_mask).argmax(axis=1).astype(np.int64)


def make_bot(rules: Any) -> FirstLegal:
    return FirstLegal()


def make_bot_without_rules() -> FirstLegal:
    return FirstLegal()


INSTANCE = FirstLegal()
NOT_AN_AGENT = 42


def broken(rules: Any) -> FirstLegal:
    raise RuntimeError("bot exploded")
