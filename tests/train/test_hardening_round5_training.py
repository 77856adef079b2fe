"""Training options a user gets wrong, round five: each is refused in one line before a run folder is
written, or no longer fails a run after its work; the valid neighbour of each (its twin) still works."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest

from train.cli.main import main as cli_main
from train.learning.config import TrainArgs, check_args, load_args

SMALL = {"num_envs": 8, "n_steps": 16, "batch_size": 64, "eval_deals": 2, "progress": False}


def _one_line_error(capsys: pytest.CaptureFixture[str], text: str) -> None:
    err = capsys.readouterr().err
    assert text in err, err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_train_checks_a_trainargs_built_in_code_before_writing(tmp_path: Path) -> None:
    # canasta exploit and the exploiter league build TrainArgs in code: num_envs 0 used to fail in the
    # engine after config.json was written
    from train.learning.trainer import train

    run = tmp_path / "run"
    with pytest.raises(ValueError, match=r"training option 'num_envs' = 0 is outside"):
        train(TrainArgs(**{**SMALL, "num_envs": 0}, run_dir=str(run)))
    with pytest.raises(ValueError, match=r"training option 'reward_mode' = 'bogus' is not one of"):
        train(TrainArgs(**SMALL, reward_mode="bogus", run_dir=str(run)))
    assert not run.exists(), "a refused start leaves no run folder"
    check_args(TrainArgs(**SMALL))  # the twin: valid options pass


@pytest.mark.parametrize(("flags", "message"), [
    (["--num-envs", "0"], "--num-envs 0 is outside [1, 1048576]"),
    (["--seed", "-1"], "--seed -1 is outside [0, 4294967295] for --family ppo"),
    (["--family", "heuristic", "--seed", "-1"],
     "--seed -1 is outside [0, 4294967294] for --family heuristic"),
    (["--init-from", ""], "training option init_from = '' is empty"),
])
def test_exploit_refuses_a_bad_option_before_any_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        flags: list[str], message: str) -> None:
    # --seed -1 with --family heuristic seeded CMA-ES from the clock (cma reads seed + 1 = 0 so) while the
    # printed command claimed to reproduce it; the others wrote config.json, then failed
    run = tmp_path / "run"
    assert cli_main(["exploit", "random", "--budget", "64", "--deals", "1", "--run-dir", str(run),
                     "--no-progress", *flags]) == 2
    _one_line_error(capsys, message)
    assert not run.exists()


def test_heuristic_exploit_at_the_top_seed_reproduces(tmp_path: Path) -> None:
    # the twin of --seed -1: the largest seed the search takes runs, and runs the same twice
    specs = []
    for name in ("a", "b"):
        assert cli_main(["exploit", "random", "--family", "heuristic", "--budget", "14", "--deals", "1",
                         "--fresh-deals", "1", "--seed", str(2**32 - 2), "--run-dir", str(tmp_path / name),
                         "--no-progress"]) == 0
        specs.append(json.loads((tmp_path / name / "exploit.json").read_text())["spec"])
    assert specs[0] == specs[1]


def test_a_ppo_exploiter_budget_at_the_cap_is_not_refused(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    # with train() checking its options, eval_every = budget + 1 must stay in range at the largest budget
    from train.learning import trainer
    from train.learning.exploit import train_exploiter

    seen: list[TrainArgs] = []

    def fake_train(args: TrainArgs, **_: Any) -> Path:
        check_args(args)
        seen.append(args)
        return tmp_path

    monkeypatch.setattr(trainer, "train", fake_train)
    for budget in (10**12, 64):
        train_exploiter("random", "classic_2p", budget, tmp_path / "x", league=["greedy"])
    assert seen[0].eval_every == 10**12 and seen[1].eval_every == 65 == seen[1].snapshot_every


def test_an_exploiter_league_at_the_top_seed_goes_past_its_first_round(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the round's search was seeded with seed + steps, beyond numpy's 32 bits: the run failed after its
    # first round, and again on every --resume
    run = tmp_path / "run"
    assert cli_main(["league", "--num-envs", "8", "--n-steps", "16", "--batch-size", "64",
                     "--eval-deals", "2", "--progress", "false", "--total-timesteps", "256",
                     "--run-dir", str(run),
                     "--seed", str(2**32 - 1), "--exploiter-every", "128", "--exploiter-family", "heuristic",
                     "--exploiter-budget", "3", "--exploiter-deals", "1"]) == 0
    assert (run / "ckpt_000000256").is_dir() and list((run / "exploiters").glob("rules_*.json"))
    # the twin: a seed that fits is the run's seed plus the steps, as before
    from train.learning.exploiter_league import _round_seed

    args = TrainArgs(seed=5)
    assert _round_seed(args, 128) == 133
    assert 0 <= _round_seed(dataclasses.replace(args, seed=2**32 - 1), 128) <= 2**32 - 2


@pytest.mark.parametrize("batch_size", [1, 127])
def test_maskable_ppo_refuses_a_one_row_minibatch(batch_size: int) -> None:
    # sb3-contrib normalises each minibatch's advantages: one row is NaN, the weights become NaN and the
    # run failed mid-way with a tensor dump
    with pytest.raises(ValueError, match=rf"batch_size = {batch_size} leaves a minibatch of one row of the "
                                         r"128-step rollout"):
        load_args(None, {**SMALL, "algo": "maskable_ppo", "batch_size": batch_size})
    # the twins: another batch size, or the lean trainer (which skips normalising one row)
    assert load_args(None, {**SMALL, "algo": "maskable_ppo", "batch_size": 126}).batch_size == 126
    assert load_args(None, {**SMALL, "batch_size": batch_size}).batch_size == batch_size


def test_init_from_blank_is_refused_not_read_as_the_working_directory(tmp_path: Path) -> None:
    from train.learning.setup import init_path

    with pytest.raises(ValueError, match=r"init_from = ' ' is empty"):
        init_path(" ")
    assert init_path(str(tmp_path)) == tmp_path  # the twin: a folder that exists


@pytest.mark.parametrize("bad", [{"lr": math.inf}, {"iterations": 2.5}, {"seed": -1}, {"episodes": True}])
def test_kuhn_selfplay_refuses_a_bad_config_before_training(bad: dict[str, Any]) -> None:
    # lr inf trained one iteration into NaN and failed as "rows must be probability distributions"
    from train.learning.kuhn import SelfPlayConfig, selfplay

    with pytest.raises(ValueError, match=next(iter(bad))):
        SelfPlayConfig(**bad)
    # the twin: a huge finite lr and an infinite clip (no clipping) still run
    result = selfplay(SelfPlayConfig(iterations=2, episodes=16, lr=1e30, clip=math.inf))
    assert len(result.exploitability) == 3


def test_mmd_config_refuses_a_bool_weight() -> None:
    from train.learning.mmd import MMDConfig

    for bad in ({"magnet_coef": True}, {"magnet_step": True}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            MMDConfig(**bad)
    assert MMDConfig(magnet_coef=1, magnet_step=1).enabled  # the twin: the integer 1


@pytest.mark.parametrize("command", ["train", "exploit"])
def test_init_from_that_is_not_a_checkpoint_names_the_option(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    # the error named only the folder (or meta.json), not the option that pointed there
    empty = tmp_path / "empty"
    empty.mkdir()
    run = tmp_path / "run"
    flags = (["exploit", "random", "--budget", "64", "--deals", "1", "--no-progress"] if command == "exploit"
             else ["train", "--total-timesteps", "128", "--eval-deals", "2", "--progress", "false"])
    assert cli_main([*flags, "--num-envs", "8", "--run-dir", str(run), "--init-from", str(empty)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"canasta {command}: error: training option init_from = '"), err
    assert f"{empty}: neither a checkpoint" in err and err.count("\n") == 1
    assert not run.exists()


def test_init_from_for_other_rules_names_the_option() -> None:
    from canasta_env.rules import load_rules
    from train.learning.setup import load_init, stored_net_arch

    arch = stored_net_arch("zoo:classic_2p")
    assert arch is not None
    with pytest.raises(ValueError, match=r"^training option init_from = 'zoo:classic_4p': .*meta\.json: "
                                         r"rules mismatch"):
        load_init(TrainArgs(init_from="zoo:classic_4p", net_arch=arch), load_rules("classic_2p"))
    # the twin: the checkpoint for these rules loads
    assert load_init(TrainArgs(init_from="zoo:classic_2p", net_arch=arch),
                     load_rules("classic_2p")) is not None


def _exploit_reaches(monkeypatch: pytest.MonkeyPatch, flags: list[str]) -> dict[str, Any]:
    """What ``canasta exploit random FLAGS`` would search or train with, the work itself left out."""
    from train.cli import exploit

    seen: dict[str, Any] = {}

    def search(o: Any) -> int:
        seen.update(dataclasses.asdict(o))
        return 0

    def train(*_: Any, **kwargs: Any) -> Path:
        seen.update(kwargs)
        raise ValueError("stopped before training")

    monkeypatch.setattr(exploit, "run_rule_search", search)
    monkeypatch.setattr(exploit, "train_exploiter", train)
    cli_main(["exploit", "random", "--budget", "64", "--deals", "1", "--no-progress", *flags])
    return seen


def test_heuristic_exploit_refuses_num_envs(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # --num-envs applies to a PPO exploiter only: the rule search ignored it, even a typed 256
    run = str(tmp_path / "run")
    for typed in ("256", "8"):
        assert _exploit_reaches(monkeypatch, ["--family", "heuristic", "--num-envs", typed,
                                              "--run-dir", run]) == {}
        _one_line_error(capsys, "--num-envs is for a PPO exploiter, not --family heuristic")
    # the twins: the rule search without it; a PPO exploiter with it, or its default 256
    assert _exploit_reaches(monkeypatch, ["--family", "heuristic", "--run-dir", run])["num_envs"] is None
    assert _exploit_reaches(monkeypatch, ["--num-envs", "8", "--run-dir", run])["num_envs"] == 8
    assert _exploit_reaches(monkeypatch, ["--run-dir", run])["num_envs"] == 256


def test_heuristic_exploit_refuses_an_agent_twice_in_also(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # the search played each profile against greedy twice for nothing, and the report listed it twice
    run = str(tmp_path / "run")
    assert _exploit_reaches(monkeypatch, ["--family", "heuristic", "--also", "greedy", "heuristic", "greedy",
                                          "--run-dir", run]) == {}
    _one_line_error(capsys, "--also names 'greedy' twice")
    # the twin: distinct agents
    assert _exploit_reaches(monkeypatch, ["--family", "heuristic", "--also", "greedy", "heuristic",
                                          "--run-dir", run])["also"] == ["greedy", "heuristic"]


def test_heuristic_exploit_refuses_the_exploited_agent_in_also(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # the search plays every profile against the agent already: naming it in --also played it twice
    run = str(tmp_path / "run")
    assert _exploit_reaches(monkeypatch, ["--family", "heuristic", "--also", "heuristic", "random",
                                          "--run-dir", run]) == {}
    _one_line_error(capsys, "--also names 'random', the agent being exploited")
    # the twin: other agents only
    assert _exploit_reaches(monkeypatch, ["--family", "heuristic", "--also", "heuristic",
                                          "--run-dir", run])["also"] == ["heuristic"]


def test_league_refuses_an_agent_twice_in_exploiter_also(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    from canasta_env.rules import load_rules
    from train.learning.setup import resolve

    run = tmp_path / "run"
    base = ["league", "--num-envs", "8", "--n-steps", "16", "--batch-size", "64", "--eval-deals", "2",
            "--progress", "false", "--total-timesteps", "128", "--run-dir", str(run), "--exploiter-every",
            "64", "--exploiter-family", "heuristic", "--exploiter-also"]
    assert cli_main([*base, "greedy", "heuristic", "greedy"]) == 2
    _one_line_error(capsys, "training option 'exploiter_also' names 'greedy' twice")
    assert not run.exists()
    # the twin: distinct agents pass the same check
    args = TrainArgs(**SMALL, exploiter_every=64, exploiter_family="heuristic",
                     exploiter_also=["greedy", "heuristic"])
    assert resolve(args, load_rules("classic_2p"), run, selfplay=True).args is args
