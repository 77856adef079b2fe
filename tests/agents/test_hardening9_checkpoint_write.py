"""``save_checkpoint`` streams its files: no second copy of the weights and no file's bytes held whole
while saving (it held both: about the checkpoint's size again, at its peak), and the bytes written are
those it wrote before, for the same input (what ``safetensors.torch.save`` and ``torch.save`` into an
``io.BytesIO`` give), tied and sliced weights included."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tracemalloc
from pathlib import Path

import pytest
import torch
from safetensors.torch import save

from agents.checkpoint import load_checkpoint, save_checkpoint
from tests.tiny_checkpoint import save_tiny_checkpoint

MIB = 1 << 20


def _rss_peak_kib() -> int:
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))


def _reset_rss_peak() -> int:
    """Reset the process's peak resident memory to its present one (Linux); returns that, in KiB."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pytest.skip("the peak resident memory cannot be reset here (Linux /proc/self/clear_refs)")
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmRSS:"))


def test_saving_a_large_checkpoint_takes_no_second_copy_of_it(tmp_path: Path) -> None:
    policy = {f"layer{i}.weight": torch.rand(1024, 4096) for i in range(3)}  # 48 MiB
    optimizer = {"state": {i: {"step": torch.tensor(1.0), "exp_avg": torch.rand(1024, 4096),
                               "exp_avg_sq": torch.rand(1024, 4096)} for i in range(3)},
                 "param_groups": [{"lr": 3e-4, "params": [0, 1, 2]}]}  # 96 MiB
    base = _reset_rss_peak()
    tracemalloc.start()
    try:
        ckpt = save_checkpoint(tmp_path / "run", "ckpt_1", policy_state=policy, optimizer_state=optimizer,
                               state={"num_timesteps": 1}, meta={})
        traced = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    grew = (_rss_peak_kib() - base) * 1024
    size = sum(p.stat().st_size for p in ckpt.iterdir())
    assert size > 140 * MIB
    assert traced < 8 * MIB and grew < 24 * MIB, (traced / MIB, grew / MIB)  # it was 144 MiB and more


def _old_bytes(policy: dict[str, torch.Tensor], optimizer: dict[str, object]) -> tuple[bytes, bytes]:
    """The files as ``save_checkpoint`` made them before it streamed them."""
    buffer = io.BytesIO()
    torch.save(optimizer, buffer)
    return save({k: v.detach().contiguous().clone() for k, v in policy.items()}), buffer.getvalue()


def test_the_streamed_files_are_the_bytes_written_before(tmp_path: Path) -> None:  # the twin
    torch.manual_seed(0)
    big = torch.randn(6, 5)
    shared = torch.randn(4, 4)
    policy = {
        "w": torch.randn(3, 7, requires_grad=True), "half": torch.randn(5).half(),
        "bf16": torch.randn(2, 2).bfloat16(), "ints": torch.arange(9).reshape(3, 3),
        "mask": torch.rand(4) > 0.5,
        "scalar": torch.tensor(2.5), "empty": torch.zeros(0, 3), "transposed": big.t(), "row": big[2],
        "tied_a": shared, "tied_b": shared, "tied_view": shared[1:3],
    }
    optimizer = {"state": {0: {"step": torch.tensor(2.0), "exp_avg": torch.randn(3, 7)}},
                 "param_groups": [{"lr": 1e-3, "params": [0]}]}
    ckpt = save_checkpoint(tmp_path / "run", "ckpt_1", policy_state=policy, optimizer_state=optimizer,
                           state={"num_timesteps": 1}, meta={"note": "x"})
    policy_bytes, optimizer_bytes = _old_bytes(policy, optimizer)
    assert (ckpt / "policy.safetensors").read_bytes() == policy_bytes
    assert (ckpt / "optimizer.pt").read_bytes() == optimizer_bytes
    files = json.loads((ckpt / "meta.json").read_text())["files"]
    assert list(files) == ["policy.safetensors", "state.json", "optimizer.pt"]
    for name, info in files.items():
        data = (ckpt / name).read_bytes()
        assert info == {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["ckpt_1", "latest"]


def test_a_real_checkpoint_still_loads(tmp_path: Path) -> None:
    ckpt = save_tiny_checkpoint(tmp_path / "run", "classic_2p")
    loaded = load_checkpoint(ckpt, rules="classic_2p")
    assert loaded.optimizer_state is not None and loaded.policy_state


@pytest.mark.parametrize("meta", [{"bad": object()}, {"bad": {1, 2}}])
def test_a_meta_that_is_not_json_is_refused_before_anything_is_written(meta: dict[str, object],
                                                                       tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="checkpoint meta"):
        save_checkpoint(tmp_path / "run", "ckpt_1", policy_state={"w": torch.ones(2)}, optimizer_state=None,
                        state={}, meta=meta)
    assert not (tmp_path / "run").exists()
    save_checkpoint(tmp_path / "run", "ckpt_1", policy_state={"w": torch.ones(2)}, optimizer_state=None,
                    state={}, meta={"good": [1, 2]})  # the twin
    assert (tmp_path / "run" / "latest").read_text() == "ckpt_1\n"


@pytest.mark.parametrize("state", [{1: 0, "1": 2}, {"pool": {"2": "a", 2: "b"}}])
def test_a_state_whose_keys_meet_as_str_is_refused_not_written_unloadable(state: dict[object, object],
                                                                          tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="checkpoint state: duplicate key '[12]' once its keys are made str"):
        save_checkpoint(tmp_path / "run", "ckpt_1", policy_state={"w": torch.ones(2)}, optimizer_state=None,
                        state=state, meta={})
    assert not (tmp_path / "run").exists()
    ckpt = save_checkpoint(tmp_path / "run", "ckpt_1", policy_state={"w": torch.ones(2)},
                           optimizer_state=None, state={1: 0, "2": 2}, meta={})  # the twin: keys apart
    assert json.loads((ckpt / "state.json").read_text()) == {"1": 0, "2": 2}


@pytest.mark.parametrize("state, field", [({"num_timesteps": -1}, "num_timesteps"),
                                          ({"opponent_pool": ["../elsewhere"]}, "opponent_pool"),
                                          ({"rng": {"python": "x"}}, "rng")])
def test_a_state_the_loader_refuses_is_refused_before_writing(state: dict[str, object], field: str,
                                                               tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=f"state.json: {field}.*refused before writing"):
        save_checkpoint(tmp_path / "run", "ckpt_1", policy_state={"w": torch.ones(2)}, optimizer_state=None,
                        state=state, meta={})
    assert not (tmp_path / "run").exists()


def test_a_state_the_loader_takes_is_written(tmp_path: Path) -> None:  # the twin
    state = {"num_timesteps": 7, "opponent_pool": ["ckpt_000000001"], "episodes": 3}
    ckpt = save_checkpoint(tmp_path / "run", "ckpt_1", policy_state={"w": torch.ones(2)},
                           optimizer_state=None, state=state, meta={})
    assert json.loads((ckpt / "state.json").read_text()) == state


def _fail_renaming_into(monkeypatch: pytest.MonkeyPatch, final: Path) -> None:
    """``os.rename`` of a newly written checkpoint onto ``final`` fails as a failing disk would."""
    real = os.rename

    def rename(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        if Path(dst) == final and Path(src).name.startswith(".tmp-ckpt_"):
            raise OSError(5, "Input/output error")
        real(src, dst)

    monkeypatch.setattr(os, "rename", rename)


def test_a_failed_rename_over_a_checkpoint_puts_the_old_one_back(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    run = tmp_path / "run"
    old = save_tiny_checkpoint(run, "classic_2p")  # latest names it
    before = {p.name: p.read_bytes() for p in old.iterdir()}
    _fail_renaming_into(monkeypatch, old)
    with pytest.raises(OSError, match="Input/output error"):
        save_tiny_checkpoint(run, "classic_2p", state={"episodes": 7})
    assert {p.name: p.read_bytes() for p in old.iterdir()} == before
    assert sorted(p.name for p in run.iterdir()) == [old.name, "latest"]
    assert load_checkpoint(run, rules="classic_2p").path == old
    monkeypatch.undo()
    save_tiny_checkpoint(run, "classic_2p", state={"episodes": 7})  # the twin: it is replaced
    assert load_checkpoint(run, rules="classic_2p").state["episodes"] == 7
