"""A real tiny checkpoint for the modules that damage checkpoints (``tests.tiny_checkpoint``): built
once per module, copied afresh for each test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real checkpoint of a tiny classic_2p policy (net_arch [8, 8]) whose Adam optimizer took a step."""
    from tests.tiny_checkpoint import save_tiny_checkpoint

    return save_tiny_checkpoint(tmp_path_factory.mktemp("orig") / "run", "classic_2p")


@pytest.fixture
def saved(original: Path, tmp_path: Path) -> Path:
    """A fresh copy of the checkpoint, free to damage."""
    return Path(shutil.copytree(original, tmp_path / "run" / original.name))
