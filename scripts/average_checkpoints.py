"""Average the policy weights of several checkpoints of one run into a new checkpoint.

    python scripts/average_checkpoints.py OUT_DIR CKPT [CKPT ...]

Every tensor is the mean of the checkpoints' tensors; the optimizer state, counters and meta are
the last checkpoint's. Averaging the last checkpoints of a fine-tune removes part of the noise of
the final updates (agents/zoo/README.md measures it). The checkpoints must describe the same network
for the same rules; OUT_DIR must hold neither a run nor an earlier average.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch

from agents.checkpoint import LATEST, CheckpointError, load_checkpoint, save_checkpoint

NAME = "avg"
# meta.json entries the checkpoints must share: an average of another table's or rules' network is
# no network of either (classic_2p and regal_2p share the observation layout)
SHARED = (("policy", "another network"), ("rules", "other rules"), ("episode", "another episode"),
          ("layout", "another observation layout"))


def _check_out(out_dir: str) -> None:
    """Refuse an ``out_dir`` the average would damage: a blank name (the working folder), a file, a
    run (save_checkpoint pointed its ``latest`` at the average, which a resume then continued) or
    an earlier average (replaced in silence)."""
    if not out_dir.strip():
        raise ValueError(f"OUT_DIR {out_dir!r}: not a folder name")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"OUT_DIR {out_dir}: a file, not a folder")
    taken = [name for name in (LATEST, NAME) if os.path.lexists(out / name)]
    if taken:
        raise ValueError(f"OUT_DIR {out_dir}: already holds {' and '.join(taken)} (a run or an earlier "
                         "average); name a new folder")


def average(paths: list[str], out_dir: str) -> str:
    """Write the mean of ``paths``' policy weights to ``out_dir`` (as checkpoint ``avg``); return
    its path."""
    _check_out(out_dir)
    ckpts = [load_checkpoint(p) for p in paths]
    first, last = ckpts[0], ckpts[-1]
    for c in ckpts[1:]:
        for key, what in SHARED:
            if c.meta.get(key) != first.meta.get(key):
                raise CheckpointError(f"{c.path}: describes {what} than {first.path}")
    weights = {k: torch.stack([c.policy_state[k].float() for c in ckpts]).mean(0).to(v.dtype)
               for k, v in first.policy_state.items()}
    meta = {**last.meta, "averaged_from": [str(c.path) for c in ckpts]}  # format, files: set anew
    return str(save_checkpoint(out_dir, NAME, policy_state=weights, optimizer_state=last.optimizer_state,
                               state=last.state, meta=meta))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("checkpoints", nargs="+")
    ns = parser.parse_args(argv)
    try:
        print(average(ns.checkpoints, ns.out_dir))
    except (ValueError, OSError) as exc:  # CheckpointError is a ValueError
        print(f"average_checkpoints: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
