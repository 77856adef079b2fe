"""One way to declare the options of a ``canasta`` subcommand: a dataclass whose fields are made by
``opt`` (default, help, how the flag reads), turned into argparse arguments by ``add_options``.

Every subcommand declares its options so (``TrainArgs`` in ``train.learning.config`` is the largest),
hence the
same conventions everywhere: hyphenated flags (``--deal-set``) whose underscored spelling
(``--deal_set``) is a hidden alias for old scripts, hidden aliases for renamed flags, and help that
shows the default once (none is appended to a help that already says its default in words). Light
on purpose: the ``canasta`` parser imports it for the subcommand being run, before anything heavy.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any

# What an agent argument may name (agents.make_agent), in the help of every flag that takes one.
AGENT_HELP = ("random, greedy, heuristic, planner, search, a checkpoint or run folder, zoo:NAME, "
              "module:attribute or the name of an installed agent entry point")
RULES_HELP = "rules preset name or rules YAML file"

_SAYS_DEFAULT = re.compile(r"\bdefault\b", re.IGNORECASE)


def opt(default: Any = dataclasses.MISSING, help: str = "", *, factory: Any = dataclasses.MISSING,
        positional: bool = False, choices: Sequence[Any] | None = None, const: Any = None,
        metavar: str | None = None, type: Callable[[str], Any] | None = None,
        aliases: Sequence[str] = ()) -> Any:
    """An option: a dataclass field with the help and flag details ``add_options`` reads.

    No default (and no ``factory``) makes a required flag, or with ``positional`` a positional
    argument. ``const``: the flag may be given alone, meaning ``const`` (``--ray`` for
    ``--ray local``). ``type`` parses one value (of a list: each element; default: the annotated
    type). ``aliases``: former spellings (``--partner``), accepted and not shown.
    """
    metadata = {"help": help, "positional": positional, "choices": choices, "const": const,
                "metavar": metavar, "type": type, "aliases": tuple(aliases)}
    return dataclasses.field(default=default, default_factory=factory, metadata=metadata)


def check_seed(seed: int | None, flag: str = "--seed") -> None:
    """Refuse a seed the engine cannot deal from (its deal addresses are 64-bit), naming ``flag``;
    ``None`` (a random seed) passes."""
    if seed is not None and not 0 <= seed < 2**64:
        raise ValueError(f"{flag} {seed}: seeds are integers in [0, 2**64)")


def repeated_agent(names: Sequence[str], rules: Any) -> tuple[str, str] | None:
    """The first two of ``names`` that name one agent at ``rules``, however spelt
    (``agents.agent_key``: ``heuristic:eager`` and ``heuristic: eager``, a folder with and without
    its ``/``), or None."""
    from agents import agent_key

    seen: dict[Any, str] = {}
    for name in names:
        key = agent_key(name, rules)
        if key in seen:
            return seen[key], name
        seen[key] = name
    return None


def distinct_agents(names: Sequence[str], rules: Any) -> list[str]:
    """``names`` with each agent once, however spelt (``agents.agent_key``, as ``repeated_agent``
    compares them), in order, each by its first spelling."""
    from agents import agent_key

    seen: dict[Any, str] = {}
    for name in names:
        seen.setdefault(agent_key(name, rules), name)
    return list(seen.values())


def twice_message(option: str, pair: tuple[str, str]) -> str:
    """``OPTION names 'X' twice``, or, for two spellings of one agent, both of them."""
    from canasta_env.messages import short_repr

    first, second = pair
    if first == second:
        return f"{option} names {short_repr(first)} twice"
    return f"{option} names one agent twice, as {short_repr(first)} and {short_repr(second)}"


def flag_name(name: str) -> str:
    """``--total-timesteps`` for the option ``total_timesteps`` (hyphens, as in every subcommand)."""
    return "--" + name.replace("_", "-")


def defaults(declaration: type) -> dict[str, Any]:
    """Option name -> declared default (required options left out)."""
    return {f.name: value for f in dataclasses.fields(declaration)
            if (value := _default(f)) is not dataclasses.MISSING}


def kinds(declaration: type) -> dict[str, type]:
    """Option name -> type of its value: str, int, float, bool or list (None allowed or not)."""
    hints = typing.get_type_hints(declaration)
    return {f.name: _kind(hints[f.name])[0] for f in dataclasses.fields(declaration)}


class _ListOnce(argparse.Action):
    """A list option given once: argparse kept only the last of ``--also A --also B``, so A was
    dropped in silence; a second one is refused, naming the flag."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if getattr(namespace, self.dest, None) is not self.default:
            parser.error(f"{option_string} given twice: name all its values after one {option_string}")
        setattr(namespace, self.dest, values)


def add_options(parser: argparse.ArgumentParser, declaration: type, *, overrides: bool = False,
                bool_values: bool = False) -> None:
    """Add one argument per field of ``declaration`` (a dataclass of ``opt`` fields) to ``parser``.

    ``overrides``: the options also come from a config file, so every flag's value is None unless
    given (the help still shows the declared default) and the flags given can override the file.
    ``bool_values``: a bool option takes a value (``--progress false``, needed to override a file's
    true); otherwise it is a switch (``--duplicate``) that sets it.
    """
    hints = typing.get_type_hints(declaration)
    for f in dataclasses.fields(declaration):
        meta = f.metadata
        kind, element = _kind(hints[f.name])
        switch = kind is bool and not bool_values
        kwargs: dict[str, Any] = {}
        if switch:
            kwargs["action"] = "store_true"
        else:
            parse = meta["type"] or (_bool if kind is bool else element or kind)
            kwargs.update(type=parse, metavar=meta["metavar"] or _metavar(f.name, kind))
            if kind is list:
                kwargs["nargs"] = "+"
                if not meta["positional"]:
                    kwargs["action"] = _ListOnce
            if meta["const"] is not None:
                kwargs.update(nargs="?", const=meta["const"])
            if meta["choices"] is not None:  # argparse shows them: {sb3,onnx}
                kwargs.update(choices=meta["choices"], metavar=meta["metavar"])
        default = _default(f)
        if meta["positional"]:
            parser.add_argument(f.name, help=meta["help"], **kwargs)
            continue
        required = default is dataclasses.MISSING
        kwargs.update(dest=f.name, default=None if overrides or required else default)
        help_text = meta["help"] if switch or required else _with_default(meta["help"], default)
        flag = flag_name(f.name)
        aliases = _aliases(flag, meta["aliases"])
        # a required option's aliases must satisfy it too: argparse checks that through a group
        target = parser.add_mutually_exclusive_group(required=True) if required and aliases else parser
        target.add_argument(flag, required=required and not aliases, help=help_text, **kwargs)
        for alias in aliases:
            target.add_argument(alias, help=argparse.SUPPRESS, **kwargs)


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


def _kind(hint: Any) -> tuple[type, type | None]:
    """(type of the value, type of a list's elements) of an annotation, ``| None`` taken off."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    if typing.get_origin(hint) is list:
        return list, typing.get_args(hint)[0]
    return hint, None


def _metavar(name: str, kind: type) -> str:
    return {bool: "true|false", list: "X"}.get(kind, name.upper())


def _aliases(flag: str, renamed: Sequence[str]) -> list[str]:
    """The hidden spellings of ``flag``: former names, and the underscored twin of every spelling."""
    spellings = [flag, *renamed]
    underscored = ["--" + s[2:].replace("-", "_") for s in spellings]
    return [s for s in dict.fromkeys([*renamed, *underscored]) if s != flag]


def _with_default(text: str, default: Any) -> str:
    """``text`` and the default, unless ``text`` already says its default in words."""
    if _SAYS_DEFAULT.search(text):
        return text
    if isinstance(default, list | tuple):
        shown = " ".join(map(str, default))
    elif isinstance(default, bool):
        shown = str(default).lower()
    else:
        shown = "" if default is None else str(default)
    return f"{text} (default: {shown.replace('%', '%%') or 'none'})"


def _bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
