"""Checkpoints: round trip of a MaskablePPO's policy, optimizer and state; refusal of tampered,
truncated, unreadable, missing and mismatched checkpoints; a kill mid-write leaves ``latest`` on the
previous complete checkpoint; nothing is unpickled.

torch runs on one thread (more only slow small networks down).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")
pytest.importorskip("safetensors")

from sb3_contrib import MaskablePPO  # noqa: E402
from sb3_contrib.common.maskable.utils import get_action_masks  # noqa: E402

from agents import checkpoint as ck  # noqa: E402
from agents.checkpoint import (  # noqa: E402
    CheckpointError,
    build_meta,
    current_layout,
    latest_checkpoint,
    list_checkpoints,
    load_checkpoint,
    policy_from_checkpoint,
    restore_rng_state,
    rng_state,
    save_checkpoint,
)
from canasta_env.envs.sb3_env import CanastaVecEnv  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def model() -> Iterator[Any]:
    """A tiny MaskablePPO after one update (so the optimizer has state)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    env = CanastaVecEnv(8, "classic_2p")
    m = MaskablePPO("MlpPolicy", env, n_steps=16, batch_size=64, n_epochs=1, seed=0,
                    policy_kwargs={"net_arch": [32, 32], "activation_fn": torch.nn.ReLU})
    m.learn(total_timesteps=128)
    yield m
    env.close()
    torch.set_num_threads(threads)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _save(model: Any, run_dir: Path, name: str = "ckpt_000000128", **state: Any) -> Path:
    meta = build_meta(config={"algo": "ppo", "n_steps": 16}, rules="classic_2p", policy=model.policy)
    return save_checkpoint(
        run_dir, name, policy_state=model.policy.state_dict(),
        optimizer_state=model.policy.optimizer.state_dict(),
        state={"num_timesteps": model.num_timesteps, "episodes": 3, "opponent_pool": ["a", "b"],
               **state},
        meta=meta)


@pytest.fixture
def saved(model: Any, tmp_path: Path) -> Path:
    return _save(model, tmp_path / "run")


def _assert_same(a: Any, b: Any) -> None:
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    elif isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b)
        for k in a:
            _assert_same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _assert_same(x, y)
    else:
        assert a == b


# ---- round trip ----------------------------------------------------------------------------------
def test_round_trip_restores_weights_optimizer_state_and_predictions(model: Any, tmp_path: Path) -> None:
    gen = np.random.default_rng(7)
    rngs = rng_state({"opponents": gen})
    want_draws = (random.random(), np.random.random(), torch.rand(3), gen.integers(1 << 30, size=4))
    path = _save(model, tmp_path / "run", rng=rngs)
    assert sorted(p.name for p in path.iterdir()) == sorted(ck.FILES)
    assert (tmp_path / "run" / "latest").read_text().strip() == path.name

    loaded = load_checkpoint(tmp_path / "run", rules="classic_2p",
                             expect_layout=current_layout("classic_2p"))
    assert loaded.path == path and loaded.name == "ckpt_000000128"
    _assert_same(model.policy.state_dict(), loaded.policy_state)
    _assert_same(model.policy.optimizer.state_dict(), loaded.optimizer_state)
    assert loaded.state["num_timesteps"] == model.num_timesteps
    assert loaded.state["opponent_pool"] == ["a", "b"]
    assert loaded.meta["rules"]["num_players"] == 2
    assert loaded.meta["layout"]["num_actions"] == model.action_space.n
    assert loaded.meta["versions"]["torch"] and loaded.meta["versions"]["sb3-contrib"]
    assert set(loaded.meta["files"]) == {"policy.safetensors", "optimizer.pt", "state.json"}

    policy = policy_from_checkpoint(loaded, model.observation_space, model.action_space)
    policy.optimizer.load_state_dict(loaded.optimizer_state)
    _assert_same(model.policy.optimizer.state_dict(), policy.optimizer.state_dict())
    env = model.get_env()
    obs = env.reset()
    masks = get_action_masks(env)
    with torch.no_grad():
        obs_t = torch.as_tensor(obs)
        want = model.policy.get_distribution(obs_t, action_masks=masks).distribution.logits
        got = policy.get_distribution(obs_t, action_masks=masks).distribution.logits
        torch.testing.assert_close(want, got, rtol=0, atol=0)
        torch.testing.assert_close(model.policy.predict_values(obs_t), policy.predict_values(obs_t),
                                   rtol=0, atol=0)
    np.testing.assert_array_equal(model.predict(obs, action_masks=masks, deterministic=True)[0],
                                  policy.predict(obs, action_masks=masks, deterministic=True)[0])

    # the RNG states come back through JSON
    random.seed(1)
    np.random.seed(1)
    torch.manual_seed(1)
    other = np.random.default_rng(99)
    restore_rng_state(loaded.state["rng"], {"opponents": other})
    got_draws = (random.random(), np.random.random(), torch.rand(3), other.integers(1 << 30, size=4))
    assert want_draws[:2] == got_draws[:2]
    torch.testing.assert_close(want_draws[2], got_draws[2], rtol=0, atol=0)
    np.testing.assert_array_equal(want_draws[3], got_draws[3])


def test_latest_and_listing_follow_saves(model: Any, tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert latest_checkpoint(run) is None and list_checkpoints(run) == []
    for steps in (9, 10, 128):
        _save(model, run, ck.checkpoint_name(steps))
    names = [p.name for p in list_checkpoints(run)]
    assert names == ["ckpt_000000009", "ckpt_000000010", "ckpt_000000128"]
    assert latest_checkpoint(run) == run / "ckpt_000000128"
    _save(model, run, "ckpt_000000010")  # re-saving a name replaces it and moves latest back
    assert latest_checkpoint(run) == run / "ckpt_000000010"
    assert not [p for p in run.iterdir() if p.name.startswith(".")]
    load_checkpoint(run / "ckpt_000000010")
    assert load_checkpoint(run / "latest").path == run / "ckpt_000000010"  # `runs/b/latest` names it
    with pytest.raises(CheckpointError, match="neither a checkpoint"):
        load_checkpoint(tmp_path)


def test_optimizer_may_be_left_out(model: Any, tmp_path: Path) -> None:
    meta = build_meta(config={}, rules="classic_2p", policy=model.policy)
    path = save_checkpoint(tmp_path, "p", policy_state=model.policy.state_dict(),
                           optimizer_state=None, state={}, meta=meta)
    assert not (path / "optimizer.pt").exists()
    assert load_checkpoint(path).optimizer_state is None
    assert load_checkpoint(_save(model, tmp_path / "b"), load_optimizer=False).optimizer_state is None


def test_bad_names_and_non_tensor_policy_state_are_refused(tmp_path: Path) -> None:
    for name in ("", ".hidden", "latest", "a/b", ".."):
        with pytest.raises(ValueError, match="checkpoint name"):
            save_checkpoint(tmp_path, name, policy_state={}, optimizer_state=None, state={}, meta={})
    with pytest.raises(TypeError, match="policy_state\\['w'\\]"):
        save_checkpoint(tmp_path, "x", policy_state={"w": [1.0]}, optimizer_state=None, state={},
                        meta={})
    assert list(tmp_path.iterdir()) == []


# ---- refusals ------------------------------------------------------------------------------------
def test_tampered_file_is_refused(saved: Path) -> None:
    file = saved / "policy.safetensors"
    data = bytearray(file.read_bytes())
    data[len(data) // 2] ^= 0x01
    file.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"policy\.safetensors: sha256 mismatch"):
        load_checkpoint(saved)


@pytest.mark.parametrize("fname", ["policy.safetensors", "optimizer.pt", "state.json"])
def test_truncated_file_is_refused(saved: Path, fname: str) -> None:
    file = saved / fname
    file.write_bytes(file.read_bytes()[: file.stat().st_size // 2])
    with pytest.raises(CheckpointError, match=rf"{re.escape(fname)}: truncated"):
        load_checkpoint(saved)
    assert latest_checkpoint(saved.parent) is None  # incomplete: not offered for resuming


@pytest.mark.parametrize("fname", ["policy.safetensors", "optimizer.pt", "state.json"])
def test_unparseable_file_with_matching_hash_is_refused(saved: Path, fname: str) -> None:
    """Even with meta.json rewritten to match, a damaged file fails in its parser, named."""
    file = saved / fname
    file.write_bytes(file.read_bytes()[:40])
    meta = json.loads((saved / "meta.json").read_text())
    meta["files"][fname] = {"bytes": 40, "sha256": hashlib.sha256(file.read_bytes()).hexdigest()}
    (saved / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match=rf"{re.escape(fname)}: unreadable"):
        load_checkpoint(saved)


def test_truncated_meta_is_refused(saved: Path) -> None:
    meta = saved / "meta.json"
    meta.write_bytes(meta.read_bytes()[:100])
    with pytest.raises(CheckpointError, match=r"meta\.json: unreadable or truncated"):
        load_checkpoint(saved)


@pytest.mark.parametrize("fname", ["policy.safetensors", "optimizer.pt", "state.json", "meta.json"])
def test_missing_file_is_refused(saved: Path, fname: str) -> None:
    (saved / fname).unlink()
    with pytest.raises(CheckpointError, match=rf"{re.escape(fname)}: missing"):
        load_checkpoint(saved)
    assert latest_checkpoint(saved.parent) is None


def test_rules_mismatch_is_refused_showing_both_values(saved: Path) -> None:
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(saved, rules="classic_4p")
    msg = str(err.value)
    assert "meta.json: rules mismatch" in msg
    assert "num_players: checkpoint 2, expected 4" in msg
    assert "partnerships: checkpoint False, expected True" in msg
    load_checkpoint(saved, rules="classic_2p")


def test_layout_mismatch_is_refused_showing_both_values(saved: Path) -> None:
    stored = json.loads((saved / "meta.json").read_text())["layout"]["layout_hash"]
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(saved, expect_layout="0123456789abcdef")
    msg = str(err.value)
    assert "meta.json: layout mismatch" in msg
    assert f"layout_hash: checkpoint {stored!r}, expected '0123456789abcdef'" in msg
    with pytest.raises(CheckpointError, match="layout mismatch: layout_hash"):
        load_checkpoint(saved, expect_layout=current_layout("classic_4p"))
    with pytest.raises(CheckpointError, match="num_actions: checkpoint 106, expected 107"):
        load_checkpoint(saved, expect_layout={"num_actions": 107})
    load_checkpoint(saved, expect_layout=stored)


def test_space_mismatch_and_foreign_classes_are_refused(model: Any, saved: Path) -> None:
    import gymnasium

    ckpt = load_checkpoint(saved)
    with pytest.raises(CheckpointError, match="action_space mismatch"):
        policy_from_checkpoint(ckpt, model.observation_space, gymnasium.spaces.Discrete(5))
    ckpt.meta["policy"]["kwargs"]["activation_fn"] = {"__class__": "os:system"}
    with pytest.raises(CheckpointError, match="outside the allowed modules"):
        policy_from_checkpoint(ckpt, model.observation_space, model.action_space)


# ---- kill mid-write ------------------------------------------------------------------------------
KILL_SCRIPT = textwrap.dedent("""
    import sys, torch
    from agents.checkpoint import save_checkpoint
    run, point = sys.argv[1], sys.argv[2]
    for i, name in enumerate(["ckpt_000000001", "ckpt_000000002"]):
        save_checkpoint(run, name, policy_state={"w": torch.full((64,), float(i))},
                        optimizer_state={"state": {}, "param_groups": []},
                        state={"num_timesteps": i + 1}, meta={"i": i})
    print("not killed")
""")


@pytest.mark.parametrize("point", ["checkpoint_write", "checkpoint_rename", "checkpoint_latest"])
def test_kill_mid_write_leaves_latest_on_the_previous_checkpoint(tmp_path: Path, point: str) -> None:
    run = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-c", KILL_SCRIPT, str(run), point], cwd=ROOT,
                          env={**_env(), ck.KILL_ENV: f"{point}@2"}, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode in (-9, 137), proc.stdout + proc.stderr
    assert (run / "latest").read_text().strip() == "ckpt_000000001"
    assert latest_checkpoint(run) == run / "ckpt_000000001"
    ckpt = load_checkpoint(run)
    assert ckpt.name == "ckpt_000000001" and ckpt.state["num_timesteps"] == 1
    partial = [p.name for p in run.iterdir() if p.name.startswith(".tmp-")]
    if point == "checkpoint_latest":  # renamed and complete, but latest was not yet updated
        assert partial == []
        assert [p.name for p in list_checkpoints(run)] == ["ckpt_000000001", "ckpt_000000002"]
    else:
        assert len(partial) == 1 and partial[0].startswith(".tmp-ckpt_000000002-")
        assert [p.name for p in list_checkpoints(run)] == ["ckpt_000000001"]
        assert ck.remove_partial_checkpoints(run) == [run / partial[0]]
    # resuming writes the same name again over whatever is there
    save_checkpoint(run, "ckpt_000000002", policy_state={"w": torch.ones(2)}, optimizer_state=None,
                    state={"num_timesteps": 2}, meta={})
    assert load_checkpoint(run).state["num_timesteps"] == 2


def test_without_the_hook_the_script_completes(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", KILL_SCRIPT, str(tmp_path), "none"], cwd=ROOT,
                          env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "not killed" in proc.stdout, proc.stderr
    assert latest_checkpoint(tmp_path) == tmp_path / "ckpt_000000002"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != ck.KILL_ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


# ---- no pickle -----------------------------------------------------------------------------------
UNSAFE = [
    (re.compile(r"^\s*(import|from)\s+(cloud)?pickle\b", re.M), "pickle import"),
    (re.compile(r"\b(MaskablePPO|PPO|model|self\.model)\.(load|save)\("), "SB3 save()/load()"),
    (re.compile(r"load_from_zip_file|weights_only\s*=\s*False"), "pickle-based loading"),
]


def _unsafe_torch_loads(source: str) -> list[int]:
    """Lines of ``torch.load(...)`` calls without a literal ``weights_only=True``."""
    bad = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "load" and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "torch"):
            if not any(k.arg == "weights_only" and isinstance(k.value, ast.Constant)
                       and k.value.value is True for k in node.keywords):
                bad.append(node.lineno)
    return bad


def test_no_pickle_based_loading_in_the_training_code() -> None:
    """Grep (and parse) train/ and agents/: torch.load always with weights_only=True, no pickle,
    no SB3 save()/load(), except in ``train/learning/interop.py``: ``canasta export`` writes an SB3 zip and
    ``canasta import`` loads one only with ``--trust`` (tests/train/test_interop.py checks the refusal
    without it), the one place a user asks for an SB3 file."""
    sources = [p for d in ("train", "agents") for p in sorted((ROOT / d).rglob("*.py"))]
    assert ROOT / "agents" / "checkpoint" / "read.py" in sources
    interop = ROOT / "train" / "learning" / "interop.py"
    found = [f"{p.relative_to(ROOT)}: {what}" for p in sources for pattern, what in UNSAFE
             if pattern.search(p.read_text()) and not (p == interop and what == "SB3 save()/load()")]
    assert "if not trust:" in interop.read_text().split("MaskablePPO.load(")[-2]  # refused before loading
    found += [f"{p.relative_to(ROOT)}:{line}: torch.load without weights_only=True"
              for p in sources for line in _unsafe_torch_loads(p.read_text())]
    assert not found, found
    assert _unsafe_torch_loads("torch.load(f)\ntorch.load(f, weights_only=True)") == [1]


def test_torch_load_is_called_with_weights_only(saved: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []
    real = torch.load

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(torch, "load", spy)
    load_checkpoint(saved)
    assert calls and all(c.get("weights_only") is True for c in calls)
