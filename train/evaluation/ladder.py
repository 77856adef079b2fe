"""The ladder file of ``canasta tournament --ladder``: OpenSkill ratings carried from one tournament
to the next (each tournament's games counted once), read with every check a file from elsewhere
needs."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

LADDER_FORMAT = "canasta-ladder"


MAX_LADDER_BYTES = 64 << 20


def read_ladder(path: Path) -> dict[str, Any]:
    """A ladder file's content (an empty ladder if the file does not exist yet); a file that is
    not a ladder (not a regular file, too large, not JSON, wrong shape) is a ``ValueError``."""
    if not path.exists():
        if os.path.lexists(path):  # a link to nowhere: writing would replace the link, not its target
            raise ValueError(f"ladder {path}: a broken symbolic link or a symbolic link loop")
        return {"format": LADDER_FORMAT, "model": "PlackettLuce", "ratings": {}, "tournaments": []}
    if not path.is_file():
        raise ValueError(f"ladder {path}: not a regular file")
    with path.open("rb") as f:
        raw = f.read(MAX_LADDER_BYTES + 1)
    if len(raw) > MAX_LADDER_BYTES:
        raise ValueError(f"ladder {path}: larger than {MAX_LADDER_BYTES} bytes; not a ladder file")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, RecursionError, json.JSONDecodeError) as e:
        raise ValueError(f"ladder {path}: not valid JSON ({' '.join(str(e).split())[:120]})") from None
    if not isinstance(data, dict) or data.get("format") != LADDER_FORMAT:
        raise ValueError(f"ladder {path}: not a {LADDER_FORMAT} file")
    ratings, done = data.get("ratings"), data.get("tournaments")
    numeric = ("mu", "sigma", "ordinal", "games")
    if not (isinstance(ratings, dict) and isinstance(done, list) and all(isinstance(t, str) for t in done)
            and all(isinstance(r, dict) and all(isinstance(r.get(k), int | float)
                                                 and not isinstance(r.get(k), bool) for k in numeric)
                    for r in ratings.values())):
        raise ValueError(f"ladder {path}: 'ratings' must map entrants to {', '.join(numeric)} and "
                         "'tournaments' must list ids")
    return data


def update_ladder(path: Path, tournament_id: str, rows: list[dict[str, Any]]) -> None:
    """Store the ratings after a tournament, once per tournament (a resumed or repeated run whose
    games the ladder already holds changes nothing)."""
    data = read_ladder(path)
    if tournament_id in data["tournaments"]:
        return
    for r in rows:
        data["ratings"][r["entrant"]] = {k: r[k] for k in ("mu", "sigma", "ordinal", "games")}
    data["tournaments"].append(tournament_id)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)
