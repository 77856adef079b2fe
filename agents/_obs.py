"""Observation decoding shared by the rule-based agents.

An observation's pieces (``canasta_env.engine.observation.pieces``) are scaled floats whose shapes
depend on the table size, so an agent is built for a rules preset. ``ObsDecoder`` undoes the
scaling: ``decode(obs)`` returns an int32 array of the same shape whose entries are card counts,
seat sizes, scores in points and 0/1 flags, in the observation's own layout; ``offsets`` gives each
piece's start in the order of ``PIECE_ORDER`` so that compiled kernels receive it as an argument
(never as a global from another module: numba's cache would not notice a change here).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from canasta_env.engine.layout import (
    P_NOWNERS,
    P_NPLAYERS,
    P_NSIDES,
    pack_params,
)
from canasta_env.engine.observation import divisors, obs_dim, spans
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
        self.offsets = np.array([starts[name] for name in PIECE_ORDER], dtype=np.int64)

    def decode(self, observations: npt.ArrayLike) -> npt.NDArray[np.int32]:
        """``(B, D)`` float observations -> ``(B, D)`` int32 counts, sizes, points and flags."""
        obs = np.asarray(observations, dtype=np.float32)
        if obs.ndim != 2 or obs.shape[1] != self.obs_dim:
            raise ValueError(f"expected observations of shape (B, {self.obs_dim}) for "
                             f"{self.rules.name}, got {obs.shape}")
        return np.rint(obs * self.scale).astype(np.int32)
