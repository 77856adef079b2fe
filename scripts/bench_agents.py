"""Decisions per second of the agents on real observations: ``python scripts/bench_agents.py``.

Samples ``--batch`` live states by playing keyed random moves on the engine, encodes each from the
mover's seat, then times ``agent.act`` on the whole batch (compile time excluded).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from agents import make_agent
from canasta_env.engine import init, observe, reset_rows, step
from canasta_env.rules import load_rules
from canasta_env.testing import keyed_actions


def sample_batch(rules, batch: int, seed: int = 0, moves: int = 60):
    """(observations, masks) of ``batch`` live states reached by ``moves`` keyed random moves."""
    state = init(rules, batch, seed)
    for i in range(moves):
        step(state, keyed_actions(state.data, state.legal_action_mask, 77 + i, i % 2 == 0))
        done = np.flatnonzero(state.terminated | state.truncated)
        if done.size:
            reset_rows(state, done)
    obs = observe(state, state.current_player.astype(np.int64))
    return obs, state.legal_action_mask.copy()


def bench(name: str, preset: str, batch: int, seconds: float = 1.0) -> float:
    rules = load_rules(preset)
    agent = make_agent(name, rules)
    obs, mask = sample_batch(rules, batch)
    rng = np.random.default_rng(0)
    agent.act(obs, mask, rng)  # compile / warm up
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        agent.act(obs, mask, rng)
        calls += 1
    return calls * batch / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", default=["classic_2p", "classic_4p"])
    parser.add_argument("--agents", nargs="+", default=["random", "greedy", "heuristic"])
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 1024])
    args = parser.parse_args()
    for preset in args.presets:
        for name in args.agents:
            for b in args.batch:
                print(f"{preset:12s} {name:10s} batch {b:5d}: {bench(name, preset, b):12,.0f} decisions/s")


if __name__ == "__main__":
    main()
