"""The opponent pool of self-play and the league: uniform and prioritized (PFSP) draws, results
counted per member, snapshots dropped oldest first with the fixed league members kept."""

from __future__ import annotations

import numpy as np
import pytest

from agents.learned.pool import PoolAgent, pfsp_weights
from canasta_env.envs.learner import LearnerBatch, LearnerConfig
from canasta_env.policy import RandomAgent


class Named(RandomAgent):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


def _pool(prioritized: bool, snapshots: int = 2, pool_size: int = 10) -> PoolAgent:
    pool = PoolAgent(Named("latest"), 64, latest_ratio=0.25, pool_size=pool_size,
                     league={"heuristic": Named("heuristic"), "greedy": Named("greedy")},
                     prioritized=prioritized)
    for i in range(snapshots):
        pool.add(Named(f"snap{i}"), f"ckpt_{i}")
    return pool


def _draws(pool: PoolAgent, n: int = 40_000) -> np.ndarray:
    u = np.random.default_rng(0).random(n)
    pool.assignment = np.zeros(n, dtype=np.int64)
    pool.new_episode(np.arange(n), u)
    return np.bincount(pool.assignment, minlength=len(pool.members)) / n


def test_uniform_pool_draws_the_latest_at_its_ratio_and_the_others_evenly() -> None:
    share = _draws(_pool(prioritized=False))
    assert share[0] == pytest.approx(0.25, abs=0.01)
    assert share[1:] == pytest.approx([0.75 / 4] * 4, abs=0.01)


def test_pfsp_draws_most_the_member_the_learner_beats_least() -> None:
    pool = _pool(prioritized=True)
    rows = np.arange(4)
    pool.assignment[rows] = [1, 2, 3, 4]  # heuristic, greedy, ckpt_0, ckpt_1
    for _ in range(200):  # the learner loses to the heuristic, beats the rest
        pool.episode_end(rows, np.array([-1.0, 1.0, 1.0, 1.0]))
    rates = pool.win_rates()
    assert rates[1] < 0.05 and rates[2:].min() > 0.95
    share = _draws(pool)
    assert share[0] == pytest.approx(0.25, abs=0.01)  # the latest keeps its share
    assert share[1] > 0.7 and share[2:].max() < 0.02
    # negative twin: without prioritized sampling the same results change nothing
    pool.prioritized = False
    assert _draws(pool)[1] == pytest.approx(0.75 / 4, abs=0.01)


def test_pfsp_weights_fall_with_the_learners_score() -> None:
    w = pfsp_weights(np.array([0.0, 0.5, 0.8, 1.0]))
    assert w[0] > w[1] > w[2] > w[3] > 0  # a member the learner always beats keeps a floor


def test_ties_count_half_and_old_results_fade() -> None:
    pool = _pool(prioritized=True, snapshots=0)
    pool.assignment[:2] = [1, 2]
    pool.episode_end(np.array([0, 1]), np.array([0.0, 0.0]))
    assert pool.win_rates()[1:3] == pytest.approx([0.5, 0.5])
    before = pool.results.sum()
    pool.assignment[:] = 0
    pool.episode_end(np.arange(64), np.ones(64))  # 64 games against the latest
    assert pool.results[1:].sum() < before


def test_snapshots_beyond_pool_size_drop_oldest_and_league_members_stay() -> None:
    pool = _pool(prioritized=True, snapshots=3, pool_size=2)
    assert pool.names == ["latest", "heuristic", "greedy", "ckpt_1", "ckpt_2"]
    assert pool.past == ["ckpt_1", "ckpt_2"]
    assert pool.results.shape == (5, 3)


def test_results_round_trip_through_state_and_bad_values_are_ignored() -> None:
    pool = _pool(prioritized=True)
    pool.assignment[:3] = [1, 2, 3]
    pool.episode_end(np.arange(3), np.array([1.0, -1.0, 0.0]))
    other = _pool(prioritized=True)
    other.load_state(pool.state())
    assert np.array_equal(other.results, pool.results)
    other.load_state({"heuristic": [float("nan"), 0, 0], "greedy": "x", "ckpt_0": [-1, 0, 0]})
    assert np.array_equal(other.results, pool.results)


def test_learner_batch_reports_each_episodes_points_to_the_pool() -> None:
    """``episode_end`` gets the learner's unshaped points of every finished episode (the sign is
    the result), once, before the row restarts; illegal endings are not reported."""
    seen: list[tuple[np.ndarray, np.ndarray]] = []

    class Recorder(RandomAgent):
        def episode_end(self, rows: np.ndarray, points: np.ndarray) -> None:
            seen.append((rows.copy(), points.copy()))

    batch = LearnerBatch(LearnerConfig(rules="classic_2p", opponent=Recorder(), shaping=0.5), 16)
    batch.reset(np.arange(16))
    rng = np.random.default_rng(1)
    totals = np.zeros(16)
    finished: list[float] = []
    reported: list[float] = []
    for _ in range(400):
        mask = batch.action_masks()
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in mask])
        out = batch.step(acts)
        totals += out.rewards  # shaped rewards still sum to the scaled margin over a hand
        done = np.flatnonzero(out.terminated | out.truncated)
        finished += [float(totals[i]) for i in done]
        totals[done] = 0.0
        batch.reset_rows(done)
    reported = [float(p) for _, points in seen for p in points]
    assert len(reported) == len(finished) > 16
    assert np.allclose(np.sort(reported), np.sort(finished))
    # illegal action: the episode ends without a report
    seen.clear()
    batch.reset(np.arange(16))
    batch.step(np.full(16, -1))
    assert not seen
