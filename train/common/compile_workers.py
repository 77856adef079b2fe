"""The worker processes of a cold warm-up (``train.common.warmup``): one per core, sharing numba's
on-disk cache, each compiling the next of ``JOBS`` it is handed. A lock file per compiled function makes
a worker that needs a function another one is compiling wait for it and load it from the cache, so
nothing compiles twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

PRESET = "classic_2p"  # the kernels' argument types are the same for every preset
PACKAGES = ("canasta_env", "agents", "train")  # whose functions compile under the shared locks

# What the workers compile, in the order they take it, with the seconds each took on a 2-core machine
# (the progress bar's weights). The legality solver under ``mask_rows`` is 40% of all the work: one
# worker compiles it while the other starts with the solver's branches that mask_rows reaches last,
# then the end of a hand; ``step_kernel`` links the solver too, so it waits until the solver is done.
JOBS = {
    "mask_rows": 20.0, "go_out_ok": 5.5, "discard_path_ok": 2.3, "go_out": 6.8, "heuristic": 5.8,
    "step_kernel": 4.6, "find_corrupt": 3.1, "deal_kernel": 0.5, "observe_kernel": 2.6,
    "explicit_deal_kernel": 0.3, "planner": 2.8, "greedy": 0.7, "random": 0.3,
}


class Workers:
    """One worker process per usable core, each handed the next of ``JOBS`` as it finishes one. A
    job a worker fails leaves its kernels to the main process's pass, which compiles what it misses."""

    def __init__(self, count: int, lock_dir: Path, progress: Any) -> None:
        self.lock_dir, self.progress = lock_dir, progress
        self.todo = list(JOBS)
        self.lock = threading.Lock()
        # forked, a worker starts with numba and the engine imported; a process running other threads
        # (one that imported torch, say) starts fresh interpreters instead, which import them again
        fork = hasattr(os, "fork") and threading.active_count() == 1
        start = _fork_worker if fork else _spawn_worker
        self.procs: list[Any] = [start(lock_dir) for _ in range(count)]
        self.threads = [threading.Thread(target=self._serve, args=(i,), daemon=True) for i in range(count)]
        for thread in self.threads:
            thread.start()

    @classmethod
    def start(cls, progress: Any) -> Workers | None:
        """Workers for a cold cache, or None on one core or without ``fcntl`` file locks."""
        try:
            import fcntl  # noqa: F401
        except ImportError:
            return None
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        if cores < 2:
            return None
        lock_dir = Path(os.environ["NUMBA_CACHE_DIR"]) / "locks"
        try:
            lock_dir.mkdir(parents=True, exist_ok=True)
            progress.workers = min(cores, len(JOBS))
            return cls(progress.workers, lock_dir, progress)
        except OSError:  # no room for processes or the lock folder: compile in this one
            progress.workers = 0
            return None

    def _serve(self, i: int) -> None:
        """Relay worker ``i``'s events to the progress line and hand it jobs until none is left."""
        self._hand_out(i)
        for line in self.procs[i].stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if "done" in event:
                self.progress.job_done(i, event["done"])
                self._hand_out(i)
            elif "start" in event:
                self.progress.job_started(i, event["start"])
            elif "compiling" in event:
                self.progress.compiling(i, event["compiling"], True)
            elif "compiled" in event:
                self.progress.compiling(i, event["compiled"], False)

    def _hand_out(self, i: int) -> None:
        """Send worker ``i`` its next job, or an empty line to stop it."""
        with self.lock:
            job = self.todo.pop(0) if self.todo else ""
        try:
            self.procs[i].stdin.write(job + "\n")
            self.procs[i].stdin.flush()
        except OSError:
            pass  # it exited

    def finish(self) -> None:
        """Wait for the workers to run out of jobs (stopping them if the wait is interrupted)."""
        try:
            for proc, thread in zip(self.procs, self.threads, strict=True):
                thread.join()
                proc.wait()
        except BaseException:
            for proc in self.procs:
                proc.kill()
            raise


class _Forked:
    """A forked worker: its job and event pipes, and ``wait``/``kill`` like a ``Popen``."""

    def __init__(self, pid: int, stdin: Any, stdout: Any) -> None:
        self.pid, self.stdin, self.stdout = pid, stdin, stdout

    def wait(self) -> None:
        os.waitpid(self.pid, 0)

    def kill(self) -> None:
        try:
            os.kill(self.pid, 9)
        except OSError:
            pass


def _fork_worker(lock_dir: Path) -> _Forked:
    """A worker forked from this process, with numba and the engine already imported."""
    jobs_r, jobs_w = os.pipe()
    events_r, events_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the worker: never returns into the caller's code
        code = 1
        try:
            os.close(jobs_w)
            os.close(events_r)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            code = _worker(lock_dir, os.fdopen(jobs_r), os.fdopen(events_w, "w"))
        finally:
            os._exit(code)
    os.close(jobs_r)
    os.close(events_w)
    return _Forked(pid, os.fdopen(jobs_w, "w"), os.fdopen(events_r))


def _spawn_worker(lock_dir: Path) -> subprocess.Popen[str]:
    """A worker in a fresh interpreter (``python -m train.common.compile_workers --worker``)."""
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    return subprocess.Popen([sys.executable, "-m", "train.common.compile_workers", "--worker", str(lock_dir)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env=env)


def _worker(lock_dir: Path, jobs_in: Any = None, events_out: Any = None) -> int:
    """A worker process: compile the jobs named on ``jobs_in`` (stdin), one a line (an empty line
    ends), reporting on ``events_out`` (stdout) in JSON lines."""
    jobs_in, events_out = jobs_in or sys.stdin, events_out or sys.stdout

    def say(**event: str) -> None:
        events_out.write(json.dumps(event) + "\n")
        events_out.flush()

    def report(function: str, starts: bool) -> None:
        say(**{"compiling" if starts else "compiled": function})

    with _shared_compiles(lock_dir), report_compiles(report):
        jobs = _compile_jobs()
        for line in jobs_in:
            name = line.strip()
            if not name:
                break
            say(start=name)
            try:
                jobs[name]()
            except Exception:  # noqa: BLE001 (the main process compiles it again, and reports)
                pass
            say(done=name)
    return 0


@contextmanager
def _shared_compiles(lock_dir: Path) -> Iterator[None]:
    """While active, each compile of one of this project's functions holds the file lock
    ``lock_dir/<function>.lock`` (per function, not per signature: numba keeps one index file per
    function). A process that needs a function another one is compiling waits, then loads it from
    the cache. Deadlock-free: a process holds the locks of a chain of callers, and waits only for a
    callee."""
    import fcntl

    from numba.core.dispatcher import Dispatcher

    original = Dispatcher.compile
    held: set[str] = set()

    def compile(self: Any, sig: Any) -> Any:
        module = getattr(self.py_func, "__module__", None) or ""
        key = f"{module}.{self.py_func.__qualname__}"
        if key in held or module.split(".")[0] not in PACKAGES:
            return original(self, sig)
        fd = os.open(lock_dir / f"{key}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held.add(key)
            return original(self, sig)
        finally:
            held.discard(key)
            os.close(fd)

    Dispatcher.compile = compile  # type: ignore[method-assign]
    try:
        yield
    finally:
        Dispatcher.compile = original  # type: ignore[method-assign]


def _compile_jobs() -> dict[str, Callable[[], None]]:
    """``JOBS``: each compiles kernels for the argument types their callers pass (made here from an
    empty state, which nothing runs on), or calls an agent on an all-zero observation."""
    import numpy as np
    from numba import typeof

    from canasta_env.engine import core, going_out, integrity, kernels, melds, observation, turn
    from canasta_env.engine import layout as L
    from canasta_env.engine.actions import DRAW_STOCK, NUM_ACTIONS

    state = core._new_state(PRESET, 2, "hand", "warmup")
    data, masks, prm, rows = state.data, state.legal_action_mask, state.params, state.all_rows
    deck = int(prm[L.P_DECK])
    ints = np.zeros(2, np.int32)
    flags = np.zeros((3, 2), np.bool_)
    obs = np.zeros((2, observation.obs_dim(prm)), np.float32)
    calls: dict[str, tuple[Any, tuple[Any, ...]]] = {
        "mask_rows": (kernels.mask_rows, (data, masks, prm, rows)),
        "go_out_ok": (going_out.go_out_ok, (data[0], prm)),
        "discard_path_ok": (melds.discard_path_ok, (data[0], prm, melds.KEEP_DISCARD)),
        "go_out": (turn.go_out, (data[0], prm, np.zeros(state.num_players, np.float32),
                                 np.zeros(deck, np.int32))),
        "step_kernel": (kernels.step_kernel, (data, masks, prm, rows, rows,
                                              np.zeros((2, state.num_players), np.float32), flags[0],
                                              flags[1], flags[2], ints)),
        "deal_kernel": (kernels.deal_kernel, (data, prm, rows, ints, ints, ints, ints, ints)),
        "explicit_deal_kernel": (kernels.explicit_deal_kernel,
                                 (data, prm, rows, np.zeros((2, deck), np.int32), ints)),
        "observe_kernel": (observation.observe_kernel, (data, prm, state.obs_divisors, rows, rows, obs)),
        "find_corrupt": (integrity.find_corrupt, (data, prm, prm, masks, rows, rows,
                                                  np.zeros(integrity.REPORT_SIZE, np.int64))),
    }

    def compile_only(kernel: Any, args: tuple[Any, ...]) -> Callable[[], None]:
        return lambda: kernel.compile(tuple(typeof(a) for a in args))

    def act(name: str) -> Callable[[], None]:
        def run() -> None:
            from agents import make_agent

            legal = np.zeros((2, NUM_ACTIONS), np.bool_)
            legal[:, DRAW_STOCK] = True
            make_agent(name, PRESET).act(obs, legal, np.random.default_rng(0))
        return run

    jobs = {name: compile_only(kernel, args) for name, (kernel, args) in calls.items()}
    jobs.update({name: act(name) for name in ("heuristic", "planner", "greedy", "random")})
    return jobs


@contextmanager
def report_compiles(report: Callable[[str, bool], None]) -> Iterator[None]:
    """Call ``report("module.function", True)`` as numba starts compiling one of this project's
    functions, and ``report(..., False)`` when it is done."""
    from numba.core import event

    def name(ev: Any) -> str | None:
        func = ev.data["dispatcher"].py_func
        module = getattr(func, "__module__", None) or ""
        if module.split(".")[0] not in PACKAGES:
            return None
        return f"{module.rsplit('.', 1)[-1]}.{func.__qualname__}"

    class Listener(event.Listener):
        def on_start(self, ev: Any) -> None:
            if (function := name(ev)) is not None:
                report(function, True)

        def on_end(self, ev: Any) -> None:
            if (function := name(ev)) is not None:
                report(function, False)

    listener = Listener()
    event.register("numba:compile", listener)
    try:
        yield
    finally:
        event.unregister("numba:compile", listener)



if __name__ == "__main__":  # python -m train.common.compile_workers --worker LOCK_DIR
    sys.exit(_worker(Path(sys.argv[2])))
