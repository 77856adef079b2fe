"""Luck-corrected head-to-head figures of a tournament played with ``luck_correction``.

Each hand of such a tournament carries every side's luck (``side{q}_luck`` in points and
``side{q}_luck_win`` in the win indicator: ``canasta_env.luck``). A pair's corrected margin in a hand
is its plain margin minus the difference of the two sides' luck, and likewise the win indicator; per
deal they are averaged over the deal's games, as the plain figures are, and the variance ratio is
the corrected per-deal variance over the plain one (below 1: the corrected interval is narrower).
"""

from __future__ import annotations

from typing import Any

from train.evaluation.ratings import PairData


def luck_rows(pairs: list[PairData], labels: list[str], resamples: int, seed: int) -> list[dict[str, Any]]:
    """One row per pair of entrants that met (``tournament_report.pair_data`` with luck sums): plain
    and luck-corrected win rate and mean margin per deal with bootstrap intervals, and the two
    variance ratios."""
    from agents.match import bootstrap_ci, luck_summary

    rows = []
    for p in pairs:
        if p.luck_sum is None or p.luck_win_sum is None:
            raise ValueError("this tournament was played without luck correction: no luck columns")
        played = p.played
        games = p.games[played]
        margin, luck = p.margin_sum[played] / games, p.luck_sum[played] / games
        win, luck_win = (p.wins[played] + 0.5 * p.ties[played]) / games, p.luck_win_sum[played] / games
        m_lo, m_hi = bootstrap_ci(margin, resamples, seed)
        w_lo, w_hi = bootstrap_ci(win, resamples, seed)
        rows.append({"a": labels[p.i], "b": labels[p.j], "deals": int(played.sum()),
                     "mean_margin": float(margin.mean()), "margin_lo": m_lo, "margin_hi": m_hi,
                     "win_rate": float(win.mean()), "win_lo": w_lo, "win_hi": w_hi,
                     **luck_summary("margin", margin, luck, resamples, seed),
                     **luck_summary("win", win, luck_win, resamples, seed)})
    return rows


def luck_table(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table."""
    lines = ["| a | b | deals | win rate | luck-corrected | ratio | mean margin | luck-corrected | ratio |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['a']} | {r['b']} | {r['deals']} | {r['win_rate']:.3f} [{r['win_lo']:.3f}, "
            f"{r['win_hi']:.3f}] | {r['win_luck']:.3f} [{r['win_luck_lo']:.3f}, {r['win_luck_hi']:.3f}] | "
            f"{r['win_var_ratio']:.2f} | "
            f"{r['mean_margin']:.0f} [{r['margin_lo']:.0f}, {r['margin_hi']:.0f}] | {r['margin_luck']:.0f} "
            f"[{r['margin_luck_lo']:.0f}, {r['margin_luck_hi']:.0f}] | {r['margin_var_ratio']:.2f} |")
    return "\n".join(lines)
