"""``python -m train.common.warmup``: compile every engine kernel once so later runs load them from disk.

numba compiles a kernel the first time it is called with a given argument type and caches it on disk
(``canasta_env.engine`` keys the cache directory by a hash of the engine's source). The rules preset
changes no argument type, so each kernel compiles once for every preset.

``warm`` plays a few random legal decisions of every classic preset on a batch of 2 through each
entry point (init, init_from_deals, step, observe, reset_rows, refresh_mask, render, the random,
greedy, heuristic and planner agents): about a second from a warm cache. On a cold cache one worker process
per core first compiles the kernels (``JOBS``) under a progress line, and the pass then loads them.
The workers share numba's on-disk cache, and a lock file per compiled function makes a worker that
needs a function the other one is compiling wait for it and load it from the cache, so nothing
compiles twice: about 25 s on 2 cores (one process took 90 before the engine's call graph was made
shallower, ``canasta_env/engine/kernels.py``).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from train.common.compile_workers import JOBS, Workers, report_compiles

PRESETS = ("classic_2p", "classic_3p", "classic_4p")


def warm(presets: tuple[str, ...] = PRESETS, steps: int = 8, *, label: str = "warmup",
         console: Any = None) -> float:
    """Compile the kernels (with worker processes on a cold cache) and run each entry point on a
    batch of 2 for every preset; returns the seconds taken. With a rich ``console``, a progress line
    says what is compiling."""
    start = time.perf_counter()
    cold = cache_is_cold()
    progress = _Progress(label, console if cold else None)
    workers = Workers.start(progress) if cold else None  # first: they fork before any thread starts
    with progress:
        if workers is not None:
            import agents  # noqa: F401  (imported for the pass below while the workers compile)

            workers.finish()
        with report_compiles(progress):
            _exercise(presets, steps)
    return time.perf_counter() - start


def _exercise(presets: tuple[str, ...], steps: int) -> None:
    """Each entry point on a batch of 2 for every preset, with random legal decisions."""
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
        rule_agents = [make_agent(agent_name, name) for agent_name in ("greedy", "heuristic", "planner")]
        for episode in ("hand", "game"):
            state = init(name, 2, 0, episode=episode)
            for _ in range(steps):
                obs = observe(state, state.current_player)
                for other in rule_agents:  # their kernels load (or compile) here too
                    other.act(obs, state.legal_action_mask, rng)
                step(state, agent.act(obs, state.legal_action_mask, rng))
            reset_rows(state, [1])
            state.refresh_mask()
            render(state, 0)
        init_from_deals(name, [DealId(0, 0, 0), DealId(0, 1, 0)])
        init_from_deals(name, [explicit_deal(name, DealId(0, 0, 0))])


# numba's whole-number settings that it reads when imported: a value it cannot parse is dropped with a
# warning and a traceback (NUMBA_DISABLE_JIT=true leaves the JIT on), NUMBA_NUM_THREADS=0 fails on import.
_NUMBA_INTEGERS = {"NUMBA_NUM_THREADS": (1, "a whole number of threads, at least 1"),
                   "NUMBA_DISABLE_JIT": (0, "0 (compile) or 1 (run the kernels as Python)")}


def check_numba_environment() -> None:
    """Before numba is imported: an empty numba setting counts as unset; a malformed one is a
    ``ValueError`` naming it rather than numba's traceback (or a setting quietly ignored)."""
    for name, (least, wanted) in _NUMBA_INTEGERS.items():
        value = os.environ.get(name)
        if value is not None and not value.strip():
            del os.environ[name]
            continue
        try:
            ok = value is None or int(value) >= least
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"environment variable {name}={value!r}: numba wants {wanted}; "
                             "set one or unset it")


def jit_disabled() -> bool:
    """Whether numba runs the kernels as Python (``NUMBA_DISABLE_JIT``, read as numba reads it)."""
    try:
        return int(os.environ.get("NUMBA_DISABLE_JIT") or 0) != 0
    except ValueError:
        return False


def check_cache_dir() -> None:
    """The kernel cache folder takes files (numba's own test): numba passes over an unusable one
    quietly and then compiles the kernels again in every run; ``ValueError`` naming it instead."""
    import tempfile

    import canasta_env.engine  # noqa: F401  (points NUMBA_CACHE_DIR at the engine's cache)

    if jit_disabled():
        return
    folder = os.environ["NUMBA_CACHE_DIR"]
    try:
        os.makedirs(folder, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as exc:
        reason = "a file, not a folder" if os.path.isfile(folder) else exc.strerror or type(exc).__name__
        raise ValueError(f"kernel cache folder {folder!r} is not usable ({reason}): point NUMBA_CACHE_DIR "
                         "or CANASTA_CACHE_DIR at a writable folder") from exc


def cache_is_cold() -> bool:
    """Whether the engine's kernel cache holds nothing yet (the next engine call compiles), with
    the JIT on."""
    import canasta_env.engine  # noqa: F401  (points NUMBA_CACHE_DIR at the engine's cache)

    if jit_disabled():
        return False
    folder = Path(os.environ["NUMBA_CACHE_DIR"])
    return not folder.is_dir() or not any(folder.rglob("*.nbi"))


def warm_if_cold(command: str, *, self_warming: bool = False) -> None:
    """On a cold cache, say so in one line and compile the kernels under a progress line before
    ``command`` runs, instead of sitting silent through the compile; a ``self_warming`` command
    (bench, which times the compile) only gets the line and compiles as it runs."""
    if not cache_is_cold():
        return
    from rich.console import Console

    console = Console(stderr=True)
    how = "as it runs (a minute or more" if self_warming else "once (about half a minute"
    console.print(f"canasta {command}: first run of this engine version: compiling its kernels {how} "
                  f"on 2 cores; cached in {os.environ['NUMBA_CACHE_DIR']})", highlight=False, soft_wrap=True)
    if self_warming:
        return
    seconds = warm(label=f"canasta {command}", console=console)
    console.print(f"canasta {command}: kernels compiled in {seconds:.0f} s", highlight=False)


def main() -> int:
    from rich.console import Console

    seconds = warm(console=Console(stderr=True))
    print(f"engine kernels ready in {seconds:.1f} s (cache: {os.environ.get('NUMBA_CACHE_DIR', '?')})")
    return 0


# ---- progress --------------------------------------------------------------------------------

class _Progress:
    """The progress line: how far (with workers, a bar over ``JOBS`` weighted by their usual seconds,
    a running job advancing with its time up to 90% of it; else a spinner), the functions compiled so
    far, what each process compiles now and the time so far. Without a terminal, a line when it
    starts and one per finished job; nothing without a console."""

    def __init__(self, label: str, console: Any) -> None:
        self.label, self.console = label, console
        self.lock = threading.Lock()
        self.workers = 0
        self.done = 0.0
        self.compiled = 0
        self.running: dict[int, tuple[str, float]] = {}  # worker -> (job, started)
        self.now: dict[int, list[str]] = {}  # process (-1: this one) -> the functions it compiles
        self.live: Any = None
        self.start = time.perf_counter()

    def __enter__(self) -> _Progress:
        if self.console is None:
            return self
        if self.console.is_terminal:
            from rich.live import Live
            from rich.spinner import Spinner

            self.spinner = Spinner("dots")
            self.live = Live(console=self.console, transient=True, refresh_per_second=8,
                             get_renderable=self._render)
            self.live.__enter__()
        else:
            where = f" in {self.workers} processes" if self.workers else ""
            self.console.print(f"{self.label}: compiling the engine's kernels{where} (first run only)",
                               highlight=False)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.__exit__(None, None, None)

    def job_started(self, worker: int, job: str) -> None:
        with self.lock:
            self.running[worker] = (job, time.perf_counter())
            self.now[worker] = []

    def job_done(self, worker: int, job: str) -> None:
        with self.lock:
            self.done += JOBS.get(job, 0.0)
            self.running.pop(worker, None)
            self.now.pop(worker, None)
        if self.console is not None and self.live is None:
            self.console.print(f"{self.label}: compiled {job} ({self._elapsed():.0f} s)", highlight=False)

    def compiling(self, process: int, function: str, starts: bool) -> None:
        """``function`` starts (or ends) compiling in worker ``process`` (-1: this process)."""
        with self.lock:
            stack = self.now.setdefault(process, [])
            if starts:
                stack.append(function)
                self.compiled += 1
            elif function in stack:
                del stack[stack.index(function):]

    def __call__(self, function: str, starts: bool) -> None:
        self.compiling(-1, function, starts)

    def _elapsed(self) -> float:
        return time.perf_counter() - self.start

    def _render(self) -> Any:
        from rich.progress_bar import ProgressBar
        from rich.table import Table

        with self.lock:
            t = time.perf_counter()
            running = sum(min(t - t0, 0.9 * JOBS.get(job, 0.0)) for job, t0 in self.running.values())
            fraction = min(1.0, (self.done + running) / sum(JOBS.values()))
            now = " · ".join(stack[-1] for _, stack in sorted(self.now.items()) if stack)
            compiled = self.compiled
        line = Table.grid(padding=(0, 1))
        bar = ProgressBar(total=1.0, completed=fraction, width=20)
        how_far: list[Any] = [bar, f"{100 * fraction:3.0f}%"] if self.workers else [self.spinner]
        line.add_row(f"{self.label}: compiling the engine's kernels (first run only)", *how_far,
                     f"{self._elapsed():3.0f} s, {compiled} functions", now)
        return line


if __name__ == "__main__":
    sys.exit(main())
