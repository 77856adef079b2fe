"""PPO on Canasta with RLlib's new API stack: one action-masking policy per side (or one shared
policy), trained on ``canasta_env.envs.rllib_env.CanastaMultiAgentEnv`` (docs/rllib.md).

    python examples/rllib_ppo.py --rules classic_2p --iterations 1              # a local Ray
    python examples/rllib_ppo.py --rules classic_4p --iterations 100 --address auto  # a cluster

Prints each iteration's metrics, then plays ``--greedy-hands`` hands with the trained policies'
greedy moves (an illegal move would raise) and, with ``--save``, writes a checkpoint. Needs the
``rllib`` extra (``pip install "canasta-rl[rllib]"``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--rules", default="classic_2p", help="preset name or YAML path")
    parser.add_argument("--iterations", type=int, default=10, help="training iterations")
    parser.add_argument("--address", default="local",
                        help="Ray cluster: 'local' (a Ray on this machine), 'auto' or HOST:PORT")
    parser.add_argument("--shared", action="store_true", help="one policy for every seat (self-play)")
    parser.add_argument("--num-env-runners", type=int, default=2, help="0: sample in the driver")
    parser.add_argument("--train-batch-size", type=int, default=4000, help="env steps per iteration")
    parser.add_argument("--minibatch-size", type=int, default=256)
    parser.add_argument("--num-epochs", type=int, default=10)
    parser.add_argument("--hidden", type=int, nargs="+", default=[256, 256], help="MLP layer sizes")
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--seed", type=int, default=0, help="deals of the env runners")
    parser.add_argument("--torch-threads", type=int, default=1,
                        help="torch threads of the learner in this process (0: torch's default); "
                             "small MLPs on CPU train fastest on one")
    parser.add_argument("--greedy-hands", type=int, default=2, help="hands of greedy play at the end")
    parser.add_argument("--save", default=None, help="checkpoint directory")
    return parser


def summary(i: int, result: dict[str, Any]) -> str:
    """One line of an iteration's metrics: steps, episodes, each policy's return, loss and entropy."""
    runners, learners = result.get("env_runners", {}), result.get("learners", {})
    returns = runners.get("module_episode_returns_mean", {})
    parts = [f"iter {i}", f"{int(result.get('num_env_steps_sampled_lifetime', 0)):,} env steps",
             f"{runners.get('num_episodes', 0)} episodes"]
    for module, stats in sorted(learners.items()):
        if isinstance(stats, dict) and "policy_loss" in stats:
            ret = returns.get(module)
            parts.append(f"{module}: return {'-' if ret is None else f'{ret:+.3f}'} "
                         f"policy loss {stats['policy_loss']:+.4f} entropy {stats['entropy']:.3f}")
    parts.append(f"{result.get('time_this_iter_s', 0.0):.1f}s")
    return ", ".join(parts)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.iterations < 1 or args.torch_threads < 0:
        print("rllib_ppo: error: --iterations must be at least 1 and --torch-threads at least 0",
              file=sys.stderr)
        return 2
    try:
        from canasta_env.envs.rllib_env import play_greedy, ppo_config
        from train.evaluation.ray_units import connect

        config = ppo_config(args.rules, shared=args.shared, seed=args.seed, hidden=tuple(args.hidden),
                            num_env_runners=args.num_env_runners,
                            train_batch_size=args.train_batch_size,
                            minibatch_size=args.minibatch_size, num_epochs=args.num_epochs, lr=args.lr)
        if args.torch_threads:
            import torch

            torch.set_num_threads(args.torch_threads)
        try:
            connect(args.address)
        except ValueError as exc:  # train.evaluation.ray_units words it for `canasta tournament --ray`
            raise ValueError(str(exc).replace("--ray ", "--address ", 1)) from None
        algo = config.build_algo()
    except ModuleNotFoundError as exc:
        if 'canasta-rl[' not in str(exc):
            raise
        print(f"rllib_ppo: error: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:  # bad rules, an unreachable cluster
        print(f"rllib_ppo: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    try:
        start = time.perf_counter()
        for i in range(1, args.iterations + 1):
            print(summary(i, algo.train()), flush=True)
        print(f"trained {args.iterations} iteration(s) in {time.perf_counter() - start:.1f}s")
        if args.greedy_hands > 0:
            moves = play_greedy(algo, args.greedy_hands, seed=args.seed)
            print(f"greedy play: {args.greedy_hands} hand(s), {moves} moves, all legal")
        if args.save:
            print(f"checkpoint: {algo.save_to_path(str(Path(args.save).resolve()))}")
    finally:
        algo.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
