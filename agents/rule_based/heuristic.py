"""Heuristic agent: a rule-based Canasta player that plays for canastas and discards safely.

It sees only its observation (``agents._obs`` turns it back into counts) and the legal-action mask.
Numbers in brackets are the defaults of ``HeuristicConfig``.

**Reading the table.** A side's *table value* is its melded cards' values, its canasta bonuses
(500 natural, 300 mixed) and 100 per red three. The *threat* is on when an opponent may go out
soon: an opponent side has the canastas going out needs and a seat of it holds at most
[``threat_hand`` = 3] cards, or the stock has at most [``late_stock`` = 6] cards.

**Taking the pile** only when it is big enough to beat a stock draw (a draw brings fresh cards
and red threes; taking a small pile every turn stalls the hand). With a two-card draw (2 players):
a natural pair takes a pile of at least [``pair_take_pile`` = 8] cards, a lay-off on an own meld
one of at least [``layoff_take_pile`` = 6], and a wild is never spent on a take
[``wild_take_pile`` = 100]. With a one-card draw (3-4 players): pair 4, lay-off 1, natural + wild 4
(a two is spent before a joker). These thresholds were tuned against the greedy agent (a pile
taken at any size cost about 400 points a hand in 2p). Otherwise draw; with an empty stock, a pair
take of any size, else ``END_HAND``.

**Melding.** Naturals first: add a natural to an own meld, then meld three naturals (higher
value first). Pairs stay in hand (they are what takes the pile). Wilds are held for canastas: a
wild is added to a meld of 6 cards (completes a canasta) or of 5 cards when two wilds are in hand,
never onto a natural canasta unless dumping. Wilds are melded freely only while opening (the turn
has not reached the minimum yet), in the final-meld phase, under threat (a wild left in hand costs
its value twice), or when going out is allowed and the side has the canastas it needs or at most 3
cards are left. With the four canasta kinds (Railroad, Pennies) wilds start and grow a wild-only
meld first (its canasta pays 1000 and going out needs one).

**Going out when ahead.** Going out is allowed when own table value + the going-out bonus beats the
best opponent side's table value less its hand (estimated at [``card_estimate`` = 8] points a
card), or under threat. Otherwise the agent keeps two cards in hand (no meld that would leave fewer)
and keeps building; with a partner asking, it answers by the same test.

**Discarding safely.** Each discard gets a cost, the lowest is played:
 * usefulness: singleton naturals cost their value, pairs +60 (kept for taking the pile), triples
   +90, a natural of a rank the own side has melded +30; black threes 25 (a black three is a safe
   stop card: nobody may take the pile over it), 0 when the pile holds at least [``b3_pile`` = 5]
   cards (stop a juicy pile); twos 300, jokers 400;
 * danger, times ``1 + pile size / 6`` (a bigger pile makes a gift worse): the next player's side
   has a meld of the rank and the pile is not frozen for it (+80, lay-off take); the next player is
   known to hold two of the rank (+100) or one with an unfrozen pile (+50); 4 per card of the rank
   not seen anywhere (hand, pile, melds, known cards), a proxy for an unknown pair;
 * freezing: with a pile of at least [``freeze_pile`` = 10] cards that is not frozen yet and an
   opened next side, a two costs 140 and a joker 160, so a wild is discarded to freeze the pile when
   every natural discard is dangerous.

The style profiles of ``agents.rule_based.styles`` change these thresholds and five more: cards held back
while going out is not allowed [``keep_cards`` = 2], the danger's weight [``danger_weight`` = 1],
the cost of a two discarded to freeze [``freeze_cost`` = 140], the extra cost of breaking a pair
[``pair_keep`` = 60], and wilds melded freely at any time [``wild_free`` = off].

Deterministic: the rng is never used (ties go to the lowest action index).

**Kernel inputs.** The compiled kernel reads three arrays: ``off`` (where each observation piece
it reads starts), ``prm`` (the rules' numbers) and ``cfg`` (the ``HeuristicConfig`` fields). What
each holds is declared once, as the name tuples ``KERNEL_PIECES``, ``KERNEL_PARAMS`` and
``KERNEL_CONFIG``; the arrays are filled by name from them and read through index records made from
them (``off[PIECE.melds]``, ``cfg[CFG.go_out_margin]``), so the order of the observation's pieces or
of the dataclass's fields cannot change play. The declarations sit in this file because numba's
cache watches only the file of a compiled function, and the inputs are plain arrays because numba
can mix up functions compiled for two layouts of a structured record in one process. The draw, the
answer to a partner, the melds and the discard are each chosen by their own function.
"""

from __future__ import annotations

import dataclasses
from collections import namedtuple
from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit

from agents._obs import PIECE_ORDER, ObsDecoder
from agents.rule_based.heuristic_config import HeuristicConfig
from agents.rule_based.styles import style_config
from canasta_env.engine.actions import (
    ADD_JOKER,
    ADD_NATURAL,
    ADD_TWO,
    ANSWER_NO,
    ANSWER_YES,
    DISCARD,
    DRAW_STOCK,
    END_HAND,
    MELD_NN2,
    MELD_NNJ,
    MELD_NNN,
    MELD_WILD,
    NUM_ACTIONS,
    TAKE_PILE_LAYOFF,
    TAKE_PILE_NAT_JOKER,
    TAKE_PILE_NAT_TWO,
    TAKE_PILE_PAIR,
)
from canasta_env.engine.cards import CARD_VALUES, SLOT_KIND
from canasta_env.engine.layout import (
    P_CAP,
    P_GO_BONUS,
    P_GO_REQ,
    P_MIX_BONUS,
    P_NAT_BONUS,
    P_PACKS,
    P_RED3_BONUS,
)
from canasta_env.rules import RuleSet

__all__ = ["CFG", "KERNEL_CONFIG", "KERNEL_PARAMS", "KERNEL_PIECES", "PARAM", "PIECE", "HeuristicAgent",
           "HeuristicConfig", "config_values", "heuristic_kernel", "piece_offsets", "rule_params"]


KERNEL_PIECES = ("hand", "hand_sizes", "known", "red_threes", "melds", "opened", "pile_counts",
                 "pile_size", "pile_frozen", "stock_size", "phase", "turn")
KERNEL_PARAMS = ("go_req", "go_bonus", "nat_bonus", "mix_bonus", "red3_bonus", "per_rank", "meld_cap")
KERNEL_CONFIG = ("wild_take_pile", "threat_hand", "late_stock", "card_estimate", "b3_pile",
                 "freeze_pile", "pair_take_pile", "go_out_margin", "dump_canastas", "layoff_take_pile",
                 "keep_cards", "danger_weight", "freeze_cost", "pair_keep", "wild_free")


def _indices(name: str, fields: tuple[str, ...]) -> Any:
    """A named tuple whose field ``f`` holds the index of ``f`` in ``fields``."""
    return namedtuple(name, fields)._make(range(len(fields)))


PIECE = _indices("PieceIndex", KERNEL_PIECES)
PARAM = _indices("ParamIndex", KERNEL_PARAMS)
CFG = _indices("ConfigIndex", KERNEL_CONFIG)


def piece_offsets(decoder: ObsDecoder) -> npt.NDArray[np.int64]:
    """The kernel's ``off``: the start of each piece of ``KERNEL_PIECES`` in the decoder's layout."""
    starts = dict(zip(PIECE_ORDER, decoder.offsets.tolist(), strict=True))
    return np.array([starts[name] for name in KERNEL_PIECES], dtype=np.int64)


def rule_params(decoder: ObsDecoder) -> npt.NDArray[np.float64]:
    """The kernel's ``prm``: the rules' numbers of ``KERNEL_PARAMS`` for the decoder's preset (going
    out: canastas needed and bonus; canasta bonuses; naturals of one rank in the deck; the meld cap,
    > 0 with the four canasta kinds of R2 and P2)."""
    p = decoder.params
    values = {"go_req": p[P_GO_REQ], "go_bonus": p[P_GO_BONUS], "nat_bonus": p[P_NAT_BONUS],
              "mix_bonus": p[P_MIX_BONUS], "red3_bonus": p[P_RED3_BONUS], "per_rank": 4 * p[P_PACKS],
              "meld_cap": p[P_CAP]}
    return np.array([values[name] for name in KERNEL_PARAMS], dtype=np.float64)


def config_values(config: HeuristicConfig) -> npt.NDArray[np.float64]:
    """The kernel's ``cfg``: ``config``'s fields in the order of ``KERNEL_CONFIG``, looked up by name."""
    names = {field.name for field in dataclasses.fields(config)}
    if names != set(KERNEL_CONFIG):
        raise ValueError("HeuristicConfig and KERNEL_CONFIG disagree on "
                         f"{sorted(names ^ set(KERNEL_CONFIG))}")
    return np.array([getattr(config, name) for name in KERNEL_CONFIG], dtype=np.float64)


@njit(cache=True, nogil=True, inline="always")
def _table_value(row, off, side, sides, owners, prm):
    """(table value, canastas) of relative side ``side``: its melds, or its players' (G2: relative
    owner j is on relative side j % sides)."""
    value = 0.0
    canastas = 0
    for owner in range(side, owners, sides):
        for slot in range(13):
            base = off[PIECE.melds] + (owner * 13 + slot) * 3
            nat, jok, two = row[base], row[base + 1], row[base + 2]
            if nat == 0:
                continue
            kind = SLOT_KIND[slot]
            value += nat * CARD_VALUES[kind] + jok * 50 + two * 20
            if slot < 11 and nat + jok + two >= 7:
                canastas += 1
                value += prm[PARAM.mix_bonus] if jok + two > 0 else prm[PARAM.nat_bonus]
    value += row[off[PIECE.red_threes] + side] * prm[PARAM.red3_bonus]
    return value, canastas


@njit(cache=True, nogil=True, inline="always")
def _read_table(row, off, n, sides, owners, prm, cfg):
    """(own canastas, threat, going out allowed): "Reading the table" and "Going out when ahead"
    in the module docstring."""
    my_val, my_canastas = _table_value(row, off, 0, sides, owners, prm)
    opp_val = -1e9
    threat = row[off[PIECE.stock_size]] <= cfg[CFG.late_stock]
    for side in range(1, sides):
        v, c = _table_value(row, off, side, sides, owners, prm)
        cards = 0
        smallest = 1 << 20
        for j in range(n):
            if j % sides == side:
                cards += row[off[PIECE.hand_sizes] + j]
                smallest = min(smallest, row[off[PIECE.hand_sizes] + j])
        if c >= prm[PARAM.go_req] and smallest <= cfg[CFG.threat_hand]:
            threat = True
        opp_val = max(opp_val, v - cfg[CFG.card_estimate] * cards)
    go_out_ok = threat or (my_val + prm[PARAM.go_bonus] - opp_val > cfg[CFG.go_out_margin])
    return my_canastas, threat, go_out_ok


@njit(cache=True, nogil=True, inline="always")
def _draw_choice(m, psize, cfg):
    """Take the pile when it pays, else draw; with an empty stock a pair take, else END_HAND."""
    if m[TAKE_PILE_PAIR] and psize >= cfg[CFG.pair_take_pile]:
        return TAKE_PILE_PAIR
    if m[TAKE_PILE_LAYOFF] and psize >= cfg[CFG.layoff_take_pile]:
        return TAKE_PILE_LAYOFF
    if m[TAKE_PILE_NAT_TWO] and psize >= cfg[CFG.wild_take_pile]:
        return TAKE_PILE_NAT_TWO
    if m[TAKE_PILE_NAT_JOKER] and psize >= cfg[CFG.wild_take_pile]:
        return TAKE_PILE_NAT_JOKER
    if m[DRAW_STOCK]:
        return DRAW_STOCK
    if m[TAKE_PILE_PAIR]:
        return TAKE_PILE_PAIR
    if m[END_HAND]:
        return END_HAND
    return -1


@njit(cache=True, nogil=True, inline="always")
def _answer_choice(m, go_out_ok):
    """The answer to a partner's "may I go out?": yes when going out is allowed."""
    if go_out_ok and m[ANSWER_YES]:
        return ANSWER_YES
    if m[ANSWER_NO]:
        return ANSWER_NO
    return -1


@njit(cache=True, nogil=True, inline="always")
def _meld_choice(m, row, off, h, wilds, wild_free, keep, wild_melds):
    """The preferred meld ("Melding" in the module docstring), -1 for none: ``h`` cards in hand,
    ``wilds`` of them wild, ``keep`` cards to keep in hand."""
    choice = -1
    best = 0.0
    for slot in range(13):
        kind = SLOT_KIND[slot]
        v = 0.0
        if kind >= 0:
            v = float(CARD_VALUES[kind])
        base = off[PIECE.melds] + slot * 3
        size = row[base] + row[base + 1] + row[base + 2]
        natural_canasta = size >= 7 and row[base + 1] + row[base + 2] == 0
        if m[ADD_NATURAL + slot] and h - 1 >= keep and 900.0 + v > best:
            best = 900.0 + v
            choice = ADD_NATURAL + slot
        if m[MELD_NNN + slot] and h - 3 >= keep and 800.0 + 3 * v > best:
            best = 800.0 + 3 * v
            choice = MELD_NNN + slot
        if h - 1 >= keep:
            for act, bonus in ((ADD_TWO, 5.0), (ADD_JOKER, 0.0)):
                if not m[act + slot]:
                    continue
                score = 0.0
                if size == 6:
                    score = 700.0
                elif size == 5 and wilds >= 2:
                    score = 650.0
                elif natural_canasta:
                    score = 100.0 if wild_free else 0.0
                elif wild_free:
                    score = 300.0
                if score > 0 and score + bonus > best:
                    best = score + bonus
                    choice = act + slot
        if wild_free and h - 3 >= keep:
            for act, bonus in ((MELD_NN2, 5.0), (MELD_NNJ, 0.0)):
                if m[act + slot] and 400.0 + 2 * v + bonus > best:
                    best = 400.0 + 2 * v + bonus
                    choice = act + slot
    wild_meld_score = 750.0 if wild_melds else 200.0
    for j in range(4):
        if (wild_free or wild_melds) and h - 3 >= keep and m[MELD_WILD + j] \
                and wild_meld_score > best:
            best = wild_meld_score
            choice = MELD_WILD + j
    if wild_melds and h - 1 >= keep:  # grow the wild-only meld (its canasta pays 1000)
        for act in (ADD_JOKER, ADD_TWO):
            if m[act + 11] and 760.0 > best:
                best = 760.0
                choice = act + 11
    return choice


@njit(cache=True, nogil=True, inline="always")
def _danger(row, off, k, next_side, frozen_next, n, owners, per_rank):
    """Danger of discarding natural kind ``k`` (before the pile-size weight): what the next player
    may do with it, and the cards of its rank not seen anywhere."""
    slot = k - 4
    danger = 0.0
    if row[off[PIECE.melds] + (next_side * 13 + slot) * 3] > 0 and not frozen_next:
        danger += 80.0
    kn = row[off[PIECE.known] + k]  # the next player is the first of the known seats
    if kn >= 2:
        danger += 100.0
    elif kn == 1 and not frozen_next:
        danger += 50.0
    seen = row[off[PIECE.hand] + k] + row[off[PIECE.pile_counts] + k]
    for owner in range(owners):
        seen += row[off[PIECE.melds] + (owner * 13 + slot) * 3]
    for j in range(n - 1):
        seen += row[off[PIECE.known] + j * 15 + k]
    unseen = max(per_rank - seen, 0.0)
    danger += 4.0 * unseen
    return danger


@njit(cache=True, nogil=True, inline="always")
def _discard_choice(m, row, off, n, sides, owners, prm, cfg):
    """The cheapest legal discard ("Discarding safely" in the module docstring), -1 for none."""
    psize = row[off[PIECE.pile_size]]
    frozen_all = row[off[PIECE.pile_frozen]] > 0
    next_side = 1 % sides
    next_open = row[off[PIECE.opened] + next_side] > 0
    frozen_next = frozen_all or not next_open
    w = 1.0 + psize / 6.0
    freeze = (not frozen_all) and next_open and psize >= cfg[CFG.freeze_pile]
    choice = -1
    best = 1e18
    for k in range(15):
        if not m[DISCARD + k]:
            continue
        c = row[off[PIECE.hand] + k]
        if k == 0:
            cost = cfg[CFG.freeze_cost] + 20.0 if freeze else 400.0
        elif k == 1:
            cost = cfg[CFG.freeze_cost] if freeze else 300.0
        elif k == 3:
            cost = 0.0 if psize >= cfg[CFG.b3_pile] else 25.0
        else:
            v = float(CARD_VALUES[k])
            if c >= 3:
                cost = 90.0 + v
            elif c == 2:
                cost = cfg[CFG.pair_keep] + v
            else:
                cost = v
            if row[off[PIECE.melds] + (k - 4) * 3] > 0:
                cost += 30.0
            danger = _danger(row, off, k, next_side, frozen_next, n, owners, prm[PARAM.per_rank])
            cost += w * cfg[CFG.danger_weight] * danger
        if cost < best:
            best = cost
            choice = DISCARD + k
    return choice


@njit(cache=True, nogil=True, inline="always")
def _fallback_choice(m):
    """Any meld, naturals first, then END_HAND (when no meld is preferred and no discard is legal:
    opening under way, or only going-out moves left); -1 for none."""
    choice = -1
    best = -1.0
    for slot in range(13):
        for act, score in ((ADD_NATURAL, 6.0), (MELD_NNN, 5.0), (ADD_TWO, 4.0),
                           (MELD_NN2, 3.0), (ADD_JOKER, 2.0), (MELD_NNJ, 1.0)):
            if m[act + slot] and score > best:
                best = score
                choice = act + slot
    for j in range(4):
        if m[MELD_WILD + j] and 0.5 > best:
            best = 0.5
            choice = MELD_WILD + j
    if choice < 0 and m[END_HAND]:
        choice = END_HAND
    return choice


@njit(cache=True, nogil=True, inline="always")
def _choose(m, row, off, n, sides, owners, prm, cfg):
    """The action of one decoded observation ``row`` with legal mask ``m``; -1 when no rule picks
    one."""
    phase = 0
    for i in range(5):
        if row[off[PIECE.phase] + i]:
            phase = i
    if phase == 0:
        return _draw_choice(m, row[off[PIECE.pile_size]], cfg)
    my_canastas, threat, go_out_ok = _read_table(row, off, n, sides, owners, prm, cfg)
    if phase == 2:
        return _answer_choice(m, go_out_ok)
    h = 0
    for k in range(15):
        h += row[off[PIECE.hand] + k]
    wilds = row[off[PIECE.hand]] + row[off[PIECE.hand] + 1]
    opening = row[off[PIECE.turn] + 1] > 0 and row[off[PIECE.turn]] < 100
    dump = go_out_ok and (my_canastas >= prm[PARAM.go_req] - cfg[CFG.dump_canastas] or h <= 3)
    wild_free = cfg[CFG.wild_free] > 0 or opening or phase == 3 or threat or dump
    keep = 0.0 if (go_out_ok or phase == 3) else cfg[CFG.keep_cards]  # cards to keep in hand
    choice = _meld_choice(m, row, off, h, wilds, wild_free, keep, prm[PARAM.meld_cap] > 0)
    if choice < 0:
        choice = _discard_choice(m, row, off, n, sides, owners, prm, cfg)
    if choice < 0:
        choice = _fallback_choice(m)
    return choice


@njit(cache=True, nogil=True)
def heuristic_kernel(g, mask, off, n, sides, owners, prm, cfg):
    """One action per row of the decoded observations ``g`` (``ObsDecoder.decode``) with legal masks
    ``mask``: ``off``, ``prm``, ``cfg`` as the module docstring says (``piece_offsets``,
    ``rule_params``, ``config_values``); ``n``, ``sides``, ``owners``: players, sides and meld owners.
    Takes the first legal action when no rule picks one; rows without a legal action get -1."""
    out = np.full(g.shape[0], -1, np.int64)
    for b in range(g.shape[0]):
        m = mask[b]
        first = -1
        for a in range(NUM_ACTIONS):
            if m[a]:
                first = a
                break
        if first < 0:
            continue
        choice = _choose(m, g[b], off, n, sides, owners, prm, cfg)
        out[b] = choice if choice >= 0 else first
    return out


class HeuristicAgent:
    """Rule-based player for one rules preset (strategy in the module docstring)."""

    name = "heuristic"
    needs_observations = True

    def __init__(self, rules: RuleSet | str, config: HeuristicConfig | None = None,
                 style: str | None = None) -> None:
        """``style``: a profile of ``agents.rule_based.styles`` with optional field changes (``"eager"``,
        ``"pile_fighter,freeze_pile=6"``); ``config`` and ``style`` are exclusive."""
        self.decoder = ObsDecoder(rules)
        self.rules = self.decoder.rules
        if style is not None:
            if config is not None:
                raise ValueError("heuristic agent: give a config or a style, not both")
            config = style_config(style, self.rules)
            self.name = f"heuristic:{style}"
        self.config = config or HeuristicConfig.for_rules(self.rules)
        self._off = piece_offsets(self.decoder)
        self._prm = rule_params(self.decoder)
        self._cfg = config_values(self.config)

    def act(self, observations: npt.NDArray[np.float32], legal_action_mask: npt.NDArray[np.bool_],
            rng: np.random.Generator | None = None) -> npt.NDArray[np.int64]:
        g = self.decoder.decode(observations)
        mask = np.ascontiguousarray(legal_action_mask, dtype=np.bool_)
        return heuristic_kernel(g, mask, self._off, self.decoder.num_players, self.decoder.num_sides,
                                self.decoder.num_owners, self._prm, self._cfg)
