"""The SB3 side of a checkpoint: describe a live policy for meta.json, rebuild one from it.

``describe_policy`` stores a policy's class, constructor arguments (classes by name) and spaces, and
refuses one that ``policy_from_checkpoint`` would refuse to rebuild; ``policy_from_checkpoint``
builds the described policy through the checks of ``policy_spec`` (allow-listed classes and
arguments, weights' shapes) and loads the weights. No SB3 ``save()``/``load()`` is involved.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agents.checkpoint.format import (
    META_FILE,
    POLICY_FILE,
    Checkpoint,
    CheckpointError,
    _json_round_trip,
    _one_line,
)
from agents.checkpoint.policy_spec import _check_weights, _class_spec, _number, policy_spec
from canasta_env.messages import short_repr


def describe_policy(policy: Any) -> dict[str, Any]:
    """Class, constructor arguments (classes by name) and spaces of an SB3 policy.

    Raises ValueError for a policy ``policy_from_checkpoint`` would refuse to rebuild (a class
    off the allow-list, a network over the size limits), so no unloadable checkpoint is written.
    """
    params = dict(policy._get_constructor_parameters())
    for key in ("observation_space", "action_space", "lr_schedule"):
        params.pop(key, None)
    if hasattr(policy, "share_features_extractor"):  # not in sb3-contrib's constructor parameters
        params["share_features_extractor"] = policy.share_features_extractor
    out = {
        "class": _encode(type(policy), "class")["__class__"],
        "kwargs": _encode(params, "kwargs"),
        "observation_space": describe_space(policy.observation_space),
        "action_space": describe_space(policy.action_space),
    }
    try:
        policy_spec(Path(META_FILE), _json_round_trip(out))
    except CheckpointError as exc:
        raise ValueError(f"this policy cannot be checkpointed: {exc}") from None
    return out


def describe_space(space: Any) -> dict[str, Any]:
    """Type, shape, dtype (and n for Discrete) of a Gymnasium space."""
    out: dict[str, Any] = {"type": type(space).__name__,
                           "shape": list(space.shape) if space.shape is not None else None,
                           "dtype": str(space.dtype) if space.dtype is not None else None}
    if hasattr(space, "n"):
        out["n"] = int(space.n)
    return out


def _encode(value: Any, where: str) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, type):
        return {"__class__": _class_spec(value)}
    if isinstance(value, (list, tuple)):
        return [_encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        if "__class__" in value:
            raise TypeError(f"policy {where}: the key '__class__' is reserved")
        return {k: _encode(v, f"{where}.{k}") for k, v in value.items()}
    raise TypeError(f"policy {where}: {value!r} is neither plain data nor a class")


def _no_optimizer(params: Any, **kwargs: Any) -> None:
    """Stands in for the optimizer class of a policy built only to play: building a torch
    optimizer imports ``torch._dynamo`` (measured: 2.1 s, as long as importing torch itself)."""
    return None


def policy_from_checkpoint(ckpt: Checkpoint, observation_space: Any, action_space: Any, *,
                           device: str = "cpu", optimizer: bool = True) -> Any:
    """Rebuild the SB3 policy a checkpoint describes and load its weights (eval mode).

    Only allow-listed classes and constructor arguments are used (``allowed_classes()``,
    ``POLICY_KWARGS``), and the weights' shapes are checked against the described network before
    it is built. The spaces must match the stored ones (type, shape, dtype, n). The optimizer is
    built but not loaded: call ``policy.optimizer.load_state_dict(ckpt.optimizer_state)`` to resume;
    with ``optimizer=False`` (a policy that only plays) ``policy.optimizer`` is None.
    """
    file = ckpt.path / META_FILE
    desc: Any = ckpt.meta.get("policy")
    cls, kwargs = policy_spec(file, desc)
    for what, space in (("observation_space", observation_space), ("action_space", action_space)):
        if desc.get(what) != describe_space(space):
            raise CheckpointError(f"{file}: {what} mismatch: checkpoint {short_repr(desc.get(what))}, "
                                  f"given {short_repr(describe_space(space))}")
    _check_weights(ckpt.path, desc, ckpt.policy_state)
    lr = _stored_lr(ckpt.optimizer_state)
    try:
        if not optimizer:
            kwargs = {**kwargs, "optimizer_class": _no_optimizer, "optimizer_kwargs": {}}
        policy = cls(observation_space, action_space, lambda _: lr, **kwargs)
        policy.load_state_dict(ckpt.policy_state)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise CheckpointError(f"{ckpt.path / POLICY_FILE}: does not fit the policy {file} "
                              f"describes ({_one_line(exc)})") from None
    policy = policy.to(device)
    policy.set_training_mode(False)
    return policy


def _stored_lr(optimizer_state: Any) -> float:
    """The first parameter group's learning rate, or 0.0 when none usable is stored."""
    groups = optimizer_state.get("param_groups") if isinstance(optimizer_state, dict) else None
    first = groups[0] if isinstance(groups, list) and groups else None
    lr: Any = first.get("lr") if isinstance(first, dict) else None
    return float(lr) if _number(lr) else 0.0
