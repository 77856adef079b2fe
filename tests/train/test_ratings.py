"""Rating and test statistics on synthetic data with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from train.evaluation.ratings import (
    ELO,
    PairData,
    bt_ratings,
    deals_to_separate,
    fit_davidson,
    holm,
    sign_flip_pvalue,
)


def _davidson_probs(a: float, b: float, nu: float) -> tuple[float, float, float]:
    den = np.exp(a) + np.exp(b) + nu * np.exp((a + b) / 2)
    return np.exp(a) / den, np.exp(b) / den, nu * np.exp((a + b) / 2) / den


def test_davidson_fit_recovers_strengths_and_ties():
    theta = np.array([-1.0, 0.0, 0.5, 1.5])
    nu = 0.4
    pairs = np.array([(i, j) for i in range(4) for j in range(i + 1, 4)])
    n = 200_000
    w, t, lo = [], [], []
    for i, j in pairs:  # expected counts: the MLE of exact expectations is the truth
        pw, pl, pt = _davidson_probs(theta[i], theta[j], nu)
        w.append(n * pw), lo.append(n * pl), t.append(n * pt)
    est, log_nu = fit_davidson(np.array(w), np.array(t), np.array(lo), pairs, 4)
    assert est[0] == pytest.approx(theta - theta.mean(), abs=1e-3)
    assert np.exp(log_nu[0]) == pytest.approx(nu, rel=1e-3)


def test_ratings_finite_and_ordered_when_one_side_never_loses():
    d = 300
    pair = PairData(0, 1, np.ones(d), np.zeros(d), np.zeros(d), np.ones(d) * 500)
    r = bt_ratings([pair], 2, resamples=200)
    assert np.all(np.isfinite(r.rating)) and r.rating[0] > 500 > -500 > r.rating[1]


def test_bootstrap_interval_covers_truth_with_shared_deals():
    rng = np.random.default_rng(1)
    d = 2000
    p_win = 1 / (1 + np.exp(-0.5))  # entrant 0 is 0.5 logits stronger
    wins = (rng.random(d) < p_win).astype(float)
    pair = PairData(0, 1, wins, np.zeros(d), 1 - wins, wins * 2 - 1)
    r = bt_ratings([pair], 2, resamples=500, seed=3)
    assert r.lo[0] < 0.25 * ELO < r.hi[0]  # centred ratings: +-0.25 logits
    assert r.lo[0] < r.rating[0] < r.hi[0]


def test_holm_matches_hand_computation():
    assert holm([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert holm([0.2]) == pytest.approx([0.2])


def test_sign_flip_pvalue():
    rng = np.random.default_rng(0)
    null = [sign_flip_pvalue(rng.normal(0, 1, 50), 500, seed=s) for s in range(200)]
    assert 0.02 < np.mean(np.array(null) < 0.05) < 0.09  # about 5% rejections under H0
    assert sign_flip_pvalue(rng.normal(0.8, 1, 50), 2000) < 0.01
    assert sign_flip_pvalue(np.zeros(10), 100) == 1.0


def test_deals_to_separate_formula():
    margins = np.array([-1000.0, 1000.0] * 50)  # sd ~ 1005
    n = deals_to_separate(margins, 100.0)
    assert n == int(np.ceil((2.8016 * margins.std(ddof=1) / 100.0) ** 2)) or abs(n - 792) <= 2
    with pytest.raises(ValueError, match="positive"):
        deals_to_separate(margins, 0.0)
