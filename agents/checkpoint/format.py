"""The checkpoint format: file names, size limits, the error and the in-memory checkpoint.

A checkpoint is a directory ``<run_dir>/<name>`` (``checkpoint_name(steps)`` gives
``ckpt_000012345``) holding:

* ``policy.safetensors`` - the policy's ``state_dict()`` (safetensors: tensors only);
* ``optimizer.pt`` - the optimizer's ``state_dict()``, read back with ``torch.load(weights_only=True)``
  (optional: ``optimizer_state=None`` writes no file);
* ``state.json`` - counters, RNG states (``rng_state()``), opponent pool: whatever the trainer passes;
* ``meta.json`` - train config, ``RuleSet``, layout hashes (``current_layout()``), package versions,
  the policy's class and constructor arguments (``build_meta()``), plus ``format`` and ``files``
  (size and sha256 of each other file), which ``save_checkpoint`` adds.

Every other module of the package builds on these names, so this one imports none of them; the
JSON helpers that writer and reader share live here too.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from canasta_env.records import unique_keys

FORMAT = "canasta-checkpoint/1"
POLICY_FILE = "policy.safetensors"
OPTIMIZER_FILE = "optimizer.pt"
STATE_FILE = "state.json"
META_FILE = "meta.json"
LATEST = "latest"
FILES = (POLICY_FILE, OPTIMIZER_FILE, STATE_FILE, META_FILE)
LISTED = (POLICY_FILE, OPTIMIZER_FILE, STATE_FILE)  # what meta.json's "files" may list
TMP_PREFIX = ".tmp-"
COUNTERS = ("num_timesteps", "n_updates", "episodes")

# Limits checked before anything is allocated from what a checkpoint claims.
MAX_JSON_BYTES = 16 << 20  # meta.json and state.json
MAX_FILE_BYTES = 1 << 33  # policy.safetensors, optimizer.pt (an 8 x 4096 network is ~1 GB)
MAX_COUNTER = 10**11  # num_timesteps, n_updates, episodes in state.json
MAX_POOL = 10_000  # opponent_pool entries in state.json
MAX_LAYERS = 8  # hidden layers per network (pi, vf)
MAX_UNITS = 4096  # units per hidden layer
MAX_SPACE_SIZE = 10**6  # any dimension of a stored space, and Discrete n


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


def _one_line(exc: BaseException, limit: int = 200) -> str:
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _json_default(value: Any) -> Any:
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(f"{type(value).__name__} is not JSON-able")


def _json_round_trip(value: Any) -> Any:
    return json.loads(json.dumps(value, default=_json_default))


def _json_loads(data: str | bytes | bytearray) -> Any:
    try:
        return json.loads(data, object_pairs_hook=unique_keys)  # a key given twice is refused
    except RecursionError:
        raise ValueError("nested too deeply") from None
