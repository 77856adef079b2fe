"""The notebooks in ``notebooks/`` run top to bottom, and the repository keeps them without outputs.

Each notebook runs in a fresh Jupyter kernel with ``CANASTA_NB_SIZE=small`` (smaller budgets, the
same cells; each ends by checking that its figures were produced), so a failing cell fails the
test. They run in name order and share one runs folder, as they would in a checkout:
``03_strategy`` reuses the policy ``02_training`` trained.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SKIP_DIRS = {".venv", "venv", "runs", "build", "dist", "node_modules", "__pycache__"}


def _all_notebooks() -> list[Path]:
    """Every notebook in the repository, outside hidden, virtualenv and output folders."""
    found = []
    for here, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS
                   and not d.endswith(".egg-info")]
        found += [Path(here) / f for f in files if f.endswith(".ipynb")]
    return sorted(found)


def test_there_are_notebooks() -> None:
    names = {p.name for p in NOTEBOOKS}
    assert {"01_getting_started.ipynb", "02_training.ipynb", "03_strategy.ipynb"} <= names


@pytest.mark.parametrize("path", _all_notebooks(), ids=lambda p: str(p.relative_to(ROOT)))
def test_notebook_is_stripped(path: Path) -> None:
    nb = json.loads(path.read_text())
    dirty = [i for i, cell in enumerate(nb["cells"]) if cell["cell_type"] == "code"
             and (cell.get("outputs") or cell.get("execution_count") is not None)]
    assert not dirty, (f"{path.name}: cells {dirty} have outputs or execution counts; run "
                       f"`python scripts/strip_notebooks.py {path.relative_to(ROOT)}`")


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("notebook_runs")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path: Path, runs_dir: Path, tmp_path: Path,
                       monkeypatch: pytest.MonkeyPatch) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    # read by the kernel, which inherits this environment
    monkeypatch.setenv("CANASTA_NB_SIZE", "small")
    monkeypatch.setenv("CANASTA_NB_FIGDIR", str(tmp_path / "figures"))
    monkeypatch.setenv("CANASTA_NB_RUNS", str(runs_dir))
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    started = time.perf_counter()
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as exc:
        pytest.fail(f"{path.name}: a cell failed:\n{exc}", pytrace=False)
    elapsed = time.perf_counter() - started
    figures = sorted(p.name for p in (tmp_path / "figures").glob("*.png"))
    assert figures, f"{path.name} saved no figure"
    print(f"{path.name}: {elapsed:.1f} s, figures {figures}")
