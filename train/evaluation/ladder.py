"""The ladder file of ``canasta tournament --ladder``: OpenSkill ratings carried from one tournament
to the next (each tournament's games counted once), read with every check a file from elsewhere
needs."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from canasta_env.messages import short_repr
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
        data = json.loads(raw.decode("utf-8"))
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


def _check_rating(path: Path, name: str, key: str, value: Any) -> None:
    """A ``ValueError`` naming the file, entrant and key unless ``value`` is within ``BOUNDS``."""
    low, high = BOUNDS[key]
    whole = key == "games"
    kind = (int,) if whole else (int, float)
    if not isinstance(value, kind) or isinstance(value, bool) or not low <= value <= high \
            or (key == "sigma" and value <= 0):  # NaN fails every comparison
        want = (f"a whole number in [{low}, {high}]" if whole else
                f"a finite number in {'(' if key == 'sigma' else '['}{low:g}, {high:g}]")
        raise ValueError(f"ladder {path}: ratings[{short_repr(name)}][{key!r}] = {short_repr(value)}: "
                         f"want {want}")


def update_ladder(path: Path, tournament_id: str, rows: list[dict[str, Any]]) -> None:
    """Store the ratings after a tournament, once per tournament (a resumed or repeated run whose
    games the ladder already holds changes nothing)."""
    data = read_ladder(path)
    if tournament_id in data["tournaments"]:
        return
    for r in rows:
        data["ratings"][r["entrant"]] = {k: r[k] for k in ("mu", "sigma", "ordinal", "games")}
    data["tournaments"].append(tournament_id)
    write_atomic(path, json.dumps(data, indent=1).encode("utf-8"))
