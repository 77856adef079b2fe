"""The ladder file of ``canasta tournament --ladder``: OpenSkill ratings carried from one tournament
to the next (each tournament's games counted once), read with every check a file from elsewhere
needs, and updated under a lock (``.NAME.lock`` beside it) so that tournaments ending at once on one
ladder each count."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from canasta_env.messages import short_repr
from canasta_env.records import unique_keys
from train.common.folder_lock import waiting_lock
from train.common.outputs import write_atomic

LADDER_FORMAT = "canasta-ladder"


MAX_LADDER_BYTES = 64 << 20
MODEL = "PlackettLuce"  # train.evaluation.tournament_report.openskill_view rates with it
# Bounds of a stored rating: far beyond what OpenSkill reaches from its defaults (mu 25, sigma 25/3;
# sigma only shrinks), and inside what its exp(mu / c) survives (|mu| / c < 709, c >= 5.89); sigma
# must be above 0.
BOUNDS: dict[str, tuple[float, float]] = {"mu": (-1000.0, 1000.0), "sigma": (0.0, 1000.0),
                                          "ordinal": (-4000.0, 1000.0), "games": (0, 10**12)}


def read_ladder(path: Path) -> dict[str, Any]:
    """A ladder file's content (an empty ladder if the file does not exist yet); a file that is
    not a ladder (not a regular file, too large, not JSON, wrong shape) is a ``ValueError``."""
    if not path.exists():
        if os.path.lexists(path):  # a link to nowhere: writing would replace the link, not its target
            raise ValueError(f"ladder {path}: a broken symbolic link or a symbolic link loop")
        return {"format": LADDER_FORMAT, "model": MODEL, "ratings": {}, "tournaments": []}
    if not path.is_file():
        raise ValueError(f"ladder {path}: not a regular file")
    with path.open("rb") as f:
        raw = f.read(MAX_LADDER_BYTES + 1)
    if len(raw) > MAX_LADDER_BYTES:
        raise ValueError(f"ladder {path}: larger than {MAX_LADDER_BYTES} bytes; not a ladder file")
    try:
        data = json.loads(raw.decode("utf-8"), object_pairs_hook=unique_keys)  # a key given twice: refused
    except (ValueError, RecursionError) as e:  # bad UTF-8 or JSON, an integer of over 4300 digits
        raise ValueError(f"ladder {path}: not valid JSON ({' '.join(str(e).split())[:120]})") from None
    if not isinstance(data, dict) or data.get("format") != LADDER_FORMAT:
        raise ValueError(f"ladder {path}: not a {LADDER_FORMAT} file")
    if data.get("model") != MODEL:
        raise ValueError(f"ladder {path}: 'model' is {short_repr(data.get('model'))}; the ratings are "
                         f"{MODEL!r} (the model of the OpenSkill view)")
    ratings, done = data.get("ratings"), data.get("tournaments")
    if not (isinstance(ratings, dict) and all(isinstance(r, dict) for r in ratings.values())
            and isinstance(done, list) and all(isinstance(t, str) for t in done)):
        raise ValueError(f"ladder {path}: 'ratings' must map entrants to {', '.join(BOUNDS)} and "
                         "'tournaments' must list ids")
    for name, rating in ratings.items():
        for key in BOUNDS:
            _check_rating(path, name, key, rating.get(key))
    return data


def _check_rating(path: Path, name: str, key: str, value: Any, rated: bool = False) -> None:
    """A ``ValueError`` naming the file, entrant and key unless ``value`` is within ``BOUNDS``
    (``rated``: a value the tournament computed, not one the file holds)."""
    low, high = BOUNDS[key]
    whole = key == "games"
    kind = (int,) if whole else (int, float)
    if not isinstance(value, kind) or isinstance(value, bool) or not low <= value <= high \
            or (key == "sigma" and value <= 0):  # NaN fails every comparison
        want = (f"a whole number in [{low}, {high}]" if whole else
                f"a finite number in {'(' if key == 'sigma' else '['}{low:g}, {high:g}]")
        where = f"ratings[{short_repr(name)}][{key!r}] = {short_repr(value)}"
        if rated:
            raise ValueError(f"ladder {path}: this tournament rates {where}, outside the ladder's bounds "
                             f"({want}); not stored, the file is left as it was")
        raise ValueError(f"ladder {path}: {where}: want {want}")


def lock_path(path: Path) -> Path:
    """The file whose lock every update of the ladder at ``path`` holds: beside it, in its folder as
    resolved (two tournaments that reach one folder through a link lock one file; the ladder itself
    may be a link)."""
    return path.parent.resolve() / f".{path.name}.lock"


def check_lock(path: Path) -> None:
    """Refuse, before any game, a ladder whose lock file is there but is no regular file (a folder,
    pipe or link): the update after the games could not take it."""
    lock = lock_path(path)
    if os.path.lexists(lock) and (lock.is_symlink() or not lock.is_file()):
        raise ValueError(f"ladder {path}: its lock file {lock} is not a regular file (a folder, pipe or "
                         "link); remove it")


def counted_ratings(path: Path, data: dict[str, Any], tournament_id: str,
                    names: list[str]) -> list[dict[str, Any]] | None:
    """The ladder's ratings of ``names`` if it counts this tournament already (a repeated or resumed
    run), else None; a ladder that counts it but lacks an entrant's rating is a ``ValueError``."""
    if tournament_id not in data["tournaments"]:
        return None
    missing = [name for name in names if name not in data["ratings"]]
    if missing:
        raise ValueError(f"ladder {path}: counts this tournament ({tournament_id}) but holds no rating for "
                         f"{', '.join(map(repr, missing))}; restore the file, or use another --ladder")
    keys = ("mu", "sigma", "ordinal", "games")
    return [{"entrant": name, **{key: data["ratings"][name][key] for key in keys}} for name in names]


def rate_on_ladder(path: Path, tournament_id: str, names: list[str],
                   rate: Callable[[dict[str, dict[str, Any]]], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The ratings of ``names`` after the tournament ``tournament_id``: those the ladder holds if it
    counts the tournament already, else ``rate(the ladder's ratings)``, stored back. Reading, rating
    and writing hold the ladder's lock: two tournaments ending at once each read the ladder before
    the other wrote it, and one's update was lost (or rated from ratings older than the file's)."""
    with waiting_lock(lock_path(path), f"ladder {path}"):
        data = read_ladder(path)
        skill = counted_ratings(path, data, tournament_id, names)
        if skill is None:
            skill = rate(data["ratings"])
            _store(path, data, tournament_id, skill)
    return skill


def update_ladder(path: Path, tournament_id: str, rows: list[dict[str, Any]]) -> None:
    """Store the ratings after a tournament, once per tournament (a resumed or repeated run whose
    games the ladder already holds changes nothing), under the ladder's lock."""
    with waiting_lock(lock_path(path), f"ladder {path}"):
        _store(path, read_ladder(path), tournament_id, rows)


def _store(path: Path, data: dict[str, Any], tournament_id: str, rows: list[dict[str, Any]]) -> None:
    """Write ``data`` with ``rows``' ratings and ``tournament_id`` counted, unless it counts it. A
    rating past ``BOUNDS`` (rated from one at their edge, set by hand) is refused, not written: the
    next tournament would refuse the whole file."""
    if tournament_id in data["tournaments"]:
        return
    for r in rows:
        for key in BOUNDS:
            _check_rating(path, r["entrant"], key, r[key], rated=True)
    for r in rows:
        data["ratings"][r["entrant"]] = {k: r[k] for k in ("mu", "sigma", "ordinal", "games")}
    data["tournaments"].append(tournament_id)
    write_atomic(path, json.dumps(data, indent=1).encode("utf-8"))
