"""Writing a checkpoint: atomically, so that a kill at any point leaves a loadable run.

Every file goes to ``<run_dir>/.tmp-<name>-<pid>-<hex>`` and is fsynced, then the directory is
fsynced and renamed to ``<name>`` (an existing ``<name>`` is replaced), the run directory is fsynced,
and last the text file ``<run_dir>/latest`` (the checkpoint's name) is replaced atomically. A kill at
any point leaves ``latest`` naming a complete checkpoint; dot-prefixed leftovers are ignored by the
readers and removed by ``remove_partial_checkpoints()``. ``build_meta()`` gathers what
``meta.json`` describes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import secrets
import shutil
import sys
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
    _json_default,
    _json_round_trip,
    current_layout,
)
from agents.checkpoint.kill_hook import kill_point
from agents.checkpoint.policy import describe_policy

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
