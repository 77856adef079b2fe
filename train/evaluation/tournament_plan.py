"""How a tournament is laid out and played unit by unit: the matches and seatings (``Plan``), the
agents at each seat of each game, and ``play_unit``, one match on a block of deals (the unit of
work and of resume, local or a Ray task: ``train.evaluation.ray_units``)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from canasta_env.rules import RuleSet
from train.evaluation.hand_table import LUCK_COLUMNS, SIDE_COLUMNS

DEALS_PER_UNIT = 1024  # deals per unit of work (the resume granularity), all seatings of each


@dataclass
class Plan:
    """The matches and how their games are laid out."""

    sides: int
    matches: list[tuple[int, ...]]  # entrant indices, one per side of the match
    seatings: list[tuple[int, ...]]  # seating k: side q is held by the match's entrant seatings[k][q]
    deals: int
    games_per_deal: int  # seatings played per deal
    partner: int | None = None  # agent index of the fixed partner (4p --partners)
    # agent index at the other seats of a side, by the index of the agent at its first seat: per-seat
    # partners (train.evaluation.crossplay); None: a side is one agent (or it and the fixed partner)
    second_seat: tuple[int, ...] | None = None

    def games(self, deal: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """(deal, seating) of every game played on the given deals."""
        if self.games_per_deal == len(self.seatings):
            k = np.tile(np.arange(len(self.seatings)), deal.size)
            return np.repeat(deal, len(self.seatings)), k
        return deal, deal % len(self.seatings)


def make_plan(rules: RuleSet, entrants: Sequence[str], hands: int, duplicate: bool,
              vs: str | None, partners: bool) -> Plan:
    """Matches (round robin, or a gauntlet against ``vs``) and seatings for ``rules``."""
    sides, k = rules.num_sides, len(entrants)
    if k < sides:
        raise ValueError(f"{rules.name} needs at least {sides} entrants per game, got {k}")
    if vs is not None and vs not in entrants:
        raise ValueError(f"--vs {vs!r} is not one of the entrants {list(entrants)}")
    if partners and rules.num_players == sides:
        raise ValueError(f"--partners needs a partnership game; {rules.name} has no partners")
    if vs is None:
        matches = list(itertools.combinations(range(k), sides))
    else:
        x = entrants.index(vs)
        matches = [(x, *rest) for rest in itertools.combinations([i for i in range(k) if i != x], sides - 1)]
    seatings = (list(itertools.permutations(range(sides))) if sides <= 3
                else [tuple((q + r) % sides for q in range(sides)) for r in range(sides)])
    per_deal = len(seatings) if duplicate else 1
    if hands < per_deal or hands % per_deal:
        raise ValueError(f"--hands {hands}: with --duplicate a match plays each deal {per_deal} times, so "
                         f"hands must be a positive multiple of {per_deal}")
    return Plan(sides, matches, seatings, hands // per_deal, per_deal, k if partners else None)


def seat_table(plan: Plan, match: tuple[int, ...], seating: npt.NDArray[np.int64],
               players: int) -> npt.NDArray[np.int64]:
    """(G, players) agent index at each seat of each game of ``match``."""
    perms = np.array(plan.seatings, dtype=np.int64)[seating]  # (G, sides) match position per side
    side_entrant = np.array(match, dtype=np.int64)[perms]
    seats = side_entrant[:, np.arange(players) % plan.sides]
    if plan.partner is not None:
        seats[:, plan.sides:] = plan.partner
    elif plan.second_seat is not None:
        seats[:, plan.sides:] = np.asarray(plan.second_seat, dtype=np.int64)[seats[:, plan.sides:]]
    return seats


# Per-hand columns: identity of the game, then one column per side for each outcome.
def play_unit(rules: RuleSet, agents: list[Any], plan: Plan, match_index: int, deals: npt.NDArray[np.int64],
              deal_source: Any, seed: int, labels: list[str] | None = None, *, luck: Any = None,
              names: list[str] | None = None) -> tuple[dict[str, npt.NDArray[Any]], list[Any]]:
    """Play every game of one match on the given deals: per-hand columns (entrants as indices) and,
    when seat ``labels`` are given, a game record of every hand; with ``luck`` (a
    ``canasta_env.luck.LuckWeights``) each side's luck corrections."""
    from agents.match import play_games

    match = plan.matches[match_index]
    deal, seating = plan.games(deals)
    seats = seat_table(plan, match, seating, rules.num_players)
    dealt = deal_source(deal)
    record_seats = None if labels is None else [[labels[a] for a in row] for row in seats]
    meta = {"tournament_match": match_index, "tournament_unit": int(deals[0]) // DEALS_PER_UNIT}
    out = play_games(rules, agents, seats, dealt, deal * len(plan.seatings) + seating, seed,
                     record_seats, meta, luck=luck is not None, names=names or labels)
    cols: dict[str, npt.NDArray[Any]] = {
        "match": np.full(deal.size, match_index), "deal": deal, "seating": seating}
    side_entrant = seats[:, :plan.sides]
    per_side = {"entrant": side_entrant, "score": out.scores, "pile_takes": out.pile_takes,
                "natural_canastas": out.natural_canastas, "mixed_canastas": out.mixed_canastas,
                "wild_canastas": out.wild_canastas, "sevens_canastas": out.sevens_canastas,
                "red_threes": out.red_threes,
                "opened": out.opened.astype(np.int64)}
    if luck is not None and out.luck is not None:
        per_side["luck"] = np.round(out.luck @ luck.margin, 3)
        per_side["luck_win"] = np.round(out.luck @ luck.win, 5)
    for q in range(plan.sides):
        for c in SIDE_COLUMNS + (LUCK_COLUMNS if luck is not None else ()):
            cols[f"side{q}_{c}"] = per_side[c][:, q]
    cols["went_out_seat"] = out.went_out
    cols["went_out_side"] = np.where(out.went_out >= 0, out.went_out % plan.sides, -1)
    cols["decisions"] = out.decisions
    cols["truncated"] = out.truncated.astype(np.int64)
    cols["seats"] = seats
    return cols, out.records
