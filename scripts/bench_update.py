"""Time of one minibatch gradient of the lean trainer (``LeanPPO.gradients``) by ``update_threads``.

    python scripts/bench_update.py [--config configs/train/ppo_classic_2p.yaml] [--threads 1 2]
                                   [--repeats 50] [--json]

The minibatch is ``batch_size`` rows of random observations, masks and targets of the config's
shapes (the time does not depend on the values). Settings alternate within one process, twice each,
and the best pass of each is printed: milliseconds per gradient (forward, backward, shard sum; no
Adam step). It is the figure behind the sharded update's speed-up in docs/training.md.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any


def gradient_ms(model: Any, threads: int, repeats: int) -> float:
    """Mean milliseconds of ``model.gradients`` over ``repeats`` calls on ``threads`` shards."""
    import torch

    gen = torch.Generator().manual_seed(0)
    n = model.args.batch_size
    masks = torch.rand(n, model.num_actions, generator=gen) < 0.3
    masks[:, 0] = True
    rows = (torch.rand(n, model.obs_dim, generator=gen), masks,
            torch.multinomial(masks.float(), 1, generator=gen).squeeze(1),
            -torch.rand(n, generator=gen), torch.randn(n, generator=gen), torch.randn(n, generator=gen))
    model.update_threads = threads
    with model.shard_threads():
        for _ in range(3):
            model.gradients(*rows)
        start = time.perf_counter()
        for _ in range(repeats):
            model.gradients(*rows)
        return (time.perf_counter() - start) / repeats * 1e3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default="configs/train/ppo_classic_2p.yaml")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--json", action="store_true", help="accepted for clarity; the output is JSON")
    ns = parser.parse_args(argv)
    if min(ns.threads) < 1 or ns.repeats < 1:
        parser.error(f"--threads {ns.threads} and --repeats {ns.repeats} must be at least 1")

    import torch

    from agents import make_agent
    from train.learning import config
    from train.learning.lean_ppo import LeanPPO

    torch.set_num_threads(1)
    args = config.load_args(ns.config, {"algo": "ppo", "device": "cpu", "num_envs": 2, "n_steps": 2})
    model = LeanPPO(args, args.rules, make_agent("random", args.rules))
    best: dict[int, float] = {}
    for _ in range(2):
        for threads in ns.threads:
            ms = gradient_ms(model, threads, ns.repeats)
            best[threads] = min(best.get(threads, ms), ms)
    print(json.dumps({"config": ns.config, "batch_size": args.batch_size, "net_arch": args.net_arch,
                      "precision": model.precision,
                      "ms_per_gradient": {str(t): round(ms, 2) for t, ms in best.items()}}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
