"""Luck-corrected head-to-head figures of a tournament played with ``luck_correction``.

Each hand of such a tournament carries every side's luck (``side{q}_luck`` in points and
``side{q}_luck_win`` in the win indicator: ``canasta_env.luck``). A pair's corrected margin in a hand
is its plain margin minus the difference of the two sides' luck, and likewise the win indicator; per
deal they are averaged over the deal's games, as the plain figures are, and the variance ratio is
the corrected per-deal variance over the plain one (below 1: the corrected interval is narrower).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import numpy.typing as npt


def luck_rows(hands: dict[str, npt.NDArray[Any]], labels: list[str], resamples: int,
              seed: int) -> list[dict[str, Any]]:
    """One row per pair of entrants that met: plain and luck-corrected win rate and mean margin per
    deal with bootstrap intervals, and the two variance ratios."""
    from agents.match import bootstrap_ci, luck_summary

    if "side0_luck" not in hands:
        raise ValueError("this tournament was played without luck correction: no luck columns")
    sums: dict[tuple[int, int], npt.NDArray[np.float64]] = {}  # (a, b) -> (deals, 5) sums
    deal = hands["deal"]
    sides, deals = sum(f"side{q}_luck" in hands for q in range(len(hands))), int(deal.max()) + 1
    for q1, q2 in itertools.combinations(range(sides), 2):
        i, j = hands[f"side{q1}_entrant"], hands[f"side{q2}_entrant"]
        flip = i > j
        a, b = np.where(flip, j, i), np.where(flip, i, j)
        sign = np.where(flip, -1.0, 1.0)
        diff = (hands[f"side{q1}_score"] - hands[f"side{q2}_score"]) * sign
        luck = (hands[f"side{q1}_luck"] - hands[f"side{q2}_luck"]) * sign
        luck_win = (hands[f"side{q1}_luck_win"] - hands[f"side{q2}_luck_win"]) * sign
        win = (diff > 0) + 0.5 * (diff == 0)
        values = np.stack([np.ones_like(diff, dtype=np.float64), diff, win, luck, luck_win], axis=1)
        for pair in set(zip(a.tolist(), b.tolist(), strict=True)):
            sel = (a == pair[0]) & (b == pair[1])
            acc = sums.setdefault(pair, np.zeros((deals, 5)))
            np.add.at(acc, deal[sel], values[sel])
    rows = []
    for (a, b), acc in sorted(sums.items()):
        per = acc[acc[:, 0] > 0]
        per = per[:, 1:] / per[:, :1]
        margin, win, luck, luck_win = per.T
        m_lo, m_hi = bootstrap_ci(margin, resamples, seed)
        w_lo, w_hi = bootstrap_ci(win, resamples, seed)
        rows.append({"a": labels[a], "b": labels[b], "deals": int(per.shape[0]),
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
