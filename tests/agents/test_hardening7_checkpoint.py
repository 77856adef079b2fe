"""Hardening, round seven: reading checkpoints. Loading takes a checkpoint's size in memory once (it
read the files into bytes, then deserialised them: 2.4 times their size), the weights' header is
checked as safetensors checks it, and a damaged RNG state in ``state.json`` is one line naming it
(an empty numpy state was an IndexError traceback). Each refusal has its twin that still loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")
safetensors_torch = pytest.importorskip("safetensors.torch")

from agents import make_agent  # noqa: E402
from agents.checkpoint import (  # noqa: E402
    CheckpointError,
    load_checkpoint,
    restore_rng_state,
    rng_state,
    save_checkpoint,
)
from agents.checkpoint.policy_spec import _policy_shapes  # noqa: E402
from tests.one_line import one_error  # noqa: E402
from tests.tiny_checkpoint import rewrite_file  # noqa: E402
from train.cli.main import main as cli_main  # noqa: E402

RULES = "classic_2p"
ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _same(a: dict[Any, Any], b: dict[Any, Any]) -> bool:
    """Equal mappings of tensors (or, nested, of such mappings)."""
    return a.keys() == b.keys() and all(
        _same(a[k], b[k]) if isinstance(a[k], dict) else torch.equal(a[k], b[k]) for k in a)


# ---- reading takes the checkpoint's size once ----------------------------------------------------
_PEAK = """
import sys
from agents.checkpoint import load_checkpoint
def peak():  # this process's own peak (ru_maxrss keeps the parent's, from before the exec)
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM:")).split()[1]) * 1024
load_checkpoint(sys.argv[1])  # a tiny one first: imports and first calls cost memory of their own
before = peak()
load_checkpoint(sys.argv[2])
print(peak() - before)
"""


@pytest.fixture(scope="module")
def large(original: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ~200 MB checkpoint (net_arch [2800, 2800]: 68 MB of weights, 136 MB of Adam state)."""
    meta = {k: v for k, v in json.loads((original / "meta.json").read_text()).items()
            if k not in ("files", "format")}
    meta["policy"]["kwargs"]["net_arch"] = [2800, 2800]
    shapes = list(_policy_shapes(meta["policy"], [2800, 2800]).items())
    optimizer = torch.load(original / "optimizer.pt", weights_only=True)
    optimizer["param_groups"][0]["params"] = list(range(len(shapes)))
    optimizer["state"] = {i: {"step": torch.tensor(1.0), "exp_avg": torch.full(s, 1e-3),
                              "exp_avg_sq": torch.full(s, 1e-6)} for i, (_, s) in enumerate(shapes)}
    return save_checkpoint(tmp_path_factory.mktemp("large") / "run", "ckpt_000000001",
                           policy_state={k: torch.full(s, 0.5) for k, s in shapes},
                           optimizer_state=optimizer, state={"num_timesteps": 1}, meta=meta)


@pytest.mark.skipif(sys.platform != "linux", reason="/proc's VmHWM, and the optimizer mapped (memfd)")
def test_reading_a_large_checkpoint_takes_its_size_once(original: Path, large: Path) -> None:
    # before: 2.4 times the files' size (their bytes, then the tensors deserialised from them)
    size = sum(f.stat().st_size for f in large.iterdir())
    assert size > 200e6
    out = subprocess.run([sys.executable, "-c", _PEAK, str(original), str(large)], cwd=ROOT, check=True,
                         capture_output=True, text=True, timeout=120).stdout
    assert int(out.split()[-1]) < 1.5 * size, f"{int(out.split()[-1]) / size:.2f} times the files' size"


def test_a_checkpoint_read_in_place_holds_what_was_saved(original: Path, tmp_path: Path) -> None:
    # the twin: views of the read memory are the stored tensors, and can be saved again
    ckpt = load_checkpoint(original)
    assert _same(ckpt.policy_state, safetensors_torch.load_file(original / "policy.safetensors"))
    stored = torch.load(original / "optimizer.pt", weights_only=True)
    assert stored["state"] and _same(ckpt.optimizer_state["state"], stored["state"])
    again = save_checkpoint(tmp_path / "again", "ckpt_1", policy_state=ckpt.policy_state,
                            optimizer_state=ckpt.optimizer_state, state=ckpt.state, meta=ckpt.meta)
    assert _same(load_checkpoint(again).policy_state, ckpt.policy_state)


def test_without_an_in_memory_file_the_optimizer_still_loads(original: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "memfd_create", raising=False)  # not Linux: an io.BytesIO instead
    ckpt = load_checkpoint(original)
    stored = torch.load(original / "optimizer.pt", weights_only=True)
    assert stored["state"] and _same(ckpt.optimizer_state["state"], stored["state"])


# ---- the weights' header checked as safetensors checks it ----------------------------------------
def _header(path: Path) -> tuple[dict[str, Any], bytes]:
    raw = (path / "policy.safetensors").read_bytes()
    n = int.from_bytes(raw[:8], "little")
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def _pack(header: dict[str, Any] | bytes, data: bytes, n: int | None = None) -> bytes:
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return (len(text) if n is None else n).to_bytes(8, "little") + text + data


def _first(header: dict[str, Any]) -> str:
    return min((k for k in header if k != "__metadata__"), key=lambda k: header[k]["data_offsets"])


LIES: dict[str, Callable[[dict[str, Any], bytes], bytes]] = {
    "a header longer than the file": lambda h, d: _pack(h, d, n=2**64 - 1),
    "a header that is a list": lambda h, d: _pack(b"[1, 2]", d),
    "offsets that overlap": lambda h, d: _pack(
        {**h, _first(h): {**h[_first(h)], "data_offsets": [4, 4 + h[_first(h)]["data_offsets"][1]]}}, d),
    "a shape larger than its bytes": lambda h, d: _pack(
        {**h, _first(h): {**h[_first(h)], "shape": [10**6]}}, d),
    "an unknown dtype": lambda h, d: _pack({**h, _first(h): {**h[_first(h)], "dtype": ["F32"]}}, d),
    "a negative size": lambda h, d: _pack({**h, _first(h): {**h[_first(h)], "shape": [-1, -106]}}, d),
    "data the header does not describe": lambda h, d: _pack(h, d + bytes(8)),
    "metadata that is not strings": lambda h, d: _pack({**h, "__metadata__": {"a": 1}}, d),
}


@pytest.mark.parametrize("lie", list(LIES))
def test_a_weights_header_that_lies_is_refused(saved: Path, lie: str) -> None:
    header, data = _header(saved)
    rewrite_file(saved, "policy.safetensors", LIES[lie](header, data))
    with pytest.raises(CheckpointError, match=r"policy\.safetensors: unreadable \(") as info:
        make_agent(str(saved), RULES)
    assert "\n" not in str(info.value)


def test_a_weights_file_of_unaligned_tensors_or_metadata_still_plays(saved: Path) -> None:  # the twin
    header, data = _header(saved)
    weights = load_checkpoint(saved).policy_state
    rewrite_file(saved, "policy.safetensors", _pack(json.dumps({**header, "__metadata__": {"k": "v"}})
                                                .encode() + b" ", data))  # one byte off 8-aligned
    agent = make_agent(str(saved), RULES)
    assert _same(load_checkpoint(saved).policy_state, weights)
    obs = np.zeros((1, agent.policy.observation_space.shape[0]), dtype=np.float32)
    assert agent.act(obs, np.ones((1, 106), dtype=bool), np.random.default_rng(0)).shape == (1,)


# ---- a damaged RNG state is one line -------------------------------------------------------------
def _edit_rng(path: Path, edit: Callable[[dict[str, Any]], Any]) -> None:
    state = json.loads((path / "state.json").read_text())
    edit(state["rng"])
    rewrite_file(path, "state.json", json.dumps(state).encode())


DAMAGED_RNG: dict[str, Callable[[dict[str, Any]], Any]] = {
    "numpy empty": lambda r: r.__setitem__("numpy", []),
    "numpy key empty": lambda r: r["numpy"]["state"].__setitem__("key", ""),
    "a generator's state": lambda r: r.__setitem__("generators", {"g": {
        **np.random.default_rng(0).bit_generator.state, "state": {"state": "x", "inc": 1}}}),
    "a generator of no known class": lambda r: r.__setitem__("generators", {"g": {"bit_generator": "os"}}),
    "a CUDA state that is no bytes": lambda r: r.__setitem__("torch_cuda", [[300]]),
}


@pytest.mark.parametrize("damage", list(DAMAGED_RNG))
def test_a_damaged_rng_state_is_refused_in_one_line(saved: Path, damage: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    # before: IndexError tracebacks (numpy), or accepted and failing at restore (generators, CUDA)
    _edit_rng(saved, DAMAGED_RNG[damage])
    with pytest.raises(CheckpointError, match=r"state\.json: rng: "):
        load_checkpoint(saved)
    assert cli_main(["tournament", "--agents", str(saved), "random", "--hands", "1", "--no-plots",
                     "--out", str(saved.parent / "out")]) == 2
    assert "state.json: rng: " in one_error(capsys, "tournament")


def test_a_stored_generator_state_still_restores(saved: Path) -> None:  # the twin
    gen = np.random.default_rng(7)
    _edit_rng(saved, lambda r: r.update(rng_state({"g": gen})))
    want = gen.random(3)
    restored = np.random.default_rng(0)
    restore_rng_state(load_checkpoint(saved).state["rng"], {"g": restored})
    assert np.array_equal(restored.random(3), want)


@pytest.mark.parametrize("devices", [1, 2])
def test_cuda_states_are_restored_to_the_devices_there_are(monkeypatch: pytest.MonkeyPatch,
                                                           devices: int) -> None:
    # before: a run saved on two GPUs set a second device on one, which failed at CUDA's first use
    restored: list[Any] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: devices)
    monkeypatch.setattr(torch.cuda, "set_rng_state_all", restored.extend)
    state = {**rng_state(), "torch_cuda": [[1] * 16, [2] * 16]}
    before = torch.get_rng_state()
    restore_rng_state(state)
    torch.set_rng_state(before)
    assert [s.tolist() for s in restored] == state["torch_cuda"][:devices]
