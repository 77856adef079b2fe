"""Training checkpoints: a directory of plain data, written atomically and verified on load.

SB3's ``save()``/``load()`` are never used: their data file is cloudpickle, which runs code on load.
A checkpoint is a directory ``<run_dir>/<name>`` (``checkpoint_name(steps)`` gives ``ckpt_000012345``)
holding:

* ``policy.safetensors`` - the policy's ``state_dict()`` (safetensors: tensors only);
* ``optimizer.pt`` - the optimizer's ``state_dict()``, read back with ``torch.load(weights_only=True)``
  (optional: ``optimizer_state=None`` writes no file);
* ``state.json`` - counters, RNG states (``rng_state()``), opponent pool: whatever the trainer passes;
* ``meta.json`` - train config, ``RuleSet``, layout hashes, package versions, the policy's class and
  constructor arguments (``build_meta()``), plus ``format`` and ``files`` (size and sha256 of each
  other file), which ``save_checkpoint`` adds.

Writing: every file goes to ``<run_dir>/.tmp-<name>-<pid>-<hex>`` and is fsynced, then the directory
is fsynced and renamed to ``<name>`` (an existing ``<name>`` is replaced), the run directory is
fsynced, and last the text file ``<run_dir>/latest`` (the checkpoint's name) is replaced atomically.
A kill at any point leaves ``latest`` naming a complete checkpoint; dot-prefixed leftovers are ignored
by the readers and removed by ``remove_partial_checkpoints()``.

Loading refuses, with a ``CheckpointError`` naming the file: a missing file, a truncated one, a sha256
mismatch, one that does not parse, and (when the caller says what it expects) other rules or another
observation/action layout, showing both values. ``meta.json`` carries the hashes, so it is checked by
parsing, not by hash.

Test hook: ``kill_point(name)`` SIGKILLs the process when the environment variable
``CANASTA_TEST_KILL_AT`` is ``name`` (the first time the point is reached) or ``name@N`` (the N-th
time, counted per process). ``save_checkpoint`` has three points: ``checkpoint_write`` (after the first
file of the temporary directory is written), ``checkpoint_rename`` (all files written, before the
rename) and ``checkpoint_latest`` (after the rename, before ``latest`` is updated). Trainers may add
their own points with the same function.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import io
import json
import os
import random
import re
import secrets
import shutil
import signal
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

FORMAT = "canasta-checkpoint/1"
POLICY_FILE = "policy.safetensors"
OPTIMIZER_FILE = "optimizer.pt"
STATE_FILE = "state.json"
META_FILE = "meta.json"
LATEST = "latest"
FILES = (POLICY_FILE, OPTIMIZER_FILE, STATE_FILE, META_FILE)
TMP_PREFIX = ".tmp-"
KILL_ENV = "CANASTA_TEST_KILL_AT"
# Modules a stored class name (activation_fn, optimizer_class, ...) may be imported from.
CLASS_MODULES = ("torch", "stable_baselines3", "sb3_contrib", "canasta_env", "agents", "train")
VERSIONED = ("canasta-rl", "torch", "stable-baselines3", "sb3-contrib", "numpy", "safetensors")


class CheckpointError(ValueError):
    """A checkpoint is missing, damaged, or not the one the caller expects (message names the file)."""


@dataclass
class Checkpoint:
    """A verified checkpoint read back into memory (tensors on the CPU)."""

    path: Path
    policy_state: dict[str, Any]  # name -> torch.Tensor
    optimizer_state: dict[str, Any] | None  # None: saved without one, or load_optimizer=False
    state: dict[str, Any]
    meta: dict[str, Any]

    @property
    def name(self) -> str:
        return self.path.name


def checkpoint_name(num_timesteps: int) -> str:
    """The conventional directory name for a checkpoint taken at ``num_timesteps``."""
    return f"ckpt_{int(num_timesteps):09d}"


# ---- test hook ---------------------------------------------------------------------------------
_kill_counts: dict[str, int] = {}


def kill_point(name: str) -> None:
    """SIGKILL this process here if ``CANASTA_TEST_KILL_AT`` asks for ``name`` (see module doc)."""
    spec = os.environ.get(KILL_ENV, "")
    if not spec:
        return
    point, _, nth = spec.partition("@")
    if point != name:
        return
    _kill_counts[name] = _kill_counts.get(name, 0) + 1
    if _kill_counts[name] == (int(nth) if nth else 1):
        sys.stdout.flush()
        sys.stderr.flush()
        if hasattr(signal, "SIGKILL"):
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(137)


# ---- writing -----------------------------------------------------------------------------------
def save_checkpoint(run_dir: str | os.PathLike[str], name: str, *, policy_state: Mapping[str, Any],
                    optimizer_state: Mapping[str, Any] | None, state: Mapping[str, Any],
                    meta: Mapping[str, Any]) -> Path:
    """Write a checkpoint directory atomically and point ``latest`` at it.

    Args:
        run_dir: the run's directory (created if needed).
        name: the checkpoint's directory name, e.g. ``checkpoint_name(model.num_timesteps)``.
        policy_state: ``policy.state_dict()`` (tensors only).
        optimizer_state: ``policy.optimizer.state_dict()``, or None for none.
        state: JSON-able counters, ``rng_state()``, opponent pool... (numpy scalars and arrays are
            stored as numbers and lists; tuples come back as lists, non-str keys as str).
        meta: JSON-able description, normally ``build_meta(...)``; the keys ``format`` and ``files``
            are set here.

    Returns:
        The checkpoint's final path ``run_dir / name``.
    """
    import torch

    run_dir = Path(run_dir)
    _check_name(name)
    blobs = {POLICY_FILE: _safetensors_bytes(policy_state), STATE_FILE: _json_bytes(state, "state")}
    if optimizer_state is not None:
        buffer = io.BytesIO()
        torch.save(dict(optimizer_state), buffer)
        blobs[OPTIMIZER_FILE] = buffer.getvalue()
    files = {f: {"bytes": len(b), "sha256": hashlib.sha256(b).hexdigest()} for f, b in blobs.items()}
    blobs[META_FILE] = _json_bytes({**meta, "format": FORMAT, "files": files}, "meta")
    run_dir.mkdir(parents=True, exist_ok=True)
    tmp = run_dir / f"{TMP_PREFIX}{name}-{os.getpid()}-{secrets.token_hex(4)}"
    tmp.mkdir()
    try:
        for i, (fname, data) in enumerate(blobs.items()):  # meta.json last
            _write_synced(tmp / fname, data)
            if i == 0:
                kill_point("checkpoint_write")
        _fsync_dir(tmp)
        kill_point("checkpoint_rename")
        final = run_dir / name
        _move_into_place(tmp, final)
        _fsync_dir(run_dir)
        kill_point("checkpoint_latest")
        _write_latest(run_dir, name)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def _check_name(name: str) -> None:
    if (not name or name != Path(name).name or name.startswith(".") or name == LATEST
            or name in (".", "..")):
        raise ValueError(f"checkpoint name {name!r}: want a plain directory name, not starting "
                         f"with '.' and not {LATEST!r}")


def _safetensors_bytes(policy_state: Mapping[str, Any]) -> bytes:
    import torch
    from safetensors.torch import save

    tensors = {}
    for key, value in policy_state.items():
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"policy_state[{key!r}] is a {type(value).__name__}, not a tensor")
        tensors[key] = value.detach().to("cpu").contiguous().clone()  # clone: no shared storage
    return save(tensors)


def _json_default(value: Any) -> Any:
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(f"{type(value).__name__} is not JSON-able")


def _json_bytes(value: Any, what: str) -> bytes:
    try:
        return json.dumps(value, indent=2, default=_json_default).encode()
    except (TypeError, ValueError) as exc:
        raise TypeError(f"checkpoint {what}: {exc}") from None


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "xb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _fsync_dir(path: Path) -> None:
    if os.name != "posix":  # directories cannot be opened for fsync on Windows
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _move_into_place(tmp: Path, final: Path) -> None:
    """Rename ``tmp`` to ``final``, replacing an existing ``final`` (e.g. one written after the
    last ``latest`` update by a run that was killed and resumed)."""
    if not final.exists():
        os.rename(tmp, final)
        return
    trash = final.parent / f"{TMP_PREFIX}old-{final.name}-{os.getpid()}-{secrets.token_hex(4)}"
    os.rename(final, trash)
    os.rename(tmp, final)
    shutil.rmtree(trash, ignore_errors=True)


def _write_latest(run_dir: Path, name: str) -> None:
    tmp = run_dir / f"{TMP_PREFIX}{LATEST}-{os.getpid()}-{secrets.token_hex(4)}"
    _write_synced(tmp, (name + "\n").encode())
    os.replace(tmp, run_dir / LATEST)
    _fsync_dir(run_dir)


def remove_partial_checkpoints(run_dir: str | os.PathLike[str]) -> list[Path]:
    """Delete the temporary leftovers of interrupted writes; return what was removed.

    Only for a run directory no other process is writing to (e.g. on resume).
    """
    run_dir = Path(run_dir)
    removed = sorted(p for p in run_dir.glob(TMP_PREFIX + "*")) if run_dir.is_dir() else []
    for p in removed:
        shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
    return removed


# ---- finding -----------------------------------------------------------------------------------
def _natural_key(name: str) -> list[Any]:
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", name) if t]


def _is_complete(path: Path) -> bool:
    """Cheap check (no hashing): meta.json parses and every listed file has its recorded size."""
    if path.name.startswith(".") or not path.is_dir():
        return False
    try:
        meta = json.loads((path / META_FILE).read_bytes())
        files = meta["files"]
        return meta.get("format") == FORMAT and POLICY_FILE in files and all(
            (path / f).stat().st_size == info["bytes"] for f, info in files.items())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def list_checkpoints(run_dir: str | os.PathLike[str]) -> list[Path]:
    """Complete checkpoints in ``run_dir``, oldest first (natural order of names: ckpt_9 < ckpt_10).

    Temporary directories and incomplete ones are left out. Completeness is checked by sizes;
    ``load_checkpoint`` verifies the hashes.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return []
    found = [p for p in run_dir.iterdir() if _is_complete(p)]
    return sorted(found, key=lambda p: _natural_key(p.name))


def latest_checkpoint(run_dir: str | os.PathLike[str]) -> Path | None:
    """The checkpoint ``latest`` names if it is complete, else the last of ``list_checkpoints``
    (None if there is none)."""
    run_dir = Path(run_dir)
    try:
        name = (run_dir / LATEST).read_text().strip()
    except (OSError, UnicodeDecodeError):
        name = ""
    if name and name == Path(name).name and _is_complete(run_dir / name):
        return run_dir / name
    found = list_checkpoints(run_dir)
    return found[-1] if found else None


# ---- reading -----------------------------------------------------------------------------------
def load_checkpoint(path_or_run_dir: str | os.PathLike[str], *, rules: Any = None,
                    expect_layout: str | Mapping[str, Any] | None = None,
                    load_optimizer: bool = True) -> Checkpoint:
    """Read and verify a checkpoint (or a run directory's latest one).

    Args:
        path_or_run_dir: a checkpoint directory, or a run directory or its ``latest`` file (the
            run's ``latest_checkpoint``).
        rules: if given (preset name, YAML path, dict or ``RuleSet``), refuse a checkpoint trained
            under other rules (every option but ``name`` is compared).
        expect_layout: if given, refuse another layout: a ``layout_hash`` string, or a mapping of
            some keys of ``meta["layout"]`` (``current_layout(rules)`` gives all of them).
        load_optimizer: False skips reading (and verifying) ``optimizer.pt``.

    Raises:
        CheckpointError: naming the file at fault.
    """
    import torch
    from safetensors.torch import load as load_safetensors

    path = _resolve(Path(path_or_run_dir))
    meta = _read_meta(path)
    if rules is not None:
        _check_rules(path / META_FILE, meta, rules)
    if expect_layout is not None:
        _check_layout(path / META_FILE, meta, expect_layout)
    policy_state = _parse(path, meta, POLICY_FILE, load_safetensors)
    state = _parse(path, meta, STATE_FILE, json.loads)
    optimizer_state = None
    if load_optimizer and OPTIMIZER_FILE in meta["files"]:
        optimizer_state = _parse(path, meta, OPTIMIZER_FILE, lambda data: torch.load(
            io.BytesIO(data), map_location="cpu", weights_only=True))
    for what, value in ((STATE_FILE, state), (OPTIMIZER_FILE, optimizer_state)):
        if value is not None and not isinstance(value, dict):
            raise CheckpointError(f"{path / what}: holds a {type(value).__name__}, not a mapping")
    return Checkpoint(path, policy_state, optimizer_state, state, meta)


def _resolve(path: Path) -> Path:
    if path.name == LATEST and path.is_file():  # RUN_DIR/latest names the run's latest checkpoint
        path = path.parent
    if not path.is_dir():
        raise CheckpointError(f"{path}: no such checkpoint or run directory")
    if any((path / f).exists() for f in FILES):
        return path
    found = latest_checkpoint(path)
    if found is None:
        raise CheckpointError(f"{path}: neither a checkpoint ({', '.join(FILES)}) nor a run "
                              "directory holding a complete one")
    return found


def _read_meta(path: Path) -> dict[str, Any]:
    file = path / META_FILE
    if not file.is_file():
        raise CheckpointError(f"{file}: missing; {path} is not a complete checkpoint")
    try:
        meta = json.loads(file.read_bytes())
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{file}: unreadable or truncated ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        got = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise CheckpointError(f"{file}: format {got!r}, expected {FORMAT!r}")
    files = meta.get("files")
    if not isinstance(files, dict) or POLICY_FILE not in files or STATE_FILE not in files or not all(
            isinstance(i, dict) and {"bytes", "sha256"} <= set(i) for i in files.values()):
        raise CheckpointError(f"{file}: 'files' must give bytes and sha256 of {POLICY_FILE}, "
                              f"{STATE_FILE} and any {OPTIMIZER_FILE}")
    return meta


def _parse(path: Path, meta: dict[str, Any], fname: str, parse: Any) -> Any:
    """Read ``fname``, check its size and sha256 against meta.json, then parse it."""
    file, info = path / fname, meta["files"][fname]
    try:
        data = file.read_bytes()
    except FileNotFoundError:
        raise CheckpointError(f"{file}: missing (listed in {META_FILE})") from None
    except OSError as exc:
        raise CheckpointError(f"{file}: unreadable ({exc})") from None
    if len(data) != info["bytes"]:
        how = "truncated" if len(data) < info["bytes"] else "too long"
        raise CheckpointError(f"{file}: {how}: {len(data)} bytes, {META_FILE} records "
                              f"{info['bytes']}")
    digest = hashlib.sha256(data).hexdigest()
    if digest != info["sha256"]:
        raise CheckpointError(f"{file}: sha256 mismatch (file {digest}, {META_FILE} records "
                              f"{info['sha256']}): the file was modified or corrupted")
    try:
        return parse(data)
    except Exception as exc:  # safetensors, torch and json errors alike
        raise CheckpointError(f"{file}: unreadable ({type(exc).__name__}: {exc})") from None


def _json_round_trip(value: Any) -> Any:
    return json.loads(json.dumps(value, default=_json_default))


def _check_rules(file: Path, meta: dict[str, Any], rules: Any) -> None:
    from canasta_env.rules import load_rules

    want = _json_round_trip(load_rules(rules).to_dict())
    try:
        have = _json_round_trip(load_rules(meta["rules"]).to_dict())
    except Exception as exc:
        raise CheckpointError(f"{file}: stored rules unusable ({exc})") from None
    diff = [k for k in sorted(set(want) | set(have)) if k != "name" and want.get(k) != have.get(k)]
    if diff:
        shown = "; ".join(f"{k}: checkpoint {have.get(k)!r}, expected {want.get(k)!r}" for k in diff)
        raise CheckpointError(f"{file}: rules mismatch (checkpoint {have.get('name')!r}, expected "
                              f"{want.get('name')!r}): {shown}")


def _check_layout(file: Path, meta: dict[str, Any], expect: str | Mapping[str, Any]) -> None:
    have = meta.get("layout")
    if not isinstance(have, dict):
        raise CheckpointError(f"{file}: no 'layout' recorded")
    want = {"layout_hash": expect} if isinstance(expect, str) else dict(expect)
    diff = [k for k in want if have.get(k) != want[k]]
    if diff:
        shown = "; ".join(f"{k}: checkpoint {have.get(k)!r}, expected {want[k]!r}" for k in diff)
        raise CheckpointError(f"{file}: layout mismatch: {shown}")


# ---- metadata ----------------------------------------------------------------------------------
def current_layout(rules: Any, episode: str = "hand") -> dict[str, Any]:
    """What this code's observation and action layout is for ``rules`` (stored as meta["layout"])."""
    from canasta_env.engine.actions import ACTION_NAMES, NUM_ACTIONS
    from canasta_env.engine.layout import pack_params
    from canasta_env.engine.observation import layout_hash, obs_dim
    from canasta_env.rules import load_rules

    params = pack_params(load_rules(rules), episode)
    return {
        "layout_hash": layout_hash(params),
        "obs_dim": obs_dim(params),
        "num_actions": NUM_ACTIONS,
        "action_names_hash": hashlib.sha256("\n".join(ACTION_NAMES).encode()).hexdigest()[:16],
    }


def package_versions() -> dict[str, str | None]:
    """Installed versions of the packages a checkpoint depends on (None: not installed)."""
    out: dict[str, str | None] = {"python": sys.version.split()[0]}
    for dist in VERSIONED:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def build_meta(*, config: Any, rules: Any, policy: Any, episode: str = "hand",
               extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``meta`` argument of ``save_checkpoint`` for a run.

    Args:
        config: the train config (a mapping or a dataclass; JSON-able).
        rules: the run's rules (anything ``load_rules`` takes); stored resolved.
        policy: the SB3 policy (``model.policy``): its class, constructor arguments and spaces
            are stored so that ``policy_from_checkpoint`` can rebuild it.
        episode: ``"hand"`` or ``"game"``.
        extra: more JSON-able keys to store.
    """
    from canasta_env.rules import load_rules

    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        config = dataclasses.asdict(config)
    resolved = load_rules(rules)
    return _json_round_trip({
        "config": dict(config), "rules": resolved.to_dict(), "episode": episode,
        "layout": current_layout(resolved, episode), "versions": package_versions(),
        "policy": describe_policy(policy), **(extra or {}),
    })


def describe_policy(policy: Any) -> dict[str, Any]:
    """Class, constructor arguments (classes by name) and spaces of an SB3 policy."""
    params = dict(policy._get_constructor_parameters())
    for key in ("observation_space", "action_space", "lr_schedule"):
        params.pop(key, None)
    if hasattr(policy, "share_features_extractor"):  # not in sb3-contrib's constructor parameters
        params["share_features_extractor"] = policy.share_features_extractor
    return {
        "class": _encode(type(policy), "class")["__class__"],
        "kwargs": _encode(params, "kwargs"),
        "observation_space": describe_space(policy.observation_space),
        "action_space": describe_space(policy.action_space),
    }


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
        return {"__class__": f"{value.__module__}:{value.__qualname__}"}
    if isinstance(value, (list, tuple)):
        return [_encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        if "__class__" in value:
            raise TypeError(f"policy {where}: the key '__class__' is reserved")
        return {k: _encode(v, f"{where}.{k}") for k, v in value.items()}
    raise TypeError(f"policy {where}: {value!r} is neither plain data nor a class")


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if isinstance(value, dict):
        if set(value) == {"__class__"}:
            return _import_class(value["__class__"])
        return {k: _decode(v) for k, v in value.items()}
    return value


def _import_class(spec: str) -> type:
    module, _, qualname = spec.partition(":")
    if not any(module == m or module.startswith(m + ".") for m in CLASS_MODULES):
        raise CheckpointError(f"{META_FILE}: class {spec!r} is outside the allowed modules "
                              f"{', '.join(CLASS_MODULES)}")
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise CheckpointError(f"{META_FILE}: class {spec!r} not found ({exc})") from None
    if not isinstance(obj, type):
        raise CheckpointError(f"{META_FILE}: {spec!r} is not a class")
    return obj


def policy_from_checkpoint(ckpt: Checkpoint, observation_space: Any, action_space: Any, *,
                           device: str = "cpu") -> Any:
    """Rebuild the SB3 policy a checkpoint describes and load its weights (eval mode).

    The spaces must match the stored ones (type, shape, dtype, n). The optimizer is built but
    not loaded: call ``policy.optimizer.load_state_dict(ckpt.optimizer_state)`` to resume.
    """
    from stable_baselines3.common.policies import BasePolicy

    file = ckpt.path / META_FILE
    desc = ckpt.meta.get("policy")
    if not isinstance(desc, dict) or not {"class", "kwargs"} <= set(desc):
        raise CheckpointError(f"{file}: no 'policy' description (class, kwargs)")
    for what, space in (("observation_space", observation_space), ("action_space", action_space)):
        if desc.get(what) != describe_space(space):
            raise CheckpointError(f"{file}: {what} mismatch: checkpoint {desc.get(what)}, "
                                  f"given {describe_space(space)}")
    cls = _import_class(desc["class"])
    if not issubclass(cls, BasePolicy):
        raise CheckpointError(f"{file}: {desc['class']!r} is not an SB3 policy")
    groups = (ckpt.optimizer_state or {}).get("param_groups") or [{}]
    lr = float(groups[0].get("lr", 0.0))
    try:
        policy = cls(observation_space, action_space, lambda _: lr, **_decode(desc["kwargs"]))
        policy.load_state_dict(ckpt.policy_state)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise CheckpointError(f"{ckpt.path / POLICY_FILE}: does not fit the policy {file} "
                              f"describes ({exc})") from None
    policy = policy.to(device)
    policy.set_training_mode(False)
    return policy


# ---- RNG states --------------------------------------------------------------------------------
def rng_state(generators: Mapping[str, np.random.Generator] | None = None) -> dict[str, Any]:
    """JSON-able RNG states: Python ``random``, numpy's global RNG, torch (CPU, and CUDA when
    present) and the named numpy ``generators``."""
    import torch

    version, internal, gauss = random.getstate()
    out: dict[str, Any] = {
        "python": [version, list(internal), gauss],
        "numpy": _json_round_trip(np.random.get_state(legacy=False)),
        "torch": torch.get_rng_state().tolist(),
        "generators": {k: _json_round_trip(g.bit_generator.state) for k, g in (generators or {}).items()},
    }
    if torch.cuda.is_available():
        out["torch_cuda"] = [s.tolist() for s in torch.cuda.get_rng_state_all()]
    return out


def restore_rng_state(state: Mapping[str, Any],
                      generators: Mapping[str, np.random.Generator] | None = None) -> None:
    """Set the RNGs from ``rng_state()``'s output; each named generator must be in ``state``."""
    import torch

    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    np.random.set_state(state["numpy"])
    torch.set_rng_state(torch.tensor(state["torch"], dtype=torch.uint8))
    if "torch_cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([torch.tensor(s, dtype=torch.uint8) for s in state["torch_cuda"]])
    for key, gen in (generators or {}).items():
        if key not in state["generators"]:
            raise KeyError(f"no RNG state stored for generator {key!r}")
        gen.bit_generator.state = state["generators"][key]
