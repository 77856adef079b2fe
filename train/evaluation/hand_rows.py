"""Reading a tournament's hand log (``hands.csv``) back on resume: every value is checked against the
tournament it belongs to (its matches, deals, seatings, entrants and deal references) and against
sane bounds, so a damaged or edited row is refused in one line naming the file, line, column and
value, never a traceback or results quietly computed from it."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import numpy.typing as npt

from canasta_env.messages import short_repr
from train.evaluation.hand_log import DAMAGED
from train.evaluation.hand_table import SIDE_COLUMNS
from train.evaluation.tournament_plan import Plan, seat_table

VALUE_LIMIT = 10**9  # far beyond any hand's score or count; sums over 10^8 hands stay in int64
_INT = re.compile(r"-?[0-9]{1,12}", re.ASCII)


class _Rows:
    """The rows of a hand log with their line numbers, for messages naming a bad value."""

    def __init__(self, path: Path, lines: list[int], rows: list[list[str]], columns: list[str]) -> None:
        self.path, self.lines, self.rows = path, lines, rows
        self.at = {c: j for j, c in enumerate(columns)}

    def fail(self, n: int, column: str, want: str) -> NoReturn:
        value = self.rows[n][self.at[column]]
        raise ValueError(f"{self.path}:{self.lines[n]}: column {column} = {short_repr(value)}: {want}; "
                         f"{DAMAGED}")

    def ints(self, column: str, lo: int, hi: int) -> npt.NDArray[np.int64]:
        j, out = self.at[column], np.empty(len(self.rows), dtype=np.int64)
        for n, row in enumerate(self.rows):
            if not _INT.fullmatch(row[j]) or not lo <= int(row[j]) <= hi:
                self.fail(n, column, f"want a whole number in [{lo}, {hi}]")
            out[n] = int(row[j])
        return out

    def floats(self, column: str) -> npt.NDArray[np.float64]:
        j, out = self.at[column], np.empty(len(self.rows), dtype=np.float64)
        for n, row in enumerate(self.rows):
            try:
                x = float(row[j])
            except ValueError:
                x = float("nan")
            if not -VALUE_LIMIT <= x <= VALUE_LIMIT:  # NaN fails both
                self.fail(n, column, f"want a finite number in [{-VALUE_LIMIT}, {VALUE_LIMIT}]")
            out[n] = x
        return out

    def expect(self, column: str, wanted: Callable[[int], str], why: Callable[[int], str]) -> None:
        """Every row's ``column`` is ``wanted(n)``, else a refusal saying ``why(n)``."""
        j = self.at[column]
        for n, row in enumerate(self.rows):
            if row[j] != wanted(n):
                self.fail(n, column, f"want {short_repr(wanted(n))} ({why(n)})")


def _bounds(plan: Plan, players: int) -> dict[str, tuple[int, int]]:
    """Inclusive bounds of each integer column of the log."""
    bounds = {"match": (0, len(plan.matches) - 1), "deal": (0, plan.deals - 1),
              "seating": (0, len(plan.seatings) - 1), "went_out_seat": (-1, players - 1),
              "went_out_side": (-1, plan.sides - 1), "decisions": (0, VALUE_LIMIT), "truncated": (0, 1)}
    for q in range(plan.sides):
        for c in SIDE_COLUMNS:
            if c != "entrant":
                lo = -VALUE_LIMIT if c == "score" else 0
                bounds[f"side{q}_{c}"] = (lo, 1 if c == "opened" else VALUE_LIMIT)
    return bounds


def parse_rows(path: Path, lines: list[int], rows: list[list[str]], *, columns: list[str], plan: Plan,
               labels: list[str], players: int, refs: Callable[[Any], list[str]]
               ) -> dict[str, npt.NDArray[Any]]:
    """The log's rows (of ``columns``, read from ``lines`` of ``path``) as per-hand columns with agents
    as indices into ``labels``; a value out of bounds or not the tournament's (an entrant or seats
    other than the match and seating put there, a seating the design does not play, a deal reference
    not the deal's) is a ``ValueError`` naming ``path:line``, the column and the value."""
    log = _Rows(path, lines, rows, columns)
    cols: dict[str, npt.NDArray[Any]] = {}
    for c, (lo, hi) in _bounds(plan, players).items():
        cols[c] = log.ints(c, lo, hi)
    for c in columns:
        if "_luck" in c:
            cols[c] = log.floats(c)
    match, deal, seating = cols["match"], cols["deal"], cols["seating"]
    if plan.games_per_deal == 1:
        k = len(plan.seatings)
        log.expect("seating", lambda n: str(deal[n] % k), lambda n: f"without --duplicate deal d is played "
                   f"in seating d mod {k}")
    seats = np.empty((len(rows), players), dtype=np.int64)
    for m in np.unique(match):
        seats[match == m] = seat_table(plan, plan.matches[m], seating[match == m], players)

    def where(n: int) -> str:
        return f"what match {match[n]} puts there in seating {seating[n]}"

    for q in range(plan.sides):
        log.expect(f"side{q}_entrant", lambda n, q=q: labels[seats[n, q]], where)  # type: ignore[misc]
        cols[f"side{q}_entrant"] = seats[:, q].copy()
    log.expect("seats", lambda n: "|".join(labels[a] for a in seats[n]), where)
    cols["seats"] = seats
    gone = cols["went_out_seat"]
    side = np.where(gone >= 0, gone % plan.sides, -1)
    log.expect("went_out_side", lambda n: str(side[n]), lambda n: f"the side of went_out_seat {gone[n]}")
    wanted_refs = refs(deal)
    log.expect("deal_ref", lambda n: wanted_refs[n], lambda n: f"the reference of deal {deal[n]}")
    return {c: cols[c] for c in columns if c != "deal_ref"}
