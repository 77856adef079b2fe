"""Greedy agent: meld everything, take the pile whenever allowed, discard the least useful card.

Strategy (one decision at a time, from the observation and the legal-action mask only):

* **Draw phase**: take the pile whenever any take is legal (pair, then lay-off, then natural + two,
  then natural + joker); otherwise draw from the stock; with an empty stock, ``END_HAND``.
* **Meld phase**: play a legal meld action while there is one, best first: new meld of three
  naturals, then a natural added to a meld, then new melds with a wild (two before joker), then
  wilds added to melds (two before joker), then wild-only melds; among equals the highest card
  value first. It therefore goes out whenever the rules let it.
* **Discard**: black threes first (they can only be melded when going out, and a discarded black
  three stops the next player from taking the pile), then the singleton natural of lowest value,
  then pairs, then larger groups, then twos, jokers last.
* Answers "yes" when a partner asks to go out (ask-partner variants).

Deterministic: the rng is never used (ties go to the lowest action index).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from numba import njit

from agents._obs import ObsDecoder
from canasta_env.engine.actions import (
    ADD_JOKER,
    ADD_NATURAL,
    ADD_TWO,
    ANSWER_YES,
    DISCARD,
    DRAW_STOCK,
    END_HAND,
    MELD_NN2,
    MELD_NNJ,
    MELD_NNN,
    MELD_WILD,
    NUM_ACTIONS,
    TAKE_PILE_LAYOFF,
    TAKE_PILE_NAT_JOKER,
    TAKE_PILE_NAT_TWO,
    TAKE_PILE_PAIR,
)
from canasta_env.engine.cards import CARD_VALUES, SLOT_KIND
from canasta_env.rules import RuleSet


@njit(cache=True)
def greedy_kernel(g, mask, off):
    """One action per row of the decoded observations ``g`` (``ObsDecoder.decode``); ``off`` holds
    the piece offsets in ``PIECE_ORDER``. Rows without a legal action get -1."""
    o_hand = off[0]
    out = np.full(g.shape[0], -1, np.int64)
    takes = np.array([TAKE_PILE_PAIR, TAKE_PILE_LAYOFF, TAKE_PILE_NAT_TWO, TAKE_PILE_NAT_JOKER,
                      DRAW_STOCK, ANSWER_YES])
    for b in range(g.shape[0]):
        m = mask[b]
        first = -1
        for a in range(NUM_ACTIONS):
            if m[a]:
                first = a
                break
        if first < 0:
            continue
        choice = -1
        for a in takes:
            if m[a]:
                choice = a
                break
        if choice < 0:
            # meld actions: higher score first
            best = -1.0
            for slot in range(13):
                kind = SLOT_KIND[slot]
                v = 0.0
                if kind >= 0:
                    v = float(CARD_VALUES[kind])
                for base, pri in ((MELD_NNN, 6000.0), (ADD_NATURAL, 5000.0), (MELD_NN2, 4000.0),
                                  (MELD_NNJ, 3000.0), (ADD_TWO, 2000.0), (ADD_JOKER, 1000.0)):
                    if m[base + slot]:
                        score = pri + v
                        if score > best:
                            best = score
                            choice = base + slot
            for j in range(4):
                if m[MELD_WILD + j] and 500.0 > best:
                    best = 500.0
                    choice = MELD_WILD + j
        if choice < 0:
            best = 1e9
            for k in range(15):
                if not m[DISCARD + k]:
                    continue
                c = g[b, o_hand + k]
                if k == 3:  # black three
                    cost = 0.0
                elif k == 0:  # joker
                    cost = 2000.0
                elif k == 1:  # two
                    cost = 1000.0
                else:
                    cost = 100.0 * min(c, 4) + float(CARD_VALUES[k])
                if cost < best:
                    best = cost
                    choice = DISCARD + k
        if choice < 0 and m[END_HAND]:
            choice = END_HAND
        if choice < 0:
            choice = first
        out[b] = choice
    return out


class GreedyAgent:
    """Meld-everything baseline for one rules preset (see the module docstring)."""

    name = "greedy"
    needs_observations = True

    def __init__(self, rules: RuleSet | str) -> None:
        self.decoder = ObsDecoder(rules)
        self.rules = self.decoder.rules

    def act(self, observations: npt.NDArray[np.float32], legal_action_mask: npt.NDArray[np.bool_],
            rng: np.random.Generator | None = None) -> npt.NDArray[np.int64]:
        g, mask = self.decoder.inputs(observations, legal_action_mask, f"{self.name}: act")
        return greedy_kernel(g, mask, self.decoder.offsets)
