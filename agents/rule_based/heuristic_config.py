"""``HeuristicConfig``: the thresholds of the heuristic player, on their own.

Both ``agents.rule_based.heuristic`` (which plays with a config) and ``agents.rule_based.styles``
(which builds configs
from named profiles) import it from here, so neither of them imports the other in a circle. The
strategy each field steers is described in ``agents.rule_based.heuristic``'s docstring.
"""

from __future__ import annotations

from dataclasses import dataclass

from canasta_env.rules import RuleSet


@dataclass(frozen=True)
class HeuristicConfig:
    """Thresholds of the heuristic strategy (see ``agents.rule_based.heuristic``). The defaults are for a
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
