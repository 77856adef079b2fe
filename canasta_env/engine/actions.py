"""The discrete action layout: the one place that says what each action index means.

A turn is a sequence of atomic decisions by the player to move (docs/engine.md). The
layout is designed for every variant of docs/rules.md, so ``NUM_ACTIONS`` never changes; a variant's
unused actions are simply never legal. Slots (``cards.py``): 0..10 = ranks 4..A, 11 = wild-only
meld, 12 = black threes.

=========  ====================  =====================================================  ===========
range      name                  meaning                                                used by
=========  ====================  =====================================================  ===========
[0,1)      DRAW_STOCK            draw ``draw_count`` cards (red threes replaced)         all
[1,2)      END_HAND              stock empty: end the hand instead of drawing (C31b);    all
                                 after a last-card red three or with only unplayable
                                 cards: stop melding, the hand ends (C31a, C27a)
[2,3)      TAKE_PILE_PAIR        take the pile: top card + two naturals from hand        all
[3,4)      TAKE_PILE_NAT_JOKER   take: top + one natural + a joker (unfrozen pile)       all
[4,5)      TAKE_PILE_NAT_TWO     take: top + one natural + a two (unfrozen pile)         all
[5,6)      TAKE_PILE_LAYOFF      take: top card joins the side's (own) meld of its rank  all
[6,19)     MELD_NNN[slot]        new meld of three naturals (slot 12: three black        all
                                 threes, going out only; slot 11 unused)
[19,32)    MELD_NNJ[slot]        new meld of two naturals + a joker (slots 0..10)        all
[32,45)    MELD_NN2[slot]        new meld of two naturals + a two (slots 0..10)          all
[45,58)    ADD_NATURAL[slot]     one natural to the open meld of that slot (0..10, 12)   all
[58,71)    ADD_JOKER[slot]       a joker to the open meld of that slot (0..11)           all
[71,84)    ADD_TWO[slot]         a two to the open meld of that slot (0..11)             all
[84,88)    MELD_WILD[j]          new wild-only meld: j jokers and 3-j twos              Railroad,
                                                                                         Pennies
[88,103)   DISCARD[kind]         discard one card of that kind (going out when it is     all
                                 the last card); red threes are never held
[103,104)  ASK_PARTNER           "may I go out?" (C29)                                   ask_partner
[104,105)  ANSWER_YES            partner's answer (C29)                                  ask_partner
[105,106)  ANSWER_NO             partner's answer (C29)                                  ask_partner
=========  ====================  =====================================================  ===========

Kitty and foot pick-ups (R4, P3) are events the engine applies, not decisions, so they need no
action. With player ownership (G2) "the meld of that slot" is the mover's own; with a meld cap (R2)
it is the open meld, so a closed canasta's rank starts a new meld with the same actions.

Every meld is valid after every action (new melds start as three valid cards and additions keep
C13), so a turn's melds are always complete; each action is legal exactly when the turn can still
be finished legally (C19a).

Bounded turns (docs/engine.md "Bounds"): the potential ``(phase, asks left, cards in hand)`` decreases
lexicographically with every decision of a turn: the draw or take leaves the draw phase, an ask
and its answer use up the turn's one question, every meld action moves at least one card from hand
to table, and a discard or END_HAND ends the turn. A turn therefore has at most
``1 + 2 + (cards in hand after the draw) + 1`` decisions.
"""

from __future__ import annotations

import numpy as np

from canasta_env.engine.cards import KIND_NAMES, NUM_KINDS, NUM_SLOTS, SLOT_NAMES

_RANGES: list[tuple[str, int]] = [
    ("DRAW_STOCK", 1),
    ("END_HAND", 1),
    ("TAKE_PILE_PAIR", 1),
    ("TAKE_PILE_NAT_JOKER", 1),
    ("TAKE_PILE_NAT_TWO", 1),
    ("TAKE_PILE_LAYOFF", 1),
    ("MELD_NNN", NUM_SLOTS),
    ("MELD_NNJ", NUM_SLOTS),
    ("MELD_NN2", NUM_SLOTS),
    ("ADD_NATURAL", NUM_SLOTS),
    ("ADD_JOKER", NUM_SLOTS),
    ("ADD_TWO", NUM_SLOTS),
    ("MELD_WILD", 4),
    ("DISCARD", NUM_KINDS),
    ("ASK_PARTNER", 1),
    ("ANSWER_YES", 1),
    ("ANSWER_NO", 1),
]

OFFSETS: dict[str, int] = {}
_pos = 0
for _name, _size in _RANGES:
    OFFSETS[_name] = _pos
    _pos += _size
NUM_ACTIONS: int = _pos

DRAW_STOCK = OFFSETS["DRAW_STOCK"]
END_HAND = OFFSETS["END_HAND"]
TAKE_PILE_PAIR = OFFSETS["TAKE_PILE_PAIR"]
TAKE_PILE_NAT_JOKER = OFFSETS["TAKE_PILE_NAT_JOKER"]
TAKE_PILE_NAT_TWO = OFFSETS["TAKE_PILE_NAT_TWO"]
TAKE_PILE_LAYOFF = OFFSETS["TAKE_PILE_LAYOFF"]
MELD_NNN = OFFSETS["MELD_NNN"]
MELD_NNJ = OFFSETS["MELD_NNJ"]
MELD_NN2 = OFFSETS["MELD_NN2"]
ADD_NATURAL = OFFSETS["ADD_NATURAL"]
ADD_JOKER = OFFSETS["ADD_JOKER"]
ADD_TWO = OFFSETS["ADD_TWO"]
MELD_WILD = OFFSETS["MELD_WILD"]
DISCARD = OFFSETS["DISCARD"]
ASK_PARTNER = OFFSETS["ASK_PARTNER"]
ANSWER_YES = OFFSETS["ANSWER_YES"]
ANSWER_NO = OFFSETS["ANSWER_NO"]
# a meld action with a two sits this far after the same action with a joker (NNJ/NN2, ADD_JOKER/ADD_TWO)
TWO_FOR_JOKER = MELD_NN2 - MELD_NNJ
assert ADD_TWO - ADD_JOKER == TWO_FOR_JOKER


def _names() -> tuple[str, ...]:
    names: list[str] = []
    for name, size in _RANGES:
        if size == 1:
            names.append(name)
        elif name == "DISCARD":
            names += [f"DISCARD_{k}" for k in KIND_NAMES]
        elif name == "MELD_WILD":
            names += [f"MELD_WILD_{j}J{3 - j}T" for j in range(4)]
        else:
            names += [f"{name}_{s}" for s in SLOT_NAMES]
    return tuple(names)


ACTION_NAMES: tuple[str, ...] = _names()
ACTION_BY_NAME: dict[str, int] = {n: i for i, n in enumerate(ACTION_NAMES)}

# range id and argument per action (slot, kind or joker count), built once for fast decoding
ACTION_RANGE = np.zeros(NUM_ACTIONS, dtype=np.int32)
ACTION_ARG = np.zeros(NUM_ACTIONS, dtype=np.int32)
for _rid, (_name, _size) in enumerate(_RANGES):
    ACTION_RANGE[OFFSETS[_name]: OFFSETS[_name] + _size] = _rid
    ACTION_ARG[OFFSETS[_name]: OFFSETS[_name] + _size] = np.arange(_size)
RANGE_NAMES: tuple[str, ...] = tuple(name for name, _ in _RANGES)


def action_name(action: int) -> str:
    """Readable name of an action index, e.g. ``MELD_NNN_K`` or ``DISCARD_7``."""
    if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
        raise ValueError(f"action_name: action must be an integer, got {action!r:.40} "
                         f"({type(action).__name__})")  # 1.5 is no action, not END_HAND
    if not 0 <= int(action) < NUM_ACTIONS:
        raise ValueError(f"action {action} is outside [0, {NUM_ACTIONS})")
    return ACTION_NAMES[int(action)]


def action_index(name: str) -> int:
    """Inverse of ``action_name``."""
    try:
        return ACTION_BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown action name {name!r}") from None


def decode(action: int) -> tuple[str, int]:
    """(range name, argument) of an action: the slot, discarded kind or joker count."""
    a = int(action)
    action_name(a)
    return RANGE_NAMES[ACTION_RANGE[a]], int(ACTION_ARG[a])


def encode(range_name: str, arg: int = 0) -> int:
    """Action index of ``range_name`` with its argument; inverse of ``decode``."""
    size = dict(_RANGES)[range_name]
    if not 0 <= arg < size:
        raise ValueError(f"argument {arg} out of range for {range_name} (size {size})")
    return OFFSETS[range_name] + arg
