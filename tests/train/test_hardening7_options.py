"""Hardening, round seven: the ``canasta`` options and the training configuration. No option may be
abbreviated (``serve --record FILE`` was ``--record-dir``), an option given where the run ignores it
is refused (``magnet_every`` with ``magnet_coef`` 0 trained plain PPO in silence), and a config's
text is refused naming the option (a NUL in ``run_dir``, a float that underflows)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from tests.one_line import one_error
from train.cli.main import build_parser, main
from train.learning.config import TrainArgs, load_args


def _status(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's own errors
        return exc.code if isinstance(exc.code, int) else 1


def _last_error(capsys: pytest.CaptureFixture[str]) -> str:
    """argparse's error line (after its usage lines)."""
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


@pytest.fixture
def trained(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[TrainArgs]:
    """The ``TrainArgs`` each ``canasta train|selfplay|league`` would train with (nothing trains)."""
    import train.learning.exploiter_league as exploiter_league
    import train.learning.trainer as trainer

    seen: list[TrainArgs] = []

    def fake(args: TrainArgs, **_: Any) -> Path:
        seen.append(args)
        return tmp_path / "run"

    monkeypatch.setattr(trainer, "train", fake)
    monkeypatch.setattr(exploiter_league, "train_with_exploiters", fake)
    return seen


# --- abbreviations -------------------------------------------------------------------------------

@pytest.mark.parametrize(("argv", "meant"), [
    (["serve", "--record", "games.jsonl"], "--record-dir"),  # a folder named games.jsonl
    (["play", "--hand", "2"], "--hands"),  # replay's --hand picks a hand; play's --hands plays 2
    (["tournament", "--agents", "random", "greedy", "--record", "r"], "--records"),
    (["train", "--res"], "--resume"),
    (["train", "--v"], "--version or --vf-coef"),  # was: ambiguous option, listing --vf_coef
    (["train", "--total", "5"], "--total-timesteps"),
])
def test_an_abbreviated_option_is_refused_with_the_full_one(
        argv: list[str], meant: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _status(argv) == 2
    line = _last_error(capsys)
    assert line.startswith(f"canasta {argv[0]}: error: unrecognized arguments: "), line
    assert f"(did you mean {meant}?)" in line, line


@pytest.mark.parametrize(("argv", "dest", "value"), [
    (["serve", "--record-dir", "games"], "record_dir", "games"),
    (["serve", "--record_dir", "games"], "record_dir", "games"),  # the hidden underscored alias
    (["play", "--hands", "2"], "hands", 2),
    (["train", "--total-timesteps=5"], "total_timesteps", 5),
    (["--debug", "train", "--vf-coef", "0.25"], "vf_coef", 0.25),
])
def test_the_full_option_still_parses(argv: list[str], dest: str, value: object) -> None:
    assert getattr(build_parser(argv).parse_args(argv), dest) == value


def test_a_top_level_option_is_not_abbreviated_either(capsys: pytest.CaptureFixture[str]) -> None:
    assert _status(["--vers"]) == 2
    assert "unrecognized arguments: --vers" in _last_error(capsys)
    assert _status(["--version"]) == 0


# --- options the run would ignore ----------------------------------------------------------------

def test_magnet_every_without_a_magnet_is_refused(
        trained: list[TrainArgs], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = ["--run-dir", str(tmp_path / "r")]
    assert _status(["selfplay", *run, "--magnet-every", "5"]) == 2  # was: plain PPO, in silence
    line = one_error(capsys, "selfplay")
    assert "--magnet-every 5" in line and "magnet_coef" in line, line
    assert _status(["selfplay", *run, "--magnet-step", "0.5"]) == 2
    assert "magnet_coef" in one_error(capsys, "selfplay") and not trained
    assert _status(["selfplay", *run, "--magnet-coef", "0.05", "--magnet-every", "5"]) == 0
    assert (trained[-1].magnet_coef, trained[-1].magnet_every) == (0.05, 5)


def test_a_config_file_magnet_every_without_magnet_coef_is_refused_naming_the_file(
        trained: list[TrainArgs], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "mmd.yaml"
    config.write_text("magnet_every: 20\nmagnet_step: 1.0\n")
    assert _status(["selfplay", "--config", str(config), "--run-dir", str(tmp_path / "r")]) == 2
    line = one_error(capsys, "selfplay")
    assert str(config) in line and "'magnet_every' = 20" in line and "magnet_coef" in line, line
    # the twin: a flag that switches the file's magnet off is meant, and wins
    config.write_text("algo: mmd\nmagnet_coef: 0.05\nmagnet_every: 20\n")
    argv = ["selfplay", "--config", str(config), "--run-dir", str(tmp_path / "r")]
    assert _status([*argv, "--algo", "ppo", "--magnet-coef", "0"]) == 0
    assert trained[-1].magnet_coef == 0


def test_every_option_written_out_at_its_default_is_not_refused(
        trained: list[TrainArgs], tmp_path: Path) -> None:
    """A run's config.json (every option, those it ignores at their defaults) is a config file."""
    options = {k: v for k, v in dataclasses.asdict(TrainArgs()).items() if v is not None}
    config = tmp_path / "config.json"
    config.write_text(json.dumps(options))
    assert _status(["train", "--config", str(config), "--run-dir", str(tmp_path / "r")]) == 0
    assert trained[-1].magnet_every == 10 and trained[-1].magnet_coef == 0


def test_a_resume_of_an_old_run_keeps_its_stored_options(
        trained: list[TrainArgs], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A run stored before the check (magnet_every 20, no magnet) resumes; a flag that asks for
    the ignored option again is refused."""
    import train.common.run_dir as run_dir

    stored = tmp_path / "r" / "config.json"
    monkeypatch.setattr(run_dir, "resume_config", lambda _: ({"magnet_every": 20}, stored))
    argv = ["train", "--run-dir", str(tmp_path / "r"), "--resume"]
    assert _status(argv) == 0 and trained[-1].magnet_every == 20
    assert _status([*argv, "--magnet-every", "30"]) == 2
    assert "--magnet-every 30" in one_error(capsys, "train")


@pytest.mark.parametrize("start", [["--init-from", "zoo:classic_2p"], ["--imitate", "heuristic"]])
def test_a_resume_given_another_start_than_its_checkpoint_is_refused(
        start: list[str], trained: list[TrainArgs], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Once the run has a checkpoint a resume goes on from it: --init-from or --imitate was ignored."""
    import agents.checkpoint
    import train.common.run_dir as run_dir

    run = tmp_path / "r"
    monkeypatch.setattr(run_dir, "resume_config", lambda _: ({}, run / "config.json"))
    monkeypatch.setattr(agents.checkpoint, "latest_checkpoint", lambda _: run / "ckpt_000000000128")
    argv = ["train", "--run-dir", str(run), "--resume"]
    assert _status([*argv, *start]) == 2
    line = one_error(capsys, "train")
    assert "ckpt_000000000128" in line and f"{start[0][2:].replace('-', '_')} = {start[1]!r}" in line, line
    assert _status(argv) == 0  # the twin: the resume without it goes on
    monkeypatch.setattr(agents.checkpoint, "latest_checkpoint", lambda _: None)
    assert _status([*argv, *start]) == 0  # and before any checkpoint the start still applies


@pytest.mark.parametrize(("argv", "words"), [
    (["train", "--pool-size", "3"], "canasta selfplay or canasta league"),
    (["train", "--pfsp", "true"], "--pfsp true"),
    (["train", "--imitate-steps", "10"], "imitate is not set"),
    (["train", "--num-workers", "4"], "ray is not set"),
    (["league", "--exploiter-family", "heuristic"], "exploiter_every is 0"),
    (["league", "--exploiter-steps", "10"], "exploiter_every"),
    (["league", "--exploiter-every", "100", "--exploiter-budget", "10"], "exploiter_family is 'ppo'"),
    (["league", "--exploiter-every", "100", "--exploiter-family", "heuristic", "--exploiter-init",
      "fresh"], "exploiter_family is 'heuristic'"),
])
def test_an_option_the_run_ignores_is_refused(
        argv: list[str], words: str, trained: list[TrainArgs], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert _status([*argv, "--run-dir", str(tmp_path / "r")]) == 2
    line = one_error(capsys, argv[0])
    assert words in line and "has no effect" in line, line
    assert not trained


@pytest.mark.parametrize("argv", [
    ["selfplay", "--pool-size", "3", "--pfsp", "true"],
    ["train", "--imitate", "heuristic", "--imitate-steps", "10"],
    ["train", "--ray", "local", "--num-workers", "4"],
    ["league", "--exploiter-every", "100", "--exploiter-family", "heuristic", "--exploiter-budget", "10"],
    ["league", "--exploiter-every", "100", "--exploiter-steps", "10", "--exploiter-init", "fresh"],
    ["train", "--snapshot-every", "128"],  # a pace, shared by one list of flags for all three commands
])
def test_the_same_option_where_it_has_an_effect_is_taken(
        argv: list[str], trained: list[TrainArgs], tmp_path: Path) -> None:
    assert _status([*argv, "--run-dir", str(tmp_path / "r")]) == 0 and len(trained) == 1


def test_exploit_fresh_deals_for_a_ppo_exploiter_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import train.cli.exploit as exploit

    def no_training(*_: Any, **__: Any) -> Path:
        raise AssertionError("the exploiter trained")

    monkeypatch.setattr(exploit, "train_exploiter", no_training)
    run = tmp_path / "ex"
    assert _status(["exploit", "greedy", "--fresh-deals", "10", "--run-dir", str(run)]) == 2
    assert "--fresh-deals" in one_error(capsys, "exploit") and not run.exists()  # was: dropped
    searched: list[exploit.ExploitOptions] = []
    monkeypatch.setattr(exploit, "run_rule_search", lambda o: searched.append(o) or 0)
    base = ["exploit", "greedy", "--family", "heuristic", "--run-dir", str(run)]
    assert _status([*base, "--fresh-deals", "10"]) == 0 and _status(base) == 0
    assert [o.fresh_deals for o in searched] == [10, 1000]


# --- a config's text -----------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["run_dir", "eval_deal_set", "rules"])
def test_a_nul_in_a_text_option_is_refused_naming_it(name: str, tmp_path: Path) -> None:
    config = tmp_path / "nul.yaml"
    config.write_text(f'{name}: "a\\x00b"\n')
    with pytest.raises(ValueError) as info:  # run_dir: was "embedded null byte", naming nothing
        load_args(str(config), {})
    assert f"{config}: training option {name!r}" in str(info.value) and "NUL" in str(info.value)
    config.write_text(f"{name}: ab\n")
    assert getattr(load_args(str(config), {}), name) == "ab"


def test_a_float_that_underflows_is_not_told_to_be_written_as_zero(tmp_path: Path) -> None:
    config = tmp_path / "tiny.yaml"
    config.write_text("magnet_coef: 1e-400\n")
    with pytest.raises(ValueError) as info:  # was: "write 0.0", which switches the magnet off
        load_args(str(config), {})
    assert "too close to 0" in str(info.value) and "write 0.0" not in str(info.value)
    config.write_text("magnet_coef: 1e-3\n")
    with pytest.raises(ValueError, match=r"write 0\.001"):
        load_args(str(config), {})


@pytest.mark.parametrize("argv", [
    ["gauntlet", "heuristic", "--opponents", "greedy", "--opponents", "random"],
    ["exploit", "greedy", "--family", "planner", "--also", "heuristic", "--also", "random"],
    ["league", "--league", "heuristic", "--league", "greedy"],
])
def test_a_list_option_given_twice_is_refused_not_cut_to_its_last(
        argv: list[str], trained: list[TrainArgs], capsys: pytest.CaptureFixture[str]) -> None:
    assert _status(argv) == 2  # argparse kept only the last values: the first were dropped in silence
    flag = argv[-2]
    assert _last_error(capsys).endswith(f"{flag} given twice: name all its values after one {flag}")


def test_twin_a_list_option_given_once_takes_all_its_values(trained: list[TrainArgs], tmp_path: Path) -> None:
    assert _status(["league", "--league", "heuristic", "greedy", "--run-dir", str(tmp_path / "r")]) == 0
    assert trained[-1].league == ["heuristic", "greedy"]
