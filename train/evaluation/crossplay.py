"""Partner cross-play: how well an agent plays beside partners it never trained with (ad-hoc
teamwork; the cross-play matrix of Hanabi research).

In a partnership game (two sides of two or more seats: ``classic_4p``, ``pennies_6p``...) every
ordered pair (P1, P2) of the agents holds one side, P1 at the side's first seat and P2 at its other
seats, against fixed opponents: one agent at every opposing seat, or two (the first at the opposing
side's first seat, the second at its others). Every pair plays the same duplicate deals, each deal
in both seatings (sides swapped), through the tournament's plan and play loop
(``train.evaluation.tournament_plan``; ``Plan.second_seat`` seats P2 beside P1). The agents' random
streams are those of a tournament: P1 is agent 0, the first opponent agent 1, P2 agent 2 (on the
diagonal P1 plays both seats on one stream, as a tournament's side does) and a second opponent
agent 3. So the diagonal (P1 = P2, self-play) is exactly ``canasta tournament --duplicate`` of that
agent against the opponent on the same deals: the same hands and the same numbers.

A cell's figures are the tournament's head-to-head ones (``tournament_report.head_to_head``): win
rate (ties count a half) and mean margin per deal, with deal-bootstrap 95% intervals. Every cell
plays the same deals and uses the same resamples, so the summary (``summary_groups``: the mean of the
diagonal, the mean off it, their difference, and per agent its mean as a partner of the others and
its pairs' self-play minus cross-play) carries intervals from those resamples too.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from canasta_env.rules import RuleSet, load_rules
from train.evaluation.ratings import bootstrap_mean_ci, check_bootstrap, figure_text, resample_weights
from train.evaluation.tournament_plan import DEALS_PER_UNIT, Plan, make_plan, play_unit
from train.evaluation.tournament_report import head_to_head, pair_data

MAX_DEALS = 10**6
MAX_RESAMPLES = 100_000
# a heatmap's cells carry their figures up to this many agents; beyond, colours only (and tick labels
# up to MAX_TICKS), in a figure of this many cells' size: 120 agents drew a 9 GB figure for 2 minutes
MAX_ANNOTATED = 16
MAX_TICKS = 64
# a cell's columns in crossplay.csv, after p1 and p2 (head_to_head's figures, then the side's outcomes)
CELL_COLUMNS = ("self", "deals", "hands", "win_rate", "win_lo", "win_hi", "mean_margin", "margin_lo",
                "margin_hi", "margin_sd", "p_value", "went_out", "truncated")
SUMMARY_COLUMNS = ("group", "cells", "win_rate", "win_lo", "win_hi", "mean_margin", "margin_lo", "margin_hi")
# the files ``CrossplayResult.save`` writes (the heatmap last, only with ``plots``)
OUTPUT_NAMES = ("crossplay.csv", "crossplay_summary.csv", "crossplay.json", "crossplay.png")


def partnership_presets() -> list[str]:
    """The shipped presets crossplay accepts: two sides, each of two or more seats."""
    from canasta_env.rules import preset_names

    return [name for name in preset_names() if _partnership(load_rules(name))]


def _partnership(rules: RuleSet) -> bool:
    return rules.num_sides == 2 and rules.num_players > rules.num_sides


def label_of(entry: Any) -> str:
    """The label of an agent given by name (the name, as a tournament labels it) or as a
    ``(label, agent)`` pair."""
    return str(entry[0]) if isinstance(entry, tuple) else str(entry).rstrip("/")


def check_setup(rules: RuleSet, agents: Sequence[str], opponents: Sequence[str], deals: int,
                resamples: int = 2000) -> None:
    """Refuse, before any game is played, what crossplay cannot play: rules without partners, fewer
    than two agents or one named twice, however spelt (``agents.agent_key``: ``heuristic:eager`` and
    ``heuristic: eager`` were two agents, their cross-play a self-play), other than one or two
    opponents, and a count of deals or resamples out of range, alone or together (``MAX_BOOTSTRAP``)
    (``ValueError``, one line naming the flag)."""
    from train.common.options import repeated_agent, twice_message

    if not _partnership(rules):
        raise ValueError(f"--rules {rules.name}: crossplay needs a partnership game ({rules.num_players} "
                         f"players in {rules.num_sides} sides here); presets with partners: "
                         f"{', '.join(partnership_presets())}")
    if len(agents) < 2:
        raise ValueError(f"--agents: name at least 2 agents to pair, got {len(agents)}")
    pair = repeated_agent(agents, rules)
    if pair is not None:
        said = f"--agents: {pair[0]} named twice" if pair[0] == pair[1] else twice_message("--agents", pair)
        raise ValueError(f"{said}; name each agent once (the diagonal is its self-play)")
    if not 1 <= len(opponents) <= 2:
        raise ValueError(f"--opponents: one agent (at every opposing seat) or two (the first at the "
                         f"opposing side's first seat), got {len(opponents)}")
    if isinstance(deals, bool) or not isinstance(deals, int) or not 1 <= deals <= MAX_DEALS:
        raise ValueError(f"--deals {deals}: want a whole number in [1, {MAX_DEALS}]")
    if isinstance(resamples, bool) or not isinstance(resamples, int) or not 1 <= resamples <= MAX_RESAMPLES:
        raise ValueError(f"--resamples {resamples}: want a whole number in [1, {MAX_RESAMPLES}]")
    check_bootstrap(deals, resamples, f"--deals {deals}")


def summary_groups(agents: Sequence[str]) -> list[tuple[str, npt.NDArray[np.float64]]]:
    """The summary's figures as weights on the cells (row P1, column P2): the mean of the diagonal
    (self-play), the mean off it (cross-play) and their difference; per agent, its mean as a partner
    of the others (both seat orders), and its pairs' self-play minus cross-play: over every other
    agent b, the mean of the two self-play cells (a, a) and (b, b) minus the mean of (a, b) and (b, a).
    If a side were worth the mean of what its two agents are worth alone, every difference would be
    0: they measure how much better agents play beside a copy of themselves than beside each other."""
    k = len(agents)
    eye = np.eye(k)
    groups = [("self-play (diagonal)", eye / k), ("cross-play (off the diagonal)", (1 - eye) / (k * (k - 1))),
              ("self-play minus cross-play", eye / k - (1 - eye) / (k * (k - 1)))]
    groups += [(f"partner of others: {name}", _beside(a, k) / (2 * (k - 1))) for a, name in enumerate(agents)]
    for a, name in enumerate(agents):
        own = eye + (k - 2) * np.outer(eye[a], eye[a])  # (a, a) once per other agent b, each (b, b) once
        groups.append((f"self-play minus cross-play: {name}", (own - _beside(a, k)) / (2 * (k - 1))))
    return groups


def _beside(a: int, k: int) -> npt.NDArray[np.float64]:
    """Ones on the cells where agent ``a`` plays beside another agent (its row and column off the
    diagonal)."""
    beside = np.zeros((k, k))
    beside[a, :] = beside[:, a] = 1.0
    beside[a, a] = 0.0
    return beside


@dataclass
class CrossplayResult:
    """A finished cross-play: its settings, a row per ordered pair (P1 row-major, then P2) and the
    per-deal outcomes of every pair, (P1, P2, deal), from which ``summary`` is computed."""

    rules: str
    agents: list[str]
    opponents: list[str]
    deals: int
    seed: int
    resamples: int
    cells: list[dict[str, Any]]
    deal_wins: npt.NDArray[np.float64]  # share of the deal's seatings the side won, ties a half
    deal_margins: npt.NDArray[np.float64]  # the side's score minus the opponents', mean over seatings

    def matrix(self, key: str = "win_rate") -> npt.NDArray[np.float64]:
        """(agents, agents) figure ``key`` of every cell: row P1, column P2."""
        k = len(self.agents)
        return np.array([float(c[key]) for c in self.cells]).reshape(k, k)

    def summary(self) -> list[dict[str, Any]]:
        """The ``summary_groups`` of the matrix, each with its win rate and mean margin per deal and
        their deal-bootstrap intervals (one set of resamples for all, the cells' own)."""
        weights = resample_weights(self.deals, self.resamples, self.seed)
        rows = []
        for group, combine in summary_groups(self.agents):
            row: dict[str, Any] = {"group": group, "cells": int(np.count_nonzero(combine))}
            for key, per_deal in (("win", self.deal_wins), ("margin", self.deal_margins)):
                values = np.einsum("ij,ijd->d", combine, per_deal)
                lo, hi = bootstrap_mean_ci(values, weights)
                row.update({"win_rate" if key == "win" else "mean_margin": float(values.mean()),
                            f"{key}_lo": lo, f"{key}_hi": hi})
            rows.append(row)
        return rows

    def to_json(self) -> dict[str, Any]:
        """Settings, cells and summary as plain data (NaN as null)."""
        data = {"rules": self.rules, "agents": self.agents, "opponents": self.opponents, "deals": self.deals,
                "seatings": 2, "seed": self.seed, "resamples": self.resamples, "cells": self.cells,
                "summary": self.summary()}
        return _plain(data)

    def save(self, out: str | Path, plots: bool = True) -> list[Path]:
        """crossplay.csv (a row per cell), crossplay_summary.csv, crossplay.json and the heatmap
        crossplay.png (``OUTPUT_NAMES``) into ``out``, replacing files of those names; returns the paths
        written. All or none (``replace_files``): none replaces its file until all are written (a
        failed plot or a full disk under ``--force`` left this run's tables beside the last run's
        heatmap), and a replace that fails puts back the files replaced before it. ``canasta crossplay
        --out`` checks them before any game and keeps an earlier run's unless ``--force``. Without
        ``plots`` an earlier run's heatmap is removed, as it no longer shows these tables."""
        import csv
        import json

        from train.common.outputs import replace_files

        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)

        def table(columns: Sequence[str], rows: list[dict[str, Any]]) -> Any:
            def write(path: Path) -> None:
                with path.open("w", newline="", encoding="utf-8") as f:
                    writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
                    writer.writeheader()
                    writer.writerows(rows)
            return write

        text = json.dumps(self.to_json(), indent=1) + "\n"
        writers = [table(("p1", "p2", *CELL_COLUMNS), self.cells), table(SUMMARY_COLUMNS, self.summary()),
                   lambda path: path.write_text(text, encoding="utf-8"), self.plot][:4 if plots else 3]
        written = [folder / name for name in OUTPUT_NAMES[:len(writers)]]
        replace_files(list(zip(written, writers, strict=True)))
        stale = folder / OUTPUT_NAMES[-1]
        if not plots and not stale.is_dir():
            stale.unlink(missing_ok=True)
        return written

    def plot(self, path: str | Path) -> Path:
        """The win-rate matrix as a heatmap, the diagonal framed, each cell with its 95% interval up to
        ``MAX_ANNOTATED`` agents (beyond, colours only, the agents named up to ``MAX_TICKS``, and the
        figure no larger: its size grew with the agents and its memory with their square); PNG
        whatever ``path``'s suffix."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Rectangle

        k = len(self.agents)
        win, lo, hi = (self.matrix(key) for key in ("win_rate", "win_lo", "win_hi"))
        shown = min(k, MAX_ANNOTATED)  # the figure's size in cells
        fig, ax = plt.subplots(figsize=(2.2 + 1.25 * shown, 1.6 + 1.0 * shown))
        span = max(0.1, float(np.ceil(np.abs(win - 0.5).max() * 10) / 10))  # colours centred on 0.5
        image = ax.imshow(win, vmin=0.5 - span, vmax=0.5 + span, cmap="RdBu")
        for i, j in itertools.product(range(k), range(k)) if k <= MAX_ANNOTATED else ():
            ax.text(j, i, f"{win[i, j]:.3f}\n[{lo[i, j]:.2f}, {hi[i, j]:.2f}]", ha="center", va="center",
                    fontsize=7, color="white" if abs(win[i, j] - 0.5) > 0.6 * span else "black")
        for i in range(k):
            ax.add_patch(Rectangle((i - 0.5, i - 0.5), 1, 1, fill=False, lw=1.5 * shown / k, ec="black"))
        if k <= MAX_TICKS:
            size = 10 * min(1.0, MAX_ANNOTATED / k)
            ax.set_xticks(range(k), self.agents, rotation=30 if k <= MAX_ANNOTATED else 90, ha="right",
                          fontsize=size)
            ax.set_yticks(range(k), self.agents, fontsize=size)
        ax.set_xlabel("partner at the side's second seat (P2)")
        ax.set_ylabel("first seat (P1)")
        ax.set_title(f"{self.rules}: win rate of the side against {' + '.join(self.opponents)}\n"
                     f"{self.deals} deals x 2 seatings, 95% deal-bootstrap intervals", fontsize=9)
        fig.colorbar(image, ax=ax)
        fig.tight_layout()
        fig.savefig(path, dpi=110, format="png")
        plt.close(fig)
        return Path(path)

    def print_tables(self) -> None:
        """The matrix (win rate and mean margin, each with its interval) and the summary, as rich tables."""
        from rich.console import Console
        from rich.table import Table

        console = Console()
        if not console.is_terminal:
            console = Console(width=200)
        t = Table(title=f"{self.rules} partner cross-play against {' + '.join(self.opponents)}: win rate and "
                        f"mean margin of the side, {self.deals} deals x 2 seatings (95% deal-bootstrap "
                        "intervals)", show_lines=True)
        t.add_column("P1 \\ P2")
        for name in self.agents:
            t.add_column(name, justify="right")
        k = len(self.agents)
        for i in range(k):
            cells = self.cells[i * k:(i + 1) * k]
            t.add_row(self.agents[i], *[f"{figure_text(c, 'win_rate', 'win', '.3f')}\n"
                                        f"{figure_text(c, 'mean_margin', 'margin', '+.0f')}" for c in cells])
        console.print(t)
        s = Table(title="summary (means over cells, per deal)")
        for c in ("group", "cells", "win rate", "mean margin"):
            s.add_column(c, justify="left" if c == "group" else "right")
        for r in self.summary():
            s.add_row(r["group"], str(r["cells"]), figure_text(r, "win_rate", "win", ".3f"),
                      figure_text(r, "mean_margin", "margin", "+.0f"))
        console.print(s)


def crossplay(rules: RuleSet | str, agents: Sequence[Any], opponents: Sequence[Any], deals: int = 200, *,
              seed: int = 0, resamples: int = 2000, progress: bool = False) -> CrossplayResult:
    """Play every ordered pair of ``agents`` as partners against ``opponents`` (see the module
    docstring). Agents and opponents are names (as ``canasta tournament`` takes them) or
    ``(label, agent)`` pairs; deal d is ``DealId(seed, d, 0)``, in both seatings. Every name is
    built before the first game, so a bad one is refused at once."""
    from tqdm import tqdm

    from canasta_env.engine import DealId
    from train.evaluation.tournament import build_entrants

    rules = load_rules(rules)
    labels = [label_of(a) for a in agents]
    check_setup(rules, labels, [label_of(o) for o in opponents], deals, resamples)
    distinct = _one_opponent_each(rules, opponents)
    opponent_labels = [label_of(o) for o in distinct]
    team = [e.agent for e in build_entrants(rules, agents)]
    foes = [e.agent for e in build_entrants(rules, distinct)]
    base = make_plan(rules, ["side", "opponents"], 2 * deals, True, None, False)  # two seatings per deal

    def deal_source(d: npt.NDArray[np.int64]) -> list[DealId]:
        return [DealId(seed, int(i), 0) for i in d]

    k = len(team)
    wins, margins = np.zeros((k, k, deals)), np.zeros((k, k, deals))
    cells = []
    with tqdm(total=k * k * deals * base.games_per_deal, unit="hand", disable=not progress,
              desc="crossplay") as bar:
        for i, j in itertools.product(range(k), repeat=2):
            plan = dataclasses.replace(base, second_seat=(0 if i == j else 2, 3 if len(foes) == 2 else 1))
            roster = [team[i], foes[0], team[j], foes[-1]]
            names = [labels[i], opponent_labels[0], labels[j], opponent_labels[-1]]
            cell, wins[i, j], margins[i, j] = _play_pair(rules, roster, plan, deal_source, seed, resamples,
                                                         names)
            cells.append({"p1": labels[i], "p2": labels[j], "self": i == j, **cell})
            bar.update(deals * base.games_per_deal)
    return CrossplayResult(rules.name, labels, opponent_labels, deals, seed, resamples, cells, wins, margins)


def _one_opponent_each(rules: RuleSet, opponents: Sequence[Any]) -> list[Any]:
    """``opponents`` less a second naming of the first's agent, however spelt (``agents.agent_key``;
    a ``(label, agent)`` pair by its label): the same agent twice is one opponent at every opposing
    seat, on one stream (``heuristic: eager`` beside ``heuristic:eager`` was seated as a second one)."""
    from agents import agent_key

    seen: dict[Any, Any] = {}
    for o in opponents:
        seen.setdefault(("label", label_of(o)) if isinstance(o, tuple) else agent_key(str(o), rules), o)
    return list(seen.values())


def _play_pair(rules: RuleSet, roster: list[Any], plan: Plan, deal_source: Any, seed: int,
               resamples: int, names: list[str] | None = None
               ) -> tuple[dict[str, Any], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """One cell: its figures (as a tournament's head-to-head row) and its per-deal wins and margins.
    ``names``: the roster's labels, by which an agent failing in play is named (else ``#2 (Boom)``,
    its place in the roster)."""
    pieces = [play_unit(rules, roster, plan, 0, np.arange(s, min(s + DEALS_PER_UNIT, plan.deals)),
                        deal_source, seed, names=names)[0] for s in range(0, plan.deals, DEALS_PER_UNIT)]
    hands = {c: np.concatenate([p[c] for p in pieces]) for c in pieces[0]}
    pair = pair_data(plan, hands, 2)[0]  # entrant 0 (the side of P1 and P2) against entrant 1
    row = head_to_head([pair], ["side", "opponents"], resamples, seed, None)[0]
    own_side = np.where(hands["side0_entrant"] == 0, 0, 1)
    cell = {key: row[key] for key in CELL_COLUMNS if key in row}
    cell["went_out"] = float(np.mean(hands["went_out_side"] == own_side))
    cell["truncated"] = int(hands["truncated"].sum())
    return cell, (pair.wins + 0.5 * pair.ties) / pair.games, pair.margin_sum / pair.games


def _plain(x: Any) -> Any:
    """``x`` with numpy scalars as Python numbers and NaN as None (for JSON)."""
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_plain(v) for v in x]
    if isinstance(x, np.bool_ | bool):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, float | np.floating):
        return None if np.isnan(x) else float(x)
    return x
