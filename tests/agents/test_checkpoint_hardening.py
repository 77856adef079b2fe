"""Checkpoint loading treats a checkpoint as hostile input (issue 12): classes only from an
allow-list, network sizes and counters bounded before anything is allocated, every listed file
verified on every load path, nothing written outside the checkpoint, and every bad value a one-line
``CheckpointError`` naming the file (never a TypeError/KeyError traceback).

``meta.json`` carries the other files' hashes, so an attacker who edits a file also re-hashes it:
``_rewrite`` does exactly that.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")
pytest.importorskip("safetensors")

import gymnasium as gym  # noqa: E402
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy  # noqa: E402

from agents import checkpoint as ck  # noqa: E402
from agents import make_agent  # noqa: E402
from agents.checkpoint import (  # noqa: E402
    CheckpointError,
    load_checkpoint,
    policy_from_checkpoint,
    validate_state,
)
from agents.learned.policy import load_policy_agent  # noqa: E402
from canasta_env.engine import NUM_ACTIONS  # noqa: E402
from canasta_env.engine.layout import pack_params  # noqa: E402
from canasta_env.engine.observation import bounds  # noqa: E402
from canasta_env.rules import load_rules  # noqa: E402
from tests.tiny_checkpoint import save_tiny_checkpoint  # noqa: E402

RULES = "classic_2p"
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _spaces() -> tuple[Any, Any]:
    low, high = bounds(pack_params(load_rules(RULES)))
    return gym.spaces.Box(low, high, dtype=np.float32), gym.spaces.Discrete(NUM_ACTIONS)


def _policy(**kwargs: Any) -> Any:
    obs, act = _spaces()
    return MaskableActorCriticPolicy(obs, act, lambda _: 3e-4, **kwargs)


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real checkpoint of a tiny policy (net_arch [8, 8]) whose optimizer has taken a step."""
    return save_tiny_checkpoint(tmp_path_factory.mktemp("orig") / "run", RULES, activation_fn=torch.nn.ReLU,
                                state={"n_updates": 1, "opponent_pool": ["ckpt_000000032"]})


@pytest.fixture
def saved(original: Path, tmp_path: Path) -> Path:
    """A fresh copy of the checkpoint, free to damage."""
    return Path(shutil.copytree(original, tmp_path / "run" / original.name))


@pytest.fixture
def empty_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    yield cwd
    assert sorted(p.name for p in cwd.iterdir()) == [], "loading wrote into the working directory"


def _meta(path: Path) -> dict[str, Any]:
    return json.loads((path / "meta.json").read_text())


def _edit_meta(path: Path, edit: Callable[[dict[str, Any]], Any]) -> None:
    meta = _meta(path)
    edit(meta)
    (path / "meta.json").write_text(json.dumps(meta))


def _rewrite(path: Path, fname: str, data: bytes) -> None:
    """Replace a file and re-hash it in meta.json, as an attacker would."""
    (path / fname).write_bytes(data)

    def rehash(meta: dict[str, Any]) -> None:
        meta["files"][fname] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}

    _edit_meta(path, rehash)


def _refused(path: Path, match: str, *, via: str = "load") -> str:
    """The one-line CheckpointError of loading ``path`` one way or another."""
    with pytest.raises(CheckpointError, match=match) as err:
        if via == "load":
            load_checkpoint(path)
        elif via == "agent":
            make_agent(str(path), RULES)
        elif via == "policy_agent":
            load_policy_agent(str(path), RULES)
        else:
            raise AssertionError(via)
    msg = str(err.value)
    assert "\n" not in msg and len(msg) < 600, msg
    return msg


def test_the_untouched_checkpoint_loads_on_every_path(saved: Path, empty_cwd: Path) -> None:
    """The control: everything below is refused because of the damage, not the fixture."""
    ckpt = load_checkpoint(saved)
    assert ckpt.optimizer_state is not None and ckpt.optimizer_state["state"]
    assert ckpt.state["num_timesteps"] == 64
    policy = policy_from_checkpoint(ckpt, *_spaces())
    assert [m.out_features for m in policy.mlp_extractor.policy_net if hasattr(m, "out_features")] \
        == [8, 8]
    assert isinstance(policy.mlp_extractor.policy_net[1], torch.nn.ReLU)
    assert make_agent(str(saved), RULES).name == f"policy:{saved.name}"
    assert load_policy_agent(str(saved.parent), RULES).name == f"policy:{saved.name}"


# ---- classes: an allow-list, nothing built from a name --------------------------------------------
WRITER = "torch.utils.tensorboard.writer:SummaryWriter"


@pytest.mark.parametrize(("key", "spec"), [
    ("activation_fn", WRITER),
    ("activation_fn", "os:system"),
    ("activation_fn", "torch.optim.adam:Adam"),  # allowed elsewhere, not as an activation
    ("optimizer_class", WRITER),
    ("optimizer_class", "torch.nn.modules.activation:ReLU"),
    ("features_extractor_class", WRITER),
    ("features_extractor_class", "stable_baselines3.common.torch_layers:NatureCNN"),
])
def test_hostile_class_in_kwargs_is_refused_without_side_effects(
        saved: Path, empty_cwd: Path, key: str, spec: str) -> None:
    _edit_meta(saved, lambda m: m["policy"]["kwargs"].update({key: {"__class__": spec}}))
    for via in ("load", "agent", "policy_agent"):
        msg = _refused(saved, rf"meta\.json: policy {key} .* outside the allowed", via=via)
        assert spec in msg


@pytest.mark.parametrize("spec", [WRITER, "stable_baselines3.common.policies:ActorCriticPolicy",
                                  "builtins:object", 7, None])
def test_hostile_policy_class_is_refused(saved: Path, empty_cwd: Path, spec: Any) -> None:
    _edit_meta(saved, lambda m: m["policy"].update({"class": spec}))
    _refused(saved, r"meta\.json: policy class .* outside the allowed", via="agent")


def test_classes_are_looked_up_not_imported(saved: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    def no_import(name: str, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"imported {name} by name")

    ck.allowed_classes()  # the table itself is built from direct imports, once
    monkeypatch.setattr(importlib, "import_module", no_import)
    _edit_meta(saved, lambda m: m["policy"]["kwargs"].update(
        {"activation_fn": {"__class__": "json:JSONDecoder"}}))
    _refused(saved, "outside the allowed")


@pytest.mark.parametrize(("key", "value", "match"), [
    ("log_dir", "/tmp/x", "not accepted"),
    ("lr_schedule", 1, "not accepted"),
    ("ortho_init", "yes", "not true or false"),
    ("share_features_extractor", 1, "not true or false"),
    ("activation_fn", "torch.nn.modules.activation:ReLU", "not a stored class"),
    ("activation_fn", {"__class__": "torch.nn.modules.activation:ReLU", "x": 1}, "not a stored"),
    ("optimizer_kwargs", {"eps": "1e-5"}, r"optimizer_kwargs\.eps"),
    ("optimizer_kwargs", {"eps": -1}, r"optimizer_kwargs\.eps"),
    ("optimizer_kwargs", {"betas": [0.9, 1.5]}, r"optimizer_kwargs\.betas"),
    ("optimizer_kwargs", {"lr": 1.0}, "key 'lr' not accepted"),
    ("optimizer_kwargs", {"params": []}, "key 'params' not accepted"),
    ("optimizer_kwargs", [1, 2], "not a mapping"),
    ("features_extractor_kwargs", {"log_dir": "."}, "takes none"),
])
def test_policy_kwargs_keys_and_types_are_checked(saved: Path, key: str, value: Any,
                                                  match: str) -> None:
    _edit_meta(saved, lambda m: m["policy"]["kwargs"].update({key: value}))
    _refused(saved, rf"meta\.json: policy kwargs.*{match}", via="agent")


# ---- sizes: bounded before allocating, and tied to the stored weights -----------------------------
@pytest.mark.parametrize("net_arch", [
    [20000, 20000], [8] * 9, [0], [-8], [8.0], [True], "88", None, {"pi": [20000], "vf": [8]},
    {"pi": [8], "qf": [8]}, [{"pi": [8], "vf": [8]}],
])
def test_oversized_or_malformed_net_arch_is_refused_at_once(saved: Path, net_arch: Any) -> None:
    _edit_meta(saved, lambda m: m["policy"]["kwargs"].update({"net_arch": net_arch}))
    started = time.perf_counter()
    _refused(saved, r"meta\.json: policy kwargs net_arch", via="agent")
    assert time.perf_counter() - started < 2.0


@pytest.mark.parametrize("net_arch", [[64, 64], [8], [8, 8, 8], {"pi": [8, 8], "vf": [8]}])
def test_net_arch_that_does_not_match_the_stored_weights_is_refused(saved: Path,
                                                                     net_arch: Any) -> None:
    _edit_meta(saved, lambda m: m["policy"]["kwargs"].update({"net_arch": net_arch}))
    msg = _refused(saved, r"policy\.safetensors: weights do not match the network meta\.json",
                   via="agent")
    assert "net_arch" in msg


def test_weights_for_another_network_are_refused(saved: Path) -> None:
    """policy.safetensors swapped (and re-hashed) for a bigger network's weights."""
    from safetensors.torch import save

    big = _policy(net_arch=[16, 16], activation_fn=torch.nn.ReLU)
    _rewrite(saved, "policy.safetensors", save(big.state_dict()))
    msg = _refused(saved, r"policy\.safetensors: weights do not match")
    assert "mlp_extractor.policy_net.0.weight is [16, " in msg and "needs [8, " in msg


@pytest.mark.parametrize(("what", "space"), [
    ("observation_space", {"type": "Box", "shape": [10**9], "dtype": "float32"}),
    ("observation_space", {"type": "Box", "shape": [2, 2, 2, 2, 2], "dtype": "float32"}),
    ("observation_space", {"type": "Box", "shape": "183", "dtype": "float32"}),
    ("observation_space", {"type": "Dict", "shape": None, "dtype": None}),
    ("action_space", {"type": "Discrete", "shape": [], "dtype": "int64", "n": 10**9}),
    ("action_space", {"type": "Discrete", "shape": [], "dtype": "int64", "n": "106"}),
    ("action_space", "Discrete(106)"),
])
def test_absurd_spaces_are_refused(saved: Path, what: str, space: Any) -> None:
    _edit_meta(saved, lambda m: m["policy"].update({what: space}))
    _refused(saved, rf"meta\.json: policy {what}")


def test_describe_policy_refuses_what_the_loader_would_refuse() -> None:
    """No checkpoint is written that could not be loaded back."""
    with pytest.raises(ValueError, match="cannot be checkpointed.*net_arch"):
        ck.describe_policy(_policy(net_arch=[4] * 9))
    with pytest.raises(ValueError, match="cannot be checkpointed.*activation_fn"):
        ck.describe_policy(_policy(net_arch=[4], activation_fn=torch.nn.Hardtanh))
    assert ck.describe_policy(_policy(net_arch={"pi": [4], "vf": [4, 4]}))["kwargs"]["net_arch"] \
        == {"pi": [4], "vf": [4, 4]}


# ---- state.json -------------------------------------------------------------------------------------
def _state(path: Path) -> dict[str, Any]:
    return json.loads((path / "state.json").read_text())


@pytest.mark.parametrize(("key", "value"), [
    ("num_timesteps", 10**12), ("num_timesteps", 1e12), ("num_timesteps", -1),
    ("num_timesteps", "x"), ("num_timesteps", True), ("num_timesteps", None),
    ("n_updates", -5), ("n_updates", 2.5),
    ("opponent_pool", "ckpt_000000032"), ("opponent_pool", ["../../etc"]),
    ("opponent_pool", ["/abs/ckpt"]), ("opponent_pool", ["a\\b"]), ("opponent_pool", [".tmp-x"]),
    ("opponent_pool", ["latest"]), ("opponent_pool", [""]), ("opponent_pool", [3]),
    ("rng", "seed"), ("rng", {"python": 1, "numpy": 2, "torch": 3}),
])
def test_bad_state_values_are_refused_naming_state_json(saved: Path, key: str, value: Any) -> None:
    state = {**_state(saved), key: value}
    _rewrite(saved, "state.json", json.dumps(state).encode())
    _refused(saved, rf"state\.json: {key}", via="agent")


@pytest.mark.parametrize("part", ["python", "numpy", "torch"])
def test_damaged_rng_state_is_refused(saved: Path, part: str) -> None:
    state = _state(saved)
    rng = state["rng"]
    if part == "python":
        rng["python"][1] = rng["python"][1][:10]
    elif part == "numpy":
        rng["numpy"]["bit_generator"] = "Nope"
    else:
        rng["torch"][0] = 999
    _rewrite(saved, "state.json", json.dumps(state).encode())
    _refused(saved, r"state\.json: rng")


def test_validate_state_for_the_resume_path(saved: Path) -> None:
    state = load_checkpoint(saved).state
    validate_state(saved, state, require=("num_timesteps", "rng"))
    with pytest.raises(CheckpointError, match=r"state\.json: no 'rng'"):
        validate_state(saved, {"num_timesteps": 3}, require=("num_timesteps", "rng"))
    with pytest.raises(CheckpointError, match=r"state\.json: num_timesteps 1000000000000\.0 is not"):
        validate_state(saved / "state.json", {**state, "num_timesteps": 1e12})
    with pytest.raises(CheckpointError, match=r"state\.json: holds a list"):
        validate_state(saved, [])


# ---- every listed file verified on every path -----------------------------------------------------
@pytest.mark.parametrize("via", ["load", "agent", "policy_agent"])
@pytest.mark.parametrize("damage", ["flip", "truncate", "missing", "directory"])
def test_damaged_optimizer_is_refused_on_every_path(saved: Path, via: str, damage: str) -> None:
    file = saved / "optimizer.pt"
    data = bytearray(file.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0x01
        file.write_bytes(bytes(data))
    elif damage == "truncate":
        file.write_bytes(bytes(data[:-1]))
    elif damage == "missing":
        file.unlink()
    else:
        file.unlink()
        file.mkdir()
    expected = {"flip": "sha256 mismatch", "truncate": "truncated", "missing": "missing",
                "directory": "not a regular file"}[damage]
    _refused(saved, rf"optimizer\.pt: {expected}", via=via)


def test_compressed_optimizer_archive_is_refused(saved: Path) -> None:
    """A zip whose records expand (a zip bomb) is refused before torch reads it."""
    src = zipfile.ZipFile(io.BytesIO((saved / "optimizer.pt").read_bytes()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
    _rewrite(saved, "optimizer.pt", out.getvalue())
    _refused(saved, r"optimizer\.pt: unreadable .*compressed")


def test_unlisted_checkpoint_file_is_refused(saved: Path) -> None:
    _edit_meta(saved, lambda m: m["files"].pop("optimizer.pt"))
    _refused(saved, r"optimizer\.pt: present but not listed in meta\.json", via="agent")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_fifo_is_refused_not_waited_on(saved: Path) -> None:
    (saved / "policy.safetensors").unlink()
    os.mkfifo(saved / "policy.safetensors")
    _refused(saved, r"policy\.safetensors: not a regular file")


# ---- meta.json sanity ------------------------------------------------------------------------------
GOOD = {"bytes": 10, "sha256": "0" * 64}


@pytest.mark.parametrize(("edit", "match"), [
    (lambda f: f["state.json"].update(bytes=-1), "bytes -1 is not an integer"),
    (lambda f: f["optimizer.pt"].update(bytes=10**15), "bytes 1000000000000000 is not"),
    (lambda f: f["optimizer.pt"].update(bytes=True), "bytes True is not"),
    (lambda f: f["optimizer.pt"].update(bytes="12"), "bytes '12' is not"),
    (lambda f: f["state.json"].update(bytes=(16 << 20) + 1), "is not an integer in"),
    (lambda f: f["optimizer.pt"].update(sha256="g" * 64), "not 64 lowercase hex"),
    (lambda f: f["optimizer.pt"].update(sha256=None), "not 64 lowercase hex"),
    (lambda f: f["optimizer.pt"].pop("sha256"), "want {'bytes': int, 'sha256': hex}"),
    (lambda f: f["optimizer.pt"].update(extra=1), "want {'bytes'"),
    (lambda f: f.update({"optimizer.pt": [1, 2]}), "want {'bytes'"),
    (lambda f: f.update({"evil.bin": GOOD}), r"files\['evil\.bin'\]: unknown file"),
    (lambda f: f.update({"../../etc/passwd": GOOD}), "not a plain file name"),
    (lambda f: f.update({"sub/policy.safetensors": GOOD}), "not a plain file name"),
    (lambda f: f.update({"..": GOOD}), "not a plain file name"),
    (lambda f: f.update({"meta.json": GOOD}), "unknown file"),
    (lambda f: f.pop("policy.safetensors"), "'files' must give"),
])
def test_bad_files_entries_are_refused_naming_meta_json(saved: Path, edit: Any, match: str) -> None:
    _edit_meta(saved, lambda m: edit(m["files"]))
    _refused(saved, rf"meta\.json: .*{match}", via="agent")


@pytest.mark.parametrize("edit", [
    lambda m: m.update(files=["policy.safetensors"]),
    lambda m: m.update(files=None),
    lambda m: m.update(policy=[]),
    lambda m: m.update(policy={"class": m["policy"]["class"]}),
    lambda m: m["policy"].update(kwargs=[]),
    lambda m: m["policy"].update(extra=1),
    lambda m: m.update(format=["x"] * 10**4),
])
def test_wrong_types_in_meta_are_checkpoint_errors(saved: Path, edit: Any) -> None:
    _edit_meta(saved, edit)
    _refused(saved, r"meta\.json: ", via="agent")


@pytest.mark.parametrize("content", [b"[" * 100_000, b"\xff\xfe{}", b"{}", b"null"])
def test_unparseable_or_empty_meta_is_refused(saved: Path, content: bytes) -> None:
    (saved / "meta.json").write_bytes(content)
    _refused(saved, r"meta\.json: ")


def test_oversized_json_is_refused_before_reading(saved: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    with open(saved / "meta.json", "r+b") as f:  # sparse: no 16 MB written
        f.truncate(ck.MAX_JSON_BYTES + 1)
    reads: list[int] = []
    real = json.loads
    monkeypatch.setattr(json, "loads", lambda data, *a, **k: reads.append(len(data)) or real(data))
    _refused(saved, rf"meta\.json: {ck.MAX_JSON_BYTES + 1} bytes, more than")
    assert reads == []


def test_huge_values_are_quoted_short(saved: Path) -> None:
    _edit_meta(saved, lambda m: m["policy"]["kwargs"].update(net_arch=[8] * 100_000))
    msg = _refused(saved, "net_arch")
    assert len(msg) < 400


@pytest.mark.parametrize("name", ["x" * 5000, "a\0b", "no/such/run"])
def test_make_agent_with_an_impossible_or_missing_path_is_an_unknown_agent(name: str) -> None:
    with pytest.raises(ValueError, match="unknown agent") as err:
        make_agent(name, RULES)
    assert len(str(err.value)) < 200


@pytest.mark.parametrize("latest", [True, False])
def test_a_run_whose_newest_checkpoint_is_damaged_is_refused_not_played_older(
        saved: Path, latest: bool) -> None:
    run = saved.parent
    newer = Path(shutil.copytree(saved, run / "ckpt_000000128"))
    if latest:
        (run / "latest").write_text(newer.name)
    make_agent(str(run), RULES)  # the control: both intact, the newest plays
    policy = newer / "policy.safetensors"
    policy.write_bytes(policy.read_bytes()[:100])
    msg = _refused(run, "ckpt_000000128", via="agent")
    assert "incomplete" in msg and saved.name in msg  # names the older one to use instead
    make_agent(str(saved), RULES)  # named outright, the older checkpoint still plays
