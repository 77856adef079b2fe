"""Speed through the env adapters (PettingZoo AEC, Gymnasium, the SB3 vector env): what a user of
each API gets, beside the raw engine figures of ``train.bench.engine``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from train.bench.engine import DEFAULT_STAGGER, compile_engine, count_steps


@dataclass
class EnvResult:
    """One (api, rules, batch) line of an env API report."""

    api: str
    rules: str
    batch: int
    steps_per_s: float
    hands_per_s: float
    steps_per_hand: float | None
    seconds: float
    compile_s: float


def measure_aec(rules: Any, seconds: float, seed: int) -> tuple[int, int, float]:
    """PettingZoo loop through ``canasta_env.env``: ``last()``, then a random legal action."""
    import numpy as np

    import canasta_env

    env = canasta_env.env(rules)
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)

    def play_one() -> tuple[int, int]:
        """Until the next decision (dead steps of finished agents included, not counted), or a
        hand end and the next deal."""
        while True:
            obs, _, termination, truncation, _ = env.last()
            if not (termination or truncation):
                legal = np.flatnonzero(obs["action_mask"])
                env.step(int(legal[rng.integers(legal.size)]))
                return 1, 0
            env.step(None)
            if not env.agents:
                env.reset()
                return 0, 1

    def warm_up() -> None:
        while play_one()[1] == 0:
            pass

    return count_steps(seconds, warm_up, play_one)


def measure_gym(rules: Any, seconds: float, seed: int) -> tuple[int, int, float]:
    """One ``Canasta-v0`` env (``gymnasium.make``), random legal learner actions."""
    import gymnasium
    import numpy as np

    env = gymnasium.make(ENV_ID, rules=rules)
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed)

    def one_step() -> tuple[int, int]:
        nonlocal info
        legal = np.flatnonzero(info["action_mask"])
        _, _, terminated, truncated, info = env.step(int(legal[rng.integers(legal.size)]))
        if terminated or truncated:
            _, info = env.reset()
            return 1, 1
        return 1, 0

    def warm_up() -> None:
        while one_step()[1] == 0:
            pass

    return count_steps(seconds, warm_up, one_step)


def measure_vec(rules: Any, batch: int, seconds: float, seed: int,
                stagger: int = DEFAULT_STAGGER) -> tuple[int, int, float]:
    """``CanastaVecEnv`` with ``batch`` envs: random legal learner actions for every env."""
    import numpy as np

    from canasta_env.envs.sb3_env import CanastaVecEnv
    from canasta_env.policy import pick_legal

    env = CanastaVecEnv(batch, rules)
    rng = np.random.default_rng(seed)
    env.seed(seed)
    env.reset()

    def one_step() -> tuple[int, int]:
        actions = pick_legal(env.action_masks(), rng.random(batch))
        _, _, dones, _ = env.step(actions)
        return batch, int(np.count_nonzero(dones))

    def warm_up() -> None:
        for _ in range(1 + stagger // 4):
            one_step()

    return count_steps(seconds, warm_up, one_step)


def run_env_bench(api: str, rules_list: list[str], batches: list[int], seconds: float, seed: int,
                  on_result: Any = None, stagger: int = DEFAULT_STAGGER) -> list[EnvResult]:
    """Measure an env API for every (rules, batch) pair."""

    from canasta_env.rules import load_rules

    resolved = {spec: load_rules(spec) for spec in rules_list}  # fail fast on a bad name or file
    compile_s = compile_engine(resolved[rules_list[0]])
    results = []
    for spec in rules_list:
        for batch in batches:
            if api == "aec":
                steps, hands, secs = measure_aec(resolved[spec], seconds, seed)
            elif api == "gym":
                steps, hands, secs = measure_gym(resolved[spec], seconds, seed)
            else:
                steps, hands, secs = measure_vec(resolved[spec], batch, seconds, seed, stagger)
            res = EnvResult(api, spec, batch, steps / secs, hands / secs,
                            steps / hands if hands else None, secs, compile_s)
            results.append(res)
            if on_result is not None:
                on_result(res)
    return results


APIS = ("engine", "aec", "gym", "vec")


DEFAULT_VEC_BATCH = 1024


ENV_ID = "canasta_env:Canasta-v0"
