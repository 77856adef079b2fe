"""Output paths checked before the work that fills them: a command that would spend an hour playing
games and then fail to write its result refuses at once, in one line."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from canasta_env.messages import short_repr


def check_output_file(path: str | Path, flag: str) -> Path:
    """``path`` as a file the command may write: its folder exists and is writable, and it is not a
    folder itself; ``ValueError`` naming ``flag`` otherwise."""
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
    if not os.access(parent, os.W_OK | os.X_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise ValueError(f"{flag} {short_repr(str(path))}: not writable")
    return out


def _cwd_exists() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:
        return False
    return True


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data`` at once: a crash leaves the old or the new file, never half,
    and a link planted at ``path`` is replaced, its target never written. The temporary file's name
    is new each time, so nothing left at a fixed name (a folder, a pipe) can block the write."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), os.lstat(path).st_mode & 0o777 if path.is_file() and not path.is_symlink()
                      else 0o644)  # the file's own mode, or a new file's usual one (mkstemp's is 0o600)
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
