"""Models in and out of the project: a checkpoint as an sb3-contrib ``MaskablePPO`` zip or an ONNX
policy (``canasta export``), and a ``MaskablePPO`` zip as a safe checkpoint (``canasta import``).

The network is the same on both sides (sb3-contrib's ``MaskableActorCriticPolicy``, built from the
checkpoint's allow-listed description), so an export is a copy of the weights, not a retraining.
The ONNX graph takes ``observation`` (float32, (B, D)) and ``action_mask`` (bool, (B, A)) and gives
``logits`` (float32, (B, A)) with illegal actions at -1e8: argmax is the deterministic action,
softmax the policy. An SB3 zip holds pickles, which run code when loaded, so ``import`` requires
``trust`` and says so; the checkpoint it writes holds only tensors and JSON.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

FORMATS = ("sb3", "onnx")


def _load(source: str) -> tuple[Any, Any, Any]:
    """(checkpoint, policy, rules) of a checkpoint or run directory (its latest checkpoint), for the
    rules it was trained on."""
    from agents.checkpoint import load_checkpoint
    from agents.learned.policy import load_policy_agent
    from canasta_env.rules import RuleSet

    ckpt = load_checkpoint(source, load_optimizer=False)
    rules = RuleSet.from_dict(ckpt.meta["rules"])
    return ckpt, load_policy_agent(source, rules).policy, rules


def export_sb3(source: str, out: str | Path) -> Path:
    """Write the policy of ``source`` as a ``MaskablePPO`` zip that ``MaskablePPO.load`` opens;
    ``predict(obs, action_masks=mask, deterministic=True)`` then plays as the checkpoint does."""
    from sb3_contrib import MaskablePPO

    from canasta_env.envs.sb3_env import CanastaVecEnv

    ckpt, policy, rules = _load(source)
    config = ckpt.meta.get("config", {})
    env = CanastaVecEnv(1, rules)
    net_arch = list(config.get("net_arch", [256, 256]))
    model = MaskablePPO("MlpPolicy", env, policy_kwargs={"net_arch": net_arch},
                        gamma=float(config.get("gamma", 0.995)), device="cpu", verbose=0)
    model.policy.load_state_dict(policy.state_dict())
    model.num_timesteps = int(ckpt.state.get("num_timesteps", 0))
    out = sb3_path(Path(out))
    model.save(out)
    return out


def sb3_path(out: Path) -> Path:
    """Where SB3 writes a save named ``out`` (it adds ``.zip`` when missing)."""
    return out if out.suffix == ".zip" else out.with_name(out.name + ".zip")


def _masked_logits(policy: Any) -> Any:
    """The torch module the ONNX graph is traced from (built here: torch is an extra)."""
    import torch

    from agents.learned.policy import masked_logits

    class MaskedLogits(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.policy = policy

        def forward(self, observation: torch.Tensor, action_mask: torch.Tensor) -> torch.Tensor:
            return masked_logits(self.policy, observation, action_mask)

    return MaskedLogits().eval()


def torch_logits(policy: Any, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The masked logits the ONNX graph computes, from the torch policy."""
    import torch

    with torch.no_grad():
        return _masked_logits(policy)(torch.as_tensor(obs), torch.as_tensor(mask)).numpy()


def export_onnx(source: str, out: str | Path) -> Path:
    """Write the policy of ``source`` as an ONNX graph (observation, action_mask -> logits) with
    a dynamic batch axis."""
    import torch

    _, policy, _ = _load(source)
    module = _masked_logits(policy)
    dim = int(policy.observation_space.shape[0])
    actions = int(policy.action_space.n)
    example = (torch.zeros(2, dim), torch.ones(2, actions, dtype=torch.bool))
    out = Path(out)
    import onnx  # noqa: F401  (the exporter needs it: the 'onnx' extra)
    torch.onnx.export(module, example, str(out), input_names=["observation", "action_mask"],
                      output_names=["logits"], dynamic_axes={"observation": {0: "batch"},
                                                             "action_mask": {0: "batch"},
                                                             "logits": {0: "batch"}},
                      dynamo=False)
    return out


def import_sb3(zip_path: str | Path, run_dir: str | Path, rules: Any, *, trust: bool) -> Path:
    """A ``MaskablePPO`` zip as a checkpoint of a new run directory (weights, optimizer state and
    counters; the run can be resumed with ``canasta train --resume``)."""
    from sb3_contrib import MaskablePPO

    from agents.checkpoint import build_meta, checkpoint_name, current_layout, rng_state, save_checkpoint
    from canasta_env.rules import load_rules
    from train.common.run_dir import open_run

    if not trust:
        raise ValueError(f"{zip_path}: an SB3 zip holds Python pickles, and loading one runs the code "
                         "inside it; pass --trust if you trust where it came from")
    rules = load_rules(rules)
    path = Path(zip_path)
    if not path.is_file():
        raise ValueError(f"{path}: no such model file")
    try:
        model = MaskablePPO.load(path, device="cpu")
    except Exception as exc:  # a zip SB3 cannot read: one line, whatever it raised
        raise ValueError(f"{path}: not a MaskablePPO model ({type(exc).__name__}: {exc})") from None
    layout = current_layout(rules)
    obs_shape = tuple(getattr(model.observation_space, "shape", ()) or ())
    n = getattr(model.action_space, "n", None)
    if obs_shape != (layout["obs_dim"],) or n != layout["num_actions"]:
        raise ValueError(f"{path}: model spaces (observation {obs_shape}, actions {n}) do not fit "
                         f"{rules.name} (observation ({layout['obs_dim']},), "
                         f"actions {layout['num_actions']})")
    run = Path(run_dir)
    config = {"rules": rules.name, "net_arch": list(model.policy.net_arch if isinstance(
        model.policy.net_arch, list) else model.policy.net_arch.get("pi", [])), "gamma": model.gamma,
        "imported_from": str(path)}
    with open_run(run, resume=False, overwrite=False):
        steps = int(model.num_timesteps)
        meta = build_meta(config=config, rules=rules, policy=model.policy)
        state = {"num_timesteps": steps, "n_updates": int(getattr(model, "_n_updates", 0)),
                 "rng": rng_state(), "opponent_pool": []}
        return save_checkpoint(run, checkpoint_name(steps), policy_state=model.policy.state_dict(),
                               optimizer_state=model.policy.optimizer.state_dict(), state=state, meta=meta)


