"""``State.threads``: a batch split over threads plays exactly as one serial call."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from canasta_env.engine import init, init_from_deals, observe, reset_rows, step
from canasta_env.engine.core import DealId
from canasta_env.engine.threads import MIN_ROWS_PER_THREAD
from canasta_env.policy import RandomAgent

ROWS = 3 * MIN_ROWS_PER_THREAD + 5  # three uneven chunks
# one worker compiles the parallel twins (about a minute) instead of each compiling them at once
pytestmark = pytest.mark.xdist_group("engine-threads")


@pytest.mark.parametrize("rules", ["classic_4p", "railroad_2p"])
def test_threaded_batch_plays_exactly_as_serial(rules: str) -> None:
    serial, threaded = init(rules, ROWS, 11), init(rules, ROWS, 11, threads=3)
    agent, rng_a, rng_b = RandomAgent(), np.random.default_rng(0), np.random.default_rng(0)
    hands_ended = 0
    for _ in range(400):
        actions = agent.act(None, serial.legal_action_mask, rng_a)
        assert (actions == agent.act(None, threaded.legal_action_mask, rng_b)).all()
        a, b = step(serial, actions), step(threaded, actions)
        for x, y in zip(a, b, strict=True):
            assert (x == y).all()
        assert (observe(serial, serial.current_player) == observe(threaded, threaded.current_player)).all()
        done = np.flatnonzero(a.terminated | a.truncated)
        hands_ended += done.size
        assert (reset_rows(serial, done) == reset_rows(threaded, done)).all()
        assert (serial.data == threaded.data).all()
        assert (serial.legal_action_mask == threaded.legal_action_mask).all()
    assert hands_ended > ROWS  # the re-deal path ran too


def test_threaded_deals_and_row_subsets_match_serial() -> None:
    deals = [DealId(5, b, 2) for b in range(ROWS)]
    serial, threaded = init_from_deals("classic_2p", deals), init_from_deals("classic_2p", deals, threads=2)
    assert (serial.data == threaded.data).all()
    rows = np.arange(1, ROWS, 2)[::-1].copy()  # a subset, out of order
    actions = RandomAgent().act(None, serial.legal_action_mask[rows], np.random.default_rng(1))
    for x, y in zip(step(serial, actions, rows), step(threaded, actions, rows), strict=True):
        assert (x == y).all()
    assert (serial.data == threaded.data).all()


def test_serial_is_the_default_and_a_bad_thread_count_is_refused() -> None:
    assert init("classic_2p", 2).threads == 1
    for bad in (0, -1, 1.5, "2", True, None):
        with pytest.raises(ValueError, match="init: threads must be an integer >= 1"):
            init("classic_2p", 2, threads=bad)  # type: ignore[arg-type]
    state = init("classic_2p", 2, threads=2)
    state.threads = 0
    with pytest.raises(ValueError, match=r"step: state.threads must be an integer >= 1, got 0"):
        step(state, [0, 0])


def _step_in_child(queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    state = init("classic_2p", ROWS, 3, threads=2)
    step(state, RandomAgent().act(None, state.legal_action_mask, np.random.default_rng(0)))
    queue.put(int(state.data.sum()))


def test_a_forked_child_can_step_on_threads() -> None:
    """GNU OpenMP (numba's omp layer) aborts a child forked after its parent launched a parallel
    loop, at the child's first launch; the fork hook makes such a child run serially."""
    state = init("classic_2p", ROWS, 3, threads=2)  # the parent launches before the fork
    step(state, RandomAgent().act(None, state.legal_action_mask, np.random.default_rng(0)))
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_step_in_child, args=(queue,))
    child.start()
    child.join(timeout=120)
    assert child.exitcode == 0, "the forked child did not finish its threaded step"
    assert queue.get(timeout=5) == int(state.data.sum())


CONCURRENT = textwrap.dedent("""
    import threading
    import numpy as np
    from canasta_env.engine import init, step
    from canasta_env.policy import RandomAgent

    def play(threads, out, key):
        state = init("classic_4p", 300, key, threads=threads)
        rng = np.random.default_rng(key)
        for _ in range(60):
            step(state, RandomAgent().act(None, state.legal_action_mask, rng))
        out[(threads, key)] = state.data.copy()

    out = {}
    workers = [threading.Thread(target=play, args=(2, out, key)) for key in (1, 2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    for key in (1, 2):
        play(1, out, key)
        assert (out[(1, key)] == out[(2, key)]).all()
    print("ok")
""")


def test_two_python_threads_may_step_threaded_states_at_once() -> None:
    """numba's workqueue layer (the one every install has) aborts the process on two parallel
    launches at once; the engine serialises its launches, so two threads each stepping a threaded
    state play exactly as serial."""
    env = dict(os.environ, NUMBA_THREADING_LAYER="workqueue")
    done = subprocess.run([sys.executable, "-c", CONCURRENT], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
