"""Models in and out (``canasta export`` / ``canasta import``): a checkpoint as a MaskablePPO zip
that ``MaskablePPO.load`` plays like the checkpoint, back to a checkpoint that plays the same, and
an ONNX policy whose logits match torch's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from agents import make_agent
from agents.learned.policy import MASKED_LOGIT
from canasta_env.envs.learner import LearnerBatch, LearnerConfig
from train.learning import interop

ZOO = "agents/zoo/classic_2p"


@pytest.fixture(scope="module")
def played() -> tuple[np.ndarray, np.ndarray]:
    """1,000 (observation, mask) pairs of real decisions: the learner seat playing randomly against
    the heuristic."""
    batch = LearnerBatch(LearnerConfig(rules="classic_2p", opponent="heuristic"), 100)
    batch.reset(np.arange(100))
    rng = np.random.default_rng(0)
    obs, masks = [], []
    while sum(len(o) for o in obs) < 1000:
        o, m = batch.observations(), batch.action_masks()
        live = m.any(axis=1)
        obs.append(o[live])
        masks.append(m[live])
        out = batch.step(np.array([rng.choice(np.flatnonzero(r)) if r.any() else 0 for r in m]))
        batch.reset_rows(np.flatnonzero(out.terminated | out.truncated))
    return np.concatenate(obs)[:1000], np.concatenate(masks)[:1000]


def test_sb3_export_plays_like_the_checkpoint_and_imports_back(played: tuple[np.ndarray, np.ndarray],
                                                               tmp_path: Path) -> None:
    from sb3_contrib import MaskablePPO

    obs, masks = played
    reference = make_agent(ZOO, "classic_2p").act(obs, masks, None)
    zip_path = interop.export_sb3(ZOO, tmp_path / "model.zip")
    model = MaskablePPO.load(zip_path, device="cpu")
    actions, _ = model.predict(obs, action_masks=masks, deterministic=True)
    assert np.array_equal(actions, reference)
    interop.import_sb3(zip_path, tmp_path / "run", "classic_2p", trust=True)
    assert np.array_equal(make_agent(str(tmp_path / "run"), "classic_2p").act(obs, masks, None), reference)
    # negative twin: another network plays differently on the same observations
    other = make_agent("greedy", "classic_2p").act(obs, masks, None)
    assert not np.array_equal(other, reference)


def test_onnx_logits_match_torch(played: tuple[np.ndarray, np.ndarray], tmp_path: Path) -> None:
    import onnxruntime

    obs, masks = played
    path = interop.export_onnx(ZOO, tmp_path / "policy.onnx")
    session = onnxruntime.InferenceSession(str(path))
    logits = session.run(["logits"], {"observation": obs, "action_mask": masks})[0]
    agent = make_agent(ZOO, "classic_2p")
    expected = interop.torch_logits(agent.policy, obs, masks)  # type: ignore[attr-defined]
    assert logits.shape == (1000, masks.shape[1])
    assert np.abs(np.where(masks, logits - expected, 0.0)).max() < 1e-4
    assert (logits[~masks] <= MASKED_LOGIT / 2).all()  # illegal actions stay out
    assert np.array_equal(logits.argmax(axis=1), agent.act(obs, masks, None))


def test_import_needs_trust_and_export_does_not_overwrite(tmp_path: Path,
                                                          cli_here: Callable[..., tuple[int, str]]) -> None:
    zip_path = interop.export_sb3(ZOO, tmp_path / "model.zip")
    status, err = cli_here("import", str(zip_path), str(tmp_path / "run"), "--rules", "classic_2p")
    assert status == 2 and "pickles" in err and "--trust" in err
    assert not (tmp_path / "run").exists()
    before = zip_path.read_bytes()
    for out in (zip_path, zip_path.with_suffix("")):  # SB3 adds .zip to a name without it
        status, err = cli_here("export", ZOO, str(out), "--format", "sb3")
        assert status == 2 and f"{zip_path}: already exists" in err
    assert zip_path.read_bytes() == before
    status, err = cli_here("import", str(zip_path), str(tmp_path / "run4"), "--rules", "classic_4p",
                          "--trust")
    assert status == 2 and "do not fit classic_4p" in err
    (tmp_path / "junk.zip").write_bytes(b"not a zip")
    status, err = cli_here("import", str(tmp_path / "junk.zip"), str(tmp_path / "run5"), "--rules",
                          "classic_2p", "--trust")
    assert status == 2 and "not a MaskablePPO model" in err
    assert len(err.strip().splitlines()) == 1
