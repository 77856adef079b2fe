"""What both trainers of ``canasta train``/``selfplay`` do besides learning: Canasta statistics in
the logs, evaluations on fixed deals, checkpoints and self-play snapshots. One home for each as a
function (``record_episodes``, ``evaluate``, ``save_run_checkpoint``, ``snapshot``), scheduled by
``sync_point``, which the lean trainer (``train.learning.lean_ppo``) calls after each update and
``RunCallback`` on SB3's hooks (``algo: maskable_ppo``).

Every function takes the run's ``train.learning.setup.RunSetup``: the rules and agents resolved once.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from agents.checkpoint import kill_point
from train.common.run_dir import EVALUATIONS
from train.learning.setup import RunSetup


def record_episodes(logger: Any, margins: list[float], steps_per_s: float) -> None:
    """Log the final rewards of the episodes ended since the last call (mean, win rate) and the
    learner steps per second; empties ``margins``."""
    if margins:
        arr = np.asarray(margins)
        logger.record("canasta/final_reward_mean", float(arr.mean()))
        logger.record("canasta/win_rate", float((arr > 0).mean()))
        margins.clear()
    logger.record("canasta/steps_per_s", steps_per_s)


def evaluate(setup: RunSetup, policy: Any, num_timesteps: int, logger: Any) -> dict[str, dict[str, float]]:
    """Deterministic ``policy`` against each evaluation opponent on the fixed deal set, logged
    under ``eval_<name>/...``."""
    from agents import make_agent
    from agents.learned.policy import PolicyAgent
    from agents.match import play_match

    args, rules = setup.args, setup.rules
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
    line = "; ".join(f"vs {name} win rate {r['win_rate']:.3f} [{r['win_lo']:.3f}, {r['win_hi']:.3f}], "
                     f"margin {r['mean_margin']:.0f}" for name, r in results.items())
    print(f"eval at {num_timesteps:,} steps ({args.eval_deals} deals): {line}", flush=True)
    with open(Path(str(args.run_dir)) / EVALUATIONS, "a", encoding="utf-8") as f:
        f.write(json.dumps({"num_timesteps": int(num_timesteps),
                            "results": {n: {k: float(v) for k, v in r.items()} for n, r in results.items()}})
                + "\n")
    return results


SHOWN_NAME_CHARS = 80  # longer league members (rule parameter specs) are counted, not printed


def announce(setup: RunSetup, resumed_at: int) -> None:
    """The first line of a run: where it writes and what it trains against (with a pool: the
    league's members by name, a count of those too long to read there (a rule exploiter's spec
    runs to 600 characters; config.json lists them) and, unless ``latest_ratio`` is 0, the learner
    itself); and that a resume has nothing to train, when the run is already at ``total_timesteps``."""
    args = setup.args
    what = f"resuming at {resumed_at:,} steps" if resumed_at else "starting"
    if setup.pool is None:
        against = f"opponent {args.opponent}"
    else:
        shown = [m for m in args.league if len(m) <= SHOWN_NAME_CHARS]
        long = len(args.league) - len(shown)
        shown += [f"{long} {'more' if shown else 'members'} in config.json"] if long else []
        against = "league " + ", ".join(shown + (["itself"] if args.latest_ratio > 0 else []))
    print(f"canasta: {what} run {setup.run} ({args.rules}, algo {args.algo}, {against}, "
          f"{setup.until:,} learner steps)", flush=True)
    if resumed_at and resumed_at >= setup.until:
        print(f"canasta: the run has trained {resumed_at:,} learner steps, total_timesteps is "
              f"{args.total_timesteps:,}: nothing to train (raise --total-timesteps to go on)", flush=True)


def final_summary(run: Path, steps: int, trained: int, seconds: float) -> str:
    """The last line of a run: steps, wall time, speed, latest checkpoint and best evaluation."""
    from agents.checkpoint import latest_checkpoint, list_checkpoints

    latest = latest_checkpoint(run)
    text = (f"canasta: done, {steps:,} learner steps ({trained:,} this session in {seconds:.0f} s, "
            f"{trained / max(seconds, 1e-9):,.0f} steps/s); latest checkpoint {latest}")
    best = _best_evaluation(run / EVALUATIONS)
    if best is not None:
        at, score = best
        kept = [p for p in list_checkpoints(run) if _counter(p) == at]
        text += (f"; best evaluation at {at:,} steps (mean win rate {score:.3f})"
                 + (f", checkpoint {kept[-1]}" if kept else ""))
    return text


def _counter(path: Path) -> int:
    try:
        return int(json.loads((path / "state.json").read_text())["num_timesteps"])
    except (OSError, ValueError, KeyError, TypeError):
        return -1


def _best_evaluation(path: Path) -> tuple[int, float] | None:
    """(steps, mean win rate over the opponents) of the best evaluation logged in ``path``."""
    best: tuple[int, float] | None = None
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        try:
            row = json.loads(line)
            score = float(np.mean([r["win_rate"] for r in row["results"].values()]))
            at = int(row["num_timesteps"])
        except (ValueError, KeyError, TypeError, AttributeError):
            continue  # a line cut short by a kill
        if best is None or score > best[1]:
            best = (at, score)
    return best


def save_run_checkpoint(setup: RunSetup, policy: Any, num_timesteps: int, n_updates: int) -> Path:
    """Checkpoint ``policy`` (weights, its optimizer), the counters, the RNG states and the
    opponent pool's names into ``run`` (``agents.checkpoint`` format, one for both trainers)."""
    from agents.checkpoint import build_meta, checkpoint_name, rng_state, save_checkpoint
    from canasta_env.envs.learner import default_reward_scale

    args, rules, run, pool = setup.args, setup.rules, setup.run, setup.pool
    state = {"num_timesteps": int(num_timesteps), "n_updates": int(n_updates), "rng": rng_state(),
             "opponent_pool": pool.past if pool is not None else []}
    if pool is not None:
        state["league_results"] = pool.state()
    config = dict(dataclasses.asdict(args), reward_scale=default_reward_scale(rules))
    meta = build_meta(config=config, rules=rules, policy=policy)
    try:
        return save_checkpoint(run, checkpoint_name(num_timesteps), policy_state=policy.state_dict(),
                               optimizer_state=policy.optimizer.state_dict(), state=state, meta=meta)
    except OSError as exc:  # a full disk: say where, and that the checkpoints before it are intact
        raise OSError(f"{run}: the checkpoint at {num_timesteps:,} learner steps could not be written "
                      f"({exc}); the run stopped, its earlier checkpoints are intact: make room and "
                      "continue it with --resume") from None


def record_league(logger: Any, pool: Any) -> None:
    """Log the pool as a league: per member the learner's recent score against it, the chance of
    drawing it and its Elo-scale rating (Davidson fit of the learner-vs-member results,
    ``train.evaluation.ratings``; the learner is ``latest``)."""
    from train.evaluation.ratings import ELO, fit_davidson

    rates, weights = pool.win_rates(), pool.weights()
    played = np.flatnonzero(pool.results[1:].sum(axis=1) > 0) + 1
    ratings = np.zeros(len(pool.names))
    if played.size:
        pairs = np.stack([np.zeros_like(played), played], axis=1)
        theta, _ = fit_davidson(pool.results[played, 0][None], pool.results[played, 1][None],
                                pool.results[played, 2][None], pairs, len(pool.names))
        ratings = (theta[0] - theta[0][0]) * ELO  # relative to the learner
    for i, name in enumerate(pool.names[1:], start=1):
        logger.record(f"league/score_vs_{name}", float(rates[i]))
        logger.record(f"league/draw_chance_{name}", float(weights[i - 1] * (1 - pool.latest_ratio)))
        if i in played:
            logger.record(f"league/elo_{name}", float(ratings[i]))


def snapshot(pool: Any, policy: Any, num_timesteps: int) -> None:
    """Freeze a copy of ``policy`` into the self-play opponent pool (on the CPU, in eval mode);
    the caller then writes the checkpoint it is reloaded from on resume."""
    import copy

    from agents.checkpoint import checkpoint_name
    from agents.learned.policy import PolicyAgent

    frozen = copy.deepcopy(policy).eval()
    pool.add(PolicyAgent(frozen, deterministic=False), checkpoint_name(num_timesteps))


def sync_point(setup: RunSetup, policy: Any, steps: int, n_updates: int, logger: Any,
               last: dict[str, int]) -> None:
    """The evaluation, checkpoint and snapshot due at ``steps``, for both trainers; ``last`` holds
    the steps at which each last ran and is updated. Every evaluated policy is also checkpointed,
    so the best evaluation names its own checkpoint."""
    args, pool = setup.args, setup.pool
    evaluated = steps - last["eval"] >= args.eval_every
    if evaluated:
        evaluate(setup, policy, steps, logger)
        last["eval"] = steps
    if evaluated or steps - last["ckpt"] >= args.checkpoint_every:
        save_run_checkpoint(setup, policy, steps, n_updates)
        last["ckpt"] = steps
    if pool is not None and steps - last["snapshot"] >= args.snapshot_every:
        snapshot(pool, policy, steps)  # then the checkpoint it is reloaded from, listing itself
        save_run_checkpoint(setup, policy, steps, n_updates)
        logger.record("selfplay/pool_size", len(pool.past))
        last["snapshot"] = steps


class RunCallback(BaseCallback):
    """SB3 hooks of ``algo: maskable_ppo``: logs Canasta statistics and runs ``sync_point`` after
    every env step."""

    def __init__(self, setup: RunSetup) -> None:
        super().__init__()
        self.setup, self.pool, self.stop = setup, setup.pool, setup.stop
        self.last = dict.fromkeys(("eval", "ckpt", "snapshot"), 0)
        self.started = time.perf_counter()
        self.start_steps = 0
        self.margins: list[float] = []

    def _on_training_start(self) -> None:
        self.start_steps = self.model.num_timesteps
        self.last = dict.fromkeys(self.last, self.model.num_timesteps)

    def _on_step(self) -> bool:
        kill_point("rollout")
        for info, done, reward in zip(self.locals["infos"], self.locals["dones"],
                                      self.locals["rewards"], strict=True):
            if done and not info.get("illegal_action"):
                self.margins.append(float(reward))
        sync_point(self.setup, self.model.policy, self.model.num_timesteps,
                   getattr(self.model, "_n_updates", 0), self.logger, self.last)
        return self.stop is None or not self.stop.requested

    def _on_rollout_end(self) -> None:
        secs = time.perf_counter() - self.started
        record_episodes(self.logger, self.margins, (self.model.num_timesteps - self.start_steps) / secs)
        if self.pool is not None:
            record_league(self.logger, self.pool)

    def checkpoint(self, model: Any) -> Path:
        return save_run_checkpoint(self.setup, model.policy, model.num_timesteps,
                                   getattr(model, "_n_updates", 0))


def make_logger(run: Path) -> Any:
    """SB3's logger writing TensorBoard events and the appending ``progress.csv`` under RUN/tb."""
    from stable_baselines3.common.logger import Logger, make_output_format

    from train.common.progress_log import AppendingCSV

    tb = str(run / "tb")
    return Logger(tb, [make_output_format("tensorboard", tb), AppendingCSV(run / "tb" / "progress.csv")])
