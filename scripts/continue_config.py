"""Write the training config that continues a checkpoint's run in a new run folder.

    python scripts/continue_config.py CKPT --run-dir NEW_RUN [--out FILE]
    canasta league --config FILE [--learning-rate 1e-5 ...]

``--resume`` needs the run folder; a checkpoint away from its run (a zoo entry, a run since deleted)
has only its meta.json, which keeps the options it was trained with: the league and its rule
exploiters found so far, the algorithm, the exploiter settings. This writes them as a config file,
with ``init_from`` set to CKPT and ``run_dir`` to NEW_RUN; flags after ``--config`` override any.
The new run starts from CKPT's weights, with a fresh optimizer, a step count from 0 and a snapshot
pool of its own: a continuation, not a resume.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from agents.checkpoint import CheckpointError, load_checkpoint
from agents.learned.zoo import PREFIX, zoo_path
from train.common.outputs import check_output_file
from train.common.run_dir import CHECKPOINT_EXTRAS
from train.learning.config import TrainArgs, check_args, without_effect


def continue_config(ckpt: str, run_dir: str) -> dict[str, Any]:
    """The options of ``ckpt``'s run (meta.json), starting from ``ckpt`` in ``run_dir``, less those the
    run ignores; checked as a config file is, so a config that ``canasta league`` would refuse is
    never written."""
    path = zoo_path(ckpt) if ckpt.startswith(PREFIX) else Path(ckpt)
    meta = load_checkpoint(path).meta
    stored = meta.get("config")
    if not isinstance(stored, dict):
        raise ValueError(f"{path}: its meta.json keeps no training options ('config')")
    config = {k: v for k, v in stored.items() if k not in CHECKPOINT_EXTRAS and v is not None}
    config.update(init_from=ckpt, run_dir=run_dir)
    unknown = sorted(set(config) - set(TrainArgs.__dataclass_fields__))
    if unknown:
        raise ValueError(f"{path}: its meta.json config holds options this version does not know: {unknown}")
    args = TrainArgs(**config)
    check_args(args, f"{path} meta.json config")
    for name in without_effect(args, pool=True):  # e.g. a rule-search budget kept from before a
        config.pop(name, None)  # resume switched to PPO exploiters: canasta league refuses it
    return config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ckpt", metavar="CKPT", help="a checkpoint folder or zoo:NAME")
    parser.add_argument("--run-dir", required=True, help="the new run's folder (its run_dir option)")
    parser.add_argument("--out", help="write the config here (default: standard output)")
    args = parser.parse_args(argv)
    try:
        if not args.run_dir.strip():
            raise ValueError(f"--run-dir {args.run_dir!r}: not a folder name")
        text = yaml.safe_dump(continue_config(args.ckpt, args.run_dir), sort_keys=False, width=10**6)
        if args.out is None:
            sys.stdout.write(text)
        else:
            check_output_file(args.out, "--out")
            Path(args.out).write_text(text, encoding="utf-8")
    except (ValueError, CheckpointError, OSError) as exc:
        print(f"continue_config: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
