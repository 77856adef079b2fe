"""Ratings and tests for tournaments: Bradley-Terry/Davidson maximum likelihood, deal bootstrap,
sign-flip permutation tests with Holm correction, and the deals needed to separate two entrants.

Everything works on per-deal arrays (one column per deal), so a bootstrap that resamples deals keeps
each duplicate set (all seatings of a deal) together, and all pairs share the resampled deals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import numpy.typing as npt

ELO = 400.0 / np.log(10.0)  # logit -> Elo-scale points
PRIOR_SD = 10.0  # logits; a weak Gaussian prior only matters when an entrant never wins or never loses


@dataclass(frozen=True)
class PairData:
    """Per-deal outcomes of entrant ``i`` against entrant ``j`` (all games of a deal summed)."""

    i: int
    j: int
    wins: npt.NDArray[np.float64]  # (D,) games i won on each deal
    ties: npt.NDArray[np.float64]
    losses: npt.NDArray[np.float64]
    margin_sum: npt.NDArray[np.float64]  # (D,) sum over the deal's games of i's score - j's score
    luck_sum: npt.NDArray[np.float64] | None = None  # (D,) i's luck - j's luck, points (luck-corrected runs)
    luck_win_sum: npt.NDArray[np.float64] | None = None  # (D,) the same in the win indicator

    @property
    def games(self) -> npt.NDArray[np.float64]:
        return self.wins + self.ties + self.losses

    @property
    def played(self) -> npt.NDArray[np.bool_]:
        return self.games > 0


def fit_davidson(wins: npt.NDArray[np.float64], ties: npt.NDArray[np.float64],
                 losses: npt.NDArray[np.float64], pairs: npt.NDArray[np.int64], k: int,
                 iterations: int = 100) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Davidson (Bradley-Terry with ties) fit of ``k`` strengths, for R count sets at once.

    ``wins[r, p]`` = games ``pairs[p, 0]`` won against ``pairs[p, 1]`` in count set r (ties, losses
    likewise). P(i beats j) = e^a / (e^a + e^b + nu e^((a+b)/2)), P(tie) = nu e^((a+b)/2) / (...).
    Returns (R, k) log-strengths centred at mean 0 and (R,) log nu. The log-likelihood is concave
    in (strengths, log nu); Newton's method with a step cap converges in a few iterations.
    """
    wins, ties, losses = (np.atleast_2d(np.asarray(x, dtype=np.float64)) for x in (wins, ties, losses))
    r_count, n_pairs = wins.shape
    dim = k + 1  # strengths, then log nu
    feat = np.zeros((n_pairs, 3, dim))  # feature vector of each outcome's logit: i wins, j wins, tie
    idx = np.arange(n_pairs)
    feat[idx, 0, pairs[:, 0]] = 1.0
    feat[idx, 1, pairs[:, 1]] = 1.0
    feat[idx, 2, pairs[:, 0]] += 0.5
    feat[idx, 2, pairs[:, 1]] += 0.5
    feat[:, 2, k] = 1.0
    counts = np.stack([wins, losses, ties], axis=2)  # (R, P, 3) in feature order
    n = counts.sum(axis=2)  # (R, P)
    observed = np.einsum("rpc,pcd->rd", counts, feat)
    x = np.zeros((r_count, dim))
    eye = np.eye(dim) / PRIOR_SD**2
    for _ in range(iterations):
        logits = np.einsum("pcd,rd->rpc", feat, x)
        logits -= logits.max(axis=2, keepdims=True)
        prob = np.exp(logits)
        prob /= prob.sum(axis=2, keepdims=True)
        mean_feat = np.einsum("rpc,pcd->rpd", prob, feat)  # (R, P, dim)
        grad = observed - np.einsum("rp,rpd->rd", n, mean_feat) - x / PRIOR_SD**2
        second = np.einsum("rp,rpc,pcd,pce->rde", n, prob, feat, feat)
        outer = np.einsum("rp,rpd,rpe->rde", n, mean_feat, mean_feat)
        hess = -(second - outer) - eye  # negative definite
        stepv = np.linalg.solve(-hess, grad[:, :, None])[:, :, 0]
        norm = np.abs(stepv).max(axis=1, keepdims=True)
        stepv *= np.minimum(1.0, 2.0 / np.maximum(norm, 1e-300))
        x += stepv
        if float(norm.max()) < 1e-9:
            break
    theta = x[:, :k] - x[:, :k].mean(axis=1, keepdims=True)
    return theta, x[:, k]


# deals x resamples: the bootstrap draws a (resamples, deals) table of weights, three copies at once
# (10**8: about 2.5 GB; 10,000 deals at 100,000 resamples wanted 25 GB after every game was played)
MAX_BOOTSTRAP = 10**8


def check_bootstrap(deals: int, resamples: int, deals_flag: str) -> None:
    """Refuse, before any game, a bootstrap of ``deals`` x ``resamples`` past ``MAX_BOOTSTRAP``
    (``ValueError`` naming ``deals_flag`` and ``--resamples``): its weights would not fit in memory,
    and that was found only after every game was played."""
    if deals * resamples > MAX_BOOTSTRAP:
        raise ValueError(f"{deals_flag} with --resamples {resamples}: the bootstrap would hold "
                         f"{deals * resamples:,} weights ({deals * resamples * 24 / 2**30:.1f} GiB); keep "
                         f"deals x resamples at most {MAX_BOOTSTRAP:,}")


def resample_weights(num_deals: int, resamples: int, seed: int) -> npt.NDArray[np.float64]:
    """(resamples, num_deals) multiplicity of each deal in each bootstrap resample."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(num_deals, np.full(num_deals, 1.0 / num_deals), size=resamples).astype(np.float64)


@dataclass
class Ratings:
    """Elo-scale ratings (mean 0) with bootstrap percentile intervals."""

    rating: npt.NDArray[np.float64]
    lo: npt.NDArray[np.float64]
    hi: npt.NDArray[np.float64]
    tie_nu: float  # Davidson's tie parameter


def bt_ratings(pairs: list[PairData], k: int, resamples: int = 2000, seed: int = 0,
               level: float = 0.95, chunk: int = 250) -> Ratings:
    """Davidson ratings of ``k`` entrants from ``pairs``, intervals from resampling deals (NaN from
    a single deal)."""
    index = np.array([[p.i, p.j] for p in pairs], dtype=np.int64)
    w = np.stack([p.wins for p in pairs])
    t = np.stack([p.ties for p in pairs])
    ls = np.stack([p.losses for p in pairs])
    theta, log_nu = fit_davidson(w.sum(1)[None], t.sum(1)[None], ls.sum(1)[None], index, k)
    boot = []
    weights = resample_weights(w.shape[1], resamples, seed)
    for start in range(0, resamples, chunk):
        c = weights[start:start + chunk]
        boot.append(fit_davidson(c @ w.T, c @ t.T, c @ ls.T, index, k)[0])
    samples = np.concatenate(boot) * ELO
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(samples, [tail, 100.0 - tail], axis=0)
    if w.shape[1] < 2:  # every resample is the one deal: no spread, not a zero-width interval
        lo, hi = np.full(k, np.nan), np.full(k, np.nan)
    return Ratings(theta[0] * ELO, lo, hi, float(np.exp(log_nu[0])))


def bootstrap_mean_ci(values: npt.NDArray[np.float64], weights: npt.NDArray[np.float64],
                      level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of the mean of per-deal ``values`` over resample ``weights``; NaN from
    fewer than two deals (every resample is the one deal: a 95% interval of zero width was claimed
    from one deal's outcome)."""
    if values.size < 2:
        return float("nan"), float("nan")
    means = weights @ values / values.size
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(means, [tail, 100.0 - tail])
    return float(lo), float(hi)


def sign_flip_pvalue(diffs: npt.NDArray[np.float64], permutations: int = 10_000, seed: int = 0,
                     chunk: int = 1000) -> float:
    """Two-sided p-value of mean(diffs) = 0 against sign-flipped copies (H0: each deal's margin is
    symmetric about zero, as when the seats could be swapped without changing anything)."""
    x = np.asarray(diffs, dtype=np.float64)
    observed = abs(x.mean())
    rng = np.random.default_rng(seed)
    extreme = 0
    for start in range(0, permutations, chunk):
        size = min(chunk, permutations - start)
        signs = rng.integers(0, 2, size=(size, x.size)) * 2.0 - 1.0
        extreme += int(np.sum(np.abs(signs @ x) / x.size >= observed - 1e-12))
    return (extreme + 1) / (permutations + 1)


def holm(pvalues: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Holm-Bonferroni adjusted p-values (family-wise error control across pairs)."""
    p = np.asarray(pvalues, dtype=np.float64)
    order = np.argsort(p)
    m = p.size
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adjusted[i] = running
    return adjusted


def deals_to_separate(deal_margins: npt.NDArray[np.float64], target_margin: float,
                      alpha: float = 0.05, power: float = 0.8) -> int | None:
    """Deals needed for a two-sided level-``alpha`` test to detect a true mean margin of
    ``target_margin`` with probability ``power``, at the per-deal spread measured here; None from
    fewer than two deals (no spread to measure)."""
    if target_margin <= 0:
        raise ValueError(f"target margin must be positive, got {target_margin}")
    if deal_margins.size < 2:
        return None
    sd = float(np.std(deal_margins, ddof=1))
    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
    return int(np.ceil((z * sd / target_margin) ** 2))


def interval_text(lo: float, hi: float, spec: str) -> str:
    """``[lo, hi]`` for a table; ``[-, -]`` for the NaN interval of a single deal (rich reads
    ``[nan, nan]`` as markup and prints nothing)."""
    return "[-, -]" if math.isnan(lo) or math.isnan(hi) else f"[{lo:{spec}}, {hi:{spec}}]"


def figure_text(row: dict[str, Any], key: str, bounds: str, spec: str) -> str:
    """``0.512 [0.470, 0.551]``: figure ``key`` of ``row`` and its interval ``{bounds}_lo``,
    ``{bounds}_hi`` (``interval_text``)."""
    return f"{row[key]:{spec}} {interval_text(row[bounds + '_lo'], row[bounds + '_hi'], spec)}"
