"""``canasta tournament``: round robins and gauntlets between agents and checkpoints.

Entrants meet in matches (a pair when the game has two sides, a triple at three players) played on
the batch engine through ``agents.match.play_games``. Every match plays the same deals: deal d is
``DealId(seed, d, 0)`` or entry d of a fixed deal set. With ``duplicate`` each deal is replayed in
every seating of the match's entrants (sides swapped; all 6 permutations at three players), so each
entrant plays each hand from every position and the luck of the deal cancels; without it deal d is
played once, in seating ``d mod seatings``. ``hands`` counts hands played per match either way, so
the two designs can be compared at equal cost.

Results are a pure function of the configuration (agent randomness is keyed by deal, seating and
entrant), so a run interrupted and resumed with the same ``out`` folder replays no finished work
and ends with the same numbers as an uninterrupted one. Statistics are in ``train.tournament_report``.
"""

from __future__ import annotations

import contextlib
import csv
import itertools
import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from canasta_env.messages import short_repr
from canasta_env.rules import RuleSet, load_rules
from train.folder_lock import FolderLock
from train.hand_table import SIDE_COLUMNS, hand_columns, labelled

FORMAT = "canasta-tournament"
# What a tournament writes in its --out folder besides tournament.json (train.tournament_report)
OUTPUT_NAMES = ("hands.csv", "records.jsonl", "results.json", "ratings.csv", "head_to_head.csv",
                "outcomes.csv", "openskill.csv", "ratings.png", "head_to_head.png")
DEALS_PER_UNIT = 1024  # deals per unit of work (the resume granularity), all seatings of each


@dataclass
class TournamentConfig:
    """Everything that determines a tournament's results (checked on resume)."""

    rules: dict[str, Any]  # the full option set (RuleSet.to_dict)
    entrants: list[str]  # labels, unique
    specs: list[str]  # what each entrant was built from (agent name or checkpoint path)
    hands: int
    duplicate: bool = False
    vs: str | None = None
    partners: str | None = None
    seed: int = 0
    deal_set: str | None = None  # deal set name and content hash
    resamples: int = 2000
    target_margin: float | None = None
    records: bool = False  # game records beside the hand log (a resume must keep writing them)


@dataclass
class Plan:
    """The matches and how their games are laid out."""

    sides: int
    matches: list[tuple[int, ...]]  # entrant indices, one per side of the match
    seatings: list[tuple[int, ...]]  # seating k: side q is held by the match's entrant seatings[k][q]
    deals: int
    games_per_deal: int  # seatings played per deal
    partner: int | None = None  # agent index of the fixed partner (4p --partners)

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
    return seats


# Per-hand columns: identity of the game, then one column per side for each outcome.
def play_unit(rules: RuleSet, agents: list[Any], plan: Plan, match_index: int, deals: npt.NDArray[np.int64],
              deal_source: Any, seed: int, labels: list[str] | None = None
              ) -> tuple[dict[str, npt.NDArray[Any]], list[Any]]:
    """Play every game of one match on the given deals: per-hand columns (entrants as indices) and,
    when seat ``labels`` are given, a game record of every hand."""
    from agents.match import play_games

    match = plan.matches[match_index]
    deal, seating = plan.games(deals)
    seats = seat_table(plan, match, seating, rules.num_players)
    dealt = deal_source(deal)
    record_seats = None if labels is None else [[labels[a] for a in row] for row in seats]
    meta = {"tournament_match": match_index, "tournament_unit": int(deals[0]) // DEALS_PER_UNIT}
    out = play_games(rules, agents, seats, dealt, deal * len(plan.seatings) + seating, seed,
                     record_seats, meta)
    cols: dict[str, npt.NDArray[Any]] = {
        "match": np.full(deal.size, match_index), "deal": deal, "seating": seating}
    side_entrant = seats[:, :plan.sides]
    per_side = {"entrant": side_entrant, "score": out.scores, "pile_takes": out.pile_takes,
                "natural_canastas": out.natural_canastas, "mixed_canastas": out.mixed_canastas,
                "wild_canastas": out.wild_canastas, "sevens_canastas": out.sevens_canastas,
                "red_threes": out.red_threes,
                "opened": out.opened.astype(np.int64)}
    for q in range(plan.sides):
        for c in SIDE_COLUMNS:
            cols[f"side{q}_{c}"] = per_side[c][:, q]
    cols["went_out_seat"] = out.went_out
    cols["went_out_side"] = np.where(out.went_out >= 0, out.went_out % plan.sides, -1)
    cols["decisions"] = out.decisions
    cols["truncated"] = out.truncated.astype(np.int64)
    cols["seats"] = seats
    return cols, out.records


class HandLog:
    """Append-only CSV of finished units in an output folder; reloaded on resume."""

    def __init__(self, out: Path, config: TournamentConfig, sides: int, labels: list[str]) -> None:
        self.path = out / "hands.csv"
        self.records_path = out / "records.jsonl"
        self.columns = hand_columns(sides)
        self.labels = labels  # of the agents, entrants first
        out.mkdir(parents=True, exist_ok=True)
        cfg_path = out / "tournament.json"
        wanted = json.loads(json.dumps({"format": FORMAT, **asdict(config)}))
        if not cfg_path.exists():  # not a tournament's folder: its files of these names are not ours
            taken = [name for name in OUTPUT_NAMES if (out / name).exists()]
            if taken:
                raise ValueError(f"{out} holds {', '.join(taken)} but no tournament.json, so they are "
                                 "not a tournament's to resume or replace; use a new --out folder")
        if cfg_path.exists():
            try:
                found = json.loads(cfg_path.read_text(encoding="utf-8"))
            except (ValueError, RecursionError) as e:  # bad JSON or UTF-8, nesting too deep
                raise ValueError(f"{cfg_path}: not valid JSON ({short_repr(str(e), 120)}); use a new "
                                 "--out folder") from None
            if not isinstance(found, dict):
                raise ValueError(f"{cfg_path}: not a tournament's settings (a JSON {type(found).__name__}, "
                                 "not an object); use a new --out folder")
            diff = {k: (found.get(k), v) for k, v in wanted.items() if found.get(k) != v}
            if diff:
                detail = "; ".join(f"{k}: was {a!r}, now {b!r}" for k, (a, b) in diff.items())
                raise ValueError(f"{out} holds a different tournament ({detail}); use a new --out folder")
        else:
            cfg_path.write_text(json.dumps(wanted, indent=2))

    def load(self) -> list[dict[str, str]]:
        """Rows of the log (a torn last line from an interruption is dropped)."""
        if not self.path.exists():
            return []
        try:
            with self.path.open(newline="", encoding="utf-8") as f:
                text = f.read()
        except UnicodeDecodeError:
            raise ValueError(f"{self.path}: not UTF-8 text, so not a tournament hand log") from None
        lines = text.splitlines(keepends=True)
        if lines and not lines[-1].endswith("\n"):
            lines = lines[:-1]
        rows = list(csv.DictReader(lines))
        if rows and list(rows[0].keys()) != self.columns:
            raise ValueError(f"{self.path}: columns {list(rows[0].keys())} are not a tournament hand log")
        return [r for r in rows if None not in r.values()]

    def rewrite(self, rows: list[dict[str, str]]) -> None:
        """Keep only ``rows`` (complete units) before appending more."""
        tmp = self.path.with_suffix(".tmp")
        with tmp.open("w", newline="") as f:
            writer = csv.DictWriter(f, self.columns)
            writer.writeheader()
            writer.writerows(rows)
        os.replace(tmp, self.path)

    def keep_records(self, done: set[tuple[int, int]]) -> None:
        """Drop the game records of units not in ``done`` (written before an interruption)."""
        if not self.records_path.exists():
            return
        kept = []
        for line in self.records_path.read_text().splitlines(keepends=True):
            try:
                meta = json.loads(line).get("meta", {})
                ours = line.endswith("\n") and (meta.get("tournament_match"),
                                                  meta.get("tournament_unit")) in done
            except (ValueError, RecursionError, AttributeError, TypeError):
                continue  # a torn last line, or a line that is not a record of this tournament
            if ours:
                kept.append(line)
        tmp = self.records_path.with_suffix(".tmp")
        tmp.write_text("".join(kept))
        os.replace(tmp, self.records_path)

    def append_records(self, records: list[Any]) -> None:
        from canasta_env.records import write_records

        write_records(self.records_path, records)

    def append(self, cols: dict[str, npt.NDArray[Any]], refs: list[str]) -> None:
        """Append one finished unit and force it to disk (after its game records: a unit counts
        as done once its hands are in the log)."""
        new = not self.path.exists()
        with self.path.open("a", newline="") as f:
            writer = csv.writer(f)
            if new:
                writer.writerow(self.columns)
            named = labelled({**cols, "deal_ref": refs}, self.labels)
            writer.writerows(zip(*(named[c] for c in self.columns), strict=True))
            f.flush()
            os.fsync(f.fileno())


def _parse(rows: list[dict[str, str]], labels: list[str]) -> dict[str, npt.NDArray[Any]]:
    index = {name: i for i, name in enumerate(labels)}
    cols: dict[str, npt.NDArray[Any]] = {}
    for c in rows[0]:
        if c == "deal_ref":
            continue
        if c == "seats":
            cols[c] = np.array([[index[s] for s in r[c].split("|")] for r in rows], dtype=np.int64)
        elif c.endswith("_entrant"):
            cols[c] = np.array([index[r[c]] for r in rows], dtype=np.int64)
        else:
            cols[c] = np.array([int(r[c]) for r in rows], dtype=np.int64)
    return cols


@dataclass
class Entrant:
    label: str
    spec: str
    agent: Any = field(repr=False, default=None)


def build_entrants(rules: RuleSet, entrants: Sequence[Any]) -> list[Entrant]:
    """Entrants from agent names, checkpoint paths or ``(label, agent)`` pairs; repeated names get
    ``#2``, ``#3`` labels (two copies of ``random`` are two entrants with their own streams)."""
    from agents import make_agent

    built: list[Entrant] = []
    seen: dict[str, int] = {}
    for e in entrants:
        if isinstance(e, tuple):
            label, agent, spec = str(e[0]), e[1], f"python:{type(e[1]).__name__}"
        else:
            spec = str(e)
            label, agent = spec.rstrip("/"), make_agent(spec, rules)
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            label = f"{label}#{seen[label]}"
        built.append(Entrant(label, spec, agent))
    return built


def run(rules: RuleSet | str, entrants: Sequence[Any], hands: int = 2000, *, duplicate: bool = False,
        vs: str | None = None, partners: Any = None, seed: int = 0, deal_set: str | None = None,
        out: str | Path | None = None, resamples: int = 2000, target_margin: float | None = None,
        records: bool = False, ladder: str | Path | None = None, progress: bool = False,
        plots: bool = True, on_ray: str | None = None) -> Any:
    """Play a tournament and return its ``TournamentResult`` (see the module docstring).

    The ``out`` folder is locked for the whole tournament (``train.folder_lock``): a second
    tournament on it fails at once naming the holder's PID.

    Args:
        rules: preset name, YAML path or ``RuleSet``.
        entrants: agent names (``random``, ``greedy``, ``heuristic``), checkpoint or run folders, or
            ``(label, agent)`` pairs of agent objects.
        hands: hands played per match.
        duplicate: replay each deal in every seating of the match.
        vs: an entrant's label: play a gauntlet (that entrant against each other) instead of a round
            robin.
        partners: an agent (a name as for entrants, or an agent object) that partners every entrant
            (4 players); by default a side is two copies of one entrant.
        seed: names the deals (``DealId(seed, d, 0)``) and the agents' random streams.
        deal_set: a fixed deal set (``v1``, ``classic_2p-v1`` or a path): deal d is its entry d.
        out: folder for the hand log, results and plots; re-running with it resumes.
        records: also write every hand as a game record to ``out/records.jsonl``
            (``canasta replay`` reads it).
        ladder: a JSON file of OpenSkill ratings kept across tournaments: this one's OpenSkill view
            starts from it and is stored back (once per tournament; created if missing).
        resamples: bootstrap resamples of deals for every interval.
        target_margin: report the deals needed to detect this mean margin per pair.
        on_ray: play the units as Ray tasks (``train.ray_units``): ``"local"`` starts Ray here,
            ``"auto"`` or ``"host:port"`` joins a cluster. The results are those of a local run.
    """
    from canasta_env.deal_sets import load_deal_set
    from canasta_env.engine import DealId

    rules = load_rules(rules)
    if records and out is None:
        raise ValueError("records are written into the output folder: give --out")
    if out is not None and Path(out).exists() and not Path(out).is_dir():
        raise ValueError(f"{out}: --out must be a folder, and this is a file")
    if ladder is not None:
        from train.tournament_report import read_ladder

        read_ladder(Path(ladder))  # a bad ladder is refused now, not after the games
    if on_ray is not None:  # an unreachable cluster is refused before any work
        from train.ray_units import connect

        connect(on_ray)
    lock = FolderLock(out, "tournament folder") if out is not None else None
    if lock is not None:
        lock.probe()
    people = build_entrants(rules, entrants)
    labels = [e.label for e in people]
    plan = make_plan(rules, labels, hands, duplicate, vs, partners is not None)
    agents = [e.agent for e in people]
    partner_label = None
    if partners is not None:
        from agents import make_agent

        if isinstance(partners, str):
            partner_label = partners
            agents.append(make_agent(partners, rules))
        elif callable(getattr(partners, "act", None)):
            partner_label = f"python:{type(partners).__name__}"
            agents.append(partners)
        else:
            raise ValueError(f"partners must be an agent name or an agent object with act(), got "
                             f"{type(partners).__name__}")
    if deal_set is not None:
        dset = load_deal_set(deal_set, rules)
        if plan.deals > len(dset):
            raise ValueError(f"deal set {dset.name} holds {len(dset)} deals; {plan.deals} needed")

        def deal_source(d: npt.NDArray[np.int64]) -> list[Any]:
            return dset.deals(d)

        def refs(d: npt.NDArray[np.int64]) -> list[str]:
            return [dset.reference(int(i)) for i in d]
        set_name = f"{dset.name}@{dset.sha256[:16]}"
    else:
        def deal_source(d: npt.NDArray[np.int64]) -> list[Any]:
            return [DealId(seed, int(i), 0) for i in d]

        def refs(d: npt.NDArray[np.int64]) -> list[str]:
            return [f"DealId({seed},{int(i)},0)" for i in d]
        set_name = None
    config = TournamentConfig(rules.to_dict(), labels, [e.spec for e in people], hands, duplicate, vs,
                              partner_label, seed, set_name, resamples, target_margin, records)
    all_labels = labels + ([f"partner:{partner_label}"] if partner_label else [])
    units = [(m, np.arange(s, min(s + DEALS_PER_UNIT, plan.deals)))
             for m in range(len(plan.matches)) for s in range(0, plan.deals, DEALS_PER_UNIT)]
    with lock if lock is not None else contextlib.nullcontext():
        return _play(rules, config, plan, agents, all_labels, units, deal_source, refs, seed, records,
                     out, ladder, progress, plots, on_ray)


def _play(rules: RuleSet, config: TournamentConfig, plan: Plan, agents: list[Any], all_labels: list[str],
          units: list[tuple[int, npt.NDArray[np.int64]]], deal_source: Any, refs: Any, seed: int,
          records: bool, out: str | Path | None, ladder: str | Path | None, progress: bool,
          plots: bool, on_ray: str | None) -> Any:
    """The body of ``run`` once the tournament is laid out (and its folder locked)."""
    from train.tournament_report import summarize

    log = HandLog(Path(out), config, plan.sides, all_labels) if out is not None else None
    done: dict[tuple[int, int], list[dict[str, str]]] = {}
    if log is not None:
        for row in log.load():
            done.setdefault((int(row["match"]), int(row["deal"]) // DEALS_PER_UNIT), []).append(row)
        expected = {(m, int(d[0]) // DEALS_PER_UNIT): d.size * plan.games_per_deal for m, d in units}
        done = {k: v for k, v in done.items() if expected.get(k) == len(v)}
        log.rewrite([r for k in sorted(done) for r in done[k]])
        if records:
            log.keep_records(set(done))
    pieces: list[dict[str, npt.NDArray[Any]]] = []
    total = sum(d.size for _, d in units) * plan.games_per_deal
    from tqdm import tqdm

    def key(unit: tuple[int, npt.NDArray[np.int64]]) -> tuple[int, int]:
        return unit[0], int(unit[1][0]) // DEALS_PER_UNIT

    pending = [u for u in units if key(u) not in done]
    shared = (rules, agents, plan, deal_source, seed, all_labels if records else None)
    if on_ray is not None:
        from train.ray_units import play_units

        results = play_units(shared, pending, on_ray)
    else:
        results = (play_unit(rules, agents, plan, m, d, *shared[3:]) for m, d in pending)
    with tqdm(total=total, unit="hand", disable=not progress, desc="tournament") as bar:
        for m, d in units:
            if key((m, d)) in done:
                pieces.append(_parse(done[key((m, d))], all_labels))
            else:
                cols, recs = next(results)
                if log is not None:
                    if records:
                        log.append_records(recs)
                    log.append(cols, refs(cols["deal"]))
                pieces.append(cols)
            bar.update(d.size * plan.games_per_deal)
    hands_cols = {c: np.concatenate([p[c] for p in pieces]) for c in pieces[0]}
    hands_cols["deal_ref"] = np.array(refs(hands_cols["deal"]), dtype=object)
    result = summarize(config, plan, all_labels, hands_cols, Path(ladder) if ladder is not None else None)
    if out is not None:
        result.save(Path(out), plots=plots)
    return result
