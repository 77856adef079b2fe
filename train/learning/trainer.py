"""``train()``: one PPO run on the batched envs, with TensorBoard logs, periodic evaluation on fixed
duplicate deals, safe checkpoints and resume (weights, optimizer, counters, RNG states and the
opponent pool; the envs restart on fresh deals). Two trainers share everything but the loop:
``algo: maskable_ppo`` (sb3-contrib's MaskablePPO on ``CanastaVecEnv``, ``train.learning.maskable``)
and ``algo: ppo`` (the lean batched PPO of ``train.learning.lean_ppo``: overlapped collection, bf16
where fast, CUDA); docs/training.md. The options are ``train.learning.config.TrainArgs``.
"""

from __future__ import annotations

import dataclasses
import random
import time
from pathlib import Path
from typing import Any

import numpy as np

from train.common.run_dir import new_run_dir
from train.common.stop_request import StopRequest
from train.learning.config import TrainArgs, check_args, lean
from train.learning.setup import RunSetup, resolve


def train(args: TrainArgs, resume: bool = False, selfplay: bool = False, *, overwrite: bool = False,
          strict_resume: bool = False, stop: StopRequest | None = None, until: int | None = None) -> Path:
    """Run (or continue) a training run; returns the run directory. With ``selfplay`` the
    opponent is a pool of the learner's latest policy and its past snapshots. When ``stop`` is
    requested the run ends at the next update boundary with a checkpoint, as at its end. ``until``
    ends this call at fewer learner steps than ``args.total_timesteps`` (a league's round), which
    config.json keeps as the run's total.

    The run directory is locked for the whole run; a folder that already holds a run needs
    ``resume`` or ``overwrite`` (``train.common.run_dir``), and nothing is written before those checks.
    """
    from canasta_env.rules import load_rules
    from train.common.run_dir import clear_run, open_run, write_config

    check_args(args)  # a TrainArgs built in code (canasta exploit, the exploiter league) is checked too
    rules = load_rules(args.rules)
    if args.run_dir is None:
        args = dataclasses.replace(args, run_dir=str(new_run_dir(rules.name)))
    run = Path(str(args.run_dir))
    with open_run(run, resume=resume, overwrite=overwrite):  # before the slow imports: fails fast
        import torch

        torch.set_num_threads(args.torch_threads)
        if args.device == "cuda" and not torch.cuda.is_available():
            raise ValueError("training option device = 'cuda', but torch sees no CUDA GPU "
                             "(torch.cuda.is_available() is false); use device 'cpu' or 'auto'")
        setup = resolve(args, rules, run, selfplay=selfplay, stop=stop, overwrite=overwrite, until=until)
        if overwrite:
            clear_run(run)
        if not resume:  # a resume writes it once its checkpoint has loaded (``restore``)
            write_config(run, dataclasses.asdict(args))
        random.seed(args.seed)
        np.random.seed(args.seed)
        torch.manual_seed(args.seed)
        if lean(args):
            trainer = train_lean
        else:
            from train.learning.maskable import train_maskable as trainer
        from train.learning.run_callback import final_summary

        started = time.perf_counter()
        first, last = trainer(setup, resume=resume, strict_resume=strict_resume)
        print(final_summary(run, last, last - first, time.perf_counter() - started), flush=True)
    return run


def train_lean(setup: RunSetup, *, resume: bool, strict_resume: bool) -> tuple[int, int]:
    """``algo: ppo``: ``train.learning.lean_ppo.LeanPPO``, with the evaluations, checkpoints,
    snapshots and logs of ``train.learning.run_callback`` at its sync points; returns the learner
    steps at its start and end."""
    from train.learning import lean_ppo, run_callback
    from train.learning.restore import restore
    from train.learning.warm_start import clone_teacher, start_from

    args, pool = setup.args, setup.pool
    model = lean_ppo.LeanPPO(args, setup.rules, setup.opponent)
    if pool is not None:
        pool.members[0].policy = model.actor  # the opponent plays the collector's weights
    if args.ray is not None:
        from train.learning.ray_rollouts import RayCollectors

        model.collector = RayCollectors(model, args, setup.rules, pool).collect
    restored = False
    if resume:
        restored = restore(model, setup.run, setup.rules, pool, strict=strict_resume, args=args)
        model.reset_envs(args.seed + model.num_timesteps)
    logger = run_callback.make_logger(setup.run)
    run_callback.announce(setup, model.num_timesteps)
    if setup.init is not None and not restored:
        start_from(model.policy, setup.init)
    if setup.teacher is not None and not restored:
        bf16 = model.precision == "bf16" and model.device.type == "cpu"
        clone_teacher(setup, model.policy, logger, bf16=bf16)
    per_rollout = args.num_envs * args.n_steps  # the run ends at the first whole rollout past the total
    bar = _progress_bar(args, model.num_timesteps, -(-setup.until // per_rollout) * per_rollout)
    start_steps = model.num_timesteps
    try:
        model.learn(setup.until, on_sync=_sync_hook(setup, logger, bar, start_steps))
    finally:
        if bar is not None:
            bar.close()
    run_callback.save_run_checkpoint(setup, model.policy, model.num_timesteps, model._n_updates)
    return start_steps, model.num_timesteps


def _sync_hook(setup: RunSetup, logger: Any, bar: Any, start_steps: int) -> Any:
    """The lean trainer's ``on_sync``: logs, then ``run_callback.sync_point``; False stops the run."""
    from train.learning import run_callback

    started = time.perf_counter()
    last = dict.fromkeys(("eval", "ckpt", "snapshot"), start_steps)

    def on_sync(m: Any) -> bool:
        steps = m.num_timesteps
        rate = (steps - start_steps) / max(time.perf_counter() - started, 1e-9)
        run_callback.record_episodes(logger, m.margins, rate)
        if m.episode_returns:
            logger.record("rollout/ep_rew_mean", float(np.mean(m.episode_returns[-100:])))
            logger.record("rollout/ep_len_mean", float(np.mean(m.episode_lengths[-100:])))
            del m.episode_returns[:-100], m.episode_lengths[:-100]
        for key, value in m.train_stats.items():
            if key != "update_s":
                logger.record(f"train/{key}", value)
        if setup.pool is not None:
            run_callback.record_league(logger, setup.pool)
        run_callback.sync_point(setup, m.policy, steps, m._n_updates, logger, last)
        logger.record("time/total_timesteps", steps)
        logger.record("time/fps", int(rate))
        logger.dump(step=steps)
        if bar is not None:
            bar.update(steps - bar.n)
        return not (setup.stop is not None and setup.stop.requested)

    return on_sync


def _progress_bar(args: TrainArgs, done: int, total: int) -> Any:
    """A tqdm bar over the learner steps when ``progress`` is on and tqdm is installed."""
    if not args.progress:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, initial=done, unit="step")
