"""``canasta replay`` of a record whose rules name holds rich markup: printed as it is, never read
as markup (a closing tag such as ``[/bold]`` raised rich's MarkupError: a traceback)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import train.cli.main
from agents import make_agent
from canasta_env.engine import init, observe, step
from canasta_env.records import BatchRecorder, write_records


@pytest.fixture(scope="module")
def record(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One hand of greedy play, as the JSON object of its record."""
    state = init("classic_2p", 1, 7)
    agent = make_agent("greedy", "classic_2p")
    recorder = BatchRecorder(state, ["greedy", "greedy"])
    rng = np.random.default_rng(7)
    records: list = []
    while not records:
        acts = agent.act(observe(state, state.current_player), state.legal_action_mask, rng)
        records += recorder.record(acts, step(state, acts))
    path = tmp_path_factory.mktemp("rec") / "good.jsonl"
    write_records(path, records)
    return json.loads(path.read_text().splitlines()[0])


def _replay(path: Path, monkeypatch: pytest.MonkeyPatch,
            capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code = train.cli.main.main(["replay", str(path), "--all"])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize("name", ["[/bold]", "[/]", "house [bold]rules", "[link=file:///etc]x"])
def test_markup_in_the_rules_name_is_printed_not_parsed(
        record: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], name: str) -> None:
    path = tmp_path / "named.jsonl"
    path.write_text(json.dumps({**record, "preset": name, "rules": {**record["rules"], "name": name}}) + "\n")
    code, out = _replay(path, monkeypatch, capsys)  # before: MarkupError for the closing tags
    assert code == 0 and "Traceback" not in out, out[-800:]
    assert name in out and "Replay matches the record" in " ".join(out.split())


def test_a_plain_rules_name_still_replays(record: dict, tmp_path: Path,  # the twin
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "plain.jsonl"
    path.write_text(json.dumps(record) + "\n")
    code, out = _replay(path, monkeypatch, capsys)
    assert code == 0 and "classic_2p" in out and "Replay matches the record" in " ".join(out.split())
