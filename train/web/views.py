"""The table as JSON: what the browser draws, from one seat's view or omniscient (replay).

Mirrors ``train.play.table_view`` (the terminal table): a seat sees its own hand, every meld, the pile,
hand sizes and the cards others are known to hold from pile takes, red threes and scores; never the
stock order or the unknown part of another hand. ``viewer=None`` is the omniscient view of a replay:
every hand shown. Cards are kind names (``JK``, ``2``, ``R3``, ``B3``, ``4`` ... ``A``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from canasta_env.engine import ACTION_NAMES, State
from canasta_env.engine.actions import decode
from canasta_env.engine.cards import (
    CANASTA_SIZE,
    JOKER,
    KIND_NAMES,
    NUM_RANK_SLOTS,
    SLOT_KIND,
    SLOT_NAMES,
    TWO,
)
from canasta_env.engine.layout import PHASE_NAMES
from train.play.table_view import describe, side_seats

CLOSED_KINDS = ("natural", "mixed", "wild", "sevens")


def kinds_list(counts: np.ndarray) -> list[str]:
    """A count per kind as a sorted list of kind names, one entry per card (wilds first)."""
    return [KIND_NAMES[k] for k, c in enumerate(counts.tolist()) for _ in range(int(c))]


def action_cards(action: int, pile_top: int | None) -> list[str]:
    """The kinds of the cards an action plays from the hand: what a click on a hand card offers.

    ``MELD_NNJ_K`` uses ``K K JK``; ``TAKE_PILE_PAIR`` the two naturals matching the pile's top;
    ``DISCARD_7`` a 7; draws and answers use none.
    """
    kind, arg = decode(action)
    top = KIND_NAMES[pile_top] if pile_top is not None else None
    natural = KIND_NAMES[int(SLOT_KIND[arg])] if kind.startswith(("MELD_NN", "ADD_")) \
        and SLOT_KIND[arg] >= 0 else None
    if kind == "DISCARD":
        return [KIND_NAMES[arg]]
    if kind == "MELD_NNN":
        return [natural] * 3 if natural else []
    if kind in ("MELD_NNJ", "MELD_NN2"):
        wild = KIND_NAMES[JOKER] if kind == "MELD_NNJ" else KIND_NAMES[TWO]
        return [natural, natural, wild] if natural else [wild]
    if kind == "ADD_NATURAL":
        return [natural] if natural else []
    if kind == "ADD_JOKER":
        return [KIND_NAMES[JOKER]]
    if kind == "ADD_TWO":
        return [KIND_NAMES[TWO]]
    if kind == "MELD_WILD":
        return [KIND_NAMES[JOKER]] * arg + [KIND_NAMES[TWO]] * (3 - arg)
    if top is None:
        return []
    return {"TAKE_PILE_PAIR": [top, top], "TAKE_PILE_NAT_JOKER": [top, KIND_NAMES[JOKER]],
            "TAKE_PILE_NAT_TWO": [top, KIND_NAMES[TWO]]}.get(kind, [])


def legal_moves(state: State) -> list[dict[str, Any]]:
    """The mover's legal actions (from the engine's mask): id, name, English text and hand cards."""
    pile = state.pile(0)
    top = int(pile[-1]) if len(pile) else None
    return [{"id": int(a), "name": ACTION_NAMES[a], "text": describe(a), "cards": action_cards(a, top)}
            for a in state.legal_actions(0)]


def _melds(state: State, owner: int) -> list[dict[str, Any]]:
    nat, jok, two = (state.meld_naturals[0, owner], state.meld_jokers[0, owner],
                     state.meld_twos[0, owner])
    out = []
    for s, name in enumerate(SLOT_NAMES):
        n, j, t = int(nat[s]), int(jok[s]), int(two[s])
        if n + j + t == 0:
            continue
        natural = KIND_NAMES[int(SLOT_KIND[s])] if SLOT_KIND[s] >= 0 else None
        canasta = None
        if s < NUM_RANK_SLOTS and n + j + t >= CANASTA_SIZE:
            canasta = "natural" if j + t == 0 else "mixed"
        out.append({"slot": name, "cards": ([natural] * n if natural else []) + ["JK"] * j + ["2"] * t,
                    "canasta": canasta})
    return out


def _closed(state: State, owner: int) -> dict[str, int]:
    """Canastas closed at seven cards (Railroad, Pennies) by kind: they leave the meld slots."""
    counts = state.closed_canastas[0, owner].tolist()
    return {CLOSED_KINDS[k]: int(c) for k, c in enumerate(counts) if c}


def _reserve(state: State, seat: int, viewer: int | None) -> dict[str, Any] | None:
    reserve = state.reserves[0, seat]
    if not reserve.sum():
        return None
    shown = bool(state.reserve_state[0, seat] == 1)
    return {"size": int(reserve.sum()), "shown": shown,
            "cards": kinds_list(reserve) if viewer is None else None}


def table_view(state: State, viewer: int | None, labels: Sequence[str]) -> dict[str, Any]:
    """The table from seat ``viewer``'s view (``None``: omniscient) as plain JSON data."""
    rules = state.rules
    cur = int(state.current_player[0])
    sides = state.num_sides
    owners = state.num_owners
    pile = state.pile(0)
    top = int(pile[-1]) if len(pile) else None
    over = bool(state.terminated[0] or state.truncated[0])
    players = []
    for p in range(state.num_players):
        hand = state.hands[0, p]
        entry: dict[str, Any] = {
            "seat": p, "label": labels[p], "side": p % sides, "cards": int(hand.sum()),
            "red_threes": int(state.red_threes[0, p]), "to_move": p == cur and not over,
            "reserve": _reserve(state, p, viewer),
        }
        if viewer is None or p == viewer:
            entry["hand"] = kinds_list(hand)
        else:
            entry["known"] = kinds_list(state.known[0, p])
        players.append(entry)
    side_list = []
    for side in range(sides):
        seats = side_seats(state, side)
        score = int(state.scores[0, side])
        melds = [{"owner": o, "melds": _melds(state, o), "closed": _closed(state, o)}
                 for o in range(side, owners, sides)]
        side_list.append({
            "side": side, "seats": seats, "score": score, "opened": bool(state.opened[0, side]),
            "minimum": int(rules.minimum_for(score)),
            "red_threes": sum(int(state.red_threes[0, p]) for p in seats), "melds": melds,
        })
    frozen_for_viewer = viewer is not None and not state.opened[0, viewer % sides]
    view: dict[str, Any] = {
        "rules": rules.name, "num_players": state.num_players, "num_sides": sides,
        "hand_number": int(state.hand_number[0]) + 1, "dealer": int(state.dealer[0]),
        "to_move": cur, "phase": PHASE_NAMES[int(state.phase[0])], "over": over,
        "stock": int(state.stock_size[0]),
        "pile": {"size": len(pile), "top": KIND_NAMES[top] if top is not None else None,
                 "cards": kinds_list_ordered(pile), "frozen": bool(state.pile_frozen[0]),
                 "frozen_for_viewer": bool(frozen_for_viewer and not state.pile_frozen[0]),
                 "black_three_top": top == 3},
        "players": players, "sides": side_list, "viewer": viewer,
        "minimum_progress": None,
    }
    if state.needs_minimum[0] and view["phase"] != "draw" and not over:
        view["minimum_progress"] = {"melded": int(state.turn_value[0]), "needed": int(state.minimum[0])}
    return view


def kinds_list_ordered(cards: np.ndarray) -> list[str]:
    """A sequence of card kinds (the pile, bottom to top) as kind names, order kept."""
    return [KIND_NAMES[int(k)] for k in cards]
