"""Why learning stalls: one matchup, one change to the trainer at a time, a learning curve each.

``python scripts/learning_ablation.py --out runs/ablation`` trains the lean PPO trainer from scratch
(or from ``--init-from``) against one fixed opponent once per variant below, every run with the same
seed, budget and evaluation deals (the first ``--eval-deals`` of deal set v1, both seatings), and
writes ``curves.csv`` (variant, steps, win rate and its 95% interval, margin), ``curves.png`` and
``table.md`` (each variant's last and best evaluation) under ``--out``. A variant whose run folder
already holds its last evaluation is not trained again, so a stopped ablation goes on where it stopped.
``--variants`` picks some by name. docs/training.md ("Why learning stalls") reports one.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from train.learning.config import TrainArgs

_D = TrainArgs()
# name -> (what it changes, training-option overrides); "baseline" is the trainer's defaults
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "baseline": (f"the defaults (lr {_D.learning_rate:.0e}, entropy {_D.ent_coef:g}, gamma {_D.gamma:g}, "
                 f"lambda {_D.gae_lambda:g}, {'x'.join(map(str, _D.net_arch))}, batch {_D.batch_size})"
                 .replace("e-0", "e-"), {}),
    "baseline_seed1": ("the defaults, another seed (the seed's spread)", {"seed": 1}),
    "lambda_1": ("GAE lambda 1: Monte Carlo returns over the hand, no bootstrapping", {"gae_lambda": 1.0}),
    "gamma_1": ("gamma 1: no discount over the hand", {"gamma": 1.0}),
    "long_rollout": ("n_steps 128: GAE over four times more of the hand before bootstrapping",
                     {"n_steps": 128}),
    "ent_0": ("no entropy bonus", {"ent_coef": 0.0}),
    "ent_003": ("entropy bonus 0.03", {"ent_coef": 0.03}),
    "wide": ("512x512 hidden layers", {"net_arch": [512, 512]}),
    "deep": ("256x256x256 hidden layers", {"net_arch": [256, 256, 256]}),
    "lr_1e3": ("learning rate 1e-3", {"learning_rate": 1e-3}),
    "lr_1e4": ("learning rate 1e-4", {"learning_rate": 1e-4}),
    "big_batch": ("minibatch 8192 (4 per rollout, not 16)", {"batch_size": 8192}),
    "win_loss": ("reward +1/0/-1 per hand instead of the scaled margin", {"reward_mode": "win_loss"}),
    "discards": ("each seat's discards this hand in the observation (rules option observe_discards)",
                 {"observe_discards": True}),
}


def rules_with_discards(spec: str, out: Path) -> Path:
    """A rules file beside the runs: ``spec`` with ``observe_discards`` on (an option of the rules,
    so the run, its evaluations and its checkpoint all see the same observation)."""
    import yaml

    from canasta_env.rules import load_rules

    rules = load_rules(spec, observe_discards=True)
    path = out / f"{rules.name}_discards.yaml"
    path.write_text(yaml.safe_dump({**rules.to_dict(), "name": f"{rules.name}_discards"}, sort_keys=False))
    return path


def widened_init(init_from: str, rules_path: Path, out: Path) -> Path:
    """``init_from``'s network for the rules at ``rules_path`` (the same table with
    ``observe_discards``): the first layers' weights get zero columns for the appended ``discards``
    piece, so the net starts out playing exactly as ``init_from`` does and can learn to read them."""
    import torch

    from agents.checkpoint import current_layout, load_checkpoint, save_checkpoint
    from canasta_env.rules import load_rules
    from train.learning.setup import init_path

    rules = load_rules(str(rules_path))
    ckpt = load_checkpoint(init_path(init_from), load_optimizer=False)
    layout = current_layout(rules)
    old_dim, new_dim = ckpt.meta["layout"]["obs_dim"], layout["obs_dim"]
    state = {}
    for key, tensor in ckpt.policy_state.items():
        if tensor.ndim == 2 and tensor.shape[1] == old_dim:  # a first layer, reading the observation
            tensor = torch.cat([tensor, tensor.new_zeros(tensor.shape[0], new_dim - old_dim)], dim=1)
        state[key] = tensor
    policy = {**ckpt.meta["policy"], "observation_space": {**ckpt.meta["policy"]["observation_space"],
                                                           "shape": [new_dim]}}
    meta = {key: value for key, value in ckpt.meta.items() if key not in ("format", "files")}
    meta.update(rules=rules.to_dict(), layout=layout, policy=policy)
    return save_checkpoint(out / "init_discards", "ckpt_000000000", policy_state=state, optimizer_state=None,
                           state={**ckpt.state, "num_timesteps": 0, "n_updates": 0}, meta=meta)


def train_variant(name: str, overrides: dict[str, Any], args: argparse.Namespace) -> Path:
    """Run ``canasta train`` for one variant (unless its run folder already holds its last
    evaluation) and return the run folder."""
    run_dir = Path(args.out) / name
    if (run_dir / "evaluations.jsonl").exists() and any(
            p["steps"] >= args.steps - args.eval_every for p in read_curve(run_dir, args.opponent)):
        return run_dir
    options = {"rules": args.rules, "opponent": args.opponent, "total_timesteps": args.steps,
               "eval_every": args.eval_every, "eval_deals": args.eval_deals, "eval_deal_set": "v1",
               "eval_opponents": [args.opponent], "checkpoint_every": args.steps, "seed": args.seed,
               "progress": False, "run_dir": str(run_dir), **overrides}
    if args.init_from:
        options["init_from"] = args.init_from
    if options.pop("observe_discards", False):
        options["rules"] = str(rules_with_discards(args.rules, Path(args.out)))
        if args.init_from:
            options["init_from"] = str(widened_init(args.init_from, Path(options["rules"]), Path(args.out)))
    command = [sys.executable, "-m", "train.cli", "train", "--overwrite"]
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        command += [flag, *map(str, value)] if isinstance(value, list) else [flag, str(value)]
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    print(f"{name}: trained in {time.perf_counter() - started:.0f} s", flush=True)
    return run_dir


def read_curve(run_dir: Path, opponent: str) -> list[dict[str, float]]:
    """The run's evaluations against ``opponent``, in order of steps."""
    points = []
    for line in (run_dir / "evaluations.jsonl").read_text().splitlines():
        if line.strip():
            entry = json.loads(line)
            result = entry["results"][opponent]
            points.append({"steps": entry["num_timesteps"], "win": result["win_rate"], "lo": result["win_lo"],
                           "hi": result["win_hi"], "margin": result["mean_margin"]})
    return sorted(points, key=lambda p: p["steps"])


def write_outputs(curves: dict[str, list[dict[str, float]]], args: argparse.Namespace) -> None:
    """curves.csv, curves.png and table.md under ``args.out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(args.out)
    with open(out / "curves.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["variant", "steps", "win_rate", "win_lo", "win_hi", "mean_margin"])
        for name, points in curves.items():
            for p in points:
                writer.writerow([name, p["steps"], f"{p['win']:.4f}", f"{p['lo']:.4f}", f"{p['hi']:.4f}",
                                 f"{p['margin']:.1f}"])
    fig, ax = plt.subplots(figsize=(9, 5.5))
    colors = plt.get_cmap("tab20").colors
    for i, (name, points) in enumerate(curves.items()):
        style = "-" if name.startswith("baseline") else "--"
        ax.plot([p["steps"] / 1e6 for p in points], [p["win"] for p in points], style, marker="o",
                markersize=3, label=name, color=colors[i % len(colors)])
    ax.axhline(0.5, color="grey", linewidth=0.8)
    ax.set_xlabel("learner steps (millions)")
    ax.set_ylabel(f"win rate vs {args.label or args.opponent}")
    start = f"from {args.init_from}" if args.init_from else "fresh"
    ax.set_title(f"{args.rules}, {start}: one change at a time ({args.eval_deals} deals of v1 x 2 seatings)")
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(out / "curves.png", dpi=110)
    rows = ["| variant | change | last: win rate [95%] | margin | best win rate (steps) |",
            "|---|---|---|---|---|"]
    for name, points in curves.items():
        last, best = points[-1], max(points, key=lambda p: p["win"])
        rows.append(f"| {name} | {VARIANTS[name][0]} | {last['win']:.3f} [{last['lo']:.3f}, "
                    f"{last['hi']:.3f}] | {last['margin']:.0f} | "
                    f"{best['win']:.3f} ({best['steps'] / 1e6:.2f}M) |")
    (out / "table.md").write_text("\n".join(rows) + "\n")
    print("\n".join(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rules", default="classic_2p")
    parser.add_argument("--opponent", default="heuristic:pile_hoarder", help="the fixed opponent (an agent)")
    parser.add_argument("--init-from", default=None, help="start every variant from these weights")
    parser.add_argument("--label", default=None, help="the opponent on the plot (default: its agent name)")
    parser.add_argument("--steps", type=int, default=2_000_000, help="learner steps per variant")
    parser.add_argument("--eval-every", type=int, default=250_000)
    parser.add_argument("--eval-deals", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--variants", nargs="+", choices=sorted(VARIANTS), default=list(VARIANTS))
    parser.add_argument("--out", default="runs/ablation")
    args = parser.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    curves = {}
    for name in args.variants:
        if args.init_from and "net_arch" in VARIANTS[name][1]:
            print(f"{name}: skipped (a warm start keeps the network of --init-from)")
            continue
        curves[name] = read_curve(train_variant(name, VARIANTS[name][1], args), args.opponent)
    write_outputs(curves, args)


if __name__ == "__main__":
    main()
