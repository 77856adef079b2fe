"""Models in and out of the project: a checkpoint as an sb3-contrib ``MaskablePPO`` zip or an ONNX
policy (``canasta export``), and a ``MaskablePPO`` zip as a safe checkpoint (``canasta import``).

The network is the same on both sides (sb3-contrib's ``MaskableActorCriticPolicy``, built from the
checkpoint's allow-listed description), so an export is a copy of the weights, not a retraining.
The ONNX graph takes ``observation`` (float32, (B, D)) and ``action_mask`` (bool, (B, A)) and gives
``logits`` (float32, (B, A)) with illegal actions at -1e8: argmax is the deterministic action,
softmax the policy. An SB3 zip holds pickles, which run code when loaded, so ``import`` requires
``trust`` and says so; the checkpoint it writes holds only tensors and JSON, and a ``config.json`` of
training options where ``canasta train`` can resume it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from canasta_env.messages import one_line, short_repr
from train.common.outputs import check_output_file

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


def check_out(out: str | Path, what: str = "OUT", *, folder: bool = False, sb3: bool = False) -> Path:
    """``out`` as a path to write: a ``folder`` (any name but a blank one, which would mean the
    current folder), or a file ``check_output_file`` accepts (with ``sb3``, the zip SB3 writes)."""
    if folder:
        if not str(out).strip():
            raise ValueError(f"{what} {short_repr(str(out))}: not a folder name")
        return Path(out)
    if not str(out).strip():
        raise ValueError(f"{what} {short_repr(str(out))}: not a file name")
    # a link to nothing is followed on purpose: --force writes the export at its target
    return check_output_file(sb3_path(Path(out)) if sb3 else out, what, dangling_ok=True)


def _check_not_source(out: Path, ckpt: Path) -> None:
    """Refuse an ``out`` that is a file of a checkpoint (a folder holding meta.json) or of the run of
    ``ckpt``, the checkpoint exported (``--force`` replaced the checkpoint's policy.safetensors with
    the export: the checkpoint was lost)."""
    from agents.checkpoint import FILES, META_FILE
    from train.common.run_dir import RUN_FILES

    target, run = out.resolve(), ckpt.resolve().parent
    if target.name in FILES and (target.parent / META_FILE).is_file():
        raise ValueError(f"OUT {out}: a file of the checkpoint {target.parent}; name another file")
    if target in {run / name for name in RUN_FILES}:
        raise ValueError(f"OUT {out}: a file of the run {run} it exports; name another file")


def _write_atomic(out: Path, write: Callable[[Path], Any]) -> Path:
    """``train.common.outputs.replace_file`` onto ``out`` (through a link ``--force`` replaces): a
    failed write (a full disk) leaves no half-written file at ``out`` and is one line naming it."""
    from train.common.outputs import replace_file

    try:
        replace_file(out.resolve(), write)
    except OSError as exc:
        raise ValueError(f"OUT {out}: cannot write it ({exc.strerror or exc})") from None
    return out


def _stored_gamma(ckpt: Any) -> float:
    """The discount factor the checkpoint's run trained with (meta.json's config.gamma; the training
    default 0.995 when none is stored), checked: meta.json is not hash-checked."""
    from agents.checkpoint import META_FILE, CheckpointError

    file, config = ckpt.path / META_FILE, ckpt.meta.get("config", {})
    if not isinstance(config, dict):
        raise CheckpointError(f"{file}: config {short_repr(config)} is not a mapping of training options")
    gamma = config.get("gamma", 0.995)
    if type(gamma) not in (int, float) or not 0 <= gamma <= 1:  # NaN fails the range too
        raise CheckpointError(f"{file}: config.gamma {short_repr(gamma)} is not a number in [0, 1]")
    return float(gamma)


def export_sb3(source: str, out: str | Path) -> Path:
    """Write the policy of ``source`` as a ``MaskablePPO`` zip that ``MaskablePPO.load`` opens;
    ``predict(obs, action_masks=mask, deterministic=True)`` then plays as the checkpoint does.

    The network is built from meta.json's checked policy description (``policy_spec``: classes,
    arguments, bounded layer sizes, the weights' shapes), not from its free-form config."""
    from sb3_contrib import MaskablePPO

    from agents.checkpoint import META_FILE, POLICY_FILE, CheckpointError
    from agents.checkpoint.policy_spec import policy_spec
    from canasta_env.envs.sb3_env import CanastaVecEnv
    out = check_out(out, sb3=True)  # SB3 would make a missing folder
    ckpt, policy, rules = _load(source)
    _check_not_source(out, ckpt.path)
    cls, kwargs = policy_spec(ckpt.path / META_FILE, ckpt.meta.get("policy"))
    gamma = _stored_gamma(ckpt)
    try:
        model = MaskablePPO(cls, CanastaVecEnv(1, rules), policy_kwargs=kwargs, gamma=gamma,
                            device="cpu", verbose=0)
        model.policy.load_state_dict(policy.state_dict())
    except (TypeError, ValueError, RuntimeError, AssertionError) as exc:
        raise CheckpointError(f"{ckpt.path / POLICY_FILE}: does not fit the policy {META_FILE} "
                              f"describes ({one_line(exc, 200)})") from None
    model.num_timesteps = int(ckpt.state.get("num_timesteps", 0))
    return _write_atomic(out, model.save)


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

    out = check_out(out)  # before the load: the exporter makes no folder
    ckpt, policy, _ = _load(source)
    _check_not_source(out, ckpt.path)
    module = _masked_logits(policy)
    dim = int(policy.observation_space.shape[0])
    actions = int(policy.action_space.n)
    example = (torch.zeros(2, dim), torch.ones(2, actions, dtype=torch.bool))
    import onnx  # noqa: F401  (the exporter needs it: the 'onnx' extra)
    return _write_atomic(out, lambda tmp: torch.onnx.export(
        module, example, str(tmp), input_names=["observation", "action_mask"], output_names=["logits"],
        dynamic_axes={"observation": {0: "batch"}, "action_mask": {0: "batch"}, "logits": {0: "batch"}},
        dynamo=False))


# Hyperparameters of a MaskablePPO model that become the imported run's training options (a resume
# starts from them); its pacing (envs, rollout length, minibatch size) is the resume's flags' to set.
CARRIED = ("learning_rate", "gamma", "gae_lambda", "ent_coef", "clip_range", "vf_coef", "max_grad_norm",
           "n_epochs")
# Policy arguments that do not change the network a resume continues: used at initialisation only,
# or carried by the optimizer's stored state (its eps and betas); net_arch is compared as layers.
_SETUP_ONLY = ("ortho_init", "normalize_images", "optimizer_kwargs", "net_arch")


def import_sb3(zip_path: str | Path, run_dir: str | Path, rules: Any, *,
               trust: bool) -> tuple[Path, str | None]:
    """A ``MaskablePPO`` zip as a checkpoint of a new run directory (weights, optimizer state and
    counters) and, when ``canasta train`` builds the same network, the run's ``config.json`` (the
    model's hyperparameters as training options), so that ``canasta train --resume`` continues it.

    Returns the checkpoint and None, or why the run cannot be resumed (the checkpoint still plays
    and exports; its meta.json config then names no net_arch)."""
    from sb3_contrib import MaskablePPO

    from agents.checkpoint import build_meta, checkpoint_name, current_layout, save_checkpoint
    from canasta_env.rules import load_rules
    from train.common.run_dir import RunDirError, check_run, holds_run, open_run, write_config

    run = check_out(run_dir, "RUN_DIR", folder=True)
    if holds_run(run):  # open_run's own message offers --resume, which import has not
        raise ValueError(f"RUN_DIR {run}: already holds a run; import writes a new run: choose another "
                         "folder")
    try:  # and the others --run-dir, which import has not either (RUN_DIR is its argument)
        check_run(run, resume=False, overwrite=False)
    except RunDirError as exc:
        raise ValueError(str(exc).replace("another --run-dir", "another RUN_DIR")) from None
    path = Path(zip_path)
    _check_zip(path)  # reads the zip's directory only: no pickle is opened before --trust
    if not trust:
        raise ValueError(f"{zip_path}: an SB3 zip holds Python pickles, and loading one runs the code "
                         "inside it; pass --trust if you trust where it came from")
    given, rules = rules, load_rules(rules)
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
    _check_finite(path, model.policy)
    layers, problem = _trainer_layers(model.policy)
    config = _run_config(model, path, given if isinstance(given, str) else rules.name, run, layers)
    state = _import_state(path, model)
    with open_run(run, resume=False, overwrite=False):
        meta = build_meta(config=config, rules=rules, policy=model.policy,
                          extra={"imported_from": str(path)})
        try:
            ckpt = save_checkpoint(run, checkpoint_name(state["num_timesteps"]),
                                   policy_state=model.policy.state_dict(),
                                   optimizer_state=model.policy.optimizer.state_dict(), state=state,
                                   meta=meta)
            if problem is None:  # after the checkpoint: a failed import leaves no run behind
                write_config(run, config)
        except OSError as exc:  # a full disk: name the run, not only errno
            raise ValueError(f"RUN_DIR {run}: cannot write the imported run ({exc.strerror or exc})"
                             ) from None
    return ckpt, problem


def _import_state(path: Path, model: Any) -> dict[str, Any]:
    """The imported checkpoint's state.json: the model's counters, checked as the checkpoint loader
    checks them (a negative or huge num_timesteps wrote a run that no command could load)."""
    from agents.checkpoint import MAX_COUNTER, rng_state

    counters = {"num_timesteps": getattr(model, "num_timesteps", None),
                "n_updates": getattr(model, "_n_updates", 0)}
    for key, value in counters.items():
        if not _integral(value) or not 0 <= value <= MAX_COUNTER:
            raise ValueError(f"{path}: its {key} {short_repr(value)} is not an integer in [0, {MAX_COUNTER}]")
    return {**{key: int(value) for key, value in counters.items()}, "rng": rng_state(), "opponent_pool": []}


# What a member of an SB3 zip may declare: the weights and optimizer files (.pth) as a checkpoint's,
# the JSON of settings and the small text files far less (a 2 MB zip declaring 2 GB of JSON whitespace
# took 4.5 GB of memory to load).
_MAX_DATA_BYTES = 1 << 28


def _check_zip(path: Path) -> None:
    """Refuse, from the zip's directory alone, a model file that is not a regular file or a zip,
    or whose members declare more bytes than a model holds (SB3 reads each whole into memory)."""
    import zipfile

    from agents.checkpoint import MAX_FILE_BYTES

    if not path.exists():
        raise ValueError(f"{path}: no such model file")
    if not path.is_file():
        raise ValueError(f"{path}: not a regular file (a folder, pipe or device); name a MaskablePPO zip")
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise ValueError(f"{path}: not a MaskablePPO model (not a readable zip: {one_line(exc, 120)})"
                         ) from None
    for info in members:
        limit = MAX_FILE_BYTES if info.filename.endswith(".pth") else _MAX_DATA_BYTES
        if info.file_size > limit:
            raise ValueError(f"{path}: member {short_repr(info.filename, 80)} declares {info.file_size:,} "
                             f"bytes, more than a MaskablePPO model's ({limit:,}): not a model")


def _check_finite(path: Path, policy: Any) -> None:
    """Refuse a model whose weights or optimizer state hold NaN or infinity: the checkpoint written
    would be refused by every command that loads it (a diverged or damaged model)."""
    import torch

    for what, tree in (("weights hold", policy.state_dict()),
                       ("optimizer state holds", policy.optimizer.state_dict())):
        stack = [tree]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, (list, tuple)):
                stack.extend(item)
            elif (isinstance(item, torch.Tensor) and item.is_floating_point()
                  and not bool(item.isfinite().all())):
                raise ValueError(f"{path}: its {what} NaN or infinite values (a diverged or damaged "
                                 "model)")


def _trainer_layers(policy: Any) -> tuple[list[int] | None, str | None]:
    """The ``net_arch`` with which ``canasta train`` builds ``policy``'s network, and None; or None
    and why it builds another (a resume would load the weights into a different network)."""
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    from agents.checkpoint import MAX_LAYERS, MAX_UNITS, describe_policy

    arch = policy.net_arch
    if isinstance(arch, dict):
        if arch.get("pi", []) != arch.get("vf", []):
            return None, (f"its policy and value networks differ (net_arch {short_repr(arch)}); canasta "
                          "train builds both from one list of layer sizes")
        arch = arch.get("pi", [])
    if not 1 <= len(arch) <= MAX_LAYERS or not all(1 <= u <= MAX_UNITS for u in arch):
        return None, f"net_arch {short_repr(arch)}: canasta train builds 1 to {MAX_LAYERS} layers"
    ours = MaskableActorCriticPolicy(policy.observation_space, policy.action_space, lambda _: 0.0,
                                     net_arch=list(arch))
    have, want = describe_policy(policy)["kwargs"], describe_policy(ours)["kwargs"]
    for key in sorted(set(have) | set(want)):
        if key not in _SETUP_ONLY and have.get(key) != want.get(key):
            return None, (f"its {key} {short_repr(have.get(key))} is not canasta train's "
                          f"{short_repr(want.get(key))}")
    return list(arch), None


def _run_config(model: Any, path: Path, rules: str, run: Path, layers: list[int] | None) -> dict[str, Any]:
    """The imported run's training options: every one ``TrainArgs`` has, the model's hyperparameters
    (``CARRIED``; one ``canasta train`` would refuse keeps its default, with a warning) and
    ``layers``; without layers, only the options set here (the trainer cannot rebuild the network)."""
    import dataclasses
    import sys

    from train.learning.config import TrainArgs, load_args

    base: dict[str, Any] = {"rules": rules, "run_dir": str(run)}
    if layers is not None:
        base["net_arch"] = layers
    for name in CARRIED:
        value = getattr(model, name, None)
        if callable(value):  # an SB3 schedule: its value where the model stopped
            try:
                value = value(float(model._current_progress_remaining))
            except Exception:  # noqa: BLE001  (a custom schedule may raise anything)
                value = None
        value = int(value) if name == "n_epochs" and _integral(value) else value
        value = float(value) if name != "n_epochs" and _real(value) else value
        try:
            load_args(None, {**base, name: value}, source=str(path))
        except (ValueError, TypeError):
            print(f"warning: {path}: {name} {short_repr(value)} is not a value canasta train takes; the "
                  f"imported run keeps its default {getattr(TrainArgs(), name)!r}", file=sys.stderr)
            continue
        base[name] = value
    if layers is None:
        return base
    return dataclasses.asdict(load_args(None, base, source=str(path)))


def _real(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def _integral(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)
