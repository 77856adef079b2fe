"""Game records: record -> write -> read -> replay is exact for every preset, and bad input is
refused with the file and line named."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from agents import make_agent
from canasta_env.engine import (
    DealId,
    ExplicitDeal,
    explicit_deal,
    init,
    init_from_deals,
    observe,
    reset_rows,
    step,
)
from canasta_env.engine.layout import O_CREDIT, O_HSCORE
from canasta_env.records import (
    BatchRecorder,
    HandRecord,
    RecordError,
    check_outcome,
    read_records,
    replay,
    replay_step,
    start_state,
    write_records,
)
from canasta_env.rules import load_rules, preset_names

PRESETS = preset_names()


def _play(rules, *, batch: int, episode: str, agent: str, hands: int, seed: int = 1):
    """Play until ``hands`` records are emitted; returns the records, each with the per-step data
    rows and masks of the original play (``snaps[k]`` is the state before action k; the last entry
    the state after the final action)."""
    rules = load_rules(rules)
    st = init(rules, batch, seed, episode=episode)
    player = make_agent(agent, rules)
    rng = np.random.default_rng(seed)
    recorder = BatchRecorder(st, [agent] * st.num_players, meta={"test": True})
    current = {b: [(st.data[b].copy(), st.legal_action_mask[b].copy())] for b in range(batch)}
    out = []
    while len(out) < hands:
        done = np.flatnonzero(st.terminated | st.truncated)
        if done.size:
            reset_rows(st, done)
            recorder.begin(done)
            for b in done.tolist():
                current[b] = [(st.data[b].copy(), st.legal_action_mask[b].copy())]
        live = np.flatnonzero(~(st.terminated | st.truncated))
        obs = observe(st, st.current_player[live], live)
        acts = player.act(obs, st.legal_action_mask[live], rng)
        result = step(st, acts, live)
        assert not result.illegal.any()
        for b in live.tolist():
            current[b].append((st.data[b].copy(), st.legal_action_mask[b].copy()))
        for rec in recorder.record(acts, result, live):
            b = rec.deal_id.row
            out.append((rec, current[b]))
            current[b] = [current[b][-1]]  # in "game" episodes the next hand starts from here
    return out


def _compare_steps(rec: HandRecord, snaps: list, episode: str) -> None:
    """The replay passes through exactly the original states (the previous hand's score block,
    kept by the engine between hands of a game, aside) and ends with the same scores."""
    state = start_state(rec)
    keep = np.ones(state.data.shape[1], dtype=bool)
    keep[state.params[O_HSCORE]: state.params[O_CREDIT]] = False
    assert len(snaps) == len(rec.actions) + 1
    for i in range(len(rec.actions)):
        data, mask = snaps[i]
        np.testing.assert_array_equal(state.data[0, keep], data[keep], err_msg=f"step {i}")
        np.testing.assert_array_equal(state.legal_action_mask[0], mask, err_msg=f"mask at step {i}")
        replay_step(rec, state, i)
    final, _ = snaps[-1]
    if episode == "hand":  # the original row stopped at the end of this very hand
        np.testing.assert_array_equal(state.data[0], final)
    start = int(state.params[O_HSCORE])
    np.testing.assert_array_equal(state.data[0, start: int(state.params[O_CREDIT])],
                                  final[start: int(state.params[O_CREDIT])])
    np.testing.assert_array_equal(state.scores[0], rec.scores_after)
    check_outcome(rec, state)


def _round_trip(tmp_path: Path, played: list) -> list[HandRecord]:
    path = tmp_path / "hands.jsonl"
    write_records(path, [rec for rec, _ in played[:2]])
    write_records(path, [rec for rec, _ in played[2:]])  # appends
    back = read_records(path)
    assert [r.to_json() for r in back] == [rec.to_json() for rec, _ in played]
    assert back == [rec for rec, _ in played]
    for r in back:
        final = replay(r)
        assert final.scores[0].tolist() == r.scores_after
    return back


@pytest.mark.parametrize("preset", PRESETS)
def test_game_hands_replay_exactly(preset: str, tmp_path: Path) -> None:
    played = _play(preset, batch=3, episode="game", agent="heuristic", hands=8)
    for rec, snaps in played:
        _compare_steps(rec, snaps, "game")
    back = _round_trip(tmp_path, played)
    later = [r for r in back if r.hand_number > 0]
    assert later and all(any(r.scores_before) for r in later)  # prior scores are nonzero
    assert all(r.episode == "game" and r.seats == ["heuristic"] * len(r.seats) for r in back)
    assert all(r.meta == {"test": True} for r in back)


@pytest.mark.parametrize("preset", PRESETS)
def test_hand_episodes_with_resets_replay_exactly(preset: str, tmp_path: Path) -> None:
    played = _play(preset, batch=3, episode="hand", agent="random", hands=6, seed=5)
    for rec, snaps in played:
        _compare_steps(rec, snaps, "hand")
    back = _round_trip(tmp_path, played)
    assert any(r.deal_id.index > 0 for r in back)  # rows re-dealt by reset_rows are recorded too
    for r in back:
        assert np.array_equal(explicit_deal(r.preset, r.deal_id).order, r.deal.order)


def test_prior_scores_set_the_initial_meld_minimum() -> None:
    played = _play("classic_2p", batch=4, episode="game", agent="heuristic", hands=10)
    rules = load_rules("classic_2p")
    high = [rec for rec, _ in played if max(rec.scores_before) >= 1500]
    assert high, "no hand started with a side at 1500 or more"
    for rec in high:
        state = start_state(rec)
        side = int(state.current_player[0]) % state.num_sides
        assert int(state.minimum[0]) == rules.minimum_for(rec.scores_before[side])
    assert any(int(start_state(rec).minimum[0]) == 90 for rec in high)


def test_explicit_deals_are_recorded_without_a_deal_id() -> None:
    rules = load_rules("classic_3p")
    rng = np.random.default_rng(0)
    deals = [explicit_deal(rules, DealId(9, b, 0)) for b in range(2)]
    deals.append(ExplicitDeal(rng.permutation(deals[0].order), 2))
    st = init_from_deals(rules, deals)
    with pytest.raises(RecordError, match="pass deals= to begin"):
        BatchRecorder(st, ["random"] * 3)
    recorder = BatchRecorder(st, ["random"] * 3, deals=deals)
    agent, records = make_agent("random", rules), []
    while len(records) < 3:
        live = np.flatnonzero(~(st.terminated | st.truncated))
        acts = agent.act(None, st.legal_action_mask[live], rng)
        records += recorder.record(acts, step(st, acts, live), live)
    assert all(r.deal_id is None for r in records)
    for r in records:
        replay(HandRecord.from_json(json.loads(json.dumps(r.to_json()))))


def test_step_cap_and_max_hands_records_replay(tmp_path: Path) -> None:
    capped = load_rules("classic_2p", max_steps_per_hand=100)
    played = _play(capped, batch=4, episode="hand", agent="random", hands=6, seed=2)
    ends = {rec.end for rec, _ in played}
    assert "step_cap" in ends
    for rec, _ in played:
        if rec.end == "step_cap":
            assert rec.hand_scores is None and rec.scores_after == rec.scores_before
    _round_trip(tmp_path, played)
    short = load_rules("classic_2p", max_hands=2)
    played = _play(short, batch=2, episode="game", agent="greedy", hands=4, seed=3)
    assert [rec.hand_number for rec, _ in played if rec.deal_id.row == 0][:2] == [0, 1]
    for rec, snaps in played:
        _compare_steps(rec, snaps, "game")


def test_unfinished_hands_replay_to_a_live_state() -> None:
    st = init("classic_4p", 2, 4, episode="game")
    recorder = BatchRecorder(st, ["random"] * 4)
    rng = np.random.default_rng(0)
    assert recorder.unfinished() == []  # nothing played yet
    for _ in range(30):
        acts = make_agent("random", "classic_4p").act(None, st.legal_action_mask, rng)
        assert recorder.record(acts, step(st, acts)) == []
    partial = recorder.unfinished()
    assert len(partial) == 2 and all(r.end == "unfinished" and len(r.actions) == 30 for r in partial)
    final = replay(partial[1])
    np.testing.assert_array_equal(final.data[0], st.data[1])
    partial[0].end = "went_out"
    with pytest.raises(RecordError, match="end: replayed 'unfinished'"):
        replay(partial[0])


@pytest.fixture(scope="module")
def good_line() -> str:
    rec, _ = _play("classic_2p", batch=1, episode="hand", agent="greedy", hands=1)[0]
    return json.dumps(rec.to_json())


def _edit(line: str, **changes) -> str:
    data = json.loads(line)
    for key, value in changes.items():
        if value is KeyError:
            del data[key]
        else:
            data[key] = value
    return json.dumps(data)


@pytest.mark.parametrize("make, message", [
    (lambda g: g + "\n{not json\n", r":2: not valid JSON"),
    (lambda g: g + "\n" + g[: len(g) // 2], r":2: not valid JSON .*cut short"),
    (lambda g: "\n\n" + _edit(g, format="other") + "\n", r":3: not a hand record"),
    (lambda g: _edit(g, version=99) + "\n", r":1: record version 99 is not supported"),
    (lambda g: g + "\n" + _edit(g, actions=KeyError) + "\n", r":2: missing key 'actions'"),
    (lambda g: _edit(g, actions="0 1 2") + "\n", r":1: key 'actions': expected list"),
    (lambda g: _edit(g, action_names=["DRAW_STOCK"] * len(json.loads(g)["actions"])) + "\n",
     r":1: action #1 = \d+ is \w+, the record names it 'DRAW_STOCK'"),
    (lambda g: _edit(g, rules={"num_players": 9}) + "\n", r":1: rules: .*num_players"),
    (lambda g: _edit(g, end="won") + "\n", r":1: end 'won' is not one of"),
    (lambda g: _edit(g, deal={"order": ["Z"], "dealer": 0}) + "\n", r":1: deal order: unknown card"),
    (lambda g: "[1, 2]\n", r":1: expected a JSON object"),
])
def test_corrupt_files_name_the_file_and_line(tmp_path: Path, good_line: str, make, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(make(good_line))
    with pytest.raises(RecordError, match=message) as info:
        read_records(path)
    assert str(info.value).startswith(f"{path}:")


def test_replay_refuses_records_that_do_not_replay(good_line: str) -> None:
    rec = HandRecord.from_json(json.loads(good_line))
    replay(rec)
    bad = HandRecord.from_json(json.loads(good_line))
    bad.actions[1] = bad.actions[0]  # drawing twice
    with pytest.raises(RecordError, match=r"action #1 0 \(DRAW_STOCK\) does not replay: .*legal:"):
        replay(bad)
    bad = HandRecord.from_json(json.loads(good_line))
    bad.hand_scores = [s + 5 for s in bad.hand_scores]
    with pytest.raises(RecordError, match="replay differs from the record: hand_scores"):
        replay(bad)
    bad = HandRecord.from_json(json.loads(good_line))
    bad.actions[-1] = 999
    with pytest.raises(RecordError, match=r"action #\d+ 999 \(out of range\) does not replay"):
        replay(bad)
    bad = HandRecord.from_json(json.loads(good_line))
    bad.actions.append(0)
    with pytest.raises(RecordError, match="the hand is over after"):
        replay(bad)
    bad = HandRecord.from_json(json.loads(good_line))
    bad.deal = ExplicitDeal(bad.deal.order[1:], 0)
    with pytest.raises(RecordError, match="not a permutation"):
        replay(bad)


def test_records_survive_an_action_renumbering(good_line: str) -> None:
    data = json.loads(good_line)
    data["action_layout"] = "an-older-layout"
    data["actions"] = [0] * len(data["actions"])  # ints from another layout: the names decide
    rec = HandRecord.from_json(data)
    replay(rec)
    del data["action_names"]
    with pytest.raises(RecordError, match="no action names"):
        HandRecord.from_json(data)


def test_recorder_arguments_are_checked() -> None:
    st = init("classic_2p", 2, 0)
    with pytest.raises(ValueError, match="seats"):
        BatchRecorder(st, ["a", "b", "c"])
    rec = BatchRecorder(st, [["a", "b"], ["c", "d"]], capacity=1)  # grows past its capacity
    rng = np.random.default_rng(0)
    out = []
    while not out:
        acts = make_agent("random", "classic_2p").act(None, st.legal_action_mask, rng)
        out += rec.record(acts, step(st, acts))
    assert out[0].seats in (["a", "b"], ["c", "d"])
    replay(out[0])
    done = np.flatnonzero(st.terminated)
    reset_rows(st, done)  # ... and no begin(done): refused rather than losing the hand
    acts = make_agent("random", "classic_2p").act(None, st.legal_action_mask, rng)
    with pytest.raises(RecordError, match="without BatchRecorder.begin"):
        rec.record(acts, step(st, acts))
