"""Calibrate the CI learning test (``tests/train/test_learning.py``).

    python scripts/calibrate_learning.py [--runs 5] [--first-seed 1] [--algo maskable_ppo|ppo]
                                         [--overlap true|false] [--precision auto|fp32|bf16]

One *learning run* (``learning_gain``): MaskablePPO with the default ``TrainArgs`` hyperparameters on
the ``classic_2p`` ``CanastaVecEnv`` against ``random``, for ``STEPS`` learner steps, one torch
thread. Its deterministic policy plays ``EVAL_DEALS`` fixed duplicate deals against ``random``
(``agents.match.play_match``, each deal once per seating) before and after training; the gain is the
change in mean margin per deal (points).

This script makes ``--runs`` learning runs with seeds ``first_seed, first_seed + 1, ...`` and prints
each gain, their mean and minimum, and the test threshold: half the mean gain. Paste the figures and
the threshold into ``tests/train/test_learning.py``.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

RULES = "classic_2p"
STEPS = 250_000  # learner steps of one run (~30 s at the default config's ~9,000 steps/s)
EVAL_DEALS = 400  # fixed duplicate deals, each played once per seating
EVAL_SEED = 4242  # names the evaluation deals (apart from the training deals, seeded by the run seed)


@dataclass
class LearningRun:
    seed: int
    before: float  # mean margin per deal against random, untrained policy
    after: float  # the same after STEPS learner steps
    seconds: float  # training time

    @property
    def gain(self) -> float:
        return self.after - self.before


def evaluate(policy: object, rules: object, deals: int = EVAL_DEALS) -> float:
    """Mean margin per deal of the deterministic policy against ``random`` on the fixed deals."""
    from agents import make_agent
    from agents.learned.policy import PolicyAgent
    from agents.match import play_match

    result = play_match(rules, PolicyAgent(policy, deterministic=True), make_agent("random", rules),
                        deals, seed=EVAL_SEED)
    return float(result.summary(resamples=10)["mean_margin"])


def learning_gain(seed: int, steps: int = STEPS, algo: str = "maskable_ppo",
                  **options: object) -> LearningRun:
    """One learning run (see the module docstring); ``algo="ppo"`` trains with the lean trainer
    (``train.learning.lean_ppo``) at the default ``TrainArgs`` plus ``options`` (e.g. ``overlap=False``)."""
    if algo == "ppo":
        return _lean_gain(seed, steps, **options)
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import VecMonitor

    from agents import make_agent
    from canasta_env.envs.sb3_env import CanastaVecEnv
    from canasta_env.rules import load_rules
    from train.learning.config import TrainArgs

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        a = TrainArgs()
        rules = load_rules(RULES)
        venv = CanastaVecEnv(a.num_envs, rules, opponent=make_agent("random", rules))
        venv.seed(seed)
        model = MaskablePPO(
            "MlpPolicy", VecMonitor(venv), n_steps=a.n_steps, batch_size=a.batch_size,
            n_epochs=a.n_epochs, learning_rate=a.learning_rate, gamma=a.gamma,
            gae_lambda=a.gae_lambda, ent_coef=a.ent_coef, clip_range=a.clip_range,
            policy_kwargs={"net_arch": list(a.net_arch)}, seed=seed, device="cpu", verbose=0)
        before = evaluate(model.policy, rules)
        start = time.perf_counter()
        model.learn(steps)
        seconds = time.perf_counter() - start
        after = evaluate(model.policy, rules)
        venv.close()
    finally:
        torch.set_num_threads(threads)
    return LearningRun(seed, before, after, seconds)


def _lean_gain(seed: int, steps: int, **options: object) -> LearningRun:
    import random

    import numpy as np
    import torch

    from agents import make_agent
    from canasta_env.rules import load_rules
    from train.learning.config import TrainArgs
    from train.learning.lean_ppo import LeanPPO

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        args = TrainArgs(seed=seed, algo="ppo", device="cpu", **options)  # type: ignore[arg-type]
        rules = load_rules(RULES)
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        model = LeanPPO(args, rules, make_agent("random", rules))
        before = evaluate(model.policy, rules)
        start = time.perf_counter()
        model.learn(steps)
        seconds = time.perf_counter() - start
        after = evaluate(model.policy, rules)
    finally:
        torch.set_num_threads(threads)
    return LearningRun(seed, before, after, seconds)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--algo", choices=("maskable_ppo", "ppo"), default="maskable_ppo")
    parser.add_argument("--overlap", choices=("true", "false"), default="true",
                        help="algo ppo: collect while updating")
    parser.add_argument("--precision", choices=("auto", "fp32", "bf16"), default="auto")
    ns = parser.parse_args(argv)
    options = {} if ns.algo == "maskable_ppo" else {"overlap": ns.overlap == "true",
                                                    "precision": ns.precision}
    gains = []
    for seed in range(ns.first_seed, ns.first_seed + ns.runs):
        r = learning_gain(seed, ns.steps, ns.algo, **options)
        gains.append(r.gain)
        print(f"seed {seed}: before {r.before:.1f}, after {r.after:.1f}, gain {r.gain:.1f} "
              f"({r.seconds:.1f} s training)", flush=True)
    mean = sum(gains) / len(gains)
    print(f"gains {[round(g, 1) for g in gains]}; mean {mean:.1f}, min {min(gains):.1f}; "
          f"threshold (half the mean) {mean / 2:.1f}")


if __name__ == "__main__":
    main()
