"""Exclusive locks on output folders (run directories, tournament ``--out``): one writer at a time;
and ``waiting_lock``, which waits its turn, for a short read-modify-write of a shared file.

The lock is an OS advisory lock (``flock`` on POSIX, ``msvcrt.locking`` on Windows) on the file
``<folder>/.lock``, so the kernel releases it when its process dies, even by SIGKILL: a stale lock
file never blocks a later run. The holder writes its PID into the file, which is what a refused
second process reports.

A process stopped while it holds a lock (SIGSTOP, Ctrl-Z) keeps it: ``waiting_lock`` says so on
stderr while it waits, naming the PID to continue or end. It never gives up by itself: a tournament
without ``--out`` holds its games only in memory until the ladder is updated.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

LOCK_FILE = ".lock"
WAIT_NOTICE_S = 5.0  # waiting_lock says on stderr whom it waits for after this long,
WAIT_REPEAT_S = 60.0  # and again after each such span (at once when the holder or its state changes)


class FolderLockedError(ValueError):
    """Another live process holds the folder's lock (the message names its PID)."""


class FolderLock:
    """``with FolderLock(folder, "run directory"):`` holds ``folder`` exclusively or raises
    ``FolderLockedError`` at once (never waits)."""

    def __init__(self, folder: str | os.PathLike[str], what: str = "folder") -> None:
        self.folder, self.what = Path(folder), what
        self._fd: int | None = None
        self._made: list[Path] = []  # folders acquire() created, deepest first

    @property
    def path(self) -> Path:
        return self.folder / LOCK_FILE

    def probe(self) -> None:
        """Raise ``FolderLockedError`` if another process holds the lock; creates nothing, so a
        caller can refuse a folder without touching it."""
        if not self.path.is_file():
            return
        fd = os.open(self.path, os.O_RDWR)
        try:
            if not _try_lock(fd, self.path):
                raise self._locked_error()
            _unlock(fd)
        finally:
            os.close(fd)

    def acquire(self) -> FolderLock:
        """Create the folder and its lock file if needed, take the lock and write our PID."""
        self._made = [p for p in (self.folder, *self.folder.parents) if not p.exists()]
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if not _try_lock(fd, self.path):
                raise self._locked_error()
        except BaseException:
            os.close(fd)
            raise
        pid = f"{os.getpid()}\n".encode()
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, pid)  # then truncate: a reader never sees an empty file
        os.ftruncate(fd, len(pid))
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            _unlock(self._fd)
            os.close(self._fd)
            self._fd = None

    def _locked_error(self) -> FolderLockedError:
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            holder = "unknown"
        else:
            holder = _holder(fd)
            os.close(fd)
        return FolderLockedError(f"{self.folder}: {self.what} in use by another process (PID {holder}, "
                                 f"lock {self.path}); wait for it to finish or use another folder")

    def __enter__(self) -> FolderLock:
        return self.acquire() if self._fd is None else self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if kind is not None and self._made and self._fd is not None:
            self._remove_if_unused()
        self.release()

    def _remove_if_unused(self) -> None:
        """After a failed start: the folders ``acquire`` created, if they hold nothing but the lock
        (a refused run leaves no empty run folder behind). Anything written there stays."""
        try:
            if [p.name for p in self.folder.iterdir()] != [LOCK_FILE]:
                return
            self.path.unlink()
            for folder in self._made:
                folder.rmdir()
        except OSError:  # another process's files appeared meanwhile: leave them
            pass


@contextlib.contextmanager
def waiting_lock(path: Path, what: str) -> Iterator[None]:
    """Hold an exclusive lock on the file ``path``, waiting while another process (or another
    thread's ``waiting_lock``) holds it: for a read-modify-write of a file that several processes
    update, so that none loses another's update. ``path`` is made if missing and left in place
    (removed, a waiter and a newcomer could lock two files); the holder writes its PID into it.
    After ``WAIT_NOTICE_S`` seconds of waiting a line on stderr names the lock file, the holder's PID
    and what it is doing (stopped, not running here), again every ``WAIT_REPEAT_S`` seconds and
    whenever that changes. A holder that dies frees the lock (the kernel releases it). A link,
    folder or pipe at ``path``, or one that cannot be made, is a ``ValueError`` naming ``what``."""
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:  # a folder, a link (O_NOFOLLOW), a folder without write permission
        raise ValueError(f"{path}: cannot open the lock file of {what} ({exc.strerror or exc}); it must "
                         "be a regular file, or absent in a writable folder") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{path}: the lock file of {what} is not a regular file (a pipe or device); "
                             "remove it")
        _wait_for(fd, path, what)
        try:
            pid = f"{os.getpid()}\n".encode()
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, pid)
            os.ftruncate(fd, len(pid))
            yield
        finally:
            _unlock(fd)
    finally:
        os.close(fd)


def _wait_for(fd: int, path: Path, what: str) -> None:
    """Take the lock on ``fd`` once its holder lets it go, telling on stderr whom it waits for (from
    ``WAIT_NOTICE_S`` on, a look at the holder a second)."""
    start = time.monotonic()
    look = start + WAIT_NOTICE_S
    seen: tuple[str, str] | None = None  # the holder's PID and state at the last look
    told_at = 0.0
    while not _try_lock(fd, path):
        now = time.monotonic()
        if now >= look:
            look = now + 1.0
            pid = _holder(fd)
            state = _holder_state(pid)
            if seen != (pid, state) or now - told_at >= WAIT_REPEAT_S:
                print(f"waiting for {what}: its lock {path} is held by PID {pid}{_doing(state, pid)} (waited "
                      f"{now - start:.0f} s)", file=sys.stderr, flush=True)
                told_at = now
            seen = pid, state
        time.sleep(0.02)


def _doing(state: str, pid: str) -> str:
    """What a waiting notice says of a holder in ``state`` (``_holder_state``)."""
    if state == "stopped":
        return f", which is stopped (SIGSTOP, Ctrl-Z): continue it (kill -CONT {pid}) or end it"
    if state == "gone":
        return ", which is not running here (a process on another machine, or one it started, holds it)"
    return ""


def _holder(fd: int) -> str:
    """The PID a lock file's holder wrote into it (its first 32 bytes), or ``unknown`` for anything
    but a PID (a file written by something else is never read whole, nor printed)."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 32).decode("ascii", "replace").strip()
    except OSError:  # Windows: the holder's byte lock bars reading it
        return "unknown"
    return text if text.isascii() and text.isdigit() and 0 < int(text) < 2**31 else "unknown"


def _holder_state(pid: str) -> str:
    """What the process ``pid`` does, as far as this machine tells: ``stopped`` (SIGSTOP, Ctrl-Z, a
    debugger; Linux only), ``gone`` (no such process, or a zombie: it let its locks go), or ``""``
    (running, or not known: no PID, Windows)."""
    if pid == "unknown" or os.name == "nt":  # Windows: os.kill would end the process
        return ""
    if os.path.exists("/proc/self/stat"):
        try:
            state = Path("/proc", pid, "stat").read_bytes().rpartition(b")")[2].split()[:1]
        except OSError:
            return "gone"
        return {b"T": "stopped", b"t": "stopped", b"Z": "gone", b"X": "gone"}.get(b"".join(state), "")
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return "gone"
    except OSError:  # another user's process
        return ""
    return ""


if os.name == "nt":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(fd: int, path: Path) -> bool:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
else:
    import fcntl

    def _try_lock(fd: int, path: Path) -> bool:
        """Take the lock if free; a file system without locks (ENOLCK) is an ``OSError`` naming
        ``path``."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        except OSError as exc:
            raise OSError(exc.errno, f"cannot lock it ({exc.strerror})", str(path)) from None
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
