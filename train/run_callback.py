"""The callback of ``canasta train``/``selfplay``: Canasta statistics in the logs, evaluations on
fixed deals, checkpoints and self-play snapshots, on SB3's callback hooks.

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


class RunCallback(BaseCallback):
    """Logs Canasta statistics, evaluates on fixed deals and writes checkpoints."""

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
        """Freeze a copy of the current policy into the opponent pool and write the checkpoint
        it is reloaded from on resume (that checkpoint lists the pool with itself in it)."""
        import copy

        from agents.checkpoint import checkpoint_name
        from agents.learned import PolicyAgent

        frozen = copy.deepcopy(self.model.policy).eval()
        self.pool.add(PolicyAgent(frozen, deterministic=False), checkpoint_name(self.model.num_timesteps))
        self.checkpoint(self.model)
        self.logger.record("selfplay/pool_size", len(self.pool.past))

    def _on_rollout_end(self) -> None:
        if self.margins:
            arr = np.asarray(self.margins)
            self.logger.record("canasta/final_reward_mean", float(arr.mean()))
            self.logger.record("canasta/win_rate", float((arr > 0).mean()))
            self.margins.clear()
        secs = time.perf_counter() - self.started
        self.logger.record("canasta/steps_per_s", (self.model.num_timesteps - self.start_steps) / secs)

    def evaluate(self) -> dict[str, dict[str, float]]:
        """Deterministic policy against each evaluation opponent on the fixed deal set."""
        from agents import make_agent
        from agents.learned import PolicyAgent
        from agents.match import play_match

        me = PolicyAgent(self.model.policy, deterministic=True)
        deals: Any = self.args.eval_deals
        if self.args.eval_deal_set is not None:
            from canasta_env.deal_sets import load_deal_set

            deals = load_deal_set(self.args.eval_deal_set, self.rules).deals(range(self.args.eval_deals))
        results = {}
        for name in self.args.eval_opponents:
            record_to = Path(self.args.run_dir) / "eval_records.jsonl" if self.args.eval_records else None
            summary = play_match(self.rules, me, make_agent(name, self.rules), deals,
                                 seed=self.args.eval_seed, record_to=record_to,
                                 labels=(f"policy@{self.model.num_timesteps}", name)).summary()
            for key in ("mean_margin", "win_rate", "went_out", "opened"):
                self.logger.record(f"eval_{name}/{key}", summary[key])
            results[name] = summary
        return results

    def checkpoint(self, model: Any) -> Path:
        from agents.checkpoint import build_meta, checkpoint_name, rng_state, save_checkpoint

        state = {"num_timesteps": int(model.num_timesteps),
                 "n_updates": int(getattr(model, "_n_updates", 0)), "rng": rng_state(),
                 "opponent_pool": self.pool.past if self.pool is not None else []}
        from canasta_env.learner import default_reward_scale

        config = dict(dataclasses.asdict(self.args), reward_scale=default_reward_scale(self.rules))
        meta = build_meta(config=config, rules=self.rules, policy=model.policy)
        return save_checkpoint(self.run, checkpoint_name(model.num_timesteps),
                               policy_state=model.policy.state_dict(),
                               optimizer_state=model.policy.optimizer.state_dict(),
                               state=state, meta=meta)
