"""The saved web game's file format and its check before a game is replayed from it.

The files under ``<record dir>/games`` are writable by anyone with the record dir, so a file is
read as untrusted input: ``checked_save`` refuses one whose fields are not of the types
``Game.to_json`` writes, whose rules are not the server's, or whose seats name agents the server
was not started with (a name could import a module or unpickle a checkpoint).
"""

from __future__ import annotations

import json
from typing import Any

from canasta_env.rules import RuleSet
from train.web.errors import is_int, shown

GAME_FORMAT = "canasta-web-game"
GAME_VERSION = 1


def checked_save(data: Any, rules: RuleSet, game_id: str, agents: set[str]) -> dict[str, Any]:
    """A saved game's fields, each of the type ``Game.to_json`` writes; ``ValueError`` names the
    first that is not (values the engine checks itself, such as the actions, are left to it)."""
    if not isinstance(data, dict) or data.get("format") != GAME_FORMAT or data.get("version") != GAME_VERSION:
        raise ValueError("not a saved web game")
    if data.get("id") != game_id:
        raise ValueError(f"the file holds game {shown(data.get('id'))}")
    if data.get("rules") != json.loads(json.dumps(rules.to_dict())):  # compared, never loaded
        raise ValueError(f"the game was played under other rules than this server's {rules.name}")
    _check_seats(data, rules.num_players, agents)
    types: dict[str, Any] = {"seed": int, "hands": (int, type(None)), "show_policy": bool,
                             "actions": list, "hints": list, "log": list, "hands_recorded": int}
    for key, kind in types.items():
        if not isinstance(data.get(key), kind) or (kind is int and isinstance(data[key], bool)):
            raise ValueError(f"{key!r} is {shown(data.get(key))}, not what a saved game holds")
    if data["hands"] is not None and data["hands"] < 1 or data["hands_recorded"] < 0:
        raise ValueError("'hands' and 'hands_recorded' must be positive")
    if not all(is_int(a) for a in data["actions"]) or not all(isinstance(e, dict) for e in data["log"]):
        raise ValueError("'actions' must be action ids and 'log' move entries")
    if "rng" in data and not isinstance(data["rng"], dict):
        raise ValueError(f"'rng' is {shown(data['rng'])}, not a random generator's state")
    return data


def _check_seats(data: Any, n: int, agents: set[str]) -> None:
    human, seats = data.get("human"), data.get("seats")
    if not is_int(human) or not 0 <= human < n:
        raise ValueError(f"'human' {shown(human)} is not a seat 0-{n - 1}")
    if not isinstance(seats, list) or len(seats) != n \
            or any((s is None) != (p == human) for p, s in enumerate(seats)):
        raise ValueError(f"'seats' {shown(seats)} is not {n} agent names with null at the human's seat")
    strangers = [s for s in seats if s is not None and s not in agents]
    if strangers:
        raise ValueError(f"agent {shown(strangers[0])} is not one this server plays "
                         f"({', '.join(sorted(agents))})")
