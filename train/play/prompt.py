"""Reading a line typed at the terminal for ``canasta play`` and ``canasta replay``."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.text import Text


def console_input(console: Console, prompt: str) -> str:
    """One line read after ``prompt`` (shown as plain text, never read as markup). ``EOFError`` at
    the end of input, and also when there is no standard input at all (``canasta play <&-``):
    Python's ``input()`` raises ``RuntimeError: lost sys.stdin`` there, and the game would stop
    with a traceback instead of saving the hand in progress."""
    if sys.stdin is None or sys.stdin.closed:
        raise EOFError("no standard input")
    return console.input(Text(prompt))
