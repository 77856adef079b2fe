"""The vectorized Canasta rules engine (numpy state, numba kernels).

Importing this package points numba's on-disk cache at a directory keyed by a hash of the engine's
source files, because numba's cache does not notice edits in modules a kernel calls into. Inside it,
the project's kernels are filed by module name rather than numba's hash of the folder's absolute path,
so every clone and every installed copy of the same sources shares one compiled cache (numba checks
each file's content hash before it loads an entry; here also the hash of the other ``.py`` files in
its folder, since a kernel may inline functions from a sibling module).
"""

from __future__ import annotations

import functools
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


@functools.cache
def _folder_digest(folder: str) -> str:
    """sha256 of the ``.py`` files of ``folder`` (names and contents), once per process."""
    digest = hashlib.sha256()
    for path in sorted(Path(folder).glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _install_path_free_locator() -> None:
    """File cache entries of this project's modules under ``<package>.<module folder>`` in the cache
    directory. Uses numba's locator list (a private attribute); without it the cache stays per path."""
    try:
        from numba.core import caching
    except ImportError:
        return
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    base = getattr(caching, "UserProvidedCacheLocator", None)
    if impl is None or base is None or not isinstance(getattr(impl, "_locator_classes", None), list):
        return
    root = Path(__file__).resolve().parents[2]
    packages = ("canasta_env", "agents", "train")

    class ProjectCacheLocator(base):  # type: ignore[misc, valid-type]
        @classmethod
        def get_suitable_cache_subpath(cls, py_file: str) -> str:
            return ".".join(Path(py_file).resolve().parent.relative_to(root).parts)

        def get_source_stamp(self) -> object:
            """The file's own stamp and its folder's sources: a kernel may inline functions from a
            sibling module (the heuristic's choices), whose edits must make the entry stale too."""
            return super().get_source_stamp(), _folder_digest(str(Path(self._py_file).parent))

        @classmethod
        def from_function(cls, py_func: object, py_file: str) -> object:
            path = Path(py_file).resolve()
            if not any(path.is_relative_to(root / name) for name in packages):
                return None
            return super().from_function(py_func, py_file)

    if not any(c.__name__ == ProjectCacheLocator.__name__ for c in impl._locator_classes):
        impl._locator_classes.insert(0, ProjectCacheLocator)


if "NUMBA_CACHE_DIR" not in os.environ:
    os.environ["NUMBA_CACHE_DIR"] = _engine_cache_dir()
    import numba.core.config as _numba_config

    _numba_config.CACHE_DIR = os.environ["NUMBA_CACHE_DIR"]  # type: ignore[attr-defined]
_install_path_free_locator()

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
