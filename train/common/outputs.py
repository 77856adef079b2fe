"""Output paths checked before the work that fills them: a command that would spend an hour playing
games and then fail to write its result refuses at once, in one line."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from canasta_env.messages import short_repr


def check_output_file(path: str | Path, flag: str, *, dangling_ok: bool = False) -> Path:
    """``path`` as a file the command may write: its folder exists and is writable, and it is not a
    folder, a pipe or a device (a pipe without a reader hung the write after the work), nor a link
    to nothing unless ``dangling_ok`` (a write that replaces the link, or follows it on purpose);
    ``ValueError`` naming ``flag`` otherwise."""
    out = Path(path)
    parent = out.parent if str(out.parent) else Path(".")
    if str(path).strip() == "":
        raise ValueError(f"{flag} {short_repr(str(path))}: not a file name")
    if out.is_dir():
        raise ValueError(f"{flag} {short_repr(str(path))}: is a folder; name the file to write")
    if not out.is_absolute() and not _cwd_exists():
        raise ValueError(f"{flag} {short_repr(str(path))}: the working folder was deleted; give a full "
                         "path or change to a folder that exists")
    if not parent.is_dir():
        raise ValueError(f"{flag} {short_repr(str(path))}: no folder {parent} to write it in")
    if out.exists() and not out.is_file():
        raise ValueError(f"{flag} {short_repr(str(path))}: not a regular file (a pipe or device); name a "
                         "file to write")
    if out.is_symlink() and not out.exists() and not dangling_ok:
        raise ValueError(f"{flag} {short_repr(str(path))}: not a regular file (a broken link); name a file "
                         "to write")
    if not os.access(parent, os.W_OK | os.X_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise ValueError(f"{flag} {short_repr(str(path))}: not writable")
    return out


def _cwd_exists() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:
        return False
    return True


def replace_file(path: Path, write: Callable[[Path], object]) -> None:
    """Replace ``path`` at once by the file ``write`` fills at the path it is given, a temporary file
    beside ``path``: a crash or a failed write leaves the old file or the new one, never half of
    either; a link planted at ``path`` is replaced, its target never written. The temporary name is
    new each time, so nothing left at a fixed name (a folder, a pipe) can block the write; the file
    keeps ``path``'s mode, or a new file's usual one (mkstemp's is 0o600)."""
    mode = os.lstat(path).st_mode & 0o777 if path.is_file() and not path.is_symlink() else 0o644
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(name)
    try:
        try:
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomic(path: Path, data: bytes) -> None:
    """``replace_file`` with ``data``."""
    replace_file(path, lambda tmp: tmp.write_bytes(data))
