"""What a training run directory holds, and the rules for starting, resuming and replacing one.

A folder holds a run when it has the run's ``config.json``, a ``latest`` pointer or a checkpoint.
``canasta train`` refuses to start a fresh run there (that would mix two runs' checkpoints, logs and
TensorBoard events) unless told ``--resume`` (continue it) or ``--overwrite`` (delete the old run's
files first), and refuses ``--resume`` on a folder holding no run (a mistyped path would otherwise
start from step 0). Every check happens before anything is written, so a refused command leaves the
folder as it was. The whole run holds the folder's lock (``train.common.folder_lock``).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from agents.checkpoint import (
    CHECKPOINT_NAME,
    LATEST,
    MAX_JSON_BYTES,
    META_FILE,
    TMP_PREFIX,
    CheckpointError,
    incomplete_after,
    is_complete,
    latest_checkpoint,
    latest_name,
    list_checkpoints,
    load_checkpoint,
)
from canasta_env.records import RecordError, unique_keys
from train.common.folder_lock import FolderLock

CONFIG_FILE = "config.json"
EVALUATIONS = "evaluations.jsonl"  # one line per evaluation: steps and each opponent's summary
EXPLOITERS = "exploiters"  # an exploiter league's exploiter runs and rule-exploiter records
# What a checkpoint's meta.json "config" holds besides the training options (for the record:
# train.learning.run_callback.save_run_checkpoint); a resume from it leaves these out.
CHECKPOINT_EXTRAS = ("reward_scale",)
# What a run writes besides its checkpoint directories; --overwrite deletes these and nothing else.
RUN_FILES = (CONFIG_FILE, LATEST, "tb", "eval_records.jsonl", EVALUATIONS, EXPLOITERS)


class RunDirError(ValueError):
    """The run directory does not fit the command (a run where none is expected, or none where one
    is), or the latest checkpoint is damaged under ``--strict-resume``."""


def holds_run(run: Path) -> bool:
    """Whether ``run`` holds a training run's files (its config, ``latest`` or a checkpoint)."""
    if not run.is_dir():
        return False
    return any((run / name).exists() for name in (CONFIG_FILE, LATEST)) or any(
        _is_checkpoint_dir(p) for p in run.iterdir())


def _is_checkpoint_dir(path: Path) -> bool:
    """A checkpoint of a run: complete, or named like one (``ckpt_<digits>``, possibly damaged)."""
    return path.is_dir() and not path.is_symlink() and (
        CHECKPOINT_NAME.fullmatch(path.name) is not None or is_complete(path))


def check_run(run: Path, *, resume: bool, overwrite: bool) -> None:
    """Raise ``RunDirError`` (or ``FolderLockedError``) if the command cannot start on ``run``;
    touches nothing, so a command fails fast before its slow setup."""
    if resume and overwrite:
        raise RunDirError("--resume and --overwrite contradict each other: choose one")
    _check_folder(run)
    FolderLock(run, "run directory").probe()
    _check_fits(run, resume, overwrite)


def _check_folder(run: Path) -> None:
    """Refuse a ``run`` that cannot be made a run folder, naming why: a file, a symbolic link to
    nothing (or a loop; creating the folder failed with "File exists"), a file on its path, or a
    checkpoint (its run would rewrite it, and replace the new run with it)."""
    for folder in (run, *run.parents):
        if folder.is_symlink() and not folder.exists():
            raise RunDirError(f"{run}: {folder} is a symbolic link to {os.readlink(folder)}, which does not "
                              "exist or loops; create its target or choose another --run-dir")
        if folder.exists():
            if not folder.is_dir():
                raise RunDirError(f"{run}: not a directory" if folder == run else
                                  f"{run}: {folder} is a file, not a folder")
            break
    if is_complete(run):
        raise RunDirError(f"{run}: a checkpoint, not a run directory; choose another --run-dir")


def open_run(run: Path, *, resume: bool, overwrite: bool) -> FolderLock:
    """Lock ``run`` for a fresh, resumed or replacing run (``check_run`` first, and again under
    the lock); the caller releases it when the run ends, and clears an old run (``clear_run``)
    only once its own setup has succeeded, so a failing ``--overwrite`` loses nothing."""
    check_run(run, resume=resume, overwrite=overwrite)
    lock = FolderLock(run, "run directory")
    lock.acquire()
    try:
        _check_fits(run, resume, overwrite)  # another process may have started a run meanwhile
    except BaseException:
        lock.release()
        raise
    return lock


def _check_fits(run: Path, resume: bool, overwrite: bool) -> None:
    exists = holds_run(run)
    if resume and not exists:
        raise RunDirError(f"{run}: --resume, but this folder holds no run (no {CONFIG_FILE}, "
                          "checkpoint or 'latest'); check the path")
    for name, holds in ((LATEST, "names the latest checkpoint"), (CONFIG_FILE, "holds the run's options")):
        if exists and not overwrite and (run / name).exists() and not (run / name).is_file():
            raise RunDirError(f"{run / name}: not a file (it {holds}); remove it")
    if exists and not (resume or overwrite):
        raise RunDirError(f"{run}: already holds a run; pass --resume to continue it, --overwrite to "
                          "replace it, or choose another --run-dir")


def is_run_file(p: Path) -> bool:
    """Whether ``p``, an entry of a run folder, is one of the run's own (config, logs, checkpoints,
    partial writes): what ``clear_run`` deletes."""
    return p.name in RUN_FILES or p.name.startswith(TMP_PREFIX) or _is_checkpoint_dir(p)


def clear_run(run: Path) -> None:
    """Delete a run's files (``is_run_file``); other files stay."""
    for p in list(run.iterdir()):
        if is_run_file(p):
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()


def read_config(run: Path) -> dict[str, Any]:
    """The run's stored ``config.json`` (empty when there is none)."""
    path = run / CONFIG_FILE
    if not path.is_file():
        if path.exists():  # a folder or a FIFO: not "missing", and a resume could not rewrite it
            raise RunDirError(f"{path}: not a file (it holds the run's options); remove it")
        return {}
    try:
        if path.stat().st_size > MAX_JSON_BYTES:
            raise ValueError(f"larger than {MAX_JSON_BYTES} bytes")
        data = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=unique_keys)
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: [[[[... nested deeply
        hint = "; restore it, or remove it to resume with the options of the latest checkpoint" if (
            latest_checkpoint(run) is not None) else ""
        why = str(exc) if isinstance(exc, RecordError) else f"{type(exc).__name__}: {exc}"
        raise RunDirError(f"{path}: unreadable ({why}){hint}") from None
    if not isinstance(data, dict):
        raise RunDirError(f"{path}: expected a JSON object of training options")
    return data


def resume_config(run: Path) -> tuple[dict[str, Any], Path]:
    """The options a resume starts from, and where they were read: the run's ``config.json``, or
    when it is missing, the ones its newest complete checkpoint was saved with (reported on stderr:
    never the defaults in silence)."""
    path = run / CONFIG_FILE
    if path.exists() or latest_checkpoint(run) is None:
        return read_config(run), path
    meta = latest_checkpoint(run) / META_FILE  # type: ignore[operator]
    try:
        config = json.loads(meta.read_text(encoding="utf-8"))["config"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RunDirError(f"{path}: missing, and {meta} holds no training options ({exc}); write "
                          f"{CONFIG_FILE} or start afresh with --overwrite") from None
    if not isinstance(config, dict):
        raise RunDirError(f"{meta}: 'config' is not a mapping of training options")
    config = {k: v for k, v in config.items() if k not in CHECKPOINT_EXTRAS}
    print(f"warning: {path} is missing; resuming with the options {meta} was saved with",
          file=sys.stderr, flush=True)
    return config, meta


def write_config(run: Path, config: dict[str, Any]) -> None:
    """Replace ``config.json`` atomically."""
    tmp = run / f"{TMP_PREFIX}{CONFIG_FILE}-{os.getpid()}"
    tmp.write_text(json.dumps(config, indent=1), encoding="utf-8")
    os.replace(tmp, run / CONFIG_FILE)


def resume_checkpoint(run: Path, *, strict: bool) -> Path | None:
    """The checkpoint a resume continues from: the one ``latest`` names if every file of it
    verifies, else (reported on stderr; an error under ``strict``) the newest one that does.

    Without a ``latest`` file (a kill between a checkpoint's rename and the pointer update) the newest
    checkpoint is used as is. None when the run has no checkpoint yet (killed before its first); a
    ``RunDirError`` when it has some and none is intact (a resume never starts over silently).
    """
    candidates = list_checkpoints(run)
    named = latest_name(run)
    problems: list[str] = []
    if named is None and os.path.lexists(run / LATEST):
        problems.append(f"'{LATEST}' holds no checkpoint name of this folder (a path, or empty)")
    if named is not None:
        if (run / named).is_dir():
            candidates = [c for c in candidates if c.name != named] + [run / named]
        else:
            problems.append(f"'{LATEST}' names {named}, which does not exist")
    for path in reversed(candidates):
        try:
            steps = load_checkpoint(path).state.get("num_timesteps")
        except CheckpointError as exc:
            problems.append(f"{path.name} is damaged: {exc}")
            continue
        if CHECKPOINT_NAME.fullmatch(path.name) and steps is not None and int(path.name[5:]) != steps:
            problems.append(f"{path.name} holds a checkpoint of step {steps} (renamed or copied?)")
            continue
        problems += [f"{name} is incomplete" for name in incomplete_after(run, path) if name != named]
        if problems:
            _report(run, problems, path, strict)
        elif path.name == named and (newer := _newer_than(run, path)):  # latest was set back by hand
            print(f"warning: {run}: '{LATEST}' names {named}; the newer checkpoints {', '.join(newer)} "
                  "are kept until training reaches their steps and writes them again",
                  file=sys.stderr, flush=True)
        return path
    problems += [f"{name} is incomplete" for name in incomplete_after(run, None) if name != named]
    if problems:
        _report(run, problems, None, strict)
    return None


def _newer_than(run: Path, chosen: Path) -> list[str]:
    """Names of the complete checkpoints of ``run`` past ``chosen`` in step order."""
    names = [p.name for p in list_checkpoints(run)]
    return names[names.index(chosen.name) + 1:] if chosen.name in names else []


def _report(run: Path, problems: list[str], chosen: Path | None, strict: bool) -> None:
    text = f"{run}: latest checkpoint unusable ({'; '.join(problems)})"
    if chosen is None:  # never start over silently: the run's files stay as they are
        raise RunDirError(f"{text}; no intact checkpoint to resume from, nothing was changed (--overwrite "
                          "starts the run afresh)")
    if strict:
        raise RunDirError(f"{text}; --strict-resume refuses to fall back")
    print(f"warning: {text}; falling back to {chosen}", file=sys.stderr, flush=True)


def new_run_dir(label: str, root: Path = Path("runs")) -> Path:
    """A fresh folder name for a run without ``run_dir``: ``runs/<label>-<date>-<time>``, numbered
    when two runs start in the same second."""
    import time

    stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(label).stem)[:60] or "run"
    base = root / f"{stem}-{time.strftime('%Y%m%d-%H%M%S')}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path
