"""Training checkpoints: a directory of plain data, written atomically and verified on load.

SB3's ``save()``/``load()`` are never used: their data file is cloudpickle, which runs code on load.
A checkpoint is a directory of a safetensors policy, an optional weights-only optimizer state and two
JSON files; the package is split by job, lower modules first (none imports this ``__init__``):

* ``format`` - file names, ``FORMAT``, size limits, ``CheckpointError``, ``Checkpoint``,
  ``checkpoint_name``, ``current_layout`` (what each file holds is described there);
* ``kill_hook`` - ``kill_point``, the test hook that kills a process mid-write (``KILL_ENV``);
* ``rng`` - ``rng_state`` / ``restore_rng_state``;
* ``policy_spec`` - checks of the stored policy description: allow-listed classes and constructor
  arguments, network limits, the weights' shapes (``weights_fit``);
* ``policy`` - ``describe_policy`` for meta.json and ``policy_from_checkpoint`` to rebuild one;
* ``find`` - complete checkpoints of a run directory and its latest one;
* ``write`` - ``save_checkpoint`` (atomic), ``build_meta``, ``remove_partial_checkpoints``;
* ``tensors`` - the weights and optimizer files parsed where they were read (their size in memory
  once);
* ``read`` - ``load_checkpoint`` (every file verified) and ``validate_state``.

Every name is importable from here: ``from agents.checkpoint import load_checkpoint``.
"""

from __future__ import annotations

from agents.checkpoint.find import (
    CHECKPOINT_NAME,
    incomplete_after,
    is_complete,
    latest_checkpoint,
    latest_name,
    list_checkpoints,
)
from agents.checkpoint.format import (
    COUNTERS,
    FILES,
    FORMAT,
    LATEST,
    LISTED,
    MAX_COUNTER,
    MAX_FILE_BYTES,
    MAX_JSON_BYTES,
    MAX_LAYERS,
    MAX_POOL,
    MAX_SPACE_SIZE,
    MAX_UNITS,
    META_FILE,
    OPTIMIZER_FILE,
    POLICY_FILE,
    STATE_FILE,
    TMP_PREFIX,
    Checkpoint,
    CheckpointError,
    checkpoint_name,
    current_layout,
)
from agents.checkpoint.kill_hook import KILL_ENV, kill_point
from agents.checkpoint.policy import describe_policy, describe_space, policy_from_checkpoint
from agents.checkpoint.policy_spec import POLICY_KWARGS, allowed_classes, weights_fit
from agents.checkpoint.read import load_checkpoint, validate_state
from agents.checkpoint.rng import restore_rng_state, rng_state
from agents.checkpoint.write import (
    VERSIONED,
    build_meta,
    package_versions,
    remove_partial_checkpoints,
    save_checkpoint,
)

__all__ = [
    "CHECKPOINT_NAME", "COUNTERS", "FILES", "FORMAT", "KILL_ENV", "LATEST", "LISTED", "MAX_COUNTER",
    "MAX_FILE_BYTES", "MAX_JSON_BYTES", "MAX_LAYERS", "MAX_POOL", "MAX_SPACE_SIZE", "MAX_UNITS",
    "META_FILE", "OPTIMIZER_FILE", "POLICY_FILE", "POLICY_KWARGS", "STATE_FILE", "TMP_PREFIX", "VERSIONED",
    "Checkpoint", "CheckpointError", "allowed_classes", "build_meta", "checkpoint_name", "current_layout",
    "describe_policy", "describe_space", "incomplete_after", "is_complete", "kill_point",
    "latest_checkpoint", "latest_name", "list_checkpoints", "load_checkpoint", "package_versions",
    "policy_from_checkpoint", "remove_partial_checkpoints", "restore_rng_state", "rng_state",
    "save_checkpoint", "validate_state", "weights_fit",
]
