"""``canasta gauntlet AGENT``: one agent against every profile of the style population on
duplicate deals; a Markdown table, held-out profiles marked, and the minimum win rate."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from canasta_env.messages import short_repr
from train.common.options import AGENT_HELP, RULES_HELP, add_options, opt
from train.common.outputs import check_output_file, write_atomic
from train.evaluation.ratings import figure_text


@dataclass
class GauntletOptions:
    """The options of ``canasta gauntlet``."""

    agent: str = opt(help=f"the agent under test: {AGENT_HELP}", positional=True)
    rules: str = opt("classic_2p", RULES_HELP, metavar="RULES")
    opponents: list[str] | None = opt(None, "opponents (default: heuristic and every style profile)",
                                      metavar="AGENT")
    also: list[str] = opt(help="opponents added to the default ones (greedy, search, a checkpoint...)",
                          factory=list, metavar="AGENT")
    deals: int = opt(1000, "duplicate deals per opponent (each played in every seating)")
    deal_set: str = opt("v1", "fixed deal set: v1, classic_2p-v1 or a .npz path (its first --deals deals)")
    json: str | None = opt(None, "also write the rows to this JSON file", metavar="FILE")
    luck_correction: bool = opt(False, "also report the luck-corrected win rate and margin and their "
                                "variance ratios (docs/tournaments.md#luck-corrected-results)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``canasta gauntlet``."""
    add_options(parser, GauntletOptions)


def command_line(o: GauntletOptions) -> str:
    """The command that reproduces ``o``."""
    parts = ["canasta", "gauntlet", o.agent, "--rules", o.rules, "--deals", str(o.deals), "--deal-set",
             o.deal_set]
    if o.opponents is not None:
        parts += ["--opponents", *o.opponents]
    if o.also:
        parts += ["--also", *o.also]
    if o.luck_correction:
        parts.append("--luck-correction")
    return shlex.join(parts)


def run(ns: argparse.Namespace) -> int:
    """``canasta gauntlet`` entry point: play, print a Markdown table and the minimum."""
    from agents import make_agent
    from agents.rule_based.styles import style_agent_names
    from canasta_env.deal_sets import load_deal_set
    from canasta_env.luck import luck_weights
    from canasta_env.rules import load_rules
    from train.common.options import distinct_agents
    from train.evaluation.gauntlet import gauntlet_rows, weakest

    o = GauntletOptions(**{f.name: getattr(ns, f.name) for f in dataclasses.fields(GauntletOptions)})
    rules = load_rules(o.rules)
    if o.luck_correction:
        luck_weights(rules)  # rules without fitted weights: refused before any agent is built
    if o.json is not None:  # "" too: refused, not read as "no file"
        check_output_file(o.json, "--json")
    if not o.deal_set.strip():  # "" would be the working folder
        raise ValueError(f"--deal-set {short_repr(o.deal_set)}: not a deal set; give v1, a shipped set's "
                         "name or a .npz path")
    names = [*(style_agent_names() if o.opponents is None else o.opponents), *o.also]
    if not names:
        raise ValueError("--opponents: name at least one opponent")
    agent = make_agent(o.agent, rules)
    opponents = {name: make_agent(name, rules) for name in distinct_agents(names, rules)}
    dset = load_deal_set(o.deal_set, rules)
    deals = dset.first(o.deals, "--deals")
    print(f"{o.agent} on {rules.name}, {o.deals} deals of {dset.name} x {rules.num_sides} seatings "
          "(95% bootstrap intervals over deals; * held out of training)\n")
    luck_head = " luck-corrected win rate | luck-corrected margin | variance ratio (margin, win) |"
    print("| opponent | win rate | mean margin | went out |" + (luck_head if o.luck_correction else ""))
    print("|---|---|---|---|" + ("---|---|---|" if o.luck_correction else ""))
    rows = []
    for s in gauntlet_rows(rules, agent, opponents, deals, luck=o.luck_correction, name=o.agent):
        rows.append(s)
        print(f"| {s['opponent']}{' *' if s['held_out'] else ''} | "
              f"{figure_text(s, 'win_rate', 'win', '.3f')} | "
              f"{figure_text(s, 'mean_margin', 'margin', '.0f')} | {s['went_out']:.3f} |"
              + (_luck_cells(s) if o.luck_correction else ""), flush=True)
    worst = weakest(rows)
    print(f"\nminimum win rate: {figure_text(worst, 'win_rate', 'win', '.3f')} against {worst['opponent']}")
    command = command_line(o)
    print(f"command: {command}")
    if o.json is not None:
        data = {"agent": o.agent, "rules": rules.name, "deals": o.deals, "deal_set": dset.name,
                "command": command, "rows": [_finite(r) for r in rows]}
        try:  # whole or not at all: a failed write keeps the file there was
            write_atomic(Path(o.json), (json.dumps(data, indent=2, allow_nan=False) + "\n").encode())
        except OSError as exc:  # a full disk: the table above holds the figures
            raise ValueError(f"--json {o.json}: cannot write it ({exc.strerror or exc}); the table above "
                             "holds the results") from None
    return 0


def _finite(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with NaN (a variance ratio over deals that do not vary) as None: JSON has no NaN."""
    return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()}


def _luck_cells(s: dict[str, Any]) -> str:
    """The luck-corrected cells of a gauntlet row."""
    return (f" {figure_text(s, 'win_luck', 'win_luck', '.3f')} | "
            f"{figure_text(s, 'margin_luck', 'margin_luck', '.0f')} | "
            f"{s['margin_var_ratio']:.2f}, {s['win_var_ratio']:.2f} |")
