"""Rollout collection on Ray actors (``canasta train|selfplay|league --ray [ADDRESS] --num-workers N``).

Each worker is a Ray actor holding its share of the run's ``num_envs`` envs (env ``i`` of the run is
env ``i - first`` of the worker that holds it, seeded exactly as it would be locally) and a copy of
the acting policy. For every rollout the driver puts the collector's weights in the object store
once, every worker steps its envs ``n_steps`` times with them (``LeanPPO.collect``, the same code as
a local run), and the driver joins the pieces along the env axis into the rollout the learner
updates on. The learner stays on the driver (on its GPU if it has one). With ``overlap`` the next
rollout is collected while the learner updates, so, as locally, the actors act with the weights of
one update before: the policy lag is one update, corrected by the PPO ratio's stored behaviour
log-probabilities (docs/training.md).

Self-play and the league: every worker plays its own copy of the opponent pool. The driver's pool
stays the authority on who is in it; before each rollout the workers receive its members (a new
snapshot's weights once) and its results, and after it the driver adds up what each worker's games
changed. Action sampling draws from one stream per worker seeded from the driver's stream, so a run
is a pure function of its seed for a given number of workers. A worker that dies ends the run with
one line; ``--resume`` continues from the last checkpoint. Only this module (and ``ray_units``)
imports Ray (the ``ray`` extra).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np
import torch

from train.learning.config import TrainArgs
from train.learning.lean_ppo import LeanPPO, Rollout, stream_seed


def _numpy_state(module: torch.nn.Module) -> dict[str, np.ndarray]:
    return {k: v.detach().cpu().numpy() for k, v in module.state_dict().items()}


def _load_numpy_state(module: torch.nn.Module, state: dict[str, np.ndarray]) -> None:
    module.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in state.items()})


class RolloutWorker:
    """One Ray actor's envs and acting policy (``LeanPPO`` on the CPU, used for collection only)."""

    def __init__(self, args: TrainArgs, rules: Any, first: int, count: int, pool_spec: dict[str, Any] | None
                 ) -> None:
        from agents import make_agent

        torch.set_num_threads(1)
        self.first = first
        local = dataclasses.replace(args, num_envs=count, device="cpu")
        self.pool = None
        if pool_spec is not None:
            from agents.learned.policy import PolicyAgent
            from agents.learned.pool import PoolAgent

            league = {name: make_agent(name, rules) for name in pool_spec["league"]}
            self.pool = PoolAgent(PolicyAgent(None, deterministic=False), count, args.latest_ratio,
                                  args.pool_size, league=league, prioritized=args.pfsp)
        opponent = self.pool if self.pool is not None else make_agent(args.opponent, rules)
        self.model = LeanPPO(local, rules, opponent, device=torch.device("cpu"), precision="fp32")
        if self.pool is not None:
            self.pool.members[0].policy = self.model.actor  # type: ignore[attr-defined]
        self.buf = Rollout.empty(local.n_steps, count, self.model.obs_dim, self.model.num_actions,
                                 torch.device("cpu"))

    def collect(self, weights: dict[str, np.ndarray], seed: int, env_seed: int | None,
                pool_sync: dict[str, Any] | None) -> dict[str, Any]:
        """One rollout of this worker's envs acting with ``weights``; ``env_seed`` restarts the envs
        on the deals a local run would give them."""
        model = self.model
        _load_numpy_state(model.actor, weights)
        if env_seed is not None:
            model.reset_envs(env_seed + self.first)
        if pool_sync is not None:
            self._mirror_pool(pool_sync)
        model.collect(self.buf, torch.Generator().manual_seed(seed))
        b = self.buf
        assert b.last_obs is not None
        out = {name: getattr(b, name).numpy().copy() for name in ("obs", "masks", "actions", "logp",
                                                                  "rewards", "dones")}
        out.update(last_obs=b.last_obs.numpy().copy(),
                   truncated=[(t, rows.numpy() + self.first, final.numpy())
                              for t, rows, final in b.truncated],
                   margins=list(model.margins), returns=list(model.episode_returns),
                   lengths=list(model.episode_lengths),
                   results=None if self.pool is None else self.pool.results.copy())
        model.margins.clear()
        model.episode_returns.clear()
        model.episode_lengths.clear()
        return out

    def _mirror_pool(self, sync: dict[str, Any]) -> None:
        from agents.learned.policy import PolicyAgent
        from train.learning.lean_ppo import build_policy

        pool = self.pool
        assert pool is not None
        for name, weights in sync["new"]:  # in the order the driver added them
            policy = build_policy(self.model.policy.observation_space, self.model.policy.action_space,
                                  self.model.args, torch.device("cpu"))
            _load_numpy_state(policy, weights)
            policy.set_training_mode(False)
            pool.add(PolicyAgent(policy, deterministic=False), name)
        if pool.names != sync["names"]:
            raise RuntimeError(f"rollout worker's pool {pool.names} differs from the driver's "
                               f"{sync['names']}")
        pool.results = np.array(sync["results"], dtype=np.float64)


def connect_for(args: TrainArgs) -> int:
    """Join (or start) the Ray that ``args.ray`` names and return the number of rollout workers;
    refuse more workers than the cluster has CPUs (each actor takes one: the surplus would wait for
    one forever)."""
    import ray

    from train.evaluation.ray_units import connect

    connect(args.ray or "local")
    workers = max(1, min(args.num_workers, args.num_envs))
    cpus = int(ray.cluster_resources().get("CPU", 0))
    if workers > cpus:
        raise ValueError(f"training option num_workers = {workers}: the Ray cluster at {args.ray} has "
                         f"{cpus} CPUs")
    return workers


class RayCollectors:
    """``collect(buf, gen)`` for ``LeanPPO``: the rollout gathered by ``num_workers`` Ray actors."""

    def __init__(self, model: LeanPPO, args: TrainArgs, rules: Any, pool: Any) -> None:
        import ray

        self.model, self.pool = model, pool
        workers = connect_for(args)
        shares = np.array_split(np.arange(args.num_envs), workers)
        spec = None if pool is None else {"league": pool.names[1:1 + pool.num_fixed]}
        actor = ray.remote(num_cpus=1, max_restarts=0)(RolloutWorker)
        self.workers = [actor.remote(args, rules, int(s[0]), len(s), spec) for s in shares]
        self.sent_seed: int | None = None
        self.sent_members: list[str] = []

    def collect(self, buf: Rollout, gen: torch.Generator) -> None:
        import ray

        start = time.perf_counter()
        model = self.model
        env_seed = model._env_seed if model._env_seed != self.sent_seed else None
        weights = ray.put(_numpy_state(model.actor))
        sync, before = self._pool_sync()
        base = int(torch.randint(0, 2**62, (1,), generator=gen).item())
        futures = [w.collect.remote(weights, stream_seed(base, i), env_seed, sync)
                   for i, w in enumerate(self.workers)]
        try:
            parts = ray.get(futures)
        except ray.exceptions.RayActorError as exc:
            raise ConnectionError(f"a Ray rollout worker died ({type(exc).__name__}); continue the run "
                                  "with --resume") from None
        self.sent_seed = model._env_seed
        dev = buf.obs.device
        for name in ("obs", "masks", "actions", "logp", "rewards", "dones"):
            getattr(buf, name).copy_(torch.from_numpy(np.concatenate([p[name] for p in parts], axis=1)))
        buf.last_obs = torch.from_numpy(np.concatenate([p["last_obs"] for p in parts])).to(dev)
        buf.truncated.clear()
        for t in range(buf.obs.shape[0]):
            pieces = [(rows, final) for p in parts for (s, rows, final) in p["truncated"] if s == t]
            if pieces:
                buf.truncated.append((t, torch.from_numpy(np.concatenate([r for r, _ in pieces])).to(dev),
                                      torch.from_numpy(np.concatenate([f for _, f in pieces])).to(dev)))
        for p in parts:
            model.margins.extend(p["margins"])
            model.episode_returns.extend(p["returns"])
            model.episode_lengths.extend(p["lengths"])
        if self.pool is not None and before is not None:
            self.pool.results = before + sum(p["results"] - before for p in parts)
        buf.collect_s = time.perf_counter() - start

    def _pool_sync(self) -> tuple[dict[str, Any] | None, np.ndarray | None]:
        """What the workers' pools need to mirror the driver's, and the driver's results now."""
        pool = self.pool
        if pool is None:
            return None, None
        past = pool.past
        new = [(name, _numpy_state(pool.members[pool.names.index(name)].policy))
               for name in past if name not in self.sent_members]
        self.sent_members = list(past)
        before = pool.results.copy()
        return {"names": list(pool.names), "results": before, "new": new}, before
