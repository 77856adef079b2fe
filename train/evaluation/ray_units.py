"""Tournament units as Ray tasks (``canasta tournament --ray [ADDRESS]``).

A unit (one match on up to ``DEALS_PER_UNIT`` deals, every seating) is already a pure function of
the tournament's configuration, so it can run anywhere: each pending unit becomes one task, the
agents, rules and deals travel once through the object store, and the driver takes the results back
in unit order. The hand log, records and ratings are therefore byte for byte those of a local run,
whatever the number of workers. A worker that dies mid-unit (a killed process, a lost node) is
retried by Ray; a unit's result is used once, when the driver reaches it, so nothing is lost or
counted twice. Only this module imports Ray (the ``ray`` extra).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy.typing as npt

LOCAL = "local"  # start a Ray instance in this process, on this machine's cores
TASK_RETRIES = 3  # attempts after a worker dies mid-unit
KILL_ENV = "CANASTA_TEST_KILL_AT"  # ``ray_unit@MARKER``: the first unit task to run exits its worker


def connect(address: str) -> None:
    """Join the Ray cluster at ``address`` (``auto`` for the one ``ray start`` runs here, or
    ``host:port``), or start a local instance for ``local``; a no-op when already connected."""
    import ray

    if ray.is_initialized():
        return
    quiet = {"include_dashboard": False, "log_to_driver": False, "logging_level": "warning"}
    if address == LOCAL:
        ray.init(**quiet)
        return
    _probe(address)
    try:
        ray.init(address=address, **quiet)
    except ConnectionError as exc:
        raise ValueError(f"--ray {address}: no Ray cluster reachable there ({exc})") from exc


def _probe(address: str, timeout_s: float = 5.0) -> None:
    """Fail fast on a ``host:port`` nothing listens on, or whose port is no port number (``host:-1``,
    ``host:abc``, ``host:99999``): Ray itself would keep retrying either for minutes."""
    host, sep, port = address.split("://", 1)[-1].rpartition(":")
    if not sep:
        return  # "auto" and other forms Ray resolves itself
    if not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
        raise ValueError(f"--ray {address}: port {port!r} is not a port number (1 to 65535); give 'auto' "
                         "or host:port")
    try:
        socket.create_connection((host.removeprefix("[").removesuffix("]") or "127.0.0.1", int(port)),
                                 timeout=timeout_s).close()  # [::1]:6379, as Ray takes IPv6
    except OSError as exc:
        raise ValueError(f"--ray {address}: no Ray cluster reachable there ({exc.strerror or exc})") from exc


def play_units(shared: tuple[Any, ...], pending: list[tuple[int, npt.NDArray[Any]]], address: str
               ) -> Iterator[tuple[dict[str, npt.NDArray[Any]], list[Any]]]:
    """``train.evaluation.tournament_plan.play_unit`` of every ``(match, deals)`` in ``pending`` on the
    cluster, yielded in the order of ``pending``. ``shared`` is ``play_unit``'s other arguments:
    ``(rules, agents, plan, deal_source, seed, labels, luck, names)``; ``names`` (the entrants' labels,
    then the partner's) name a failing agent as the local run does, not ``#i (Class)``."""
    import ray

    connect(address)
    task = ray.remote(max_retries=TASK_RETRIES)(_unit_task)
    ref = _put(shared)
    kill = os.environ.get(KILL_ENV, "")
    marker = kill.removeprefix("ray_unit@") if kill.startswith("ray_unit@") else None
    futures = [task.remote(ref, m, d, marker) for m, d in pending]
    try:
        for future in futures:
            try:
                yield ray.get(future)
            except ray.exceptions.RayTaskError as exc:
                if isinstance(exc.cause, ValueError):  # a failing agent: its one line, as a local run says it
                    raise exc.cause from None
                raise
    finally:
        for future in futures:
            ray.cancel(future)  # a no-op for finished tasks; drops the rest on an interruption


def _put(shared: tuple[Any, ...]) -> Any:
    """``shared`` in the object store; an agent that cannot be pickled (it holds a lock, a file, a
    generator) is a ``ValueError`` naming it (a traceback of Ray's serializer)."""
    import ray

    try:
        return ray.put(shared)
    except Exception:
        agents, names = shared[1], shared[7]
        for agent, name in zip(agents, names, strict=True):
            try:
                ray.cloudpickle.dumps(agent)
            except Exception as exc:
                raise ValueError(f"--ray: agent {name!r} cannot be sent to the Ray workers (it does not "
                                 f"pickle: {type(exc).__name__}: {exc}); play it without --ray") from None
        raise


def _unit_task(shared: tuple[Any, ...], match_index: int, deals: npt.NDArray[Any],
               kill_marker: str | None) -> tuple[dict[str, npt.NDArray[Any]], list[Any]]:
    from train.evaluation.tournament_plan import play_unit

    if kill_marker is not None and not Path(kill_marker).exists():  # tests: lose a worker once
        Path(kill_marker).touch()
        os._exit(1)
    rules, agents, plan, deal_source, seed, labels, luck, names = shared
    return play_unit(rules, agents, plan, match_index, deals, deal_source, seed, labels, luck=luck,
                     names=names)
