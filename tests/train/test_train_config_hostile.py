"""Training options a user gets wrong: each is refused in one line naming the option, before the run
folder is written; the valid neighbour of each (its twin) still loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from train.cli.main import main as cli_main
from train.learning.config import load_args

TINY = ["--num-envs", "8", "--n-steps", "16", "--batch-size", "64", "--eval-deals", "2",
        "--total-timesteps", "16", "--progress", "false"]


def test_a_seed_numpy_cannot_take_is_refused_before_the_run_folder_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    assert cli_main(["train", *TINY, "--run-dir", str(run), "--seed", str(2**32)]) == 2
    err = capsys.readouterr().err
    assert "training option 'seed' = 4294967296 is outside [0, 4294967295]" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (run / "config.json").exists(), "a refused run leaves no half-started run behind"
    assert load_args(None, {"seed": 2**32 - 1}).seed == 2**32 - 1  # the twin: the largest seed


@pytest.mark.parametrize("name", ["run_dir", "eval_deal_set", "imitate", "imitate_opponent", "ray",
                                  "init_from"])
def test_an_empty_optional_option_is_refused_not_read_as_a_path_or_a_default(name: str) -> None:
    # init_from '' was the working directory, ray '' a local Ray cluster
    with pytest.raises(ValueError, match=rf"^x\.yaml: training option '{name}' is empty"):
        load_args(None, {name: ""}, source="x.yaml")
    assert getattr(load_args(None, {name: None}), name) is None  # the twin: null is "none"


@pytest.mark.parametrize(("name", "text", "spelled", "value"), [
    ("learning_rate", "3e-4", "0.0003", 3e-4), ("learning_rate", "5e-5", "5.0e-05", 5e-5),
    ("max_grad_norm", "1e6", "1000000.0", 1e6)])
def test_a_float_yaml_reads_as_text_says_how_to_write_it(tmp_path: Path, name: str, text: str, spelled: str,
                                                         value: float) -> None:
    config = tmp_path / "train.yaml"
    config.write_text(f"{name}: {text}\n")
    with pytest.raises(ValueError, match=rf"YAML reads {text} as text; write {spelled}\)$"):
        load_args(str(config), {})
    config.write_text(f"{name}: {spelled}\n")  # the twin: the spelling it suggests loads
    assert getattr(load_args(str(config), {}), name) == value


def test_a_quoted_float_says_to_drop_the_quotes(tmp_path: Path) -> None:
    config = tmp_path / "train.yaml"
    config.write_text('learning_rate: "0.0003"\n')  # "write 0.0003" named what was written
    with pytest.raises(ValueError, match=r"it is text in quotes; write 0.0003 without them\)$"):
        load_args(str(config), {})


def test_league_exploiters_without_exploiter_rounds_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from canasta_env.rules import load_rules
    from train.learning.setup import resolve

    run = tmp_path / "run"
    assert cli_main(["league", *TINY, "--run-dir", str(run), "--league-exploiters", "true"]) == 2
    err = capsys.readouterr().err
    assert "league_exploiters" in err and "exploiter_every" in err and err.count("\n") == 1
    assert not (run / "config.json").exists()
    # the twin: with exploiter rounds it is a valid league
    args = load_args(None, {**_small(), "league_exploiters": True, "exploiter_every": 64,
                            "league": ["greedy"]})
    assert resolve(args, load_rules(args.rules), run, selfplay=True).pool is not None


def _small() -> dict[str, object]:
    return {"num_envs": 8, "n_steps": 16, "batch_size": 64, "eval_deals": 2}


CONFIGS = Path(__file__).parents[2] / "configs"
SHIPPED = sorted([*(CONFIGS / "train").glob("*.yaml"), *(CONFIGS / "selfplay").glob("*.yaml")])


def test_the_shipped_configs_are_found() -> None:
    assert {"mmd_classic_2p.yaml", "mmd_rules_railroad_2p.yaml"} <= {p.name for p in SHIPPED}


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_shipped_training_config_loads(path: Path) -> None:
    # its twin, a file with a misspelled option refused: test_train.py::test_unknown_config_key_is_refused
    args = load_args(str(path), {})
    assert args.rules and args.total_timesteps > 0
