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

**Strategic axes.** Further fields move the player to other corners of Canasta strategy; at their
defaults they change nothing of the above:
 * when to open: [``hold_open`` = off] holds the hand of a side that has not opened: after a stock
   draw it melds nothing from the hand (it opens by taking the pile) unless the hand alone can go
   out concealed this turn (every card melded but one discard, the canastas needed: it then melds
   everything, two naturals + a wild before wild additions) or the threat is on;
   [``open_take_discount`` = 0] lowers the pair and wild pile thresholds by that many cards while
   the side has not opened (the pile opens the hand);
 * wild cards: [``wild_keep`` = 0] wilds stay in hand, never melded, until going out is allowed or
   the threat is on (kept to freeze the pile or for a late canasta); [``wild_min_meld`` = 6] a wild
   is added to a meld of that many cards or more (lower: spent on melds sooner);
 * laying melds down: [``hold_new`` = 0] more cards kept in hand, on top of ``keep_cards``, when
   starting a new meld (a large hand keeps safe discards and pairs for the pile);
 * going out: [``go_out_extra`` = 0] canastas beyond the rules' requirement before going out
   unless under threat (``go_out_margin`` at ``GO_OUT_NEVER``: only under threat);
 * discards: [``fish`` = 0] taken off the cost of discarding from three or more of a rank (the pair
   left is the bait: an opponent who saw the rank go by may discard it, and the pair takes the
   pile); [``value_weight`` = 1] the weight of a card's value in its discard cost (negative: high
   cards are dumped first, cutting the count against the hand when an opponent goes out).

Deterministic: the rng is never used (ties go to the lowest action index).

**Kernel inputs.** The compiled kernel reads three arrays: ``off`` (where each observation piece
it reads starts), ``prm`` (the rules' numbers) and ``cfg`` (the ``HeuristicConfig`` fields). What
each holds is declared once in ``agents.rule_based.heuristic_choices``, as the name tuples
``KERNEL_PIECES``, ``KERNEL_PARAMS`` and ``KERNEL_CONFIG``; the arrays are filled by name from them
and read through index records made from them (``off[PIECE.melds]``, ``cfg[CFG.go_out_margin]``),
so the order of the observation's pieces or of the dataclass's fields cannot change play. The inputs
are plain arrays because numba can mix up functions compiled for two layouts of a structured record
in one process. The draw, the answer to a partner, the melds and the discard are each chosen by
their own function in ``heuristic_choices``, which this file's kernel inlines.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import numpy.typing as npt
from numba import njit

from agents._obs import PIECE_ORDER, ObsDecoder
from agents.rule_based.heuristic_choices import (
    CFG,
    KERNEL_CONFIG,
    KERNEL_PARAMS,
    KERNEL_PIECES,
    PARAM,
    PIECE,
    _answer_choice,
    _concealed_out,
    _discard_choice,
    _draw_choice,
    _fallback_choice,
    _meld_choice,
)
from agents.rule_based.heuristic_config import HeuristicConfig, check_ranges
from agents.rule_based.styles import style_config
from canasta_env.engine.actions import NUM_ACTIONS
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
from canasta_env.messages import short_repr
from canasta_env.rules import RuleSet

__all__ = ["CFG", "KERNEL_CONFIG", "KERNEL_PARAMS", "KERNEL_PIECES", "PARAM", "PIECE", "HeuristicAgent",
           "HeuristicConfig", "config_values", "heuristic_kernel", "piece_offsets", "rule_params"]


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
    ahead = my_val + prm[PARAM.go_bonus] - opp_val > cfg[CFG.go_out_margin]
    built = cfg[CFG.go_out_extra] <= 0 or my_canastas >= prm[PARAM.go_req] + cfg[CFG.go_out_extra]
    go_out_ok = threat or (ahead and built)
    return my_canastas, threat, go_out_ok


@njit(cache=True, nogil=True, inline="always")
def _choose(m, row, off, n, sides, owners, prm, cfg):
    """The action of one decoded observation ``row`` with legal mask ``m``; -1 when no rule picks
    one."""
    phase = 0
    for i in range(5):
        if row[off[PIECE.phase] + i]:
            phase = i
    if phase == 0:
        return _draw_choice(m, row[off[PIECE.pile_size]], row[off[PIECE.opened]] > 0, cfg)
    my_canastas, threat, go_out_ok = _read_table(row, off, n, sides, owners, prm, cfg)
    if phase == 2:
        return _answer_choice(m, go_out_ok)
    h = 0
    for k in range(15):
        h += row[off[PIECE.hand] + k]
    wilds = row[off[PIECE.hand]] + row[off[PIECE.hand] + 1]
    turn = off[PIECE.turn]
    opening = row[turn + 1] > 0 and row[turn] < 100
    dump = go_out_ok and (my_canastas >= prm[PARAM.go_req] - cfg[CFG.dump_canastas] or h <= 3)
    release = go_out_ok or phase == 3
    wild_free = cfg[CFG.wild_free] > 0 or opening or phase == 3 or threat or dump
    keep = 0.0 if release else cfg[CFG.keep_cards]  # cards to keep in hand
    keep_new = keep if release else keep + cfg[CFG.hold_new]
    wild_ok = wilds > cfg[CFG.wild_keep] or release or threat
    hold = False
    conceal = False  # the side started the turn unopened, drew, and holds its hand for the pile
    if cfg[CFG.hold_open] > 0 and row[turn + 1] > 0 and row[turn + 4] == 0 and not threat and phase != 3:
        conceal = row[turn] > 0 or _concealed_out(row, off, prm)  # melding this turn: go on
        hold = not conceal
    if conceal:
        keep, keep_new, wild_free, wild_ok = 0.0, 0.0, True, True
    choice = -1
    if not hold:
        choice = _meld_choice(m, row, off, h, wilds, wild_free, keep, keep_new, wild_ok,
                              cfg[CFG.wild_min_meld], conceal, prm[PARAM.meld_cap] > 0)
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
        if config is not None and not isinstance(config, HeuristicConfig):
            raise ValueError(f"heuristic agent: config = {short_repr(config)} is not a HeuristicConfig")
        outside = [] if config is None else check_ranges(config)  # as heuristic:FIELD=VALUE is checked
        if outside:
            raise ValueError(f"heuristic agent: config {outside[0]}")
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
        g, mask = self.decoder.inputs(observations, legal_action_mask, f"{self.name}: act")
        return heuristic_kernel(g, mask, self._off, self.decoder.num_players, self.decoder.num_sides,
                                self.decoder.num_owners, self._prm, self._cfg)
