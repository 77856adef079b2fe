"""The record dir's files, touched only in ways a hostile record dir cannot turn against the server.

Anyone who can write the record dir can plant a symbolic link to a file elsewhere (``~/.bashrc``),
a FIFO that blocks a reader, or a file in place of a folder. So here no symbolic link is followed
(files are opened with ``O_NOFOLLOW``, listed by ``lstat``), only regular files are read and at
most a cap of bytes, a write is either a new file renamed into place (a rename replaces a planted
link itself, never its target) or an append to a regular file, and a folder that went away is made
again, while one that cannot be (a file in its place) is a clear 503, never a traceback.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from train.web.errors import GameError, reason

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # opening a FIFO must not wait for a writer


def ensure_dir(path: Path, what: str, *, follow: bool = False) -> None:
    """Make folder ``path`` again if it went away; ``GameError`` 503 when it cannot be a folder (a
    file or, unless ``follow``, a symbolic link in its place, or no permission). ``follow``: the
    record dir itself may be a link the user chose; the folders inside it may not."""
    try:
        mode = (os.stat if follow else os.lstat)(path).st_mode
    except FileNotFoundError:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise GameError(503, f"the {what} {path} went away and cannot be made again: "
                                 f"{reason(exc)}") from None
        return
    except OSError as exc:
        raise GameError(503, f"the {what} {path} cannot be used: {reason(exc)}") from None
    if stat.S_ISLNK(mode):
        raise GameError(503, f"the {what} {path} is a symbolic link; the server follows none in the "
                             "record dir: move it away")
    if not stat.S_ISDIR(mode):
        raise GameError(503, f"the {what} {path} is not a folder (a file is in its place): move it away")


def _open(path: Path, flags: int, name: str, mode: int = 0o644) -> int:
    """A descriptor of regular file ``path`` opened with ``flags``, never through a link."""
    try:
        fd = os.open(path, flags | NOFOLLOW | NONBLOCK, mode)
    except FileNotFoundError:
        raise GameError(404, f"no {name} in the record dir") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise GameError(403, f"{name} is a symbolic link; the server follows none in the record "
                                 "dir") from None
        raise GameError(503, f"{name} cannot be opened: {reason(exc)}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise GameError(403, f"{name} is not a regular file")
    return fd


def read_regular(path: Path, limit: int, name: str) -> bytes:
    """The bytes of regular file ``path``: ``GameError`` 404 when there is none, 403 for a link or
    anything but a regular file, 422 when it holds more than ``limit`` bytes."""
    fd = _open(path, os.O_RDONLY, name)
    with os.fdopen(fd, "rb") as f:
        if os.fstat(f.fileno()).st_size > limit:
            raise GameError(422, f"{name} is larger than the server reads ({limit} bytes)")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise GameError(422, f"{name} is larger than the server reads ({limit} bytes)")
    return data


def append_text(path: Path, text: str) -> None:
    """Append ``text`` to regular file ``path`` (made if absent), never through a link."""
    fd = _open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, path.name)
    with os.fdopen(fd, "ab") as f:
        f.write(text.encode("utf-8"))


def regular_files(folder: Path, suffix: str) -> list[tuple[Path, os.stat_result]]:
    """The regular files of ``folder`` ending ``suffix`` with their ``lstat`` (links, folders and
    FIFOs left out); none when the folder is gone or is not one."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    out = []
    for entry in entries:
        if not entry.name.endswith(suffix):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            out.append((Path(entry.path), st))
    return out


def remove(path: Path) -> int:
    """Remove regular file (or link) ``path`` if it is there; the bytes it held, 0 if none."""
    try:
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode):
            return 0
        path.unlink()
    except OSError:
        return 0
    return int(st.st_size) if stat.S_ISREG(st.st_mode) else 0


def clear_leftovers(folder: Path) -> None:
    """Remove the temporary files a crash left mid-write (``.NAME.xxxx.tmp``)."""
    for path, _ in regular_files(folder, ".tmp"):
        if path.name.startswith("."):
            remove(path)
