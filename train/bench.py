"""``canasta bench``: engine and environment speed under uniformly random legal play.

``--api`` picks what is measured (default ``engine``):

* ``engine``: the batch engine alone, described below;
* ``aec``: the PettingZoo loop through ``canasta_env.env(rules)`` (the standard wrappers included),
  ``env.last()`` then a uniformly random legal action from ``obs["action_mask"]``; a step is one
  agent decision (the ``None`` steps of finished agents are not counted); batch 1, one core;
* ``gym``: one ``gymnasium.make("canasta_env:Canasta-v0", rules=...)`` env (random opponents),
  random legal learner actions from ``info["action_mask"]``, ``reset()`` at each hand end; a step
  is one learner step (the opponents' decisions in between are part of it);
* ``vec``: ``canasta_env.sb3_env.CanastaVecEnv`` with ``--batch`` envs (default 1024), random
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
second). ``python -m train.warmup`` fills the cache ahead of time.

This module imports nothing heavy at import time (the CLI's ``--help`` stays fast) and never
imports torch except for ``--api vec``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

from train.options import add_options, opt

DEFAULT_RULES = ("classic_2p", "classic_3p", "classic_4p")
DEFAULT_BATCHES = (1, 64, 1024, 4096)
DEFAULT_STAGGER = 512  # untimed desynchronising steps: about 3 random hands (133-165 decisions)
APIS = ("engine", "aec", "gym", "vec")
DEFAULT_VEC_BATCH = 1024
ENV_ID = "canasta_env:Canasta-v0"


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


MAX_SECONDS = 3600.0  # per measurement
MAX_STAGGER = 1_000_000  # warm-up steps


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _nonnegative_int(text: str) -> int:
    value = int(text)
    if not 0 <= value <= MAX_STAGGER:
        raise argparse.ArgumentTypeError(f"must be in [0, {MAX_STAGGER}], got {value}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not 0 < value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"must be > 0 and at most {MAX_SECONDS}, got {value}")
    return value


@dataclass
class BenchOptions:
    """The options of ``canasta bench``."""

    api: str = opt("engine", "what to measure: the batch engine, the PettingZoo AEC env, the Gymnasium env "
                   "or the SB3 VecEnv", choices=APIS)
    rules: list[str] = opt(help="rules preset names or rules YAML files, or `all` for every shipped preset",
                           factory=lambda: list(DEFAULT_RULES), metavar="RULES")
    batch: list[int] | None = opt(None, "batch sizes, games stepped together (default: "
                                  f"{' '.join(map(str, DEFAULT_BATCHES))} for --api engine, "
                                  f"{DEFAULT_VEC_BATCH} for vec; aec and gym are batch 1)",
                                  type=_positive_int, metavar="B")
    seconds: float = opt(3.0, "timed seconds per measurement, after an untimed warm-up step",
                         type=_positive_float)
    stagger: int = opt(DEFAULT_STAGGER, "untimed warm-up steps that desynchronise the rows' hands, 0 for "
                       "none", type=_nonnegative_int, metavar="STEPS")
    seed: int = opt(0, "deal and agent seed")
    threads: int = opt(1, "engine threads (State.threads): the kernels split a large batch over this "
                       "many cores; --api engine only", type=_positive_int, metavar="N")
    observe: bool = opt(False, "also measure with observe(state, current_player) every step, reported "
                        "separately (default: engine only, observations not encoded)")
    json: bool = opt(False, "print one JSON object per (rules, batch) instead of a table")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``canasta bench``."""
    add_options(parser, BenchOptions)


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

    return Measurement(*_count(seconds, warm_up, one_step))


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


def _json_line(res: BenchResult | EnvResult, with_observe: bool = False) -> str:
    d = asdict(res)
    if isinstance(res, BenchResult) and not with_observe:
        del d["observe_decisions_per_s"], d["observe_hands_per_s"]
    return json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in d.items()})


# ---- env APIs ------------------------------------------------------------------------------------

def _count(seconds: float, warm_up: Any, one_step: Any) -> tuple[int, int, float]:
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

    return _count(seconds, warm_up, play_one)


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

    return _count(seconds, warm_up, one_step)


def measure_vec(rules: Any, batch: int, seconds: float, seed: int,
                stagger: int = DEFAULT_STAGGER) -> tuple[int, int, float]:
    """``CanastaVecEnv`` with ``batch`` envs: random legal learner actions for every env."""
    import numpy as np

    from canasta_env.policy import pick_legal
    from canasta_env.sb3_env import CanastaVecEnv

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

    return _count(seconds, warm_up, one_step)


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


def _env_table(results: list[EnvResult]) -> Any:
    from rich.table import Table

    what = {"aec": "agent decisions", "gym": "learner steps",
            "vec": "learner steps of all envs"}[results[0].api]
    table = Table(title=f"canasta bench --api {results[0].api} ({what})")
    for col in ("rules", "batch", "steps/s", "hands/s", "steps/hand"):
        table.add_column(col, justify="left" if col == "rules" else "right", no_wrap=True)
    for r in results:
        sph = f"{r.steps_per_hand:,.1f}" if r.steps_per_hand is not None else "-"
        table.add_row(r.rules, str(r.batch), f"{r.steps_per_s:,.0f}", f"{r.hands_per_s:,.1f}", sph)
    return table


def _run_env_api(args: argparse.Namespace) -> int:
    if args.observe:
        raise ValueError("--observe applies to --api engine only (the env APIs always encode "
                         "observations)")
    if args.threads != 1:
        raise ValueError("--threads applies to --api engine only")
    if args.api in ("aec", "gym"):
        if args.batch not in (None, [1]):
            raise ValueError(f"--api {args.api} is one game (batch 1); --batch applies to --api "
                             "engine and vec")
        batches = [1]
    else:
        batches = args.batch or [DEFAULT_VEC_BATCH]
    if args.json:
        def emit(res: EnvResult) -> None:
            print(_json_line(res), flush=True)

        run_env_bench(args.api, args.rules, batches, args.seconds, args.seed, emit, args.stagger)
        return 0

    from rich.console import Console

    console = Console()
    if not console.is_terminal:
        console = Console(width=120)
    total = len(args.rules) * len(batches) * args.seconds
    with console.status(f"measuring --api {args.api}: {len(args.rules)} rule set(s) x "
                        f"{len(batches)} batch size(s), about {total:.0f} s plus warm-up ..."):
        results = run_env_bench(args.api, args.rules, batches, args.seconds, args.seed,
                                stagger=args.stagger)
    console.print(_env_table(results))
    return 0


def _table(results: list[BenchResult], with_observe: bool) -> Any:
    from rich.table import Table

    table = Table(title="canasta bench: random legal play (engine only"
                  + (", and with observe every step)" if with_observe else ")"))
    for col in ("rules", "batch", "decisions/s", "hands/s", "decisions/hand"):
        table.add_column(col, justify="left" if col == "rules" else "right", no_wrap=True)
    if with_observe:
        table.add_column("decisions/s +obs", justify="right", no_wrap=True)
        table.add_column("hands/s +obs", justify="right", no_wrap=True)
    for r in results:
        dph = f"{r.decisions_per_hand:,.1f}" if r.decisions_per_hand is not None else "-"
        row = [r.rules, str(r.batch), f"{r.decisions_per_s:,.0f}", f"{r.hands_per_s:,.1f}", dph]
        if with_observe:
            row += [f"{r.observe_decisions_per_s:,.0f}", f"{r.observe_hands_per_s:,.1f}"]
        table.add_row(*row)
    return table


def run(args: argparse.Namespace) -> int:
    """Entry point of ``canasta bench``."""
    if "all" in args.rules:
        from canasta_env.rules import preset_names

        args.rules = [r for r in args.rules if r != "all"] + preset_names()
    if getattr(args, "api", "engine") != "engine":
        return _run_env_api(args)
    if args.batch is None:
        args.batch = list(DEFAULT_BATCHES)
    if args.json:
        def emit(res: BenchResult) -> None:
            print(_json_line(res, args.observe), flush=True)

        run_bench(args.rules, args.batch, args.seconds, args.seed, args.observe, emit, args.stagger,
                  args.threads)
        return 0

    from rich.console import Console

    console = Console()
    if not console.is_terminal:  # piped: rich would assume 80 columns and crop the table
        console = Console(width=120)
    total = len(args.rules) * len(args.batch) * args.seconds * (2 if args.observe else 1)
    with console.status(f"measuring {len(args.rules)} rule set(s) x {len(args.batch)} batch size(s), "
                        f"about {total:.0f} s (plus compile on a cold cache) ..."):
        results = run_bench(args.rules, args.batch, args.seconds, args.seed, args.observe,
                            stagger=args.stagger, threads=args.threads)
    console.print(_table(results, args.observe))
    import os

    console.print(f"compile_s {results[0].compile_s:.2f}: first engine import + init/step/observe. "
                  "Kernels are compiled once and cached on disk "
                  f"({os.environ.get('NUMBA_CACHE_DIR', '?')}); later runs only load them.")
    if not args.observe:
        console.print("Observations are not encoded (the random agent ignores them); "
                      "add --observe to measure with observe() every step.")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="canasta bench", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
