"""Exclusive locks on output folders (run directories, tournament ``--out``): one writer at a time;
and ``waiting_lock``, which waits its turn, for a short read-modify-write of a shared file.

The lock is an OS advisory lock (``flock`` on POSIX, ``msvcrt.locking`` on Windows) on the file
``<folder>/.lock``, so the kernel releases it when its process dies, even by SIGKILL: a stale lock
file never blocks a later run. The holder writes its PID into the file, which is what a refused
second process reports.
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
WAIT_NOTICE_S = 5.0  # waiting_lock says on stderr whom it waits for after this long


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
            if not _try_lock(fd):
                raise self._locked_error()
            _unlock(fd)
        finally:
            os.close(fd)

    def acquire(self) -> FolderLock:
        """Create the folder and its lock file if needed, take the lock and write our PID."""
        self._made = [p for p in (self.folder, *self.folder.parents) if not p.exists()]
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        if not _try_lock(fd):
            os.close(fd)
            raise self._locked_error()
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
            holder = self.path.read_text().strip() or "unknown"
        except OSError:
            holder = "unknown"
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
    (removed, a waiter and a newcomer could lock two files); the holder writes its PID into it, and
    after ``WAIT_NOTICE_S`` seconds of waiting one line on stderr names the holder. A link, folder or
    pipe at ``path``, or one that cannot be made, is a ``ValueError`` naming ``what``."""
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
        start, told = time.monotonic(), False
        while not _try_lock(fd):
            if not told and time.monotonic() - start > WAIT_NOTICE_S:
                holder = _holder(fd)
                print(f"waiting for {what}: its lock {path} is held by PID {holder}", file=sys.stderr,
                      flush=True)
                told = True
            time.sleep(0.02)
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


def _holder(fd: int) -> str:
    """The PID a lock file's holder wrote into it, or ``unknown``."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        return os.read(fd, 32).decode("ascii", "replace").strip() or "unknown"
    except OSError:  # Windows: the holder's byte lock bars reading it
        return "unknown"


if os.name == "nt":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(fd: int) -> bool:
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

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
