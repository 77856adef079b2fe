"""The engine's legal-action mask equals the independent oracle (tests/oracle.py) on sampled states.

States come from random games played by the engine itself: uniform random legal actions, and a
"meld-eager" policy that prefers takes, melds and additions (probability 0.8) so that minimums,
going out and concealed hands come up often. ``CANASTA_ORACLE_STATES`` (default 1000) states are
compared per preset and variant, half from each policy.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator

import numpy as np
import pytest

from canasta_env.engine import ACTION_NAMES, init, reset_rows, step
from canasta_env.engine.core import State
from canasta_env.engine.render import render
from canasta_env.rules import RuleSet, load_rules
from tests.oracle import legal_action_names

STATES = int(os.environ.get("CANASTA_ORACLE_STATES", "1000"))
BATCH = 64
SAMPLE_P = 0.05  # chance that a live row's state is compared at a given step

_EAGER = np.array([n.startswith(("TAKE_PILE", "MELD_", "ADD_")) for n in ACTION_NAMES])


def _choose(mask: np.ndarray, rng: np.random.Generator, eager: bool) -> np.ndarray:
    keys = np.where(mask, rng.random(mask.shape), -1.0)
    if eager:
        pref = mask & _EAGER
        use = pref.any(axis=1) & (rng.random(mask.shape[0]) < 0.8)
        keys[use] = np.where(pref[use], keys[use] + 1.0, keys[use])
    return keys.argmax(axis=1)


def sample_states(rules: RuleSet, n: int, eager: bool, seed: int
                  ) -> Iterator[tuple[State, int, list[str]]]:
    """Yield (state, row, actions of this hand so far) for ``n`` sampled live states."""
    rng = np.random.default_rng(seed)
    state = init(rules, BATCH, seed=seed)
    history: list[list[str]] = [[] for _ in range(BATCH)]
    done = 0
    while done < n:
        live = ~(state.terminated | state.truncated)
        picks = np.flatnonzero(live & (rng.random(BATCH) < SAMPLE_P))
        for b in picks:
            yield state, int(b), history[b]
            done += 1
            if done >= n:
                return
        actions = _choose(state.legal_action_mask, rng, eager)
        for b in range(BATCH):
            history[b].append(ACTION_NAMES[actions[b]])
        step(state, actions)
        ended = np.flatnonzero(state.terminated | state.truncated)
        if ended.size:
            reset_rows(state, ended)
            for b in ended:
                history[b] = []


def compare(rules: RuleSet, n: int, seed: int) -> Counter[str]:
    """Compare oracle and mask on ``n`` states; returns coverage counts (phase, action ranges)."""
    coverage: Counter[str] = Counter()
    for eager in (False, True):
        for state, b, hist in sample_states(rules, n // 2 if eager else n - n // 2, eager, seed):
            engine = {ACTION_NAMES[a] for a in state.legal_actions(b)}
            oracle = legal_action_names(state, b)
            if engine != oracle:
                pytest.fail(
                    f"oracle != engine mask for {rules.name} "
                    f"(deal {tuple(state.deal_id(b))}, eager={eager}, decision "
                    f"{len(hist)})\n{render(state, b)}\n"
                    f"only engine: {sorted(engine - oracle)}\n"
                    f"only oracle: {sorted(oracle - engine)}\n"
                    f"actions this hand: {' '.join(hist)}")
            coverage[f"phase{int(state.phase[b])}"] += 1
            for name in engine:
                coverage[name.rsplit("_", 1)[0] if name.startswith(("MELD", "ADD", "DISCARD"))
                         else name] += 1
    return coverage


@pytest.mark.parametrize("preset", ["classic_2p", "classic_3p", "classic_4p"])
def test_mask_matches_oracle(preset: str) -> None:
    compare(load_rules(preset), STATES, seed=101)


def test_mask_matches_oracle_ask_partner() -> None:
    coverage = compare(load_rules("classic_4p", ask_partner=True), STATES, seed=202)
    if STATES >= 1000:
        assert coverage["ASK_PARTNER"] > 0, coverage


def test_mask_matches_oracle_forced_if_legal() -> None:
    compare(load_rules("classic_2p", exhausted_stock_take="forced_if_legal"), STATES, seed=303)
