"""Two-player Kuhn poker, solved exactly, and sampled self-play on it with the MMD loss.

Why: Kuhn poker is the smallest poker with a known equilibrium (game value -1/18 for the first
player), so an equilibrium-seeking update can be checked against exact numbers before it goes into
the Canasta trainer. Everything here is exact enumeration (numpy) except the learner, which only
sees sampled episodes, exactly as the Canasta trainer would.

The game: a deck of J, Q, K (cards 0, 1, 2); each player antes 1 and gets one card. Player 0 acts
first: pass or bet 1. After a pass player 1 may pass (showdown for 1) or bet; then player 0 folds
(loses 1) or calls (showdown for 2). After a bet player 1 folds (loses 1) or calls (showdown for 2).

A policy is a ``(12, 2)`` array of action probabilities (action 0 pass/check/fold, 1 bet/call), one
row per information set (``infoset``): rows 0-5 player 0 (card * 2 + 0 at the start, + 1 after
pass-bet), rows 6-11 player 1 (6 + card * 2 + 0 after a pass, + 1 after a bet). Best responses are
exact: a best response exists among the 2^6 pure strategies of a player, and all 64 are evaluated.
"""

from __future__ import annotations

import math
import numbers
import time
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import torch

from train.learning.mmd import Magnet, MMDConfig, magnet_kl, masked_log_probs

__all__ = ["GAME_VALUE", "INFOSET_NAMES", "NUM_ACTIONS", "NUM_INFOSETS", "Episodes", "SelfPlayConfig",
           "SelfPlayResult", "TabularPolicy", "best_response_values", "equilibrium_policy", "expected_value",
           "exploitability", "infoset", "nash_conv", "sample_episodes", "selfplay", "uniform_policy"]

NUM_INFOSETS = 12
NUM_ACTIONS = 2
PASS, BET = 0, 1
GAME_VALUE = -1.0 / 18.0  # player 0's value at every equilibrium
CARDS = "JQK"
_HISTORIES = (("", "pb"), ("p", "b"))  # per player: the histories at its information sets

DEAL_C0 = np.array([c0 for c0 in range(3) for c1 in range(3) if c0 != c1])
DEAL_C1 = np.array([c1 for c0 in range(3) for c1 in range(3) if c0 != c1])
_SIGN = np.sign(DEAL_C0 - DEAL_C1).astype(np.float64)  # +1 where player 0 holds the higher card


def infoset(player: int, card: int, history: str) -> int:
    """Row of the information set where ``player`` holds ``card`` after ``history`` ("", "pb" for
    player 0; "p", "b" for player 1)."""
    return 6 * player + 2 * card + _HISTORIES[player].index(history)


INFOSET_NAMES = [f"{p}:{CARDS[c]}{h}" for p in range(2) for c in range(3) for h in _HISTORIES[p]]


def uniform_policy() -> npt.NDArray[np.float64]:
    """Every action with probability 1/2."""
    return np.full((NUM_INFOSETS, NUM_ACTIONS), 0.5)


def equilibrium_policy(alpha: float = 0.0) -> npt.NDArray[np.float64]:
    """A Nash equilibrium (Kuhn, 1950): player 0 bets J with probability ``alpha`` in [0, 1/3], K
    with 3 alpha, checks Q and calls pass-bet with Q with alpha + 1/3; player 1 bets J after a pass
    with 1/3, calls a bet with Q with 1/3, and always bets/calls with K."""
    if not 0 <= alpha <= 1 / 3:
        raise ValueError(f"alpha must be in [0, 1/3], got {alpha!r}")
    bet = {infoset(0, 0, ""): alpha, infoset(0, 0, "pb"): 0.0,
           infoset(0, 1, ""): 0.0, infoset(0, 1, "pb"): alpha + 1 / 3,
           infoset(0, 2, ""): 3 * alpha, infoset(0, 2, "pb"): 1.0,
           infoset(1, 0, "p"): 1 / 3, infoset(1, 0, "b"): 0.0,
           infoset(1, 1, "p"): 0.0, infoset(1, 1, "b"): 1 / 3,
           infoset(1, 2, "p"): 1.0, infoset(1, 2, "b"): 1.0}
    policy = np.empty((NUM_INFOSETS, NUM_ACTIONS))
    for row, b in bet.items():
        policy[row] = (1 - b, b)
    return policy


def _check(policy: npt.ArrayLike) -> npt.NDArray[np.float64]:
    p = np.asarray(policy, dtype=np.float64)
    if p.shape[-2:] != (NUM_INFOSETS, NUM_ACTIONS):
        raise ValueError(f"a Kuhn policy is (..., {NUM_INFOSETS}, {NUM_ACTIONS}), got shape {p.shape}")
    if (p < 0).any() or not np.allclose(p.sum(axis=-1), 1.0):
        raise ValueError("a Kuhn policy's rows must be probability distributions")
    return p


def _expected_values(p: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Player 0's expected payoff of profile(s) ``p`` (..., 12, 2): the game tree written out,
    averaged over the 6 equally likely deals."""
    start = p[..., 2 * DEAL_C0, :]          # player 0, first decision
    after_pb = p[..., 2 * DEAL_C0 + 1, :]   # player 0 after pass-bet
    after_p = p[..., 6 + 2 * DEAL_C1, :]    # player 1 after a pass
    after_b = p[..., 7 + 2 * DEAL_C1, :]    # player 1 after a bet
    s = _SIGN
    passed = after_p[..., PASS] * s + after_p[..., BET] * (-after_pb[..., PASS] + after_pb[..., BET] * 2 * s)
    bet = after_b[..., PASS] * 1.0 + after_b[..., BET] * 2 * s
    return (start[..., PASS] * passed + start[..., BET] * bet).mean(axis=-1)


def expected_value(policy: npt.ArrayLike) -> float:
    """Player 0's expected payoff when both players follow ``policy`` (player 1's is its negative)."""
    return float(_expected_values(_check(policy)))


_PURE = np.stack([np.eye(NUM_ACTIONS)[[(k >> i) & 1 for i in range(6)]] for k in range(2 ** 6)])  # (64, 6, 2)


def best_response_values(policy: npt.ArrayLike) -> tuple[float, float]:
    """Each player's expected payoff from a best response to the other's part of ``policy``."""
    p = _check(policy)
    profiles = np.repeat(p[None], len(_PURE), axis=0)
    profiles[:, :6] = _PURE
    br0 = _expected_values(profiles).max()
    profiles = np.repeat(p[None], len(_PURE), axis=0)
    profiles[:, 6:] = _PURE
    br1 = -_expected_values(profiles).min()
    return float(br0), float(br1)


def nash_conv(policy: npt.ArrayLike) -> float:
    """Sum over both players of what a best response gains over ``policy`` (0 at an equilibrium)."""
    br0, br1 = best_response_values(policy)
    return br0 + br1  # the two players' values under ``policy`` sum to 0


def exploitability(policy: npt.ArrayLike) -> float:
    """``nash_conv / 2``, OpenSpiel's ``exploitability`` (0.4583... for the uniform policy)."""
    return nash_conv(policy) / 2


class TabularPolicy(torch.nn.Module):
    """A softmax policy with one logit per (information set, action): ``forward(rows)`` returns the
    ``(B, 2)`` logits of the information sets ``rows``. Starts uniform."""

    def __init__(self) -> None:
        super().__init__()
        self.logits = torch.nn.Parameter(torch.zeros(NUM_INFOSETS, NUM_ACTIONS, dtype=torch.float64))

    def forward(self, rows: torch.Tensor) -> torch.Tensor:
        return self.logits[rows]

    def probabilities(self) -> npt.NDArray[np.float64]:
        """The ``(12, 2)`` policy as numpy probabilities."""
        with torch.no_grad():
            return torch.softmax(self.logits, dim=1).numpy().astype(np.float64)


@dataclass
class Episodes:
    """Decision rows of sampled episodes: information set, action taken, and the final payoff of the
    player who acted."""

    rows: npt.NDArray[np.int64]
    actions: npt.NDArray[np.int64]
    returns: npt.NDArray[np.float64]


def sample_episodes(policy: npt.NDArray[np.float64], n: int, rng: np.random.Generator) -> Episodes:
    """``n`` self-play episodes with both players on ``policy`` (12, 2)."""
    deal = rng.integers(0, 6, size=n)
    c0, c1 = DEAL_C0[deal], DEAL_C1[deal]
    s = _SIGN[deal]
    u = rng.random((3, n))
    bet = policy[:, BET]
    i0 = 2 * c0
    a0 = (u[0] < bet[i0]).astype(np.int64)
    i1 = np.where(a0 == BET, 7 + 2 * c1, 6 + 2 * c1)
    a1 = (u[1] < bet[i1]).astype(np.int64)
    i2 = 2 * c0 + 1
    a2 = (u[2] < bet[i2]).astype(np.int64)
    third = (a0 == PASS) & (a1 == BET)
    g0 = np.where(a0 == BET, np.where(a1 == PASS, 1.0, 2 * s),
                  np.where(a1 == PASS, s, np.where(a2 == PASS, -1.0, 2 * s)))
    return Episodes(rows=np.concatenate([i0, i1, i2[third]]),
                    actions=np.concatenate([a0, a1, a2[third]]),
                    returns=np.concatenate([g0, -g0, g0[third]]))


@dataclass(frozen=True)
class SelfPlayConfig:
    """Sampled self-play on Kuhn poker: ``iterations`` rounds of ``episodes`` episodes, then
    ``epochs`` passes of minibatch (``minibatch`` rows) PPO-style updates with SGD at ``lr``,
    PPO clip ``clip``, plus the magnet term of ``mmd``. Advantages are the return minus the batch's
    mean return in the same information set (not normalised, so alpha is in payoff units). The magnet
    counts one update per iteration (as one rollout's update in the lean trainer)."""

    mmd: MMDConfig = field(default_factory=lambda: MMDConfig(magnet_coef=0.5, magnet_every=50))
    iterations: int = 2000
    episodes: int = 1024
    epochs: int = 1
    minibatch: int = 1024
    lr: float = 1.0
    clip: float = 0.2
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("iterations", "episodes", "epochs", "minibatch", "seed"):
            low = 0 if name in ("iterations", "seed") else 1
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        # an infinite lr turns the logits into NaN at the first step, which only shows one iteration later
        if not (math.isfinite(self.lr) and self.lr > 0 and self.clip > 0):
            raise ValueError(f"lr must be finite and > 0 and clip > 0, got {self.lr!r} and {self.clip!r}")


@dataclass
class SelfPlayResult:
    """Exact exploitability of the learner's last iterate after each iteration (index 0: before
    training), the final policy and the wall time."""

    exploitability: list[float]
    policy: npt.NDArray[np.float64]
    seconds: float


def selfplay(config: SelfPlayConfig) -> SelfPlayResult:
    """Train a ``TabularPolicy`` against itself from sampled episodes with the MMD loss (the
    clipped surrogate plus ``magnet_coef * magnet_kl``, as ``train.learning.mmd`` writes it out)
    and record its exact exploitability after every iteration. A pure function of ``config``; runs
    on one torch thread."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the tensors are tiny: more threads only add synchronisation
    try:
        return _selfplay(config)
    finally:
        torch.set_num_threads(threads)


def _selfplay(config: SelfPlayConfig) -> SelfPlayResult:
    start = time.perf_counter()
    rng = np.random.default_rng(config.seed)
    gen = torch.Generator().manual_seed(config.seed)
    policy = TabularPolicy()
    optimizer = torch.optim.SGD(policy.parameters(), lr=config.lr)
    magnet = Magnet(policy, config.mmd)
    alpha = config.mmd.magnet_coef
    curve = [exploitability(policy.probabilities())]
    for _ in range(config.iterations):
        probs = policy.probabilities()
        ep = sample_episodes(probs, config.episodes, rng)
        counts = np.bincount(ep.rows, minlength=NUM_INFOSETS)
        baseline = np.bincount(ep.rows, weights=ep.returns, minlength=NUM_INFOSETS) / np.maximum(counts, 1)
        rows = torch.from_numpy(ep.rows)
        actions = torch.from_numpy(ep.actions)
        adv = torch.from_numpy(ep.returns - baseline[ep.rows])
        old_logp = torch.from_numpy(np.log(probs[ep.rows, ep.actions]))
        masks = torch.ones(len(rows), NUM_ACTIONS, dtype=torch.bool)  # every Kuhn action is always legal
        n = len(rows)
        for _ in range(config.epochs):
            order = torch.randperm(n, generator=gen)
            for first in range(0, n, config.minibatch):
                idx = order[first:first + config.minibatch]
                size = len(idx)
                logp_all = masked_log_probs(policy(rows[idx]), masks[idx])
                logp = logp_all.gather(1, actions[idx, None]).squeeze(1)
                ratio = (logp - old_logp[idx]).exp()
                a = adv[idx]
                loss = -torch.min(a * ratio, a * ratio.clamp(1 - config.clip, 1 + config.clip)).sum() / size
                if alpha > 0:
                    with torch.no_grad():
                        magnet_logp_all = masked_log_probs(magnet.module(rows[idx]), masks[idx])
                    loss = loss + alpha * magnet_kl(logp_all, magnet_logp_all, masks[idx]).sum() / size
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        magnet.update(policy)
        curve.append(exploitability(policy.probabilities()))
    return SelfPlayResult(exploitability=curve, policy=policy.probabilities(),
                          seconds=time.perf_counter() - start)
