"""scripts/continue_config.py: a checkpoint's run options as a config that starts from it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from agents.learned.zoo import ZOO_DIR
from scripts.continue_config import main
from train.learning.config import check_given, load_args


def test_a_zoo_entry_continues_with_its_league_and_settings(tmp_path: Path) -> None:
    out = tmp_path / "c4p.yaml"
    assert main(["zoo:classic_4p", "--run-dir", str(tmp_path / "run"), "--out", str(out)]) == 0
    args = load_args(str(out), {})
    stored = json.loads((ZOO_DIR / "classic_4p" / "meta.json").read_text())["config"]
    assert args.init_from == "zoo:classic_4p" and args.run_dir == str(tmp_path / "run")
    assert args.league == stored["league"] and args.exploiter_also == stored["exploiter_also"]
    assert (args.algo, args.learning_rate, args.reward_mode) == (stored["algo"], stored["learning_rate"],
                                                                 stored["reward_mode"])


def test_what_is_no_checkpoint_or_no_folder_name_is_one_line(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path), "--run-dir", "runs/x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("continue_config: error: ") and "nor a run directory" in err
    assert err.count("\n") == 1
    assert main(["zoo:classic_4p", "--run-dir", " "]) == 2
    assert "--run-dir ' ': not a folder name" in capsys.readouterr().err


def test_options_the_run_ignored_are_left_out_so_the_league_takes_the_config(tmp_path: Path) -> None:
    """Was: a run resumed from rule-space exploiters to PPO ones kept ``exploiter_budget`` in its
    options, and the config written for it was refused by ``canasta league`` (no effect without
    rule rounds)."""
    ckpt = tmp_path / "ckpt"
    shutil.copytree(ZOO_DIR / "classic_4p", ckpt)
    meta = json.loads((ckpt / "meta.json").read_text())
    meta["config"].update(exploiter_family="ppo", exploiter_every=3000000, exploiter_budget=120)
    (ckpt / "meta.json").write_text(json.dumps(meta))
    out = tmp_path / "c.yaml"
    assert main([str(ckpt), "--run-dir", str(tmp_path / "run"), "--out", str(out)]) == 0
    given = set(yaml.safe_load(out.read_text()))
    assert "exploiter_budget" not in given and "exploiter_steps" in given
    args = load_args(str(out), {})
    check_given(args, str(out), given, set(), pool=True)  # as canasta league checks its --config
    assert (args.exploiter_family, args.exploiter_every) == ("ppo", 3000000)
