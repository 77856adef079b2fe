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

The style profiles of ``agents.styles`` change these thresholds and five more: cards held back
while going out is not allowed [``keep_cards`` = 2], the danger's weight [``danger_weight`` = 1],
the cost of a two discarded to freeze [``freeze_cost`` = 140], the extra cost of breaking a pair
[``pair_keep`` = 60], and wilds melded freely at any time [``wild_free`` = off].

Deterministic: the rng is never used (ties go to the lowest action index).
"""

from __future__ import annotations

from dataclasses import astuple, dataclass

import numpy as np
import numpy.typing as npt
from numba import njit

from agents._obs import ObsDecoder
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


@dataclass(frozen=True)
class HeuristicConfig:
    """Thresholds of the heuristic strategy (see the module docstring). The defaults are for a
    two-card draw (2 players); ``for_rules`` gives the one-card-draw pile thresholds."""

    wild_take_pile: float = 100.0  # smallest pile taken with a natural + a wild
    threat_hand: float = 3.0
    late_stock: float = 6.0
    card_estimate: float = 8.0
    b3_pile: float = 5.0
    freeze_pile: float = 10.0
    pair_take_pile: float = 8.0  # smallest pile taken with a natural pair
    go_out_margin: float = 0.0
    dump_canastas: float = 0.0  # meld wilds freely with go-out canastas - this many, if ahead
    layoff_take_pile: float = 6.0  # smallest pile taken by laying the top card off
    keep_cards: float = 2.0  # cards held back from melding while going out is not allowed
    danger_weight: float = 1.0  # scales the danger part of a discard's cost
    freeze_cost: float = 140.0  # cost of a two discarded to freeze the pile (a joker: +20)
    pair_keep: float = 60.0  # extra cost of discarding from a pair (pairs take the pile)
    wild_free: float = 0.0  # > 0: meld wilds freely at any time, not only when opening or going out

    @classmethod
    def for_rules(cls, rules: RuleSet) -> HeuristicConfig:
        """Defaults tuned against the greedy agent for the rules' draw size."""
        if (rules.resolved().draw_count or 1) >= 2:
            return cls()
        return cls(wild_take_pile=4.0, pair_take_pile=4.0, layoff_take_pile=1.0)


@njit(cache=True)
def _table_value(g, o_melds, o_red3, side, sides, owners, nat_bonus, mix_bonus, red3_bonus):
    """(table value, canastas) of relative side ``side``: its melds, or its players' (G2: relative
    owner j is on relative side j % sides)."""
    value = 0.0
    canastas = 0
    for owner in range(side, owners, sides):
        for slot in range(13):
            base = o_melds + (owner * 13 + slot) * 3
            nat, jok, two = g[base], g[base + 1], g[base + 2]
            if nat == 0:
                continue
            kind = SLOT_KIND[slot]
            value += nat * CARD_VALUES[kind] + jok * 50 + two * 20
            if slot < 11 and nat + jok + two >= 7:
                canastas += 1
                value += mix_bonus if jok + two > 0 else nat_bonus
    value += g[o_red3 + side] * red3_bonus
    return value, canastas


@njit(cache=True)
def heuristic_kernel(g, mask, off, n, sides, owners, prm, cfg):
    """One action per row of the decoded observations ``g`` (``ObsDecoder.decode``). ``off``: piece
    offsets in ``PIECE_ORDER``; ``prm``: go-out canastas, go-out bonus, natural and mixed canasta
    bonus, red-three bonus, naturals of a rank in the deck; ``cfg``: ``HeuristicConfig`` fields.
    Rows without a legal action get -1."""
    o_hand, o_sizes, o_known, o_red3, o_melds, o_opened = off[0], off[1], off[2], off[3], off[4], off[5]
    o_pile, o_psize, o_frozen, o_stock, o_phase, o_turn = off[9], off[10], off[11], off[12], off[15], \
        off[16]
    go_req, go_bonus, nat_bonus, mix_bonus, red3_bonus = prm[0], prm[1], prm[2], prm[3], prm[4]
    per_rank = prm[5]
    wild_melds = prm[6] > 0  # four canasta kinds (R2, P2): wilds build wild-only canastas
    wild_take_pile, threat_hand, late_stock, card_est = cfg[0], cfg[1], cfg[2], cfg[3]
    b3_pile, freeze_pile, pair_take_pile, go_margin = cfg[4], cfg[5], cfg[6], cfg[7]
    dump_canastas, layoff_take_pile = cfg[8], cfg[9]
    keep_cards, danger_weight, freeze_cost, pair_keep, wild_free_always = cfg[10], cfg[11], cfg[12], \
        cfg[13], cfg[14] > 0
    out = np.full(g.shape[0], -1, np.int64)
    for b in range(g.shape[0]):
        m = mask[b]
        row = g[b]
        first = -1
        for a in range(NUM_ACTIONS):
            if m[a]:
                first = a
                break
        if first < 0:
            continue
        phase = 0
        for i in range(5):
            if row[o_phase + i]:
                phase = i
        h = 0
        for k in range(15):
            h += row[o_hand + k]
        wilds = row[o_hand] + row[o_hand + 1]
        psize = row[o_psize]
        stock = row[o_stock]
        frozen_all = row[o_frozen] > 0
        next_side = 1 % sides
        next_open = row[o_opened + next_side] > 0
        frozen_next = frozen_all or not next_open

        # ---- table reading: values, threat, going out ----
        my_val, my_canastas = _table_value(row, o_melds, o_red3, 0, sides, owners, nat_bonus, mix_bonus,
                                           red3_bonus)
        opp_val = -1e9
        threat = stock <= late_stock
        for side in range(1, sides):
            v, c = _table_value(row, o_melds, o_red3, side, sides, owners, nat_bonus, mix_bonus,
                                red3_bonus)
            cards = 0
            smallest = 1 << 20
            for j in range(n):
                if j % sides == side:
                    cards += row[o_sizes + j]
                    smallest = min(smallest, row[o_sizes + j])
            if c >= go_req and smallest <= threat_hand:
                threat = True
            opp_val = max(opp_val, v - card_est * cards)
        go_out_ok = threat or (my_val + go_bonus - opp_val > go_margin)

        choice = -1
        if phase == 0:  # draw: take the pile when it pays
            if m[TAKE_PILE_PAIR] and psize >= pair_take_pile:
                choice = TAKE_PILE_PAIR
            elif m[TAKE_PILE_LAYOFF] and psize >= layoff_take_pile:
                choice = TAKE_PILE_LAYOFF
            elif m[TAKE_PILE_NAT_TWO] and psize >= wild_take_pile:
                choice = TAKE_PILE_NAT_TWO
            elif m[TAKE_PILE_NAT_JOKER] and psize >= wild_take_pile:
                choice = TAKE_PILE_NAT_JOKER
            elif m[DRAW_STOCK]:
                choice = DRAW_STOCK
            elif m[TAKE_PILE_PAIR]:
                choice = TAKE_PILE_PAIR
            elif m[END_HAND]:
                choice = END_HAND
        elif phase == 2:  # answer a partner's "may I go out?"
            if go_out_ok and m[ANSWER_YES]:
                choice = ANSWER_YES
            elif m[ANSWER_NO]:
                choice = ANSWER_NO
        else:
            discard_legal = False
            for k in range(15):
                if m[DISCARD + k]:
                    discard_legal = True
            opening = row[o_turn + 1] > 0 and row[o_turn] < 100
            dump = go_out_ok and (my_canastas >= go_req - dump_canastas or h <= 3)
            wild_free = wild_free_always or opening or phase == 3 or threat or dump
            keep = 0.0 if (go_out_ok or phase == 3) else keep_cards  # cards to keep in hand
            best = 0.0
            for slot in range(13):
                kind = SLOT_KIND[slot]
                v = 0.0
                if kind >= 0:
                    v = float(CARD_VALUES[kind])
                base = o_melds + slot * 3
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
            if choice < 0 and discard_legal:
                w = 1.0 + psize / 6.0
                freeze = (not frozen_all) and next_open and psize >= freeze_pile
                best = 1e18
                for k in range(15):
                    if not m[DISCARD + k]:
                        continue
                    c = row[o_hand + k]
                    if k == 0:
                        cost = freeze_cost + 20.0 if freeze else 400.0
                    elif k == 1:
                        cost = freeze_cost if freeze else 300.0
                    elif k == 3:
                        cost = 0.0 if psize >= b3_pile else 25.0
                    else:
                        slot = k - 4
                        v = float(CARD_VALUES[k])
                        if c >= 3:
                            cost = 90.0 + v
                        elif c == 2:
                            cost = pair_keep + v
                        else:
                            cost = v
                        if row[o_melds + slot * 3] > 0:
                            cost += 30.0
                        danger = 0.0
                        if row[o_melds + (next_side * 13 + slot) * 3] > 0 and not frozen_next:
                            danger += 80.0
                        kn = row[o_known + k]  # the next player is the first of the known seats
                        if kn >= 2:
                            danger += 100.0
                        elif kn == 1 and not frozen_next:
                            danger += 50.0
                        seen = c + row[o_pile + k]
                        for owner in range(owners):
                            seen += row[o_melds + (owner * 13 + slot) * 3]
                        for j in range(n - 1):
                            seen += row[o_known + j * 15 + k]
                        unseen = max(per_rank - seen, 0.0)
                        danger += 4.0 * unseen
                        cost += w * danger_weight * danger
                    if cost < best:
                        best = cost
                        choice = DISCARD + k
            if choice < 0:
                # nothing preferred (opening under way, or only going-out moves left): any meld,
                # naturals first, then END_HAND
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
        if choice < 0:
            choice = first
        out[b] = choice
    return out


class HeuristicAgent:
    """Rule-based player for one rules preset (strategy in the module docstring)."""

    name = "heuristic"
    needs_observations = True

    def __init__(self, rules: RuleSet | str, config: HeuristicConfig | None = None,
                 style: str | None = None) -> None:
        """``style``: a profile of ``agents.styles`` with optional field changes (``"eager"``,
        ``"pile_fighter,freeze_pile=6"``); ``config`` and ``style`` are exclusive."""
        self.decoder = ObsDecoder(rules)
        self.rules = self.decoder.rules
        if style is not None:
            if config is not None:
                raise ValueError("heuristic agent: give a config or a style, not both")
            from agents.styles import style_config

            config = style_config(style, self.rules)
            self.name = f"heuristic:{style}"
        self.config = config or HeuristicConfig.for_rules(self.rules)
        p = self.decoder.params
        self._prm = np.array([p[P_GO_REQ], p[P_GO_BONUS], p[P_NAT_BONUS], p[P_MIX_BONUS],
                              p[P_RED3_BONUS], 4 * p[P_PACKS], p[P_CAP]], dtype=np.float64)
        self._cfg = np.array(astuple(self.config), dtype=np.float64)

    def act(self, observations: npt.NDArray[np.float32], legal_action_mask: npt.NDArray[np.bool_],
            rng: np.random.Generator | None = None) -> npt.NDArray[np.int64]:
        g = self.decoder.decode(observations)
        mask = np.ascontiguousarray(legal_action_mask, dtype=np.bool_)
        return heuristic_kernel(g, mask, self.decoder.offsets, self.decoder.num_players,
                                self.decoder.num_sides, self.decoder.num_owners, self._prm, self._cfg)
