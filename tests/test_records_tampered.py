"""Hand records edited by hand: a record replays as written, under exactly the rules and action
layout it holds, or it is refused naming what disagrees; it is never replayed under silently
different rules. Each refusal has a twin: the valid neighbour still replays."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agents import make_agent
from canasta_env.engine import init, observe, step
from canasta_env.records import (
    BatchRecorder,
    HandRecord,
    RecordError,
    iter_records,
    read_records,
    replay,
    start_state,
    write_records,
)
from canasta_env.rules import load_rules


@pytest.fixture(scope="module")
def game() -> list[dict[str, Any]]:
    """A short classic_2p game (target 1500), as the JSON of its hand records: the first hand leaves
    the game going, the last one ends it; then the record of a hand stopped after ten actions."""
    rules = load_rules("classic_2p", target_score=1500)
    state = init(rules, 1, 5, episode="game")
    recorder = BatchRecorder(state, ["greedy", "heuristic"])
    agent, rng, records = make_agent("greedy", rules), np.random.default_rng(0), []
    while not (state.terminated[0] or state.truncated[0]):
        acts = agent.act(observe(state, state.current_player), state.legal_action_mask, rng)
        records += recorder.record(acts, step(state, acts))
    assert len(records) >= 2 and records[0].game_result is None and records[-1].game_result == 0
    state = init(rules, 1, 6, episode="game")
    recorder = BatchRecorder(state, ["greedy", "heuristic"])
    for _ in range(10):
        acts = agent.act(observe(state, state.current_player), state.legal_action_mask, rng)
        recorder.record(acts, step(state, acts))
    records += recorder.unfinished()
    return [json.loads(json.dumps(r.to_json())) for r in records]


def _load(data: dict[str, Any]) -> HandRecord:
    """Parse and replay, as ``canasta replay`` does."""
    record = HandRecord.from_json(copy.deepcopy(data))
    replay(record)
    return record


def _with(data: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A copy of ``data`` with ``changes`` (a value of ``KeyError`` deletes the key)."""
    out = copy.deepcopy(data)
    for key, value in changes.items():
        if value is KeyError:
            del out[key]
        else:
            out[key] = value
    return out


def _rules(data: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A copy of the record ``data`` whose rules have ``changes``."""
    return _with(data, rules=_with(data["rules"], **changes))


def test_the_untouched_records_replay(game: list[dict[str, Any]]) -> None:  # the twin of all below
    for data in game:
        _load(data)


@pytest.mark.parametrize(("value", "match"), [
    (5, "key 'action_layout': expected str, got int 5"),
    (None, "key 'action_layout': expected str, got NoneType"),
    ([1], "key 'action_layout': expected str, got list"),
    (KeyError, "missing key 'action_layout'"),
])
def test_an_action_layout_that_is_not_a_layout_is_refused(game: list[dict[str, Any]], value: Any,
                                                          match: str) -> None:
    with pytest.raises(RecordError, match=match):  # before: accepted, the names silently decided
        _load(_with(game[0], action_layout=value))


def test_another_layouts_record_still_replays_by_its_names(game: list[dict[str, Any]]) -> None:
    _load(_with(game[0], action_layout="an-older-layout"))  # the twin: a real (other) layout


@pytest.mark.parametrize(("changes", "match"), [
    (dict(target_score=KeyError), "rules: missing option(s) target_score; a record holds every"),
    (dict(draw_count=KeyError, hand_size=KeyError), "missing option(s) hand_size, draw_count"),
    (dict(partnerships=None), "option 'partnerships' = None is not resolved (it would replay as False)"),
    (dict(go_out_requires=None), "option 'go_out_requires' = None is not resolved (it would replay as 2)"),
])
def test_rules_left_out_or_unresolved_are_refused(game: list[dict[str, Any]], changes: dict[str, Any],
                                                  match: str) -> None:
    """A missing option would replay under this code's default (classic: 5000), not the 1500 the
    game was played to; ``null`` under this code's table-size default."""
    with pytest.raises(RecordError, match=re.escape(match)):
        _load(_rules(game[0], **changes))


def test_a_rules_file_of_only_a_few_options_is_refused(game: list[dict[str, Any]], tmp_path: Path) -> None:
    path = tmp_path / "few.jsonl"
    path.write_text(json.dumps(_with(game[0], rules={"name": "classic_2p", "num_players": 2})) + "\n")
    with pytest.raises(RecordError, match=rf"^{path}:1: rules: missing option\(s\) partnerships, packs"):
        read_records(path)


def test_python_built_records_with_partial_rules_are_refused_too(game: list[dict[str, Any]]) -> None:
    record = HandRecord.from_json(copy.deepcopy(game[0]))
    record.rules = {k: v for k, v in record.rules.items() if k != "max_hands"}
    with pytest.raises(RecordError, match=r"missing option\(s\) max_hands"):
        start_state(record)


def test_a_rule_this_hand_never_used_may_differ(game: list[dict[str, Any]]) -> None:
    """The twin: a complete rule set replays as written, even one the hand cannot tell apart."""
    _load(_with(_rules(game[0], wild_canasta_bonus=1234, name="house rules"), preset="house rules"))


@pytest.mark.parametrize(("which", "edit", "match"), [
    (0, dict(game_result=0), "game_result: replayed None, recorded 0"),
    (-2, dict(game_result=1), "game_result: replayed 0, recorded 1"),
    (-2, dict(game_result=None), "game_result: replayed 0, recorded None"),
    (-2, dict(game_result=-2), "game_result: replayed 0, recorded -2"),
    (-2, dict(episode="hand"), "game_result: replayed None, recorded 0"),
    (0, dict(hand_number=99), "game_result: replayed -2, recorded None"),
])
def test_a_game_result_the_hand_did_not_produce_is_refused(game: list[dict[str, Any]], which: int,
                                                           edit: dict[str, Any], match: str) -> None:
    with pytest.raises(RecordError, match=f"replay differs from the record: {match}"):
        _load(_with(game[which], **edit))


@pytest.mark.parametrize(("which", "option", "value", "match"), [
    (0, "target_score", 100, "game_result: replayed 0, recorded None"),  # the game would be over
    (-2, "target_score", 100_000, "game_result: replayed None, recorded 0"),  # not over yet
    (0, "max_hands", 1, "game_result: replayed -2, recorded None"),  # cut short by max_hands
])
def test_rules_that_disagree_with_the_game_result_are_refused(game: list[dict[str, Any]], which: int,
                                                              option: str, value: int,
                                                              match: str) -> None:
    """Before, game_result was never checked: a record whose target was edited replayed as if the
    hand had been played to it."""
    with pytest.raises(RecordError, match=match):
        _load(_rules(game[which], **{option: value}))


def test_rules_that_agree_with_the_game_result_still_replay(game: list[dict[str, Any]]) -> None:
    _load(_rules(game[-2], tie_rule="draw", max_hands=50))  # the twin: a unique winner either way
    _load(_rules(game[0], target_score=100_000))  # the game goes on either way


@pytest.mark.parametrize("edit", [dict(hand_scores=[5, 5]), dict(score_parts=[[0] * 5, [0] * 5]),
                                  dict(went_out=1), dict(concealed=True), dict(game_result=0)])
def test_an_unfinished_hand_with_an_outcome_is_refused(game: list[dict[str, Any]],
                                                       edit: dict[str, Any]) -> None:
    unfinished = game[-1]
    assert unfinished["end"] == "unfinished"
    with pytest.raises(RecordError, match=f"replay differs from the record: {list(edit)[0]}: "):
        _load(_with(unfinished, **edit))


def test_appending_to_a_file_cut_mid_line_keeps_the_new_records_readable(
        game: list[dict[str, Any]], tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    good, other = HandRecord.from_json(copy.deepcopy(game[0])), HandRecord.from_json(copy.deepcopy(game[1]))
    write_records(path, [good])
    text = path.read_text()
    path.write_text(text + text[: len(text) // 2])  # a second record cut short by a crash
    assert write_records(path, [other]) == 1
    lines = path.read_text().splitlines()
    assert len(lines) == 3  # before: the new record was glued onto the cut line, and lost with it
    assert HandRecord.from_json(json.loads(lines[2])) == other
    with pytest.raises(RecordError, match=f"{path}:2: not valid JSON"):
        read_records(path)


def test_appending_to_a_whole_file_adds_no_blank_line(game: list[dict[str, Any]], tmp_path: Path) -> None:
    path = tmp_path / "whole.jsonl"
    records = [HandRecord.from_json(copy.deepcopy(data)) for data in game[:2]]
    assert write_records(path, records[:1]) == 1 and write_records(path, records[1:]) == 1
    assert path.read_text().count("\n") == 2 and list(iter_records(path)) == records


def test_a_preset_that_is_not_the_rules_name_is_refused(game: list[dict[str, Any]]) -> None:
    with pytest.raises(RecordError, match=r"key 'preset': 'classic_4p' is not the rules' name 'classic_2p'"):
        _load(_with(game[0], preset="classic_4p"))
    assert _load(_with(game[0], preset="classic_2p")).preset == "classic_2p"
    assert _load(_with(game[0], preset=KeyError)).preset == "classic_2p"  # the key is optional
