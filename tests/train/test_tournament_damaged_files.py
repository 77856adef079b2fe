"""Damaged or edited files of a tournament: a resumed hand log (``hands.csv``) is checked row by row
and refused in one line naming its line, column and value; damaged game records (``records.jsonl``)
are dropped with a notice and their hands replayed, so the records stay complete; a ``--ladder``
file is checked before any hand is played."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

import train.evaluation.tournament as tournament
from train.cli.main import main as cli_main

ARGS = ["tournament", "--agents", "random", "greedy", "--rules", "classic_2p", "--hands", "8", "--duplicate",
        "--no-plots", "--records"]


def _lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return [line for line in err.splitlines() if line.strip() and "hand/s" not in line]


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    lines = _lines(capsys)
    assert len(lines) == 1 and lines[0].startswith("canasta tournament: error: "), lines
    return lines[0]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished tournament: 4 deals x 2 seatings, one match, with game records."""
    out = tmp_path_factory.mktemp("tournament") / "out"
    assert cli_main([*ARGS, "--out", str(out)]) == 0
    return out


@pytest.fixture
def copy(finished: Path, tmp_path: Path) -> Path:
    out = tmp_path / "out"
    shutil.copytree(finished, out)
    return out


def _edit(out: Path, change: object) -> list[list[str]]:
    """Rewrite ``hands.csv`` (through the csv module) with ``change(rows)``, header first."""
    with (out / "hands.csv").open(newline="") as f:
        rows = list(csv.reader(f))
    rows = change(rows)  # type: ignore[operator]
    with (out / "hands.csv").open("w", newline="") as f:
        csv.writer(f).writerows(rows)
    return rows


def _set(column: str, value: str, line: int = 3):  # type: ignore[no-untyped-def]
    def change(rows: list[list[str]]) -> list[list[str]]:
        rows[line - 1][rows[0].index(column)] = value
        return rows
    return change


# ---- hands.csv ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("change, expected", [
    (_set("seats", "random|nobody"), "hands.csv:3: column seats = 'random|nobody': want 'greedy|random'"),
    (_set("side0_entrant", "zzz"), "hands.csv:3: column side0_entrant = 'zzz': want 'greedy'"),
    (_set("side0_entrant", "random"), "hands.csv:3: column side0_entrant = 'random': want 'greedy'"),
    (_set("side0_score", "99999999999999999999"), "hands.csv:3: column side0_score = '99999999999999999999': "
                                                   "want a whole number in"),
    (_set("side0_score", "abc"), "hands.csv:3: column side0_score = 'abc': want a whole number"),
    (_set("deal", "5"), "hands.csv:3: column deal = '5': want a whole number in [0, 3]"),
    (_set("seating", "7"), "hands.csv:3: column seating = '7': want a whole number in [0, 1]"),
    (_set("match", "3"), "hands.csv:3: column match = '3': want a whole number in [0, 0]"),
    (_set("went_out_side", "9"), "hands.csv:3: column went_out_side = '9'"),
    (_set("deal_ref", "DealId(9,9,9)"), "hands.csv:3: column deal_ref = 'DealId(9,9,9)'"),
    (lambda rows: [*rows[:3], rows[0], *rows[3:]], "hands.csv:4: column match = 'match'"),  # a header again
    (lambda rows: [*rows[:2], *rows[3:]], "hands.csv:3: match 0 deal 1 seating 0, where the hands of match 0 "
                                          "deals 0-3 want deal 0 seating 1 next"),  # a row lost
    (lambda rows: [*rows[:3], rows[2], *rows[3:]], "hands.csv:4: match 0 deal 0 seating 1"),  # repeated
    (lambda rows: [*rows, *rows[1:]], "hands.csv:10: the hands of match 0 deals 0-3 begin a second time"),
    (lambda rows: [*rows[:2], rows[2][:5], *rows[3:]], "hands.csv:3: 5 fields, want 27"),
], ids=["unknown-seat", "unknown-entrant", "wrong-entrant", "huge-score", "text-score", "deal-out-of-range",
        "seating-out-of-range", "match-out-of-range", "went-out-side", "deal-ref", "header-again", "row-lost",
        "row-repeated", "unit-repeated", "short-row"])
def test_a_damaged_hand_log_is_refused_naming_its_line_column_and_value(
        copy: Path, change: object, expected: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _edit(copy, change)
    before = (copy / "hands.csv").read_bytes()
    monkeypatch.setattr(tournament, "play_unit", lambda *a, **k: pytest.fail("played a hand"))
    assert cli_main([*ARGS, "--out", str(copy)]) == 2  # before: KeyError, OverflowError, IndexError
    line = _error(capsys)
    assert f"{copy}/{expected}" in line, line
    assert "delete hands.csv to replay every hand" in line
    assert (copy / "hands.csv").read_bytes() == before  # left as it was, to be restored


def test_an_unchanged_hand_log_resumes_to_the_same_results(finished: Path, copy: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The twin of the refusals: a log rewritten by the csv module as it was is accepted whole."""
    _edit(copy, lambda rows: rows)
    monkeypatch.setattr(tournament, "play_unit", lambda *a, **k: pytest.fail("played a hand"))
    assert cli_main([*ARGS, "--out", str(copy)]) == 0
    results = [json.loads((out / "results.json").read_text()) for out in (copy, finished)]
    assert results[0] == results[1]


def test_the_last_unit_cut_short_is_replayed(finished: Path, copy: Path) -> None:
    """An interrupted write leaves the log's last unit short: its hands are played again."""
    _edit(copy, lambda rows: rows[:-2])
    assert cli_main([*ARGS, "--out", str(copy)]) == 0
    assert (copy / "hands.csv").read_text() == (finished / "hands.csv").read_text()


def test_a_luck_column_that_is_not_a_finite_number_is_refused(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    args = ["tournament", "--agents", "random", "greedy", "--hands", "2", "--no-plots", "--luck-correction",
            "--out", str(tmp_path)]
    assert cli_main(args) == 0
    _edit(tmp_path, _set("side1_luck", "nan", line=2))
    capsys.readouterr()
    assert cli_main(args) == 2
    assert "hands.csv:2: column side1_luck = 'nan': want a finite number" in _error(capsys)


# ---- records.jsonl ------------------------------------------------------------------------------------
@pytest.mark.parametrize("damage, notice", [
    (lambda lines: [lines[0], lines[1][:40] + b"\n", *lines[2:]], "records.jsonl:2: not a game record"),
    (lambda lines: [lines[0], *lines[2:]], "are incomplete or repeated; replaying those hands"),
    (lambda lines: [*lines[:2], *lines[1:]], "are incomplete or repeated; replaying those hands"),
    (lambda lines: [], "are incomplete or repeated; replaying those hands"),
], ids=["line-cut", "line-deleted", "line-repeated", "all-gone"])
def test_damaged_records_are_replayed_not_lost(finished: Path, copy: Path, damage: object, notice: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Before: a damaged line was silently deleted and its hand never replayed (7 of 8 records)."""
    lines = (copy / "records.jsonl").read_bytes().splitlines(keepends=True)
    (copy / "records.jsonl").write_bytes(b"".join(damage(lines)))  # type: ignore[operator]
    capsys.readouterr()
    assert cli_main([*ARGS, "--out", str(copy)]) == 0
    said = _lines(capsys)
    assert any(notice in line for line in said), said
    assert (copy / "records.jsonl").read_bytes() == (finished / "records.jsonl").read_bytes()
    assert (copy / "hands.csv").read_bytes() == (finished / "hands.csv").read_bytes()


def test_lost_records_file_is_replayed(finished: Path, copy: Path) -> None:
    (copy / "records.jsonl").unlink()
    assert cli_main([*ARGS, "--out", str(copy)]) == 0
    assert (copy / "records.jsonl").read_bytes() == (finished / "records.jsonl").read_bytes()


# ---- the --ladder file --------------------------------------------------------------------------------
LADDER_RUN = ["tournament", "--agents", "random", "greedy", "--hands", "2", "--ladder"]


def _ladder(path: Path, **changes: object) -> Path:
    rating = {"mu": 25.0, "sigma": 8.0, "ordinal": 1.0, "games": 4}
    data: dict[str, object] = {"format": "canasta-ladder", "model": "PlackettLuce",
                               "ratings": {"greedy": rating}, "tournaments": []}
    for key, value in changes.items():
        if key == "model":
            data["model"] = value
        else:
            rating[key] = value
    path.write_text(json.dumps(data))  # NaN and Infinity as Python's json writes them
    return path


@pytest.mark.parametrize("changes, expected", [
    ({"mu": float("nan")}, "ratings['greedy']['mu'] = nan: want a finite number in [-1000, 1000]"),
    ({"mu": 1e308}, "ratings['greedy']['mu'] = 1e+308: want a finite number"),
    ({"mu": float("inf")}, "ratings['greedy']['mu'] = inf"),
    ({"sigma": -1}, "ratings['greedy']['sigma'] = -1: want a finite number in (0, 1000]"),
    ({"sigma": 0}, "ratings['greedy']['sigma'] = 0: want a finite number in (0"),
    ({"ordinal": float("nan")}, "ratings['greedy']['ordinal'] = nan"),
    ({"games": -3}, "ratings['greedy']['games'] = -3: want a whole number"),
    ({"games": 2.5}, "ratings['greedy']['games'] = 2.5: want a whole number"),
    ({"games": True}, "ratings['greedy']['games'] = True"),
    ({"model": "Nope"}, "'model' is 'Nope'"),
], ids=["mu-nan", "mu-huge", "mu-inf", "sigma-negative", "sigma-zero", "ordinal-nan", "games-negative",
        "games-fraction", "games-bool", "model"])
def test_a_bad_ladder_is_refused_before_any_hand(tmp_path: Path, changes: dict[str, object], expected: str,
                                                 capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    ladder = _ladder(tmp_path / "ladder.json", **changes)
    before = ladder.read_bytes()
    monkeypatch.setattr(tournament, "play_unit", lambda *a, **k: pytest.fail("played a hand"))
    assert cli_main([*LADDER_RUN, str(ladder)]) == 2
    assert f"ladder {ladder}: {expected}" in _error(capsys)
    assert ladder.read_bytes() == before


def test_a_ladder_of_an_integer_too_long_to_read_names_the_file(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    ladder = tmp_path / "ladder.json"
    ladder.write_text(_ladder(ladder).read_text().replace("25.0", "1" * 5000))
    assert cli_main([*LADDER_RUN, str(ladder)]) == 2
    assert f"ladder {ladder}: not valid JSON" in _error(capsys)


def test_a_good_ladder_is_still_read_and_written(tmp_path: Path) -> None:
    """The twin of the refusals: finite ratings in range (an integer mu too) carry over."""
    ladder = _ladder(tmp_path / "ladder.json", mu=30)
    result = tournament.run("classic_2p", ["random", "greedy"], hands=2, ladder=ladder, plots=False)
    greedy = {r["entrant"]: r for r in result.openskill_rows}["greedy"]
    assert greedy["games"] == 4 + 2
    data = json.loads(ladder.read_text(), parse_constant=lambda c: pytest.fail(f"{c} in the ladder"))
    assert data["ratings"]["greedy"]["games"] == 6
