"""``algo: ppo``: a lean batched PPO (CleanRL style) on ``canasta_env.envs.learner.LearnerBatch``.

The network is sb3-contrib's ``MaskableActorCriticPolicy`` built with the arguments ``MaskablePPO``
would give it (net_arch, Tanh, orthogonal init, Adam with eps 1e-5), so checkpoints are the same
format as ``algo: maskable_ppo``'s and every loader (agents, tournaments, play, resume) reads them.
What is lean is the loop around it:

* collection steps the batch engine directly into preallocated rollout tensors on the device
  (observations, legal masks, actions, behaviour log-probabilities, rewards, dones); the acting
  forward pass computes the actor head only, under ``torch.inference_mode``;
* the update calls the network's parts directly (features -> mlp_extractor -> action_net /
  value_net; no distribution objects): masked logits and ``log_softmax`` in fp32 (also under bf16
  autocast), entropy over the legal actions, SB3's loss (clipped surrogate + vf_coef * value MSE -
  ent_coef * entropy), per-minibatch advantage normalisation, gradient clipping;
* every forward (update, values, the collector's actor) runs through ``train.learning.policy_forward``:
  on the CPU with bf16 products under ``precision: bf16`` and a fast Tanh, on a GPU the modules
  under autocast;
* GAE(gamma, lambda) with SB3's bootstrap on truncation (gamma * V(final observation) added to the
  reward of a step-cap truncation).

Overlap (``overlap: true``): a collector thread gathers rollout k+1 with an actor copy of the
policy holding the weights before update k while the learner runs update k; the actor is refreshed
after every update, so the policy lag is exactly one update. Values, advantages and truncation
bootstraps are recomputed with the learner's current weights at the start of every update (in both
modes), and the PPO ratio divides by the stored behaviour log-probabilities, so it is the true
importance ratio of the lagged policy. The two threads share no random generator (each has its own
``torch.Generator`` seeded from the run seed and the step counter) and meet at a barrier after every
update, so a run is a pure function of its seed whatever the thread timing. Evaluations,
checkpoints and self-play snapshots happen at that barrier (``on_sync``), while the collector idles.

Sharded update (``update_threads`` k > 1): each minibatch's gradient is the sum, in shard order, of
the gradients of k row shards computed on k threads, so the core the collector leaves idle between
rollouts computes part of the update (``LeanPPO.gradients``).

The rollout storage, the action sampling and GAE are in ``train.learning.rollout``; the choice of
device, precision and update threads in ``train.learning.precision``.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from agents.checkpoint import kill_point
from agents.learned.policy import MASKED_LOGIT
from canasta_env.envs.gym_env import _spaces
from canasta_env.envs.learner import LearnerBatch, LearnerConfig
from train.learning import policy_forward
from train.learning.config import TrainArgs
from train.learning.mmd import Magnet, MMDConfig, magnet_kl, masked_log_probs
from train.learning.precision import (
    bf16_matmuls,
    fast_bf16,
    resolve_device,
    resolve_precision,
    resolve_update_threads,
)
from train.learning.rollout import Rollout, gae, sample, stream_seed

# with the names other modules import from here that live in ``precision`` and ``rollout``
__all__ = ["EXP_FLOOR", "LeanPPO", "Rollout", "bf16_matmuls", "build_policy", "fast_bf16", "probabilities",
           "resolve_device", "resolve_precision", "resolve_update_threads", "sample", "stream_seed"]

# Log-probabilities are clamped here before ``exp``: torch's CPU ``exp`` takes a slow path on inputs
# far below fp32's underflow (an illegal action's ~-1e8), measured 40x slower on a (2048, 106) batch;
# exp(-80) is 2e-35, so the probabilities change by less than that.
EXP_FLOOR = -80.0


def probabilities(logp: torch.Tensor) -> torch.Tensor:
    """``exp(logp)`` of masked log-probabilities, fast (see ``EXP_FLOOR``)."""
    return logp.clamp(min=EXP_FLOOR).exp()


def build_policy(observation_space: Any, action_space: Any, args: TrainArgs,
                 device: torch.device) -> Any:
    """The policy ``MaskablePPO("MlpPolicy", ..., policy_kwargs={"net_arch": args.net_arch})``
    builds (same class and constructor arguments, so the same checkpoint metadata)."""
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    lr = float(args.learning_rate)
    policy = MaskableActorCriticPolicy(observation_space, action_space, lambda _: lr,
                                       net_arch=list(args.net_arch))
    return policy.to(device)


# what ``LeanPPO.update`` logs under train/ for each update, the means over its minibatches
STAT_NAMES = ("policy_gradient_loss", "value_loss", "entropy_loss", "loss", "clip_fraction", "approx_kl",
              "magnet_kl")


class LeanPPO:
    """PPO on ``args`` against ``opponent`` (see the module docstring). ``num_timesteps`` counts the
    learner steps trained on; ``learn(total)`` continues until it reaches ``total``."""

    def __init__(self, args: TrainArgs, rules: Any, opponent: Any, *, device: torch.device | None = None,
                 precision: str | None = None) -> None:
        self.args, self.rules = args, rules
        self.device = device if device is not None else resolve_device(args.device)
        self.precision = precision or resolve_precision(args.precision, self.device)
        self._products = policy_forward.for_device(self.device, self.precision)
        config = LearnerConfig(rules=rules, opponent=opponent, reward_mode=args.reward_mode,
                               engine_threads=args.engine_threads)
        self.batch = LearnerBatch(config, args.num_envs, "canasta train")
        obs_space, act_space = _spaces(self.batch)
        self.obs_dim, self.num_actions = int(obs_space.shape[0]), int(act_space.n)
        self.policy = build_policy(obs_space, act_space, args, self.device)
        self._params = list(self.policy.parameters())
        self.update_threads = resolve_update_threads(args.update_threads, self.device)
        self._update_pool: ThreadPoolExecutor | None = None  # the shard threads (``shard_threads``)
        # algo mmd: the frozen magnet the loss pulls toward (train.learning.mmd), moved every few updates
        self.magnet = Magnet(self.policy, MMDConfig(args.magnet_coef, args.magnet_every, args.magnet_step)
                             ) if args.magnet_coef > 0 else None
        self.actor = copy.deepcopy(self.policy)  # the collector's weights (refreshed after each update)
        self.actor.set_training_mode(False)
        for p in self.actor.parameters():
            p.requires_grad_(False)
        self.num_timesteps = 0
        self._n_updates = 0
        self.margins: list[float] = []  # final rewards of finished episodes, for the logs
        self.episode_returns: list[float] = []
        self.episode_lengths: list[int] = []
        self.train_stats: dict[str, float] = {}
        self.timings: list[dict[str, float]] = []  # per update: collect_s, update_s, wall_s, steps
        self._ret = np.zeros(args.num_envs)
        self._len = np.zeros(args.num_envs, dtype=np.int64)
        self._obs: torch.Tensor | None = None
        self._mask: torch.Tensor | None = None
        self._env_seed = args.seed
        # fills a rollout from the envs: ``collect`` here, or workers elsewhere (``ray_rollouts``)
        self.collector: Callable[[Rollout, torch.Generator], None] = self.collect

    # ---- environment ---------------------------------------------------------------------------
    def reset_envs(self, seed: int) -> None:
        """From the next collection, env i restarts on the deals of seed ``seed + i`` (episodes in
        flight are dropped). Lazy, so that a self-play pool gets its policy first."""
        self._env_seed = seed
        self._obs = self._mask = None

    def _start_envs(self) -> None:
        n = self.args.num_envs
        self.batch.reset(np.uint64(self._env_seed) + np.arange(n, dtype=np.uint64))
        self._ret[:] = 0.0
        self._len[:] = 0
        self._obs, self._mask = self._current()

    def _current(self) -> tuple[torch.Tensor, torch.Tensor]:
        obs = torch.from_numpy(self.batch.observations()).to(self.device)
        mask = torch.from_numpy(self.batch.action_masks()).to(self.device)
        return obs, mask

    # ---- collection ----------------------------------------------------------------------------
    def collect(self, buf: Rollout, gen: torch.Generator) -> None:
        """Fill ``buf`` with ``n_steps`` steps of every env, acting with ``self.actor``."""
        start = time.perf_counter()
        buf.truncated.clear()
        if self._obs is None:
            self._start_envs()
        obs, mask = self._obs, self._mask
        assert obs is not None and mask is not None
        for t in range(self.args.n_steps):
            kill_point("rollout")
            buf.obs[t].copy_(obs)
            buf.masks[t].copy_(mask)
            with torch.inference_mode():
                logits = policy_forward.actor_logits(self.actor, obs, self._products)
                logp_all = torch.log_softmax(logits.masked_fill_(~mask, MASKED_LOGIT), dim=1)
                actions = sample(logp_all, gen)
                buf.actions[t] = actions
                buf.logp[t] = logp_all.gather(1, actions[:, None]).squeeze(1)
            out = self.batch.step(actions.cpu().numpy())
            done = out.terminated | out.truncated
            self._episode_stats(out.rewards, done, out.illegal)
            trunc = np.flatnonzero(out.truncated)
            if trunc.size:  # bootstrapped at update time from the final observation
                buf.truncated.append((t, torch.from_numpy(trunc).to(self.device),
                                      torch.from_numpy(out.obs[trunc]).to(self.device)))
            buf.rewards[t] = torch.from_numpy(out.rewards.astype(np.float32)).to(self.device)
            buf.dones[t] = torch.from_numpy(done.astype(np.float32)).to(self.device)
            ended = np.flatnonzero(done)
            if ended.size:
                self.batch.reset_rows(ended)
                obs, mask = self._current()
            else:
                obs = torch.from_numpy(out.obs).to(self.device)
                mask = torch.from_numpy(self.batch.action_masks()).to(self.device)
        buf.last_obs = obs
        self._obs, self._mask = obs, mask
        buf.collect_s = time.perf_counter() - start

    def _episode_stats(self, rewards: np.ndarray, done: np.ndarray, illegal: np.ndarray) -> None:
        self._ret += rewards
        self._len += 1
        for i in np.flatnonzero(done):
            if not illegal[i]:
                self.margins.append(float(rewards[i]))
            self.episode_returns.append(float(self._ret[i]))
            self.episode_lengths.append(int(self._len[i]))
        self._ret[done] = 0.0
        self._len[done] = 0

    # ---- update --------------------------------------------------------------------------------
    def _values(self, obs: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return policy_forward.values(self.policy, obs, self._products)

    def advantages(self, buf: Rollout) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """GAE advantages, returns and values (T, N) under the current weights."""
        a = self.args
        steps, envs = buf.rewards.shape
        values = self._values(buf.obs.reshape(steps * envs, -1)).reshape(steps, envs)
        assert buf.last_obs is not None
        next_value = self._values(buf.last_obs)
        rewards = buf.rewards.clone()
        for t, rows, final in buf.truncated:
            rewards[t, rows] += a.gamma * self._values(final)
        adv = gae(rewards, values, next_value, buf.dones, a.gamma, a.gae_lambda)
        return adv, adv + values, values

    def minibatch_loss(self, obs: torch.Tensor, masks: torch.Tensor, actions: torch.Tensor,
                       old_logp: torch.Tensor, adv: torch.Tensor, ret: torch.Tensor, size: int,
                       magnet_logp: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """SB3's PPO loss on (a shard of) one minibatch of ``size`` rows, whose advantages are
        already normalised, plus ``magnet_coef`` times KL(policy || magnet) under algo mmd
        (``train.learning.mmd``; ``magnet_logp``: the rows' ``Magnet.log_probs``, computed here if
        not given), and its statistics (``STAT_NAMES``), detached. Every term is a sum over the
        shard divided by ``size``, so the shards of a minibatch add up to its mean."""
        a = self.args
        logits, values = policy_forward.heads(self.policy, obs, self._products)
        logp_all = masked_log_probs(logits, masks)
        logp = logp_all.gather(1, actions[:, None]).squeeze(1)
        entropy = -(probabilities(logp_all) * logp_all).sum(dim=1)
        log_ratio = logp - old_logp
        ratio = log_ratio.exp()
        clipped_ratio = ratio.clamp(1 - a.clip_range, 1 + a.clip_range)
        pg_loss = -torch.min(adv * ratio, adv * clipped_ratio).sum() / size
        value_loss = (ret - values).square().sum() / size
        entropy_loss = -entropy.sum() / size
        loss = pg_loss + a.ent_coef * entropy_loss + a.vf_coef * value_loss
        magnet_term = torch.zeros((), device=loss.device)
        if self.magnet is not None:
            if magnet_logp is None:
                magnet_logp = self.magnet.log_probs(obs, masks, self._products)
            magnet_term = magnet_kl(logp_all, magnet_logp, masks).sum() / size
            loss = loss + a.magnet_coef * magnet_term
        with torch.no_grad():
            clipped = ((ratio - 1).abs() > a.clip_range).float().sum() / size
            approx_kl = ((ratio - 1) - log_ratio).sum() / size
            stats = torch.stack([pg_loss, value_loss, entropy_loss, loss, clipped, approx_kl,
                                 magnet_term]).detach()
        return loss, stats

    def _shard_gradients(self, rows: tuple[torch.Tensor, ...], size: int
                         ) -> tuple[tuple[torch.Tensor, ...], torch.Tensor]:
        loss, stats = self.minibatch_loss(*rows[:6], size, *rows[6:])
        return torch.autograd.grad(loss, self._params), stats

    def gradients(self, obs: torch.Tensor, masks: torch.Tensor, actions: torch.Tensor,
                  old_logp: torch.Tensor, adv: torch.Tensor, ret: torch.Tensor,
                  magnet_logp: torch.Tensor | None = None) -> torch.Tensor:
        """Set the parameters' ``.grad`` to the gradient of the PPO loss on one minibatch and
        return its statistics. With ``update_threads`` k > 1 the minibatch is cut into k shards
        whose gradients are computed on k threads (the collector, when it runs, shares the cores)
        and summed in shard order, so the result does not depend on which thread finishes first."""
        size = adv.numel()
        if size > 1:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        rows = (obs, masks, actions, old_logp, adv, ret) + (() if magnet_logp is None else (magnet_logp,))
        k = min(self.update_threads, size)
        ends = [size * i // k for i in range(k + 1)]
        shards = [tuple(r[ends[i]:ends[i + 1]] for r in rows) for i in range(k)]
        pool = self._update_pool
        pending = [pool.submit(self._shard_gradients, s, size) for s in shards[1:]] if pool else []
        grads, stats = self._shard_gradients(shards[0], size)
        for i, shard in enumerate(shards[1:]):
            more, more_stats = pending[i].result() if pool else self._shard_gradients(shard, size)
            grads = tuple(g + m for g, m in zip(grads, more, strict=True))
            stats = stats + more_stats
        for p, g in zip(self._params, grads, strict=True):
            p.grad = g
        return stats

    def update(self, buf: Rollout, gen: torch.Generator) -> None:
        """``n_epochs`` passes of minibatch PPO over ``buf`` (the magnet, fixed meanwhile, is run once)."""
        a = self.args
        start = time.perf_counter()
        self.policy.set_training_mode(True)
        adv_all, ret_all, values_all = self.advantages(buf)
        n = adv_all.numel()
        obs, masks = buf.obs.reshape(n, -1), buf.masks.reshape(n, -1)
        actions, old_logp = buf.actions.reshape(n), buf.logp.reshape(n)
        adv_all, ret_all = adv_all.reshape(n), ret_all.reshape(n)
        magnet_logp = None if self.magnet is None else self.magnet.log_probs(obs, masks, self._products)
        sums = torch.zeros(len(STAT_NAMES), device=self.device)
        count = 0
        for _ in range(a.n_epochs):
            order = torch.randperm(n, generator=gen, device=gen.device).to(self.device)
            for first in range(0, n, a.batch_size):
                idx = order[first:first + a.batch_size]
                stats = self.gradients(obs[idx], masks[idx], actions[idx], old_logp[idx], adv_all[idx],
                                       ret_all[idx], None if magnet_logp is None else magnet_logp[idx])
                torch.nn.utils.clip_grad_norm_(self._params, a.max_grad_norm)
                kill_point("update")
                self.policy.optimizer.step()
                sums += stats
                count += 1
        self._n_updates += a.n_epochs
        self.policy.set_training_mode(False)
        if self.magnet is not None:
            self.magnet.update(self.policy)
        means = (sums / max(count, 1)).tolist()
        var_y = ret_all.var()
        explained = float("nan") if var_y == 0 else float(1 - (ret_all - values_all.reshape(n)).var() / var_y)
        self.train_stats = dict(zip(STAT_NAMES, means, strict=True))
        self.train_stats.update(explained_variance=explained, n_updates=float(self._n_updates),
                                learning_rate=float(a.learning_rate), clip_range=float(a.clip_range),
                                update_s=time.perf_counter() - start)

    def refresh_actor(self) -> None:
        """Copy the learner's weights into the collector's actor."""
        with torch.no_grad():
            for dst, src in zip(self.actor.parameters(), self.policy.parameters(), strict=True):
                dst.copy_(src)

    # ---- the loop ------------------------------------------------------------------------------
    def learn(self, total_timesteps: int, on_sync: Callable[[LeanPPO], bool | None] | None = None) -> None:
        """Collect and update until ``num_timesteps`` reaches ``total_timesteps`` (whole rollouts);
        ``on_sync(self)`` runs after every update while no collection is in flight, and returning
        ``False`` ends training there (a rollout collected meanwhile is dropped)."""
        with self.shard_threads():
            self._learn(total_timesteps, on_sync)

    @contextmanager
    def shard_threads(self) -> Iterator[None]:
        """While open, ``gradients`` computes its shards on threads (``learn`` opens it; outside,
        the shards run one after another, with the same result)."""
        if self.update_threads == 1:
            yield
            return
        with ThreadPoolExecutor(self.update_threads - 1, thread_name_prefix="update") as pool:
            self._update_pool = pool
            try:
                yield
            finally:
                self._update_pool = None

    def _learn(self, total_timesteps: int, on_sync: Callable[[LeanPPO], bool | None] | None) -> None:
        a = self.args
        per_rollout = a.num_envs * a.n_steps
        gen_device = self.device if self.device.type == "cuda" else torch.device("cpu")
        gen_collect = torch.Generator(gen_device).manual_seed(stream_seed(a.seed, self.num_timesteps, 1))
        gen_learn = torch.Generator(gen_device).manual_seed(stream_seed(a.seed, self.num_timesteps, 2))
        self.refresh_actor()
        bufs = [Rollout.empty(a.n_steps, a.num_envs, self.obs_dim, self.num_actions, self.device)
                for _ in range(2 if a.overlap else 1)]
        collected = self.num_timesteps
        pending: Rollout | None = None
        if collected < total_timesteps:
            self.collector(bufs[0], gen_collect)
            collected += per_rollout
            pending = bufs[0]
        mark = time.perf_counter()
        with ThreadPoolExecutor(1, thread_name_prefix="collector") as executor:
            while pending is not None:
                more = collected < total_timesteps
                spare = bufs[-1] if pending is bufs[0] else bufs[0]
                future = executor.submit(self.collector, spare, gen_collect) if a.overlap and more else None
                collect_s = 0.0
                try:
                    self.update(pending, gen_learn)
                finally:
                    if future is not None:
                        future.result()  # re-raises the collector's exception, if any
                        collect_s = spare.collect_s
                self.refresh_actor()
                self.num_timesteps += per_rollout
                if on_sync is not None and on_sync(self) is False:
                    break
                if future is not None:
                    pending = spare
                elif more:
                    self.collector(bufs[0], gen_collect)
                    collect_s = bufs[0].collect_s
                    pending = bufs[0]
                else:
                    pending = None
                if pending is not None:
                    collected += per_rollout
                now = time.perf_counter()
                self.timings.append({"steps": per_rollout, "collect_s": collect_s,
                                     "update_s": self.train_stats["update_s"], "wall_s": now - mark})
                mark = now
