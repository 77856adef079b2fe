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
and ends with the same numbers as an uninterrupted one. Statistics are in
``train.evaluation.tournament_report``.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from canasta_env.rules import RuleSet, load_rules
from train.common.folder_lock import LOCK_FILE, FolderLock
from train.evaluation.hand_log import DAMAGED, OUTPUT_NAMES, HandLog, TournamentConfig
from train.evaluation.hand_rows import parse_rows
from train.evaluation.ratings import check_bootstrap
from train.evaluation.tournament_plan import DEALS_PER_UNIT, Plan, make_plan, play_unit


class LadderNotUpdated(OSError):
    """The tournament was played but its ladder could not be written: ``result`` holds its figures
    (summarized without the ladder, and saved to ``out`` where given), so no game is lost."""

    def __init__(self, message: str, result: Any) -> None:
        super().__init__(message)
        self.result = result


@dataclass
class Entrant:
    label: str
    spec: str
    agent: Any = field(repr=False, default=None)


def build_entrants(rules: RuleSet, entrants: Sequence[Any]) -> list[Entrant]:
    """Entrants from agent names, checkpoint paths or ``(label, agent)`` pairs; repeated names get
    ``#2``, ``#3`` labels (two copies of ``random`` are two entrants with their own streams), never
    one another entrant already holds (``a#2``, ``a``, ``a`` labelled the first and third alike, so
    their results, ratings and ladder entries were merged)."""
    from agents import make_agent

    built: list[Entrant] = []
    taken: set[str] = set()
    for e in entrants:
        if isinstance(e, tuple):
            label, agent, spec = str(e[0]), e[1], f"python:{type(e[1]).__name__}"
        else:
            spec = str(e)
            label, agent = spec.rstrip("/"), make_agent(spec, rules)
        base, n = label, 1
        while label in taken:
            n += 1
            label = f"{base}#{n}"
        taken.add(label)
        built.append(Entrant(label, spec, agent))
    return built


def _vs_label(vs: str | None, people: Sequence[Entrant], rules: RuleSet) -> str | None:
    """The label of the entrant that ``vs`` names: its label, or another spelling of its agent
    (``agents.agent_key``: a folder with the trailing ``/`` its label drops, ``./runs/x`` for
    ``runs/x``). Anything else is returned as it is, for ``make_plan`` to refuse."""
    from agents import agent_key

    if vs is None or any(e.label == vs for e in people):
        return vs
    key = agent_key(vs, rules)
    return next((e.label for e in people if agent_key(e.spec, rules) == key), vs)


def run(rules: RuleSet | str, entrants: Sequence[Any], hands: int = 2000, *, duplicate: bool = False,
        vs: str | None = None, partners: Any = None, seed: int = 0, deal_set: str | None = None,
        out: str | Path | None = None, resamples: int = 2000, target_margin: float | None = None,
        records: bool = False, ladder: str | Path | None = None, progress: bool = False,
        plots: bool = True, on_ray: str | None = None, luck_correction: bool = False) -> Any:
    """Play a tournament and return its ``TournamentResult`` (see the module docstring).

    The ``out`` folder is locked for the whole tournament (``train.common.folder_lock``): a second
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
        on_ray: play the units as Ray tasks (``train.evaluation.ray_units``): ``"local"`` starts Ray here,
            ``"auto"`` or ``"host:port"`` joins a cluster. The results are those of a local run.
        luck_correction: keep each side's luck corrections per hand (``canasta_env.luck``; the hand
            table's ``side{q}_luck`` columns, ``train.evaluation.tournament_luck``).
    """
    rules = load_rules(rules)
    luck = None
    if luck_correction:
        from canasta_env.luck import luck_weights

        luck = luck_weights(rules)
    _check_outputs(records, out, ladder)
    lock = FolderLock(out, "tournament folder") if out is not None else None
    if lock is not None:
        lock.probe()
    people = build_entrants(rules, entrants)
    labels = [e.label for e in people]
    vs = _vs_label(vs, people, rules)
    plan = make_plan(rules, labels, hands, duplicate, vs, partners is not None)
    check_bootstrap(plan.deals, resamples, f"--hands {hands} ({plan.deals:,} deals a match)")
    agents = [e.agent for e in people]
    partner_label = None
    if partners is not None:
        partner_label, partner = _partner(partners, rules)
        agents.append(partner)
    deal_source, refs, set_name = _deals(rules, plan, deal_set, seed)
    config = TournamentConfig(rules.to_dict(), labels, [e.spec for e in people], hands, duplicate, vs,
                              partner_label, seed, set_name, resamples, target_margin, records,
                              luck_correction)
    if ladder is not None:  # a ladder that counts this tournament must rate its entrants: before any game
        from train.evaluation.ladder import counted_ratings, read_ladder
        from train.evaluation.tournament_report import ladder_id

        counted_ratings(Path(ladder), read_ladder(Path(ladder)), ladder_id(config), labels)
    if on_ray is not None:  # last: every other argument is checked before a cluster starts
        from train.evaluation.ray_units import connect

        connect(on_ray)
    all_labels = labels + ([f"partner:{partner_label}"] if partner_label else [])
    units = [(m, np.arange(s, min(s + DEALS_PER_UNIT, plan.deals)))
             for m in range(len(plan.matches)) for s in range(0, plan.deals, DEALS_PER_UNIT)]
    layout = Layout(rules, config, plan, agents, all_labels, units, deal_source, refs, seed, luck)
    with lock if lock is not None else contextlib.nullcontext():
        return _play(layout, records=records, out=out, ladder=ladder, progress=progress, plots=plots,
                     on_ray=on_ray)


@dataclass
class Layout:
    """A tournament laid out: its settings and plan, the agents (entrants, then the partner), their
    labels, the units of work, and where each deal comes from."""

    rules: RuleSet
    config: TournamentConfig
    plan: Plan
    agents: list[Any]
    labels: list[str]
    units: list[tuple[int, npt.NDArray[np.int64]]]
    deal_source: Any
    refs: Any
    seed: int
    luck: Any = None  # canasta_env.luck.LuckWeights when the luck corrections are kept


def _check_outputs(records: bool, out: str | Path | None, ladder: str | Path | None) -> None:
    """Refuse, before any game, an output folder that is a file, records without one or a bad
    ladder file."""
    if records and out is None:
        raise ValueError("records are written into the output folder: give --out")
    if out is not None and Path(out).exists() and not Path(out).is_dir():
        raise ValueError(f"{out}: --out must be a folder, and this is a file")
    if out is not None:  # a FIFO would hang the resume's read or the write, a device fill memory
        odd = [name for name in ("tournament.json", *OUTPUT_NAMES)
               if os.path.lexists(Path(out) / name) and not (Path(out) / name).is_file()]
        if odd:
            raise ValueError(f"--out {out}: {', '.join(odd)} there {'is' if len(odd) == 1 else 'are'} not a "
                             "regular file (a folder, pipe, device or broken link), where the tournament "
                             "reads and writes files; use another --out folder")
    if ladder is not None:
        from train.common.outputs import check_output_file
        from train.evaluation.ladder import check_lock, read_ladder

        written = ("tournament.json", *OUTPUT_NAMES, LOCK_FILE)  # .lock: the tournament's PID, at its start
        if out is not None and Path(ladder).resolve() in {(Path(out) / name).resolve() for name in written}:
            # results.json replaced the ladder in silence; hands.csv was refused as a ladder after the games
            raise ValueError(f"--ladder {ladder}: a file the tournament writes in --out {out}; keep the "
                             "ladder outside the output folder, or name it otherwise")
        read_ladder(Path(ladder))
        check_lock(Path(ladder))
        if not _made_with_out(Path(ladder).parent, out):
            check_output_file(ladder, "--ladder", dangling_ok=True)  # its folder: written after the games


def _made_with_out(folder: Path, out: str | Path | None) -> bool:
    """Whether ``folder`` does not exist yet and is the ``out`` folder or one above it, which the
    tournament makes before any game (``results/ladder.json`` beside ``--out results/run``, the
    shipped config, was refused on a fresh checkout for its missing folder)."""
    if out is None or folder.exists():
        return False
    target, outdir = folder.resolve(), Path(out).resolve()
    return target == outdir or target in outdir.parents


def _partner(partners: Any, rules: RuleSet) -> tuple[str, Any]:
    """(label, agent) of the fixed partner: an agent name or an agent object."""
    from agents import make_agent

    if isinstance(partners, str):
        return partners, make_agent(partners, rules)
    if callable(getattr(partners, "act", None)):
        return f"python:{type(partners).__name__}", partners
    raise ValueError(f"partners must be an agent name or an agent object with act(), got "
                     f"{type(partners).__name__}")


def _deals(rules: RuleSet, plan: Plan, deal_set: str | None, seed: int) -> tuple[Any, Any, str | None]:
    """(deals of indices, their references, the deal set's name@hash or None): deal d is entry d of
    the fixed deal set, or ``DealId(seed, d, 0)``."""
    from canasta_env.deal_sets import load_deal_set
    from canasta_env.engine import DealId

    if deal_set is None:
        return (lambda d: [DealId(seed, int(i), 0) for i in d],
                lambda d: [f"DealId({seed},{int(i)},0)" for i in d], None)
    dset = load_deal_set(deal_set, rules)
    if plan.deals > len(dset):
        raise ValueError(f"deal set {dset.name} holds {len(dset)} deals; {plan.deals} needed")
    return dset.deals, lambda d: [dset.reference(int(i)) for i in d], f"{dset.name}@{dset.sha256[:16]}"


def _play(layout: Layout, *, records: bool, out: str | Path | None, ladder: str | Path | None,
          progress: bool, plots: bool, on_ray: str | None) -> Any:
    """The body of ``run`` once the tournament is laid out (and its folder locked)."""
    from tqdm import tqdm

    from train.evaluation.tournament_report import summarize

    plan, units, refs = layout.plan, layout.units, layout.refs
    log = HandLog(Path(out), layout.config, plan.sides, layout.labels) if out is not None else None
    done, logged = _finished_units(log, layout, records)
    pieces: list[dict[str, npt.NDArray[Any]]] = []
    total = sum(d.size for _, d in units) * plan.games_per_deal

    def key(unit: tuple[int, npt.NDArray[np.int64]]) -> tuple[int, int]:
        return unit[0], int(unit[1][0]) // DEALS_PER_UNIT

    pending = [u for u in units if key(u) not in done]
    shared = (layout.rules, layout.agents, plan, layout.deal_source, layout.seed,
              layout.labels if records else None, layout.luck, layout.labels)
    if on_ray is not None:
        from train.evaluation.ray_units import play_units

        results = play_units(shared, pending, on_ray)
    else:
        results = (play_unit(layout.rules, layout.agents, plan, m, d, *shared[3:6], luck=layout.luck,
                             names=layout.labels) for m, d in pending)
    with tqdm(total=total, unit="hand", disable=not progress, desc="tournament") as bar:
        for m, d in units:
            if key((m, d)) in done:
                pieces.append({c: v[done[key((m, d))]] for c, v in logged.items()})
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
    failed: OSError | None = None
    try:
        result = summarize(layout.config, plan, layout.labels, hands_cols,
                           Path(ladder) if ladder is not None else None)
    except OSError as exc:  # a full disk: without --out the games would be lost with the ladder
        if ladder is None:
            raise
        failed = exc
        result = summarize(layout.config, plan, layout.labels, hands_cols)
    if out is not None:
        result.save(Path(out), plots=plots)
    if failed is not None:
        from canasta_env.messages import one_line

        raise LadderNotUpdated(f"--ladder {ladder}: not updated ({one_line(failed)}); the tables above are "
                               "this tournament's, and the same command run again plays the same games "
                               "and counts them once", result)
    return result


def _finished_units(log: HandLog | None, layout: Layout, records: bool
                    ) -> tuple[dict[tuple[int, int], slice], dict[str, npt.NDArray[Any]]]:
    """The units a previous run of this tournament finished (where their rows lie in the hand log's
    columns, checked by ``parse_rows``), the log and records cut back to them. Each unit's rows are
    its games in order; only the log's last unit may stop short (an interrupted write: replayed),
    and a finished unit whose game records are not all there is replayed too. A row lost, repeated
    or out of place is a ``ValueError`` naming ``hands.csv:LINE``."""
    if log is None:
        return {}, {}
    plan = layout.plan
    lines, rows = log.load(most=sum(d.size for _, d in layout.units) * plan.games_per_deal)
    logged = parse_rows(log.path, lines, rows, columns=log.columns, plan=plan, labels=layout.labels,
                        players=layout.rules.num_players, refs=layout.refs) if rows else {}
    deals = {(m, int(d[0]) // DEALS_PER_UNIT): d for m, d in layout.units}
    done: dict[tuple[int, int], slice] = {}
    start = 0
    while start < len(rows):
        m, unit = int(logged["match"][start]), int(logged["deal"][start]) // DEALS_PER_UNIT
        want_deal, want_seating = plan.games(deals[m, unit])
        stop = min(start + want_deal.size, len(rows))
        span = f"match {m} deals {deals[m, unit][0]}-{deals[m, unit][-1]}"
        if (m, unit) in done:
            raise ValueError(f"{log.path}:{lines[start]}: the hands of {span} begin a second time; {DAMAGED}")
        wrong = np.flatnonzero((logged["match"][start:stop] != m)
                               | (logged["deal"][start:stop] != want_deal[:stop - start])
                               | (logged["seating"][start:stop] != want_seating[:stop - start]))
        if wrong.size:
            i, j = start + int(wrong[0]), int(wrong[0])
            raise ValueError(f"{log.path}:{lines[i]}: match {logged['match'][i]} deal {logged['deal'][i]} "
                             f"seating {logged['seating'][i]}, where the hands of {span} want deal "
                             f"{want_deal[j]} seating {want_seating[j]} next (a row lost, repeated or out "
                             f"of place); {DAMAGED}")
        if stop - start == want_deal.size:
            done[m, unit] = slice(start, stop)
        start = stop
    if records:
        _keep_records(log, done, deals)
    log.rewrite([rows[i] for k in sorted(done) for i in range(done[k].start, done[k].stop)])
    return done, logged


def _keep_records(log: HandLog, done: dict[tuple[int, int], slice],
                  deals: dict[tuple[int, int], npt.NDArray[np.int64]]) -> None:
    """Cut the game records back to the finished units ``done``, and take out of ``done`` (to be
    replayed) those whose records are not all there; a notice names what was dropped or replayed."""
    short, dropped = log.keep_records({k: s.stop - s.start for k, s in done.items()})
    if dropped:
        more = f" (and {len(dropped) - 1} more lines)" if len(dropped) > 1 else ""
        _notice(f"{log.records_path}:{dropped[0]}: not a game record of this tournament{more}; dropped")
    if short:
        names = ", ".join(f"match {m} deals {deals[m, u][0]}-{deals[m, u][-1]}" for m, u in sorted(short)[:3])
        more = f" and {len(short) - 3} more units" if len(short) > 3 else ""
        _notice(f"{log.records_path}: the game records of {names}{more} are incomplete or repeated; "
                "replaying those hands")
    for k in short:
        del done[k]


def _notice(text: str) -> None:
    """One line on stderr about a repair a resume makes (records dropped or hands replayed)."""
    print(f"tournament: {text}", file=sys.stderr, flush=True)
