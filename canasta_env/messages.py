"""Quoting users' values and exceptions in one-line error messages, safely.

Values in bad input may be huge (an integer of a million digits, a 100,000-deep list) or hostile (a
``__repr__`` that raises); a message quotes them at most ``QUOTE_LIMIT`` characters long and never
fails while doing so. Text read from files (seat labels of game records) may hold terminal escape
codes; ``printable`` writes them as visible escapes before they reach a terminal.
"""

from __future__ import annotations

import reprlib
from typing import Any

QUOTE_LIMIT = 80


class _Repr(reprlib.Repr):
    """``reprlib`` that also survives huge integers (``repr`` of one over 4300 digits raises)."""

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 200:
            return f"<integer of about {int(x.bit_length() * 0.30103)} digits>"
        return repr(x)


_REPR = _Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 3, 60, 60
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 6


def short_repr(value: Any, limit: int = QUOTE_LIMIT) -> str:
    """``repr(value)`` for an error message: one line, at most ``limit`` characters, never raising
    (huge integers, deep or self-referencing containers, a ``__repr__`` that fails)."""
    try:
        text = _REPR.repr(value)
    except Exception:  # a user object's __repr__ may raise anything
        text = f"<{type(value).__name__} object>"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_choice(value: Any, name: str, choices: tuple[str, ...], where: str = "") -> str:
    """``value`` if it is one of the strings ``choices``, else a one-line ``ValueError`` naming
    ``name`` (after ``where: `` when given). ``isinstance`` comes first: ``value in choices`` on a
    numpy array raises numpy's "truth value of an array is ambiguous", which names no option."""
    if isinstance(value, str) and value in choices:
        return value
    allowed = (" or ".join(map(repr, choices)) if len(choices) == 2
               else f"one of {', '.join(map(repr, choices))}")
    prefix = f"{where}: " if where else ""
    raise ValueError(f"{prefix}{name} must be {allowed}, got {short_repr(value)}")


def one_line(exc: BaseException, limit: int = 800) -> str:
    """An exception's message on one line, at most ``limit`` characters."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def printable(text: str, limit: int = QUOTE_LIMIT) -> str:
    """``text`` safe to print on a terminal: every character that is not printable (ESC, BEL, CR,
    newlines, bidi overrides) written as its escape (``\\x1b``), at most ``limit`` characters; a
    label from a file can then neither drive the terminal nor hide what it says."""
    text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in str(text))
    return text if len(text) <= limit else text[: limit - 3] + "..."


# Top-level module -> the extra of pyproject.toml that installs it.
EXTRA_OF: dict[str, str] = {
    **dict.fromkeys(("torch", "stable_baselines3", "sb3_contrib", "tensorboard", "safetensors"), "train"),
    **dict.fromkeys(("openskill", "matplotlib", "tqdm", "pandas", "cma"), "eval"),
    **dict.fromkeys(("onnx", "onnxruntime"), "onnx"),
    "ray": "ray",
    **dict.fromkeys(("starlette", "uvicorn", "h11"), "web"),
}


def missing_extra(exc: BaseException, extra: str | None = None) -> str | None:
    """For an import of a module an extra installs (``extra``, or the one ``EXTRA_OF`` names), the
    one-line advice to install that extra; ``None`` for any other error."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    extra = extra or EXTRA_OF.get(exc.name.partition(".")[0])
    if extra is None:
        return None
    return (f"this needs the {extra!r} extra (module {exc.name!r} is not installed): "
            f'pip install "canasta-rl[{extra}]"')
