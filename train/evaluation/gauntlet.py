"""A gauntlet: one agent against many opponents on the same fixed duplicate deals (every deal in
every seating), a row per opponent with the win rate and mean margin and their 95% bootstrap
intervals. The minimum over the rows is the robustness figure (a mean over a table hides the
opponent an agent loses to); held-out style profiles (never trained against: ``agents.rule_based.styles``)
are marked.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
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


def distinct_opponents(names: Sequence[str], rules: RuleSet | str) -> list[str]:
    """``names`` with each agent once, however spelt (``agents.agent_key``: ``heuristic:eager`` and
    ``heuristic: eager``, a folder with and without its ``/``), in order, each by its first spelling:
    an agent named twice is one opponent, one row (two spellings played it twice, two rows of one
    agent, the second a second sample of the same figures)."""
    from agents import agent_key

    seen: dict[Any, str] = {}
    for name in names:
        seen.setdefault(agent_key(name, rules), name)
    return list(seen.values())


def weakest(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The row with the lowest win rate."""
    return min(rows, key=lambda r: r["win_rate"])
