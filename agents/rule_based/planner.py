"""Planner: a rule player of another kind than the heuristic, which scores every legal move.

The heuristic is a cascade of rules with thresholds; the planner instead gives each legal action a
value, the change it makes to one evaluation of the table and hand, and plays the best. It is a
second decision procedure for evaluation and for training against: an agent that beats every
heuristic profile has met one way of playing, and the planner is another.

**The evaluation.** Points on the own side's table count once (``meld_weight``); a meld grows in
worth toward a canasta (``grow_weight`` per card past three, the canasta bonus when it closes); a
wild spent on a meld costs ``wild_cost`` unless it closes a canasta; cards kept in hand are worth
``hand_weight`` each down to ``hand_floor`` cards (what keeps pairs for the pile and safe
discards) and the hand's points count against it by ``risk`` once an opponent side could go out.

**Draw.** A take is worth ``take_weight`` per card in the pile, plus ``fit_weight`` per natural of
the pile that matches an own meld or a pair in hand, less ``wild_cost`` for a two it spends (and
``JOKER_OVER_TWO`` more for a joker); a stock draw is worth ``draw_value``. The larger wins. With
an empty stock: a take if legal, else ``END_HAND``.

**Going out.** Out-mode is on when the own side has the canastas going out needs and either an
opponent side could go out (its canastas and a small hand) or the own table beats the best opponent
table by ``out_margin`` counting the going-out bonus. In out-mode every meld is worth its points
plus ``out_push``, so the hand is emptied; otherwise the hand keeps ``hand_floor`` cards.

**Discard.** The cheapest legal discard: what the card is worth to keep (its points times
``keep_weight``, ``pair_keep`` for a pair, ``meld_keep`` when the own side has that rank's meld,
wilds and black threes apart) plus ``safety`` times its danger (the next side melded the rank and
may take the pile with it, is known to hold it, or the rank is not yet seen), less ``seen_bonus``
per card of the rank lying in the pile (a rank discarded before and left there is one the next
player did not want).

Profiles (``planner:PROFILE[,FIELD=VALUE...]``): ``balanced`` (the defaults), ``racer`` (lays
everything down, goes out at once), ``banker`` (keeps a large hand, takes the pile, discards
safely), ``gambler`` (takes every pile, spends wilds freely). Deterministic: the rng is unused.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from numba import njit

from agents._obs import PIECE_ORDER, ObsDecoder
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
from canasta_env.engine.cards import CARD_VALUES
from canasta_env.engine.layout import P_GO_BONUS, P_GO_REQ, P_MIX_BONUS, P_NAT_BONUS, P_PACKS
from canasta_env.messages import short_repr
from canasta_env.rules import RuleSet

# The evaluation's weights (their defaults), in the kernel's order; each profile changes some of them.
FIELDS: dict[str, float] = {
    "meld_weight": 1.0, "grow_weight": 25.0, "wild_cost": 45.0, "hand_weight": 30.0, "hand_floor": 3.0,
    "risk": 1.0, "take_weight": 10.0, "fit_weight": 15.0, "draw_value": 45.0, "out_margin": 0.0,
    "out_push": 100.0, "keep_weight": 1.0, "pair_keep": 50.0, "meld_keep": 25.0, "safety": 1.0,
    "seen_bonus": 20.0, "threat_hand": 4.0,
}
# Each weight's range: a profile's values and FIELD=VALUE changes stay inside it, and the rule-space
# exploiter (``canasta exploit --family planner``) searches it.
FIELD_RANGES: dict[str, tuple[float, float]] = {
    "meld_weight": (0.0, 3.0), "grow_weight": (0.0, 80.0), "wild_cost": (0.0, 150.0),
    "hand_weight": (0.0, 100.0), "hand_floor": (0.0, 10.0), "risk": (0.0, 3.0), "take_weight": (0.0, 40.0),
    "fit_weight": (0.0, 50.0),
    "draw_value": (0.0, 200.0), "out_margin": (-2000.0, 2000.0), "out_push": (0.0, 300.0),
    "keep_weight": (-1.0, 3.0), "pair_keep": (0.0, 150.0), "meld_keep": (0.0, 100.0), "safety": (0.0, 5.0),
    "seen_bonus": (0.0, 60.0), "threat_hand": (0.0, 8.0),
}
PROFILES: dict[str, dict[str, float]] = {
    "balanced": {},
    "racer": {"hand_weight": 5.0, "hand_floor": 1.0, "grow_weight": 10.0, "wild_cost": 15.0,
              "out_margin": -2000.0, "draw_value": 60.0},
    "banker": {"hand_weight": 60.0, "hand_floor": 6.0, "take_weight": 14.0, "draw_value": 30.0,
               "safety": 2.5, "out_margin": 600.0, "wild_cost": 80.0},
    "gambler": {"take_weight": 25.0, "draw_value": 0.0, "wild_cost": 0.0, "safety": 0.3,
                "pair_keep": 20.0, "threat_hand": 2.0},
    # found by CMA-ES against heuristic, heuristic:eager and heuristic:pile_hoarder at once (never a
    # net), rounded: at classic_2p (collector) and classic_4p (picker); docs/agents.md
    "collector": {"meld_weight": 0.4, "grow_weight": 20.0, "wild_cost": 50.0, "hand_weight": 47.0,
                  "hand_floor": 10.0, "risk": 0.5, "take_weight": 40.0, "fit_weight": 1.5, "draw_value": 90.0,
                  "out_margin": -1400.0, "out_push": 114.0, "keep_weight": 1.3, "pair_keep": 2.0,
                  "meld_keep": 45.0, "safety": 4.4, "seen_bonus": 1.0, "threat_hand": 1.3},
    "picker": {"meld_weight": 1.5, "grow_weight": 7.5, "wild_cost": 80.0, "hand_weight": 5.0,
               "hand_floor": 0.5, "risk": 2.3, "take_weight": 40.0, "fit_weight": 39.0, "draw_value": 133.0,
               "out_margin": -870.0, "out_push": 176.0, "keep_weight": 2.2, "pair_keep": 79.0,
               "meld_keep": 0.7, "safety": 0.5, "seen_bonus": 46.0, "threat_hand": 8.0},
}
JOKER_OVER_TWO = 30.0  # a joker spent on a take costs this more than a two (it is worth 50, a two 20)
_PIECE = {name: i for i, name in enumerate(PIECE_ORDER)}
HAND, SIZES, KNOWN, MELDS, OPENED = (_PIECE[p] for p in ("hand", "hand_sizes", "known", "melds", "opened"))
PCOUNT, PSIZE, FROZEN, STOCK, PHASE = (_PIECE[p] for p in ("pile_counts", "pile_size", "pile_frozen",
                                                             "stock_size", "phase"))
(MELD_W, GROW_W, WILD_C, HAND_W, FLOOR, RISK, TAKE_W, FIT_W, DRAW_V, OUT_M, OUT_P, KEEP_W, PAIR_K,
 MELD_K, SAFETY, SEEN_B, THREAT_H) = range(len(FIELDS))


def planner_config(spec: str) -> npt.NDArray[np.float64]:
    """The weights of ``PROFILE[,FIELD=VALUE...]`` (an empty spec: ``balanced``), or a one-line
    ``ValueError`` naming the unknown profile, field or bad value, or a field given twice (which of
    two values was meant: the last one was played in silence)."""
    if not isinstance(spec, str):
        raise ValueError(f"planner: spec {short_repr(spec)} is not a string")
    parts = [p.strip() for p in spec.split(",")] if spec.strip() else ["balanced"]
    name, changes = parts[0], parts[1:]
    if "=" in name:
        name, changes = "balanced", parts
    if name not in PROFILES:
        raise ValueError(f"planner: unknown profile {short_repr(name)}; profiles: {', '.join(PROFILES)}")
    values = {**FIELDS, **PROFILES[name]}
    given: set[str] = set()  # FIELD=VALUE fields: each once (they may override the profile's)
    for change in changes:
        field, eq, text = change.partition("=")
        field = field.strip()
        if not eq or field not in FIELDS:
            raise ValueError(f"planner: {short_repr(change)} is not FIELD=VALUE with a field of: "
                             f"{', '.join(FIELDS)}")
        if field in given:
            raise ValueError(f"planner: {field} is given twice")
        given.add(field)
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"planner: {field} = {short_repr(text.strip())} is not a number") from None
        low, high = FIELD_RANGES[field]
        if not (math.isfinite(value) and low <= value <= high):
            raise ValueError(f"planner: {field} = {short_repr(text.strip())} is outside [{low:g}, {high:g}]")
        values[field] = value
    return np.array([values[f] for f in FIELDS], dtype=np.float64)


@njit(cache=True, nogil=True)
def _side_table(row, off, side, sides, owners, nat_bonus, mix_bonus):
    """(points on the table, canastas) of relative side ``side``."""
    value = 0.0
    canastas = 0
    for owner in range(side, owners, sides):
        for slot in range(11):
            b = off[MELDS] + (owner * 13 + slot) * 3
            nat, jok, two = row[b], row[b + 1], row[b + 2]
            if nat == 0:
                continue
            value += nat * CARD_VALUES[slot + 4] + jok * 50 + two * 20
            if nat + jok + two >= 7:
                canastas += 1
                value += mix_bonus if jok + two > 0 else nat_bonus
    return value, canastas


@njit(cache=True, nogil=True)
def _meld_gain(a, row, off, cfg, hand_n, out_mode, threat, nat_bonus, mix_bonus):
    """The value of meld action ``a``: points laid down, growth toward a canasta, wilds spent, hand
    kept; in out-mode points and ``out_push``."""
    nats = wilds = 0
    slot = -1
    if MELD_NNN <= a < MELD_NNN + 13:
        slot, nats = a - MELD_NNN, 3
    elif MELD_NNJ <= a < MELD_NNJ + 13:
        slot, nats, wilds = a - MELD_NNJ, 2, 50
    elif MELD_NN2 <= a < MELD_NN2 + 13:
        slot, nats, wilds = a - MELD_NN2, 2, 20
    elif ADD_NATURAL <= a < ADD_NATURAL + 13:
        slot, nats = a - ADD_NATURAL, 1
    elif ADD_JOKER <= a < ADD_JOKER + 13:
        slot, wilds = a - ADD_JOKER, 50
    elif ADD_TWO <= a < ADD_TWO + 13:
        slot, wilds = a - ADD_TWO, 20
    else:  # a wild-only meld (Railroad, Pennies): points only
        return 100.0 * cfg[MELD_W] + (cfg[OUT_P] if out_mode else 0.0)
    moved = nats + (1 if wilds > 0 else 0)
    points = (nats * CARD_VALUES[slot + 4] if slot < 11 else nats * 5) + wilds
    size = 0
    mixed = False
    if slot < 11:
        b = off[MELDS] + slot * 3
        size = row[b] + row[b + 1] + row[b + 2]
        mixed = row[b + 1] + row[b + 2] > 0
    gain = cfg[MELD_W] * points
    if out_mode:
        return gain + cfg[OUT_P] * moved
    after = size + moved
    if after >= 7 > size:
        gain += mix_bonus if (mixed or wilds > 0) else nat_bonus
    elif after < 7:
        gain += cfg[GROW_W] * (after - max(size, 2))
    if wilds > 0 and not after >= 7 > size:
        gain -= cfg[WILD_C]
    for c in range(moved):  # cards leaving the hand below its floor
        if hand_n - c - 1 < cfg[FLOOR]:
            gain -= cfg[HAND_W]
    if threat:
        gain += cfg[RISK] * points
    return gain


@njit(cache=True, nogil=True)
def _danger(row, off, k, owners, sides, per_rank, frozen_next):
    """How likely discarding kind ``k`` gives the next player the pile."""
    d = 0.0
    nxt = 1 % sides
    for owner in range(nxt, owners, sides):
        if row[off[MELDS] + (owner * 13 + k - 4) * 3] > 0 and not frozen_next:
            d += 80.0
    held = row[off[KNOWN] + k]  # the next seat is the first of the others
    d += 100.0 if held >= 2 else (50.0 if held == 1 and not frozen_next else 0.0)
    seen = row[off[HAND] + k] + row[off[PCOUNT] + k] + row[off[KNOWN] + k]
    for owner in range(owners):
        seen += row[off[MELDS] + (owner * 13 + k - 4) * 3]
    d += 4.0 * max(0, per_rank - seen)
    return d


@njit(cache=True, nogil=True)
def _choose(m, row, off, n, sides, owners, prm, cfg):
    """The planner's action for one decoded observation ``row`` and legal mask ``m``, -1 if none."""
    go_req, go_bonus, nat_bonus, mix_bonus, per_rank = prm[0], prm[1], prm[2], prm[3], prm[4]
    phase = 0
    for i in range(5):
        if row[off[PHASE] + i]:
            phase = i
    hand_n = 0
    for k in range(15):
        hand_n += row[off[HAND] + k]
    psize = row[off[PSIZE]]
    if phase == 0:
        best, choice = -1e18, -1
        if m[DRAW_STOCK]:
            best, choice = cfg[DRAW_V], DRAW_STOCK
        fit = 0.0
        for k in range(4, 15):
            if row[off[PCOUNT] + k] > 0 and (row[off[MELDS] + (k - 4) * 3] > 0 or row[off[HAND] + k] >= 2):
                fit += row[off[PCOUNT] + k]
        take = cfg[TAKE_W] * psize + cfg[FIT_W] * fit
        for a, cost in ((TAKE_PILE_PAIR, 0.0), (TAKE_PILE_LAYOFF, 0.0), (TAKE_PILE_NAT_TWO, cfg[WILD_C]),
                        (TAKE_PILE_NAT_JOKER, cfg[WILD_C] + JOKER_OVER_TWO)):
            if m[a] and take - cost > best:
                best, choice = take - cost, a
        if choice < 0 and m[END_HAND]:
            choice = END_HAND
        return choice
    my_val, my_can = _side_table(row, off, 0, sides, owners, nat_bonus, mix_bonus)
    threat = False
    opp_best = -1e18
    for side in range(1, sides):
        v, c = _side_table(row, off, side, sides, owners, nat_bonus, mix_bonus)
        small = 1 << 20
        for j in range(side, n, sides):
            small = min(small, row[off[SIZES] + j])
        threat = threat or (c >= go_req and small <= cfg[THREAT_H]) or row[off[STOCK]] <= 4
        opp_best = max(opp_best, v)
    out_mode = my_can >= go_req and (threat or my_val + go_bonus - opp_best > cfg[OUT_M])
    if phase == 2:
        return ANSWER_YES if (out_mode and m[ANSWER_YES]) or not m[ANSWER_NO] else ANSWER_NO
    best, choice = 0.0 if phase != 3 else -1e18, -1
    for a in range(MELD_NNN, MELD_WILD + 4):
        if m[a]:
            g = _meld_gain(a, row, off, cfg, hand_n, out_mode, threat, nat_bonus, mix_bonus)
            if g > best:
                best, choice = g, a
    if choice >= 0:
        return choice
    frozen_next = row[off[FROZEN]] > 0 or row[off[OPENED] + 1 % sides] == 0
    w = 1.0 + psize / 8.0
    best = 1e18
    for k in range(15):
        if not m[DISCARD + k]:
            continue
        c = row[off[HAND] + k]
        if k <= 1:
            cost = 250.0 + 100.0 * (k == 0) - (120.0 if psize >= 8 and not frozen_next else 0.0)
        elif k == 3:
            cost = 10.0 - psize
        else:
            cost = cfg[KEEP_W] * CARD_VALUES[k] + (cfg[PAIR_K] if c >= 2 else 0.0)
            if row[off[MELDS] + (k - 4) * 3] > 0:
                cost += cfg[MELD_K]
            cost += w * cfg[SAFETY] * _danger(row, off, k, owners, sides, per_rank, frozen_next)
            cost -= cfg[SEEN_B] * min(row[off[PCOUNT] + k], 2)
        if cost < best:
            best, choice = cost, DISCARD + k
    if choice < 0:  # no discard legal: the turn must meld on (opening, going out)
        best = -1e18
        for a in range(MELD_NNN, MELD_WILD + 4):
            if m[a]:
                g = _meld_gain(a, row, off, cfg, hand_n, True, threat, nat_bonus, mix_bonus)
                if g > best:
                    best, choice = g, a
    return choice


@njit(cache=True, nogil=True)
def planner_kernel(g, mask, off, n, sides, owners, prm, cfg):
    """One action per row of decoded observations ``g``; the first legal one when no rule picks
    one, -1 for a row without a legal action."""
    out = np.full(g.shape[0], -1, np.int64)
    for b in range(g.shape[0]):
        first = -1
        for a in range(NUM_ACTIONS):
            if mask[b, a]:
                first = a
                break
        if first < 0:
            continue
        choice = _choose(mask[b], g[b], off, n, sides, owners, prm, cfg)
        out[b] = choice if choice >= 0 and mask[b, choice] else first
    return out


class PlannerAgent:
    """The planner for one rules preset (strategy in the module docstring)."""

    needs_observations = True

    def __init__(self, rules: RuleSet | str, style: str = "") -> None:
        """``style``: ``PROFILE[,FIELD=VALUE...]`` (``"banker"``, ``"racer,safety=2"``)."""
        if not isinstance(style, str):
            raise ValueError(f"planner agent: style = {short_repr(style)} is not a string")
        self.cfg = planner_config(style)
        self.decoder = ObsDecoder(rules)
        self.rules = self.decoder.rules
        self.name = f"planner:{style}" if style else "planner"
        p = self.decoder.params
        self._prm = np.array([p[P_GO_REQ], p[P_GO_BONUS], p[P_NAT_BONUS], p[P_MIX_BONUS],
                              4 * p[P_PACKS]], dtype=np.float64)
        self._off = self.decoder.offsets

    def act(self, observations: npt.NDArray[np.float32], legal_action_mask: npt.NDArray[np.bool_],
            rng: np.random.Generator | None = None) -> npt.NDArray[np.int64]:
        g, mask = self.decoder.inputs(observations, legal_action_mask, f"{self.name}: act")
        return planner_kernel(g, mask, self._off, self.decoder.num_players, self.decoder.num_sides,
                              self.decoder.num_owners, self._prm, self.cfg)
