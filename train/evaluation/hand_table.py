"""The per-hand table of a tournament (``hands.csv``): its columns and its labelled form, shared by
the tournament loop (``train.evaluation.tournament``) and its report
(``train.evaluation.tournament_report``)."""

from __future__ import annotations

from typing import Any

import numpy.typing as npt

SIDE_COLUMNS = ("entrant", "score", "pile_takes", "natural_canastas", "mixed_canastas", "wild_canastas",
                "sevens_canastas", "red_threes", "opened")


LUCK_COLUMNS = ("luck", "luck_win")  # a side's luck in points and in the win indicator (canasta_env.luck)


def hand_columns(sides: int, luck: bool = False) -> list[str]:
    """The columns of ``hands.csv`` for a game of ``sides`` sides (with ``luck``, each side's luck
    corrections too)."""
    cols = ["match", "deal", "seating", "deal_ref", "seats"]
    cols += [f"side{q}_{c}" for q in range(sides) for c in SIDE_COLUMNS + (LUCK_COLUMNS if luck else ())]
    return cols + ["went_out_seat", "went_out_side", "decisions", "truncated"]


def labelled(cols: dict[str, npt.NDArray[Any]], labels: list[str]) -> dict[str, Any]:
    """Per-hand columns with agents named by ``labels`` (seats joined by ``|``): the form of
    ``hands.csv`` and of ``TournamentResult.to_pandas``; ``_parse`` reads it back."""
    out: dict[str, Any] = {}
    for c, v in cols.items():
        if c == "seats":
            out[c] = ["|".join(labels[int(a)] for a in row) for row in v]
        elif c.endswith("_entrant"):
            out[c] = [labels[int(a)] for a in v]
        else:
            out[c] = v
    return out
