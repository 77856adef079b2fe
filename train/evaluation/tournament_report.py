"""Statistics, tables, files and plots of a tournament's hands (``train.evaluation.tournament``).

Units of inference are deals: every interval resamples deals (a deal's seatings stay together) with
one shared set of resamples, so ratings, win rates and margins move together across pairs.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from train.evaluation.ladder import rate_on_ladder
from train.evaluation.ratings import (
    PairData,
    bootstrap_mean_ci,
    bt_ratings,
    deals_to_separate,
    holm,
    interval_text,
    resample_weights,
    sign_flip_pvalue,
)
from train.evaluation.tournament_luck import luck_rows

PERMUTATIONS = 10_000


def pair_data(plan: Any, hands: dict[str, npt.NDArray[Any]], k: int) -> list[PairData]:
    """Per-deal outcomes of every pair of entrants that met, oriented as the matches list them (with
    the sides' luck when the hands carry it: ``canasta_env.luck``)."""
    pid = np.full((k + 1, k + 1), -1)
    sign = np.zeros((k + 1, k + 1))
    order: list[tuple[int, int]] = []
    for match in plan.matches:
        for a, b in itertools.combinations(match, 2):
            if pid[a, b] < 0:
                pid[a, b], pid[b, a] = len(order), len(order)
                sign[a, b], sign[b, a] = 1.0, -1.0
                order.append((a, b))
    lucky = "side0_luck" in hands
    shape = (len(order), plan.deals)
    wins, ties, losses, margin, luck, luck_win = (np.zeros(shape) for _ in range(6))
    deal = hands["deal"]
    for q1, q2 in itertools.combinations(range(plan.sides), 2):
        i, j = hands[f"side{q1}_entrant"], hands[f"side{q2}_entrant"]
        p = pid[i, j]
        diff = (hands[f"side{q1}_score"] - hands[f"side{q2}_score"]) * sign[i, j]
        np.add.at(wins, (p, deal), diff > 0)
        np.add.at(ties, (p, deal), diff == 0)
        np.add.at(losses, (p, deal), diff < 0)
        np.add.at(margin, (p, deal), diff)
        if lucky:
            np.add.at(luck, (p, deal), (hands[f"side{q1}_luck"] - hands[f"side{q2}_luck"]) * sign[i, j])
            np.add.at(luck_win, (p, deal),
                      (hands[f"side{q1}_luck_win"] - hands[f"side{q2}_luck_win"]) * sign[i, j])
    return [PairData(a, b, wins[n], ties[n], losses[n], margin[n], luck[n] if lucky else None,
                     luck_win[n] if lucky else None) for n, (a, b) in enumerate(order)]


def head_to_head(pairs: list[PairData], labels: list[str], resamples: int, seed: int,
                 target_margin: float | None) -> list[dict[str, Any]]:
    """Win rate (ties 1/2) and mean margin per deal with deal-bootstrap intervals, sign-flip
    permutation p-values (Holm-adjusted across pairs) and, optionally, the deals to separate."""
    if not pairs:
        return []
    weights = resample_weights(pairs[0].wins.size, resamples, seed)
    rows = []
    for n, p in enumerate(pairs):
        played = p.played
        games = p.games[played]
        deal_margin = p.margin_sum[played] / games
        deal_win = (p.wins[played] + 0.5 * p.ties[played]) / games
        w = weights[:, played]
        w = w / w.sum(axis=1, keepdims=True) * played.sum()  # resampled played deals, mean-preserving
        m_lo, m_hi = bootstrap_mean_ci(deal_margin, w)
        w_lo, w_hi = bootstrap_mean_ci(deal_win, w)
        row = {"a": labels[p.i], "b": labels[p.j], "deals": int(played.sum()), "hands": int(games.sum()),
               "win_rate": float(deal_win.mean()), "win_lo": w_lo, "win_hi": w_hi,
               "mean_margin": float(deal_margin.mean()), "margin_lo": m_lo, "margin_hi": m_hi,
               "margin_sd": float(deal_margin.std(ddof=1)) if deal_margin.size > 1 else math.nan,
               "p_value": sign_flip_pvalue(deal_margin, PERMUTATIONS, seed + 7919 * (n + 1))}
        if target_margin is not None:
            row["deals_needed"] = deals_to_separate(deal_margin, target_margin)
        rows.append(row)
    for row, adj in zip(rows, holm([r["p_value"] for r in rows]), strict=True):
        row["p_holm"] = float(adj)
    return rows


def openskill_view(plan: Any, hands: dict[str, npt.NDArray[Any]], labels: list[str],
                   prior: dict[str, dict[str, float]] | None = None) -> list[dict[str, Any]]:
    """OpenSkill (Plackett-Luce) ratings updated game by game in the log's order, starting from
    ``prior`` (a ladder's ratings by label) where given: a second view for long-running ladders,
    where ratings drift as agents change; not used for the intervals."""
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    prior = prior or {}
    players = {i: model.rating(mu=prior[name]["mu"], sigma=prior[name]["sigma"], name=name)
               if name in prior else model.rating(name=name) for i, name in enumerate(labels)}
    ent = np.stack([hands[f"side{q}_entrant"] for q in range(plan.sides)], axis=1)
    score = np.stack([hands[f"side{q}_score"] for q in range(plan.sides)], axis=1)
    games = np.zeros(len(labels), dtype=np.int64)
    for g in range(ent.shape[0]):
        teams = [[players[int(i)]] for i in ent[g]]
        rated = model.rate(teams, scores=[float(s) for s in score[g]])
        for i, team in zip(ent[g], rated, strict=True):
            players[int(i)] = team[0]
            games[int(i)] += 1
    return [{"entrant": labels[i], "mu": float(r.mu), "sigma": float(r.sigma), "ordinal": float(r.ordinal()),
             "games": int(games[i]) + int(prior.get(labels[i], {}).get("games", 0))}
            for i, r in players.items()]


def outcome_stats(plan: Any, hands: dict[str, npt.NDArray[Any]], labels: list[str]) -> list[dict[str, Any]]:
    """Per entrant, over the hands its side played: mean score, going-out, opening, canastas by kind,
    pile takes, red threes and hand length (decisions)."""
    metrics = ("score", "natural_canastas", "mixed_canastas", "wild_canastas", "sevens_canastas",
               "pile_takes", "red_threes", "opened")
    k = len(labels)
    ent = np.concatenate([hands[f"side{q}_entrant"] for q in range(plan.sides)])
    count = np.bincount(ent, minlength=k).astype(np.float64)
    out = {m: np.bincount(ent, np.concatenate([hands[f"side{q}_{m}"] for q in range(plan.sides)]), k)
           for m in metrics}
    went = np.concatenate([hands["went_out_side"] == q for q in range(plan.sides)])
    length = np.concatenate([hands["decisions"]] * plan.sides)
    out["went_out"] = np.bincount(ent, went.astype(np.float64), k)
    out["hand_length"] = np.bincount(ent, length.astype(np.float64), k)
    rows = []
    for i in range(k):
        if count[i] == 0:
            continue
        row: dict[str, Any] = {"entrant": labels[i], "hands": int(count[i])}
        row.update({("went_out_rate" if m == "went_out" else "opened_rate" if m == "opened" else m):
                    float(v[i] / count[i]) for m, v in out.items()})
        rows.append(row)
    return rows


@dataclass
class TournamentResult:
    """A finished tournament: configuration, every hand, and the statistics of ``summarize``."""

    config: dict[str, Any]
    labels: list[str]  # entrants, then the fixed partner if any
    hands: dict[str, npt.NDArray[Any]]  # per-hand columns, entrants as indices into labels
    rating_rows: list[dict[str, Any]]
    tie_nu: float
    h2h_rows: list[dict[str, Any]]
    openskill_rows: list[dict[str, Any]]
    outcome_rows: list[dict[str, Any]]
    luck_rows: list[dict[str, Any]] = field(default_factory=list)  # luck-corrected runs: tournament_luck

    def to_pandas(self) -> Any:
        """One row per hand: match, deal (index and reference), seating, seats, per-side outcomes."""
        import pandas as pd

        from train.evaluation.hand_table import hand_columns, labelled

        return pd.DataFrame(labelled(self.hands, self.labels))[hand_columns(self.config_sides)]

    @property
    def config_sides(self) -> int:
        return sum(1 for c in self.hands if c.endswith("_entrant"))

    @property
    def ratings(self) -> Any:
        return _frame(self.rating_rows)

    @property
    def head_to_head(self) -> Any:
        return _frame(self.h2h_rows)

    @property
    def openskill(self) -> Any:
        return _frame(self.openskill_rows)

    @property
    def outcomes(self) -> Any:
        return _frame(self.outcome_rows)

    def to_json(self) -> dict[str, Any]:
        """Everything, as plain data (NaN as null)."""
        hands = self.to_pandas().to_dict(orient="records")
        data = {"config": self.config, "ratings": self.rating_rows, "tie_nu": self.tie_nu,
                "head_to_head": self.h2h_rows, "openskill": self.openskill_rows,
                "outcomes": self.outcome_rows, "hands": hands}
        if self.luck_rows:
            data["luck_corrected"] = self.luck_rows
        return _clean(data)

    def save(self, out: Path, plots: bool = True) -> None:
        """results.json, ratings/head_to_head/outcomes CSVs (and hands.csv if missing), PNG plots."""
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.json").write_text(json.dumps(self.to_json(), indent=1))
        self.ratings.to_csv(out / "ratings.csv", index=False)
        self.head_to_head.to_csv(out / "head_to_head.csv", index=False)
        self.outcomes.to_csv(out / "outcomes.csv", index=False)
        self.openskill.to_csv(out / "openskill.csv", index=False)
        if not (out / "hands.csv").exists():
            self.to_pandas().to_csv(out / "hands.csv", index=False)
        if plots:
            self.plot_ratings(out / "ratings.png")
            self.plot_head_to_head(out / "head_to_head.png")

    def plot_ratings(self, target: Any = None) -> Any:
        """Ratings with their 95% intervals; ``target`` is a path to save to or matplotlib axes."""
        ax, fig = _axes(target, (6, 0.5 + 0.45 * len(self.rating_rows)))
        rows = sorted(self.rating_rows, key=lambda r: r["rating"])
        y = np.arange(len(rows))
        r = np.array([x["rating"] for x in rows])
        err = np.array([[x["rating"] - x["lo"], x["hi"] - x["rating"]] for x in rows]).T
        ax.errorbar(r, y, xerr=err, fmt="o", capsize=4)
        ax.set_yticks(y, [x["entrant"] for x in rows])
        ax.axvline(0, color="grey", lw=0.5)
        ax.set_xlabel("Davidson rating (Elo scale, mean 0), 95% deal-bootstrap interval")
        return _finish(fig, target)

    def plot_head_to_head(self, target: Any = None) -> Any:
        """Matrix of row-vs-column win rates (ties count a half)."""
        names = [r["entrant"] for r in self.rating_rows]
        k = len(names)
        ax, fig = _axes(target, (1.5 + 0.9 * k, 1.0 + 0.8 * k))
        mat = np.full((k, k), np.nan)
        pos = {n: i for i, n in enumerate(names)}
        for r in self.h2h_rows:
            mat[pos[r["a"]], pos[r["b"]]] = r["win_rate"]
            mat[pos[r["b"]], pos[r["a"]]] = 1.0 - r["win_rate"]
        im = ax.imshow(mat, vmin=0, vmax=1, cmap="RdBu")
        for i, j in itertools.product(range(k), range(k)):
            if not np.isnan(mat[i, j]):
                ax.text(j, i, f"{mat[i, j]:.2f}", ha="center", va="center", fontsize=8)
        ax.set_xticks(range(k), names, rotation=45, ha="right")
        ax.set_yticks(range(k), names)
        ax.set_title("win rate of row against column")
        if fig is not None:
            fig.colorbar(im, ax=ax)
        return _finish(fig, target)

    def print_tables(self) -> None:
        """Ratings, head-to-head and outcome tables on the terminal."""
        from rich.console import Console
        from rich.table import Table

        console = Console()
        if not console.is_terminal:
            console = Console(width=160)
        t = Table(title=f"Davidson ratings (Elo scale, 95% intervals from {self.config['resamples']} "
                        f"deal resamples; tie parameter {self.tie_nu:.3g})")
        for c in ("entrant", "rating", "95% interval", "OpenSkill mu", "sigma"):
            t.add_column(c, justify="left" if c == "entrant" else "right")
        skill = {r["entrant"]: r for r in self.openskill_rows}
        for r in sorted(self.rating_rows, key=lambda x: -x["rating"]):
            s = skill.get(r["entrant"], {"mu": math.nan, "sigma": math.nan})
            t.add_row(r["entrant"], f"{r['rating']:.0f}", interval_text(r["lo"], r["hi"], ".0f"),
                      f"{s['mu']:.1f}", f"{s['sigma']:.2f}")
        console.print(t)
        h = Table(title="head to head (per deal; p: sign-flip permutation test, Holm-adjusted)")
        cols = ["a", "b", "hands", "win rate", "mean margin", "p (Holm)"]
        if self.h2h_rows and "deals_needed" in self.h2h_rows[0]:
            cols.append(f"deals for margin {self.config['target_margin']:g}")
        for c in cols:
            h.add_column(c, justify="left" if c in ("a", "b") else "right")
        for r in self.h2h_rows:
            cells = [r["a"], r["b"], str(r["hands"]),
                     f"{r['win_rate']:.3f} {interval_text(r['win_lo'], r['win_hi'], '.3f')}",
                     f"{r['mean_margin']:.0f} {interval_text(r['margin_lo'], r['margin_hi'], '.0f')}",
                     f"{r['p_holm']:.4f}"]
            if "deals_needed" in r:
                cells.append("-" if r["deals_needed"] is None else str(r["deals_needed"]))
            h.add_row(*cells)
        console.print(h)
        o = Table(title="outcomes per hand played")
        keys = ["entrant", "hands", "score", "went_out_rate", "opened_rate", "natural_canastas",
                "mixed_canastas", "pile_takes", "red_threes", "hand_length"]
        if any(r["wild_canastas"] or r["sevens_canastas"] for r in self.outcome_rows):
            keys[7:7] = ["wild_canastas", "sevens_canastas"]  # Railroad, Pennies (R2, P2)
        for c in keys:
            o.add_column(c.replace("_", " "), justify="left" if c == "entrant" else "right")
        for r in self.outcome_rows:
            o.add_row(*[r[c] if c == "entrant" else f"{r[c]:.0f}" if c in ("score", "hand_length")
                        else f"{r[c]:.3f}" if isinstance(r[c], float) else str(r[c]) for c in keys])
        console.print(o)


def _frame(rows: list[dict[str, Any]]) -> Any:
    import pandas as pd

    return pd.DataFrame(rows)


def _clean(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_clean(v) for v in x]
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, float | np.floating):
        return None if math.isnan(x) else float(x)
    return x


def _axes(target: Any, size: tuple[float, float]) -> tuple[Any, Any]:
    if target is not None and hasattr(target, "plot"):
        return target, None
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=size)
    return ax, fig


def _finish(fig: Any, target: Any) -> Any:
    if fig is None:
        return target
    fig.tight_layout()
    if target is not None:
        import matplotlib.pyplot as plt

        fig.savefig(target, dpi=120)
        plt.close(fig)
        return target
    return fig


def ladder_id(config: Any) -> str:
    """The id under which a ladder file counts this tournament's games (its settings' hash). A rules
    option added later (``rules.LATER_OPTIONS``) at the value older versions played is left out, so
    a tournament keeps the id it had before the option existed and is not counted twice."""
    from canasta_env.rules import without_later_defaults

    settings = asdict(config)
    settings["rules"] = without_later_defaults(settings["rules"])
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]


def summarize(config: Any, plan: Any, labels: list[str], hands: dict[str, npt.NDArray[Any]],
              ladder: Path | None = None) -> TournamentResult:
    """All statistics of a tournament from its hands (pure: same hands, same numbers). With a
    ``ladder`` file the OpenSkill view starts from its ratings and is stored back into it."""
    k = len(config.entrants)
    pairs = pair_data(plan, hands, k)
    ratings = bt_ratings(pairs, k, config.resamples, config.seed)
    rating_rows = [{"entrant": labels[i], "rating": float(ratings.rating[i]), "lo": float(ratings.lo[i]),
                    "hi": float(ratings.hi[i])} for i in range(k)]
    if ladder is None:
        skill = openskill_view(plan, hands, labels[:k])
    else:
        skill = rate_on_ladder(ladder, ladder_id(config), labels[:k],
                               lambda prior: openskill_view(plan, hands, labels[:k], prior))
    return TournamentResult(
        config=asdict(config), labels=labels, hands=hands, rating_rows=rating_rows, tie_nu=ratings.tie_nu,
        h2h_rows=head_to_head(pairs, labels, config.resamples, config.seed, config.target_margin),
        openskill_rows=skill, outcome_rows=outcome_stats(plan, hands, labels[:k]),
        luck_rows=luck_rows(pairs, labels, config.resamples, config.seed) if "side0_luck" in hands else [])
