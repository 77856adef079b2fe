"""Reading a command's YAML config file (``--config``) into a plain mapping, safely."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def read_mapping(path: str | Path, what: str) -> dict[str, Any]:
    """The mapping of ``what`` (e.g. "training options") in the YAML file ``path``: no aliases,
    shallow, size-capped, no duplicate keys (``canasta_env.safe_yaml``); any problem is a
    ``ValueError`` naming the file. A file of only comments is an empty mapping."""
    from canasta_env.safe_yaml import load_yaml_mapping

    return load_yaml_mapping(path, what, allow_empty=True)
