"""``canasta replay FILE``: step through recorded hands (``canasta play --record``, tournaments).

Each hand is re-played through the engine from its explicit deal (``canasta_env.records``), so
what is shown is what the engine does with the recorded actions, and the hand's recorded outcome
is checked at the end. Every step shows the table (``canasta_env.engine.render``) from one seat's
view (``--view P``: the other hands hidden) or omniscient (the default), then the move played.
Seat labels and the rules name come from the file, so control characters in them are shown as
escapes, never sent to the terminal, and brackets are printed, never read as rich markup.
Enter advances, ``q`` quits; ``--all`` prints every step without waiting.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from train.play.prompt import console_input


class Replayer:
    """Shows one record step by step on a console."""

    def __init__(self, console: Console, view: int | None, wait: bool) -> None:
        self.console, self.view, self.wait = console, view, wait

    def _pause(self) -> bool:
        """Wait for Enter; False when the user quits (``q`` or end of input)."""
        if not self.wait:
            return True
        try:
            answer = console_input(self.console, "[Enter] next step, q quit: ")
        except EOFError:
            return False
        return answer.strip().lower() not in ("q", "quit")

    def show(self, record: Any, number: int, total: int | None) -> bool:
        """Replay ``record``, hand ``number`` of ``total`` in its file (None: not counted, when one
        hand is shown without reading the rest); returns False when the user quit. Raises
        ``RecordError`` when the record does not replay."""
        from canasta_env.engine import ACTION_NAMES
        from canasta_env.engine.render import render
        from canasta_env.messages import printable
        from canasta_env.records import check_outcome, replay_step, start_state
        from train.play.table_view import describe

        state = start_state(record)
        if self.view is not None and not 0 <= self.view < state.num_players:
            raise ValueError(f"--view {self.view}: {record.preset} has seats 0-{state.num_players - 1}")
        # Text, not a str: rich would read brackets in the record's rules name as markup
        of = "" if total is None else f" of {total}"
        self.console.rule(Text(f"Hand {number}{of} in the file: {record.describe()}"))
        seats = ", ".join(f"P{p} {printable(label)}" for p, label in enumerate(record.seats))
        self.console.print(Text(f"Seats: {seats}; game scores before the hand: {record.scores_before}; "
                                f"{len(record.actions)} decisions"))
        n = len(record.actions)
        for i, action in enumerate(record.actions):
            mover = int(state.current_player[0])
            self.console.print(Panel(Text(render(state, 0, self.view)), title=f"step {i + 1} of {n}",
                                     title_align="left"))
            label = printable(record.seats[mover])
            self.console.print(Text(f"P{mover} ({label}) plays {ACTION_NAMES[action]}: "
                                    f"{describe(action)}", style="bold"))
            replay_step(record, state, i)
            if not self._pause():
                return False
        self.console.print(Panel(Text(render(state, 0, self.view)), title="end of the record",
                                 title_align="left"))
        check_outcome(record, state)
        self.console.print(Text(_outcome(record), style="bold"))
        return True


def _outcome(record: Any) -> str:
    if record.end == "unfinished":
        return f"The record stops mid-hand (unfinished); game scores {record.scores_after}."
    who = f" (P{record.went_out}{', concealed' if record.concealed else ''})" if record.went_out >= 0 else ""
    return (f"Hand over: {record.end}{who}; hand scores {record.hand_scores}, game scores "
            f"{record.scores_after}. Replay matches the record.")
