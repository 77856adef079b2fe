"""Finding the checkpoints of a run directory: which are complete, which is the latest.

These are cheap checks (sizes, no hashing) for choosing a checkpoint; ``load_checkpoint`` verifies
the one chosen. Names starting with '.' (temporary directories of interrupted writes) are ignored.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from agents.checkpoint.format import FORMAT, LATEST, MAX_JSON_BYTES, META_FILE, POLICY_FILE

CHECKPOINT_NAME = re.compile(r"ckpt_\d+")  # checkpoint_name()'s form
_MAX_LATEST = 4096  # bytes of a run's ``latest`` file: one checkpoint name


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


def incomplete_after(run_dir: str | os.PathLike[str], chosen: Path | None) -> list[str]:
    """Names of the run's ``ckpt_<digits>`` directories that are incomplete and come after ``chosen``
    (all of them for None), oldest first: damage that choosing ``chosen`` would pass over."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return []
    after = _natural_key(chosen.name) if chosen is not None else []
    return sorted((p.name for p in run_dir.iterdir()
                   if CHECKPOINT_NAME.fullmatch(p.name) and p.is_dir() and not is_complete(p)
                   and _natural_key(p.name) > after), key=_natural_key)


def latest_name(run_dir: str | os.PathLike[str]) -> str | None:
    """The checkpoint name the run's ``latest`` file holds, if it is a plain name (else None).
    Only a regular file of at most ``_MAX_LATEST`` bytes is read: a FIFO would block for ever, and
    a link to /dev/zero or a huge file would fill the memory."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        with os.fdopen(os.open(Path(run_dir) / LATEST, flags), "rb") as f:
            data = f.read(_MAX_LATEST + 1) if stat.S_ISREG(os.fstat(f.fileno()).st_mode) else b""
        name = data.decode("utf-8").strip() if len(data) <= _MAX_LATEST else ""
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
