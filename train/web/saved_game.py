"""The saved web game's file format and its check before a game is replayed from it.

The files under ``<record dir>/games`` are writable by anyone with the record dir, so a file is
read as untrusted input: ``checked_save`` refuses one whose fields are not of the types and ranges
``Game.to_json`` writes (integers the engine and numpy's generator can hold, bounded lists and
texts, log entries and top choices in the shape the page draws), whose rules are not the server's,
or whose seats name agents the server was not started with (a name could import a module or
unpickle a checkpoint). Every refusal is a ``ValueError`` naming the first bad field.
"""

from __future__ import annotations

import json
from typing import Any

from canasta_env.rules import RuleSet, with_later_options
from train.web.errors import shown
from train.web.schema import (
    MAX_NAME,
    MAX_TEXT,
    check_choices,
    check_int,
    check_list,
    check_rng,
    check_text,
)

GAME_FORMAT = "canasta-web-game"
GAME_VERSION = 1
MAX_SAVED_BYTES = 32 << 20  # a whole 100-hand game saves in a few MiB
MAX_ACTIONS = 200_000
MAX_HANDS = 10_000  # the most max_hands a rule set may have
KEYS = frozenset({"format", "version", "id", "rules", "seats", "human", "seed", "hands", "show_policy",
                  "actions", "hints", "log", "hands_recorded", "rng", "over", "agent_error"})
REQUIRED = KEYS - {"rng", "over", "agent_error"}  # those three: a file of an older server may lack them
LOG_KEYS = frozenset({"i", "hand", "seat", "who", "name", "text", "drew", "top"})


def checked_save(data: Any, rules: RuleSet, game_id: str, agents: set[str]) -> dict[str, Any]:
    """A saved game's fields, each of the type and range ``Game.to_json`` writes; ``ValueError``
    names the first that is not (whether the actions are legal is left to the engine's replay)."""
    if not isinstance(data, dict) or data.get("format") != GAME_FORMAT or data.get("version") != GAME_VERSION:
        raise ValueError("not a saved web game")
    unknown = sorted(set(data) - KEYS)
    if unknown:
        raise ValueError(f"unknown key(s) {shown(unknown)}")
    missing = sorted(REQUIRED - set(data))
    if missing:  # read by name when the game is rebuilt: a KeyError said only 'hands'
        raise ValueError(f"missing key(s) {', '.join(missing)}")
    if data.get("id") != game_id:
        raise ValueError(f"the file holds game {shown(data.get('id'))}")
    current = json.loads(json.dumps(rules.to_dict()))
    if with_later_options(data.get("rules"), current) != current:  # compared, never loaded
        raise ValueError(f"the game was played under other rules than this server's {rules.name}")
    _check_seats(data, rules.num_players, agents)
    _check_fields(data)
    _check_log(data["log"], rules.num_players, len(data["actions"]))
    if "rng" in data:
        check_rng(data["rng"])
    return data


def _check_fields(data: dict[str, Any]) -> None:
    from canasta_env.engine import NUM_ACTIONS

    check_int(data.get("seed"), "'seed'", 0, 2**63 - 1)
    if data.get("hands") is not None:
        check_int(data["hands"], "'hands'", 1, MAX_HANDS)
    for key in ("show_policy", "over"):
        if key in data and not isinstance(data[key], bool):
            raise ValueError(f"{key!r} is {shown(data[key])}, not true or false")
    actions = check_list(data.get("actions"), "'actions'", MAX_ACTIONS)
    for i, action in enumerate(actions):
        check_int(action, f"action #{i}", 0, NUM_ACTIONS - 1)
    hints = check_list(data.get("hints"), "'hints'", MAX_ACTIONS)
    if len(hints) != len(actions):
        raise ValueError(f"{len(hints)} hints for {len(actions)} actions")
    for i, hint in enumerate(hints):
        check_choices(hint, f"hint #{i}")
    check_int(data.get("hands_recorded"), "'hands_recorded'", 0, MAX_HANDS)
    if "agent_error" in data:  # why an agent stopped the game (``Game.failure``, one line)
        failure = check_text(data["agent_error"], "'agent_error'", MAX_TEXT)
        if not failure or " ".join(failure.split()) != failure:  # the 502's error would not be one line
            raise ValueError(f"'agent_error' {shown(failure)} is not one line of text")


def _check_log(log: Any, n: int, actions: int) -> None:
    """The move log as the page draws it: entries of the table's keys, types and ranges."""
    from canasta_env.engine import ACTION_NAMES
    from canasta_env.engine.cards import KIND_NAMES

    check_list(log, "'log'", 2 * actions + 1)
    for k, entry in enumerate(log):
        where = f"log entry #{k}"
        if not isinstance(entry, dict) or not {"i", "hand", "seat", "who", "name", "text"} <= set(entry) \
                or set(entry) - LOG_KEYS:
            raise ValueError(f"{where} {shown(entry)} is not a move of the log")
        check_int(entry["i"], f"{where} 'i'", -1, actions)
        check_int(entry["hand"], f"{where} 'hand'", 1, 2**31 - 1)
        check_int(entry["seat"], f"{where} 'seat'", -1, n - 1)
        check_text(entry["who"], f"{where} 'who'", MAX_NAME)
        check_text(entry["text"], f"{where} 'text'", MAX_TEXT)
        if entry["name"] != "HAND_OVER" and entry["name"] not in ACTION_NAMES:
            raise ValueError(f"{where} 'name' {shown(entry['name'])} is not an action")
        drew = check_list(entry.get("drew", []), f"{where} 'drew'", 20)
        if not all(isinstance(c, str) and c in KIND_NAMES for c in drew):
            raise ValueError(f"{where} 'drew' {shown(entry['drew'])} is not card names")
        if "top" in entry:
            check_choices(entry["top"], f"{where} 'top'")


def _check_seats(data: Any, n: int, agents: set[str]) -> None:
    human, seats = data.get("human"), data.get("seats")
    check_int(human, "'human'", 0, n - 1)
    if not isinstance(seats, list) or len(seats) != n \
            or any((s is None) != (p == human) for p, s in enumerate(seats)):
        raise ValueError(f"'seats' {shown(seats)} is not {n} agent names with null at the human's seat")
    strangers = [s for s in seats if s is not None and (not isinstance(s, str) or s not in agents)]
    if strangers:
        raise ValueError(f"agent {shown(strangers[0])} is not one this server plays "
                         f"({', '.join(sorted(agents))})")
