"""Every example that ``canasta COMMAND --help`` shows is one the command accepts: its flags parse,
its rules load, every agent it names is built for those rules and every config file it names is a
valid one. Files an example reads that a user makes first (a record, a model zip) are not checked."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest

from agents import make_agent
from canasta_env.rules import load_rules
from train.cli.main import COMMANDS, EXAMPLES, build_parser

ROOT = Path(__file__).resolve().parents[2]
# options (dest names) whose values are agent names
AGENT_OPTIONS = ("agent", "opponent", "partners", "agents", "also", "opponents", "league", "imitate",
                 "source")
EXAMPLE_LINES = [(name, line.strip()) for name, text in EXAMPLES.items() for line in text.splitlines()]


def _names(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def test_every_command_shows_an_example() -> None:
    assert set(EXAMPLES) == set(COMMANDS)


@pytest.mark.parametrize(("command", "line"), EXAMPLE_LINES, ids=[line for _, line in EXAMPLE_LINES])
def test_a_help_example_is_accepted(command: str, line: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    argv = shlex.split(line)
    assert argv[:2] == ["canasta", command]
    ns = build_parser(argv[1:]).parse_args(argv[1:])
    config = getattr(ns, "config", None)
    if config is not None:
        assert (ROOT / config).is_file(), f"{line}: no config file {config}"
    if command in ("train", "selfplay", "league"):
        from train.learning.config import load_args, read_options

        skip = {"config", "resume", "overwrite", "strict_resume", "command", "debug", "_run"}
        args = load_args(None, read_options(config, {k: v for k, v in vars(ns).items() if k not in skip}))
        rules_name, agents = args.rules, [args.opponent, *args.league, *_names(args.imitate)]
    else:
        rules_name = getattr(ns, "rules", None) or "classic_2p"
        agents = [n for opt in AGENT_OPTIONS for n in _names(getattr(ns, opt, None))]
    for each in _names(rules_name):  # bench takes several
        rules = load_rules(each)
    for name in agents:
        assert callable(getattr(make_agent(name, rules), "act", None)), f"{line}: agent {name}"


def test_a_refused_example_would_fail_this_check() -> None:
    """The check above catches what it is for: a zoo agent of another table size is refused."""
    with pytest.raises(ValueError):
        make_agent("zoo:classic_2p", load_rules("classic_4p"))
