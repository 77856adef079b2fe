"""A real checkpoint of a tiny policy (net_arch [8, 8]) for the tests that damage checkpoints: one
home for how it is built, so that each test module only says which variant it needs."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

from agents import checkpoint as ck
from agents.checkpoint import build_meta, save_checkpoint
from canasta_env.engine import NUM_ACTIONS
from canasta_env.engine.layout import pack_params
from canasta_env.engine.observation import bounds
from canasta_env.rules import load_rules


def save_tiny_checkpoint(run: Path, rules: str, *, optimizer: bool = True,
                         state: dict[str, Any] | None = None, **policy_kwargs: Any) -> Path:
    """``run/ckpt_000000064``: a tiny policy for ``rules`` (``policy_kwargs`` added), with the
    state of an Adam optimizer that took one step (or none without ``optimizer``) and ``state``
    added to the counters and rng."""
    low, high = bounds(pack_params(load_rules(rules)))
    policy = MaskableActorCriticPolicy(gym.spaces.Box(low, high, dtype=np.float32),
                                       gym.spaces.Discrete(NUM_ACTIONS), lambda _: 3e-4, net_arch=[8, 8],
                                       **policy_kwargs)
    if optimizer:
        policy.optimizer.zero_grad()
        policy.predict_values(torch.zeros((2, low.shape[0]))).sum().backward()
        policy.optimizer.step()
    return save_checkpoint(
        run, "ckpt_000000064", policy_state=policy.state_dict(),
        optimizer_state=policy.optimizer.state_dict() if optimizer else None,
        state={"num_timesteps": 64, "rng": ck.rng_state(), **(state or {})},
        meta=build_meta(config={"algo": "ppo"}, rules=rules, policy=policy))


def rewrite_file(path: Path, name: str, data: bytes) -> None:
    """Replace the checkpoint ``path``'s file ``name`` by ``data`` and re-hash it in meta.json, as an
    attacker would: the file passes the hash check and is refused, or not, for what it holds."""
    (path / name).write_bytes(data)
    meta = json.loads((path / "meta.json").read_text())
    meta["files"][name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (path / "meta.json").write_text(json.dumps(meta))
