"""Agents behind the batched protocol of ``canasta_env.policy``:
``act(observations, legal_action_mask, rng) -> int64 (B,)``. They see only observations and masks.

``make_agent(name, rules)`` builds one by name; ``zoo:NAME`` plays a checkpoint shipped with the
package (``agents.zoo``). Agents that decode observations are built for a rules
preset (the observation's piece shapes depend on the table size). Further agents (the learned policy
from a checkpoint) join the registry with ``register_agent(name, factory)``, where ``factory(rules,
**kwargs)`` returns an object with ``act``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from canasta_env.policy import Agent
from canasta_env.rules import RuleSet

AgentFactory = Callable[..., Agent]

_REGISTRY: dict[str, AgentFactory] = {}


def register_agent(name: str, factory: AgentFactory, *, replace: bool = False) -> None:
    """Make ``make_agent(name, rules, **kwargs)`` call ``factory(rules, **kwargs)``."""
    if name in _REGISTRY and not replace:
        raise ValueError(f"agent {name!r} is already registered")
    _REGISTRY[name] = factory


def agent_names() -> tuple[str, ...]:
    """Registered agent names."""
    return tuple(_REGISTRY)


def make_agent(name: str, rules: RuleSet | str, **kwargs: Any) -> Agent:
    """An agent by registered name for a rules preset (a name, a YAML path or a ``RuleSet``)."""
    if name.startswith("zoo:"):  # a checkpoint shipped with the package (agents.zoo)
        from agents.zoo import zoo_path

        return _policy(rules, checkpoint=str(zoo_path(name)), **kwargs)
    if name not in _REGISTRY and _is_path(name):  # a checkpoint or run directory
        return _policy(rules, checkpoint=name, **kwargs)
    try:
        factory = _REGISTRY[name]
    except KeyError:
        shown = name if len(name) <= 80 else name[:77] + "..."
        raise ValueError(f"unknown agent {shown!r}; known: {', '.join(_REGISTRY)}, or a checkpoint "
                         "directory") from None
    return factory(rules, **kwargs)


def _is_path(name: str) -> bool:
    """Whether ``name`` names an existing file or folder (False for names no path can have: too
    long, NUL bytes...)."""
    try:
        return Path(name).exists()
    except (OSError, ValueError):
        return False


def _random(rules: RuleSet | str, **kwargs: Any) -> Agent:
    from agents.random import RandomAgent

    return RandomAgent(**kwargs)


def _greedy(rules: RuleSet | str, **kwargs: Any) -> Agent:
    from agents.greedy import GreedyAgent

    return GreedyAgent(rules, **kwargs)


def _heuristic(rules: RuleSet | str, **kwargs: Any) -> Agent:
    from agents.heuristic import HeuristicAgent

    return HeuristicAgent(rules, **kwargs)


def _search(rules: RuleSet | str, **kwargs: Any) -> Agent:
    from agents.search import SearchAgent

    return SearchAgent(rules, **kwargs)


def _policy(rules: RuleSet | str, *, checkpoint: str, deterministic: bool = True) -> Agent:
    from agents.learned import load_policy_agent

    return load_policy_agent(checkpoint, rules, deterministic=deterministic)


register_agent("random", _random)
register_agent("greedy", _greedy)
register_agent("heuristic", _heuristic)
register_agent("search", _search)  # options: k, n, depth, guard, min_gain, phases, rollout, checkpoint, seed
register_agent("policy", _policy)  # make_agent("policy", rules, checkpoint=DIR) or make_agent(DIR, ...)

__all__ = ["AgentFactory", "agent_names", "make_agent", "register_agent"]
