"""A tournament's output folder: its settings (``TournamentConfig``, checked on resume) and the
append-only hand log of finished units, reloaded on resume."""

from __future__ import annotations

import csv
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from canasta_env.messages import short_repr
from train.evaluation.hand_table import hand_columns, labelled

FORMAT = "canasta-tournament"


# What a tournament writes in its --out folder besides tournament.json (train.evaluation.tournament_report)
OUTPUT_NAMES = ("hands.csv", "records.jsonl", "results.json", "ratings.csv", "head_to_head.csv",
                "outcomes.csv", "openskill.csv", "ratings.png", "head_to_head.png")


@dataclass
class TournamentConfig:
    """Everything that determines a tournament's results (checked on resume)."""

    rules: dict[str, Any]  # the full option set (RuleSet.to_dict)
    entrants: list[str]  # labels, unique
    specs: list[str]  # what each entrant was built from (agent name or checkpoint path)
    hands: int
    duplicate: bool = False
    vs: str | None = None
    partners: str | None = None
    seed: int = 0
    deal_set: str | None = None  # deal set name and content hash
    resamples: int = 2000
    target_margin: float | None = None
    records: bool = False  # game records beside the hand log (a resume must keep writing them)
    luck_correction: bool = False  # each side's luck corrections in the hand log (canasta_env.luck)


class HandLog:
    """Append-only CSV of finished units in an output folder; reloaded on resume."""

    def __init__(self, out: Path, config: TournamentConfig, sides: int, labels: list[str]) -> None:
        self.path = out / "hands.csv"
        self.records_path = out / "records.jsonl"
        self.columns = hand_columns(sides, config.luck_correction)
        self.labels = labels  # of the agents, entrants first
        out.mkdir(parents=True, exist_ok=True)
        cfg_path = out / "tournament.json"
        wanted = json.loads(json.dumps({"format": FORMAT, **asdict(config)}))
        if not cfg_path.exists():  # not a tournament's folder: its files of these names are not ours
            taken = [name for name in OUTPUT_NAMES if (out / name).exists()]
            if taken:
                raise ValueError(f"{out} holds {', '.join(taken)} but no tournament.json, so they are "
                                 "not a tournament's to resume or replace; use a new --out folder")
        if cfg_path.exists():
            try:
                found = json.loads(cfg_path.read_text(encoding="utf-8"))
            except (ValueError, RecursionError) as e:  # bad JSON or UTF-8, nesting too deep
                raise ValueError(f"{cfg_path}: not valid JSON ({short_repr(str(e), 120)}); use a new "
                                 "--out folder") from None
            if not isinstance(found, dict):
                raise ValueError(f"{cfg_path}: not a tournament's settings (a JSON {type(found).__name__}, "
                                 "not an object); use a new --out folder")
            defaults = asdict(TournamentConfig({}, [], [], 0))  # a key added since: its default
            diff = {k: (found.get(k), v) for k, v in wanted.items() if found.get(k, defaults.get(k)) != v}
            if diff:
                detail = "; ".join(f"{k}: was {a!r}, now {b!r}" for k, (a, b) in diff.items())
                raise ValueError(f"{out} holds a different tournament ({detail}); use a new --out folder")
        else:
            cfg_path.write_text(json.dumps(wanted, indent=2))

    def load(self) -> list[dict[str, str]]:
        """Rows of the log (a torn last line from an interruption is dropped)."""
        if not self.path.exists():
            return []
        try:
            with self.path.open(newline="", encoding="utf-8") as f:
                text = f.read()
        except UnicodeDecodeError:
            raise ValueError(f"{self.path}: not UTF-8 text, so not a tournament hand log") from None
        lines = text.splitlines(keepends=True)
        if lines and not lines[-1].endswith("\n"):
            lines = lines[:-1]
        rows = list(csv.DictReader(lines))
        if rows and list(rows[0].keys()) != self.columns:
            raise ValueError(f"{self.path}: columns {list(rows[0].keys())} are not a tournament hand log")
        return [r for r in rows if None not in r.values()]

    def rewrite(self, rows: list[dict[str, str]]) -> None:
        """Keep only ``rows`` (complete units) before appending more."""
        tmp = self.path.with_suffix(".tmp")
        with tmp.open("w", newline="") as f:
            writer = csv.DictWriter(f, self.columns)
            writer.writeheader()
            writer.writerows(rows)
        os.replace(tmp, self.path)

    def keep_records(self, done: set[tuple[int, int]]) -> None:
        """Drop the game records of units not in ``done`` (written before an interruption)."""
        if not self.records_path.exists():
            return
        kept = []
        for line in self.records_path.read_text().splitlines(keepends=True):
            try:
                meta = json.loads(line).get("meta", {})
                ours = line.endswith("\n") and (meta.get("tournament_match"),
                                                  meta.get("tournament_unit")) in done
            except (ValueError, RecursionError, AttributeError, TypeError):
                continue  # a torn last line, or a line that is not a record of this tournament
            if ours:
                kept.append(line)
        tmp = self.records_path.with_suffix(".tmp")
        tmp.write_text("".join(kept))
        os.replace(tmp, self.records_path)

    def append_records(self, records: list[Any]) -> None:
        from canasta_env.records import write_records

        write_records(self.records_path, records)

    def append(self, cols: dict[str, npt.NDArray[Any]], refs: list[str]) -> None:
        """Append one finished unit and force it to disk (after its game records: a unit counts
        as done once its hands are in the log)."""
        new = not self.path.exists()
        with self.path.open("a", newline="") as f:
            writer = csv.writer(f)
            if new:
                writer.writerow(self.columns)
            named = labelled({**cols, "deal_ref": refs}, self.labels)
            writer.writerows(zip(*(named[c] for c in self.columns), strict=True))
            f.flush()
            os.fsync(f.fileno())


def parse_rows(rows: list[dict[str, str]], labels: list[str]) -> dict[str, npt.NDArray[Any]]:
    index = {name: i for i, name in enumerate(labels)}
    cols: dict[str, npt.NDArray[Any]] = {}
    for c in rows[0]:
        if c == "deal_ref":
            continue
        if c == "seats":
            cols[c] = np.array([[index[s] for s in r[c].split("|")] for r in rows], dtype=np.int64)
        elif c.endswith("_entrant"):
            cols[c] = np.array([index[r[c]] for r in rows], dtype=np.int64)
        elif "_luck" in c:
            cols[c] = np.array([float(r[c]) for r in rows], dtype=np.float64)
        else:
            cols[c] = np.array([int(r[c]) for r in rows], dtype=np.int64)
    return cols
