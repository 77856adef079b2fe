"""Hostile and careless inputs found by an audit of the entry points: each is refused with a clear
one-line error (or asked again, in ``canasta play``), never a traceback, a dead end, a silent wrong
answer or a lost or overwritten file."""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from train.cli.main import main as cli_main

TOURNAMENT = ["tournament", "--agents", "random", "greedy", "--hands", "2", "--no-plots"]


def _error(capsys: pytest.CaptureFixture[str], command: str) -> str:
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in out + err
    assert len(lines) == 1 and lines[0].startswith(f"canasta {command}: error: "), err[-1000:]
    return lines[0]


# ---- canasta play: typed moves and the --record file ------------------------------------------------
@pytest.mark.parametrize("text", ["+-5", "-+1", "²", "٣٣", "9" * 5000, "1" * 30])
def test_odd_numbers_typed_in_play_are_explained_not_fatal(text: str) -> None:
    from train.play.terminal import parse_move

    action, message = parse_move(text, [0, 1, 2])  # int() of these raised ValueError: game over
    assert action is None and message and "\n" not in message and len(message) < 200


def test_plain_move_numbers_still_work() -> None:  # the twin of the refusals above
    from train.play.terminal import parse_move

    assert parse_move(" 2 ", [7, 8, 9]) == (8, "")
    assert parse_move("+3", [7, 8, 9]) == (9, "")


def test_a_record_file_in_a_missing_folder_is_refused_before_a_hand_is_played(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "no_such_folder" / "games.jsonl"
    status = cli_main(["play", "--seed", "1", "--hands", "1", "--record", str(target)])
    assert status == 2
    assert "--record" in _error(capsys, "play")  # before: a whole hand played, then lost on saving


def test_a_record_file_that_is_not_records_is_left_alone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# my notes\n\nnothing to append here\n")
    before = notes.read_bytes()
    assert cli_main(["play", "--seed", "1", "--hands", "1", "--record", str(notes)]) == 2
    assert "holds something other than hand records" in _error(capsys, "play")
    assert notes.read_bytes() == before


def test_a_record_file_of_records_is_still_appended_to(tmp_path: Path) -> None:  # the twin
    from train.cli.play import check_record_file

    records = tmp_path / "games.jsonl"
    check_record_file(records)  # created, empty
    assert records.is_file() and records.stat().st_size == 0
    check_record_file(records)  # an empty file is fine too


# ---- rules ------------------------------------------------------------------------------------------
def test_max_wilds_0_is_refused_rather_than_a_dead_end() -> None:
    from canasta_env.rules import RulesError, load_rules

    # before: random play of classic_2p with max_wilds 0 reached a live state with no legal action
    with pytest.raises(RulesError, match=r"option 'max_wilds' = 0 is invalid: expected an integer in "
                                         r"\[1, 7\]"):
        load_rules({"num_players": 2, "max_wilds": 0})
    assert load_rules({"num_players": 2, "max_wilds": 1}).max_wilds == 1


# ---- deal sets --------------------------------------------------------------------------------------
def _npz(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def good_deal_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from canasta_env.deal_sets import make_deal_set, save_deal_set

    path = tmp_path_factory.mktemp("deals") / "good.npz"
    save_deal_set(make_deal_set("classic_2p", 3, 0), path)
    return path


def _hostile_deal_sets(good: Path, d: Path) -> list[Path]:
    from numpy.lib import format as npy_format

    with np.load(good) as data:
        orders, dealers, meta = data["orders"], data["dealers"], data["meta"]
    huge = io.BytesIO()  # a header claiming 100 TiB, followed by 100 bytes
    npy_format.write_array_header_1_0(huge, {"descr": "|i1", "fortran_order": False,
                                             "shape": (10**12, 108)})
    truncated = d / "truncated.npz"
    truncated.write_bytes(good.read_bytes()[:300])
    return [
        truncated,
        _npz(d / "huge_header.npz", {"orders.npy": huge.getvalue() + b"\0" * 100,
                                     "dealers.npy": _npy(dealers), "meta.npy": _npy(meta)}),
        _npz(d / "deep_meta.npz", {"orders.npy": _npy(orders), "dealers.npy": _npy(dealers),
                                   "meta.npy": _npy(np.array("[" * 100_000 + "]" * 100_000))}),
    ]


def test_damaged_deal_set_files_are_value_errors_naming_the_file(good_deal_set: Path,
                                                                 tmp_path: Path) -> None:
    from canasta_env.deal_sets import load_deal_set

    for path in _hostile_deal_sets(good_deal_set, tmp_path):
        # before: BadZipFile, MemoryError and RecursionError tracebacks
        with pytest.raises(ValueError, match=rf"^deal set {path}: not a readable deal set file"):
            load_deal_set(path, "classic_2p")
    assert len(load_deal_set(good_deal_set, "classic_2p")) == 3  # the twin


def test_canasta_tournament_of_a_truncated_deal_set_is_one_line(
        good_deal_set: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cut = tmp_path / "cut.npz"
    cut.write_bytes(good_deal_set.read_bytes()[:300])
    assert cli_main([*TOURNAMENT, "--deal-set", str(cut)]) == 2
    assert str(cut) in _error(capsys, "tournament")


# ---- tournament --out folders -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tournament") / "out"
    assert cli_main([*TOURNAMENT, "--records", "--out", str(out)]) == 0
    return out


def test_a_folder_of_other_results_is_not_overwritten(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / "results.json"
    mine.write_text('{"my": "results"}')
    assert cli_main([*TOURNAMENT, "--out", str(tmp_path)]) == 2  # before: replaced, status 0
    assert "holds results.json but no tournament.json" in _error(capsys, "tournament")
    assert mine.read_text() == '{"my": "results"}'
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != ".lock") == ["results.json"]


@pytest.mark.parametrize("name, content, match", [
    ("tournament.json", b"[1, 2]\n", "not a tournament's settings"),
    ("tournament.json", b"[" * 100_000 + b"]" * 100_000, "not valid JSON"),
    ("tournament.json", b"\xff\xfe{}", "not valid JSON"),
    ("hands.csv", b"\xbb\x00\xff garbage", "hands.csv: not UTF-8 text"),
])
def test_damaged_tournament_files_are_one_line_errors(
        finished: Path, tmp_path: Path, name: str, content: bytes, match: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    shutil.copytree(finished, out)
    (out / name).write_bytes(content)
    assert cli_main([*TOURNAMENT, "--records", "--out", str(out)]) == 2  # before: tracebacks
    assert match in _error(capsys, "tournament")


def test_records_lines_that_are_not_objects_do_not_stop_a_resume(finished: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(finished, out)
    hands = (out / "hands.csv").read_text().splitlines(keepends=True)
    (out / "hands.csv").write_text(hands[0])  # no unit done: the records are checked and dropped
    with (out / "records.jsonl").open("a") as f:
        f.write('[1]\n{"meta": [1]}\n{"meta": {"tournament_match": [1]}}\n')
    assert cli_main([*TOURNAMENT, "--records", "--out", str(out)]) == 0  # before: AttributeError
    lines = (out / "records.jsonl").read_text().splitlines()
    assert len(lines) == 2 and all(json.loads(line)["format"] == "canasta-hand-record" for line in lines)


# ---- replay -----------------------------------------------------------------------------------------
def test_a_view_of_unicode_digits_names_the_flag(finished: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["replay", str(finished / "records.jsonl"), "--view", "²", "--all"]) == 2
    assert "--view must be 'omniscient' or a seat number" in _error(capsys, "replay")


# ---- the Python API ---------------------------------------------------------------------------------
@pytest.mark.parametrize("options, match", [
    ({"reward_scale": float("nan")}, "reward_scale must be a finite positive number"),
    ({"reward_scale": float("inf")}, "reward_scale must be a finite positive number"),
    ({"reward_scale": -1.0}, "reward_scale must be a finite positive number"),  # rewarded losing
    ({"reward_scale": 0}, "reward_scale must be a finite positive number"),
    ({"reward_scale": "0.01"}, "reward_scale must be a finite positive number"),
    ({"shaping": float("nan")}, "shaping must be a finite number"),
    ({"shaping": "x"}, "shaping must be a finite number"),  # failed only at the first step
    ({"illegal_reward": float("nan")}, "illegal_reward must be a finite number"),
    ({"skip_forced": "no"}, "skip_forced must be True or False"),  # read as True
    ({"opponent": None}, "opponent must be an agent name or an object with act"),
])
def test_learner_options_are_checked_at_construction(options: dict[str, object], match: str) -> None:
    import gymnasium

    from canasta_env.envs.learner import LearnerConfig

    with pytest.raises(ValueError, match=match):
        LearnerConfig(**options)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=match):
        gymnasium.make("canasta_env:Canasta-v0", **options)


def test_good_learner_options_still_work() -> None:  # the twin
    from canasta_env.envs.learner import LearnerConfig

    config = LearnerConfig(reward_scale=1, shaping=-0.5, illegal_reward=-2, skip_forced=False)
    assert (config.reward_scale, config.shaping, config.illegal_reward) == (1.0, -0.5, -2.0)


@pytest.mark.parametrize("scale", [float("nan"), -0.001, 0.0, "x"])
def test_pettingzoo_reward_scale_is_checked(scale: object) -> None:
    import canasta_env

    with pytest.raises(ValueError, match="canasta_v0: reward_scale must be a finite positive number"):
        canasta_env.raw_env("classic_2p", reward_scale=scale)
