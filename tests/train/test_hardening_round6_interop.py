"""Models in and out on hostile input (round six): ``canasta export`` into a pipe, a device or a
checkpoint's own files, or onto a full disk; ``canasta import`` of bombs, damaged models and counters
no checkpoint may hold; a policy with a features extractor per head; ``average_checkpoints`` across
rules or into a run. Each refusal has a twin showing the valid neighbour still works."""

from __future__ import annotations

import errno
import os
import shutil
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agents import make_agent
from agents.checkpoint import load_checkpoint
from scripts import average_checkpoints
from tests.tiny_checkpoint import save_tiny_checkpoint
from train.learning import interop

Cli = Callable[..., tuple[int, str]]
RULES = "classic_2p"


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny classic_2p checkpoint (net_arch [8, 8]) in a run of its own; tests copy it to damage it."""
    return save_tiny_checkpoint(tmp_path_factory.mktemp("orig") / "run", RULES)


@pytest.fixture(scope="module")
def model_zip(ckpt: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny checkpoint exported as a MaskablePPO zip."""
    return interop.export_sb3(str(ckpt), tmp_path_factory.mktemp("zip") / "model.zip")


def _observations(rules: str = RULES) -> tuple[np.ndarray, np.ndarray]:
    from canasta_env.envs.learner import LearnerBatch, LearnerConfig

    batch = LearnerBatch(LearnerConfig(rules=rules, opponent="random"), 32)
    batch.reset(np.arange(32))
    masks = batch.action_masks()
    live = masks.any(axis=1)
    return batch.observations()[live], masks[live]


def _one_error_line(status: int, err: str) -> str:
    assert status == 2, err
    assert len(err.strip().splitlines()) == 1, err
    return err.strip()


# ---- export: where OUT is ----------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["onnx", "sb3"])
def test_export_into_a_pipe_is_refused_even_with_force(fmt: str, ckpt: Path, tmp_path: Path,
                                                        cli_here: Cli) -> None:
    fifo = tmp_path / ("model.zip" if fmt == "sb3" else "policy.onnx")
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # the old code wrote into it (or hung without one)
    try:
        err = _one_error_line(*cli_here("export", str(ckpt), str(fifo), "--format", fmt, "--force"))
    finally:
        os.close(reader)
    assert "not a regular file (a pipe or device)" in err and fifo.name in err
    regular = tmp_path / f"again.{'zip' if fmt == 'sb3' else 'onnx'}"
    regular.write_bytes(b"old")
    status, err = cli_here("export", str(ckpt), str(regular), "--format", fmt, "--force")
    assert status == 0 and regular.read_bytes() != b"old", err  # the twin: a file --force replaces


@pytest.mark.parametrize("name", ["ckpt_000000064/policy.safetensors", "ckpt_000000064/meta.json", "latest"])
def test_export_never_replaces_a_file_of_the_checkpoint_or_its_run(name: str, ckpt: Path, tmp_path: Path,
                                                                   cli_here: Cli) -> None:
    run = Path(shutil.copytree(ckpt.parent, tmp_path / "run"))
    before = {p.name: p.read_bytes() for p in [run / "latest", *(run / ckpt.name).iterdir()]}
    err = _one_error_line(*cli_here("export", str(run), str(run / name), "--format", "onnx", "--force"))
    assert "a file of the" in err and "name another file" in err
    assert {p.name: p.read_bytes() for p in [run / "latest", *(run / ckpt.name).iterdir()]} == before
    load_checkpoint(run)  # before: policy.safetensors was the ONNX graph, the checkpoint lost
    beside = run / ckpt.name / "policy.onnx"  # the twin: a new file beside the checkpoint's own
    status, err = cli_here("export", str(run), str(beside), "--format", "onnx")
    assert status == 0 and beside.is_file(), err
    load_checkpoint(run)


@pytest.mark.parametrize("fmt", ["onnx", "sb3"])
def test_export_on_a_full_disk_names_out_and_leaves_no_half_file(fmt: str, ckpt: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import torch
    from sb3_contrib import MaskablePPO

    out = tmp_path / ("model.zip" if fmt == "sb3" else "policy.onnx")
    export = interop.export_sb3 if fmt == "sb3" else interop.export_onnx
    assert export(str(ckpt), out).stat().st_size > 1000  # the twin, first
    out.unlink()

    def full(*args: Any, **kwargs: Any) -> None:
        target = args[1] if fmt == "sb3" else args[2]  # (model, path) or (module, example, path)
        Path(target).write_bytes(b"PK\x03\x04 half")
        raise OSError(errno.ENOSPC, "No space left on device")

    if fmt == "sb3":
        monkeypatch.setattr(MaskablePPO, "save", full)
    else:
        monkeypatch.setattr(torch.onnx, "export", full)
    with pytest.raises(ValueError, match=r"OUT .*(model\.zip|policy\.onnx): cannot write it \(No space"):
        export(str(ckpt), out)
    assert os.listdir(tmp_path) == []  # before: a half-written file at OUT, which blocked a retry


# ---- import ------------------------------------------------------------------------------------
def _rewrite(model_zip: Path, out: Path, change: Callable[[Any], None]) -> Path:
    """``model_zip`` loaded, changed by ``change(model)`` and saved as ``out``."""
    from sb3_contrib import MaskablePPO

    model = MaskablePPO.load(model_zip, device="cpu")
    change(model)
    model.save(out)
    return out


def _nan_weight(model: Any) -> None:
    import torch

    with torch.no_grad():
        next(iter(model.policy.parameters()))[0] = float("nan")


def _nan_optimizer(model: Any) -> None:
    import torch

    policy = model.policy
    policy.optimizer.zero_grad()
    policy.predict_values(torch.zeros((2, policy.observation_space.shape[0]))).sum().backward()
    policy.optimizer.step()  # Adam's state, then an infinity in it
    with torch.no_grad():
        next(iter(policy.optimizer.state.values()))["exp_avg"].view(-1)[0] = float("inf")


@pytest.mark.parametrize(("change", "expected"), [
    (_nan_weight, "its weights hold NaN or infinite values"),
    (_nan_optimizer, "its optimizer state holds NaN or infinite values"),
    (lambda m: setattr(m, "num_timesteps", -5), "its num_timesteps -5 is not an integer in [0, "),
    (lambda m: setattr(m, "num_timesteps", 10**12), "its num_timesteps 1000000000000 is not an integer"),
    (lambda m: setattr(m, "_n_updates", -3), "its n_updates -3 is not an integer in [0, "),
])
def test_import_refuses_a_model_no_command_could_load_before_writing(
        change: Callable[[Any], None], expected: str, model_zip: Path, tmp_path: Path, cli_here: Cli) -> None:
    bad = _rewrite(model_zip, tmp_path / "bad.zip", change)
    err = _one_error_line(*cli_here("import", str(bad), str(tmp_path / "run"), "--rules", RULES, "--trust"))
    assert f"{bad}: {expected}" in err
    assert not (tmp_path / "run").exists() or os.listdir(tmp_path / "run") in ([], [".lock"])
    good = _rewrite(model_zip, tmp_path / "good.zip", lambda m: setattr(m, "num_timesteps", 128))
    status, err = cli_here("import", str(good), str(tmp_path / "ok"), "--rules", RULES, "--trust")
    assert status == 0, err  # the twin: imports, and every command loads what it wrote
    assert load_checkpoint(tmp_path / "ok").state["num_timesteps"] == 128
    assert make_agent(str(tmp_path / "ok"), RULES) is not None


def _declare_size(zip_path: Path, member: str, size: int) -> None:
    """Patch the central directory of ``zip_path`` so that ``member`` declares ``size`` bytes
    uncompressed: a zip bomb's directory without the gigabytes."""
    data = bytearray(zip_path.read_bytes())
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        name_len = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46:at + 46 + name_len] == member.encode():
            struct.pack_into("<I", data, at + 24, size)
        at = data.find(b"PK\x01\x02", at + 46)
    zip_path.write_bytes(bytes(data))


@pytest.mark.parametrize(("member", "size"), [("data", 2**31), ("policy.pth", 2**32 - 2)])
def test_import_refuses_a_zip_bomb_from_its_directory_alone(member: str, size: int, model_zip: Path,
                                                            tmp_path: Path, cli_here: Cli,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from agents import checkpoint as ck

    monkeypatch.setattr(ck, "MAX_FILE_BYTES", 2**31)  # a .pth bomb within 32-bit zip sizes
    bomb = Path(shutil.copy(model_zip, tmp_path / "bomb.zip"))
    _declare_size(bomb, member, size)
    assert zipfile.ZipFile(bomb).getinfo(member).file_size == size
    for trust in ((), ("--trust",)):  # refused before --trust is asked for: no pickle opened
        err = _one_error_line(*cli_here("import", str(bomb), str(tmp_path / "run"), "--rules", RULES, *trust))
        assert f"member '{member}' declares {size:,} bytes, more than a MaskablePPO model's" in err
    status, err = cli_here("import", str(model_zip), str(tmp_path / "run"), "--rules", RULES, "--trust")
    assert status == 0, err  # the twin


def test_import_names_a_pipe_or_folder_as_not_a_file(model_zip: Path, tmp_path: Path, cli_here: Cli) -> None:
    os.mkfifo(tmp_path / "pipe.zip")
    (tmp_path / "folder.zip").mkdir()
    for odd in ("pipe.zip", "folder.zip"):
        err = _one_error_line(*cli_here("import", str(tmp_path / odd), str(tmp_path / "run"), "--rules",
                                        RULES, "--trust"))
        assert "not a regular file (a folder, pipe or device)" in err  # before: "no such model file"
    err = _one_error_line(*cli_here("import", str(tmp_path / "none.zip"), str(tmp_path / "run"), "--rules",
                                    RULES, "--trust"))
    assert "no such model file" in err
    link = tmp_path / "link.zip"
    link.symlink_to(model_zip)
    status, err = cli_here("import", str(link), str(tmp_path / "run"), "--rules", RULES, "--trust")
    assert status == 0, err  # the twin: a link to a model is a model


def test_import_on_a_full_disk_names_the_run(model_zip: Path, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from agents import checkpoint as ck

    real = ck.save_checkpoint

    def full(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ck, "save_checkpoint", full)
    with pytest.raises(ValueError, match=r"RUN_DIR .*run: cannot write the imported run \(No space left"):
        interop.import_sb3(model_zip, tmp_path / "run", RULES, trust=True)
    monkeypatch.setattr(ck, "save_checkpoint", real)
    path, _ = interop.import_sb3(model_zip, tmp_path / "run", RULES, trust=True)  # the twin, a retry
    assert path.is_dir()


# ---- a features extractor per head -------------------------------------------------------------
@pytest.mark.parametrize("share", [False, True])
def test_a_policy_with_a_features_extractor_per_head_plays_and_exports(share: bool, tmp_path: Path) -> None:
    onnxruntime = pytest.importorskip("onnxruntime")
    import torch

    ckpt = save_tiny_checkpoint(tmp_path / "run", RULES, share_features_extractor=share)
    obs, masks = _observations()
    agent = make_agent(str(ckpt), RULES)
    actions = agent.act(obs, masks, None)  # before (share=False): TypeError in torch's linear()
    policy = agent.policy  # type: ignore[attr-defined]
    with torch.no_grad():
        sb3 = policy.get_distribution(torch.as_tensor(obs), masks).distribution.probs.numpy()
    chosen = np.take_along_axis(sb3, actions[:, None], axis=1)[:, 0]
    assert (chosen >= sb3.max(axis=1) - 1e-4).all()  # as SB3's own forward plays (near-ties either way)
    path = interop.export_onnx(str(ckpt), tmp_path / "policy.onnx")
    logits = onnxruntime.InferenceSession(str(path)).run(["logits"], {"observation": obs,
                                                                       "action_mask": masks})[0]
    expected = interop.torch_logits(policy, obs, masks)
    assert np.abs(np.where(masks, logits - expected, 0.0)).max() < 1e-4
    picked = np.take_along_axis(logits, actions[:, None], axis=1)[:, 0]
    assert (picked >= logits.max(axis=1) - 1e-3).all()


# ---- scripts/average_checkpoints.py ------------------------------------------------------------
def test_average_refuses_checkpoints_of_other_rules_with_the_same_layout(
        ckpt: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    regal = save_tiny_checkpoint(tmp_path / "regal", "regal_2p")  # classic_2p's observation layout
    assert load_checkpoint(regal).meta["layout"]["obs_dim"] == load_checkpoint(ckpt).meta["layout"]["obs_dim"]
    assert average_checkpoints.main([str(tmp_path / "avg"), str(ckpt), str(regal)]) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"average_checkpoints: {regal}: describes other rules than {ckpt}"  # before: averaged
    assert not (tmp_path / "avg").exists()
    other = save_tiny_checkpoint(tmp_path / "other", RULES)  # the twin: same rules, other weights
    assert average_checkpoints.main([str(tmp_path / "avg"), str(ckpt), str(other)]) == 0
    assert load_checkpoint(tmp_path / "avg").meta["rules"] == load_checkpoint(ckpt).meta["rules"]


def test_average_into_a_run_or_an_earlier_average_is_refused(ckpt: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    run = Path(shutil.copytree(ckpt.parent, tmp_path / "run"))
    assert average_checkpoints.main([str(run), str(ckpt), str(run)]) == 1  # before: run's latest became "avg"
    assert "already holds latest" in capsys.readouterr().err
    assert (run / "latest").read_text().strip() == ckpt.name and not (run / "avg").exists()
    average = average_checkpoints.main
    assert average([str(tmp_path / "avg"), str(ckpt), str(run)]) == 0  # the twin: a new folder
    first = (tmp_path / "avg" / "avg" / "policy.safetensors").read_bytes()
    assert average([str(tmp_path / "avg"), str(run), str(run)]) == 1  # before: replaced in silence
    err = capsys.readouterr().err.strip()
    assert err.endswith("already holds latest and avg (a run or an earlier average); name a new folder")
    assert (tmp_path / "avg" / "avg" / "policy.safetensors").read_bytes() == first
    for blank in ("", " "):
        assert average_checkpoints.main([blank, str(ckpt)]) == 1
        assert "not a folder name" in capsys.readouterr().err
