"""``canasta import`` / ``canasta export`` on awkward inputs: an imported run resumes as the import
says it does (or the import says why it cannot), an empty RUN_DIR or OUT is refused in one line,
and ``export --format sb3`` builds the network from meta.json's checked policy description, never
from its free-form config (a tampered config is ignored or refused in one line, never a traceback)."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agents import make_agent
from train.learning import interop
from train.learning.config import TrainArgs

Cli = Callable[..., tuple[int, str]]
TINY_RESUME = ("--total-timesteps", "256", "--num-envs", "8", "--n-steps", "16", "--batch-size", "64",
               "--eval-deals", "2", "--progress", "false")


def _save_model(path: Path, net_arch: Any, activation_fn: Any = None, **kwargs: Any) -> Path:
    """A fresh MaskablePPO for classic_2p with ``net_arch`` (and ``activation_fn``), saved to ``path``."""
    from sb3_contrib import MaskablePPO

    from canasta_env.envs.sb3_env import CanastaVecEnv
    from canasta_env.rules import load_rules

    policy = {"activation_fn": activation_fn} if activation_fn is not None else {}
    model = MaskablePPO("MlpPolicy", CanastaVecEnv(1, load_rules("classic_2p")), n_steps=64, batch_size=32,
                        policy_kwargs={"net_arch": net_arch, **policy}, device="cpu", seed=0, **kwargs)
    model.save(path)
    return path


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _save_model(tmp_path_factory.mktemp("zip") / "tiny.zip", [16], learning_rate=1e-3)


@pytest.fixture(scope="module")
def tiny_run(tiny: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model imported: a run directory holding one checkpoint."""
    run = tmp_path_factory.mktemp("imported") / "run"
    interop.import_sb3(tiny, run, "classic_2p", trust=True)
    return run


def _observations() -> tuple[np.ndarray, np.ndarray]:
    from canasta_env.envs.learner import LearnerBatch, LearnerConfig

    batch = LearnerBatch(LearnerConfig(rules="classic_2p", opponent="random"), 32)
    batch.reset(np.arange(32))
    masks = batch.action_masks()
    live = masks.any(axis=1)
    return batch.observations()[live], masks[live]


def test_imported_run_resumes_with_and_without_config_json(tiny: Path, tmp_path: Path, cli_here: Cli) -> None:
    run = tmp_path / "run"
    status, err = cli_here("import", str(tiny), str(run), "--rules", "classic_2p", "--trust")
    assert status == 0, err
    config = json.loads((run / "config.json").read_text())
    assert config["net_arch"] == [16] and config["learning_rate"] == 1e-3 and config["rules"] == "classic_2p"
    meta = json.loads((run / "ckpt_000000000" / "meta.json").read_text())
    assert set(meta["config"]) <= {f.name for f in dataclasses.fields(TrainArgs)}
    assert meta["imported_from"] == str(tiny)
    (run / "config.json").unlink()  # the resume then takes its options from meta.json
    status, err = cli_here("train", "--run-dir", str(run), "--resume", *TINY_RESUME)
    assert status == 0, err
    assert "config.json is missing" in err and (run / "ckpt_000000256").is_dir()
    status, err = cli_here("train", "--run-dir", str(run), "--resume", *TINY_RESUME[2:],
                           "--total-timesteps", "512")
    assert status == 0, err
    assert (run / "ckpt_000000512").is_dir()


def test_split_network_imports_exports_and_says_it_cannot_resume(tmp_path: Path) -> None:
    from sb3_contrib import MaskablePPO

    zip_path = _save_model(tmp_path / "split.zip", {"pi": [16], "vf": [32]})
    run = tmp_path / "run"
    ckpt, problem = interop.import_sb3(zip_path, run, "classic_2p", trust=True)
    assert problem is not None and "policy and value networks differ" in problem
    assert not (run / "config.json").exists() and ckpt.is_dir()
    obs, masks = _observations()
    reference = make_agent(str(run), "classic_2p").act(obs, masks, None)
    out = interop.export_sb3(str(run), tmp_path / "again.zip")
    actions, _ = MaskablePPO.load(out, device="cpu").predict(obs, action_masks=masks, deterministic=True)
    assert np.array_equal(actions, reference)
    assert interop.export_onnx(str(run), tmp_path / "split.onnx").is_file()


def test_relu_model_is_not_advertised_as_resumable(tmp_path: Path) -> None:
    import torch

    zip_path = _save_model(tmp_path / "relu.zip", [16], activation_fn=torch.nn.ReLU)
    _, problem = interop.import_sb3(zip_path, tmp_path / "run", "classic_2p", trust=True)
    assert problem is not None and "ReLU" in problem and "Tanh" in problem


def test_a_resume_of_another_network_is_refused_even_when_the_weights_fit(tmp_path: Path,
                                                                          cli_here: Cli) -> None:
    import torch

    zip_path = _save_model(tmp_path / "relu.zip", [16], activation_fn=torch.nn.ReLU)
    run = tmp_path / "run"
    interop.import_sb3(zip_path, run, "classic_2p", trust=True)
    status, err = cli_here("train", "--run-dir", str(run), "--resume", *TINY_RESUME, "--net-arch", "16")
    assert status == 2 and "activation_fn" in err and "ReLU" in err and "another network" in err, err
    assert not (run / "ckpt_000000256").exists()


def test_empty_run_dir_and_out_are_refused(tiny: Path, tiny_run: Path, tmp_path: Path, cli_here: Cli,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    for blank in ("", "  "):
        status, err = cli_here("import", str(tiny), blank, "--rules", "classic_2p", "--trust")
        assert status == 2 and "RUN_DIR" in err and "not a folder name" in err
        assert len(err.strip().splitlines()) == 1
        for fmt in ("onnx", "sb3"):
            status, err = cli_here("export", str(tiny_run), blank, "--format", fmt)
            assert status == 2 and "OUT" in err and "not a file name" in err
            assert len(err.strip().splitlines()) == 1
    status, err = cli_here("export", str(tiny_run), str(here), "--format", "onnx", "--force")
    assert status == 2 and "is a folder" in err
    assert os.listdir(here) == []


def test_import_into_a_run_is_refused_without_offering_resume(tiny: Path, tiny_run: Path,
                                                               cli_here: Cli) -> None:
    before = sorted(p.name for p in tiny_run.rglob("*"))
    status, err = cli_here("import", str(tiny), str(tiny_run), "--rules", "classic_2p", "--trust")
    assert status == 2 and "already holds a run" in err and "choose another folder" in err
    assert "--resume" not in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tiny_run.rglob("*")) == before


def test_onnx_export_into_a_missing_folder_is_refused_before_the_load(
        tiny_run: Path, tmp_path: Path, cli_here: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_load(*args: Any) -> None:
        raise AssertionError("the checkpoint was loaded before OUT was checked")

    monkeypatch.setattr(interop, "_load", no_load)
    monkeypatch.chdir(tmp_path)
    status, err = cli_here("export", str(tiny_run), "missing/policy.onnx", "--format", "onnx")
    assert status == 2 and err.strip().endswith(
        "error: OUT 'missing/policy.onnx': no folder missing to write it in")
    assert not (tmp_path / "missing").exists()  # before: a one-line torch error without OUT, after the load


def test_onnx_export_into_a_folder_that_exists_writes(tiny_run: Path, tmp_path: Path, cli_here: Cli) -> None:
    status, err = cli_here("export", str(tiny_run), str(tmp_path / "policy.onnx"), "--format", "onnx")
    assert status == 0 and (tmp_path / "policy.onnx").is_file()  # the twin


@pytest.fixture
def tampered(tiny_run: Path, tmp_path: Path) -> Callable[..., Path]:
    """``tampered(key=value, ...)``: a copy of the tiny checkpoint whose meta.json config has these
    values (``config=...`` replaces the whole config)."""
    source = next(tiny_run.glob("ckpt_*"))

    def make(**changes: Any) -> Path:
        ckpt = tmp_path / f"ckpt_{len(list(tmp_path.iterdir()))}"
        shutil.copytree(source, ckpt)
        meta = json.loads((ckpt / "meta.json").read_text())
        meta["config"] = changes.pop("config") if "config" in changes else {**meta["config"], **changes}
        (ckpt / "meta.json").write_text(json.dumps(meta))
        return ckpt

    return make


@pytest.mark.parametrize("net_arch", ["abc", [-5], None, [64, 64], [4096] * 8])
def test_export_sb3_builds_the_checked_network_whatever_config_net_arch_says(
        net_arch: Any, tampered: Callable[..., Path], tmp_path: Path) -> None:
    from sb3_contrib import MaskablePPO

    out = interop.export_sb3(str(tampered(net_arch=net_arch)), tmp_path / "model.zip")
    model = MaskablePPO.load(out, device="cpu")
    assert model.policy.net_arch == [16]
    assert sum(p.numel() for p in model.policy.parameters()) < 10_000


@pytest.mark.parametrize(("changes", "expected"), [
    ({"gamma": "x"}, "config.gamma 'x' is not a number in [0, 1]"),
    ({"gamma": math.nan}, "config.gamma nan is not a number in [0, 1]"),
    ({"gamma": 1.5}, "config.gamma 1.5 is not a number in [0, 1]"),
    ({"gamma": True}, "config.gamma True is not a number in [0, 1]"),
    ({"config": [1]}, "config [1] is not a mapping of training options"),
])
def test_export_sb3_refuses_a_bad_gamma_or_config_in_one_line(changes: dict[str, Any], expected: str,
                                                              tampered: Callable[..., Path], tmp_path: Path,
                                                              cli_here: Cli) -> None:
    ckpt = tampered(**changes)
    status, err = cli_here("export", str(ckpt), str(tmp_path / "model.zip"), "--format", "sb3")
    assert status == 2 and f"{ckpt / 'meta.json'}: {expected}" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "model.zip").exists()
