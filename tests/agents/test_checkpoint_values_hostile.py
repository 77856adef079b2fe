"""A checkpoint's weights and rules, tampered and re-hashed: NaN, infinite or non-float weights
and rules stored as a name or a path are refused with one line naming the file, and a path that
is a file or a dangling link says so. Each refusal has its twin that still loads."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")
safetensors_torch = pytest.importorskip("safetensors.torch")

from agents import make_agent  # noqa: E402
from agents.checkpoint import CheckpointError, load_checkpoint, save_checkpoint  # noqa: E402
from canasta_env.engine import init, observe  # noqa: E402
from canasta_env.rules import load_rules  # noqa: E402
from tests.tiny_checkpoint import save_tiny_checkpoint  # noqa: E402
from train.cli.main import main as cli_main  # noqa: E402

RULES = "classic_2p"
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real checkpoint of a tiny policy (net_arch [8, 8]), without optimizer state."""
    return save_tiny_checkpoint(tmp_path_factory.mktemp("orig") / "run", RULES, optimizer=False)


@pytest.fixture
def saved(original: Path, tmp_path: Path) -> Path:
    """A fresh copy of the checkpoint, free to damage."""
    return Path(shutil.copytree(original, tmp_path / "run" / original.name))


def _edit_meta(path: Path, edit: Callable[[dict[str, Any]], Any]) -> None:
    meta = json.loads((path / "meta.json").read_text())
    edit(meta)
    (path / "meta.json").write_text(json.dumps(meta))


def _rewrite_weights(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Change the stored weights and re-hash them in meta.json, as an attacker would."""
    weights = safetensors_torch.load_file(path / "policy.safetensors")
    change(weights)
    safetensors_torch.save_file(weights, path / "policy.safetensors")
    data = (path / "policy.safetensors").read_bytes()
    _edit_meta(path, lambda meta: meta["files"].__setitem__(
        "policy.safetensors", {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}))


def _refused(path: Path, match: str) -> str:
    with pytest.raises(CheckpointError, match=match) as err:
        make_agent(str(path), RULES)
    msg = str(err.value)
    assert "\n" not in msg and len(msg) < 400, msg
    return msg


def _plays(path: Path) -> None:
    agent = make_agent(str(path), RULES)
    state = init(RULES, 4, 0)
    acts = agent.act(observe(state, state.current_player), state.legal_action_mask,
                     np.random.default_rng(0))
    assert state.legal_action_mask[np.arange(4), acts].all()


def _set(key: str, value: float) -> Callable[[dict[str, Any]], None]:
    def change(weights: dict[str, Any]) -> None:
        weights[key][0] = value
    return change


@pytest.mark.parametrize(("key", "value"), [("action_net.bias", float("nan")),
                                            ("mlp_extractor.policy_net.0.weight", float("inf")),
                                            ("value_net.bias", float("-inf"))])
def test_nan_or_infinite_weights_are_refused(saved: Path, key: str, value: float) -> None:
    # before: loaded; every probability NaN, so the agent played the first legal action each time
    _rewrite_weights(saved, _set(key, value))
    assert f"'{key}' holds NaN or infinite weights" in _refused(saved, "policy.safetensors: ")
    with pytest.raises(CheckpointError, match="NaN or infinite"):
        load_checkpoint(saved)


@pytest.mark.parametrize("dtype", ["int64", "bool", "complex64", "uint8"])
def test_weights_that_are_not_floats_are_refused(saved: Path, dtype: str) -> None:
    # before: load_state_dict cast them to float32 without a word (complex: a UserWarning only)
    def cast(weights: dict[str, Any]) -> None:
        for k in weights:
            weights[k] = weights[k].to(getattr(torch, dtype))
    _rewrite_weights(saved, cast)
    _refused(saved, rf"policy.safetensors: '[\w.]+' is torch.{dtype}, not a tensor of floating-point")


@pytest.mark.parametrize("dtype", ["float16", "float64", "float32"])
def test_finite_float_weights_of_any_width_still_play(saved: Path, dtype: str) -> None:  # the twin
    def cast(weights: dict[str, Any]) -> None:
        for k in weights:
            weights[k] = weights[k].to(getattr(torch, dtype)) * 1.5
    _rewrite_weights(saved, cast)
    _plays(saved)


def test_canasta_gauntlet_of_nan_weights_is_one_line(saved: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    _rewrite_weights(saved, _set("action_net.weight", float("nan")))
    assert cli_main(["gauntlet", str(saved), "--deals", "1", "--opponents", "random"]) == 2
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in out + err and len(lines) == 1, err
    assert lines[0].startswith("canasta gauntlet: error: ") and "NaN or infinite" in lines[0]


@pytest.mark.parametrize("rules", ["classic_2p", "/etc/passwd", "rules.yaml", ["classic_2p"], 3])
def test_rules_stored_as_a_name_or_path_are_refused(saved: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch, rules: Any) -> None:
    # before: a string was read as a preset or a file (relative to the working directory), and a
    # file that is no rules file had its first line quoted in the error
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rules.yaml").write_text("num_players: 2\n")
    _edit_meta(saved, lambda meta: meta.__setitem__("rules", rules))
    msg = _refused(saved, r"meta.json: rules .*: want the rule options \(a JSON object\)")
    assert "root:" not in msg


def test_stored_rule_options_still_load(saved: Path) -> None:  # the twin
    _edit_meta(saved, lambda meta: meta.__setitem__("rules", load_rules(RULES).to_dict()))
    _plays(saved)
    assert load_checkpoint(saved, rules=RULES).meta["rules"]["num_players"] == 2


def test_a_file_or_a_dangling_link_is_not_called_missing(saved: Path, tmp_path: Path) -> None:
    # before: both were 'no such checkpoint or run directory'
    with pytest.raises(CheckpointError, match=r"meta.json: a file, not a checkpoint or run directory"):
        load_checkpoint(saved / "meta.json")
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    with pytest.raises(CheckpointError, match="loop: a symbolic link to nothing"):
        load_checkpoint(loop)
    with pytest.raises(CheckpointError, match="nowhere: no such checkpoint or run directory"):
        load_checkpoint(tmp_path / "nowhere")
    link = tmp_path / "link"
    os.symlink(saved, link)  # the twin: a link to a checkpoint is one
    assert load_checkpoint(link).state["num_timesteps"] == 64


def test_a_policy_without_its_rules_is_refused_on_every_path(saved: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    # before: make_agent said 'stored rules unusable (KeyError: 'rules')'; canasta export of it
    # ended in a KeyError traceback
    _edit_meta(saved, lambda meta: meta.pop("rules"))
    _refused(saved, r"meta.json: no 'rules' recorded")
    assert cli_main(["export", str(saved), str(tmp_path / "out.zip"), "--format", "sb3"]) == 2
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and err.count("\n") == 1 and "no 'rules' recorded" in err, err
    assert not (tmp_path / "out.zip").exists()


def test_a_checkpoint_of_no_policy_still_needs_no_rules(tmp_path: Path) -> None:  # the twin
    save_checkpoint(tmp_path / "run", "ckpt_000000001", policy_state={"w": torch.ones(2)},
                    optimizer_state=None, state={"num_timesteps": 1}, meta={})
    assert load_checkpoint(tmp_path / "run").state["num_timesteps"] == 1


def test_weights_that_overflow_in_play_are_one_line(saved: Path) -> None:
    # finite weights that overflow float32 in the forward pass: every probability NaN; before, the
    # agent played the first legal action at every decision in silence
    def overflow(w: dict[str, Any]) -> None:  # every hidden unit at tanh(100) = 1, so logits = 8 x 3e38
        w["mlp_extractor.policy_net.2.weight"].zero_()
        w["mlp_extractor.policy_net.2.bias"].fill_(100.0)
        w["action_net.weight"].fill_(3e38)
    _rewrite_weights(saved, overflow)
    agent = make_agent(str(saved), RULES)
    state = init(RULES, 4, 0)
    with pytest.raises(ValueError, match=r"^policy:ckpt_000000064: the network's output is NaN or infinite"):
        agent.act(observe(state, state.current_player), state.legal_action_mask, np.random.default_rng(0))


@pytest.mark.parametrize("file", ["meta.json", "state.json"])
def test_a_key_given_twice_is_refused(saved: Path, file: str) -> None:
    # before: json kept the last of the two in silence (records and the web already refused them)
    text = (saved / file).read_text()
    doubled = text.replace('"format": ', '"format": "x", "format": ', 1) if file == "meta.json" else \
        text.replace('"num_timesteps": ', '"num_timesteps": 1, "num_timesteps": ', 1)
    assert doubled != text
    (saved / file).write_text(doubled)
    if file == "state.json":
        data = doubled.encode()
        _edit_meta(saved, lambda meta: meta["files"].__setitem__(
            "state.json", {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}))
    with pytest.raises(CheckpointError, match=rf"{file}: unreadable.*duplicate key"):
        load_checkpoint(saved)
    (saved / file).write_text(text)  # the twin: the same file without the repeated key
    if file == "state.json":
        data = text.encode()
        _edit_meta(saved, lambda meta: meta["files"].__setitem__(
            "state.json", {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}))
    assert load_checkpoint(saved).state["num_timesteps"] == 64
