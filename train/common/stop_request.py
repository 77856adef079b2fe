"""Stopping a training run cleanly: the first Ctrl-C (SIGINT) or SIGTERM asks the trainer to stop
after the update in progress and write a checkpoint, so an interrupted run loses nothing and resumes
where it stopped; a second signal stops at once (the last periodic checkpoint stays)."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopRequest:
    """Set by the first stop signal while ``catch_stop_signals`` is active; trainers read
    ``requested`` at each update boundary."""

    def __init__(self) -> None:
        self.signum = 0

    @property
    def requested(self) -> bool:
        return self.signum != 0

    @property
    def signal_name(self) -> str:
        return signal.Signals(self.signum).name if self.signum else ""

    @property
    def exit_status(self) -> int:
        """The shell's status for a process ended by the signal (130 for SIGINT)."""
        return 128 + self.signum


class StoppedBeforeCheckpoint(Exception):
    """A stop was requested before the run's first checkpoint (during behaviour cloning): there is
    nothing to keep, and a resume starts that phase again."""


@contextmanager
def catch_stop_signals(what: str = "training") -> Iterator[StopRequest]:
    """Within the block, the first SIGINT/SIGTERM sets the returned request (with a one-line notice
    on stderr) instead of raising; the next one raises ``KeyboardInterrupt``. Outside the main
    thread signals cannot be caught, and the request simply never fires."""
    request = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield request
        return

    def handle(signum: int, frame: FrameType | None) -> None:
        if request.requested:
            raise KeyboardInterrupt
        request.signum = signum
        print(f"canasta: {request.signal_name}: {what} stops after the current update and writes a "
              "checkpoint (send it again to stop at once)", file=sys.stderr, flush=True)

    previous = {sig: signal.signal(sig, handle) for sig in _SIGNALS}
    try:
        yield request
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
