"""Fixtures shared across the test packages."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

# Modules holding the longest tests (``--durations`` under ``make test``), slowest first: xdist hands
# tests out in collection order as workers free up, so a long test collected last leaves one worker
# running it while the other idles. Moved whole, each module's own order kept (the notebooks run in
# name order); the xdist groups (``ray``, ``engine-threads``) go out first anyway, largest first.
SLOW_FIRST = (
    "train/test_learning.py",
    "test_notebooks.py",
    "test_packaging.py",
    "train/test_train.py",
    "train/test_exploit.py",
    "train/test_lean_ppo.py",
    "train/test_run_dir.py",
    "train/test_tournament.py",
    "engine/test_invariants.py",
    "test_table_sizes.py",
    "test_hardening_engine.py",
    "train/test_imitation.py",
    "train/test_play.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).resolve().parent
    rank = {here / name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.resolve(), len(SLOW_FIRST)))  # stable


@pytest.fixture
def one_torch_thread() -> Iterator[None]:
    """torch on one thread for the test (measured here: two threads make small-network PPO about
    40 times slower), restored afterwards."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True, scope="session")
def sb3_logs_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """SB3 models trained without a logger write ``SB3-<date>`` folders into ``SB3_LOGDIR`` (the
    system temp dir when unset): point it at pytest's temporary folder, for subprocesses too."""
    import os

    before = os.environ.get("SB3_LOGDIR")
    os.environ["SB3_LOGDIR"] = str(tmp_path_factory.mktemp("sb3_logs"))
    yield
    if before is None:
        os.environ.pop("SB3_LOGDIR", None)
    else:
        os.environ["SB3_LOGDIR"] = before


@pytest.fixture
def pettingzoo_test_warnings() -> Iterator[None]:
    """Silence what PettingZoo's ``api_test`` warns about by design: it passes ``options={"options":
    1}`` (ignored with a warning, docs/engine.md) and notes that a Dict observation (the documented
    observation and action mask) is unusual; neither is a failure."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="canasta_v0 reset options other than")
        warnings.filterwarnings("ignore", message="Observation space for each agent probably")
        warnings.filterwarnings("ignore", message="Observation is not a NumPy array")
        warnings.filterwarnings("ignore", message=r"\[WARNING\]: Illegal move made")
        yield
