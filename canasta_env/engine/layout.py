"""Packed layouts shared by Python and the kernels: the rule-parameter vector and the game row.

A game is one int32 row of a ``(B, W)`` array; a row starts with fixed header fields (``F_*``) and
continues with per-player, per-side and card arrays whose offsets depend on the table size and deck
and are stored in the parameter vector (``O_*`` entries). Kernels therefore take just two packed
arrays (row data and parameters) instead of many typed arguments (docs/engine.md).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from canasta_env.engine.cards import NUM_KINDS, NUM_SLOTS
from canasta_env.messages import check_choice
from canasta_env.rules import RuleSet

# ---- header fields of a game row -------------------------------------------------------------
F_CUR = 0  # player to move
F_PHASE = 1  # PH_*
F_DEALER = 2
F_HAND_NO = 3  # hands played in this game before the current one
F_STEPS = 4  # decisions in the current hand (step-cap guard)
F_STATUS = 5  # ST_*
F_TRUNC = 6  # 1 when stopped by a guard (step cap, max_hands)
F_STOCK_LEN = 7
F_PILE_LEN = 8
F_PILE_FROZEN = 9  # a wild (or red-three upcard) lies in the pile: frozen for everyone (C20)
F_TURN_VALUE = 10  # card value toward the minimum melded this turn (C16, C17)
F_TURN_FLAGS = 11  # TF_*
F_ASKER = 12  # player who asked the partner (C29)
F_WENT_OUT = 13  # player who went out this hand, -1 if none
F_CONCEALED = 14
F_SEED_LO = 15  # DealId of the game: seed (two 32-bit halves), row, index
F_SEED_HI = 16
F_DEAL_ROW = 17
F_DEAL_INDEX = 18
F_TURN_MELDS = 19  # meld actions this turn (C29: ask before melding)
F_NEEDS_MIN = 20  # the mover's side had not opened when the turn began
F_MINIMUM = 21  # minimum of the mover's side for this hand
F_GAME_RESULT = 22  # winning side at game end, -1 draw, -2 not over
F_HAND_END = 23  # HE_* how the last hand ended
F_PLAY_CLOSED = 25  # kinds (bits of K_*) of the canastas the current play closed (R4, P3)
HEADER = 32

PH_DRAW, PH_MELD, PH_ANSWER, PH_FINAL_MELD, PH_OVER = 0, 1, 2, 3, 4
PHASE_NAMES = ("draw", "meld", "answer", "final_meld", "over")
ST_LIVE, ST_DONE = 0, 1
HE_NONE, HE_WENT_OUT, HE_STOCK_OUT, HE_LAST_RED3, HE_NO_DISCARD, HE_STEP_CAP = 0, 1, 2, 3, 4, 5

TF_DREW = 1  # drew from the stock this turn
TF_TOOK = 2  # took the pile this turn
TF_ASKED = 4
TF_YES = 8  # partner said yes: must go out
TF_NO = 16  # partner said no: may not go out
TF_MELDED_BEFORE = 32  # the mover had melded earlier in this hand (C30 (1))
TF_ADDED_OLD = 64  # added to a meld made before this turn (C30 (3))
TF_SEVENS_ONLY = 128  # the hand held only sevens when melding began (R5, C27a)
TF_NEW_CANASTA = 256  # closed a canasta wholly melded this turn (C30 (4) under a meld cap)

# canasta kinds (R2, P2): bits of F_PLAY_CLOSED, columns of the closed-canasta counts
K_NATURAL, K_MIXED, K_WILD, K_SEVENS = 0, 1, 2, 3
KIND_BONUS_NAMES = ("natural", "mixed", "wild", "sevens")
RES_DOWN, RES_SHOWN, RES_IN_HAND = 0, 1, 2  # reserve (kitty/foot) state per player (R4, P3)

# ---- event bits returned by step (rule coverage, statistics) --------------------------------
EV_HAND_END = 1 << 0
EV_WENT_OUT = 1 << 1
EV_CONCEALED = 1 << 2
EV_PILE_TAKE = 1 << 3
EV_FROZEN_TAKE = 1 << 4  # take of a pile frozen by a wild (C20, C23)
EV_OPEN_BY_TAKE = 1 << 5  # unopened side took the pile (C17, C23)
EV_LAST_RED3 = 1 << 6  # last stock card was a red three (C31a)
EV_FORCED_TAKE = 1 << 7  # empty stock, END_HAND not allowed (C31b)
EV_STOCK_OUT_END = 1 << 8  # END_HAND with empty stock (C31b)
EV_ALL_RED3 = 1 << 9  # a side holds every red three (C10)
EV_RED3_DRAWN = 1 << 10
EV_CANASTA = 1 << 11  # a meld reached canasta size
EV_OPENED = 1 << 12  # a side met its minimum
EV_BLACK3_MELD = 1 << 13
EV_ASK = 1 << 14
EV_GAME_END = 1 << 15
EV_RED3_NEGATIVE = 1 << 16  # red threes counted minus (C10)
EV_FROZEN_UPCARD = 1 << 17  # the deal turned a wild or red three (C5)
EV_STOP_CARD = 1 << 18  # a black three discarded (C12)
EV_LAYOFF_TAKE = 1 << 19
EV_RESERVE_PICKUP = 1 << 20  # a kitty or foot joined a hand (R4, P3)
EV_WILD_CANASTA = 1 << 21
EV_SEVENS_CANASTA = 1 << 22
EV_SEVENS_HELD = 1 << 23  # a turn ended by discard while the seven rule kept a seven in hand (R5)
EV_NO_DISCARD_END = 1 << 24  # only sevens left: the hand ended without a discard (C27a)
EV_ALL_KINDS_OUT = 1 << 25  # went out with one canasta of each kind (R8, P6)
EVENT_NAMES = (
    "hand_end", "went_out", "concealed", "pile_take", "frozen_take", "open_by_take", "last_red3",
    "forced_take", "stock_out_end", "all_red3", "red3_drawn", "canasta", "opened", "black3_meld",
    "ask", "game_end", "red3_negative", "frozen_upcard", "stop_card", "layoff_take",
    "reserve_pickup", "wild_canasta", "sevens_canasta", "sevens_held", "no_discard_end",
    "all_kinds_out",
)

# ---- parameter vector ------------------------------------------------------------------------
(P_NPLAYERS, P_NSIDES, P_PARTNERS, P_HAND_SIZE, P_DRAW, P_UPCARD_KEEP, P_RED3_NEG, P_RED3_BONUS,
 P_RED3_ALL, P_MIN_NAT, P_MAX_WILD, P_WLE, P_WILD_ON_NAT, P_NAT_BONUS, P_MIX_BONUS, P_GO_REQ,
 P_GO_BONUS, P_CONC_BONUS, P_ASK, P_CONC_MIN, P_PILE_REQ_OPEN, P_FORBID_SINGLE, P_LAST_RED3,
 P_EXH, P_TARGET, P_TIE, P_MAX_HANDS, P_MAX_STEPS, P_EPISODE_GAME, P_PACKS, P_JOKERS, P_DECK,
 P_MTAB_N) = range(33)
P_MTAB_LO = 33  # 8 lower bounds
P_MTAB_MIN = 41  # 8 minimums
O_HANDS, O_KNOWN, O_RED3, O_MELDED, O_MNAT, O_MJOK, O_MTWO, O_NEW, O_OPENED, O_SCORE, O_HSCORE, \
    O_PARTS, O_CREDIT, O_STOCK, O_PILE, O_DECKCOUNT, P_WIDTH = range(49, 66)
P_NOWNERS = 66  # meld owners: the sides (C14), or the players under meld_ownership: player (G2)
# variant options (R1-R8, P1-P6); P_CAP > 0 switches on capped melds with the four canasta kinds
(P_CAP, P_WILD_BONUS, P_SEVENS_BONUS, P_TAKE_WILD, P_B3_MAX, P_GO_DISCARD, P_SEVEN_RULE,
 P_RES_SIZE, P_RES_PICKUP, O_RESERVE, O_RESSTATE, O_CLOSED, O_CKINDS, O_CJOK, O_CTWO) = range(67, 82)
O_DISCARDS = 82
P_OBS_DISCARDS = 83  # observe_discards: each seat's discards this hand join the observation
NUM_PARAMS = 84
NUM_PARTS = 5  # score parts per side (C32): melded cards, canasta bonuses, red threes, going out, hand
PART_NAMES = ("melds", "canastas", "red_threes", "going_out", "hand")
PART_MELDS, PART_CANASTAS, PART_RED_THREES, PART_GOING_OUT, PART_HAND = range(NUM_PARTS)
NUM_CANASTA_KINDS = len(KIND_BONUS_NAMES)

# ---- the game row after its header: the blocks in order, as (offset entry, one row per, width) ----
# One row per player, meld owner (side, or player under G2), side, or one for the table, or per
# player only under observe_discards (``block_rows``: no cost to a row without it); a width
# is a count of columns or "deck" (a card slot per card of the deck, bottom first). ``pack_params``
# computes the offsets from it, ``State`` its array views, and the kernels reach a block through
# the accessors below.
ROW_BLOCKS: tuple[tuple[int, str, int | str], ...] = (
    (O_HANDS, "players", NUM_KINDS),  # cards of each kind in each hand
    (O_KNOWN, "players", NUM_KINDS),  # of those, taken from the pile and not yet played
    (O_RED3, "players", 1),  # red threes laid down
    (O_MELDED, "players", 1),  # melded or added this hand
    (O_MNAT, "owners", NUM_SLOTS),  # naturals in each meld slot
    (O_MJOK, "owners", NUM_SLOTS),  # jokers in each meld slot
    (O_MTWO, "owners", NUM_SLOTS),  # twos in each meld slot
    (O_NEW, "one", NUM_SLOTS),  # slots the mover's side started this turn
    (O_OPENED, "sides", 1),  # met the initial-meld minimum this hand
    (O_SCORE, "sides", 1),  # game score
    (O_HSCORE, "sides", 1),  # score of the last scored hand
    (O_PARTS, "sides", NUM_PARTS),  # its parts (PART_*)
    (O_CREDIT, "one", NUM_KINDS),  # cards whose melding still counts toward the minimum (C17)
    (O_STOCK, "one", "deck"),
    (O_PILE, "one", "deck"),
    (O_DECKCOUNT, "one", NUM_KINDS),  # the deck's count of each kind
    (O_RESERVE, "players", NUM_KINDS),  # kitty or foot while not in hand (R1, P1)
    (O_RESSTATE, "players", 1),  # RES_*
    (O_CLOSED, "owners", NUM_SLOTS),  # canastas closed under a meld cap, per slot (R2)
    (O_CKINDS, "owners", NUM_CANASTA_KINDS),  # the same by canasta kind (K_*)
    (O_CJOK, "owners", NUM_SLOTS),  # jokers in those closed canastas
    (O_CTWO, "owners", NUM_SLOTS),  # twos in those closed canastas
    (O_DISCARDS, "discarding", NUM_KINDS),  # cards each player discarded this hand (observe_discards)
)
BLOCK_SHAPE = {key: (rows, width) for key, rows, width in ROW_BLOCKS}


def block_rows(params: np.ndarray) -> dict[str, int]:
    """How many rows each kind of ``ROW_BLOCKS`` entry has for a table of ``params``."""
    n = int(params[P_NPLAYERS])
    return {"players": n, "owners": int(params[P_NOWNERS]), "sides": int(params[P_NSIDES]), "one": 1,
            "discarding": n if params[P_OBS_DISCARDS] else 0}


# ---- where a block's row starts in a game row (kernels: ``row[hand_at(prm, p) + kind]``) ------
@njit(cache=True, inline="always")
def hand_at(prm, p):
    return prm[O_HANDS] + p * NUM_KINDS


@njit(cache=True, inline="always")
def known_at(prm, p):
    return prm[O_KNOWN] + p * NUM_KINDS


@njit(cache=True, inline="always")
def discards_at(prm, p):
    return prm[O_DISCARDS] + p * NUM_KINDS


@njit(cache=True, inline="always")
def reserve_at(prm, p):
    return prm[O_RESERVE] + p * NUM_KINDS


@njit(cache=True, inline="always")
def naturals_at(prm, owner):
    return prm[O_MNAT] + owner * NUM_SLOTS


@njit(cache=True, inline="always")
def jokers_at(prm, owner):
    return prm[O_MJOK] + owner * NUM_SLOTS


@njit(cache=True, inline="always")
def twos_at(prm, owner):
    return prm[O_MTWO] + owner * NUM_SLOTS


@njit(cache=True, inline="always")
def closed_at(prm, owner):
    return prm[O_CLOSED] + owner * NUM_SLOTS


@njit(cache=True, inline="always")
def closed_jokers_at(prm, owner):
    return prm[O_CJOK] + owner * NUM_SLOTS


@njit(cache=True, inline="always")
def closed_twos_at(prm, owner):
    return prm[O_CTWO] + owner * NUM_SLOTS


@njit(cache=True, inline="always")
def canasta_kinds_at(prm, owner):
    return prm[O_CKINDS] + owner * NUM_CANASTA_KINDS


@njit(cache=True, inline="always")
def parts_at(prm, side):
    return prm[O_PARTS] + side * NUM_PARTS


@njit(cache=True, inline="always")
def slot_of(owner, slot):
    """Index of an owner's meld slot within a per-owner block (``row[prm[O_MNAT] + slot_of(o, s)]``)."""
    return owner * NUM_SLOTS + slot


@njit(cache=True, inline="always")
def cards_in(row, base):
    """Cards in the per-kind block starting at ``base`` (a hand, a reserve): the sum of its kinds."""
    total = 0
    for k in range(NUM_KINDS):
        total += row[base + k]
    return total


@njit(cache=True, inline="always")
def copy_row(src, dst, width):
    """``dst[:width] = src[:width]`` as a plain loop: the slice assignment compiled to a copy with
    a broadcast clamp per element, 7% of a random-play step under ``perf``."""
    for j in range(width):
        dst[j] = src[j]

MIN_TABLE_NEG_INF = -(1 << 30)

RED3_NEG_MODES = ("no_meld", "no_canasta", "player_no_meld", "no_sevens_canasta", "never")
LAST_RED3_MODES = ("may_meld_no_discard", "end_immediately")
EXH_MODES = ("forced_if_layoff", "forced_if_legal", "optional")
PICKUP_MODES = ("none", "after_turn", "immediate")
PICKUP_IMMEDIATE = PICKUP_MODES.index("immediate")  # P3: the foot joins at once
SEVEN_RULES = ("none", "until_all_players", "until_each_side")
EPISODES = ("hand", "game")  # pack_params' episode: one hand, or hands to the target (C33)


def pack_params(rules: RuleSet, episode: str = "hand") -> np.ndarray:
    """Rule options and row offsets as the int32 vector every kernel receives.

    ``episode`` is ``"hand"`` (a row ends when the hand is scored) or ``"game"`` (hands are dealt
    until a side reaches ``target_score``, C33).
    """
    from canasta_env.engine.cards import kinds_per_pack

    check_choice(episode, "episode", EPISODES)
    r = rules.resolved()
    assert r.hand_size is not None and r.draw_count is not None and r.go_out_requires is not None
    p = np.zeros(NUM_PARAMS, dtype=np.int32)
    n = r.num_players
    sides = 2 if r.partnerships else n  # two teams, seats alternating (C4, P1)
    owners = n if r.meld_ownership == "player" else sides
    p[P_NPLAYERS], p[P_NSIDES], p[P_PARTNERS] = n, sides, int(bool(r.partnerships))
    p[P_NOWNERS] = owners
    p[P_HAND_SIZE], p[P_DRAW] = r.hand_size, r.draw_count
    p[P_UPCARD_KEEP] = int(r.upcard_policy == "keep")
    p[P_RED3_NEG] = RED3_NEG_MODES.index(r.red3_negative_if)
    p[P_RED3_BONUS], p[P_RED3_ALL] = r.red3_bonus, r.red3_all_bonus
    p[P_MIN_NAT], p[P_MAX_WILD], p[P_WLE] = r.min_naturals, r.max_wilds, int(r.wild_le_naturals)
    p[P_WILD_ON_NAT] = int(r.allow_wild_on_natural_canasta)
    p[P_NAT_BONUS], p[P_MIX_BONUS] = r.natural_canasta_bonus, r.mixed_canasta_bonus
    each_kind = r.go_out_requires == "each_kind"
    p[P_GO_REQ] = 4 if each_kind else r.go_out_requires
    p[P_GO_BONUS], p[P_CONC_BONUS] = r.go_out_bonus, r.concealed_bonus
    p[P_CAP] = r.max_meld_size or 0
    p[P_WILD_BONUS], p[P_SEVENS_BONUS] = r.wild_canasta_bonus, r.sevens_canasta_bonus
    p[P_TAKE_WILD] = int(r.pile_take_with_wild)
    p[P_B3_MAX] = r.max_black_three_meld or 1 << 20
    p[P_GO_DISCARD] = int(r.go_out_needs_discard)
    p[P_SEVEN_RULE] = SEVEN_RULES.index(r.seven_discard_rule)
    p[P_RES_SIZE], p[P_RES_PICKUP] = r.reserve_size, PICKUP_MODES.index(r.reserve_pickup)
    p[P_ASK], p[P_CONC_MIN] = int(r.ask_partner), int(r.concealed_requires_minimum)
    p[P_PILE_REQ_OPEN] = int(r.pile_take_requires_opened_side)
    p[P_FORBID_SINGLE] = int(r.forbid_single_card_pile_take)
    p[P_LAST_RED3] = LAST_RED3_MODES.index(r.last_card_red3)
    p[P_EXH] = EXH_MODES.index(r.exhausted_stock_take)
    p[P_TARGET], p[P_TIE] = r.target_score, int(r.tie_rule == "draw")
    p[P_MAX_HANDS], p[P_MAX_STEPS] = r.max_hands, r.max_steps_per_hand
    p[P_EPISODE_GAME] = int(episode == "game")
    p[P_PACKS], p[P_JOKERS], p[P_DECK] = r.packs, r.jokers, r.deck_size
    table = r.initial_meld_table
    if len(table) > 8:
        raise ValueError("initial_meld_table has more than 8 rows")
    p[P_MTAB_N] = len(table)
    for i, (lower, minimum) in enumerate(table):
        p[P_MTAB_LO + i] = MIN_TABLE_NEG_INF if lower is None else lower
        p[P_MTAB_MIN + i] = minimum
    p[P_OBS_DISCARDS] = int(r.observe_discards)
    per = block_rows(p)
    pos = HEADER
    for key, rows, width in ROW_BLOCKS:
        p[key] = pos
        pos += per[rows] * (r.deck_size if width == "deck" else int(width))
    p[P_WIDTH] = pos
    counts = kinds_per_pack(r.jokers, r.packs)
    assert counts.sum() == r.deck_size
    return p


def deck_counts(params: np.ndarray) -> np.ndarray:
    """Count of each card kind in the deck these parameters describe."""
    from canasta_env.engine.cards import kinds_per_pack

    return kinds_per_pack(int(params[P_JOKERS]), int(params[P_PACKS]))
