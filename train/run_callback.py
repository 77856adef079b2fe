"""What both trainers of ``canasta train``/``selfplay`` do besides learning: Canasta statistics in
the logs, evaluations on fixed deals, checkpoints and self-play snapshots. One home for each as a
function (``record_episodes``, ``evaluate``, ``save_run_checkpoint``, ``snapshot``), called by the
lean trainer (``train.lean_ppo``) at its sync points and by ``RunCallback`` on SB3's hooks
(``algo: maskable_ppo``).

Its own module so that ``train.ppo`` (the options and the command) imports without torch or SB3.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from agents.checkpoint import kill_point
from train.ppo import TrainArgs


def record_episodes(logger: Any, margins: list[float], steps_per_s: float) -> None:
    """Log the final rewards of the episodes ended since the last call (mean, win rate) and the
    learner steps per second; empties ``margins``."""
    if margins:
        arr = np.asarray(margins)
        logger.record("canasta/final_reward_mean", float(arr.mean()))
        logger.record("canasta/win_rate", float((arr > 0).mean()))
        margins.clear()
    logger.record("canasta/steps_per_s", steps_per_s)


def evaluate(args: TrainArgs, rules: Any, policy: Any, num_timesteps: int,
             logger: Any) -> dict[str, dict[str, float]]:
    """Deterministic ``policy`` against each evaluation opponent on the fixed deal set, logged
    under ``eval_<name>/...``."""
    from agents import make_agent
    from agents.learned import PolicyAgent
    from agents.match import play_match

    me = PolicyAgent(policy, deterministic=True)
    deals: Any = args.eval_deals
    if args.eval_deal_set is not None:
        from canasta_env.deal_sets import load_deal_set

        deals = load_deal_set(args.eval_deal_set, rules).deals(range(args.eval_deals))
    results = {}
    for name in args.eval_opponents:
        record_to = Path(args.run_dir) / "eval_records.jsonl" if args.eval_records else None
        summary = play_match(rules, me, make_agent(name, rules), deals, seed=args.eval_seed,
                             record_to=record_to, labels=(f"policy@{num_timesteps}", name)).summary()
        for key in ("mean_margin", "win_rate", "went_out", "opened"):
            logger.record(f"eval_{name}/{key}", summary[key])
        results[name] = summary
    return results


def save_run_checkpoint(args: TrainArgs, rules: Any, run: Path, policy: Any, num_timesteps: int,
                        n_updates: int, pool: Any = None) -> Path:
    """Checkpoint ``policy`` (weights, its optimizer), the counters, the RNG states and the
    opponent pool's names into ``run`` (``agents.checkpoint`` format, one for both trainers)."""
    from agents.checkpoint import build_meta, checkpoint_name, rng_state, save_checkpoint
    from canasta_env.learner import default_reward_scale

    state = {"num_timesteps": int(num_timesteps), "n_updates": int(n_updates), "rng": rng_state(),
             "opponent_pool": pool.past if pool is not None else []}
    config = dict(dataclasses.asdict(args), reward_scale=default_reward_scale(rules))
    meta = build_meta(config=config, rules=rules, policy=policy)
    return save_checkpoint(run, checkpoint_name(num_timesteps), policy_state=policy.state_dict(),
                           optimizer_state=policy.optimizer.state_dict(), state=state, meta=meta)


def snapshot(pool: Any, policy: Any, num_timesteps: int) -> None:
    """Freeze a copy of ``policy`` into the self-play opponent pool (on the CPU, in eval mode);
    the caller then writes the checkpoint it is reloaded from on resume."""
    import copy

    from agents.checkpoint import checkpoint_name
    from agents.learned import PolicyAgent

    frozen = copy.deepcopy(policy).eval()
    pool.add(PolicyAgent(frozen, deterministic=False), checkpoint_name(num_timesteps))


class RunCallback(BaseCallback):
    """SB3 hooks of ``algo: maskable_ppo``: logs Canasta statistics, evaluates on fixed deals and
    writes checkpoints (the module's functions)."""

    def __init__(self, args: TrainArgs, rules: Any, run: Path, pool: Any = None) -> None:
        super().__init__()
        self.args, self.rules, self.run, self.pool = args, rules, run, pool
        self.last_ckpt = self.last_eval = self.last_snapshot = 0
        self.started = time.perf_counter()
        self.start_steps = 0
        self.margins: list[float] = []

    def _on_training_start(self) -> None:
        self.start_steps = self.model.num_timesteps
        self.last_ckpt = self.last_eval = self.last_snapshot = self.model.num_timesteps

    def _on_step(self) -> bool:
        kill_point("rollout")
        for info, done, reward in zip(self.locals["infos"], self.locals["dones"],
                                      self.locals["rewards"], strict=True):
            if done and not info.get("illegal_action"):
                self.margins.append(float(reward))
        steps = self.model.num_timesteps
        if steps - self.last_eval >= self.args.eval_every:
            self.evaluate()
            self.last_eval = steps
        if steps - self.last_ckpt >= self.args.checkpoint_every:
            self.checkpoint(self.model)
            self.last_ckpt = steps
        if self.pool is not None and steps - self.last_snapshot >= self.args.snapshot_every:
            self.snapshot()
            self.last_snapshot = steps
        return True

    def snapshot(self) -> None:
        """Add the current policy to the pool and write the checkpoint it is reloaded from on
        resume (that checkpoint lists the pool with itself in it)."""
        snapshot(self.pool, self.model.policy, self.model.num_timesteps)
        self.checkpoint(self.model)
        self.logger.record("selfplay/pool_size", len(self.pool.past))

    def _on_rollout_end(self) -> None:
        secs = time.perf_counter() - self.started
        record_episodes(self.logger, self.margins, (self.model.num_timesteps - self.start_steps) / secs)

    def evaluate(self) -> dict[str, dict[str, float]]:
        """Deterministic policy against each evaluation opponent on the fixed deal set."""
        return evaluate(self.args, self.rules, self.model.policy, self.model.num_timesteps, self.logger)

    def checkpoint(self, model: Any) -> Path:
        return save_run_checkpoint(self.args, self.rules, self.run, model.policy, model.num_timesteps,
                                   getattr(model, "_n_updates", 0), self.pool)
