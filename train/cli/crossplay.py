"""``canasta crossplay``: every ordered pair of agents as partners against fixed opponents on the same
duplicate deals (``train.evaluation.crossplay``): the matrix of win rates and margins, self-play
against cross-play, and each agent as a partner of the others."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import time
from dataclasses import dataclass
from pathlib import Path

from canasta_env.messages import short_repr
from train.common.options import AGENT_HELP, RULES_HELP, add_options, opt
from train.common.outputs import check_output_file


@dataclass
class CrossplayOptions:
    """The options of ``canasta crossplay``."""

    agents: list[str] = opt(help=f"the agents to pair, two or more, each once: {AGENT_HELP}", metavar="AGENT")
    opponents: list[str] = opt(help="the fixed opponents: one agent at every opposing seat, or two (the "
                               "first at the opposing side's first seat, the second at its others)",
                               metavar="AGENT")
    rules: str = opt("classic_4p", f"{RULES_HELP}; a game with partners", metavar="RULES")
    deals: int = opt(200, "duplicate deals per pair of partners (each played in both seatings)")
    seed: int = opt(0, "deals (DealId(seed, d, 0)) and agent streams")
    resamples: int = opt(2000, "bootstrap resamples of deals for every interval")
    out: str | None = opt(None, "folder for crossplay.csv, crossplay_summary.csv, crossplay.json and "
                          "crossplay.png (default: none, nothing written); a folder that already holds "
                          "them is refused unless --force", metavar="DIR")
    force: bool = opt(False, "replace the crossplay files already in --out")
    json: bool = opt(False, "print one JSON object (settings, cells, summary) instead of the tables")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``canasta crossplay``."""
    add_options(parser, CrossplayOptions)


def command_line(o: CrossplayOptions) -> str:
    """The command that reproduces ``o``'s figures."""
    return shlex.join(["canasta", "crossplay", "--rules", o.rules, "--agents", *o.agents, "--opponents",
                       *o.opponents, "--deals", str(o.deals), "--seed", str(o.seed)]
                      + (["--resamples", str(o.resamples)] if o.resamples != 2000 else []))


def _check_out(out: str | None, force: bool) -> None:
    """Make the output folder now and check that every file of ``OUTPUT_NAMES`` can be written in it,
    so that a bad folder is refused before any game; an earlier run's files are kept unless
    ``force``."""
    from train.evaluation.crossplay import OUTPUT_NAMES

    if out is None:
        return
    if not out.strip():
        raise ValueError(f"--out {short_repr(out)}: not a folder name")
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"--out {out}: must be a folder, and this is a file")
    folders = [name for name in OUTPUT_NAMES if (folder / name).is_dir()]
    if folders:
        what = "is a folder" if len(folders) == 1 else "are folders"
        raise ValueError(f"--out {out}: {', '.join(folders)} there {what}, where crossplay writes a file; "
                         "use another --out folder")
    odd = [name for name in OUTPUT_NAMES if os.path.lexists(folder / name) and not (folder / name).is_file()]
    if odd:  # a pipe would hang the write after every game, a broken link write elsewhere
        raise ValueError(f"--out {out}: {', '.join(odd)} there {'is' if len(odd) == 1 else 'are'} not a "
                         "regular file (a pipe, device or broken link), which --force does not replace; "
                         "use another --out folder")
    taken = [name for name in OUTPUT_NAMES if os.path.lexists(folder / name)]
    if taken and not force:
        raise ValueError(f"--out {out}: already holds {', '.join(taken)}; pass --force to replace "
                         f"{'it' if len(taken) == 1 else 'them'}, or use another --out folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"--out {out}: cannot make the folder ({exc.strerror or exc})") from None
    for name in OUTPUT_NAMES:
        check_output_file(folder / name, "--out")


def run(ns: argparse.Namespace) -> int:
    """``canasta crossplay`` entry point: check, play, print the tables (or JSON), write the files."""
    from canasta_env.rules import load_rules
    from train.evaluation.crossplay import check_setup, crossplay, label_of

    o = CrossplayOptions(**{f.name: getattr(ns, f.name) for f in dataclasses.fields(CrossplayOptions)})
    rules = load_rules(o.rules)
    check_setup(rules, [label_of(a) for a in o.agents], o.opponents, o.deals, o.resamples)
    if not 0 <= o.seed < 2**63:
        raise ValueError(f"--seed {o.seed}: want a value in [0, 2**63 - 1]")
    _check_out(o.out, o.force)
    start = time.perf_counter()
    result = crossplay(rules, o.agents, o.opponents, o.deals, seed=o.seed, resamples=o.resamples,
                       progress=not o.json)
    seconds = time.perf_counter() - start
    command = command_line(o)
    # printed before the files are written: a write that still fails does not lose the results
    if o.json:
        print(json.dumps({**result.to_json(), "command": command, "seconds": round(seconds, 1)}, indent=1),
              flush=True)
    else:
        result.print_tables()
        print(f"command: {command}  ({seconds:.0f} s)", flush=True)
    written = result.save(o.out) if o.out is not None else []
    if written and not o.json:
        print(f"written: {', '.join(str(p) for p in written)}")
    return 0
