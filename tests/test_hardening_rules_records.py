"""Issue 12, rules files and game records: hostile or careless input is refused quickly, with one
line naming the file (and the line), never a hang, a raw Python error or a silently kept value."""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import train.cli.main
from agents import make_agent
from canasta_env.engine import init, step
from canasta_env.messages import short_repr
from canasta_env.records import (
    MAX_LINE_BYTES,
    BatchRecorder,
    HandRecord,
    RecordError,
    read_records,
    start_state,
    write_records,
)
from canasta_env.rules import RulesError, load_rules, preset_names
from canasta_env.safe_yaml import YamlFileError, load_yaml_mapping

REPO = Path(__file__).resolve().parents[1]


def _one_line(exc: BaseException, *, limit: int = 400) -> str:
    msg = str(exc)
    assert "\n" not in msg and len(msg) <= limit, msg
    return msg


def _refused(spec: Any, match: str | None = None, **overrides: Any) -> str:
    """``load_rules(spec)`` raises a one-line ``RulesError`` (naming ``spec`` when it is a file)
    within a second."""
    start = time.perf_counter()
    with pytest.raises(RulesError) as info:
        load_rules(spec, **overrides)
    assert time.perf_counter() - start < 1.0
    msg = _one_line(info.value, limit=1000)
    if isinstance(spec, Path):
        assert msg.startswith(f"{spec}: "), msg
    if match is not None:
        assert match in msg, msg
    return msg


# ---- rules YAML ----------------------------------------------------------------------------------
def _billion_laughs(path: Path) -> Path:
    lines = ["a: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"{chr(98 + i)}: &a{i + 1} [{', '.join([f'*a{i}'] * 9)}]" for i in range(8)]
    path.write_text("\n".join(lines) + "\n")
    assert len(path.read_bytes()) < 500  # 9**9 = 387 million x's once expanded
    return path


def test_billion_laughs_is_refused_in_well_under_a_second(tmp_path: Path) -> None:
    path = _billion_laughs(tmp_path / "laughs.yaml")
    start = time.perf_counter()
    with pytest.raises(RulesError, match="anchors and aliases") as info:
        load_rules(path)
    assert time.perf_counter() - start < 1.0
    assert str(info.value).startswith(f"{path}: line 1: ")


def test_nested_anchors_in_one_value_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "nested.yaml"
    path.write_text("name: &a3 [&a2 [&a1 [x, x], *a1], *a2]\nnum_players: *a3\n")
    _refused(path, "anchors and aliases")


def test_a_lone_anchor_is_refused_too(tmp_path: Path) -> None:
    path = tmp_path / "anchor.yaml"
    path.write_text("num_players: &n 2\n")
    _refused(path, "line 1: YAML anchors")


@pytest.mark.parametrize("depth", [4, 60, 100_000])
def test_deep_nesting_is_refused(tmp_path: Path, depth: int) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("name: x\ninitial_meld_table: " + "[" * depth + "]" * depth + "\n")
    _refused(path, "line 2: nested deeper than 3 levels")


@pytest.mark.parametrize("value", ["1:00", "1:30:00", "-2:30", "1:30:00.5"])
def test_base_60_numbers_are_refused_not_read_as_seconds(tmp_path: Path, value: str) -> None:
    path = tmp_path / "clock.yaml"
    path.write_text(f"name: x\ntarget_score: {value}\n")
    _refused(path, f"line 2: '{value}' is a YAML 1.1 base-60 number")


def test_legitimate_files_fit_the_limits() -> None:
    for name in preset_names():
        assert load_rules(name).name == name
    assert load_rules(REPO / "configs" / "rules" / "railroad_6p.yaml").num_players == 6


def test_duplicate_keys_are_refused_not_silently_kept(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text("num_players: 2\ntarget_score: 3000\nnum_players: 4\n")
    _refused(path, "line 3: duplicate key 'num_players' (first at line 1)")
    path.write_text("initial_meld_table: [[null, 15]]\nx: {a: 1, a: 2}\n")
    _refused(path, "duplicate key 'a'")


@pytest.mark.parametrize(("data", "match"), [
    ("num_players: 2\n".encode("utf-16"), "UTF-16"),  # with its byte-order mark
    ("num_players: 2\n".encode("utf-16-le"), "NUL byte"),  # without one
    ("name: caf\xe9\n".encode("latin-1"), "line 1: byte 0xe9 is not UTF-8"),
    (b"name: ok\n\n\xff\xfe\n", "line 3: byte 0xff is not UTF-8"),
])
def test_files_that_are_not_utf8_are_refused(tmp_path: Path, data: bytes, match: str) -> None:
    path = tmp_path / "enc.yaml"
    path.write_bytes(data)
    _refused(path, match)


def test_a_utf8_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.yaml"
    path.write_bytes("num_players: 3\n".encode("utf-8-sig"))
    assert load_rules(path).num_players == 3


def test_a_directory_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "rules.yaml"
    folder.mkdir()
    _refused(folder, "is a directory")
    _refused(str(tmp_path), "is a directory")
    _refused(".", "is a directory")


@pytest.mark.parametrize(("text", "match"), [
    ("", "the file is empty"),
    ("  \n\n", "the file is empty"),
    ("- num_players\n- 4\n", "got a list"),
    ("classic\n", "got a string ('classic')"),
    ("~\n", "got null"),
    ("42\n", "got an integer (42)"),
])
def test_empty_files_and_wrong_top_level_types_are_refused(tmp_path: Path, text: str,
                                                          match: str) -> None:
    path = tmp_path / "top.yaml"
    path.write_text(text)
    _refused(path, f"{match}")


def test_a_file_of_comments_is_still_classic(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("# classic rules, nothing changed\n")
    assert load_rules(path) == load_rules({})


def test_huge_integers_and_long_values_are_refused_with_short_messages(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text("num_players: " + "9" * 5000 + "\n")
    _refused(path, "an integer of 5000 characters")
    path.write_text("num_players: " + "9" * 60 + "\n")  # readable, but out of range
    assert len(_refused(path, "'num_players'")) < len(str(path)) + 200
    path.write_text("upcard_policy: " + "x" * 100_000 + "\n")
    assert len(_refused(path, "'upcard_policy'")) < len(str(path)) + 300


def test_an_oversized_file_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_text("name: " + "x" * (1 << 20) + "\n")
    _refused(path, "larger than 1048576 bytes")


def test_other_yaml_errors_are_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    for text in ("num_players: [4\nhand_size: 11\n", "a: 1\n---\nb: 2\n",
                 "x: !!python/object/apply:os.system [echo hi]\n", "\tnum_players: 2\n"):
        path.write_text(text)
        _refused(path, "not valid YAML")


@pytest.mark.parametrize("spec", ["no_such_preset", "", "   ", None, 123, 4.5, ["classic_2p"],
                                  "a\0b", "x" * 5000, "missing/rules"])
def test_bad_rules_names_are_one_line_errors(spec: Any) -> None:
    _refused(spec)


def test_a_mistyped_yaml_path_names_the_path(tmp_path: Path) -> None:
    _refused(str(tmp_path / "nope.yaml"), "file not found")


def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(("options", "key"), [
    ({"num_players": 10**100_000}, "num_players"),
    ({"target_score": 10**30}, "target_score"),
    ({"target_score": math.nan}, "target_score"),
    ({"red3_bonus": math.inf}, "red3_bonus"),
    ({"num_players": _nested(100_000)}, "num_players"),
    ({"initial_meld_table": _nested(100_000)}, "initial_meld_table"),
    ({"initial_meld_table": [[None, 15], [10**40, 50]]}, "initial_meld_table"),
    ({"initial_meld_table": [[None, 15]] * 9}, "initial_meld_table"),
    ({"name": "x" * 10_000}, "name"),
    ({"name": "two\nlines"}, "name"),
    ({"upcard_policy": {"k": _nested(50)}}, "upcard_policy"),
    ({(1,) * 1000: 1}, "unknown rule option"),
])
def test_absurd_python_values_are_rules_errors(options: dict[Any, Any], key: str) -> None:
    msg = _refused(options, key)
    assert "<dict>" in msg


def test_direct_construction_with_a_malformed_table_is_a_rules_error() -> None:
    from canasta_env.rules import RuleSet

    for table in (((),), ((None,),), 5, ((None, 10**40),)):
        with pytest.raises(RulesError, match="initial_meld_table"):
            RuleSet(initial_meld_table=table)  # type: ignore[arg-type]


def test_short_repr_never_raises_and_stays_short() -> None:
    looped: list[Any] = []
    looped.append(looped)

    class Broken:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    for value in (10**100_000, _nested(100_000), looped, "y" * 10**6, Broken(), {"a": [1] * 1000}):
        text = short_repr(value)
        assert len(text) <= 80 and "\n" not in text


def test_the_reusable_loader(tmp_path: Path) -> None:
    path = tmp_path / "cfg.yaml"
    path.write_text("rules: classic_2p\neval_opponents: [random, greedy]\n")
    assert load_yaml_mapping(path, "training options") == {
        "rules": "classic_2p", "eval_opponents": ["random", "greedy"]}
    path.write_text("1: 2\n")
    with pytest.raises(YamlFileError, match="training options are named by strings"):
        load_yaml_mapping(path, "training options")
    path.write_text("")
    assert load_yaml_mapping(path, allow_empty=True) == {}
    with pytest.raises(ValueError, match=f"{path}: the file is empty"):
        load_yaml_mapping(path)
    _billion_laughs(path)
    with pytest.raises(YamlFileError, match="anchors"):
        load_yaml_mapping(path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_named_pipe_is_refused_not_waited_on(tmp_path: Path) -> None:
    """Opening a FIFO for reading blocks until a writer comes: every reader of user files refuses
    it at once instead (rules, option files, records, deal sets)."""
    from canasta_env.deal_sets import load_deal_set

    fifo = tmp_path / "rules.yaml"
    os.mkfifo(fifo)
    start = time.perf_counter()
    _refused(fifo, "is a named pipe or socket, not a file")
    with pytest.raises(YamlFileError, match="named pipe"):
        load_yaml_mapping(fifo)
    with pytest.raises(RecordError, match=f"{fifo}: is a named pipe"):
        read_records(fifo)
    with pytest.raises(ValueError, match=f"deal set {fifo}: is a named pipe"):
        load_deal_set(fifo, "classic_2p")
    assert time.perf_counter() - start < 2
    if os.path.exists("/dev/zero"):  # the twin: a device still opens, and its read is bounded
        _refused(Path("/dev/zero"), "larger than")


def test_edited_deal_set_files_are_refused_naming_the_file(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import canasta_env.deal_sets as deal_sets

    shipped = deal_sets.load_deal_set("v1", "classic_2p")
    orders, dealers = shipped.orders[:3].astype(np.int64), shipped.dealers[:3]

    def saved(name: str, orders: np.ndarray, dealers: np.ndarray, meta: Any = None) -> Path:
        digest = deal_sets._digest(orders.astype(np.int8), dealers.astype(np.int8))
        meta = meta if meta is not None else {"format": deal_sets.FORMAT, "name": "t", "preset":
                                              "classic_2p", "version": "v1", "sha256": digest}
        path = tmp_path / name
        np.savez(path, orders=orders, dealers=dealers, meta=np.array(json.dumps(meta)))
        return path

    assert len(deal_sets.load_deal_set(saved("good.npz", orders, dealers), "classic_2p")) == 3
    wide = orders.copy()
    wide[0, 0] = 300  # would wrap to 44 as int8, then index past the 15 card kinds
    cases = [(saved("kind.npz", wide, dealers), "a card kind or dealer is out of range"),
             (saved("meta.npz", orders, dealers, meta=[1]), r"metadata \[1\] is not a deal set's"),
             (saved("flat.npz", orders[0], dealers), "are not N deals of card kinds"),
             (saved("float.npz", orders.astype(float), dealers), "float64"),
             (saved("short.npz", orders, dealers[:1]), "are not N deals")]
    for key, value in (("name", "x\x1b[2J"), ("version", "v" * 200), ("preset", "")):
        meta = {"format": deal_sets.FORMAT, "name": "t", "preset": "classic_2p", "version": "v1",
                "sha256": deal_sets._digest(orders.astype(np.int8), dealers.astype(np.int8)), key: value}
        cases.append((saved(f"{key}.npz", orders, dealers, meta=meta), f"{key} .* is not a printable name"))
    for path, match in cases:
        with pytest.raises(ValueError, match=match) as info:
            deal_sets.load_deal_set(path, "classic_2p")
        assert str(path) in _one_line(info.value)
    monkeypatch.setattr(deal_sets, "MAX_MEMBER_BYTES", 100)  # a zip bomb, in miniature
    with pytest.raises(ValueError, match="a member is larger than 100 bytes"):
        deal_sets.load_deal_set(tmp_path / "good.npz", "classic_2p")


# ---- records -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def good() -> dict[str, Any]:
    """The JSON of one recorded classic_2p hand."""
    state = init("classic_2p", 1, 3)
    recorder = BatchRecorder(state, ["random", "greedy"])
    agent, rng, records = make_agent("random", "classic_2p"), np.random.default_rng(0), []
    while not records:
        acts = agent.act(None, state.legal_action_mask, rng)
        records = recorder.record(acts, step(state, acts))
    return records[0].to_json()


def _edited(good: dict[str, Any], **changes: Any) -> str:
    data = json.loads(json.dumps(good))
    for key, value in changes.items():
        if "." in key:
            outer, inner = key.split(".")
            data[outer][inner] = value
        elif value is KeyError:
            del data[key]
        else:
            data[key] = value
    return json.dumps(data)


RECORD_CASES = [
    (dict(hand_number=10**30), "key 'hand_number': 1000000000000000000000000000000 is not an"),
    (dict(hand_number=-1), "key 'hand_number': -1 is not an integer in [0, 100]"),
    (dict(scores_before=[10**40, 0]), "key 'scores_before'"),
    (dict(scores_after=[0]), "key 'scores_after': expected 2 integers (one per side)"),
    (dict(hand_scores=[1, 2, 3]), "key 'hand_scores'"),
    (dict(score_parts=[[0, 0], [0, 0]]), "key 'score_parts'"),
    (dict(went_out=5), "key 'went_out': 5 is not an integer in [-1, 1]"),
    (dict(game_result=7), "key 'game_result'"),
    (dict(seats=["random"]), "key 'seats': expected 2 seat labels for 2 players"),
    (dict(seats=["a", "b", "c"]), "key 'seats': expected 2 seat labels"),
    (dict(seats="random greedy"), "key 'seats': expected list"),
    (dict(seats=[1, 2]), "key 'seats': expected a list of strings"),
    (dict(hand_number="2"), "key 'hand_number': expected int, got str"),
    (dict(concealed=1), "key 'concealed': expected bool"),
    (dict(episode="match"), "episode 'match' is not one of hand, game"),
    (dict(extra=1), "unknown key(s) 'extra'"),
    (dict(version=True), "record version True is not supported"),
    (dict(actions=[10**30], action_names=KeyError), "action #0 = 1000000000000000000000000000000 "
                                                    "is outside"),
    (dict(actions=[0.5]), "key 'actions': expected a list of integers"),
    (dict(action_names=[[1]]), "action names for"),
    (dict(end="w" * 10_000), "end 'wwww"),
    (dict(format=["x"] * 10_000), "not a hand record"),
    (dict(rules={"num_players": 10**50}), "rules: <dict>: option 'num_players'"),
    (dict(preset=3), "key 'preset'"),
    (dict(meta=[]), "key 'meta'"),
    ({"deal.dealer": 9}, "key 'dealer': 9 is not an integer in [0, 1]"),
    ({"deal.deal_id": [-1, 0, 0]}, "key 'deal_id seed'"),
    ({"deal.deal_id": [0, 2**40, 0]}, "key 'deal_id row'"),
    ({"deal.order": [["K"]]}, "deal order: unknown card names ['K']"),
    ({"deal.extra": 1}, "deal: unknown key(s) 'extra'"),
]


@pytest.mark.parametrize(("changes", "match"), RECORD_CASES)
def test_bad_records_name_the_file_and_line(tmp_path: Path, good: dict[str, Any],
                                            changes: dict[str, Any], match: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(good) + "\n\n" + _edited(good, **changes) + "\n")
    with pytest.raises(RecordError) as info:
        read_records(path)
    msg = _one_line(info.value, limit=600)
    assert msg.startswith(f"{path}:3: ") and match in msg, msg


@pytest.mark.parametrize(("line", "match"), [
    (b'"just a string"', "expected a JSON object, got str"),
    (b"[1, 2]", "expected a JSON object, got list"),
    (b"null", "expected a JSON object, got NoneType"),
    (b'{"hand_number": ' + b"9" * 5000 + b"}", "not valid JSON"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    (b'{"format": "canasta-hand-record", "format": "x"}', "duplicate key 'format'"),
    ('{"seats": ["caf\xe9"]}'.encode("latin-1"), "byte 0xe9 is not UTF-8"),
    (b"\x00\x01\x02", "NUL byte"),
])
def test_bad_lines_name_the_file_and_line(tmp_path: Path, good: dict[str, Any], line: bytes,
                                          match: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(json.dumps(good).encode() + b"\n" + line + b"\n")
    with pytest.raises(RecordError) as info:
        read_records(path)
    msg = _one_line(info.value)
    assert msg.startswith(f"{path}:2: ") and match in msg, msg


def test_a_giant_line_is_refused_without_parsing_it(tmp_path: Path, good: dict[str, Any]) -> None:
    path = tmp_path / "giant.jsonl"
    with open(path, "wb") as f:
        f.write(json.dumps(good).encode() + b"\n")
        f.write(b'{"meta": "' + b"x" * (MAX_LINE_BYTES + 10) + b'"}\n')
    with pytest.raises(RecordError, match=f"{path}:2: line longer than {MAX_LINE_BYTES} bytes"):
        read_records(path)


def test_utf16_and_directories_are_refused(tmp_path: Path, good: dict[str, Any]) -> None:
    path = tmp_path / "wide.jsonl"
    path.write_bytes((json.dumps(good) + "\n").encode("utf-16"))
    with pytest.raises(RecordError, match=f"{path}:1: is UTF-16"):
        read_records(path)
    with pytest.raises(RecordError, match="is a directory"):
        read_records(tmp_path)


def test_python_built_records_are_checked_before_replay(good: dict[str, Any]) -> None:
    for change in (dict(seats=["solo"]), dict(hand_number=10**30), dict(scores_before=[2**40, 0]),
                   dict(went_out=-7)):
        record = HandRecord.from_json(good)
        for key, value in change.items():
            setattr(record, key, value)
        with pytest.raises(RecordError) as info:
            start_state(record)
        assert list(change)[0] in _one_line(info.value)


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = train.cli.main.main(args)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize(("changes", "match"), [
    (dict(seats=["random"]), "key 'seats': expected 2 seat labels"),
    (dict(hand_number=10**30), "key 'hand_number'"),
    (dict(scores_before=[0]), "key 'scores_before'"),
])
def test_canasta_replay_of_a_bad_record_is_one_line_and_status_2(
        tmp_path: Path, good: dict[str, Any], capsys: pytest.CaptureFixture[str],
        changes: dict[str, Any], match: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(_edited(good, **changes) + "\n")
    code, out = _cli(["replay", str(path), "--all"], capsys)
    assert code == 2 and "Traceback" not in out
    assert out.startswith(f"canasta replay: error: {path}:1: ") and match in out, out
    assert out.count("\n") == 1


def test_canasta_replay_of_bad_files_is_one_line(tmp_path: Path, good: dict[str, Any],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    cases = {"latin.jsonl": b'{"a": "\xe9"}\n', "empty.jsonl": b"", "deep.jsonl": b"[" * 10**5,
             "digits.jsonl": b"9" * 10_000 + b"\n"}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        code, out = _cli(["replay", str(tmp_path / name), "--all"], capsys)
        assert code == 2 and out.startswith("canasta replay: error: ") and out.count("\n") == 1, out
    code, out = _cli(["replay", str(tmp_path), "--all"], capsys)
    assert code == 2 and "is a directory" in out and "Traceback" not in out


def test_a_good_record_still_replays(tmp_path: Path, good: dict[str, Any],
                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "good.jsonl"
    write_records(path, [HandRecord.from_json(good)])
    code, out = _cli(["replay", str(path), "--all"], capsys)
    assert code == 0 and "Replay matches the record" in " ".join(out.split())


def test_replay_with_a_view_outside_the_table_is_status_2_before_any_output(
        tmp_path: Path, good: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "good.jsonl"
    write_records(path, [HandRecord.from_json(good)])
    for view in ("2", "99999999999999999999"):
        code, out = _cli(["replay", str(path), "--all", "--view", view], capsys)
        assert code == 2 and out == f"canasta replay: error: --view {view}: hand 1 of {path} has seats 0-1\n"
    code, out = _cli(["replay", str(path), "--all", "--view", "1"], capsys)  # the twin: a real seat
    assert code == 0 and "Replay matches the record" in " ".join(out.split())
