"""Tiny training runs for the tests that damage run folders: the flags of a run that takes seconds,
a copy of a shared run for one test to damage, and the digest that shows a folder was left as it was."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

# two checkpoints in 256 learner steps, each a snapshot of a self-play pool
TINY = ["--rules", "classic_2p", "--num-envs", "8", "--n-steps", "16", "--batch-size", "64",
        "--n-epochs", "1", "--net-arch", "16", "--checkpoint-every", "128", "--snapshot-every", "128",
        "--eval-deals", "2", "--progress", "false"]


def folder_digest(folder: Path) -> dict[str, str]:
    """sha256 of every file under ``folder`` (the lock file holds only its last holder's PID)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name != ".lock"}


def copy_run(run: Path, tmp_path: Path) -> Path:
    """A copy of ``run`` in ``tmp_path`` for one test to change, its lock file left behind."""
    copy = tmp_path / "run"
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns(".lock"))
    return copy
