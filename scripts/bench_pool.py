"""League opponents' cost: ``python scripts/bench_pool.py``.

Times ``PoolAgent.act`` as ``canasta league`` calls it (256 rows, the latest policy, heuristic,
greedy and 10 snapshots, the zoo:classic_4p network) with ``PolicyAgent`` acting through SB3's
distribution objects (the earlier path, ``Sb3PathAgent``) and through its actor head directly, A/B in
one process, twice each.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from agents import make_agent
from agents.learned.policy import PolicyAgent
from agents.learned.pool import PoolAgent
from canasta_env.engine import init, observe
from canasta_env.policy import RowRandom, stream_keys

torch.set_num_threads(1)


class Sb3PathAgent(PolicyAgent):
    def action_probabilities(self, observations, legal_action_mask):
        mask = np.asarray(legal_action_mask, dtype=bool)
        with torch.no_grad():
            obs = torch.as_tensor(np.asarray(observations, dtype=np.float32), device=self.policy.device)
            probs = self.policy.get_distribution(obs, action_masks=mask).distribution.probs.cpu().numpy()
        return np.where(mask, probs, 0.0)


RULES = "classic_4p"
ROWS, SNAPSHOTS, CALLS = 256, 10, 100


def time_pool(cls: type, base: PolicyAgent, obs: np.ndarray, mask: np.ndarray) -> float:
    """Milliseconds per ``PoolAgent.act`` with every policy member acting through ``cls``."""
    league = {name: make_agent(name, RULES) for name in ("heuristic", "greedy")}
    pool = PoolAgent(cls(base.policy, deterministic=False), ROWS, 0.2, SNAPSHOTS, league=league)
    for i in range(SNAPSHOTS):
        pool.add(cls(base.policy, deterministic=False), f"s{i}")
    pool.new_episode(np.arange(ROWS), np.random.default_rng(0).random(ROWS))
    rng = RowRandom(stream_keys(np.arange(ROWS, dtype=np.uint64), np.zeros(ROWS, dtype=np.uint64), 1))
    for _ in range(10):
        pool.act(obs, mask, rng)
    start = time.perf_counter()
    for _ in range(CALLS):
        pool.act(obs, mask, rng)
    return (time.perf_counter() - start) / CALLS * 1e3


def main() -> None:
    base = make_agent("zoo:classic_4p", RULES)
    state = init(RULES, ROWS, 0)
    obs, mask = observe(state, state.current_player), state.legal_action_mask
    for cls in (Sb3PathAgent, PolicyAgent, Sb3PathAgent, PolicyAgent):
        print(f"{cls.__name__}: PoolAgent.act, {ROWS} rows, {SNAPSHOTS + 3} members: "
              f"{time_pool(cls, base, obs, mask):.2f} ms")


if __name__ == "__main__":
    main()
