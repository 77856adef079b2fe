"""``canasta play`` and ``canasta replay`` with hostile or mistaken input: no standard input at all,
a huge typed line, a ``--record`` file cut short or that cannot be written. Each refusal has a
twin: the valid neighbour still works."""

from __future__ import annotations

import io
import os
import re
import sys
from pathlib import Path

import pytest

import train.cli.main
from canasta_env.records import read_records, replay


def _run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str],
         stdin: io.StringIO | None) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", stdin)
    code = train.cli.main.main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("stdin", [None, "closed"])
def test_play_without_any_standard_input_saves_the_hand_like_end_of_input(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        stdin: str | None) -> None:
    """``canasta play <&-``: Python's input() raised RuntimeError (lost sys.stdin), a traceback."""
    record = tmp_path / "closed.jsonl"
    stream = None
    if stdin == "closed":
        stream = io.StringIO("")
        stream.close()
    code, out, err = _run(monkeypatch, capsys, ["play", "--seed", "1", "--record", str(record)], stream)
    assert code == 0 and err == "" and "Game stopped (end of input)" in out
    (rec,) = read_records(record)
    assert rec.end == "unfinished"
    replay(rec)


def test_play_at_the_end_of_input_still_stops_the_same_way(  # the twin: an empty stdin
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    record = tmp_path / "eof.jsonl"
    code, out, err = _run(monkeypatch, capsys, ["play", "--seed", "1", "--record", str(record)],
                          io.StringIO(""))
    assert code == 0 and err == "" and "Game stopped (end of input)" in out
    assert read_records(record)[0].end == "unfinished"


def test_replay_without_any_standard_input_stops_like_end_of_input(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    record = tmp_path / "hand.jsonl"
    _run(monkeypatch, capsys, ["play", "--seed", "1", "--record", str(record)], io.StringIO("1\n"))
    code, out, err = _run(monkeypatch, capsys, ["replay", str(record)], None)
    assert code == 0 and err == "" and "step 1 of" in out and "step 2 of" not in out
    code, out, err = _run(monkeypatch, capsys, ["replay", str(record), "--all"], None)  # the twin
    assert code == 0 and "The record stops mid-hand" in out


def test_a_huge_typed_line_is_quoted_short(monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Before: the whole 200 kB line was printed back in the 'is not a move' message."""
    code, out, _ = _run(monkeypatch, capsys, ["play", "--seed", "1"],
                        io.StringIO("a" * 200_000 + "\nxyz\n"))
    assert code == 0
    assert max(len(line) for line in out.splitlines()) < 400
    assert re.search(r"'a{10,80}\.\.\.a{10,80}' is not a move", out)
    assert "'xyz' is not a move" in out  # the twin: a short line, quoted whole


def test_a_record_file_cut_short_is_refused_before_any_hand(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Only the first line was checked: the hand played was appended onto the cut last line, and
    the file then did not read (the hand lost with it)."""
    record = tmp_path / "game.jsonl"
    _run(monkeypatch, capsys, ["play", "--seed", "3", "--record", str(record)],
         io.StringIO("1\n" * 120))
    text = record.read_text()
    assert text.count("\n") >= 2
    record.write_text(text + text[: len(text) // 3])
    before = record.read_bytes()
    code, out, err = _run(monkeypatch, capsys, ["play", "--seed", "4", "--record", str(record)],
                          io.StringIO("1\n"))
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"canasta play: error: --record {record}: holds something other than hand "
                          f"records") and "may have been cut short" in err
    assert record.read_bytes() == before
    record.write_text(text)  # the twin: the whole file is appended to
    count = len(read_records(record))
    code, out, err = _run(monkeypatch, capsys, ["play", "--seed", "4", "--record", str(record)],
                          io.StringIO("1\n"))
    assert code == 0 and len(read_records(record)) == count + 1


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_record_file_that_cannot_be_written_is_one_line_naming_it(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(monkeypatch, capsys, ["play", "--seed", "1", "--record", "/dev/full"],
                        io.StringIO("1\n"))
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1
    assert err == ("canasta play: error: --record /dev/full: cannot append 1 hand record(s): No space "
                   "left on device\n")
    code, _, err = _run(monkeypatch, capsys, ["play", "--seed", "1", "--record", os.devnull],  # twin
                        io.StringIO("1\n"))
    assert code == 0 and err == ""
