"""What a training run needs besides its options, resolved once before anything is written: the
rules as a ``RuleSet``, the agents built from their names, the weights it starts from. The trainers
and ``train.learning.run_callback`` take this record and never resolve a name again.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from canasta_env.messages import short_repr
from canasta_env.rules import RuleSet
from train.common.options import repeated_agent, twice_message
from train.common.stop_request import StopRequest
from train.learning.config import IMITATE_LEAGUE, TrainArgs, lean


@dataclass
class RunSetup:
    """One run, resolved: its options, rules and folder, the agent on the other side (the pool under
    self-play), the teacher to clone, the checkpoint it starts from, its stop request, and the
    learner steps this call trains to (``until``: the run's ``total_timesteps`` unless a league's
    round ends first; config.json keeps the run's total, which a resume goes on to)."""

    args: TrainArgs
    rules: RuleSet
    run: Path
    opponent: Any
    until: int
    pool: Any = None
    league: dict[str, Any] | None = None
    teacher: Any = None
    init: Any = None
    stop: StopRequest | None = None


def _agent(option: str, name: str, rules: RuleSet) -> Any:
    """The agent ``name`` of training option ``option``; its error names the option."""
    from agents import make_agent

    try:
        return make_agent(name, rules)
    except ValueError as exc:
        raise ValueError(f"training option {option}: {exc}") from None


def resolve(args: TrainArgs, rules: RuleSet, run: Path, *, selfplay: bool,
            stop: StopRequest | None = None, overwrite: bool = False, until: int | None = None) -> RunSetup:
    """Build every agent the run names and check what can be checked before anything is written;
    a mistake is a ``ValueError`` naming the option. With ``overwrite`` the old run in ``run`` is
    to be cleared once this returns."""
    _check_rollout_memory(args, rules)
    _check_cpus(args)
    _check_not_own_run(args, rules, run, overwrite)
    opponent: Any = None if selfplay else _agent("opponent", args.opponent, rules)
    for name in args.eval_opponents:  # refused now rather than at the first evaluation
        _agent("eval_opponents", name, rules)
    if args.ray is not None and not lean(args):
        raise ValueError(f"training option ray needs algo 'ppo' (the lean trainer), not {args.algo!r}")
    _check_league(args, selfplay, rules)
    for name in args.exploiter_also:
        _agent("exploiter_also", name, rules)
    league = {name: _agent("league", name, rules) for name in args.league}
    teacher = _agent("imitate", args.imitate, rules) if args.imitate is not None else None
    if args.imitate_opponent not in (None, IMITATE_LEAGUE):
        _agent("imitate_opponent", args.imitate_opponent, rules)
    init = load_init(args, rules)
    if args.eval_deal_set is not None:
        from canasta_env.deal_sets import load_deal_set

        if len(load_deal_set(args.eval_deal_set, rules)) < args.eval_deals:
            raise ValueError(f"eval_deal_set {args.eval_deal_set!r} holds fewer than eval_deals = "
                             f"{args.eval_deals} deals")
    if args.ray is not None:  # last: every other option is checked before a cluster starts
        from train.learning.ray_rollouts import connect_for

        connect_for(args)  # an unreachable or too small cluster is refused before anything is written
    pool = None
    if selfplay:
        from agents.learned.policy import PolicyAgent
        from agents.learned.pool import PoolAgent

        pool = PoolAgent(PolicyAgent(None, deterministic=False), args.num_envs, args.latest_ratio,
                         args.pool_size, league=league, prioritized=args.pfsp)
        opponent = pool
    until = args.total_timesteps if until is None else min(until, args.total_timesteps)
    return RunSetup(args, rules, run, opponent, until, pool, league, teacher, init, stop or StopRequest())


def _check_league(args: TrainArgs, selfplay: bool, rules: RuleSet) -> None:
    """Refuse league and agent-list options that cannot work together, a league member spelt as the
    pool's own names (``agents.learned.pool.clashing_name``); an agent named twice, however
    spelt (``agents.agent_key``), in ``league``, ``exploiter_also`` or ``eval_opponents`` (a league
    member spelt twice was drawn twice as often; two evaluations were logged as one)."""
    if args.league and not selfplay:
        raise ValueError("training option 'league' names pool members: use canasta selfplay or "
                         "canasta league, or leave it empty")
    from agents.learned.pool import clashing_name

    clash = next((name for name in args.league if clashing_name(name)), None)
    if clash is not None:
        raise ValueError(f"training option league: {short_repr(clash)} is the pool's name for one of its own "
                         f"members (the latest policy or a snapshot); spell the path another way (./{clash})")
    if repeated_agent(args.league, rules) is not None:
        raise ValueError(f"training option 'league' = {short_repr(args.league)} names an agent twice")
    for option in ("exploiter_also", "eval_opponents"):
        twice = repeated_agent(getattr(args, option), rules)
        if twice is not None:
            raise ValueError(twice_message(f"training option '{option}'", twice))
    if args.exploiter_also and (args.exploiter_family != "heuristic" or not args.exploiter_every):
        raise ValueError("training option exploiter_also names agents for the rule-space exploiter: set "
                         "exploiter_family heuristic and exploiter_every, or leave it empty")
    if args.league_exploiters and (args.exploiter_family != "ppo" or not args.exploiter_every):
        raise ValueError("training option league_exploiters trains PPO league exploiters: set "
                         "exploiter_every (exploiter_family ppo), or leave it false")
    if args.imitate_opponent == IMITATE_LEAGUE and not args.league:
        raise ValueError(f"training option imitate_opponent = {IMITATE_LEAGUE!r} needs league members "
                         "(canasta selfplay or canasta league with 'league' set)")


_DELETED = "names what --overwrite deletes (the old run's files and checkpoints in {}); copy it out first"
AGENT_OPTIONS = ("opponent", "league", "eval_opponents", "exploiter_also", "imitate", "imitate_opponent")


def _check_not_own_run(args: TrainArgs, rules: RuleSet, run: Path, overwrite: bool) -> None:
    """Refuse an agent option naming the run's own folder (``agents.agent_key``: ``sampled:``, a
    search's rollout agent and every spelling included), and with ``overwrite`` an agent option or
    ``init_from`` naming what ``--overwrite`` deletes. The folder played whatever the run's latest
    checkpoint was at each start, another agent under the same name after every resume; what
    ``--overwrite`` deletes was loaded first, then named by a config.json no resume could load again."""
    from agents import agent_key

    here = run.resolve()
    for option in AGENT_OPTIONS:
        value = getattr(args, option)
        for name in [value] if isinstance(value, str) else value or []:
            if option == "imitate_opponent" and name == IMITATE_LEAGUE:
                continue
            for path in _key_paths(agent_key(name, rules)):
                if path == here:
                    raise ValueError(f"training option {option}: {short_repr(name)} is this run's own folder "
                                     f"{run}; name a copy of one of its checkpoints made outside it")
                if overwrite and _cleared(here, path):
                    raise ValueError(f"training option {option}: {short_repr(name)} {_DELETED.format(run)}")
    start = init_path(args.init_from).resolve() if overwrite and args.init_from is not None else None
    if start is not None and (start == here or _cleared(here, start)):
        raise ValueError(f"training option init_from = {short_repr(args.init_from)} {_DELETED.format(run)}")


def _cleared(run: Path, path: Path) -> bool:
    """Whether ``train.common.run_dir.clear_run(run)`` deletes ``path`` (both resolved): it lies in
    one of the run's files or checkpoints, not in another folder the run folder keeps."""
    from train.common.run_dir import is_run_file

    return run in path.parents and is_run_file(run / path.relative_to(run).parts[0])


def _key_paths(key: Any) -> list[Path]:
    """The checkpoint folders an ``agents.agent_key`` holds, nested keys included."""
    if isinstance(key, Path):
        return [key]
    return [p for part in key for p in _key_paths(part)] if isinstance(key, tuple) else []


def _check_rollout_memory(args: TrainArgs, rules: RuleSet) -> None:
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
    cpus = os.cpu_count() or 1
    if args.imitate is not None and args.imitate_workers > cpus:
        raise ValueError(f"training option imitate_workers = {args.imitate_workers} exceeds the {cpus} "
                         "CPUs of this machine")
    for name in ("engine_threads", "update_threads"):
        threads = getattr(args, name)
        if threads > 1 and not lean(args):
            raise ValueError(f"training option {name} applies to algo 'ppo' (the lean trainer) only")
        if threads > cpus:
            raise ValueError(f"training option {name} = {threads} exceeds the {cpus} CPUs of this machine")


def load_init(args: TrainArgs, rules: RuleSet) -> Any:
    """The checkpoint ``init_from`` names, verified for these rules, this layout and ``net_arch``
    (before the run writes anything), or None."""
    if args.init_from is None:
        return None
    from agents.checkpoint import current_layout, weights_fit

    ckpt = _read_init(args.init_from, rules=rules, expect_layout=current_layout(rules))
    if "policy" not in ckpt.meta or not weights_fit(ckpt, list(args.net_arch)):
        raise ValueError(f"training option init_from = {short_repr(args.init_from)}: its network does not "
                         f"fit net_arch {args.net_arch} ({ckpt.path / 'meta.json'} describes it)")
    return ckpt


def init_path(init_from: str) -> Path:
    """The checkpoint or run folder ``init_from`` names (``zoo:NAME`` included); ``ValueError``
    when there is none."""
    from agents.learned.zoo import PREFIX, zoo_path

    if not init_from.strip():  # Path('') is the working directory
        raise ValueError(f"training option init_from = {short_repr(init_from)} is empty; name a checkpoint, "
                         "run directory or zoo:NAME")
    path = zoo_path(init_from) if init_from.startswith(PREFIX) else Path(init_from)
    if not path.exists():
        raise ValueError(f"training option init_from = {short_repr(init_from)}: no such checkpoint "
                         "or run directory")
    return path


def _read_init(init_from: str, **checks: Any) -> Any:
    """The checkpoint ``init_from`` names, its weights verified (``checks``: ``load_checkpoint``'s
    ``rules`` and ``expect_layout``); the error of one that is not a checkpoint, or not one for these
    rules, names the option as well as the file, since the user gave the path as ``init_from``."""
    from agents.checkpoint import load_checkpoint

    path = init_path(init_from)
    try:
        return load_checkpoint(path, load_optimizer=False, **checks)
    except (ValueError, OSError) as exc:
        raise ValueError(f"training option init_from = {short_repr(init_from)}: {exc}") from None


def stored_net_arch(init_from: str) -> list[int] | None:
    """The hidden layer sizes of the network ``init_from`` holds (one list for the policy and the
    value network), or None when its description gives none in that form: a run that starts
    from those weights takes their shape instead of its default."""
    ckpt = _read_init(init_from)
    arch = ckpt.meta.get("policy", {}).get("kwargs", {}).get("net_arch")
    if isinstance(arch, list) and arch and all(isinstance(u, int) and not isinstance(u, bool) for u in arch):
        return list(arch)
    return None
