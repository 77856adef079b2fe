"""``canasta train``, and the flags and entry point it shares with ``canasta selfplay`` and
``canasta league``: read the config file and flags into ``TrainArgs``, then ``train.learning``."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from train.common.options import add_options, opt
from train.common.run_dir import new_run_dir
from train.common.stop_request import StoppedBeforeCheckpoint, catch_stop_signals
from train.learning.config import TrainArgs, check_given, load_args, read_options


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
    """The flags of ``RunControl``, then one flag per ``TrainArgs`` field (``train.common.options``: its help
    and default from the field's declaration, the underscored spelling a hidden alias); a
    ``TrainArgs`` flag given overrides the config file, and a bool one takes a value
    (``--progress false``)."""
    add_options(parser, RunControl)
    add_options(parser, TrainArgs, overrides=True, bool_values=True)


add_arguments = add_flags


# What ``canasta league`` sets unless the config file or a flag says otherwise.
LEAGUE_DEFAULTS: dict[str, Any] = {"league": ["heuristic", "greedy"], "pfsp": True}


# What a run was trained as: a resume may lengthen or re-pace it, never change these.
RUN_IDENTITY = ("rules", "net_arch", "algo", "reward_mode")
STARTS = ("init_from", "imitate")  # where a run's weights begin: a resume goes on from its checkpoint


def _keep_identity(stored: dict[str, Any], given: dict[str, Any], where: Path) -> None:
    """Refuse a resume whose config file or flags change what the run was trained as."""
    for name in RUN_IDENTITY:
        if name in given and name in stored and given[name] != stored[name]:
            raise ValueError(f"--resume keeps the run's {name} ({stored[name]!r} in {where}), not "
                             f"{given[name]!r}: start a new run (another --run-dir) or --overwrite this one")


def _not_restarted(stored: dict[str, Any], given: dict[str, Any], run: Path) -> None:
    """Refuse a resume given another start (``init_from``, ``imitate``) than its run's once the run has
    a checkpoint: the resume goes on from that checkpoint, so the new start was ignored in silence."""
    from agents.checkpoint import latest_checkpoint

    latest = latest_checkpoint(run)
    for name in STARTS:
        if given.get(name) is not None and given[name] != stored.get(name) and latest is not None:
            raise ValueError(f"--resume goes on from {latest}, so {name} = {given[name]!r} would be "
                             f"ignored: leave it out, or start a new run (another --run-dir) from it")


def run_command(ns: argparse.Namespace, selfplay: bool = False, league: bool = False) -> int:
    """Shared entry point of ``canasta train``, ``canasta selfplay`` and ``canasta league``."""
    from train.common.run_dir import resume_config

    skip = {"config", "resume", "overwrite", "strict_resume", "command", "debug", "_run"}
    overrides = {k: v for k, v in vars(ns).items() if k not in skip}
    given = read_options(ns.config, overrides)
    from_flags = {k for k, v in overrides.items() if v is not None}
    from_file = set(given) - from_flags
    if league and not ns.resume:
        given = {**LEAGUE_DEFAULTS, **given}
    if given.get("run_dir") is None:
        if ns.resume:
            raise ValueError("--resume continues the run in --run-dir: name the folder")
        given["run_dir"] = str(new_run_dir(Path(ns.config).stem if ns.config else str(given.get("rules",
                                                                                      "run"))))
    args = load_args(None, given, source=ns.config)
    if ns.resume:  # the stored config is the base; the config file and the flags override it
        base, stored = resume_config(Path(args.run_dir))
        _keep_identity(base, given, stored)
        _not_restarted(base, given, Path(args.run_dir))
        args = load_args(None, {**base, **given}, source=str(stored))
    check_given(args, ns.config, from_file, from_flags, pool=selfplay or league)
    with catch_stop_signals() as stop:
        try:
            if args.exploiter_every > 0:
                if not league:
                    raise ValueError("training option exploiter_every trains a league: use canasta league")
                from train.learning.exploiter_league import train_with_exploiters

                run = train_with_exploiters(args, resume=ns.resume, overwrite=ns.overwrite,
                                            strict_resume=ns.strict_resume, stop=stop)
            else:
                from train.learning.trainer import train

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


def run(ns: argparse.Namespace) -> int:
    """``canasta train`` entry point."""
    return run_command(ns)
