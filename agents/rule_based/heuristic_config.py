"""``HeuristicConfig``: the thresholds and strategic axes of the heuristic player, and their ranges.

Both ``agents.rule_based.heuristic`` (which plays with a config) and ``agents.rule_based.styles``
(which builds configs from named profiles) import it from here, so neither of them imports the other
in a circle. The strategy each field steers is described in ``agents.rule_based.heuristic``'s
docstring. ``FIELD_RANGES`` declares once what values each field may take: ``heuristic:...,FIELD=
VALUE`` refuses a value outside it, and the rule-space exploiter (``train.evaluation.rule_exploit``)
searches inside it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from canasta_env.rules import RuleSet

GO_OUT_NEVER = 10_000.0  # a go_out_margin no hand's lead reaches: go out only under threat


@dataclass(frozen=True)
class HeuristicConfig:
    """Thresholds of the heuristic strategy (see ``agents.rule_based.heuristic``). The defaults are for a
    two-card draw (2 players); ``for_rules`` gives the one-card-draw pile thresholds. The fields after
    ``wild_free`` are the strategic axes; their defaults leave the play of the fields before them
    unchanged."""

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
    # opening: > 0 holds the hand unopened (no meld from it after a stock draw) until the pile is
    # taken, a concealed go-out is in hand, or the threat is on
    hold_open: float = 0.0
    open_take_discount: float = 0.0  # pair and wild pile thresholds lowered by this while unopened
    # wild cards
    wild_keep: float = 0.0  # wilds kept in hand (never melded) until going out is allowed or threat
    wild_min_meld: float = 6.0  # a wild is added to a meld of this many cards (6: completes a canasta)
    # laying melds down
    hold_new: float = 0.0  # cards kept in hand on top of keep_cards when starting a new meld
    # going out
    go_out_extra: float = 0.0  # canastas beyond the rules' requirement before going out unthreatened
    # discards
    fish: float = 0.0  # cost taken off discarding from three or more (a pair stays: bait)
    value_weight: float = 1.0  # weight of a card's value in its discard cost (< 0 dumps high cards)

    @classmethod
    def for_rules(cls, rules: RuleSet) -> HeuristicConfig:
        """Defaults tuned against the greedy agent for the rules' draw size."""
        if (rules.resolved().draw_count or 1) >= 2:
            return cls()
        return cls(wild_take_pile=4.0, pair_take_pile=4.0, layoff_take_pile=1.0)


@dataclass(frozen=True)
class FieldRange:
    """The values a config field may take: ``low`` to ``high``, whole numbers only when ``integer``."""

    low: float
    high: float
    integer: bool = False

    def __str__(self) -> str:
        return f"[{self.low:g}, {self.high:g}]" + (", whole numbers" if self.integer else "")

    def contains(self, value: float) -> bool:
        """Whether ``value`` is a finite number inside the range (and whole for an integer field)."""
        return (math.isfinite(value) and self.low <= value <= self.high
                and (not self.integer or value == round(value)))


PILE = FieldRange(0.0, 100.0)  # pile sizes; 100: never (no pile grows that big)
FIELD_RANGES: dict[str, FieldRange] = {
    "wild_take_pile": PILE,
    "threat_hand": FieldRange(0.0, 20.0),
    "late_stock": FieldRange(0.0, 60.0),
    "card_estimate": FieldRange(0.0, 40.0),
    "b3_pile": PILE,
    "freeze_pile": PILE,
    "pair_take_pile": PILE,
    "go_out_margin": FieldRange(-2000.0, GO_OUT_NEVER),
    "dump_canastas": FieldRange(0.0, 4.0, integer=True),
    "layoff_take_pile": PILE,
    "keep_cards": FieldRange(0.0, 10.0, integer=True),
    "danger_weight": FieldRange(0.0, 8.0),
    "freeze_cost": FieldRange(0.0, 500.0),
    "pair_keep": FieldRange(0.0, 300.0),
    "wild_free": FieldRange(0.0, 1.0, integer=True),
    "hold_open": FieldRange(0.0, 1.0, integer=True),
    "open_take_discount": FieldRange(0.0, 10.0),
    "wild_keep": FieldRange(0.0, 4.0, integer=True),
    "wild_min_meld": FieldRange(3.0, 6.0, integer=True),
    "hold_new": FieldRange(0.0, 12.0),
    "go_out_extra": FieldRange(0.0, 3.0, integer=True),
    "fish": FieldRange(0.0, 200.0),
    "value_weight": FieldRange(-3.0, 3.0),
}


def check_ranges(config: HeuristicConfig) -> list[str]:
    """The fields of ``config`` outside their ``FIELD_RANGES``, as ``"FIELD = VALUE is outside
    RANGE"`` lines; empty when every field is inside."""
    return [f"{f.name} = {getattr(config, f.name):g} is outside {FIELD_RANGES[f.name]}"
            for f in dataclasses.fields(config) if not FIELD_RANGES[f.name].contains(getattr(config, f.name))]
