"""Resume: the checkpoint a run continues from loaded into the model, with its optimizer, counters,
RNG states and opponent pool, each piece checked before the run's config is rewritten."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from train.learning.config import TrainArgs


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


# What makes a network other than its layer sizes (the weights' shapes check those).
NETWORK_KWARGS = ("activation_fn", "features_extractor_class", "features_extractor_kwargs",
                  "share_features_extractor", "optimizer_class")


def _check_same_network(path: Path, meta: dict[str, Any], policy: Any) -> None:
    """Refuse a checkpoint whose stored policy was built otherwise than this run's (e.g. ReLU where
    the trainer builds Tanh): weights of the same shapes would load and train another network."""
    from agents.checkpoint import CheckpointError, describe_policy
    from canasta_env.messages import short_repr

    stored = (meta.get("policy") or {}).get("kwargs") or {}
    built = describe_policy(policy)["kwargs"]
    for key in NETWORK_KWARGS:
        if key in stored and stored[key] != built.get(key):
            raise CheckpointError(f"{path}: its policy has {key} {short_repr(stored[key])}, but this run "
                                  f"builds {short_repr(built.get(key))}; a resume would train another "
                                  "network")


def _check_same_opponents(path: Path, state: dict[str, Any], pool: Any) -> None:
    """Refuse to resume a self-play run (its state holds the pool's snapshots or results) without a
    pool, as ``canasta train`` would: it would train on against ``opponent`` and its next checkpoint
    would drop the pool, so a later self-play resume starts the pool over."""
    from agents.checkpoint import STATE_FILE, CheckpointError

    snapshots = state.get("opponent_pool") or []
    if pool is None and (snapshots or "league_results" in state):
        raise CheckpointError(f"{path / STATE_FILE}: a self-play run's checkpoint (its opponent pool holds "
                              f"{len(snapshots)} snapshots); continue it with canasta selfplay or canasta "
                              "league, nothing was changed")


def restore(model: Any, run: Path, rules: Any, pool: Any = None, *, strict: bool = False,
            args: TrainArgs | None = None) -> bool:
    """Load the checkpoint a resume continues from (``train.common.run_dir.resume_checkpoint``: the latest
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
    from train.common.run_dir import resume_checkpoint, write_config

    remove_partial_checkpoints(run)
    path = resume_checkpoint(run, strict=strict)
    if path is None:
        if args is not None:
            write_config(run, dataclasses.asdict(args))
        return False
    ckpt = load_checkpoint(path, rules=rules, expect_layout=current_layout(rules))
    validate_state(path, ckpt.state, require=("num_timesteps", "rng"))
    _check_same_opponents(path, ckpt.state, pool)
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
    _check_same_network(path, ckpt.meta, model.policy)
    if args is not None:
        for group in model.policy.optimizer.param_groups:
            group["lr"] = args.learning_rate
    model.num_timesteps = int(ckpt.state["num_timesteps"])
    model._n_updates = int(ckpt.state.get("n_updates", 0))
    if pool is not None:
        from agents.learned.policy import load_policy_agent

        for name in ckpt.state.get("opponent_pool", []):
            try:
                pool.add(load_policy_agent(str(run / name), rules, deterministic=False), name)
            except (ValueError, OSError) as exc:  # a snapshot deleted to save space, or damaged
                raise CheckpointError(f"{path}: its opponent pool holds the snapshot {name}, which cannot "
                                      f"be loaded ({exc}); a resume needs every snapshot of the pool, "
                                      "nothing was changed") from None
        results = ckpt.state.get("league_results")
        if isinstance(results, dict):
            pool.load_state(results)
    restore_rng_state(ckpt.state["rng"])  # last: building the pool's networks draws from torch's RNG
    if args is not None:
        write_config(run, dataclasses.asdict(args))
    return True
