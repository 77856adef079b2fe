"""``canasta train``: PPO on the batched envs, with TensorBoard logs, periodic evaluation on fixed
duplicate deals, safe checkpoints and resume (weights, optimizer, counters, RNG states and the
opponent pool; the envs restart on fresh deals). Two trainers share everything but the loop:
``algo: maskable_ppo`` (sb3-contrib's MaskablePPO on ``CanastaVecEnv``) and ``algo: ppo`` (the lean
batched PPO of ``train.lean_ppo``: overlapped collection, bf16 where fast, CUDA); docs/training.md.

One readable script (CleanRL style): the ``TrainArgs`` dataclass is the config (YAML files in
``configs/train/`` are serialised ``TrainArgs``; flags override single fields).
"""

from __future__ import annotations

import argparse
import dataclasses
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.checkpoint import MAX_LAYERS, MAX_UNITS, kill_point
from canasta_env.learner import REWARD_MODES
from canasta_env.messages import short_repr
from train.options import AGENT_HELP, add_options, opt
from train.stop_request import StoppedBeforeCheckpoint, StopRequest, catch_stop_signals


@dataclass
class TrainArgs:
    """A training run (a YAML file in ``configs/train/`` is one, serialised)."""

    rules: str = opt("classic_2p", "rules preset name or rules YAML file")
    opponent: str = opt("random", f"agent playing the other side: {AGENT_HELP}")
    total_timesteps: int = opt(200_000, "learner steps to train (forced decisions are skipped, not counted)")
    num_envs: int = opt(256, "envs stepped together in one engine batch")
    n_steps: int = opt(32, "rollout length per env between updates")
    batch_size: int = opt(2048, "minibatch size of the PPO update")
    n_epochs: int = opt(4, "passes over each rollout per update")
    learning_rate: float = opt(3e-4, "Adam learning rate")
    gamma: float = opt(0.995, "discount factor")
    gae_lambda: float = opt(0.95, "GAE lambda")
    ent_coef: float = opt(0.01, "entropy bonus coefficient")
    clip_range: float = opt(0.2, "PPO clipping range")
    net_arch: list[int] = opt(help="hidden layer sizes of the policy and value networks",
                              factory=lambda: [256, 256])
    seed: int = opt(0, "run seed: deals, initial weights, sampling")
    run_dir: str | None = opt(None, "folder for checkpoints, TensorBoard events and config.json "
                              "(default: a new runs/<config>-<date>-<time>)")
    checkpoint_every: int = opt(50_000, "learner steps between checkpoints")
    eval_every: int = opt(50_000, "learner steps between evaluations")
    eval_deals: int = opt(200, "fixed duplicate deals per evaluation (each played in every seating)")
    eval_seed: int = opt(2027, "evaluation deals are DealId(eval_seed, i, 0), unless eval_deal_set is set")
    eval_deal_set: str | None = opt(None, "evaluate on a fixed deal set: v1 or a .npz path")
    eval_records: bool = opt(False, "append every evaluation hand to RUN_DIR/eval_records.jsonl")
    eval_opponents: list[str] = opt(help="agents each evaluation plays against", factory=lambda: ["random"])
    torch_threads: int = opt(1, "torch threads (measured: 2 threads make small-network PPO ~40x slower)")
    progress: bool = opt(True, "show a progress bar (the start, evaluation and summary lines print anyway)")
    snapshot_every: int = opt(100_000, "selfplay/league: learner steps between snapshots joining the pool")
    pool_size: int = opt(10, "selfplay/league: past snapshots kept in the pool")
    latest_ratio: float = opt(0.5, "selfplay/league: share of episodes against the latest policy")
    league: list[str] = opt(help="selfplay/league: agents that stay in the pool for good "
                            "(default: none; canasta league: heuristic greedy)", factory=list)
    pfsp: bool = opt(False, "selfplay/league: draw pool members by prioritized fictitious self-play "
                     "(the learner's recent results), not uniformly (default: false; canasta league: "
                     "true)")
    exploiter_every: int = opt(0, "league: learner steps of the main agent between exploiter rounds; each "
                               "round trains a main exploiter against the frozen main agent, and it "
                               "joins the league for good (0: no exploiters; train.exploiter_league)")
    exploiter_steps: int = opt(1_000_000, "league with exploiter_every: learner steps of each exploiter")
    exploiter_init: str = opt("main", "league with exploiter_every: an exploiter starts from the main "
                              "agent's weights of the round (main) or afresh (fresh)")
    league_exploiters: bool = opt(False, "league with exploiter_every: each round also trains a league "
                                  "exploiter, against the whole league and the main agent (PFSP)")
    imitate: str | None = opt(None, "an agent whose choices the policy clones before PPO (train.imitation)")
    imitate_steps: int = opt(1_000_000, "with imitate: teacher decisions to clone")
    imitate_epochs: int = opt(10, "with imitate: passes over them")
    imitate_opponent: str | None = opt(None, "with imitate: the agent the teacher plays against, or "
                                       "'league': the league's members, the envs shared out evenly "
                                       "(default: the run's opponent; under selfplay/league the teacher)")
    imitate_workers: int = opt(1, "with imitate: processes playing the teacher's games (the same "
                               "decisions whatever the number)")
    ray: str | None = opt(None, "algo ppo: collect rollouts on Ray actors: local (a Ray started here; "
                          "also --ray alone), auto or HOST:PORT of a running cluster (the ray extra); none: "
                          "collect here (to resume a Ray run without Ray)",
                          const="local", metavar="ADDRESS")
    num_workers: int = opt(2, "with ray: rollout workers (Ray actors), each stepping its share of num_envs")
    init_from: str | None = opt(None, "a checkpoint, run directory or zoo:NAME whose policy weights start "
                                "the run (not its optimizer or counters)")
    algo: str = opt("ppo", "ppo (the lean trainer) or maskable_ppo (sb3-contrib); docs/training.md")
    device: str = opt("auto", "auto, cpu or cuda (auto: cuda when torch sees a GPU)")
    precision: str = opt("auto", "algo ppo: fp32, bf16 or auto (bf16 where the CPU or GPU runs it fast)")
    overlap: bool = opt(True, "algo ppo: collect the next rollout while the learner updates")
    max_grad_norm: float = opt(0.5, "gradient clipping norm")
    vf_coef: float = opt(0.5, "value loss coefficient")
    reward_mode: str = opt("margin", "margin (the side's scaled hand-score margin) or win_loss "
                           "(+1/0/-1 per hand: trains for the win rate, not the points)")
    engine_threads: int = opt(1, "algo ppo: threads the engine splits the envs' batch over; more than 1 "
                              "pays on machines with cores to spare beside the learner")
    update_threads: int = opt(0, "algo ppo: threads that share each minibatch's gradient, one torch "
                              "thread each (the same weights whatever the timing); 0: the CPU's cores "
                              "up to 2, 1 on CUDA")


def read_options(config: str | None, overrides: dict[str, Any], where: str | None = None) -> dict[str, Any]:
    """The training options a YAML file and the flags give (flags win), checked by name and type
    (the file's own values too, even those a flag overrides); errors name ``where``, else the file
    (``<flags>`` for the command line)."""
    from train.config_file import read_mapping

    data: dict[str, Any] = read_mapping(config, "training options") if config else {}
    if config:  # every value of the file, also those a flag overrides: a wrong one is a mistake
        _check_types(data, where or config)
    data.update({k: v for k, v in overrides.items() if v is not None})
    _check_types(data, where or config or "<flags>")
    return data


def load_args(config: str | None, overrides: dict[str, Any], source: str | None = None) -> TrainArgs:
    """``TrainArgs`` from a YAML file and flag overrides, every value checked (``ValueError``
    naming the file or ``source``)."""
    where = source or config or "<flags>"
    data = read_options(config, overrides, where)
    if data.get("ray") == "none":  # e.g. resuming a Ray run on a machine without Ray
        data["ray"] = None
    args = TrainArgs(**data)
    _check_ranges(args, where)
    return args


def _check_types(data: dict[str, Any], where: str) -> None:
    known = {f.name for f in dataclasses.fields(TrainArgs)}
    unknown = sorted(str(k) for k in set(data) - known)
    if unknown:
        raise ValueError(f"{where}: unknown training option(s) {short_repr(unknown)}; "
                         f"known: {', '.join(sorted(known))}")
    for f in dataclasses.fields(TrainArgs):
        if f.name in data and not _fits(data[f.name], str(f.type)):
            raise ValueError(f"{where}: training option {f.name!r} = {short_repr(data[f.name])} "
                             f"is not a {f.type}")


# field -> (low, high): inclusive bounds every run must respect
_RANGES: dict[str, tuple[float, float]] = {
    "total_timesteps": (0, 10**12), "num_envs": (1, 1 << 20), "n_steps": (1, 1 << 20),
    "batch_size": (1, 1 << 24), "n_epochs": (1, 10_000), "learning_rate": (0.0, 10.0),
    "gamma": (0.0, 1.0), "gae_lambda": (0.0, 1.0), "ent_coef": (0.0, 100.0), "clip_range": (0.0, 10.0),
    "seed": (0, 2**63 - 1), "checkpoint_every": (1, 10**12), "eval_every": (1, 10**12),
    "eval_deals": (1, 10**7), "eval_seed": (0, 2**63 - 1), "torch_threads": (1, 1024),
    "snapshot_every": (1, 10**12), "pool_size": (1, 10_000), "latest_ratio": (0.0, 1.0),
    "max_grad_norm": (0.0, 10**6), "vf_coef": (0.0, 100.0), "imitate_steps": (1, 10**9),
    "imitate_epochs": (1, 10_000), "imitate_workers": (1, 256), "num_workers": (1, 4096),
    "engine_threads": (1, 1024), "update_threads": (0, 1024), "exploiter_every": (0, 10**12),
    "exploiter_steps": (1, 10**12),
}
# field -> allowed values
_CHOICES: dict[str, tuple[str, ...]] = {
    "algo": ("ppo", "maskable_ppo"), "device": ("auto", "cpu", "cuda"),
    "precision": ("auto", "fp32", "bf16"), "reward_mode": REWARD_MODES, "exploiter_init": ("main", "fresh"),
}


def _check_ranges(args: TrainArgs, where: str) -> None:
    import math

    for name, (low, high) in _RANGES.items():
        value = getattr(args, name)
        if isinstance(value, float) and not math.isfinite(value) or not low <= value <= high:
            raise ValueError(f"{where}: training option {name!r} = {short_repr(value)} is outside "
                             f"[{low}, {high}]")
    if args.learning_rate <= 0 or args.clip_range <= 0 or args.gamma <= 0:
        raise ValueError(f"{where}: learning_rate, clip_range and gamma must be positive")
    if not 1 <= len(args.net_arch) <= MAX_LAYERS or not all(1 <= u <= MAX_UNITS for u in args.net_arch):
        raise ValueError(f"{where}: net_arch = {short_repr(args.net_arch)}: want 1 to {MAX_LAYERS} layers "
                         f"of 1 to {MAX_UNITS} units")
    if not args.eval_opponents or args.run_dir == "":
        raise ValueError(f"{where}: eval_opponents and run_dir must not be empty")
    for name, allowed in _CHOICES.items():
        if getattr(args, name) not in allowed:
            raise ValueError(f"{where}: training option {name!r} = {short_repr(getattr(args, name))} "
                             f"is not one of {', '.join(allowed)}")
    if args.max_grad_norm <= 0:
        raise ValueError(f"{where}: max_grad_norm must be positive")
    if args.algo == "maskable_ppo" and args.precision == "bf16":
        raise ValueError(f"{where}: precision 'bf16' needs algo 'ppo' (maskable_ppo trains in fp32)")



def _fits(value: Any, kind: str) -> bool:
    if kind.endswith(" | None"):
        return value is None or _fits(value, kind[: -len(" | None")])
    if kind.startswith("list"):
        element = int if "int" in kind else str
        return isinstance(value, list) and all(isinstance(v, element) and not isinstance(v, bool)
                                               for v in value)
    expected = {"int": (int,), "float": (int, float), "bool": (bool,), "str": (str,)}[kind]
    return isinstance(value, expected) and (kind == "bool" or not isinstance(value, bool))


@dataclass
class RunControl:
    """What ``canasta train|selfplay|league`` does with the run folder, besides its ``TrainArgs``."""

    config: str | None = opt(None, "YAML file of TrainArgs fields (configs/train/*.yaml)", metavar="FILE")
    resume: bool = opt(False, "continue the run in --run-dir from its latest checkpoint (its config.json "
                       "is the base; the config file and flags override it)")
    overwrite: bool = opt(False, "delete the run already in --run-dir and start afresh")
    strict_resume: bool = opt(False, "with --resume: fail if the latest checkpoint is damaged instead of "
                              "falling back to the previous intact one")


def add_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of ``RunControl``, then one flag per ``TrainArgs`` field (``train.options``: its help
    and default from the field's declaration, the underscored spelling a hidden alias); a
    ``TrainArgs`` flag given overrides the config file, and a bool one takes a value
    (``--progress false``)."""
    add_options(parser, RunControl)
    add_options(parser, TrainArgs, overrides=True, bool_values=True)


add_arguments = add_flags


IMITATE_LEAGUE = "league"  # imitate_opponent: the teacher plays the league's members

# What ``canasta league`` sets unless the config file or a flag says otherwise.
LEAGUE_DEFAULTS: dict[str, Any] = {"league": ["heuristic", "greedy"], "pfsp": True}


def run_command(ns: argparse.Namespace, selfplay: bool = False, league: bool = False) -> int:
    """Shared entry point of ``canasta train``, ``canasta selfplay`` and ``canasta league``."""
    from train.run_dir import read_config

    skip = {"config", "resume", "overwrite", "strict_resume", "command", "debug", "_run"}
    overrides = {k: v for k, v in vars(ns).items() if k not in skip}
    given = read_options(ns.config, overrides)
    if league and not ns.resume:
        given = {**LEAGUE_DEFAULTS, **given}
    if given.get("run_dir") is None:
        if ns.resume:
            raise ValueError("--resume continues the run in --run-dir: name the folder")
        given["run_dir"] = str(new_run_dir(Path(ns.config).stem if ns.config else str(given.get("rules",
                                                                                      "run"))))
    args = load_args(None, given, source=ns.config)
    if ns.resume:  # the stored config is the base; the config file and the flags override it
        stored = Path(args.run_dir) / "config.json"
        args = load_args(None, {**read_config(Path(args.run_dir)), **given}, source=str(stored))
    with catch_stop_signals() as stop:
        try:
            if args.exploiter_every > 0:
                if not league:
                    raise ValueError("training option exploiter_every trains a league: use canasta league")
                from train.exploiter_league import train_with_exploiters

                run = train_with_exploiters(args, resume=ns.resume, overwrite=ns.overwrite,
                                            strict_resume=ns.strict_resume, stop=stop)
            else:
                run = train(args, resume=ns.resume, selfplay=selfplay or league, overwrite=ns.overwrite,
                            strict_resume=ns.strict_resume, stop=stop)
        except StoppedBeforeCheckpoint:
            print(f"stopped by {stop.signal_name} during behaviour cloning, before the first checkpoint; "
                  f"start again with: canasta {ns.command} --run-dir {args.run_dir} --resume", flush=True)
            return stop.exit_status
    print(f"run directory: {run}")
    if stop.requested:
        print(f"stopped by {stop.signal_name}; continue with: canasta {ns.command} --run-dir {run} --resume",
              flush=True)
        return stop.exit_status
    return 0


def new_run_dir(label: str, root: Path = Path("runs")) -> Path:
    """A fresh folder name for a run without ``run_dir``: ``runs/<label>-<date>-<time>``, numbered
    when two runs start in the same second."""
    import time

    stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(label).stem)[:60] or "run"
    base = root / f"{stem}-{time.strftime('%Y%m%d-%H%M%S')}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


def run(ns: argparse.Namespace) -> int:
    """``canasta train`` entry point."""
    return run_command(ns)


def train(args: TrainArgs, resume: bool = False, selfplay: bool = False, *, overwrite: bool = False,
          strict_resume: bool = False, stop: StopRequest | None = None) -> Path:
    """Run (or continue) a training run; returns the run directory. With ``selfplay`` the
    opponent is a pool of the learner's latest policy and its past snapshots. When ``stop`` is
    requested the run ends at the next update boundary with a checkpoint, as at its end.

    The run directory is locked for the whole run; a folder that already holds a run needs
    ``resume`` or ``overwrite`` (``train.run_dir``), and nothing is written before those checks.
    """
    from canasta_env.rules import load_rules
    from train.run_dir import clear_run, open_run, write_config

    rules = load_rules(args.rules)
    if args.run_dir is None:
        args = dataclasses.replace(args, run_dir=str(new_run_dir(rules.name)))
    run = Path(str(args.run_dir))
    with open_run(run, resume=resume, overwrite=overwrite):  # before the slow imports: fails fast
        import torch

        from agents import make_agent

        torch.set_num_threads(args.torch_threads)
        if args.device == "cuda" and not torch.cuda.is_available():
            raise ValueError("training option device = 'cuda', but torch sees no CUDA GPU "
                             "(torch.cuda.is_available() is false); use device 'cpu' or 'auto'")
        _check_rollout_memory(args, rules)
        _check_cpus(args)
        opponent: Any = None if selfplay else make_agent(args.opponent, rules)
        for name in args.eval_opponents:  # refused now rather than at the first evaluation
            make_agent(name, rules)
        if args.ray is not None:
            if args.algo != "ppo":
                raise ValueError(f"training option ray needs algo 'ppo' (the lean trainer), not "
                                 f"{args.algo!r}")
            from train.ray_rollouts import connect_for

            connect_for(args)  # an unreachable or too small cluster is refused before anything is written
        if args.league and not selfplay:
            raise ValueError("training option 'league' names pool members: use canasta selfplay or "
                             "canasta league, or leave it empty")
        if len(set(args.league)) != len(args.league):
            raise ValueError(f"training option 'league' = {short_repr(args.league)} names an agent twice")
        league = {name: make_agent(name, rules) for name in args.league}
        teacher = make_agent(args.imitate, rules) if args.imitate is not None else None
        if args.imitate_opponent == IMITATE_LEAGUE and not args.league:
            raise ValueError(f"training option imitate_opponent = {IMITATE_LEAGUE!r} needs league members "
                             "(canasta selfplay or canasta league with 'league' set)")
        if args.imitate_opponent not in (None, IMITATE_LEAGUE):
            make_agent(args.imitate_opponent, rules)
        init = _load_init(args, rules)
        if args.eval_deal_set is not None:
            from canasta_env.deal_sets import load_deal_set

            if len(load_deal_set(args.eval_deal_set, rules)) < args.eval_deals:
                raise ValueError(f"eval_deal_set {args.eval_deal_set!r} holds fewer than eval_deals = "
                                 f"{args.eval_deals} deals")
        if overwrite:
            clear_run(run)
        if not resume:  # a resume writes it once its checkpoint has loaded (``restore``)
            write_config(run, dataclasses.asdict(args))
        random.seed(args.seed)
        np.random.seed(args.seed)
        torch.manual_seed(args.seed)
        pool = None
        if selfplay:
            from agents.learned import PolicyAgent
            from agents.pool import PoolAgent

            pool = PoolAgent(PolicyAgent(None, deterministic=False), args.num_envs, args.latest_ratio,
                             args.pool_size, league=league, prioritized=args.pfsp)
            opponent = pool
        trainer = _train_lean if args.algo == "ppo" else _train_maskable
        import time

        started = time.perf_counter()
        steps = trainer(args, rules, run, opponent, pool, resume=resume, strict_resume=strict_resume,
                        teacher=teacher, init=init, stop=stop or StopRequest())
        from train.run_callback import final_summary

        print(final_summary(run, steps[1], steps[1] - steps[0], time.perf_counter() - started), flush=True)
    return run


def _imitate(args: TrainArgs, rules: Any, run: Path, policy: Any, teacher: Any, opponent: Any,
             pool: Any, logger: Any, stop: StopRequest, bf16: bool = False) -> None:
    """Clone ``teacher`` into ``policy`` (``train.imitation``) and checkpoint the clone at step 0,
    so that a resume continues from it instead of cloning again. The teacher plays against
    ``imitate_opponent`` if set, else the run's opponent, or under self-play itself (the pool's
    latest policy is still untrained). A stop request ends the run before anything is kept."""
    import time

    from agents import make_agent
    from train import imitation, lean_ppo, run_callback

    started = time.perf_counter()
    if args.imitate_opponent == IMITATE_LEAGUE:
        assert args.imitate is not None
        if args.imitate_workers > 1:  # the workers make the agents again, by name
            teacher, against = args.imitate, list(args.league)
        else:
            against = [make_agent(name, rules) for name in args.league]
    elif args.imitate_workers > 1:
        assert args.imitate is not None
        teacher, against = args.imitate, args.imitate_opponent or (args.imitate if pool is not None
                                                                   else args.opponent)
    elif args.imitate_opponent is not None:
        against = make_agent(args.imitate_opponent, rules)
    else:
        against = teacher if pool is not None else opponent

    def should_stop() -> bool:
        return stop.requested

    where = f" in {args.imitate_workers} processes" if args.imitate_workers > 1 else ""
    print(f"imitate {args.imitate}: playing {args.imitate_steps:,} of its decisions{where}", flush=True)

    demos = imitation.collect(rules, teacher, against, args.num_envs, args.imitate_steps, args.seed,
                              args.gamma, workers=args.imitate_workers, should_stop=should_stop)
    print(f"imitate {args.imitate}: {len(demos):,} decisions collected in "
          f"{time.perf_counter() - started:.0f} s", flush=True)

    def log(epoch: int, stats: dict[str, float]) -> None:
        for key, value in stats.items():
            logger.record(f"imitate/{key}", value)
        logger.dump(step=epoch)
        print(f"imitate epoch {epoch + 1}/{args.imitate_epochs}: accuracy {stats['accuracy']:.3f}, "
              f"cross-entropy {stats['cross_entropy']:.3f}, value loss {stats['value_loss']:.4f}",
              flush=True)

    with lean_ppo.bf16_matmuls(bf16):
        imitation.clone(policy, demos, epochs=args.imitate_epochs, batch_size=args.batch_size,
                        seed=args.seed, vf_coef=args.vf_coef, log=log, should_stop=should_stop)
    run_callback.save_run_checkpoint(args, rules, run, policy, 0, 0, pool)


def _load_init(args: TrainArgs, rules: Any) -> Any:
    """The checkpoint ``init_from`` names, verified for these rules, this layout and ``net_arch``
    (before the run writes anything), or None."""
    if args.init_from is None:
        return None
    from agents.checkpoint import current_layout, load_checkpoint, weights_fit
    from agents.zoo import PREFIX, zoo_path

    path = zoo_path(args.init_from) if args.init_from.startswith(PREFIX) else Path(args.init_from)
    if not path.exists():
        raise ValueError(f"training option init_from = {short_repr(args.init_from)}: no such checkpoint "
                         "or run directory")
    ckpt = load_checkpoint(path, rules=rules, expect_layout=current_layout(rules), load_optimizer=False)
    if "policy" not in ckpt.meta or not weights_fit(ckpt, list(args.net_arch)):
        raise ValueError(f"training option init_from = {short_repr(args.init_from)}: its network does not "
                         f"fit net_arch {args.net_arch} ({ckpt.path / 'meta.json'} describes it)")
    return ckpt


def _start_from(policy: Any, init: Any) -> None:
    """Load ``init``'s policy weights into a new run's ``policy``."""
    policy.load_state_dict(init.policy_state)
    print(f"canasta: starting from the weights of {init.path}", flush=True)


def _check_rollout_memory(args: TrainArgs, rules: Any) -> None:
    """Refuse, before allocating, a rollout (``num_envs * n_steps`` observations, masks and
    per-step numbers) that cannot fit in memory."""
    from agents.checkpoint import current_layout
    from canasta_env.engine.actions import NUM_ACTIONS
    from canasta_env.engine.core import check_memory

    steps = args.num_envs * args.n_steps
    per_step = current_layout(rules)["obs_dim"] * 4 + NUM_ACTIONS + 64
    check_memory(steps * per_step, f"a rollout of {steps:,} steps (num_envs x n_steps)", "train")
    if args.imitate is not None:  # the demonstrations are held twice while they are joined
        check_memory(2 * args.imitate_steps * per_step,
                     f"imitate_steps = {args.imitate_steps:,} teacher decisions", "train")


def _check_cpus(args: TrainArgs) -> None:
    """Refuse more teacher processes, engine or update threads than CPUs: each teacher loads the engine and
    torch, so a typo would otherwise start hundreds of them and run the machine out of memory."""
    import os

    cpus = os.cpu_count() or 1
    if args.imitate is not None and args.imitate_workers > cpus:
        raise ValueError(f"training option imitate_workers = {args.imitate_workers} exceeds the {cpus} "
                         "CPUs of this machine")
    for name in ("engine_threads", "update_threads"):
        threads = getattr(args, name)
        if threads > 1 and args.algo != "ppo":
            raise ValueError(f"training option {name} applies to algo 'ppo' (the lean trainer) only")
        if threads > cpus:
            raise ValueError(f"training option {name} = {threads} exceeds the {cpus} CPUs of this machine")


def _logger(run: Path) -> Any:
    """SB3's logger writing TensorBoard events and the appending ``progress.csv`` under RUN/tb."""
    from stable_baselines3.common.logger import Logger, make_output_format

    from train.progress_log import AppendingCSV

    tb = str(run / "tb")
    return Logger(tb, [make_output_format("tensorboard", tb), AppendingCSV(run / "tb" / "progress.csv")])


def _train_maskable(args: TrainArgs, rules: Any, run: Path, opponent: Any, pool: Any, *, resume: bool,
                    strict_resume: bool, teacher: Any = None, init: Any = None, stop: StopRequest
                    ) -> tuple[int, int]:
    """``algo: maskable_ppo``: sb3-contrib's MaskablePPO on ``CanastaVecEnv``; returns the learner
    steps at its start and end."""
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import VecMonitor

    from canasta_env.sb3_env import CanastaVecEnv
    from train import run_callback

    device = "cuda" if args.device == "auto" and torch.cuda.is_available() else args.device
    device = "cpu" if device == "auto" else device
    venv = CanastaVecEnv(args.num_envs, rules, opponent=opponent, reward_mode=args.reward_mode)
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
    model.set_logger(_logger(run))
    run_callback.announce(args, run, model.num_timesteps, pool)
    start_steps = model.num_timesteps
    if init is not None and not restored:
        _start_from(model.policy, init)
    if teacher is not None and not restored:
        _imitate(args, rules, run, model.policy, teacher, opponent, pool, model.logger, stop)
    _install_kill_points(model)
    callback = run_callback.RunCallback(args, rules, run, pool, stop)
    remaining = max(0, args.total_timesteps - model.num_timesteps)
    model.learn(remaining, callback=callback, reset_num_timesteps=not resume,
                progress_bar=args.progress)
    callback.checkpoint(model)
    return start_steps, model.num_timesteps


def _train_lean(args: TrainArgs, rules: Any, run: Path, opponent: Any, pool: Any, *, resume: bool,
                strict_resume: bool, teacher: Any = None, init: Any = None, stop: StopRequest
                ) -> tuple[int, int]:
    """``algo: ppo``: ``train.lean_ppo.LeanPPO``, with the evaluations, checkpoints, snapshots and
    logs of ``train.run_callback`` at its sync points; returns the learner steps at its start and end."""
    import time

    from train import lean_ppo, run_callback

    model = lean_ppo.LeanPPO(args, rules, opponent)
    if pool is not None:
        pool.members[0].policy = model.actor  # the opponent plays the collector's weights
    if args.ray is not None:
        from train.ray_rollouts import RayCollectors

        model.collector = RayCollectors(model, args, rules, pool).collect
    restored = False
    if resume:
        restored = restore(model, run, rules, pool, strict=strict_resume, args=args)
        model.reset_envs(args.seed + model.num_timesteps)
    logger = _logger(run)
    run_callback.announce(args, run, model.num_timesteps, pool)
    if init is not None and not restored:
        _start_from(model.policy, init)
    if teacher is not None and not restored:
        _imitate(args, rules, run, model.policy, teacher, opponent, pool, logger, stop,
                 bf16=model.precision == "bf16" and model.device.type == "cpu")
    start_steps, started = model.num_timesteps, time.perf_counter()
    last = dict.fromkeys(("eval", "ckpt", "snapshot"), model.num_timesteps)
    per_rollout = args.num_envs * args.n_steps  # the run ends at the first whole rollout past the total
    bar = _progress_bar(args, model.num_timesteps, -(-args.total_timesteps // per_rollout) * per_rollout)

    def on_sync(m: lean_ppo.LeanPPO) -> bool:
        steps = m.num_timesteps
        rate = (steps - start_steps) / (time.perf_counter() - started)
        run_callback.record_episodes(logger, m.margins, rate)
        if m.episode_returns:
            logger.record("rollout/ep_rew_mean", float(np.mean(m.episode_returns[-100:])))
            logger.record("rollout/ep_len_mean", float(np.mean(m.episode_lengths[-100:])))
            del m.episode_returns[:-100], m.episode_lengths[:-100]
        for key, value in m.train_stats.items():
            if key != "update_s":
                logger.record(f"train/{key}", value)
        if pool is not None:
            run_callback.record_league(logger, pool)
        run_callback.sync_point(args, rules, run, m.policy, steps, m._n_updates, pool, logger, last)
        logger.record("time/total_timesteps", steps)
        logger.record("time/fps", int((steps - start_steps) / max(time.perf_counter() - started, 1e-9)))
        logger.dump(step=steps)
        if bar is not None:
            bar.update(steps - bar.n)
        return not stop.requested

    try:
        model.learn(args.total_timesteps, on_sync=on_sync)
    finally:
        if bar is not None:
            bar.close()
    run_callback.save_run_checkpoint(args, rules, run, model.policy, model.num_timesteps, model._n_updates,
                                     pool)
    return start_steps, model.num_timesteps


def _progress_bar(args: TrainArgs, done: int, total: int) -> Any:
    """A tqdm bar over the learner steps when ``progress`` is on and tqdm is installed."""
    if not args.progress:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, initial=done, unit="step")


def _check_optimizer_shapes(path: Path, optimizer: Any) -> None:
    """``CheckpointError`` unless every stored optimizer tensor (Adam's moments, ...) has its
    parameter's shape: torch accepts any shapes at load and fails only at the next step."""
    from agents.checkpoint import OPTIMIZER_FILE, CheckpointError

    for group in optimizer.param_groups:
        for param in group["params"]:
            for key, value in optimizer.state.get(param, {}).items():
                if getattr(value, "dim", lambda: 0)() and value.shape != param.shape:
                    raise CheckpointError(f"{path / OPTIMIZER_FILE}: {key} of shape {tuple(value.shape)} "
                                          f"for a parameter of shape {tuple(param.shape)}")


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


def restore(model: Any, run: Path, rules: Any, pool: Any = None, *, strict: bool = False,
            args: TrainArgs | None = None) -> bool:
    """Load the checkpoint a resume continues from (``train.run_dir.resume_checkpoint``: the latest
    intact one, a damaged latest reported) into ``model``: weights, optimizer, counters, RNG, the
    pool and its results; returns whether there was one. With
    ``args``, their learning rate replaces the stored one and, once everything has loaded, they
    become the run's ``config.json`` (a refused resume leaves the run as it was)."""
    from agents.checkpoint import (
        CheckpointError,
        current_layout,
        load_checkpoint,
        remove_partial_checkpoints,
        restore_rng_state,
        validate_state,
    )
    from train.run_dir import resume_checkpoint, write_config

    remove_partial_checkpoints(run)
    path = resume_checkpoint(run, strict=strict)
    if path is None:
        if args is not None:
            write_config(run, dataclasses.asdict(args))
        return False
    ckpt = load_checkpoint(path, rules=rules, expect_layout=current_layout(rules))
    validate_state(path, ckpt.state, require=("num_timesteps", "rng"))
    if ckpt.optimizer_state is None:
        raise CheckpointError(f"{path}: holds no optimizer state; a run cannot resume from it")
    try:
        model.policy.load_state_dict(ckpt.policy_state)
        model.policy.optimizer.load_state_dict(ckpt.optimizer_state)
    except (RuntimeError, ValueError, KeyError) as exc:
        detail = " ".join(str(exc).split())[:200]
        raise CheckpointError(f"{path}: does not fit this run's network (net_arch "
                              f"{args.net_arch if args else '?'}; {detail})") from None
    _check_optimizer_shapes(path, model.policy.optimizer)
    if args is not None:
        for group in model.policy.optimizer.param_groups:
            group["lr"] = args.learning_rate
    model.num_timesteps = int(ckpt.state["num_timesteps"])
    model._n_updates = int(ckpt.state.get("n_updates", 0))
    restore_rng_state(ckpt.state["rng"])
    if pool is not None:
        from agents.learned import load_policy_agent

        for name in ckpt.state.get("opponent_pool", []):
            pool.add(load_policy_agent(str(run / name), rules, deterministic=False), name)
        results = ckpt.state.get("league_results")
        if isinstance(results, dict):
            pool.load_state(results)
    if args is not None:
        write_config(run, dataclasses.asdict(args))
    return True
