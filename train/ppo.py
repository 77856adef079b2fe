"""``canasta train``: sb3-contrib MaskablePPO on the batched VecEnv, with TensorBoard logs,
periodic evaluation on fixed duplicate deals, safe checkpoints and resume (weights, optimizer,
counters, RNG states and the opponent pool; the envs restart on fresh deals).

One readable script (CleanRL style): the ``TrainArgs`` dataclass is the config (YAML files in
``configs/train/`` are serialised ``TrainArgs``; flags override single fields).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from agents.checkpoint import kill_point


@dataclass
class TrainArgs:
    """A training run."""

    rules: str = "classic_2p"  # preset name or rules YAML
    opponent: str = "random"  # agent playing the other side (agents.make_agent name)
    total_timesteps: int = 200_000  # learner steps (forced decisions are skipped and not counted)
    num_envs: int = 256  # envs in the batched VecEnv
    n_steps: int = 32  # rollout length per env
    batch_size: int = 2048
    n_epochs: int = 4
    learning_rate: float = 3e-4
    gamma: float = 0.995
    gae_lambda: float = 0.95
    ent_coef: float = 0.01
    clip_range: float = 0.2
    net_arch: list[int] = field(default_factory=lambda: [256, 256])
    seed: int = 0
    run_dir: str = "runs/ppo"  # checkpoints, TensorBoard events, config
    checkpoint_every: int = 50_000  # learner steps between checkpoints
    eval_every: int = 50_000  # learner steps between evaluations
    eval_deals: int = 200  # fixed duplicate deals per evaluation (each played twice)
    eval_seed: int = 2027  # evaluation deals DealId(eval_seed, i, 0), unless eval_deal_set is set
    eval_deal_set: str | None = None  # a fixed deal set (canasta_env.deal_sets): "v1" or a .npz path
    eval_records: bool = False  # append every evaluation hand to RUN_DIR/eval_records.jsonl
    eval_opponents: list[str] = field(default_factory=lambda: ["random"])
    torch_threads: int = 1  # measured: 2 threads make small-network PPO ~40x slower here
    progress: bool = True
    snapshot_every: int = 100_000  # selfplay: learner steps between snapshots joining the pool
    pool_size: int = 10  # selfplay: past snapshots kept
    latest_ratio: float = 0.5  # selfplay: share of episodes against the latest policy


def load_args(config: str | None, overrides: dict[str, Any]) -> TrainArgs:
    """``TrainArgs`` from a YAML file and flag overrides; unknown keys are errors naming the file."""
    import yaml

    data: dict[str, Any] = {}
    if config:
        loaded = yaml.safe_load(Path(config).read_text()) or {}
        if not isinstance(loaded, dict):
            raise ValueError(f"{config}: expected a mapping of training options")
        data.update(loaded)
    data.update({k: v for k, v in overrides.items() if v is not None})
    known = {f.name for f in dataclasses.fields(TrainArgs)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"{config or '<flags>'}: unknown training option(s) {unknown}; "
                         f"known: {sorted(known)}")
    for f in dataclasses.fields(TrainArgs):
        if f.name in data and not _fits(data[f.name], str(f.type)):
            raise ValueError(f"{config or '<flags>'}: training option {f.name!r} = {data[f.name]!r} "
                             f"is not a {f.type}")
    return TrainArgs(**data)


def _fits(value: Any, kind: str) -> bool:
    if kind.endswith(" | None"):
        return value is None or _fits(value, kind[: -len(" | None")])
    if kind.startswith("list"):
        element = int if "int" in kind else str
        return isinstance(value, list) and all(isinstance(v, element) for v in value)
    expected = {"int": (int,), "float": (int, float), "bool": (bool,), "str": (str,)}[kind]
    return isinstance(value, expected) and (kind == "bool" or not isinstance(value, bool))


def _bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def add_flags(parser: argparse.ArgumentParser) -> None:
    """One ``--field`` flag per ``TrainArgs`` field (overrides the config file)."""
    parser.add_argument("--config", help="YAML file of TrainArgs fields")
    parser.add_argument("--resume", action="store_true", help="continue from the run's latest checkpoint")
    for f in dataclasses.fields(TrainArgs):
        kind = str(f.type)
        if kind.startswith("list"):
            element = int if "int" in kind else str
            parser.add_argument(f"--{f.name}", nargs="+", type=element, default=None)
        else:
            caster = {"int": int, "float": float, "bool": _bool}.get(kind, str)
            parser.add_argument(f"--{f.name}", type=caster, default=None)


add_arguments = add_flags


def run_command(ns: argparse.Namespace, selfplay: bool = False) -> int:
    """Shared entry point of ``canasta train`` and ``canasta selfplay``."""
    skip = {"config", "resume", "command", "_run"}
    overrides = {k: v for k, v in vars(ns).items() if k not in skip}
    train(load_args(ns.config, overrides), resume=ns.resume, selfplay=selfplay)
    return 0


def run(ns: argparse.Namespace) -> int:
    """``canasta train`` entry point."""
    return run_command(ns)


def train(args: TrainArgs, resume: bool = False, selfplay: bool = False) -> Path:
    """Run (or continue) a training run; returns the run directory. With ``selfplay`` the
    opponent is a pool of the learner's latest policy and its past snapshots."""
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.logger import Logger, make_output_format
    from stable_baselines3.common.vec_env import VecMonitor

    from agents import make_agent
    from canasta_env.rules import load_rules
    from canasta_env.sb3_env import CanastaVecEnv

    torch.set_num_threads(args.torch_threads)
    rules = load_rules(args.rules)
    run = Path(args.run_dir)
    run.mkdir(parents=True, exist_ok=True)
    if not (run / "config.json").exists():
        (run / "config.json").write_text(json.dumps(dataclasses.asdict(args), indent=1))
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    pool = None
    if selfplay:
        from agents.learned import PolicyAgent
        from agents.pool import PoolAgent

        pool = PoolAgent(PolicyAgent(None, deterministic=False), args.num_envs, args.latest_ratio,
                         args.pool_size)
        opponent: Any = pool
    else:
        opponent = make_agent(args.opponent, rules)
    venv = CanastaVecEnv(args.num_envs, rules, opponent=opponent)
    venv.seed(args.seed)
    env = VecMonitor(venv)
    model = MaskablePPO(
        "MlpPolicy", env, n_steps=args.n_steps, batch_size=args.batch_size,
        n_epochs=args.n_epochs, learning_rate=args.learning_rate, gamma=args.gamma,
        gae_lambda=args.gae_lambda, ent_coef=args.ent_coef, clip_range=args.clip_range,
        policy_kwargs={"net_arch": list(args.net_arch)}, seed=args.seed, device="cpu", verbose=0)
    if pool is not None:
        pool.members[0].policy = model.policy  # type: ignore[attr-defined]
    if resume:
        restore(model, run, rules, pool)
        # the envs restart on fresh deals named by the counters (episodes in flight are dropped)
        venv.seed(args.seed + model.num_timesteps)
        model._last_obs = None  # type: ignore[assignment]
    suffix = f"-{model.num_timesteps}" if model.num_timesteps else ""  # a resume keeps older CSVs
    model.set_logger(Logger(str(run / "tb"), [make_output_format(f, str(run / "tb"), suffix)
                                              for f in ("tensorboard", "csv")]))
    _install_kill_points(model)
    callback = RunCallback(args, rules, run, pool)
    remaining = max(0, args.total_timesteps - model.num_timesteps)
    model.learn(remaining, callback=callback, reset_num_timesteps=not resume,
                progress_bar=args.progress)
    callback.checkpoint(model)
    return run


def _install_kill_points(model: Any) -> None:
    """Test hook (``CANASTA_TEST_KILL_AT=update``): die inside a gradient update."""
    import os

    if "update" not in os.environ.get("CANASTA_TEST_KILL_AT", ""):
        return
    optimizer = model.policy.optimizer
    original = optimizer.step

    def step(*args: Any, **kwargs: Any) -> Any:
        kill_point("update")
        return original(*args, **kwargs)

    optimizer.step = step


def restore(model: Any, run: Path, rules: Any, pool: Any = None) -> None:
    """Load the latest complete checkpoint into ``model`` (weights, optimizer, counters, RNG)."""
    from agents.checkpoint import (
        current_layout,
        latest_checkpoint,
        load_checkpoint,
        remove_partial_checkpoints,
        restore_rng_state,
    )

    remove_partial_checkpoints(run)
    path = latest_checkpoint(run)
    if path is None:
        return
    ckpt = load_checkpoint(path, rules=rules, expect_layout=current_layout(rules))
    model.policy.load_state_dict(ckpt.policy_state)
    model.policy.optimizer.load_state_dict(ckpt.optimizer_state)
    model.num_timesteps = int(ckpt.state["num_timesteps"])
    model._n_updates = int(ckpt.state.get("n_updates", 0))
    restore_rng_state(ckpt.state["rng"])
    if pool is not None:
        from agents.learned import load_policy_agent

        for name in ckpt.state.get("opponent_pool", []):
            pool.add(load_policy_agent(str(run / name), rules, deterministic=False), name)


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
