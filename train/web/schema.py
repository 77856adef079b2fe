"""Checks of untrusted JSON before the server uses it: saved games, record files and uploads.

Whatever reaches the page or the engine from a file passes here first: JSON read strictly (UTF-8,
no duplicate keys, bounded nesting, no ``NaN``), integers in the range their use can hold (a random
generator's 128-bit state, an int32 score), strings of bounded length that can be written back
as UTF-8 (a lone surrogate such as ``"\\ud800"`` parses but cannot be sent), and the agents' top
choices in the one shape the table writes. Each check raises ``ValueError`` naming the value.
"""

from __future__ import annotations

import json
import math
from typing import Any

from train.web.errors import is_int, shown

MAX_DEPTH = 64  # a saved game or a record nests 5 deep
# a seat label: an agent name as the server was started with it, a checkpoint path or a rule-space
# exploiter's every field (docs/training.md shows one of 367 characters); ``GameStore`` refuses longer
MAX_NAME = 1024
MAX_TEXT = MAX_NAME + 500  # a move's text is under 100 characters; a hand's end names the seat gone out
MAX_CHOICES = 10  # the table records 3 top choices


def loads(data: bytes | str, what: str) -> Any:
    """JSON ``data`` read strictly; ``ValueError`` for bytes that are not UTF-8, text that is not
    JSON, a duplicate key, ``NaN`` or ``Infinity``, an integer too long to read or deep nesting."""
    from canasta_env.records import unique_keys

    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        value = json.loads(text, object_pairs_hook=unique_keys, parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise ValueError(f"{what} is not UTF-8 text") from None
    except RecursionError:
        raise ValueError(f"{what} is JSON nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") \
            from None
    except ValueError as exc:  # a duplicate key, NaN, an integer over Python's 4300-digit limit
        why = "has an integer too long to read" if "digits" in str(exc) else f"is refused: {exc}"
        raise ValueError(f"{what} {why}") from None
    check_tree(value, what)
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def check_tree(value: Any, what: str, depth: int = 0) -> None:
    """Every string of a JSON value writable as UTF-8, every float finite, nesting bounded."""
    if depth > MAX_DEPTH:
        raise ValueError(f"{what} is JSON nested deeper than {MAX_DEPTH}")
    if isinstance(value, str):
        _utf8(value, what)
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{what} holds the number {value}, which JSON has not")
    elif isinstance(value, list):
        for item in value:
            check_tree(item, what, depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            _utf8(key, what)
            check_tree(item, what, depth + 1)


def _utf8(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{what} holds text that is not valid Unicode (a lone surrogate)") from None


def check_text(value: Any, what: str, limit: int = MAX_NAME) -> str:
    """``value`` is a string of at most ``limit`` characters, writable as UTF-8."""
    if not isinstance(value, str) or len(value) > limit:
        raise ValueError(f"{what} {shown(value)} is not a text of at most {limit} characters")
    _utf8(value, what)
    return value


def check_int(value: Any, what: str, lo: int, hi: int) -> int:
    """``value`` is an integer (not a bool) in ``[lo, hi]``."""
    if not is_int(value) or not lo <= value <= hi:
        raise ValueError(f"{what} {shown(value)} is not an integer in [{lo}, {hi}]")
    return int(value)


def check_list(value: Any, what: str, limit: int) -> list[Any]:
    """``value`` is a list of at most ``limit`` items."""
    if not isinstance(value, list) or len(value) > limit:
        raise ValueError(f"{what} {shown(value)} is not a list of at most {limit} items")
    return value


def is_choices(entry: Any) -> bool:
    """Whether ``entry`` is one decision's top choices as the table writes them: null, or
    ``[[action name, probability in [0, 1] or null], ...]`` (at most ``MAX_CHOICES``)."""
    from canasta_env.engine.actions import ACTION_BY_NAME

    if entry is None:
        return True
    if not isinstance(entry, list) or len(entry) > MAX_CHOICES:
        return False
    for choice in entry:
        if not isinstance(choice, list) or len(choice) != 2:
            return False
        name, p = choice
        if not isinstance(name, str) or name not in ACTION_BY_NAME:
            return False
        if p is not None and not (isinstance(p, (int, float)) and not isinstance(p, bool)
                                  and math.isfinite(p) and 0 <= p <= 1):
            return False
    return True


def check_choices(value: Any, what: str) -> Any:
    """``value`` is one decision's top choices (``is_choices``); ``ValueError`` otherwise."""
    if not is_choices(value):
        raise ValueError(f"{what} {shown(value)} is not top choices [[action name, probability], ...]")
    return value


PCG64_MAX = 2**128 - 1


def check_rng(value: Any) -> dict[str, Any]:
    """``value`` is the state of numpy's default generator (PCG64) as ``bit_generator.state``
    gives it, every integer within its bit width: numpy raises ``OverflowError`` on a state of
    ``-1`` or ``10**60``, which must be refused here, not met while restoring."""
    if not isinstance(value, dict) or set(value) != {"bit_generator", "state", "has_uint32", "uinteger"}:
        raise ValueError(f"'rng' {shown(value)} is not a random generator's state")
    if value["bit_generator"] != "PCG64":
        raise ValueError(f"'rng' is a {shown(value['bit_generator'])} generator's state, not PCG64's")
    inner = value["state"]
    if not isinstance(inner, dict) or set(inner) != {"state", "inc"}:
        raise ValueError(f"'rng' state {shown(inner)} is not {{'state', 'inc'}}")
    check_int(inner["state"], "'rng' state", 0, PCG64_MAX)
    check_int(inner["inc"], "'rng' increment", 0, PCG64_MAX)
    check_int(value["has_uint32"], "'rng' has_uint32", 0, 1)
    check_int(value["uinteger"], "'rng' uinteger", 0, 2**32 - 1)
    return value
