"""Text rendering of one game: from one player's view (hidden cards hidden) or omniscient."""

from __future__ import annotations

import numpy as np

from canasta_env.engine.actions import ACTION_NAMES
from canasta_env.engine.cards import CANASTA_SIZE, KIND_NAMES, SLOT_NAMES, WILD_SLOT
from canasta_env.engine.core import State, check_int
from canasta_env.engine.layout import (
    F_MINIMUM,
    F_NEEDS_MIN,
    F_PILE_FROZEN,
    F_TURN_VALUE,
    PHASE_NAMES,
)


def _cards(counts: np.ndarray) -> str:
    parts = [f"{KIND_NAMES[k]}x{int(c)}" if c > 1 else KIND_NAMES[k]
             for k, c in enumerate(counts) if c > 0]
    return " ".join(parts) if parts else "-"


def _melds(state: State, b: int, side: int) -> str:
    out = []
    nat, jok, two = state.meld_naturals[b, side], state.meld_jokers[b, side], state.meld_twos[b, side]
    for s, name in enumerate(SLOT_NAMES):
        if nat[s] + jok[s] + two[s] == 0:
            continue
        size = int(nat[s] + jok[s] + two[s])
        tag = ""
        if size >= CANASTA_SIZE and s < WILD_SLOT:
            tag = "*natural canasta*" if jok[s] + two[s] == 0 else "*mixed canasta*"
        wild = f"+{int(jok[s])}JK" * bool(jok[s]) + f"+{int(two[s])}x2" * bool(two[s])
        out.append(f"{name}:{int(nat[s])}{wild}{tag}")
    kinds = state.closed_canastas[b, side]
    if kinds.any():  # closed under a meld cap (R2, P2)
        names = ("natural", "mixed", "wild", "sevens")
        out.append("closed: " + ", ".join(f"{int(c)} {names[k]}" for k, c in enumerate(kinds) if c))
    return " ".join(out) if out else "-"


def render(state: State, b: int = 0, player: int | None = None) -> str:
    """A readable table for row ``b``: from ``player``'s view, or omniscient when ``None``.
    ``ValueError`` for a row outside the batch or a player who is no seat (``True`` or ``"0"``
    showed another seat's hand, or none)."""
    n = state.num_players
    b = state.row_index(b)
    if player is not None:
        player = check_int(player, "player", "render")
        if not 0 <= player < n:
            raise ValueError(f"render: player {player} is not a seat in [0, {n})")
    d = state.data[b]
    cur = int(state.current_player[b])
    lines = [
        f"{state.rules.name} deal {tuple(state.deal_id(b))} hand {int(state.hand_number[b])} "
        f"dealer P{int(state.dealer[b])} | to move: P{cur} ({PHASE_NAMES[int(state.phase[b])]})"
        + ("" if player is None else f" | view of P{player}"),
    ]
    pile = state.pile(b)
    top = KIND_NAMES[int(pile[-1])] if len(pile) else "-"
    frozen = " frozen" if d[F_PILE_FROZEN] else ""
    lines.append(f"stock {int(state.stock_size[b])} | pile {len(pile)} top {top}{frozen}")
    if player is None:
        lines.append(f"pile contents: {_cards(np.bincount(pile, minlength=15))}")
    sides, owners = state.num_sides, state.num_owners
    for side in range(sides):
        opened = "opened" if state.opened[b, side] else "not opened"
        if owners == sides:
            melds = _melds(state, b, side)
        else:  # each player owns their melds (G2)
            melds = " | ".join(f"P{o}: {_melds(state, b, o)}" for o in range(side, owners, sides))
        lines.append(f"side {side} ({opened}, score {int(state.scores[b, side])}): {melds}")
    for p in range(n):
        hand = state.hands[b, p]
        size = int(hand.sum())
        if player is None or p == player:
            shown = _cards(hand)
        else:
            known = state.known[b, p]
            shown = f"{size} cards" + (f", known: {_cards(known)}" if known.sum() else "")
        reserve = int(state.reserves[b, p].sum())
        if reserve:  # a kitty or foot not yet in hand (R1, P1)
            what = _cards(state.reserves[b, p]) if player is None else f"{reserve} cards"
            shown += f" | {'shown' if state.reserve_state[b, p] == 1 else 'face down'}: {what}"
        lines.append(f"P{p}{'*' if p == cur else ' '} red3 {int(state.red_threes[b, p])} | {shown}")
    if d[F_NEEDS_MIN]:
        lines.append(f"minimum {int(d[F_MINIMUM])}, melded this turn {int(d[F_TURN_VALUE])}")
    if player is None or player == cur:
        legal = [ACTION_NAMES[a] for a in state.legal_actions(b)]
        lines.append("legal: " + (" ".join(legal) if legal else "-"))
    return "\n".join(lines)
