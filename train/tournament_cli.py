"""``canasta tournament``: the command line of ``train.tournament`` (see its docstring).

Options come from ``--config FILE`` (YAML, keys named as the flags) and the flags, which override
the file: ``canasta tournament --config configs/tournament/classic_2p.yaml --hands 200``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from canasta_env.messages import short_repr

# option -> (default, type): the flags' defaults, and what a --config file may hold
OPTIONS: dict[str, tuple[Any, type]] = {
    "rules": ("classic_2p", str), "agents": (None, list), "hands": (2000, int), "duplicate": (False, bool),
    "vs": (None, str), "partners": (None, str), "seed": (0, int), "deal_set": (None, str),
    "target_margin": (None, float), "resamples": (2000, int), "out": (None, str), "records": (False, bool),
    "ladder": (None, str), "no_plots": (False, bool), "ray": (None, str),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``canasta tournament`` (every default is None here: a flag given on the command
    line is one that is not None, and overrides ``--config``)."""
    parser.add_argument("--config", metavar="FILE",
                        help="YAML file of these options (keys as the flags: hands, deal_set, ...); "
                        "flags override it")
    parser.add_argument("--rules", help="rule preset or YAML file (default: classic_2p)")
    parser.add_argument("--agents", nargs="+", metavar="AGENT",
                        help="entrants: random, greedy, heuristic, or checkpoint/run folders")
    parser.add_argument("--hands", type=int, help="hands per match (default: 2000)")
    parser.add_argument("--duplicate", action="store_true", default=None,
                        help="replay every deal in every seating (sides swapped; 6 permutations at 3p)")
    parser.add_argument("--vs", help="gauntlet: this entrant against each other one")
    parser.add_argument("--partners", metavar="AGENT",
                        help="4 players: this agent partners every entrant (default: two copies of one)")
    parser.add_argument("--seed", type=int, help="deals and agent streams (default: 0)")
    parser.add_argument("--deal-set", help="fixed deal set: v1, classic_2p-v1 or a .npz path")
    parser.add_argument("--target-margin", type=float,
                        help="estimate the deals needed to detect this mean margin per pair")
    parser.add_argument("--resamples", type=int, help="bootstrap resamples (default: 2000)")
    parser.add_argument("--out", help="folder for hands.csv, results.json and plots; re-run to resume")
    parser.add_argument("--records", action="store_true", default=None,
                        help="also write every hand as a game record to OUT/records.jsonl (canasta replay)")
    parser.add_argument("--ladder", metavar="FILE",
                        help="OpenSkill ratings kept across tournaments in this JSON file (updated)")
    parser.add_argument("--no-plots", action="store_true", default=None, help="skip the PNG plots")
    parser.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                        help="play the matches as Ray tasks (the 'ray' extra): alone, on a Ray started "
                        "here; 'auto' or host:port joins a running cluster. Same results as without")


def options(args: argparse.Namespace) -> dict[str, Any]:
    """The defaults, then the ``--config`` file, then the flags given; unknown keys and values of
    the wrong type are errors naming the file."""
    values = {key: default for key, (default, _) in OPTIONS.items()}
    if args.config:
        from train.config_file import read_mapping

        path = Path(args.config)
        data = read_mapping(path, "tournament options")
        for key, value in data.items():
            name = str(key).replace("-", "_")
            if name not in OPTIONS:
                raise ValueError(f"{path}: unknown tournament option {short_repr(key)}; "
                                 f"known: {', '.join(OPTIONS)}")
            kind = OPTIONS[name][1]
            if not _fits(value, kind):
                raise ValueError(f"{path}: tournament option {short_repr(key)} = {short_repr(value)} "
                                 f"is not of type {kind.__name__}")
            values[name] = value
    for name in OPTIONS:
        given = getattr(args, name)
        if given is not None:
            values[name] = given
    if not values["agents"]:
        raise ValueError("no entrants: give --agents, or agents: in the --config file")
    for name in ("rules", "out", "ladder", "deal_set", "vs", "partners", "ray"):
        if isinstance(values[name], str) and not values[name].strip():  # "" would mean "."
            raise ValueError(f"--{name.replace('_', '-')} must not be empty, got {values[name]!r}")
    for name, (low, high) in RANGES.items():
        value = values[name]
        if value is not None and not low <= value <= high:  # NaN fails both comparisons
            raise ValueError(f"--{name.replace('_', '-')} {value}: want a value in [{low}, {high}]")
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
    """Run the tournament the options describe and print its tables."""
    from train.tournament import run as run_tournament

    o = options(args)
    result = run_tournament(o["rules"], o["agents"], o["hands"], duplicate=o["duplicate"], vs=o["vs"],
                            partners=o["partners"], seed=o["seed"], deal_set=o["deal_set"], out=o["out"],
                            resamples=o["resamples"], target_margin=o["target_margin"],
                            records=o["records"], ladder=o["ladder"], progress=True,
                            plots=not o["no_plots"], on_ray=o["ray"])
    result.print_tables()
    if o["out"]:
        print(f"results in {o['out']}/ (hands.csv, results.json, ratings.csv, head_to_head.csv, "
              f"outcomes.csv{'' if o['no_plots'] else ', ratings.png, head_to_head.png'})")
    return 0
