"""``canasta replay``: every step printed with ``--all``, a seat's view hides the other hands,
interactive stepping stops on ``q`` or end of input, and bad files are refused."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import train.cli.main
from agents import make_agent
from canasta_env.engine import init, observe, step
from canasta_env.records import BatchRecorder, write_records


def _record_file(path: Path, preset: str = "classic_2p", hands: int = 2, seed: int = 7) -> list:
    state = init(preset, 1, seed, episode="game")
    agent = make_agent("greedy", preset)
    recorder = BatchRecorder(state, ["greedy"] * state.num_players)
    rng = np.random.default_rng(seed)
    records: list = []
    while len(records) < hands:
        acts = agent.act(observe(state, state.current_player), state.legal_action_mask, rng)
        records += recorder.record(acts, step(state, acts))
    write_records(path, records)
    return records


def _replay(monkeypatch, capsys, args: list[str], stdin: str = "") -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = train.cli.main.main(["replay", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _steps(out: str) -> list[int]:
    return [int(m) for m in re.findall(r"step (\d+) of \d+", out)]


def test_all_prints_every_step_of_every_hand(monkeypatch, capsys, tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    records = _record_file(path)
    code, out, err = _replay(monkeypatch, capsys, [str(path), "--all"])
    assert code == 0, err
    expected = [i + 1 for r in records for i in range(len(r.actions))]
    assert _steps(out) == expected
    assert out.count("Replay matches the record") == len(records)
    assert "Hand 2 of 2 in the file" in out
    assert out.count(" plays ") == len(expected)
    first_hand = out[: out.index("Hand 2 of 2")]
    assert "pile contents:" in first_hand  # the omniscient view shows everything


@pytest.mark.parametrize("preset", ["classic_2p", "classic_4p"])
def test_a_seat_view_hides_the_other_hands(monkeypatch, capsys, tmp_path: Path, preset: str) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # one table line per printed line
    path = tmp_path / "r.jsonl"
    (record,) = _record_file(path, preset, hands=1, seed=3)
    code, out, err = _replay(monkeypatch, capsys, [str(path), "--all", "--view", "1"])
    assert code == 0, err
    assert _steps(out) == list(range(1, len(record.actions) + 1))
    hand_lines = re.findall(r"│ (P\d)\*? +red3 \d+ \| (.*?) *│", out)
    assert len(hand_lines) == (len(record.actions) + 1) * len(record.seats)
    for seat, shown in hand_lines:
        if seat == "P1":
            assert "cards" not in shown or shown == "-"
        else:
            assert re.fullmatch(r"\d+ cards(, known: .*)?", shown), (seat, shown)
    assert "pile contents:" not in out and "view of P1" in out


def test_interactive_stepping_stops_on_q_and_at_end_of_input(monkeypatch, capsys, tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    _record_file(path, hands=1)
    code, out, _ = _replay(monkeypatch, capsys, [str(path)], stdin="\n\nq\n")
    assert code == 0 and _steps(out) == [1, 2, 3]
    code, out, _ = _replay(monkeypatch, capsys, [str(path), "--hand", "1"], stdin="\n")
    assert code == 0 and _steps(out) == [1, 2]


def test_bad_files_and_arguments_are_refused(monkeypatch, capsys, tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    records = _record_file(path)
    code, _, err = _replay(monkeypatch, capsys, [str(path), "--hand", "3"])
    assert code == 2 and "holds 2 hand(s)" in err
    code, out, err = _replay(monkeypatch, capsys, [str(path), "--view", "4", "--all"])
    assert code == 2 and "--view 4" in err and out == ""  # the user's flag (issue 12): status 2
    code, _, err = _replay(monkeypatch, capsys, [str(path), "--view", "north"])
    assert code == 2 and "--view must be" in err
    broken = tmp_path / "broken.jsonl"
    broken.write_text(path.read_text().splitlines()[0] + "\n{oops\n")
    code, _, err = _replay(monkeypatch, capsys, [str(broken), "--all"])
    assert code == 2 and f"{broken}:2: not valid JSON" in err
    tampered = tmp_path / "tampered.jsonl"
    data = records[1].to_json()
    data["scores_after"] = [s + 10 for s in data["scores_after"]]
    tampered.write_text(json.dumps(data) + "\n")
    code, out, err = _replay(monkeypatch, capsys, [str(tampered), "--all"])
    assert code == 1 and "hand 1: " in err and "replay differs from the record: scores_after" in err
    code, _, err = _replay(monkeypatch, capsys, [str(tmp_path / "missing.jsonl")])
    assert code == 2 and "missing.jsonl" in err


def test_control_characters_in_seat_labels_are_shown_escaped(monkeypatch, capsys, tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    records = _record_file(path, hands=1)
    data = records[0].to_json()
    data["seats"] = ["\x1b[2J\x1b]0;pwned\x07evil", "bidi\u202eright\rover"]
    hostile = tmp_path / "hostile.jsonl"
    hostile.write_text(json.dumps(data) + "\n")
    code, out, err = _replay(monkeypatch, capsys, [str(hostile), "--all"])
    assert code == 0, err
    assert not any(c in out for c in "\x1b\x07\r\u202e")  # nothing reaches the terminal raw
    assert "\\x1b[2J\\x1b]0;pwned\\x07evil" in out and "bidi\\u202eright\\rover" in out
    assert "(\\x1b[2J\\x1b]0;pwned\\x07evil) plays" in out  # the mover lines too
