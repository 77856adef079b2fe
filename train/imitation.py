"""Behaviour cloning before PPO (``imitate: AGENT``): the policy learns a teacher's choices and the
value head the returns the teacher earns, on the learner's own decisions against the run's opponent.

A network trained from scratch against a strong rule agent spends millions of steps rediscovering
what the rule agent already knows (in partnership Canasta it never caught up: docs/training.md).
Starting PPO from a clone of the teacher instead starts it level with the teacher, and PPO then
learns where to leave it. The value head is fitted too, so that the first PPO advantages are not
the noise of an untrained critic (which would wreck the cloned policy in its first updates).

The teacher plays every learner decision of ``steps`` decisions (``LearnerBatch``, the same envs,
rewards and forced-move skipping PPO trains on), seeded from the run seed, so a run is
reproducible. Returns are discounted with the run's ``gamma`` inside each finished episode; the
tail of an episode unfinished when collection stops is dropped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from agents.learned import MASKED_LOGIT
from canasta_env.learner import LearnerBatch, LearnerConfig
from canasta_env.policy import RowRandom, stream_keys

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
            gamma: float) -> Demonstrations:
    """About ``steps`` teacher decisions (whole rounds of ``num_envs``) in ``num_envs`` envs
    against ``opponent``, keeping the decisions of the episodes that finished."""
    batch = LearnerBatch(LearnerConfig(rules=rules, opponent=opponent), num_envs, "imitate")
    batch.reset(np.uint64(seed) + np.arange(num_envs, dtype=np.uint64))
    rounds = max(1, -(-steps // num_envs))
    rng = RowRandom(stream_keys(np.uint64(seed) + np.arange(num_envs, dtype=np.uint64),
                                np.zeros(num_envs, dtype=np.uint64), TEACHER_SALT))
    obs_list, mask_list, act_list = [], [], []
    rewards = np.zeros((rounds, num_envs), dtype=np.float32)
    dones = np.zeros((rounds, num_envs), dtype=bool)
    o = batch.observations()
    for t in range(rounds):
        mask = batch.action_masks()
        actions = np.asarray(teacher.act(o, mask, rng), dtype=np.int64)
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
    obs = np.stack(obs_list)
    returns = np.zeros_like(rewards)
    finished = np.zeros(num_envs, dtype=bool)  # whether the episode in flight at t ends in the data
    acc = np.zeros(num_envs, dtype=np.float32)
    keep = np.zeros((rounds, num_envs), dtype=bool)
    for t in reversed(range(rounds)):
        finished |= dones[t]
        acc = rewards[t] + gamma * acc * ~dones[t]
        returns[t], keep[t] = acc, finished
    flat = keep.reshape(-1)
    return Demonstrations(torch.from_numpy(obs.reshape(-1, obs.shape[-1])[flat]),
                          torch.from_numpy(np.stack(mask_list).reshape(-1, mask.shape[-1])[flat]),
                          torch.from_numpy(np.stack(act_list).reshape(-1)[flat]),
                          torch.from_numpy(returns.reshape(-1)[flat]))


def clone(policy: Any, demos: Demonstrations, *, epochs: int, batch_size: int, seed: int,
          vf_coef: float = 0.5, log: Any = None) -> dict[str, float]:
    """Fit ``policy`` (a ``MaskableActorCriticPolicy``) to ``demos``: cross-entropy of the masked
    logits against the teacher's actions plus ``vf_coef`` times the value MSE, with the policy's
    own Adam. Returns the last epoch's loss, accuracy (argmax = teacher) and value loss."""
    device = policy.device
    gen = torch.Generator().manual_seed(seed)
    n = len(demos)
    policy.set_training_mode(True)
    stats: dict[str, float] = {}
    for epoch in range(epochs):
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
