"""Strip outputs and execution counts from notebooks, in place (the repository keeps them clean).

    python scripts/strip_notebooks.py                 # every notebooks/*.ipynb
    python scripts/strip_notebooks.py a.ipynb b.ipynb
    python scripts/strip_notebooks.py --check         # list unclean notebooks, exit 1 if any
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent


def is_clean(nb: nbformat.NotebookNode) -> bool:
    """No cell outputs and no execution counts."""
    return all(not cell.get("outputs") and cell.get("execution_count") is None
               for cell in nb.cells if cell.cell_type == "code")


def strip(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
            for key in ("execution", "collapsed", "scrolled"):
                cell.metadata.pop(key, None)
    nb.metadata.pop("widgets", None)
    return nb


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--check", action="store_true", help="only report; exit 1 if any is unclean")
    args = parser.parse_args(argv)
    paths = args.paths or sorted((ROOT / "notebooks").glob("*.ipynb"))
    unclean = 0
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        if is_clean(nb):
            continue
        unclean += 1
        if args.check:
            print(f"{path}: has outputs or execution counts")
        else:
            nbformat.write(strip(nb), path)
            print(f"{path}: stripped")
    return 1 if args.check and unclean else 0


if __name__ == "__main__":
    sys.exit(main())
