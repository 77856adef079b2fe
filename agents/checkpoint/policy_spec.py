"""Checks of meta.json's "policy" description, before any policy is built from it.

meta.json names classes; the loader builds only allow-listed ones (``allowed_classes()``), looked up
in a table (nothing is imported by name), and passes the policy only allow-listed constructor
arguments (``POLICY_KWARGS``), each checked for type and range. The network is bounded
(``MAX_LAYERS`` x ``MAX_UNITS``) and the stored weights' shapes are checked against the network the
description builds (``_check_weights``), so what gets allocated is no larger than the verified
weights file. Both the reader and the policy builder call these checks, and the writer calls them
too so that no unloadable checkpoint is written. The reader also checks the weights themselves:
finite floating-point numbers (``_check_weight_values``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from agents.checkpoint.format import (
    MAX_LAYERS,
    MAX_SPACE_SIZE,
    MAX_UNITS,
    META_FILE,
    OPTIMIZER_FILE,
    POLICY_FILE,
    Checkpoint,
    CheckpointError,
)
from canasta_env.messages import short_repr

POLICY_KWARGS = ("net_arch", "activation_fn", "ortho_init", "optimizer_class", "optimizer_kwargs",
                 "features_extractor_class", "features_extractor_kwargs",
                 "share_features_extractor", "normalize_images")
_OPTIMIZER_NUMBERS = {"eps": 1.0, "weight_decay": 10.0, "momentum": 1.0, "alpha": 1.0,
                      "dampening": 1.0}  # key -> largest value; all >= 0
_OPTIMIZER_FLAGS = ("amsgrad", "centered", "nesterov", "maximize")
_SB3_NET_ARCH = {"pi": [64, 64], "vf": [64, 64]}  # SB3's default
_FILE_SLACK = 1 << 20  # bytes of headers and records a weights or optimizer file may add
_FINITE_SLICE = 1 << 20  # values checked at a time for NaN and infinity


def _class_spec(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


@functools.cache
def allowed_classes() -> dict[str, dict[str, type]]:
    """What each class-valued entry of meta.json's "policy" may name: ``class``, and the kwargs
    ``activation_fn``, ``optimizer_class``, ``features_extractor_class`` -> {spec: class}, where a
    spec is ``module:qualname`` as ``describe_policy`` stores it."""
    import torch
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
    from stable_baselines3.common.torch_layers import FlattenExtractor

    nn, optim = torch.nn, torch.optim
    groups: dict[str, tuple[type, ...]] = {
        "class": (MaskableActorCriticPolicy,),
        "activation_fn": (nn.Tanh, nn.ReLU, nn.LeakyReLU, nn.ELU, nn.SELU, nn.GELU, nn.SiLU,
                          nn.Mish, nn.Sigmoid, nn.Softplus),
        "optimizer_class": (optim.Adam, optim.AdamW, optim.SGD, optim.RMSprop),
        "features_extractor_class": (FlattenExtractor,),
    }
    return {key: {_class_spec(c): c for c in classes} for key, classes in groups.items()}


def _allowed_class(file: Path, key: str, spec: Any) -> type:
    table = allowed_classes()[key]
    if isinstance(spec, str) and spec in table:
        return table[spec]
    names = ", ".join(s.rpartition(":")[2] for s in table)
    raise CheckpointError(f"{file}: policy {key} {short_repr(spec)} is outside the allowed modules "
                          f"and classes ({names})")


def policy_spec(file: Path, desc: Any) -> tuple[type, dict[str, Any]]:
    """Validate meta.json's "policy" (class, kwargs, spaces) and return the class and the
    constructor keyword arguments, classes resolved through ``allowed_classes()``."""
    if not isinstance(desc, dict) or not {"class", "kwargs"} <= set(desc):
        raise CheckpointError(f"{file}: no 'policy' description (class, kwargs)")
    extra = set(desc) - {"class", "kwargs", "observation_space", "action_space"}
    if extra:
        raise CheckpointError(f"{file}: policy: unknown keys {short_repr(sorted(extra))}")
    cls = _allowed_class(file, "class", desc["class"])
    _check_space(file, "observation_space", desc.get("observation_space"), "Box")
    _check_space(file, "action_space", desc.get("action_space"), "Discrete")
    kwargs = desc["kwargs"]
    if not isinstance(kwargs, dict):
        raise CheckpointError(f"{file}: policy kwargs {short_repr(kwargs)} is not a mapping")
    unknown = [k for k in kwargs if k not in POLICY_KWARGS]
    if unknown:
        raise CheckpointError(f"{file}: policy kwargs {short_repr(unknown)} not accepted (allowed: "
                              f"{', '.join(POLICY_KWARGS)})")
    return cls, {key: _policy_kwarg(file, key, value) for key, value in kwargs.items()}


def _policy_kwarg(file: Path, key: str, value: Any) -> Any:
    where = f"{file}: policy kwargs {key}"
    if key == "net_arch":
        return _net_arch(where, value)
    if key.endswith(("_fn", "_class")):
        if not isinstance(value, dict) or set(value) != {"__class__"}:
            raise CheckpointError(f"{where}: {short_repr(value)} is not a stored class")
        return _allowed_class(file, key, value["__class__"])
    if key == "optimizer_kwargs":
        return _optimizer_kwargs(where, value)
    if key == "features_extractor_kwargs":  # FlattenExtractor takes none
        if value not in (None, {}):
            raise CheckpointError(f"{where}: {short_repr(value)}: the features extractor takes none")
        return value
    if not isinstance(value, bool):
        raise CheckpointError(f"{where}: {short_repr(value)} is not true or false")
    return value


def _net_arch(where: str, value: Any) -> Any:
    """A list of layer sizes (shared by pi and vf) or {"pi": [...], "vf": [...]}, within limits."""
    if isinstance(value, dict):
        if not set(value) <= {"pi", "vf"}:
            raise CheckpointError(f"{where}: keys {short_repr(sorted(map(str, value)))}, want pi and vf")
        return {k: _layers(f"{where}.{k}", v) for k, v in value.items()}
    return _layers(where, value)


def _layers(where: str, value: Any) -> list[int]:
    if not isinstance(value, list) or len(value) > MAX_LAYERS or not all(
            type(u) is int and 1 <= u <= MAX_UNITS for u in value):
        raise CheckpointError(f"{where}: {short_repr(value)}: want a list of at most {MAX_LAYERS} "
                              f"layer sizes, each an integer in [1, {MAX_UNITS}]")
    return list(value)


def _optimizer_kwargs(where: str, value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise CheckpointError(f"{where}: {short_repr(value)} is not a mapping")
    out: dict[str, Any] = {}
    for key, v in value.items():
        if key in _OPTIMIZER_NUMBERS:
            ok = _number(v) and 0 <= v <= _OPTIMIZER_NUMBERS[key]
        elif key in _OPTIMIZER_FLAGS:
            ok = isinstance(v, bool)
        elif key == "betas":
            ok = isinstance(v, list) and len(v) == 2 and all(_number(b) and 0 <= b < 1 for b in v)
            v = tuple(v) if ok else v
        else:
            allowed = ", ".join((*_OPTIMIZER_NUMBERS, "betas", *_OPTIMIZER_FLAGS))
            raise CheckpointError(f"{where}: key {short_repr(key)} not accepted (allowed: {allowed})")
        if not ok:
            raise CheckpointError(f"{where}.{key}: {short_repr(v)} is out of range or of the wrong type")
        out[key] = v
    return out


def _number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def _check_space(file: Path, what: str, space: Any, kind: str) -> None:
    """A stored space description: the ``kind`` this loader rebuilds, with sane dimensions."""
    ok = (isinstance(space, dict) and set(space) <= {"type", "shape", "dtype", "n"}
          and space.get("type") == kind and isinstance(space.get("dtype"), str)
          and len(space["dtype"]) <= 32 and isinstance(space.get("shape"), list)
          and len(space["shape"]) <= 4
          and all(type(d) is int and 1 <= d <= MAX_SPACE_SIZE for d in space["shape"]))
    if ok and kind == "Discrete":
        n = space.get("n")
        ok = space["shape"] == [] and type(n) is int and 1 <= n <= MAX_SPACE_SIZE
    elif ok:
        ok = len(space["shape"]) == 1 and "n" not in space  # a flat Box
    if not ok:
        raise CheckpointError(f"{file}: policy {what} {short_repr(space)}: want a {kind} space with "
                              f"at most {MAX_SPACE_SIZE} values per dimension")


def _policy_shapes(desc: dict[str, Any], net_arch: Any) -> dict[str, tuple[int, ...]]:
    """Each weight's shape in the MaskableActorCriticPolicy (flat Box in, Discrete out, MLP
    extractor) that ``desc`` and ``net_arch`` describe: what its state_dict must hold."""
    features = desc["observation_space"]["shape"][0]
    if isinstance(net_arch, dict):
        pi, vf = net_arch.get("pi", []), net_arch.get("vf", [])
    else:
        pi = vf = net_arch
    out: dict[str, tuple[int, ...]] = {}
    for net, layers in (("policy_net", pi), ("value_net", vf)):
        prev = features
        for i, units in enumerate(layers):
            out[f"mlp_extractor.{net}.{2 * i}.weight"] = (units, prev)
            out[f"mlp_extractor.{net}.{2 * i}.bias"] = (units,)
            prev = units
    n = desc["action_space"]["n"]
    last_pi, last_vf = (pi[-1] if pi else features), (vf[-1] if vf else features)
    out.update({"action_net.weight": (n, last_pi), "action_net.bias": (n,),
                "value_net.weight": (1, last_vf), "value_net.bias": (1,)})
    return out


def _check_file_sizes(file: Path, desc: Any, files: Mapping[str, Any]) -> None:
    """Refuse a policy or optimizer file that ``meta.json`` records as larger than the network it
    describes can fill (8 bytes a weight, three optimizer buffers a weight, plus ``_FILE_SLACK`` for
    headers), before reading it: a sparse file of zeros takes no disk but twice its size in memory."""
    _, kwargs = policy_spec(file, desc)
    weights = sum(math.prod(s) for s in _policy_shapes(desc, kwargs.get("net_arch", _SB3_NET_ARCH)).values())
    for name, most in ((POLICY_FILE, 8 * weights), (OPTIMIZER_FILE, 3 * 8 * weights)):
        size = files.get(name, {}).get("bytes", 0)
        if size > most + _FILE_SLACK:
            raise CheckpointError(f"{file}: files[{name!r}] records {size:,} bytes, more than the "
                                  f"{most + _FILE_SLACK:,} the network it describes can fill")


def weights_fit(ckpt: Checkpoint, net_arch: Any) -> bool:
    """Whether ``ckpt``'s weights fit the network that ``net_arch`` builds for its spaces."""
    return _shapes(ckpt.policy_state) == _policy_shapes(ckpt.meta["policy"], net_arch)


def _shapes(policy_state: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    return {k: tuple(getattr(v, "shape", ())) for k, v in policy_state.items()}


def _check_weight_values(path: Path, policy_state: Mapping[str, Any]) -> None:
    """Refuse weights that are not floating point or hold NaN or infinity, stored or once cast to
    the network's float32 (a float64 1e300 loads as infinity). Loading casts integers, booleans and
    complex numbers to float32 without a word, and a network with a NaN weight gives NaN for every
    probability, so it plays the first legal action at every decision: results of a broken agent,
    reported as if it played."""
    import torch

    floats = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
    for key, value in policy_state.items():
        dtype = getattr(value, "dtype", type(value).__name__)
        if not isinstance(value, torch.Tensor) or dtype not in floats:
            raise CheckpointError(f"{path / POLICY_FILE}: {short_repr(key, 80)} is {dtype}, not a tensor "
                                  "of floating-point weights")
        if not _all_finite(value):
            raise CheckpointError(f"{path / POLICY_FILE}: {short_repr(key, 80)} holds NaN or infinite "
                                  "weights (a diverged or damaged network)")
        if value.dtype == torch.float64 and not _all_finite(value, torch.float32):
            raise CheckpointError(f"{path / POLICY_FILE}: {short_repr(key, 80)} holds weights beyond "
                                  "float32's range, which the network would hold as infinite")


def _all_finite(value: Any, dtype: Any = None) -> bool:
    """Whether a tensor's values (cast to ``dtype``, if given) are all finite, checked a slice at a
    time (``isfinite`` of a whole tensor takes temporaries as large as it: loading took twice the
    weights' size), by numpy where it holds the dtype (torch's ``isfinite`` is ten times slower)."""
    import torch

    flat = value.reshape(-1)
    for start in range(0, flat.numel(), _FINITE_SLICE):
        part = flat[start:start + _FINITE_SLICE]
        part = part if dtype is None else part.to(dtype)
        if part.dtype in (torch.float16, torch.float32, torch.float64):
            finite = bool(np.isfinite(part.numpy()).all())
        else:
            finite = bool(part.isfinite().all())
        if not finite:
            return False
    return True


def _check_weights(path: Path, desc: Any, policy_state: Mapping[str, Any]) -> None:
    """Refuse weights whose shapes differ from the network meta.json describes, before building
    it: what gets allocated is then no larger than the verified policy.safetensors."""
    _, kwargs = policy_spec(path / META_FILE, desc)
    net_arch = kwargs.get("net_arch", _SB3_NET_ARCH)
    want = _policy_shapes(desc, net_arch)
    have = _shapes(policy_state)
    if want == have:
        return
    wrong = [f"{k} is {list(have[k])}, the network needs {list(want[k])}"
             for k in want if k in have and have[k] != want[k]]
    missing, extra = sorted(set(want) - set(have)), sorted(set(have) - set(want))
    parts = wrong[:3] + ([f"missing {short_repr(missing)}"] if missing else []) + (
        [f"unexpected {short_repr(extra)}"] if extra else [])
    raise CheckpointError(f"{path / POLICY_FILE}: weights do not match the network {META_FILE} "
                          f"describes (net_arch {short_repr(net_arch)}): {'; '.join(parts)}")
