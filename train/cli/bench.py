"""``canasta bench``: engine speed (random legal play: decisions, hands and steps per second) at
several batch sizes, or through an env API (``--api aec|gym|vec``); a table or JSON lines."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass
from typing import Any

from train.bench.engine import DEFAULT_BATCHES, DEFAULT_RULES, DEFAULT_STAGGER, BenchResult, run_bench
from train.bench.envs import APIS, DEFAULT_VEC_BATCH, EnvResult, run_env_bench
from train.common.options import add_options, check_seed, opt

MAX_SECONDS = 3600.0  # per measurement
MAX_BATCH = 1 << 24  # games stepped together: far beyond any machine's memory before that


MAX_STAGGER = 10_000  # warm-up steps: about 60 hands, far past desynchronised (a hand is 133-165)
MAX_WARM_UP = 1 << 30  # untimed warm-up decisions of one measurement, per thread: 20-30 minutes


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
                       f"none; at most {MAX_STAGGER:,}, and --batch x --stagger at most {MAX_WARM_UP:,} "
                       "per --threads", type=_nonnegative_int, metavar="STEPS")
    seed: int = opt(0, "deal and agent seed")
    threads: int = opt(1, "engine threads (State.threads): the kernels split a large batch over this "
                       "many cores; --api engine only", type=_positive_int, metavar="N")
    observe: bool = opt(False, "also measure with observe(state, current_player) every step, reported "
                        "separately (default: engine only, observations not encoded)")
    json: bool = opt(False, "print one JSON object per (rules, batch) instead of a table")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``canasta bench``."""
    add_options(parser, BenchOptions)


def _json_line(res: BenchResult | EnvResult, with_observe: bool = False) -> str:
    d = asdict(res)
    if isinstance(res, BenchResult) and not with_observe:
        del d["observe_decisions_per_s"], d["observe_hands_per_s"]
    return json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in d.items()})


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
        if args.seed + max(batches) > 2**64:  # CanastaVecEnv.seed refused it, naming itself, mid-run
            raise ValueError(f"--seed {args.seed}: env i of --batch {max(batches)} plays seed --seed + i, "
                             f"past 2**64 - 1; want --seed at most {2**64 - max(batches)}")
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
    try:
        return _run(args)
    except MemoryError:  # past the engine's estimate, e.g. under a ulimit: one line, not a traceback
        sizes = " ".join(map(str, args.batch or [])) or "(default sizes)"
        raise ValueError(f"--batch {sizes}: out of memory; use a smaller --batch") from None


def _check_batch_memory(args: argparse.Namespace) -> None:
    """Refuse, naming ``--batch`` and the bound, a batch size that cannot fit in the memory left,
    before any measurement: the engine's own refusal names neither, and came only when that batch's
    turn arrived, after the smaller sizes had run."""
    api = getattr(args, "api", "engine")
    if api not in ("engine", "vec"):
        return
    from train.bench.engine import batch_limit

    batches = args.batch or (list(DEFAULT_BATCHES) if api == "engine" else [DEFAULT_VEC_BATCH])
    limit = batch_limit(args.rules, api)
    if limit is None:
        return
    most, rules, left = limit
    for size in batches:
        if size > most:
            what = "games" if api == "engine" else "envs"
            raise ValueError(f"--batch {size}: at most {most:,} {rules} {what} fit in the memory left "
                             f"({left / 2**30:.1f} GiB); use a smaller --batch")


def _check_warm_up(args: argparse.Namespace) -> None:
    """Refuse, naming ``--batch`` and ``--stagger``, a warm-up past ``MAX_WARM_UP`` decisions a thread:
    it is untimed and silent, and grows with their product (``--batch 16777216`` at the default
    stagger took hours before its first timed step). A ``vec`` learner step counts as 4 decisions,
    as its warm-up of ``stagger``/4 steps stands for the engine's ``stagger``."""
    api = getattr(args, "api", "engine")
    if api not in ("engine", "vec") or not args.batch:
        return
    size = max(args.batch)
    work = size * args.stagger if api == "engine" else size * (1 + args.stagger // 4) * 4
    bound = MAX_WARM_UP * (args.threads if api == "engine" else 1)
    if work > bound:
        per = f" ({args.threads} threads)" if args.threads > 1 else ""
        raise ValueError(f"--batch {size} x --stagger {args.stagger}: {work:,} untimed warm-up decisions, "
                         f"past the {bound:,} allowed{per}; lower --stagger or --batch")


def _run(args: argparse.Namespace) -> int:
    check_seed(args.seed)
    for size in args.batch or []:
        if not 1 <= size <= MAX_BATCH:
            raise ValueError(f"--batch {size}: want 1 to {MAX_BATCH:,} games")
    if args.threads > 1:
        import numba

        cores = numba.config.NUMBA_NUM_THREADS
        if args.threads > cores:
            raise ValueError(f"--threads {args.threads}: this machine runs at most {cores} engine threads "
                             "(numba's NUMBA_NUM_THREADS)")
    if "all" in args.rules:
        from canasta_env.rules import preset_names

        args.rules = [r for r in args.rules if r != "all"] + preset_names()
    _check_warm_up(args)
    _check_batch_memory(args)
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
