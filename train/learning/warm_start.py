"""The weights a run starts from, besides a fresh network: another checkpoint's (``init_from``) or a
teacher's choices cloned before PPO (``imitate``, ``train.learning.imitation``)."""

from __future__ import annotations

import time
from typing import Any

from train.learning.config import IMITATE_LEAGUE


def clone_teacher(setup: Any, policy: Any, logger: Any, bf16: bool = False) -> None:
    """Clone ``teacher`` into ``policy`` (``train.learning.imitation``) and checkpoint the clone at step 0,
    so that a resume continues from it instead of cloning again. The teacher plays against
    ``imitate_opponent`` if set, else the run's opponent, or under self-play itself (the pool's
    latest policy is still untrained). A stop request ends the run before anything is kept."""
    from agents import make_agent
    from train.learning import imitation, lean_ppo, run_callback

    args, rules, teacher, stop = setup.args, setup.rules, setup.teacher, setup.stop
    started = time.perf_counter()
    if args.imitate_opponent == IMITATE_LEAGUE:
        assert args.imitate is not None
        if args.imitate_workers > 1:  # the workers make the agents again, by name
            teacher, against = args.imitate, list(args.league)
        else:
            against = [make_agent(name, rules) for name in args.league]
    elif args.imitate_workers > 1:
        assert args.imitate is not None
        teacher, against = args.imitate, args.imitate_opponent or (args.imitate if setup.pool is not None
                                                                   else args.opponent)
    elif args.imitate_opponent is not None:
        against = make_agent(args.imitate_opponent, rules)
    else:
        against = teacher if setup.pool is not None else setup.opponent

    def should_stop() -> bool:
        return stop is not None and stop.requested

    where = f" in {args.imitate_workers} processes" if args.imitate_workers > 1 else ""
    print(f"imitate {args.imitate}: playing {args.imitate_steps:,} of its decisions{where}", flush=True)

    demos = imitation.collect(rules, teacher, against, args.num_envs, args.imitate_steps, args.seed,
                              args.gamma, workers=args.imitate_workers, should_stop=should_stop,
                              teacher_name=args.imitate)
    print(f"imitate {args.imitate}: {len(demos):,} decisions collected in "
          f"{time.perf_counter() - started:.0f} s", flush=True)

    def log(epoch: int, stats: dict[str, float]) -> None:
        for key, value in stats.items():
            logger.record(f"imitate/{key}", value)
        logger.dump(step=epoch)
        print(f"imitate epoch {epoch + 1}/{args.imitate_epochs}: accuracy {stats['accuracy']:.3f}, "
              f"cross-entropy {stats['cross_entropy']:.3f}, value loss {stats['value_loss']:.4f}",
              flush=True)

    with lean_ppo.bf16_matmuls(bf16):
        imitation.clone(policy, demos, epochs=args.imitate_epochs, batch_size=args.batch_size,
                        seed=args.seed, vf_coef=args.vf_coef, log=log, should_stop=should_stop)
    run_callback.save_run_checkpoint(setup, policy, 0, 0)


def start_from(policy: Any, init: Any) -> None:
    """Load ``init``'s policy weights into a new run's ``policy``."""
    policy.load_state_dict(init.policy_state)
    print(f"canasta: starting from the weights of {init.path}", flush=True)
