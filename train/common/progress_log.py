"""``progress.csv`` that survives resumes: rows are appended, never truncated.

SB3's ``CSVOutputFormat`` opens its file with ``"w+"``, so every resume would start an empty file.
This writer keeps one file per run: a resumed run appends below the earlier rows, and a key that
appears for the first time widens the header (the file is rewritten atomically with the new column).
A torn last line left by a kill is dropped when the file is opened.
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path
from typing import Any

from stable_baselines3.common.logger import KVWriter, filter_excluded_keys

from train.common.outputs import write_atomic


class AppendingCSV(KVWriter):
    """An SB3 logger output writing ``path`` in append mode (see the module docstring)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        header, rows = self._read()
        self.keys: list[str] = header
        if self.path.exists():
            self._rewrite(rows)  # drops a torn last line

    def _read(self) -> tuple[list[str], list[list[str]]]:
        if not self.path.exists():
            return [], []
        text = self.path.read_text(encoding="utf-8", errors="replace")
        lines = text.splitlines(keepends=True)
        if lines and not lines[-1].endswith("\n"):
            lines = lines[:-1]
        table = list(csv.reader(io.StringIO("".join(lines))))
        return (table[0], table[1:]) if table else ([], [])

    def _rewrite(self, rows: list[list[str]]) -> None:
        text = io.StringIO(newline="")
        writer = csv.writer(text)
        if self.keys:
            writer.writerow(self.keys)
        writer.writerows(row + [""] * (len(self.keys) - len(row)) for row in rows)
        write_atomic(self.path, text.getvalue().encode("utf-8"))

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, tuple[str, ...]],
              step: int = 0) -> None:
        values = filter_excluded_keys(key_values, key_excluded, "csv")
        new = [k for k in values if k not in self.keys]
        if new:
            _, rows = self._read()
            self.keys.extend(new)
            self._rewrite(rows)
        with self.path.open("a", newline="", encoding="utf-8") as f:
            csv.writer(f).writerow(["" if values.get(k) is None else values[k] for k in self.keys])

    def close(self) -> None:
        """Nothing stays open between writes."""
