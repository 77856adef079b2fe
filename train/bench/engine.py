"""``canasta bench``: engine and environment speed under uniformly random legal play.

``--api`` picks what is measured (default ``engine``):

* ``engine``: the batch engine alone, described below;
* ``aec``: the PettingZoo loop through ``canasta_env.env(rules)`` (the standard wrappers included),
  ``env.last()`` then a uniformly random legal action from ``obs["action_mask"]``; a step is one
  agent decision (the ``None`` steps of finished agents are not counted); batch 1, one core;
* ``gym``: one ``gymnasium.make("canasta_env:Canasta-v0", rules=...)`` env (random opponents),
  random legal learner actions from ``info["action_mask"]``, ``reset()`` at each hand end; a step
  is one learner step (the opponents' decisions in between are part of it);
* ``vec``: ``canasta_env.envs.sb3_env.CanastaVecEnv`` with ``--batch`` envs (default 1024), random
  opponents, random legal learner actions (``policy.pick_legal`` on ``action_masks()``), same-step
  autoreset; a step is one learner step of one env, observations and info dicts included. This one
  imports stable-baselines3, hence torch (outside the timed loop).

For the env APIs the JSON keys are ``api``, ``rules``, ``batch``, ``steps_per_s``, ``hands_per_s``,
``steps_per_hand``, ``seconds`` and ``compile_s``; timing starts after an untimed warm-up (one hand
for ``aec`` and ``gym``; ``--stagger``/4 learner steps for ``vec``, about as many engine decisions as
the engine's warm-up, which lets the envs' hand ends drift apart).

The rest of this text is about ``--api engine``.

Every row of a batch plays random legal actions through the public API (``init``, ``step``,
``reset_rows`` and ``canasta_env.policy.RandomAgent``); a row whose hand ends is re-dealt at once
with ``reset_rows`` inside the timed loop (row-wise auto-reset), so the batch stays full.

What is measured:
  * ``decisions_per_s``: decisions applied per second, counting only rows that had a legal action
    before the step;
  * ``hands_per_s``: hands finished (terminated or truncated rows) per second;
  * ``decisions_per_hand``: their ratio.

Timing starts after an untimed warm-up: one step, then ``--stagger`` steps in which each row sits out
a random number of steps, so that the rows' hands do not end in lockstep (see ``desynchronise``).

The agent protocol takes observations, but the random agent ignores them, so by default the bench
hands it a zero-width placeholder ``(B, 0)`` array and measures the engine (step, mask refresh,
re-deal, random choice), not observation encoding. ``--observe`` also measures the same loop with
``observe(state, state.current_player)`` called every step and reports those figures separately
(``observe_*`` keys, "+obs" columns).

``compile_s`` is the time of the first ``import canasta_env.engine`` plus the first
init/act/step/observe/reset_rows: numba compiles the kernels on the very first run (tens of seconds)
and caches them on disk (see ``canasta_env.engine``), so later runs only load them (a fraction of a
second). ``python -m train.common.warmup`` fills the cache ahead of time.

This module imports nothing heavy at import time (the CLI's ``--help`` stays fast) and never
imports torch except for ``--api vec``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

DEFAULT_RULES = ("classic_2p", "classic_3p", "classic_4p")
DEFAULT_BATCHES = (1, 64, 1024, 4096)
DEFAULT_STAGGER = 512  # untimed desynchronising steps: about 3 random hands (133-165 decisions)


@dataclass
class Measurement:
    """Counts from one timed loop."""

    decisions: int
    hands: int
    seconds: float

    @property
    def decisions_per_s(self) -> float:
        return self.decisions / self.seconds

    @property
    def hands_per_s(self) -> float:
        return self.hands / self.seconds

    @property
    def decisions_per_hand(self) -> float | None:
        return self.decisions / self.hands if self.hands else None


@dataclass
class BenchResult:
    """One (rules, batch) line of the report."""

    rules: str
    batch: int
    decisions_per_s: float
    hands_per_s: float
    decisions_per_hand: float | None
    seconds: float
    compile_s: float
    observe_decisions_per_s: float | None = None
    observe_hands_per_s: float | None = None
    threads: int = 1


def compile_engine(rules: Any, threads: int = 1) -> float:
    """Import the engine and run each entry point once on a batch of 2 (with ``threads`` > 1, on one
    large enough to take the parallel kernels); returns the seconds taken (numba compile on a cold
    cache, cache load on a warm one)."""
    start = time.perf_counter()
    import numpy as np

    from canasta_env.engine import init, observe, reset_rows, step
    from canasta_env.engine.threads import MIN_ROWS_PER_THREAD
    from canasta_env.policy import RandomAgent

    n = 2 if threads == 1 else threads * MIN_ROWS_PER_THREAD
    state = init(rules, n, 0, threads=threads)
    rng = np.random.default_rng(0)
    actions = RandomAgent().act(np.empty((n, 0), np.float32), state.legal_action_mask, rng)
    step(state, actions)
    observe(state, state.current_player)
    reset_rows(state, np.arange(n))
    return time.perf_counter() - start


def measure(rules: Any, batch: int, seconds: float, seed: int, with_observe: bool,
            stagger: int = DEFAULT_STAGGER, threads: int = 1) -> Measurement:
    """Random legal play on ``batch`` rows for about ``seconds``, after an untimed warm-up: one step,
    then ``stagger`` steps that spread the rows' hand ends (see ``desynchronise``)."""
    import numpy as np

    from canasta_env.engine import init
    from canasta_env.engine.core import _observe_unchecked, _reset_rows_unchecked, _step_unchecked
    from canasta_env.policy import RandomAgent

    # The loop builds its own actions (int64, one per row) and rows, so it takes the unchecked
    # entry points the package's hot loops use, like the envs (the checks of the public API cost
    # a few microseconds a call: about 5 % at batch 1).
    state = init(rules, batch, seed, threads=threads)
    agent = RandomAgent()
    rng = np.random.default_rng(seed)
    placeholder = np.empty((batch, 0), np.float32)  # the random agent ignores observations

    def one_step() -> tuple[int, int]:
        mask = state.legal_action_mask
        obs = (_observe_unchecked(state, state.current_player.astype(np.int64)) if with_observe
               else placeholder)
        actions = agent.act(obs, mask, rng)
        result = _step_unchecked(state, actions)
        # every row is live here (a finished one is re-dealt at once) and a live row refuses the -1
        # the random agent plays where nothing is legal, so a step without a refusal is ``batch``
        # decisions
        if np.count_nonzero(result.illegal):  # count_nonzero: the cheapest test at batch 1
            raise RuntimeError("bench: the random agent played an illegal action (engine bug)")
        done = result.terminated | result.truncated
        if not np.count_nonzero(done):
            return batch, 0
        finished = np.flatnonzero(done)
        _reset_rows_unchecked(state, finished)
        return batch, int(finished.size)

    def warm_up() -> None:  # excluded from the timing
        one_step()
        desynchronise(state, agent, rng, stagger)

    return Measurement(*count_steps(seconds, warm_up, one_step))


def desynchronise(state: Any, agent: Any, rng: Any, steps: int) -> None:
    """Untimed: play ``steps`` steps in which row b sits out its first ``offset[b]`` steps (offsets
    uniform in ``[0, steps)``), so rows are at different points of their hands when timing starts.

    Every row is dealt at once and random hands vary little in length (about 10-20 %), so without
    this the rows' hands end in lockstep and a window of a few hands per row (large batches) counts
    whole waves of hand ends or none: hands/s came out up to 25 % low at batch 4096 (classic_3p:
    207 decisions/hand against 165 at batch 1). Measured there: 256 steps left +4 %, 512 steps
    +0.5 %. A row sits out by being given action -1, which ``step`` leaves unplayed (an illegal
    action leaves the row unchanged, docs/training.md).
    """
    import numpy as np

    from canasta_env.engine.core import _reset_rows_unchecked, _step_unchecked

    placeholder = np.empty((state.num_games, 0), np.float32)
    offsets = rng.integers(0, max(steps, 1), size=state.num_games)
    for t in range(steps):
        actions = agent.act(placeholder, state.legal_action_mask, rng)
        actions[offsets > t] = -1
        result = _step_unchecked(state, actions)
        finished = np.flatnonzero(result.terminated | result.truncated)
        if finished.size:
            _reset_rows_unchecked(state, finished)


LOOP_BYTES = 96  # per game, besides the engine batch: step results, actions, draws, warm-up offsets
VEC_LOOP_BYTES = 512  # per env, besides the SB3 env (sb3_env.INFO_BYTES): the loop's actions and copies


def batch_limit(rules_list: list[str], api: str = "engine") -> tuple[int, str, int] | None:
    """The most games (``api`` ``engine``) or envs (``vec``) one measurement of every rule set in
    ``rules_list`` can take in the memory left now, the rule set that binds, and the bytes left; None
    when the memory left is unknown. Computed from the engine's own estimates (``batch_bytes``,
    ``vector_env_bytes``) before anything is allocated, so a caller can refuse a batch by its name
    instead of failing part way through the measurements."""
    from canasta_env.engine import core
    from canasta_env.engine.layout import pack_params
    from canasta_env.rules import load_rules

    left = core.available_memory()
    if left is None:
        return None
    worst = ("", 1)
    for spec in rules_list:
        rules = load_rules(spec)
        if api == "vec":
            from canasta_env.envs.learner import vector_env_bytes
            from canasta_env.envs.sb3_env import INFO_BYTES

            per_game = vector_env_bytes(rules, "hand", 1) + INFO_BYTES + VEC_LOOP_BYTES
        else:
            per_game = core.batch_bytes(pack_params(rules, "hand"), 1, LOOP_BYTES)
        if per_game > worst[1]:
            worst = (spec, per_game)
    return left // worst[1], worst[0], left


def run_bench(rules_list: list[str], batches: list[int], seconds: float, seed: int,
              with_observe: bool, on_result: Any = None,
              stagger: int = DEFAULT_STAGGER, threads: int = 1) -> list[BenchResult]:
    """Measure every (rules, batch) pair; ``on_result`` is called with each result as it is ready."""
    from canasta_env.rules import load_rules

    resolved = {spec: load_rules(spec) for spec in rules_list}  # fail fast on a bad name or file
    compile_s = compile_engine(resolved[rules_list[0]], threads)
    results = []
    for spec in rules_list:
        for batch in batches:
            m = measure(resolved[spec], batch, seconds, seed, False, stagger, threads)
            res = BenchResult(spec, batch, m.decisions_per_s, m.hands_per_s, m.decisions_per_hand,
                              m.seconds, compile_s, threads=threads)
            if with_observe:
                mo = measure(resolved[spec], batch, seconds, seed, True, stagger, threads)
                res.observe_decisions_per_s, res.observe_hands_per_s = mo.decisions_per_s, mo.hands_per_s
            results.append(res)
            if on_result is not None:
                on_result(res)
    return results


# ---- env APIs ------------------------------------------------------------------------------------


def count_steps(seconds: float, warm_up: Any, one_step: Any) -> tuple[int, int, float]:
    """Run ``warm_up()`` untimed, then ``one_step() -> (steps, hands)`` for about ``seconds``."""
    warm_up()
    steps = hands = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        s, h = one_step()
        steps += s
        hands += h
        now = time.perf_counter()
        if now >= deadline:
            return steps, hands, now - start
