"""``canasta tournament``: the command line of ``train.evaluation.tournament`` (see its docstring).

Options come from ``--config FILE`` (YAML, keys named as the flags) and the flags, which override
the file: ``canasta tournament --config configs/tournament/classic_2p.yaml --hands 200``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from canasta_env.messages import short_repr
from train.common.options import AGENT_HELP, RULES_HELP, add_options, defaults, kinds, opt


@dataclass
class TournamentOptions:
    """The options of ``canasta tournament``; a ``--config`` file holds any of them but ``config``."""

    config: str | None = opt(None, "YAML file of these options (keys as the flags: hands, deal_set, ...); "
                             "flags override it", metavar="FILE")
    rules: str = opt("classic_2p", RULES_HELP, metavar="RULES")
    agents: list[str] | None = opt(None, f"entrants: {AGENT_HELP} (no default: name them here or as "
                                   "agents: in the --config file)", metavar="AGENT")
    hands: int = opt(2000, "hands per match")
    duplicate: bool = opt(False, "replay every deal in every seating (sides swapped; 6 permutations at 3p)")
    vs: str | None = opt(None, "gauntlet: this entrant against each other one (default: a round robin)",
                         metavar="AGENT")
    partners: str | None = opt(None, "4 players: this agent partners every entrant (default: two copies "
                               "of one)", metavar="AGENT", aliases=("--partner",))
    seed: int = opt(0, "deals and agent streams")
    deal_set: str | None = opt(None, "fixed deal set: v1, classic_2p-v1 or a .npz path (default: deals "
                               "drawn from --seed)")
    target_margin: float | None = opt(None, "estimate the deals needed to detect this mean margin per pair",
                                      metavar="MARGIN")
    resamples: int = opt(2000, "bootstrap resamples")
    out: str | None = opt(None, "folder for hands.csv, results.json and plots; re-run to resume (default: "
                          "none, nothing written)")
    records: bool = opt(False, "also write every hand as a game record to OUT/records.jsonl (canasta replay)")
    ladder: str | None = opt(None, "OpenSkill ratings kept across tournaments in this JSON file (updated)",
                             metavar="FILE")
    no_plots: bool = opt(False, "skip the PNG plots")
    luck_correction: bool = opt(False, "also report luck-corrected win rates and margins with their "
                                "variance ratios (docs/tournaments.md#luck-corrected-results)")
    ray: str | None = opt(None, "play the matches as Ray tasks (the 'ray' extra): alone, on a Ray started "
                          "here; 'auto' or host:port joins a running cluster. Same results as without "
                          "(default: none, in this process)", const="local", metavar="ADDRESS")


# option -> its value's type: what a --config file may hold
KINDS: dict[str, type] = {name: kind for name, kind in kinds(TournamentOptions).items() if name != "config"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``canasta tournament`` (a flag not given is None, so one given overrides
    ``--config``)."""
    add_options(parser, TournamentOptions, overrides=True)


def options(args: argparse.Namespace) -> dict[str, Any]:
    """The defaults, then the ``--config`` file, then the flags given; unknown keys and values of
    the wrong type are errors naming the file."""
    values = {name: default for name, default in defaults(TournamentOptions).items() if name in KINDS}
    source: dict[str, str] = {}  # options the config file set
    if args.config:
        from train.common.config_file import read_mapping

        path = Path(args.config)
        data = read_mapping(path, "tournament options")
        for key, value in data.items():
            name = str(key).replace("-", "_")
            if name not in KINDS:
                raise ValueError(f"{path}: unknown tournament option {short_repr(key)}; "
                                 f"known: {', '.join(KINDS)}")
            kind = KINDS[name]
            if not _fits(value, kind):
                what = ("a list of agent names (text)" if kind is list and isinstance(value, list)
                        else f"of type {kind.__name__}")
                raise ValueError(f"{path}: tournament option {short_repr(key)} = {short_repr(value)} "
                                 f"is not {what}")
            values[name], source[name] = value, str(path)
    for name in KINDS:
        given = getattr(args, name)
        if given is not None:
            values[name] = given
            source.pop(name, None)
    if not values["agents"]:
        raise ValueError("no entrants: give --agents, or agents: in the --config file")
    def where(name: str) -> str:  # the flag, or the config file's option
        return f"{source[name]}: {name}" if name in source else f"--{name.replace('_', '-')}"

    for name in ("rules", "out", "ladder", "deal_set", "vs", "partners", "ray"):
        if isinstance(values[name], str) and not values[name].strip():  # "" would mean "."
            raise ValueError(f"{where(name)} must not be empty, got {values[name]!r}")
    for name, (low, high) in RANGES.items():
        value = values[name]
        if value is not None and not low <= value <= high:  # NaN fails both comparisons
            raise ValueError(f"{where(name)} {value}: want a value in [{low}, {high}]")
    return values


# option -> inclusive bounds (hands: 10^8 is 100k units of work; seeds name DealIds)
RANGES: dict[str, tuple[float, float]] = {"hands": (1, 10**8), "resamples": (1, 100_000),
                                          "seed": (0, 2**63 - 1), "target_margin": (1e-6, 1e6)}



def _fits(value: Any, kind: type) -> bool:
    if kind is list:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if value is None or kind is bool:
        return value is None or isinstance(value, bool)
    if isinstance(value, bool):
        return False
    return isinstance(value, int | float) if kind is float else isinstance(value, kind)


def run(args: argparse.Namespace) -> int:
    """Run the tournament the options describe and print its tables (also when its ladder could not be
    written: then the tables, and the error after them)."""
    from train.evaluation.tournament import LadderNotUpdated
    from train.evaluation.tournament import run as run_tournament

    o = options(args)
    try:
        result = run_tournament(o["rules"], o["agents"], o["hands"], duplicate=o["duplicate"], vs=o["vs"],
                                partners=o["partners"], seed=o["seed"], deal_set=o["deal_set"], out=o["out"],
                                resamples=o["resamples"], target_margin=o["target_margin"],
                                records=o["records"], ladder=o["ladder"], progress=True,
                                plots=not o["no_plots"], on_ray=o["ray"],
                                luck_correction=o["luck_correction"])
    except LadderNotUpdated as exc:
        _print(exc.result, o)
        raise
    _print(result, o)
    return 0


def _print(result: Any, o: dict[str, Any]) -> None:
    result.print_tables()
    if o["luck_correction"]:
        from train.evaluation.tournament_luck import luck_table

        print("\nluck-corrected head to head (per deal; ratio: corrected over plain variance)")
        print(luck_table(result.luck_rows))
    if o["out"]:
        print(f"results in {o['out']}/ (hands.csv, results.json, ratings.csv, head_to_head.csv, "
              f"outcomes.csv{'' if o['no_plots'] else ', ratings.png, head_to_head.png'})")
