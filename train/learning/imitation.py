"""Behaviour cloning before PPO (``imitate: AGENT``): the policy learns a teacher's choices and the
value head the returns the teacher earns, on the learner's own decisions against the run's opponent.

A network trained from scratch against a strong rule agent spends millions of steps rediscovering
what the rule agent already knows (in partnership Canasta it never caught up: docs/training.md).
Starting PPO from a clone of the teacher instead starts it level with the teacher, and PPO then
learns where to leave it. The value head is fitted too, so that the first PPO advantages are not
the noise of an untrained critic (which would wreck the cloned policy in its first updates).

The teacher plays every learner decision of ``steps`` decisions (``LearnerBatch``, the same envs,
rewards and forced-move skipping PPO trains on), seeded from the run seed, so a run is
reproducible; a slow teacher (``search``) can play in several processes. Returns are discounted
with the run's ``gamma`` inside each finished episode; the tail of an episode unfinished when
collection stops is dropped.
"""

from __future__ import annotations

import multiprocessing
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from agents.learned.policy import MASKED_LOGIT
from canasta_env.envs.learner import LearnerBatch, LearnerConfig
from canasta_env.policy import RowRandom, stream_keys
from train.common.stop_request import StoppedBeforeCheckpoint

TEACHER_SALT = 0x7EAC


@dataclass
class Demonstrations:
    """Teacher decisions: observations, legal masks, the teacher's actions, discounted returns."""

    obs: torch.Tensor  # (n, D) float32
    masks: torch.Tensor  # (n, A) bool
    actions: torch.Tensor  # (n,) int64
    returns: torch.Tensor  # (n,) float32

    def __len__(self) -> int:
        return int(self.actions.shape[0])


def collect(rules: Any, teacher: Any, opponent: Any, num_envs: int, steps: int, seed: int,
            gamma: float, *, workers: int = 1, should_stop: Callable[[], bool] | None = None,
            teacher_name: str | None = None) -> Demonstrations:
    """About ``steps`` teacher decisions (whole rounds of ``num_envs``) in ``num_envs`` envs
    against ``opponent`` (an agent, or a list of agents that share the envs out evenly, in order),
    keeping the decisions of the episodes that finished.

    With ``workers > 1`` the envs are shared out among that many processes (``teacher`` and
    ``opponent`` are then agent names, made again in each). Every env is seeded from ``seed`` and
    its index alone and agents act on each row independently, so the decisions are the same,
    in the same order, whatever ``workers`` is. ``should_stop()`` is polled between rounds (or
    while the workers play); when it returns true, ``StoppedBeforeCheckpoint`` is raised. A teacher
    failing in play is a ``ValueError`` naming it (``teacher_name``, or its name or class)."""
    rounds = max(1, -(-steps // num_envs))
    seeds = np.uint64(seed) + np.arange(num_envs, dtype=np.uint64)
    opponents = list(opponent) if isinstance(opponent, (list, tuple)) else [opponent]
    shares = [(o, c) for o, c in zip(opponents, np.array_split(seeds, len(opponents)), strict=True) if c.size]
    if workers <= 1 or num_envs < 2:
        parts = [play(rules, teacher, o, c, rounds, gamma, should_stop, teacher_name) for o, c in shares]
    else:
        pieces = -(-workers // len(shares))  # every process busy while there are envs to share
        tasks = [(o, piece) for o, c in shares for piece in np.array_split(c, pieces) if piece.size]
        parts = _play_in_processes(rules, teacher, tasks, rounds, gamma, workers, should_stop)
    obs, masks, actions, returns, keep = (np.concatenate(a, axis=1) for a in zip(*parts, strict=True))
    flat = keep.reshape(-1)
    return Demonstrations(torch.from_numpy(obs.reshape(-1, obs.shape[-1])[flat]),
                          torch.from_numpy(masks.reshape(-1, masks.shape[-1])[flat]),
                          torch.from_numpy(actions.reshape(-1)[flat]),
                          torch.from_numpy(returns.reshape(-1)[flat]))


def play(rules: Any, teacher: Any, opponent: Any, seeds: np.ndarray, rounds: int, gamma: float,
         should_stop: Callable[[], bool] | None = None, teacher_name: str | None = None
         ) -> tuple[np.ndarray, ...]:
    """``rounds`` teacher decisions in each env of ``seeds``: observations, masks, actions and
    discounted returns as (rounds, envs, ...) arrays, and where they belong to a finished episode.
    The teacher's actions are checked (``checked_legal_act``): unchecked, its floats were truncated,
    its illegal or out-of-range actions cloned as targets in silence, its other failures tracebacks."""
    from agents import make_agent
    from canasta_env.messages import short_repr
    from canasta_env.policy import checked_legal_act

    label = teacher_name or (teacher if isinstance(teacher, str) else type(teacher).__name__)
    who = f"{short_repr(label)} (imitate teacher)"
    teacher = make_agent(teacher, rules) if isinstance(teacher, str) else teacher
    opponent = make_agent(opponent, rules) if isinstance(opponent, str) else opponent
    envs = len(seeds)
    batch = LearnerBatch(LearnerConfig(rules=rules, opponent=opponent), envs, "imitate")
    batch.reset(seeds)
    rng = RowRandom(stream_keys(seeds, np.zeros(envs, dtype=np.uint64), TEACHER_SALT))
    obs_list, mask_list, act_list = [], [], []
    rewards = np.zeros((rounds, envs), dtype=np.float32)
    dones = np.zeros((rounds, envs), dtype=bool)
    o = batch.observations()
    for t in range(rounds):
        if should_stop is not None and should_stop():
            raise StoppedBeforeCheckpoint
        mask = batch.action_masks()
        actions = checked_legal_act(teacher, who, o, mask, rng)
        obs_list.append(o)
        mask_list.append(mask)
        act_list.append(actions)
        out = batch.step(actions, "imitate")
        done = out.terminated | out.truncated
        rewards[t], dones[t] = out.rewards, done
        ended = np.flatnonzero(done)
        if ended.size:
            batch.reset_rows(ended)
            o = batch.observations()
        else:
            o = out.obs
    returns = np.zeros_like(rewards)
    finished = np.zeros(envs, dtype=bool)  # whether the episode in flight at t ends in the data
    acc = np.zeros(envs, dtype=np.float32)
    keep = np.zeros((rounds, envs), dtype=bool)
    for t in reversed(range(rounds)):
        finished |= dones[t]
        acc = rewards[t] + gamma * acc * ~dones[t]
        returns[t], keep[t] = acc, finished
    return np.stack(obs_list), np.stack(mask_list), np.stack(act_list), returns, keep


def _ignore_interrupts() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what a Ctrl-C means


def _play_in_processes(rules: Any, teacher: Any, tasks: list[tuple[Any, np.ndarray]], rounds: int,
                       gamma: float, workers: int, should_stop: Callable[[], bool] | None
                       ) -> list[tuple[np.ndarray, ...]]:
    """``play`` for each (opponent, env seeds) of ``tasks`` in ``workers`` processes, in order."""
    for what, agent in [("teacher", teacher)] + [("opponent", o) for o, _ in tasks]:
        if not isinstance(agent, str):
            raise ValueError(f"imitate_workers > 1 needs the {what} by name, not a {type(agent).__name__}")
    pool = multiprocessing.get_context("spawn").Pool(min(workers, len(tasks)), initializer=_ignore_interrupts)
    try:
        pending = [pool.apply_async(play, (rules, teacher, o, c, rounds, gamma)) for o, c in tasks]
        while not all(p.ready() for p in pending):
            if should_stop is not None and should_stop():
                raise StoppedBeforeCheckpoint
            pending[0].wait(0.2)
        parts = [p.get() for p in pending]  # re-raises a worker's exception
        pool.close()
        return parts
    finally:
        pool.terminate()
        pool.join()


def clone(policy: Any, demos: Demonstrations, *, epochs: int, batch_size: int, seed: int,
          vf_coef: float = 0.5, log: Any = None, should_stop: Callable[[], bool] | None = None
          ) -> dict[str, float]:
    """Fit ``policy`` (a ``MaskableActorCriticPolicy``) to ``demos``: cross-entropy of the masked
    logits against the teacher's actions plus ``vf_coef`` times the value MSE, with the policy's
    own Adam. Returns the last epoch's loss, accuracy (argmax = teacher) and value loss."""
    device = policy.device
    gen = torch.Generator().manual_seed(seed)
    n = len(demos)
    policy.set_training_mode(True)
    stats: dict[str, float] = {}
    for epoch in range(epochs):
        if should_stop is not None and should_stop():
            raise StoppedBeforeCheckpoint
        start = time.perf_counter()
        order = torch.randperm(n, generator=gen)
        sums = torch.zeros(3)
        for first in range(0, n, batch_size):
            idx = order[first:first + batch_size]
            obs = demos.obs[idx].to(device)
            masks = demos.masks[idx].to(device)
            target = demos.actions[idx].to(device)
            pi, vf = policy.mlp_extractor(policy.extract_features(obs))
            logits = policy.action_net(pi).float().masked_fill(~masks, MASKED_LOGIT)
            ce = F.cross_entropy(logits, target)
            value_loss = F.mse_loss(policy.value_net(vf).float().flatten(), demos.returns[idx].to(device))
            loss = ce + vf_coef * value_loss
            policy.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            policy.optimizer.step()
            with torch.no_grad():
                accuracy = (logits.argmax(dim=1) == target).float().mean()
                sums += torch.stack([ce, accuracy, value_loss]).detach().cpu() * idx.numel()
        means = (sums / n).tolist()
        stats = {"cross_entropy": means[0], "accuracy": means[1], "value_loss": means[2],
                 "epoch_s": time.perf_counter() - start}
        if log is not None:
            log(epoch, stats)
    policy.set_training_mode(False)
    return stats
