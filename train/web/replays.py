"""Record files for the replay page: list them, read one, and replay a hand into omniscient frames.

A record file is any JSON-lines file of ``canasta_env.records`` hand records in the record dir: the
ones the table writes (``<game id>.jsonl``), the ones ``canasta play --record`` or a tournament wrote
and were copied there, and uploads (``upload-<hash>.jsonl``). A hand is replayed through the engine
from its explicit deal, so every frame is what the engine does with the recorded actions.

Every file is untrusted input: read without following links (``train.web.files``), parsed strictly
(``train.web.schema``: UTF-8, no duplicate keys, no ``NaN``, texts that can be sent back), and an
upload is kept only when each of its hands replays to the outcome it records.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path
from typing import Any

from train.common.outputs import write_atomic
from train.web.errors import GameError
from train.web.files import read_regular, regular_files
from train.web.quota import DiskQuota
from train.web.schema import MAX_NAME, check_text, is_choices, loads

RECORD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,120}\.jsonl")
MAX_RECORD_BYTES = 64 << 20  # a record file the server reads (a table game of 100 hands is ~3 MiB)
MAX_HANDS = 5_000  # hands of one file
# RecordError is a ValueError; the others, should the record checks miss a shape, refuse it too
PARSE_ERRORS = (ValueError, TypeError, KeyError, IndexError, OverflowError, RecursionError)


def list_records(record_dir: Path) -> list[dict[str, Any]]:
    """Record files in the record dir, newest first: name, size in bytes, hands (non-blank lines).
    Links, folders and files the server would not read are left out."""
    out = []
    for path, st in regular_files(record_dir, ".jsonl"):
        if not RECORD_NAME.fullmatch(path.name) or st.st_size > MAX_RECORD_BYTES:
            continue
        try:
            hands = sum(1 for line in read_regular(path, MAX_RECORD_BYTES, path.name).splitlines()
                        if line.strip())
        except GameError:
            continue  # replaced or removed since it was listed
        out.append({"file": path.name, "size": st.st_size, "hands": hands, "modified": st.st_mtime})
    return sorted(out, key=lambda r: (-r["modified"], r["file"]))


def read_file(record_dir: Path, name: str) -> list[Any]:
    """The hand records of a file; ``GameError`` 404 for another name than a record file's (a
    path, ``..``) or no such file, 403 for a link, 422 when it does not read as records."""
    if not RECORD_NAME.fullmatch(name):
        raise GameError(404, "no such record file: names are letters, digits, '.', '_', '-' ending .jsonl")
    try:
        raw = read_regular(record_dir / name, MAX_RECORD_BYTES, name)
    except GameError as exc:
        if exc.status == 404:
            raise GameError(404, f"no record file {name} in the record dir") from None
        raise
    return parse_records(raw, name)


def parse_records(raw: bytes, name: str) -> list[Any]:
    """The hand records of JSON-lines bytes, each checked (``HandRecord.from_json`` and the
    texts the page shows); ``GameError`` 422 naming the first bad line."""
    from canasta_env.records import MAX_LINE_BYTES, HandRecord

    records = []
    for lineno, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            if len(line) > MAX_LINE_BYTES:
                raise ValueError(f"a line longer than {MAX_LINE_BYTES} bytes")
            record = HandRecord.from_json(loads(line, "the line"))
            check_text(record.preset, "the rules' name", MAX_NAME)
            for seat, label in enumerate(record.seats):
                check_text(label, f"seat {seat}'s label", MAX_NAME)
        except PARSE_ERRORS as exc:
            raise GameError(422, f"{name} does not read as hand records: line {lineno}: {exc}") from None
        records.append(record)
        if len(records) > MAX_HANDS:
            raise GameError(422, f"{name} holds more than {MAX_HANDS} hands")
    return records


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
    absent or not what the table writes (per decision null or ``[[action name, probability in
    [0, 1] or null], ...]``): an uploaded file's meta can hold anything, and the page draws these."""
    top = record.meta.get("top_moves")
    if isinstance(top, list) and len(top) == len(record.actions) and all(map(is_choices, top)):
        return top
    return [None] * len(record.actions)


def save_upload(record_dir: Path, body: bytes, quota: DiskQuota) -> dict[str, Any]:
    """Keep an uploaded JSON-lines file in the record dir when it reads as hand records and every
    hand replays to the outcome it records (``GameError`` 422 otherwise: nothing is written), within
    the disk cap. Its name comes from its content (``upload-<sha256 prefix>.jsonl``), so uploading
    it twice keeps one copy."""
    from canasta_env.records import RecordError, replay

    records = parse_records(body, "the upload")
    if not records:
        raise GameError(422, "the upload holds no hand records")
    for k, record in enumerate(records):
        try:
            replay(record)
        except RecordError as exc:
            raise GameError(422, f"hand {k + 1} of the upload does not replay: {exc}") from None
    name = f"upload-{hashlib.sha256(body).hexdigest()[:16]}.jsonl"
    path = record_dir / name
    try:
        kept = stat.S_ISREG(os.lstat(path).st_mode)  # the same bytes, uploaded before
    except FileNotFoundError:
        kept = False
    if not kept:
        quota.room(len(body))
        write_atomic(path, body)
    return {"file": name, "hands": len(records)}
