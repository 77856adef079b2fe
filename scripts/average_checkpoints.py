"""Average the policy weights of several checkpoints of one run into a new checkpoint.

    python scripts/average_checkpoints.py OUT_DIR CKPT [CKPT ...]

Every tensor is the mean of the checkpoints' tensors; the optimizer state, counters and meta are
the last checkpoint's. Averaging the last checkpoints of a fine-tune removes part of the noise of
the final updates (agents/zoo/README.md measures it). The checkpoints must describe the same network.
"""

from __future__ import annotations

import argparse
import sys

import torch

from agents.checkpoint import CheckpointError, load_checkpoint, save_checkpoint


def average(paths: list[str], out_dir: str) -> str:
    """Write the mean of ``paths``' policy weights to ``out_dir`` (as checkpoint ``avg``); return
    its path."""
    ckpts = [load_checkpoint(p) for p in paths]
    first, last = ckpts[0], ckpts[-1]
    for c in ckpts[1:]:
        if c.meta.get("policy") != first.meta.get("policy"):
            raise CheckpointError(f"{c.path}: describes another network than {first.path}")
    weights = {k: torch.stack([c.policy_state[k].float() for c in ckpts]).mean(0).to(v.dtype)
               for k, v in first.policy_state.items()}
    meta = {**last.meta, "averaged_from": [str(c.path) for c in ckpts]}  # format, files: set anew
    return str(save_checkpoint(out_dir, "avg", policy_state=weights, optimizer_state=last.optimizer_state,
                               state=last.state, meta=meta))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("checkpoints", nargs="+")
    ns = parser.parse_args(argv)
    try:
        print(average(ns.checkpoints, ns.out_dir))
    except (CheckpointError, OSError) as exc:
        print(f"average_checkpoints: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
