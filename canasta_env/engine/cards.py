"""Card kinds, values and meld slots.

Suits never matter except for the colour of threes (docs/rules.md C1), so a card is one of 15 kinds.
Melds live in 13 slots: one per natural rank 4..A, one for wild-only melds (Railroad, Pennies) and
one for the black-three meld made when going out (C11).
"""

from __future__ import annotations

import numpy as np

JOKER, TWO, RED_THREE, BLACK_THREE = 0, 1, 2, 3
FOUR, FIVE, SIX, SEVEN, EIGHT, NINE, TEN, JACK, QUEEN, KING, ACE = range(4, 15)
NUM_KINDS = 15
NATURAL_KINDS = tuple(range(FOUR, ACE + 1))

KIND_NAMES = ("JK", "2", "R3", "B3", "4", "5", "6", "7", "8", "9", "T", "J", "Q", "K", "A")
KIND_BY_NAME = {name: k for k, name in enumerate(KIND_NAMES)}

# C3: joker 50; two and ace 20; K..8 10; 7..4 and black three 5; red threes are bonus cards.
CARD_VALUES = np.array([50, 20, 0, 5, 5, 5, 5, 5, 10, 10, 10, 10, 10, 10, 20], dtype=np.int32)

NUM_RANK_SLOTS = 11  # slots 0..10 hold ranks 4..A: slot = kind - FOUR
SEVEN_SLOT = SEVEN - FOUR  # the sevens meld (R5, P4)
WILD_SLOT = 11  # wild-only melds (R2, P2)
BLACK_THREE_SLOT = 12  # the going-out black-three meld (C11)
NUM_SLOTS = 13
CANASTA_SIZE = 7  # cards that make a meld a canasta (C21); the capped variants' meld cap too (R2)
SLOT_NAMES = KIND_NAMES[FOUR:] + ("W", "B3")

# natural kind held by each slot (-1 for the wild slot)
SLOT_KIND = np.array(list(range(FOUR, ACE + 1)) + [-1, BLACK_THREE], dtype=np.int32)


def kinds_per_pack(jokers_per_deck: int, packs: int) -> np.ndarray:
    """Count of each kind in a deck of ``packs`` packs plus ``jokers_per_deck`` jokers (C1)."""
    counts = np.full(NUM_KINDS, 4 * packs, dtype=np.int32)
    counts[JOKER] = jokers_per_deck
    counts[RED_THREE] = 2 * packs
    counts[BLACK_THREE] = 2 * packs
    return counts
