"""A gauntlet: one agent against many opponents on the same fixed duplicate deals (every deal in
every seating), a row per opponent with the win rate and mean margin and their 95% bootstrap
intervals. The minimum over the rows is the robustness figure (a mean over a table hides the
opponent an agent loses to); held-out style profiles (never trained against: ``agents.rule_based.styles``)
are marked.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from canasta_env.rules import RuleSet


def gauntlet_rows(rules: RuleSet, agent: Any, opponents: Mapping[str, Any],
                  deals: Any, *, luck: bool = False, name: str = "agent") -> Iterator[dict[str, Any]]:
    """Play ``agent`` (called ``name`` in errors) against each opponent on ``deals``; yields one row
    per opponent as it ends: ``opponent``, ``held_out`` and ``agents.match.MatchResult.summary``'s
    figures (with ``luck``, the luck-corrected ones too: ``canasta_env.luck``)."""
    from agents.match import play_match
    from agents.rule_based.styles import style_agent_names

    held = set(style_agent_names(held_out=True))
    for label, opponent in opponents.items():
        summary = play_match(rules, agent, opponent, deals, labels=(name, label), luck=luck).summary()
        yield {"opponent": label, "held_out": label in held, **summary}


def weakest(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The row with the lowest win rate."""
    return min(rows, key=lambda r: r["win_rate"])
