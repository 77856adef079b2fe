"""Record files for the replay page: list them, read one, and replay a hand into omniscient frames.

A record file is any JSON-lines file of ``canasta_env.records`` hand records in the record dir: the
ones the table writes (``<game id>.jsonl``), the ones ``canasta play --record`` or a tournament wrote
and were copied there, and uploads (``upload-<hash>.jsonl``). A hand is replayed through the engine
from its explicit deal, so every frame is what the engine does with the recorded actions.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from pathlib import Path
from typing import Any

from train.web.game import GameError

RECORD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,120}\.jsonl")


def list_records(record_dir: Path) -> list[dict[str, Any]]:
    """Record files in the record dir, newest first: name, size in bytes, hands (non-blank lines)."""
    out = []
    for path in record_dir.glob("*.jsonl"):
        if not path.is_file() or not RECORD_NAME.fullmatch(path.name):
            continue
        stat = path.stat()
        with open(path, "rb") as f:
            hands = sum(1 for line in f if line.strip())
        out.append({"file": path.name, "size": stat.st_size, "hands": hands, "modified": stat.st_mtime})
    return sorted(out, key=lambda r: (-r["modified"], r["file"]))


def record_path(record_dir: Path, name: str) -> Path:
    """The path of record file ``name`` in the record dir; ``GameError`` 404 for any other name
    (a path, ``..``, a file that is not there)."""
    if not RECORD_NAME.fullmatch(name):
        raise GameError(404, "no such record file: names are letters, digits, '.', '_', '-' ending .jsonl")
    path = record_dir / name
    if not path.is_file():
        raise GameError(404, f"no record file {name} in the record dir")
    return path


def read_file(record_dir: Path, name: str) -> list[Any]:
    """The hand records of a file; ``GameError`` 422 when it does not read as records."""
    from canasta_env.records import RecordError, read_records

    try:
        return read_records(record_path(record_dir, name))
    except RecordError as exc:
        raise GameError(422, f"{name} does not read as hand records: {exc}") from None


def summary(records: list[Any]) -> list[dict[str, Any]]:
    """One line per hand of a file: rules, seats, decisions, how it ended, scores."""
    return [{"index": i, "rules": r.preset, "seats": r.seats, "hand_number": r.hand_number + 1,
             "decisions": len(r.actions), "end": r.end, "hand_scores": r.hand_scores,
             "scores_after": r.scores_after} for i, r in enumerate(records)]


def hand_frames(record: Any) -> dict[str, Any]:
    """A hand replayed: ``frames[i]`` is the omniscient table before decision ``i`` (the last one
    after the hand), ``moves[i]`` the decision with the mover's recorded top choices, if any."""
    from canasta_env.engine import ACTION_NAMES
    from canasta_env.records import RecordError, check_outcome, replay_step, start_state
    from train.play.table_view import describe
    from train.web.views import table_view

    top = _top_moves(record)
    try:
        state = start_state(record)
        frames, moves = [], []
        for i, action in enumerate(record.actions):
            frames.append(table_view(state, None, record.seats))
            seat = int(state.current_player[0])
            moves.append({"i": i, "seat": seat, "who": record.seats[seat], "name": ACTION_NAMES[action],
                          "text": describe(action), "top": top[i]})
            replay_step(record, state, i)
        frames.append(table_view(state, None, record.seats))
        check_outcome(record, state)
    except RecordError as exc:
        raise GameError(422, f"the hand does not replay: {exc}") from None
    return {"rules": record.preset, "seats": record.seats, "hand_number": record.hand_number + 1,
            "end": record.end, "went_out": record.went_out, "hand_scores": record.hand_scores,
            "scores_before": record.scores_before, "scores_after": record.scores_after,
            "frames": frames, "moves": moves, "matches": True}


def _top_moves(record: Any) -> list[Any]:
    """The recorded top choices per decision, or ``None`` for each where ``meta.top_moves`` is
    absent or not what the table writes (per decision null or ``[[name, probability or null],
    ...]``): an uploaded file's meta can hold anything, and the page draws these as they come."""
    top = record.meta.get("top_moves")
    if isinstance(top, list) and len(top) == len(record.actions) and all(map(_is_choices, top)):
        return top
    return [None] * len(record.actions)


def _is_choices(entry: Any) -> bool:
    return entry is None or isinstance(entry, list) and all(
        isinstance(c, list) and len(c) == 2 and isinstance(c[0], str)
        and (c[1] is None or isinstance(c[1], (int, float)) and not isinstance(c[1], bool)) for c in entry)


def save_upload(record_dir: Path, body: bytes) -> dict[str, Any]:
    """Keep an uploaded JSON-lines file in the record dir when it reads as hand records; its name
    comes from its content (``upload-<sha256 prefix>.jsonl``), so uploading it twice keeps one copy."""
    from canasta_env.records import RecordError, read_records

    with tempfile.NamedTemporaryFile(suffix=".part", dir=record_dir, delete=False) as tmp:
        tmp.write(body)
    tmp_path = Path(tmp.name)
    try:
        records = read_records(tmp_path)
        if not records:
            raise GameError(422, "the upload holds no hand records")
        name = f"upload-{hashlib.sha256(body).hexdigest()[:16]}.jsonl"
        tmp_path.replace(record_dir / name)
    except RecordError as exc:
        raise GameError(422, f"the upload does not read as hand records: "
                             f"{str(exc).replace(str(tmp_path), 'upload')}") from None
    finally:
        tmp_path.unlink(missing_ok=True)
    return {"file": name, "hands": len(records)}
