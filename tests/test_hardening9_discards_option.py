"""Hardening of the ``observe_discards`` option across the surfaces that take rules: determinized
worlds keep the discards an observation shows, and a record from before the option still reads."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from canasta_env.engine import init, observe, step
from canasta_env.engine import layout as L
from canasta_env.engine.observation import views
from canasta_env.records import BatchRecorder, RecordError, check_outcome, read_records, replay, write_records
from canasta_env.rules import load_rules
from canasta_env.testing import keyed_actions
from canasta_env.worlds import sample_worlds


def _mid_hand(discards: bool):  # type: ignore[no-untyped-def]
    state = init(load_rules("classic_2p", observe_discards=discards), 4, 11)
    for decision in range(60):
        result = step(state, keyed_actions(state.data, state.legal_action_mask, decision, True))
        assert not (result.terminated | result.truncated).any()
    return state


@pytest.mark.parametrize("discards", [True, False])
def test_worlds_reproduce_the_observation_with_the_discards(discards: bool) -> None:
    """Before: the worlds' discards block was zero, so their observation lost the ``discards``
    piece (a net's rollouts in search saw no discards); the twin is the table without the option."""
    state = _mid_hand(discards)
    mover = int(state.data[0, L.F_CUR])
    obs = observe(state, np.array([mover]), np.array([0]))[0]
    if discards:
        assert views(obs[None], state.params)["discards"].sum() > 0
    worlds = sample_worlds(state.rules, obs, 3, seed=1, legal_mask=state.legal_action_mask[0])
    np.testing.assert_array_equal(observe(worlds, np.zeros(3, np.int64)), np.repeat(obs[None], 3, 0))


def _record_file(tmp_path: Path, drop: str | None, value: object = None) -> Path:
    state = init(load_rules("classic_2p"), 1, 5)
    recorder, records = BatchRecorder(state, ["random", "random"]), []
    for decision in range(4000):
        acts = keyed_actions(state.data, state.legal_action_mask, decision, True)
        records += recorder.record(acts, step(state, acts), state.all_rows)
        if records:
            break
    write_records(tmp_path / "one.jsonl", records[:1])
    data = json.loads((tmp_path / "one.jsonl").read_text())
    if drop is not None:
        del data["rules"][drop]
    if value is not None:
        data["rules"]["observe_discards"] = value
    path = tmp_path / "edited.jsonl"
    path.write_text(json.dumps(data) + "\n")
    return path


def test_a_record_from_before_the_option_reads_and_replays(tmp_path: Path) -> None:
    """Before: ``rules: missing option(s) observe_discards`` refused every record written before
    the option existed, though the option does not change play."""
    record = read_records(_record_file(tmp_path, "observe_discards"))[0]
    check_outcome(record, replay(record))


@pytest.mark.parametrize(("drop", "value", "match"), [
    ("jokers", None, "missing option.*jokers"),
    (None, "yes", "observe_discards"),
])
def test_a_record_missing_a_rule_or_with_a_bad_option_is_still_refused(
        tmp_path: Path, drop: str | None, value: object, match: str) -> None:
    with pytest.raises(RecordError, match=match):
        read_records(_record_file(tmp_path, drop, value))


def test_a_tournament_keeps_its_ladder_id_across_the_option() -> None:
    """A ladder counts a tournament once by the hash of its settings: the key the option added would
    have given a tournament counted before it a new id, and so counted it again."""
    from dataclasses import replace

    from train.evaluation.hand_log import TournamentConfig
    from train.evaluation.tournament_report import ladder_id

    now = TournamentConfig(load_rules("classic_2p").to_dict(), ["random", "greedy"], ["random", "greedy"], 2)
    before = replace(now, rules={k: v for k, v in now.rules.items() if k != "observe_discards"})
    assert ladder_id(now) == ladder_id(before)
    assert ladder_id(replace(now, rules={**now.rules, "observe_discards": True})) != ladder_id(now)
    assert ladder_id(replace(now, rules={**now.rules, "jokers": 6})) != ladder_id(now)
