"""A tournament's output folder: its settings (``TournamentConfig``, checked on resume) and the
append-only hand log of finished units, reloaded on resume."""

from __future__ import annotations

import csv
import json
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy.typing as npt

from canasta_env.messages import short_repr
from canasta_env.rules import with_later_options
from train.common.outputs import replace_file
from train.evaluation.hand_table import hand_columns, labelled

FORMAT = "canasta-tournament"
MAX_CONFIG_BYTES = 64 << 20  # tournament.json: its rules, entrants and specs are a few kB
DAMAGED = "the hand log is damaged: restore it, or delete hands.csv to replay every hand"


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
            with cfg_path.open("rb") as f:
                raw = f.read(MAX_CONFIG_BYTES + 1)
            if len(raw) > MAX_CONFIG_BYTES:
                raise ValueError(f"{cfg_path}: larger than {MAX_CONFIG_BYTES} bytes, so not a tournament's "
                                 "settings; use a new --out folder")
            try:
                found = json.loads(raw.decode("utf-8"))
            except (ValueError, RecursionError) as e:  # bad JSON or UTF-8, nesting too deep
                raise ValueError(f"{cfg_path}: not valid JSON ({short_repr(str(e), 120)}); use a new "
                                 "--out folder") from None
            if not isinstance(found, dict):
                raise ValueError(f"{cfg_path}: not a tournament's settings (a JSON {type(found).__name__}, "
                                 "not an object); use a new --out folder")
            defaults = asdict(TournamentConfig({}, [], [], 0))  # a key added since: its default
            if "rules" in found:  # settings older than an option
                found["rules"] = with_later_options(found["rules"], wanted["rules"])
            diff = {k: (found.get(k), v) for k, v in wanted.items() if found.get(k, defaults.get(k)) != v}
            if diff:
                detail = "; ".join(f"{k}: was {a!r}, now {b!r}" for k, (a, b) in diff.items())
                raise ValueError(f"{out} holds a different tournament ({detail}); use a new --out folder")
        else:
            cfg_path.write_text(json.dumps(wanted, indent=2))

    def load(self, most: int | None = None) -> tuple[list[int], list[list[str]]]:
        """The log's rows and their line numbers (a torn last line from an interruption is dropped,
        blank lines skipped), read a line at a time: a header that is not the log's, a row that does
        not fill its columns, a line that is not CSV, not UTF-8 or longer than a row of this
        tournament can be is a ``ValueError`` naming ``hands.csv:LINE``. With ``most`` (the
        tournament's number of hands) reading stops after ``most + 1`` rows: a log that long is
        damaged, and the caller refuses it at its rows, so a huge file is never held whole."""
        if not self.path.exists():
            return [], []
        numbers: list[int] = []
        rows: list[list[str]] = []
        with self.path.open("rb") as f:
            reader = csv.reader(_text_lines(self.path, f, self._longest_line()))
            try:
                header = next(reader, None)
                if header is not None and header != self.columns:
                    raise ValueError(f"{self.path}:1: columns {short_repr(header, 200)} are not a tournament "
                                     "hand log")
                for row in reader:
                    if not row:
                        continue
                    if len(row) != len(self.columns):
                        raise ValueError(f"{self.path}:{reader.line_num}: {len(row)} fields, want "
                                         f"{len(self.columns)} (the columns of its header); {DAMAGED}")
                    numbers.append(reader.line_num)
                    rows.append(row)
                    if most is not None and len(rows) > most:
                        break
            except csv.Error as e:  # a lone carriage return, a field past csv's field size limit
                why = str(e).split(" - ")[0][:120]  # without its advice to open the file otherwise
                raise ValueError(f"{self.path}:{reader.line_num}: not a CSV row ({why}); {DAMAGED}") from None
        return numbers, rows

    def _longest_line(self) -> int:
        """The most bytes a line of this log can hold: its numbers, and agent labels (in ``seats``
        and each side's entrant, at most one label a column) quoted by csv, each quote doubled."""
        label = max((len(x.encode("utf-8")) for x in self.labels), default=0)
        return (1 << 16) + len(self.columns) * (2 * label + 3)

    def rewrite(self, rows: list[list[str]]) -> None:
        """Keep only ``rows`` (complete units) before appending more; written a row at a time, not
        built in memory first (a long tournament's log is gigabytes)."""
        def write(tmp: Path) -> None:
            with tmp.open("w", newline="", encoding="utf-8") as f:
                writer = csv.writer(f)
                writer.writerow(self.columns)
                writer.writerows(rows)

        replace_file(self.path, write)

    def keep_records(self, games: dict[tuple[int, int], int]) -> tuple[set[tuple[int, int]], list[int]]:
        """Cut the game records back to those of the finished units ``games`` (unit -> its number
        of games); return the units among them whose records are not all there once (lost in a crash,
        cut or repeated in the file: their hands are to be replayed, records and all) and the numbers
        of the lines dropped that are not game records of this tournament (damaged or edited).
        Records of units that did not finish (written before an interruption), blank lines and a
        torn last line are dropped too. The file is read twice, a line at a time (a million hands'
        records are gigabytes), and a line longer than a record can be is not one."""
        if not self.records_path.exists() and not games:
            return set(), []
        units: list[tuple[int, int] | None] = []
        damaged: list[int] = []
        for n, line in enumerate(_lines(self.records_path), start=1):
            units.append(_record_unit(line) if line is not None else None)
            if units[-1] is None and (line is None or line.strip()):
                damaged.append(n)
        found = Counter(units)
        short = {u for u, count in games.items() if found[u] != count}

        def write(tmp: Path) -> None:
            with tmp.open("wb") as out:
                for line, u in zip(_lines(self.records_path), units, strict=True):
                    if line is not None and u in games and u not in short:
                        out.write(line)

        replace_file(self.records_path, write)
        return short, damaged

    def append_records(self, records: list[Any]) -> None:
        from canasta_env.records import write_records

        write_records(self.records_path, records)

    def append(self, cols: dict[str, npt.NDArray[Any]], refs: list[str]) -> None:
        """Append one finished unit and force it to disk (after its game records: a unit counts
        as done once its hands are in the log)."""
        new = not self.path.exists()
        with self.path.open("a", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            if new:
                writer.writerow(self.columns)
            named = labelled({**cols, "deal_ref": refs}, self.labels)
            writer.writerows(zip(*(named[c] for c in self.columns), strict=True))
            f.flush()
            os.fsync(f.fileno())


def _text_lines(path: Path, f: BinaryIO, longest: int) -> Iterator[str]:
    """The lines of the open file ``f`` (``path``) as text with their newline, one at a time; a torn
    last line (no newline: an interrupted write, maybe inside a character) left out. A line over
    ``longest`` bytes, or not UTF-8, is a ``ValueError`` naming the line: a file of junk without a
    newline is never read whole."""
    for n, line in enumerate(iter(lambda: f.readline(longest + 1), b""), start=1):
        torn = not line.endswith(b"\n")
        if torn and len(line) > longest:
            raise ValueError(f"{path}:{n}: a line longer than {longest} bytes, more than a row of this "
                             f"tournament holds; {DAMAGED}")
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as e:
            if torn and e.end == len(line) and e.reason == "unexpected end of data":
                return
            raise ValueError(f"{path}: not UTF-8 text (line {n}), so not a tournament hand log") from None
        if torn:
            return
        yield text


def _lines(path: Path) -> Iterator[bytes | None]:
    """The lines of ``path`` with their newline, one at a time; None for a line longer than a record
    can be (``MAX_LINE_BYTES``: a file of junk without a newline is never read whole), and a torn last
    line (no newline: an interrupted write) left out. Nothing for a missing file."""
    from canasta_env.records import MAX_LINE_BYTES

    if not path.exists():
        return
    with path.open("rb") as f:
        while line := f.readline(MAX_LINE_BYTES + 1):
            if len(line) > MAX_LINE_BYTES:
                while line and not line.endswith(b"\n"):
                    line = f.readline(MAX_LINE_BYTES)
                if line:
                    yield None
            elif line.endswith(b"\n"):
                yield line


def _record_unit(line: bytes) -> tuple[int, int] | None:
    """The unit (match, unit index) a line of ``records.jsonl`` is a game record of; None for a line
    that is not a game record of a tournament (blank, damaged or edited)."""
    try:
        meta = json.loads(line).get("meta")
        unit = meta["tournament_match"], meta["tournament_unit"]
    except (ValueError, RecursionError, AttributeError, TypeError, KeyError):
        return None  # not JSON or UTF-8, nesting too deep, no meta or not an object
    return unit if all(type(x) is int for x in unit) else None
