"""``python -m train.common.warmup``: compile every engine kernel once so later runs load them from disk.

numba compiles a kernel the first time it is called with a given argument type and caches it on disk
(``canasta_env.engine`` keys the cache directory by a hash of the engine's source). This plays a few
random legal decisions of every classic preset on a batch of 2 through each entry point (init,
init_from_deals, step, observe, reset_rows, refresh_mask, render, the random, greedy and heuristic
agents) and prints the time taken: minutes on a cold cache, about a second on a warm one.
"""

from __future__ import annotations

import sys
import time

PRESETS = ("classic_2p", "classic_3p", "classic_4p")


def warm(presets: tuple[str, ...] = PRESETS, steps: int = 8) -> float:
    """Run each entry point on a batch of 2 for every preset; returns the seconds taken."""
    start = time.perf_counter()
    import numpy as np

    from agents import make_agent
    from canasta_env.engine import (
        DealId,
        explicit_deal,
        init,
        init_from_deals,
        observe,
        reset_rows,
        step,
    )
    from canasta_env.engine.render import render
    from canasta_env.policy import RandomAgent

    agent = RandomAgent()
    for name in presets:
        rng = np.random.default_rng(0)
        rule_agents = [make_agent("greedy", name), make_agent("heuristic", name)]
        for episode in ("hand", "game"):
            state = init(name, 2, 0, episode=episode)
            for _ in range(steps):
                obs = observe(state, state.current_player)
                for other in rule_agents:  # their kernels compile here too, under the notice
                    other.act(obs, state.legal_action_mask, rng)
                step(state, agent.act(obs, state.legal_action_mask, rng))
            reset_rows(state, [1])
            state.refresh_mask()
            render(state, 0)
        init_from_deals(name, [DealId(0, 0, 0), DealId(0, 1, 0)])
        init_from_deals(name, [explicit_deal(name, DealId(0, 0, 0))])
    return time.perf_counter() - start


def cache_is_cold() -> bool:
    """Whether the engine's kernel cache holds nothing yet (the next engine call compiles), with
    the JIT on."""
    import os
    from pathlib import Path

    import canasta_env.engine  # noqa: F401  (points NUMBA_CACHE_DIR at the engine's cache)

    if os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0"):
        return False
    folder = Path(os.environ["NUMBA_CACHE_DIR"])
    return not folder.is_dir() or not any(folder.rglob("*.nbi"))


def warm_if_cold(command: str) -> None:
    """On a cold cache, say so in one line and compile the classic kernels under a spinner before
    ``command`` runs, instead of sitting silent through the compile."""
    if not cache_is_cold():
        return
    import os

    from rich.console import Console

    console = Console(stderr=True)
    console.print(f"canasta {command}: first run on this machine: compiling the engine's kernels "
                  f"(2-3 minutes on 2 cores, once; cached in {os.environ['NUMBA_CACHE_DIR']})",
                  highlight=False, soft_wrap=True)
    with console.status("compiling", spinner="dots"):
        seconds = warm()
    console.print(f"canasta {command}: kernels compiled in {seconds:.0f} s", highlight=False)


def main() -> int:
    seconds = warm()
    import os

    print(f"engine kernels ready in {seconds:.1f} s (cache: {os.environ.get('NUMBA_CACHE_DIR', '?')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
