"""Output paths checked before the work that fills them: a command that would spend an hour playing
games and then fail to write its result refuses at once, in one line."""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Callable, Sequence
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
    tmp = _temp_beside(path)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def replace_files(files: Sequence[tuple[Path, Callable[[Path], object]]]) -> None:
    """``replace_file`` for several files, all or none: each is written to its temporary file, and
    only once all are written is each put in place, its old file kept under a link beside it; should
    a replace fail, the files already replaced get their old ones back (or go, where there was none)
    before the error is raised. (Replacing them one by one left, when a later replace failed, the
    earlier ones new and the later ones old.) A crash while they are put in place can still leave
    some replaced, and the old ones' links (dot-prefixed ``.old`` files) beside them."""
    temps: list[Path] = []
    done: list[tuple[Path, Path | None]] = []  # (a replaced path, the link to its old file)
    try:
        for path, write in files:
            temps.append(_temp_beside(path))
            write(temps[-1])
        for (path, _), tmp in zip(files, temps, strict=True):
            old = _keep_old(path)
            try:
                os.replace(tmp, path)
            except BaseException:
                if old is not None:
                    old.unlink(missing_ok=True)
                raise
            done.append((path, old))
    except BaseException as exc:
        _put_back(done, exc)
        raise
    finally:
        for tmp in temps:
            tmp.unlink(missing_ok=True)
    for _, old in done:
        if old is not None:
            old.unlink(missing_ok=True)


def _temp_beside(path: Path) -> Path:
    """A new empty file beside ``path`` with ``path``'s mode (0o644 for a new file)."""
    mode = os.lstat(path).st_mode & 0o777 if path.is_file() and not path.is_symlink() else 0o644
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    finally:
        os.close(fd)
    return Path(name)


def _keep_old(path: Path) -> Path | None:
    """A second name beside ``path`` for its present file or link (a hard link, else a copy), so that
    replacing ``path`` keeps it; None when there is nothing at ``path``."""
    if not os.path.lexists(path):
        return None
    old = path.parent / f".{path.name}.{secrets.token_hex(4)}.old"
    try:
        os.link(path, old, follow_symlinks=False)
    except OSError:  # a file system without hard links
        try:
            shutil.copy2(path, old, follow_symlinks=False)
        except BaseException:
            old.unlink(missing_ok=True)
            raise
    return old


def _put_back(done: list[tuple[Path, Path | None]], exc: BaseException) -> None:
    """Undo the replaces of ``done``, last first; one that cannot be undone is noted on ``exc``."""
    for path, old in reversed(done):
        try:
            if old is None:
                path.unlink(missing_ok=True)
            else:
                os.replace(old, path)
        except OSError as undo:
            exc.add_note(f"{path} could not be put back ({undo.strerror or undo})"
                         + (f"; its old file is {old}" if old is not None else ""))


def write_atomic(path: Path, data: bytes) -> None:
    """``replace_file`` with ``data``."""
    replace_file(path, lambda tmp: tmp.write_bytes(data))
