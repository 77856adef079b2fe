"""``algo: maskable_ppo``: sb3-contrib's MaskablePPO on ``CanastaVecEnv``, with the run's
evaluations, checkpoints and logs through SB3's callback hooks (``train.learning.run_callback``)."""

from __future__ import annotations

import os
from typing import Any

from agents.checkpoint import kill_point
from train.learning.restore import restore
from train.learning.run_callback import make_logger
from train.learning.setup import RunSetup
from train.learning.warm_start import clone_teacher, start_from


def train_maskable(setup: RunSetup, *, resume: bool, strict_resume: bool) -> tuple[int, int]:
    """``algo: maskable_ppo``: sb3-contrib's MaskablePPO on ``CanastaVecEnv``; returns the learner
    steps at its start and end."""
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import VecMonitor

    from canasta_env.envs.sb3_env import CanastaVecEnv
    from train.learning import run_callback

    args, rules, run, pool = setup.args, setup.rules, setup.run, setup.pool
    device = "cuda" if args.device == "auto" and torch.cuda.is_available() else args.device
    device = "cpu" if device == "auto" else device
    venv = CanastaVecEnv(args.num_envs, rules, opponent=setup.opponent, reward_mode=args.reward_mode)
    venv.seed(args.seed)
    env = VecMonitor(venv)
    model = MaskablePPO(
        "MlpPolicy", env, n_steps=args.n_steps, batch_size=args.batch_size,
        n_epochs=args.n_epochs, learning_rate=args.learning_rate, gamma=args.gamma,
        gae_lambda=args.gae_lambda, ent_coef=args.ent_coef, clip_range=args.clip_range,
        vf_coef=args.vf_coef, max_grad_norm=args.max_grad_norm,
        policy_kwargs={"net_arch": list(args.net_arch)}, seed=args.seed, device=device, verbose=0)
    if pool is not None:
        pool.members[0].policy = model.policy  # type: ignore[attr-defined]
    restored = False
    if resume:
        restored = restore(model, run, rules, pool, strict=strict_resume, args=args)
        # the envs restart on fresh deals named by the counters (episodes in flight are dropped)
        venv.seed(args.seed + model.num_timesteps)
        model._last_obs = None  # type: ignore[assignment]
    model.set_logger(make_logger(run))
    run_callback.announce(setup, model.num_timesteps)
    start_steps = model.num_timesteps
    if setup.init is not None and not restored:
        start_from(model.policy, setup.init)
    if setup.teacher is not None and not restored:
        clone_teacher(setup, model.policy, model.logger)
    install_kill_points(model)
    callback = run_callback.RunCallback(setup)
    remaining = max(0, setup.until - model.num_timesteps)
    model.learn(remaining, callback=callback, reset_num_timesteps=not resume,
                progress_bar=args.progress)
    callback.checkpoint(model)
    return start_steps, model.num_timesteps


def install_kill_points(model: Any) -> None:
    """Test hook (``CANASTA_TEST_KILL_AT=update``): die inside a gradient update."""
    if "update" not in os.environ.get("CANASTA_TEST_KILL_AT", ""):
        return
    optimizer = model.policy.optimizer
    original = optimizer.step

    def step(*args: Any, **kwargs: Any) -> Any:
        kill_point("update")
        return original(*args, **kwargs)

    optimizer.step = step
