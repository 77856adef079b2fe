"""What one seat sees of a game, drawn with ``rich``: the terminal table of ``canasta play``.

Everything here comes from what the seat may know (docs/observation.md): its
own hand, every meld, the pile (top, size, freeze state, contents), hand sizes and cards known from
pile takes, red threes, scores and each side's initial-meld minimum. Never the stock order or the
unknown part of another hand; ``tests/train/test_play.py`` checks that redealing all hidden cards
(``canasta_env.testing.resample_hidden``) leaves the drawn text unchanged.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from canasta_env.engine import ACTION_NAMES, State
from canasta_env.engine.actions import decode
from canasta_env.engine.cards import BLACK_THREE, KIND_NAMES, NUM_RANK_SLOTS, SLOT_NAMES
from canasta_env.engine.layout import PHASE_NAMES

_TAKE_TEXT = {
    "TAKE_PILE_PAIR": "take the pile: its top card with a natural pair from your hand",
    "TAKE_PILE_NAT_JOKER": "take the pile: its top card with a natural and a joker",
    "TAKE_PILE_NAT_TWO": "take the pile: its top card with a natural and a two",
    "TAKE_PILE_LAYOFF": "take the pile: its top card onto your meld of that rank",
}
_FIXED_TEXT = {
    "DRAW_STOCK": "draw from the stock",
    "END_HAND": "end the hand (stock empty, or nothing more can be played)",
    "ASK_PARTNER": "ask your partner: may I go out?",
    "ANSWER_YES": "answer yes: your partner must go out",
    "ANSWER_NO": "answer no: your partner may not go out",
    **_TAKE_TEXT,
}


def describe(action: int) -> str:
    """A short English description of an action, e.g. ``meld K K JK`` for ``MELD_NNJ_K``."""
    kind, arg = decode(action)
    if kind in _FIXED_TEXT:
        return _FIXED_TEXT[kind]
    if kind == "DISCARD":
        return f"discard {KIND_NAMES[arg]}"
    if kind == "MELD_WILD":
        return f"meld {arg} joker(s) and {3 - arg} two(s)"
    r = SLOT_NAMES[arg]
    meld = "wild meld" if r == "W" else f"{r} meld"
    return {
        "MELD_NNN": f"meld {r} {r} {r}" + (" (going out)" if r == "B3" else ""),
        "MELD_NNJ": f"meld {r} {r} JK",
        "MELD_NN2": f"meld {r} {r} 2",
        "ADD_NATURAL": f"add a {r} to the {meld}",
        "ADD_JOKER": f"add a joker to the {meld}",
        "ADD_TWO": f"add a two to the {meld}",
    }[kind]


def side_seats(state: State, side: int) -> list[int]:
    """Seats of a side (partners sit opposite: seat modulo the number of sides)."""
    return [p for p in range(state.num_players) if p % state.num_sides == side]


def seat_name(seat: int, labels: Sequence[str], viewer: int | None) -> str:
    """``P1 heuristic`` or ``P0 you``."""
    return f"P{seat} " + ("you" if seat == viewer else labels[seat])


def cards_by_rank(counts: np.ndarray) -> str:
    """A hand grouped by rank, wilds first: ``JK | 2 2 | 4 4 | 7 7 7 | K``."""
    groups = [" ".join([KIND_NAMES[k]] * int(c)) for k, c in enumerate(counts) if c > 0]
    return " | ".join(groups) if groups else "-"


def _meld_text(state: State, owner: int) -> Text:
    b = 0
    nat, jok, two = (state.meld_naturals[b, owner], state.meld_jokers[b, owner],
                     state.meld_twos[b, owner])
    out = Text()
    for s, name in enumerate(SLOT_NAMES):
        size = int(nat[s] + jok[s] + two[s])
        if size == 0:
            continue
        natural = name if name != "W" else ""
        cards = [natural] * int(nat[s]) + ["JK"] * int(jok[s]) + ["2"] * int(two[s])
        label = f"[{' '.join(c for c in cards if c)}]"
        if s < NUM_RANK_SLOTS and size >= 7:
            kind = "natural" if jok[s] + two[s] == 0 else "mixed"
            out.append(f"{label} {kind} canasta", style="bold green")
        else:
            out.append(f"{label} ({size})")
        out.append("  ")
    kinds = state.closed_canastas[b, owner]  # closed at seven cards (Railroad, Pennies: R2, P2)
    if kinds.any():
        names = ("natural", "mixed", "wild", "sevens")
        out.append("closed: " + ", ".join(f"{int(c)} {names[k]}" for k, c in enumerate(kinds) if c),
                   style="bold green")
    return out if out.plain else Text("-")


def _sides_table(state: State, labels: Sequence[str], viewer: int | None) -> Table:
    rules = state.rules
    table = Table(title=None, show_edge=False, pad_edge=False, expand=False)
    for col in ("side", "players", "game score", "this hand", "red 3s"):
        table.add_column(col)
    for side in range(state.num_sides):
        seats = side_seats(state, side)
        score = int(state.scores[0, side])
        if state.opened[0, side]:
            status = "opened"
        else:
            status = f"needs {rules.minimum_for(score)} to open"
        red3 = sum(int(state.red_threes[0, p]) for p in seats)
        table.add_row(str(side), ", ".join(seat_name(p, labels, viewer) for p in seats), str(score),
                      status, str(red3))
    return table


def _melds_lines(state: State) -> Text:
    """Each side's melds; where every player owns their melds (Regal, G2), each player's."""
    sides = state.num_sides
    owners = state.num_owners  # owner o belongs to side o % sides
    out = Text()
    for side in range(sides):
        out.append(f"Melds of side {side}: ")
        for i, o in enumerate(range(side, owners, sides)):
            if owners != sides:  # each player owns their melds (G2)
                out.append(f"{' | ' if i else ''}P{o}: ")
            out.append_text(_meld_text(state, o))
        out.append("\n" if side + 1 < sides else "")
    return out


def _pile_line(state: State, viewer: int | None) -> Text:
    pile = state.pile(0)
    line = Text(f"Stock {int(state.stock_size[0])} cards · Pile {len(pile)} cards")
    if len(pile) == 0:
        return line
    top = int(pile[-1])
    line.append(f", top {KIND_NAMES[top]}")
    if state.pile_frozen[0]:
        line.append(" · FROZEN (a wild lies in it: take only with a natural pair)", style="bold red")
    elif viewer is not None and not state.opened[0, viewer % state.num_sides]:
        line.append(" · frozen for your side until it opens (natural pair only)", style="yellow")
    else:
        line.append(" · not frozen")
    if top == BLACK_THREE:
        line.append(" · black three on top: nobody may take it", style="yellow")
    line.append("\nPile, bottom to top: " + " ".join(KIND_NAMES[int(k)] for k in pile))
    return line


def _players_lines(state: State, labels: Sequence[str], viewer: int | None) -> Text:
    out = Text()
    cur = int(state.current_player[0])
    for p in range(state.num_players):
        if p == viewer:
            continue
        hand, known = state.hands[0, p], state.known[0, p]
        mark = "▶ " if p == cur else "  "
        text = f"{mark}{seat_name(p, labels, viewer)}: {int(hand.sum())} cards"
        if viewer is None:
            text += f": {cards_by_rank(hand)}"
        elif known.sum():
            text += f" (known from the pile: {cards_by_rank(known)})"
        text += _reserve_text(state, p, viewer)
        out.append(text + "\n")
    return out


def _reserve_text(state: State, seat: int, viewer: int | None) -> str:
    """A kitty or foot not yet in hand (R1, P1): its size, and its cards only when omniscient."""
    reserve = state.reserves[0, seat]
    if not reserve.sum():
        return ""
    shown = state.reserve_state[0, seat] == 1
    what = f": {cards_by_rank(reserve)}" if viewer is None else ""
    return f" · {'kitty shown, joins after the discard' if shown else 'face down'} " \
           f"{int(reserve.sum())}{what}"


def legal_moves_table(state: State) -> Table:
    """The mover's legal moves, numbered from 1 in the order ``canasta play`` accepts them."""
    table = Table(show_edge=False, pad_edge=False, show_header=True)
    table.add_column("#", justify="right")
    table.add_column("move")
    table.add_column("meaning")
    for i, a in enumerate(state.legal_actions(0), start=1):
        table.add_row(str(i), ACTION_NAMES[a], describe(a))
    return table


def seat_view(state: State, viewer: int | None, labels: Sequence[str]) -> RenderableType:
    """The table as ``viewer`` sees it (``None``: omniscient), with its legal moves when it is to
    move. ``labels`` name each seat's player."""
    cur = int(state.current_player[0])
    phase = PHASE_NAMES[int(state.phase[0])]
    mover = "you" if cur == viewer else labels[cur]
    head = Text(f"{state.rules.name} · hand {int(state.hand_number[0]) + 1} · dealer "
                f"P{int(state.dealer[0])} · P{cur} ({mover}) to move: {phase}", style="bold")
    parts: list[RenderableType] = [head, _sides_table(state, labels, viewer), _melds_lines(state),
                                   _pile_line(state, viewer), _players_lines(state, labels, viewer)]
    if viewer is not None:
        hand = state.hands[0, viewer]
        parts.append(Text(f"Your hand ({int(hand.sum())} cards, red threes "
                          f"{int(state.red_threes[0, viewer])}): {cards_by_rank(hand)}"
                          + _reserve_text(state, viewer, viewer), style="bold"))
    if cur == viewer or viewer is None:
        if state.needs_minimum[0] and phase != "draw":
            parts.append(Text(f"Melded toward your side's minimum this turn: "
                              f"{int(state.turn_value[0])} of {int(state.minimum[0])}"))
        parts.append(legal_moves_table(state))
    return Group(*parts)


def view_text(state: State, viewer: int | None, labels: Sequence[str], width: int = 100) -> str:
    """``seat_view`` as plain text (no colours), for tests and logs."""
    console = Console(file=io.StringIO(), width=width, color_system=None, force_terminal=False,
                      highlight=False)
    console.print(seat_view(state, viewer, labels))
    return console.file.getvalue()  # type: ignore[attr-defined]
