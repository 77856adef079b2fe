"""End-to-end PPO throughput of a training config, split into collection and update time.

    python scripts/bench_train.py [--config configs/train/ppo_classic_2p.yaml] [--steps 200000]
                                  [--algo ppo|mmd|maskable_ppo] [--device auto|cpu|cuda]
                                  [--precision auto|fp32|bf16] [--overlap true|false]
                                  [--field value ...] [--json]

Runs ``train.learning.trainer.train`` itself (the same envs, trainer, logger and final checkpoint as ``canasta
train``) on a budget of ``--steps`` learner steps in a temporary run directory, with evaluation and
periodic checkpoints pushed past the budget (they are occasional costs, reported by ``canasta train``
itself). Prints one JSON object (``--json`` is accepted for clarity; the output is always JSON):

* ``wall_steps_per_s``: learner steps over wall time after the warm-up (the first rollout and the
  first update are excluded: numba compile/load, torch first-call costs);
* ``collect_steps_per_s`` and ``update_steps_per_s``: the rate of each phase alone;
* ``overlap_fraction``: the share of collection time hidden behind updates (0 without overlap).

``algo: ppo`` and ``mmd`` (``train.learning.lean_ppo``) record each iteration's collection, update and wall
time itself.
``algo: maskable_ppo``: ``RunCallback`` is swapped for a subclass that times each phase of SB3's loop:

* collection: ``on_rollout_start`` to ``on_rollout_end`` (``collect_rollouts``: env steps, policy
  forward passes, buffer writes, the per-step callback);
* update: ``on_rollout_end`` to the next ``on_rollout_start`` (``train()``: the PPO epochs, plus
  SB3's logging dump, which is small).

The two phases run one after the other there, so ``wall_steps_per_s`` is steps over their sum.
Also printed: ``collect_s``, ``update_s``, ``update_share``, ``wall_s`` (whole ``train()`` call,
compile and setup included) and the config fields that matter for speed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from train.cli import train as train_command  # noqa: E402
from train.learning import config, run_callback, trainer  # noqa: E402

DEFAULT_CONFIG = ROOT / "configs" / "train" / "ppo_classic_2p.yaml"
SPEED_FIELDS = ("algo", "rules", "opponent", "num_envs", "n_steps", "batch_size", "n_epochs", "net_arch",
                "torch_threads", "device", "precision", "overlap", "ray", "num_workers")


class TimedRunCallback(run_callback.RunCallback):
    """``RunCallback`` plus wall-clock timers around SB3's collection and update phases."""

    timings: dict[str, Any] = {}

    def _on_training_start(self) -> None:
        super()._on_training_start()
        self.t_mark = time.perf_counter()
        self.rollouts = 0
        self.collect_s = self.update_s = 0.0
        self.timed_from_steps: int | None = None

    def _on_rollout_start(self) -> None:
        now = time.perf_counter()
        if self.rollouts >= 2:  # the first update (after rollout 1) is warm-up
            self.update_s += now - self.t_mark
        elif self.rollouts == 1:
            self.timed_from_steps = self.model.num_timesteps
        self.t_mark = now

    def _on_rollout_end(self) -> None:
        now = time.perf_counter()
        if self.rollouts >= 1:
            self.collect_s += now - self.t_mark
        self.rollouts += 1
        self.t_mark = now
        super()._on_rollout_end()

    def _on_training_end(self) -> None:
        now = time.perf_counter()
        if self.rollouts >= 2:  # the last update ends training
            self.update_s += now - self.t_mark
        steps = self.model.num_timesteps - (self.timed_from_steps or 0)
        TimedRunCallback.timings = {"timed_steps": steps, "rollouts_timed": self.rollouts - 1,
                                    "collect_s": self.collect_s, "update_s": self.update_s}


def bench(args: config.TrainArgs) -> dict[str, Any]:
    """Train on ``args`` (its budget) and return the timing figures."""
    if args.algo in ("ppo", "mmd"):  # both run on the lean trainer
        return bench_lean(args)
    original = run_callback.RunCallback
    run_callback.RunCallback = TimedRunCallback  # type: ignore[misc]
    try:
        start = time.perf_counter()
        with contextlib.redirect_stdout(sys.stderr):  # the run's own lines; stdout is the JSON
            trainer.train(args)
        wall = time.perf_counter() - start
    finally:
        run_callback.RunCallback = original  # type: ignore[misc]
    t = TimedRunCallback.timings
    total = t["collect_s"] + t["update_s"]
    return {
        "wall_steps_per_s": round(t["timed_steps"] / total, 1),
        "steps_per_s": round(t["timed_steps"] / total, 1),
        "overlap_fraction": 0.0,
        "collect_steps_per_s": round(t["timed_steps"] / t["collect_s"], 1),
        "update_steps_per_s": round(t["timed_steps"] / t["update_s"], 1),
        "collect_s": round(t["collect_s"], 2), "update_s": round(t["update_s"], 2),
        "update_share": round(t["update_s"] / total, 3),
        "timed_steps": t["timed_steps"], "rollouts_timed": t["rollouts_timed"],
        "wall_s": round(wall, 1),
        **{name: getattr(args, name) for name in SPEED_FIELDS},
    }


def bench_lean(args: config.TrainArgs) -> dict[str, Any]:
    """``bench`` for the lean trainer (``algo: ppo``, ``mmd``): its own timings, the first excluded."""
    from train.learning import lean_ppo

    made: list[lean_ppo.LeanPPO] = []
    original = lean_ppo.LeanPPO

    class Recorded(original):  # type: ignore[misc, valid-type]
        def __init__(self, *a: Any, **k: Any) -> None:
            super().__init__(*a, **k)
            made.append(self)

    lean_ppo.LeanPPO = Recorded  # type: ignore[misc]
    try:
        start = time.perf_counter()
        with contextlib.redirect_stdout(sys.stderr):  # the run's own lines; stdout is the JSON
            trainer.train(args)
        wall = time.perf_counter() - start
    finally:
        lean_ppo.LeanPPO = original  # type: ignore[misc]
    model = made[-1]
    timed = model.timings[1:]
    if not timed:
        raise ValueError(f"--steps {args.total_timesteps} gives one rollout of "
                         f"{args.num_envs * args.n_steps} steps; the first is warm-up: run more")
    steps = sum(t["steps"] for t in timed)
    wall_s = sum(t["wall_s"] for t in timed)
    update_s = sum(t["update_s"] for t in timed)
    collecting = [t for t in timed if t["collect_s"] > 0]
    collect_s = sum(t["collect_s"] for t in collecting)
    hidden = sum(max(0.0, min(t["collect_s"], t["collect_s"] + t["update_s"] - t["wall_s"]))
                 for t in collecting)
    return {
        "wall_steps_per_s": round(steps / wall_s, 1),
        "collect_steps_per_s": (round(sum(t["steps"] for t in collecting) / collect_s, 1)
                                if collect_s else None),
        "update_steps_per_s": round(steps / update_s, 1),
        "overlap_fraction": round(hidden / collect_s, 3) if collect_s else 0.0,
        "collect_s": round(collect_s, 2), "update_s": round(update_s, 2), "timed_wall_s": round(wall_s, 2),
        "timed_steps": steps, "rollouts_timed": len(timed), "wall_s": round(wall, 1),
        "resolved_device": str(model.device), "resolved_precision": model.precision,
        **{name: getattr(args, name) for name in SPEED_FIELDS},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    train_command.add_flags(parser)
    parser.add_argument("--steps", type=int, default=200_000, help="learner steps to run")
    parser.add_argument("--json", action="store_true", help="print one JSON object (the default output)")
    parser.set_defaults(config=str(DEFAULT_CONFIG))
    ns = parser.parse_args(argv)
    overrides = {k: v for k, v in vars(ns).items()
                 if k not in {"config", "resume", "steps", "json", "overwrite", "strict_resume"}
                 and v is not None}
    if "net_arch" in overrides:  # list flags arrive as strings
        overrides["net_arch"] = [int(w) for w in overrides["net_arch"]]
    if "eval_opponents" in overrides:
        overrides["eval_opponents"] = list(overrides["eval_opponents"])
    with tempfile.TemporaryDirectory(prefix="bench_train_") as tmp:
        overrides.update(total_timesteps=ns.steps, run_dir=tmp, progress=False,
                         eval_every=10**12, checkpoint_every=10**12)
        try:
            args = config.load_args(ns.config, overrides)
        except ValueError as e:
            sys.exit(f"bench_train: {e}")
        result = bench(args)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
