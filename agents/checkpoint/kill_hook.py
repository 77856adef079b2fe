"""Test hook: ``kill_point(name)`` SIGKILLs the process at a named point of a write.

It fires when the environment variable ``CANASTA_TEST_KILL_AT`` is ``name`` (the first time the point
is reached) or ``name@N`` (the N-th time, counted per process). ``save_checkpoint`` has three points:
``checkpoint_write`` (after the first file of the temporary directory is written),
``checkpoint_rename`` (all files written, before the rename) and ``checkpoint_latest`` (after the
rename, before ``latest`` is updated). Trainers add their own points with the same function. The
tests use it to show that a kill at any point leaves a loadable run.
"""

from __future__ import annotations

import os
import signal
import sys

KILL_ENV = "CANASTA_TEST_KILL_AT"

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
