"""Writing a checkpoint: atomically, so that a kill at any point leaves a loadable run.

Every file goes to ``<run_dir>/.tmp-<name>-<pid>-<hex>`` and is fsynced, then the directory is
fsynced and renamed to ``<name>`` (an existing ``<name>`` is replaced), the run directory is fsynced,
and last the text file ``<run_dir>/latest`` (the checkpoint's name) is replaced atomically. A kill at
any point leaves ``latest`` naming a complete checkpoint; dot-prefixed leftovers are ignored by the
readers and removed by ``remove_partial_checkpoints()``. The files are streamed to disk, never held
whole in memory (nor the weights copied), and hashed as they are read back for ``meta.json``.
``build_meta()`` gathers what ``meta.json`` describes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import secrets
import shutil
import sys
from collections import Counter
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from agents.checkpoint.format import (
    FORMAT,
    LATEST,
    META_FILE,
    OPTIMIZER_FILE,
    POLICY_FILE,
    STATE_FILE,
    TMP_PREFIX,
    CheckpointError,
    _json_default,
    _json_loads,
    _json_round_trip,
    current_layout,
)
from agents.checkpoint.kill_hook import kill_point
from agents.checkpoint.policy import describe_policy
from agents.checkpoint.read import validate_state

_CHUNK = 1 << 20
VERSIONED = ("canasta-rl", "torch", "stable-baselines3", "sb3-contrib", "numpy", "safetensors")


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

    Raises:
        ValueError: ``state`` fails the loader's checks (``validate_state``), before any file is written.
    """
    run_dir = Path(run_dir)
    _check_name(name)
    tensors = _cpu_tensors(policy_state)
    state_json = _json_bytes(state, "state")
    try:  # the loader's checks of state.json, so that no checkpoint is written that would not load
        validate_state(run_dir / name, _json_loads(state_json))
    except CheckpointError as exc:
        raise ValueError(f"{exc}; refused before writing, as it would not load") from None
    _json_bytes({**meta, "format": FORMAT, "files": {}}, "meta")  # refused before anything is written
    run_dir.mkdir(parents=True, exist_ok=True)
    tmp = run_dir / f"{TMP_PREFIX}{name}-{os.getpid()}-{secrets.token_hex(4)}"
    tmp.mkdir()
    try:
        _write_safetensors(tmp / POLICY_FILE, tensors)
        kill_point("checkpoint_write")
        _write_bytes(tmp / STATE_FILE, state_json)
        written = [POLICY_FILE, STATE_FILE]
        if optimizer_state is not None:
            _write_torch(tmp / OPTIMIZER_FILE, dict(optimizer_state))
            written.append(OPTIMIZER_FILE)
        files = {f: _sync_and_describe(tmp / f) for f in written}
        _write_synced(tmp / META_FILE, _json_bytes({**meta, "format": FORMAT, "files": files}, "meta"))
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


def _cpu_tensors(policy_state: Mapping[str, Any]) -> dict[str, Any]:
    """The tensors as ``policy.safetensors`` holds them: detached, on the CPU, contiguous.

    A tensor is copied only where it shares memory with another (safetensors refuses those), not
    every one: copying them all held a second copy of the weights while saving.
    """
    import torch

    tensors = {}
    for key, value in policy_state.items():
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"policy_state[{key!r}] is a {type(value).__name__}, not a tensor")
        tensors[key] = value.detach().to("cpu").contiguous()
    owners = Counter(t.untyped_storage().data_ptr() for t in tensors.values())
    for key, tensor in tensors.items():
        ptr = tensor.untyped_storage().data_ptr()
        if ptr and owners[ptr] > 1:
            tensors[key] = tensor.clone()
    return tensors


def _write_safetensors(path: Path, tensors: dict[str, Any]) -> None:
    """Stream ``tensors`` to ``path``: the bytes ``safetensors.torch.save`` returns, never held whole."""
    from safetensors.torch import save_file

    save_file(tensors, path)


def _write_torch(path: Path, value: Any) -> None:
    """``torch.save`` into a file object: the bytes it writes into an ``io.BytesIO``, never held whole
    (given a path, it would name the archive's folder after the file)."""
    import torch

    with open(path, "xb") as f:
        torch.save(value, f)


def _write_bytes(path: Path, data: bytes) -> None:
    with open(path, "xb") as f:
        f.write(data)


def _sync_and_describe(path: Path) -> dict[str, Any]:
    """fsync ``path`` and return what meta.json records of it: its size and the sha256 of the bytes
    read back from it, a chunk at a time."""
    digest, size, chunk = hashlib.sha256(), 0, memoryview(bytearray(_CHUNK))
    with open(path, "r+b") as f:
        os.fsync(f.fileno())
        while n := f.readinto(chunk):
            digest.update(chunk[:n])
            size += n
    return {"bytes": size, "sha256": digest.hexdigest()}


def _json_bytes(value: Any, what: str) -> bytes:
    """``value`` as the JSON file holds it, refused unless it reads back as loading reads it: keys
    made str could meet (``{1: 0, "1": 0}``), a key given twice, which loading refuses."""
    try:
        data = json.dumps(value, indent=2, default=_json_default).encode()
    except (TypeError, ValueError) as exc:
        raise TypeError(f"checkpoint {what}: {exc}") from None
    try:
        _json_loads(data)
    except ValueError as exc:
        raise TypeError(f"checkpoint {what}: {exc} once its keys are made str; it would not load") from None
    return data


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
    last ``latest`` update by a run that was killed and resumed); should that rename fail, the old
    ``final`` is put back (it was left under a dot name, which a resume deletes, ``latest``
    perhaps naming it)."""
    if not final.exists():
        os.rename(tmp, final)
        return
    trash = final.parent / f"{TMP_PREFIX}old-{final.name}-{os.getpid()}-{secrets.token_hex(4)}"
    os.rename(final, trash)
    try:
        os.rename(tmp, final)
    except BaseException:
        os.rename(trash, final)
        raise
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
