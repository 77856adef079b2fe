"""Agents behind the batched protocol of ``canasta_env.policy``:
``act(observations, legal_action_mask, rng) -> int64 (B,)``. They see only observations and masks.

``make_agent(name, rules)`` builds one by name; ``heuristic:PROFILE`` is a profile of the style
population (``agents.rule_based.styles``: ``heuristic:eager``, ``heuristic:pile_fighter,freeze_pile=6``);
``planner:PROFILE`` is the rule player of another kind (``agents.rule_based.planner``: it scores
every legal move); ``search:OPTION=VALUE,...`` is search with options
(``search:rollout=zoo:classic_4p``: guided by a learned policy, which orders its candidates and plays
its rollouts);
``zoo:NAME`` plays a checkpoint shipped with the package (``agents.learned.zoo``). Agents that decode
observations are built for a rules preset (the observation's piece shapes depend on the table
size). Further agents (the learned policy from a checkpoint) join the registry with
``register_agent(name, factory)``, where ``factory(rules, **kwargs)`` returns an object with ``act``.

Agents from outside the package join without editing it, by the same names everywhere (CLI, envs,
tournaments): ``module:attribute`` names a factory function or class in the user's code (called
with the ``RuleSet``, or with nothing when it takes no argument; an agent object is used as it is;
standard-library modules are refused), and a package may register agents under the entry-point
group ``canasta_rl.agents`` (name = ``module:attribute``). Such a name imports the user's module:
a config file naming one runs that module's code, as a Python script would.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from canasta_env.messages import short_repr
from canasta_env.policy import Agent, set_agent_factory
from canasta_env.rules import RuleSet, load_rules

AgentFactory = Callable[..., Agent]

_REGISTRY: dict[str, AgentFactory] = {}
ENTRY_POINT_GROUP = "canasta_rl.agents"
# Never a source of agents: importing them by a name from a config file could run anything.
STANDARD_MODULES = frozenset(getattr(sys, "stdlib_module_names", ())) | {"builtins", "os", "sys",
                                                                         "subprocess", "shutil"}
_IMPORTABLE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")  # module.path:attribute


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
    if not isinstance(name, str) or not name.strip():
        what = "is empty" if isinstance(name, str) else "is not a string"
        raise ValueError(f"agent name {short_repr(name)} {what}; name one of: {', '.join(_REGISTRY)}, "
                         "a checkpoint, zoo:NAME, module:attribute or an entry point")
    if name.startswith("sampled:"):  # a learned policy's sampled play instead of its argmax
        inner = name[len("sampled:"):]  # once: "sampled:sampled:..." nested a call per prefix
        if inner.startswith("sampled:") or not (inner.startswith("zoo:") or not _names_agent(inner)
                                                and _is_path(inner) or _path_like(inner)):
            raise ValueError(f"agent {short_repr(name)}: 'sampled:' takes a learned policy (zoo:NAME or a "
                             f"checkpoint or run folder), not {short_repr(inner)}")
        _not_also(name, kwargs, "deterministic")
        return make_agent(inner, rules, **kwargs, deterministic=False)
    if name.startswith("zoo:"):  # a checkpoint shipped with the package (agents.learned.zoo)
        from agents.learned.zoo import zoo_path

        _not_also(name, kwargs, "checkpoint")
        return _policy(rules, checkpoint=str(zoo_path(name)), **kwargs)
    if not _names_agent(name) and _is_path(name):  # a checkpoint or run directory ("./NAME" if named so)
        _not_also(name, kwargs, "checkpoint")
        return _policy(rules, checkpoint=name, **kwargs)
    if name in _REGISTRY:
        return _REGISTRY[name](rules, **kwargs)
    base, _, spec = name.partition(":")
    if base == "heuristic":  # heuristic:PROFILE[,FIELD=VALUE...] (agents.rule_based.styles)
        _not_also(name, kwargs, "style", "config")
        return _REGISTRY[base](rules, style=spec, **kwargs)
    if base == "planner":  # planner:PROFILE[,FIELD=VALUE...] (agents.rule_based.planner)
        _not_also(name, kwargs, "style")
        return _REGISTRY[base](rules, style=spec, **kwargs)
    if base == "search":  # search:OPTION=VALUE,... (agents.search.search_options)
        from agents.search import search_options

        return _REGISTRY[base](rules, **{**search_options(spec), **kwargs})
    shown = short_repr(name)
    plugin = _entry_point(name)
    if plugin is not None:
        return _outside_agent(f"{name} (entry point {plugin})", plugin, rules, kwargs)
    if _IMPORTABLE.fullmatch(name):
        return _outside_agent(name, name, rules, kwargs)
    if _path_like(name):  # a checkpoint path that names nothing (a dangling link went to the loader)
        raise ValueError(f"unknown agent {shown}: no such checkpoint or run directory")
    raise ValueError(f"unknown agent {shown}; known: {', '.join(_REGISTRY)}, a checkpoint, zoo:NAME, "
                     "module:attribute or an entry point")


def agent_key(name: str, rules: RuleSet | str) -> Any:
    """What agent ``name`` plays at ``rules``, as a value equal for every spelling of one agent:
    ``heuristic:eager`` and ``heuristic: eager``, ``search:k=8,n=2`` and ``search:n=2,k=8`` (options
    at their defaults or not), ``zoo:NAME`` and its folder, ``runs/x`` and ``./runs/x/``. The checks
    that refuse an agent named twice compare these (a spelling apart played one agent twice, or
    against itself). A name ``make_agent`` would refuse is its own key, for it to refuse."""
    try:
        return _agent_key(name, load_rules(rules))
    except (ValueError, OSError):
        return name


def _agent_key(name: str, rules: RuleSet) -> Any:
    """``agent_key`` of ``name``; ``ValueError`` for a name it cannot read."""
    if name.startswith("sampled:"):
        return "sampled", _agent_key(name[len("sampled:"):], rules)
    if name.startswith("zoo:"):
        from agents.learned.zoo import zoo_path

        return "checkpoint", zoo_path(name).resolve()
    if not _names_agent(name) and _is_path(name):
        return "checkpoint", Path(name).resolve()
    base, colon, spec = name.partition(":")
    if name == "heuristic" or colon and base == "heuristic":
        return "heuristic", make_agent(name, rules).config  # type: ignore[attr-defined]
    if name == "planner" or colon and base == "planner":
        return "planner", tuple(make_agent(name, rules).cfg.tolist())  # type: ignore[attr-defined]
    if name == "search" or colon and base == "search":
        from agents.search import DEFAULT_GUARD, DEFAULT_N, PHASES, default_depth, default_k, search_options

        o = search_options(spec) if colon else {}
        phases = frozenset(p.strip() for p in o["phases"].split(",")) if "phases" in o else frozenset(PHASES)
        rollout = _agent_key((o.get("checkpoint") or o.get("rollout") or "heuristic").strip(), rules)
        prior = rollout if "prior" not in o else _agent_key(o["prior"].strip(), rules)
        return ("search", o.get("k", default_k(rules)), o.get("n", DEFAULT_N),
                o.get("depth", default_depth(rules)), o.get("seed", 0), float(o.get("guard", DEFAULT_GUARD)),
                float(o.get("min_gain", 0.0)), phases, rollout, prior)
    return name


def _not_also(name: str, kwargs: dict[str, Any], *keys: str) -> None:
    """``ValueError`` when a keyword option repeats what the name itself gives (``zoo:NAME`` its
    checkpoint, ``heuristic:PROFILE`` its style, ``sampled:`` its sampling): two sources of one
    setting, where Python's own message was a ``TypeError`` about a keyword given twice."""
    given = [key for key in keys if key in kwargs]
    if given:
        raise ValueError(f"agent {short_repr(name)}: the name gives its {given[0]}; do not pass "
                         f"{given[0]}= too")


def _entry_point(name: str) -> str | None:
    """The ``module:attribute`` an installed package registers as agent ``name``, if any."""
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            return str(ep.value)
    return None


def _outside_agent(label: str, target: str, rules: RuleSet | str, kwargs: dict[str, Any]) -> Agent:
    """The agent ``module:attribute`` gives: an agent object, or what the factory or class returns
    when called with ``rules`` (or with nothing if it takes no argument). Errors name ``label``."""
    import importlib
    import inspect

    module_name, _, attribute = target.partition(":")
    if module_name.partition(".")[0] in STANDARD_MODULES:
        raise ValueError(f"agent {short_repr(label)}: {module_name!r} is a standard-library module, "
                         "not an agent's; name a module of your own code")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"agent {short_repr(label)}: cannot import module {module_name!r} ({exc})") from None
    obj: Any = module
    for part in attribute.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"agent {short_repr(label)}: module {module_name!r} has no attribute "
                             f"{attribute!r}")
        obj = getattr(obj, part)
    if callable(getattr(obj, "act", None)) and not inspect.isclass(obj):
        agent = obj
    elif inspect.isclass(obj) or inspect.isfunction(obj):
        try:
            takes_rules = bool(inspect.signature(obj).parameters)
        except (TypeError, ValueError):
            takes_rules = True
        try:
            factory: Any = obj
            agent = factory(load_rules(rules), **kwargs) if takes_rules else factory(**kwargs)
        except Exception as exc:  # the user's factory: report it in one line, whatever it raised
            raise ValueError(f"agent {short_repr(label)}: {attribute}(...) failed: "
                             f"{type(exc).__name__}: {exc}") from exc
    else:
        raise ValueError(f"agent {short_repr(label)}: {attribute!r} is neither an agent nor a factory "
                         "(a class or a Python function)")
    if not callable(getattr(agent, "act", None)):
        raise ValueError(f"agent {short_repr(label)}: {attribute!r} gave {type(agent).__name__}, which "
                         "has no act(observations, legal_action_mask, rng)")
    return agent


def _names_agent(name: str) -> bool:
    """Whether ``name`` is an agent's name by its grammar, whatever the working directory holds: a
    registered name, ``NAME:SPEC`` of a registered family, ``zoo:`` or ``sampled:``. A folder so
    named (``heuristic:eager``) is not loaded in its place; ``./heuristic:eager`` names the folder."""
    prefix, colon, _ = name.partition(":")
    return name in _REGISTRY or bool(colon) and (prefix in _REGISTRY or prefix in ("zoo", "sampled"))


def _is_path(name: str) -> bool:
    """Whether ``name`` names an existing file or folder, or a symbolic link (a dangling one too:
    the checkpoint loader says it points nowhere); False for names no path can have: too long, NUL
    bytes..."""
    try:
        return Path(name).exists() or Path(name).is_symlink()
    except (OSError, ValueError):
        return False


def _path_like(name: str) -> bool:
    """Whether ``name`` can only be a path: it holds a folder separator, which no agent name does
    outside the spec of ``NAME:SPEC`` (``search:checkpoint=runs/x``)."""
    return ("/" in name or os.sep in name) and name.partition(":")[0] not in _REGISTRY


def _check_options(name: str, target: Any, kwargs: dict[str, Any]) -> None:
    """``ValueError`` naming a keyword option that the built-in agent ``name`` (made by ``target``, a
    class or function whose ``rules`` the factory passes itself) does not take: a Python caller's
    misspelt option is a one-line refusal, as the name grammar's unknown option is, not a
    ``TypeError`` from inside the package."""
    import inspect

    options = [p for p in inspect.signature(target).parameters if p not in ("self", "rules")]
    unknown = [key for key in kwargs if key not in options]
    if unknown:
        raise ValueError(f"agent {name!r}: unknown option {short_repr(unknown[0])}; options: "
                         f"{', '.join(options) or 'none'}")


def _random(rules: RuleSet | str, **kwargs: Any) -> Agent:
    from agents.rule_based.random import RandomAgent

    _check_options("random", RandomAgent, kwargs)
    load_rules(rules)  # it plays any table, but a name that is no table is still a mistake
    return RandomAgent(**kwargs)


def _greedy(rules: RuleSet | str, **kwargs: Any) -> Agent:
    from agents.greedy import GreedyAgent

    _check_options("greedy", GreedyAgent, kwargs)
    return GreedyAgent(rules, **kwargs)


def _heuristic(rules: RuleSet | str, **kwargs: Any) -> Agent:
    from agents.rule_based.heuristic import HeuristicAgent

    _check_options("heuristic", HeuristicAgent, kwargs)
    return HeuristicAgent(rules, **kwargs)


def _planner(rules: RuleSet | str, **kwargs: Any) -> Agent:
    from agents.rule_based.planner import PlannerAgent

    _check_options("planner", PlannerAgent, kwargs)
    return PlannerAgent(rules, **kwargs)


def _search(rules: RuleSet | str, **kwargs: Any) -> Agent:
    from agents.search import SearchAgent

    _check_options("search", SearchAgent, kwargs)
    return SearchAgent(rules, **kwargs)


def _policy(rules: RuleSet | str, **kwargs: Any) -> Agent:
    from agents.learned.policy import load_policy_agent

    _check_options("policy", load_policy_agent, kwargs)
    checkpoint, deterministic = kwargs.get("checkpoint"), kwargs.get("deterministic", True)
    if checkpoint is None:  # the bare name: "policy" plays a checkpoint, which the name cannot give
        raise ValueError("agent 'policy' needs a checkpoint: name the checkpoint or run folder itself "
                         "(or zoo:NAME), or call make_agent('policy', rules, checkpoint=DIR)")
    if not isinstance(checkpoint, (str, os.PathLike)):
        raise ValueError(f"agent 'policy': checkpoint = {short_repr(checkpoint)} is not a path")
    if not isinstance(deterministic, bool):  # a truthy 'no' would play the argmax in silence
        raise ValueError(f"agent 'policy': deterministic = {short_repr(deterministic)} is not True or False")
    return load_policy_agent(os.fspath(checkpoint), rules, deterministic=deterministic)


register_agent("random", _random)
register_agent("greedy", _greedy)
register_agent("heuristic", _heuristic)
register_agent("planner", _planner)  # planner:PROFILE[,FIELD=VALUE...]
register_agent("search", _search)  # options: k, n, depth, guard, min_gain, phases, rollout, checkpoint, seed
register_agent("policy", _policy)  # make_agent("policy", rules, checkpoint=DIR) or make_agent(DIR, ...)
set_agent_factory(make_agent)  # the env adapters' opponents by name (canasta_env.policy.agent_by_name)

__all__ = ["ENTRY_POINT_GROUP", "AgentFactory", "agent_key", "agent_names", "make_agent", "register_agent"]
