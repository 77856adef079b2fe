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

A checkpoint is untrusted input (``meta.json`` can be edited and re-hashed), so loading: verifies
every listed file (size and sha256, regular files only) on every path, even one it does not parse;
caps ``meta.json``/``state.json`` at ``MAX_JSON_BYTES`` before reading; builds only allow-listed
classes (``allowed_classes()``) with allow-listed, type-checked constructor arguments
(``POLICY_KWARGS``), nothing imported by name; bounds the network (``MAX_LAYERS`` x ``MAX_UNITS``)
and checks the stored weights' shapes against it before building; validates ``state.json``
(``validate_state``); and writes nothing anywhere.

Test hook: ``kill_point(name)`` SIGKILLs the process when the environment variable
``CANASTA_TEST_KILL_AT`` is ``name`` (the first time the point is reached) or ``name@N`` (the N-th
time, counted per process). ``save_checkpoint`` has three points: ``checkpoint_write`` (after the first
file of the temporary directory is written), ``checkpoint_rename`` (all files written, before the
rename) and ``checkpoint_latest`` (after the rename, before ``latest`` is updated). Trainers may add
their own points with the same function.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import json
import math
import os
import random
import re
import secrets
import shutil
import signal
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from canasta_env.messages import short_repr

FORMAT = "canasta-checkpoint/1"
POLICY_FILE = "policy.safetensors"
OPTIMIZER_FILE = "optimizer.pt"
STATE_FILE = "state.json"
META_FILE = "meta.json"
LATEST = "latest"
FILES = (POLICY_FILE, OPTIMIZER_FILE, STATE_FILE, META_FILE)
TMP_PREFIX = ".tmp-"
KILL_ENV = "CANASTA_TEST_KILL_AT"
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


def is_complete(path: Path) -> bool:
    """Cheap check (no hashing): meta.json parses and every listed file has its recorded size."""
    if path.name.startswith(".") or not path.is_dir():
        return False
    try:
        file = path / META_FILE
        if not file.is_file() or file.stat().st_size > MAX_JSON_BYTES:  # no FIFO, no huge read
            return False
        meta = json.loads(file.read_bytes())
        files = meta["files"]
        return meta.get("format") == FORMAT and POLICY_FILE in files and all(
            (path / f).stat().st_size == info["bytes"] for f, info in files.items())
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return False


def list_checkpoints(run_dir: str | os.PathLike[str]) -> list[Path]:
    """Complete checkpoints in ``run_dir``, oldest first (natural order of names: ckpt_9 < ckpt_10).

    Temporary directories and incomplete ones are left out. Completeness is checked by sizes;
    ``load_checkpoint`` verifies the hashes.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return []
    found = [p for p in run_dir.iterdir() if is_complete(p)]
    return sorted(found, key=lambda p: _natural_key(p.name))


def latest_name(run_dir: str | os.PathLike[str]) -> str | None:
    """The checkpoint name the run's ``latest`` file holds, if it is a plain name (else None)."""
    try:
        name = (Path(run_dir) / LATEST).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return name if name and name == Path(name).name and not name.startswith(".") else None


def latest_checkpoint(run_dir: str | os.PathLike[str]) -> Path | None:
    """The checkpoint ``latest`` names if it is complete, else the last of ``list_checkpoints``
    (None if there is none)."""
    run_dir = Path(run_dir)
    name = latest_name(run_dir)
    if name and is_complete(run_dir / name):
        return run_dir / name
    found = list_checkpoints(run_dir)
    return found[-1] if found else None


# ---- reading -----------------------------------------------------------------------------------
# Limits checked before anything is allocated from what a checkpoint claims.
MAX_JSON_BYTES = 16 << 20  # meta.json and state.json
MAX_FILE_BYTES = 1 << 33  # policy.safetensors, optimizer.pt (an 8 x 4096 network is ~1 GB)
MAX_COUNTER = 10**11  # num_timesteps, n_updates, episodes in state.json
MAX_POOL = 10_000  # opponent_pool entries in state.json
COUNTERS = ("num_timesteps", "n_updates", "episodes")
LISTED = (POLICY_FILE, OPTIMIZER_FILE, STATE_FILE)  # what meta.json's "files" may list
_SHA256 = re.compile(r"[0-9a-f]{64}")
_CHUNK = 1 << 20
def _one_line(exc: BaseException, limit: int = 200) -> str:
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def load_checkpoint(path_or_run_dir: str | os.PathLike[str], *, rules: Any = None,
                    expect_layout: str | Mapping[str, Any] | None = None,
                    load_optimizer: bool = True) -> Checkpoint:
    """Read and verify a checkpoint (or a run directory's latest one).

    Every file ``meta.json`` lists is checked (regular file, size, sha256) before any is parsed,
    whether or not it is parsed: ``load_optimizer=False`` still refuses a damaged ``optimizer.pt``.
    ``meta.json`` itself is checked field by field (types, bounds, the policy's classes against an
    allow-list), ``state.json`` by ``validate_state``, and the stored weights' shapes against the
    network ``meta.json`` describes. Nothing is written anywhere.

    Args:
        path_or_run_dir: a checkpoint directory, or a run directory or its ``latest`` file (the
            run's ``latest_checkpoint``).
        rules: if given (preset name, YAML path, dict or ``RuleSet``), refuse a checkpoint trained
            under other rules (every option but ``name`` is compared).
        expect_layout: if given, refuse another layout: a ``layout_hash`` string, or a mapping of
            some keys of ``meta["layout"]`` (``current_layout(rules)`` gives all of them).
        load_optimizer: False skips parsing ``optimizer.pt`` (it is still verified).

    Raises:
        CheckpointError: naming the file at fault.
    """
    from safetensors.torch import load as load_safetensors

    path = _resolve(Path(path_or_run_dir))
    meta = _read_meta(path)
    if rules is not None:
        _check_rules(path / META_FILE, meta, rules)
    if expect_layout is not None:
        _check_layout(path / META_FILE, meta, expect_layout)
    _check_unlisted(path, meta)
    parsed = {POLICY_FILE, STATE_FILE} | ({OPTIMIZER_FILE} if load_optimizer else set())
    data = {f: _verify(path, meta, f, keep=f in parsed) for f in meta["files"]}
    policy_state = _parse(path / POLICY_FILE, data[POLICY_FILE], load_safetensors)
    if "policy" in meta:
        _check_weights(path, meta["policy"], policy_state)
    state = _parse(path / STATE_FILE, data[STATE_FILE], _json_loads)
    if not isinstance(state, dict):
        raise CheckpointError(f"{path / STATE_FILE}: holds a {type(state).__name__}, not a mapping")
    validate_state(path, state)
    optimizer_state = None
    if load_optimizer and OPTIMIZER_FILE in data:
        optimizer_state = _parse(path / OPTIMIZER_FILE, data[OPTIMIZER_FILE], _torch_load)
        _check_optimizer_state(path / OPTIMIZER_FILE, optimizer_state)
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


def _open_regular(file: Path, what: str) -> Any:
    """Open ``file`` for reading, refusing anything but a regular file (a FIFO would block, a
    device never end); ``what`` completes the 'missing' message."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(file, flags)
    except FileNotFoundError:
        raise CheckpointError(f"{file}: missing{what}") from None
    except OSError as exc:
        raise CheckpointError(f"{file}: unreadable ({_one_line(exc)})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise CheckpointError(f"{file}: not a regular file")
    return os.fdopen(fd, "rb")


def _read_meta(path: Path) -> dict[str, Any]:
    file = path / META_FILE
    with _open_regular(file, f"; {path} is not a complete checkpoint") as f:
        size = os.fstat(f.fileno()).st_size
        if size > MAX_JSON_BYTES:
            raise CheckpointError(f"{file}: {size} bytes, more than the {MAX_JSON_BYTES} a "
                                  f"{META_FILE} may have")
        try:
            meta = _json_loads(f.read(MAX_JSON_BYTES + 1))
        except (OSError, ValueError) as exc:
            raise CheckpointError(f"{file}: unreadable or truncated ({_one_line(exc)})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        got = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise CheckpointError(f"{file}: format {short_repr(got)}, expected {FORMAT!r}")
    _check_files(file, meta.get("files"))
    if "policy" in meta:
        _policy_spec(file, meta["policy"])
    return meta


def _json_loads(data: bytes) -> Any:
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _check_files(file: Path, files: Any) -> None:
    """meta.json's "files": plain names this format knows, each {bytes: int, sha256: hex}."""
    if not isinstance(files, dict) or POLICY_FILE not in files or STATE_FILE not in files:
        raise CheckpointError(f"{file}: 'files' must give bytes and sha256 of {POLICY_FILE}, "
                              f"{STATE_FILE} and any {OPTIMIZER_FILE}")
    for name, info in files.items():
        where = f"{file}: files[{short_repr(name)}]"
        if name not in LISTED:
            plain = name and not any(c in name for c in "/\\:\0") and name not in (".", "..")
            why = "unknown file" if plain else "not a plain file name"
            raise CheckpointError(f"{where}: {why} (a checkpoint lists only {', '.join(LISTED)})")
        if not isinstance(info, dict) or set(info) != {"bytes", "sha256"}:
            raise CheckpointError(f"{where}: want {{'bytes': int, 'sha256': hex}}, got "
                                  f"{short_repr(info)}")
        limit = MAX_JSON_BYTES if name == STATE_FILE else MAX_FILE_BYTES
        size = info["bytes"]
        if type(size) is not int or not 0 <= size <= limit:
            raise CheckpointError(f"{where}: bytes {short_repr(size)} is not an integer in "
                                  f"[0, {limit}]")
        if not isinstance(info["sha256"], str) or not _SHA256.fullmatch(info["sha256"]):
            raise CheckpointError(f"{where}: sha256 {short_repr(info['sha256'])} is not 64 lowercase "
                                  "hex digits")


def _check_unlisted(path: Path, meta: dict[str, Any]) -> None:
    """A checkpoint file present but not in meta.json's list would be neither verified nor used."""
    for name in LISTED:
        if name not in meta["files"] and os.path.lexists(path / name):
            raise CheckpointError(f"{path / name}: present but not listed in {META_FILE} (no size "
                                  "or sha256 to verify it against)")


def _verify(path: Path, meta: dict[str, Any], fname: str, *, keep: bool) -> bytes:
    """Check ``fname``'s size and sha256 against meta.json; its bytes if ``keep`` (else b"")."""
    file, info = path / fname, meta["files"][fname]
    want = info["bytes"]
    with _open_regular(file, f" (listed in {META_FILE})") as f:
        size = os.fstat(f.fileno()).st_size
        if size == want:
            digest, chunks, size = hashlib.sha256(), [], 0
            try:
                while size <= want and (chunk := f.read(_CHUNK)):
                    digest.update(chunk)
                    size += len(chunk)
                    if keep:
                        chunks.append(chunk)
            except OSError as exc:
                raise CheckpointError(f"{file}: unreadable ({_one_line(exc)})") from None
    if size != want:  # checked by stat, and again by what was read (the file may have changed)
        how = "truncated" if size < want else "too long"
        raise CheckpointError(f"{file}: {how}: {size} bytes, {META_FILE} records {want}")
    if digest.hexdigest() != info["sha256"]:
        raise CheckpointError(f"{file}: sha256 mismatch (file {digest.hexdigest()}, {META_FILE} "
                              f"records {info['sha256']}): the file was modified or corrupted")
    return b"".join(chunks)


def _parse(file: Path, data: bytes, parse: Any) -> Any:
    """Parse verified bytes; any parser error is a CheckpointError naming the file."""
    try:
        return parse(data)
    except Exception as exc:  # safetensors, torch and json errors alike
        raise CheckpointError(f"{file}: unreadable ({_one_line(exc)})") from None


def _torch_load(data: bytes) -> Any:
    """``torch.load`` of tensors and plain containers only, after checking the archive stores its
    records uncompressed (as ``torch.save`` writes them): no record can expand past the file."""
    import zipfile

    import torch

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            records = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError) as exc:
        raise ValueError(f"not a torch.save archive ({exc})") from None
    if any(r.compress_type != zipfile.ZIP_STORED or r.file_size != r.compress_size
           for r in records) or sum(r.file_size for r in records) > len(data):
        raise ValueError("archive records are compressed or larger than the file")
    return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)


def _check_optimizer_state(file: Path, value: Any) -> None:
    if not isinstance(value, dict):
        raise CheckpointError(f"{file}: holds a {type(value).__name__}, not a mapping")
    if (not isinstance(value.get("state"), dict) or not isinstance(value.get("param_groups"), list)
            or not all(isinstance(g, dict) for g in value["param_groups"])):
        raise CheckpointError(f"{file}: not an optimizer state_dict (want 'state': dict and "
                              "'param_groups': list of dicts)")


def validate_state(path: str | os.PathLike[str], state: Any, *,
                   require: tuple[str, ...] = ()) -> None:
    """Check the ``state.json`` fields loaders use, refusing wrong types and absurd values.

    ``num_timesteps``, ``n_updates``, ``episodes``: integers in ``[0, MAX_COUNTER]``;
    ``opponent_pool``: a list of plain checkpoint names (no path separators, no leading '.');
    ``rng``: ``rng_state()``'s output, tried on throwaway generators (no global RNG is touched).
    Other keys are left alone; ``require`` names keys that must be present (e.g. a resume needs
    ``("num_timesteps", "rng")``). ``load_checkpoint`` calls this on every load.

    Args:
        path: the checkpoint directory (or its ``state.json``), for the message.
        state: the parsed ``state.json``.

    Raises:
        CheckpointError: naming ``state.json`` and the field.
    """
    file = Path(path)
    if file.name != STATE_FILE:
        file = file / STATE_FILE
    if not isinstance(state, Mapping):
        raise CheckpointError(f"{file}: holds a {type(state).__name__}, not a mapping")
    for key in require:
        if key not in state:
            raise CheckpointError(f"{file}: no {key!r}")
    for key in COUNTERS:
        value = state.get(key, 0)
        if type(value) is not int or not 0 <= value <= MAX_COUNTER:
            raise CheckpointError(f"{file}: {key} {short_repr(value)} is not an integer in "
                                  f"[0, {MAX_COUNTER}]")
    pool = state.get("opponent_pool", [])
    if not isinstance(pool, list) or len(pool) > MAX_POOL:
        raise CheckpointError(f"{file}: opponent_pool must be a list of at most {MAX_POOL} "
                              f"checkpoint names, got {short_repr(pool)}")
    for name in pool:
        if not _plain_name(name):
            raise CheckpointError(f"{file}: opponent_pool entry {short_repr(name)} is not a plain "
                                  "checkpoint name (no path separators, not starting with '.')")
    if "rng" in state:
        why = _rng_problem(state["rng"])
        if why:
            raise CheckpointError(f"{file}: rng: {why}")


def _plain_name(name: Any) -> bool:
    return (isinstance(name, str) and 0 < len(name) <= 255 and not name.startswith(".")
            and name != LATEST and not any(c in name for c in "/\\:\0"))


def _rng_problem(rng: Any) -> str | None:
    """Why ``rng_state()`` output is unusable, tried on fresh generators; None if it is fine."""
    import torch

    if not isinstance(rng, dict) or not {"python", "numpy", "torch"} <= set(rng):
        return "want a mapping with 'python', 'numpy' and 'torch' states"
    generators = rng.get("generators", {})
    cuda = rng.get("torch_cuda", [])
    try:
        version, internal, gauss = rng["python"]
        if not (isinstance(internal, list) and all(type(i) is int for i in internal)):
            return "python: want a list of integers"
        random.Random().setstate((version, tuple(internal), gauss))
        np.random.RandomState().set_state(rng["numpy"])
        if not (isinstance(rng["torch"], list) and all(type(i) is int for i in rng["torch"])):
            return "torch: want a list of integers"
        torch.Generator().set_state(torch.tensor(rng["torch"], dtype=torch.uint8))
        if not (isinstance(cuda, list) and all(isinstance(s, list) and all(type(i) is int for i in s)
                                               for s in cuda)):
            return "torch_cuda: want lists of integers"
        if not isinstance(generators, dict) or not all(isinstance(g, dict)
                                                       for g in generators.values()):
            return "generators: want a mapping of bit-generator states"
    except (TypeError, ValueError, KeyError, RuntimeError, OverflowError) as exc:
        return f"unusable ({_one_line(exc)})"
    return None


def _json_round_trip(value: Any) -> Any:
    return json.loads(json.dumps(value, default=_json_default))


def _check_rules(file: Path, meta: dict[str, Any], rules: Any) -> None:
    from canasta_env.rules import load_rules

    want = _json_round_trip(load_rules(rules).to_dict())
    try:
        have = _json_round_trip(load_rules(meta["rules"]).to_dict())
    except Exception as exc:
        raise CheckpointError(f"{file}: stored rules unusable ({_one_line(exc)})") from None
    diff = [k for k in sorted(set(want) | set(have)) if k != "name" and want.get(k) != have.get(k)]
    if diff:
        shown = "; ".join(f"{k}: checkpoint {short_repr(have.get(k))}, expected {short_repr(want.get(k))}"
                          for k in diff)
        raise CheckpointError(f"{file}: rules mismatch (checkpoint {short_repr(have.get('name'))}, "
                              f"expected {short_repr(want.get('name'))}): {shown}")


def _check_layout(file: Path, meta: dict[str, Any], expect: str | Mapping[str, Any]) -> None:
    have = meta.get("layout")
    if not isinstance(have, dict):
        raise CheckpointError(f"{file}: no 'layout' recorded")
    want = {"layout_hash": expect} if isinstance(expect, str) else dict(expect)
    diff = [k for k in want if have.get(k) != want[k]]
    if diff:
        shown = "; ".join(f"{k}: checkpoint {short_repr(have.get(k))}, expected {short_repr(want[k])}"
                          for k in diff)
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
        _policy_spec(Path(META_FILE), _json_round_trip(out))
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


def _class_spec(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


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


# ---- rebuilding the policy (allow-lists) -------------------------------------------------------
# meta.json names classes; the loader builds only these, looked up in a table (nothing is imported
# by name), and passes the policy only these constructor arguments, each checked for type and range.
MAX_LAYERS = 8  # hidden layers per network (pi, vf)
MAX_UNITS = 4096  # units per hidden layer
MAX_SPACE_SIZE = 10**6  # any dimension of a stored space, and Discrete n
POLICY_KWARGS = ("net_arch", "activation_fn", "ortho_init", "optimizer_class", "optimizer_kwargs",
                 "features_extractor_class", "features_extractor_kwargs",
                 "share_features_extractor", "normalize_images")
_OPTIMIZER_NUMBERS = {"eps": 1.0, "weight_decay": 10.0, "momentum": 1.0, "alpha": 1.0,
                      "dampening": 1.0}  # key -> largest value; all >= 0
_OPTIMIZER_FLAGS = ("amsgrad", "centered", "nesterov", "maximize")


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


def _policy_spec(file: Path, desc: Any) -> tuple[type, dict[str, Any]]:
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


def weights_fit(ckpt: Checkpoint, net_arch: Any) -> bool:
    """Whether ``ckpt``'s weights fit the network that ``net_arch`` builds for its spaces."""
    return _shapes(ckpt.policy_state) == _policy_shapes(ckpt.meta["policy"], net_arch)


def _shapes(policy_state: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    return {k: tuple(getattr(v, "shape", ())) for k, v in policy_state.items()}


def _check_weights(path: Path, desc: Any, policy_state: Mapping[str, Any]) -> None:
    """Refuse weights whose shapes differ from the network meta.json describes, before building
    it: what gets allocated is then no larger than the verified policy.safetensors."""
    _, kwargs = _policy_spec(path / META_FILE, desc)
    net_arch = kwargs.get("net_arch", {"pi": [64, 64], "vf": [64, 64]})  # SB3's default
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
    cls, kwargs = _policy_spec(file, desc)
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
