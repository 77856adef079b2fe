"""The vectorized Canasta rules engine (numpy state, numba kernels).

Importing this package points numba's on-disk cache at a directory keyed by a hash of the engine's
source files, because numba's cache does not notice edits in modules a kernel calls into.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def _engine_cache_dir() -> str:
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    root = os.environ.get("CANASTA_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "canasta-rl")
    return os.path.join(root, "numba", digest.hexdigest()[:16])


if "NUMBA_CACHE_DIR" not in os.environ:
    os.environ["NUMBA_CACHE_DIR"] = _engine_cache_dir()
    import numba.core.config as _numba_config

    _numba_config.CACHE_DIR = os.environ["NUMBA_CACHE_DIR"]  # type: ignore[attr-defined]

from canasta_env.engine.actions import ACTION_NAMES, NUM_ACTIONS, action_index, action_name  # noqa: E402
from canasta_env.engine.core import (  # noqa: E402
    CorruptStateError,
    DealId,
    ExplicitDeal,
    IllegalActionError,
    State,
    StepResult,
    clone,
    explicit_deal,
    init,
    init_from_deals,
    observe,
    raise_illegal,
    redeal,
    reset_rows,
    step,
    step_one,
)

__all__ = [
    "ACTION_NAMES", "NUM_ACTIONS", "CorruptStateError", "DealId", "ExplicitDeal",
    "IllegalActionError", "State", "StepResult", "action_index", "action_name", "clone",
    "explicit_deal", "init", "init_from_deals", "observe", "raise_illegal", "redeal", "reset_rows",
    "step", "step_one",
]
