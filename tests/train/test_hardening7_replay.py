"""Hardening, round seven: replaying record files and reading a tournament's files back.

``canasta replay FILE --hand N`` reads the file only up to hand N (the whole file was loaded, every
record parsed and held in memory, to show one hand: a tail that was damaged refused the hand, and a
million-hand tournament's records took gigabytes); without ``--hand`` one record at a time is in
memory. Every error message stays as it was."""

from __future__ import annotations

import io
import json
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import canasta_env.records
import train.cli.main
from agents import make_agent
from canasta_env.engine import init, observe, step
from canasta_env.records import BatchRecorder, write_records
from tests.one_line import one_error
from train.evaluation.hand_log import HandLog, TournamentConfig


@pytest.fixture(scope="module")
def lines(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Three hands of a greedy game of classic_2p, as the lines of their record file."""
    state = init("classic_2p", 1, 7, episode="game")
    agent = make_agent("greedy", "classic_2p")
    recorder = BatchRecorder(state, ["greedy", "greedy"])
    rng = np.random.default_rng(7)
    records: list = []
    while len(records) < 3:
        acts = agent.act(observe(state, state.current_player), state.legal_action_mask, rng)
        records += recorder.record(acts, step(state, acts))
    path = tmp_path_factory.mktemp("rec") / "game.jsonl"
    write_records(path, records)
    return path.read_text(encoding="utf-8").splitlines(keepends=True)


def _replay(monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    return train.cli.main.main(["replay", *args])


def _parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one for each record line parsed from now on."""
    calls: list[int] = []
    parse = canasta_env.records._parse

    def counted(data: object) -> object:
        calls.append(1)
        return parse(data)

    monkeypatch.setattr(canasta_env.records, "_parse", counted)
    return calls


@pytest.mark.parametrize("tail", ["{oops\n", "x" * ((10 << 20) + 10) + "\n", "\x1f\x8b\x08\x00garbage"])
def test_hand_n_is_shown_without_reading_past_it(monkeypatch, capsys, tmp_path: Path, lines: list[str],
                                                  tail: str) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(lines[0] + tail, encoding="utf-8")
    assert _replay(monkeypatch, str(path), "--hand", "1", "--all") == 0
    out, err = capsys.readouterr()
    assert err == "" and "Hand 1 in the file" in out and "Replay matches the record" in out
    assert _replay(monkeypatch, str(path), "--hand", "2", "--all") == 2  # the twin: the tail is read
    assert f"{path}:2: " in one_error(capsys, "replay")


def test_hand_n_parses_only_the_hands_up_to_it(monkeypatch, capsys, tmp_path: Path, lines: list[str]) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text("".join(lines * 20), encoding="utf-8")
    calls = _parses(monkeypatch)
    assert _replay(monkeypatch, str(path), "--hand", "2", "--all") == 0
    assert len(calls) == 2 and "Hand 2 in the file" in capsys.readouterr().out
    calls.clear()
    assert _replay(monkeypatch, str(path), "--hand", "61", "--all") == 2  # past the end: every hand
    assert len(calls) == 60
    assert one_error(capsys, "replay").endswith(f"{path} holds 60 hand(s); no hand 61")


@pytest.mark.parametrize("hand", ["0", "-1", "4", "99999999999999999999999"])
def test_a_hand_not_in_the_file_is_the_same_one_line(monkeypatch, capsys, tmp_path: Path, lines: list[str],
                                                     hand: str) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    assert _replay(monkeypatch, str(path), "--hand", hand, "--view", "5") == 2
    assert one_error(capsys, "replay") == f"canasta replay: error: {path} holds 3 hand(s); no hand {hand}"
    assert _replay(monkeypatch, str(path), "--hand", "3", "--all") == 0  # the twin
    out = capsys.readouterr().out
    assert "Hand 3 in the file" in out and out.count("Replay matches the record") == 1


def test_every_hand_is_counted_checked_then_replayed_one_at_a_time(monkeypatch, capsys, tmp_path: Path,
                                                                    lines: list[str]) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    assert _replay(monkeypatch, str(path), "--all") == 0
    out = capsys.readouterr().out
    assert [f"Hand {k} of 3 in the file" in out for k in (1, 2, 3)] == [True] * 3
    damaged = tmp_path / "damaged.jsonl"  # a bad --view and a damaged later line: the line, no output
    damaged.write_text("".join(lines) + "{oops\n", encoding="utf-8")
    assert _replay(monkeypatch, str(damaged), "--view", "2", "--all") == 2
    assert f"{damaged}:4: not valid JSON" in one_error(capsys, "replay")
    assert _replay(monkeypatch, str(path), "--view", "2", "--all") == 2
    assert one_error(capsys, "replay").endswith(f"--view 2: hand 1 of {path} has seats 0-1")


@pytest.mark.parametrize("name", ["", "  "])
def test_an_empty_file_name_is_named(monkeypatch, capsys, tmp_path: Path, lines: list[str],
                                     name: str) -> None:
    monkeypatch.chdir(tmp_path)  # '' was read as this folder: ": is a directory, not a record file"
    assert _replay(monkeypatch, name, "--all") == 2
    assert one_error(capsys, "replay").endswith("': not a file name; name a record file")
    (tmp_path / "r.jsonl").write_text(lines[0], encoding="utf-8")  # the twin: a name in that folder
    assert _replay(monkeypatch, "r.jsonl", "--all") == 0
    assert "Hand 1 of 1 in the file" in capsys.readouterr().out


def _unit_line(match: int, unit: int) -> bytes:
    return json.dumps({"meta": {"tournament_match": match, "tournament_unit": unit}}).encode() + b"\n"


def _keep(tmp_path: Path, content: bytes) -> tuple[set, list[int], bytes, int]:
    """``HandLog.keep_records`` of a records file holding ``content``, for two finished units of one
    game each: (units to replay, lines dropped, the file after, peak bytes allocated)."""
    log = HandLog(tmp_path / "out", TournamentConfig({}, [], [], 0), 2, [])
    log.records_path.write_bytes(content)
    tracemalloc.start()
    try:
        short, dropped = log.keep_records({(0, 0): 1, (0, 1): 1})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return short, dropped, log.records_path.read_bytes(), peak


def test_a_records_file_is_cut_back_a_line_at_a_time(tmp_path: Path) -> None:
    """Before: the whole file was read and split (a 60 MB line of junk took over 120 MB)."""
    junk = b"\x00" * (60 << 20) + b"\n"
    short, dropped, after, peak = _keep(tmp_path, _unit_line(0, 0) + junk + _unit_line(0, 1) + b"{torn")
    assert (short, dropped, after) == (set(), [2], _unit_line(0, 0) + _unit_line(0, 1))
    assert peak < 40 << 20, peak
    short, dropped, after, _ = _keep(tmp_path, _unit_line(0, 0) + b"\n{oops\n" + _unit_line(0, 1) * 2)
    assert (short, dropped, after) == ({(0, 1)}, [3], _unit_line(0, 0))  # the twin: as it was
