"""Determinized Monte Carlo search over the batch engine (agent name ``search``).

For each decision with more than one legal action:

1. **Candidates**: the prior's top ``n`` legal actions (its first choice, then its choice with that
   action masked out, and so on: ``n`` cheap batched calls), or every legal action when there are at
   most ``n``. The prior is the rollout policy unless ``prior`` names another agent (a learned
   policy's candidates, the heuristic's rollouts).
2. **Worlds**: ``k`` complete states sampled from the mover's observation and mask alone
   (``canasta_env.worlds.sample_worlds``), so the search never sees hidden cards. The same ``k``
   worlds serve every candidate (common random numbers: the candidates differ only by the action).
3. **Rollouts**: each candidate is applied in each of its worlds and every world is played by the
   rollout policy for all seats to the end of the hand, or for ``depth`` decisions, when the hand
   is scored as if it ended there (no going-out bonus, cards in hand counted minus). Every
   candidate of every row of the batch is one engine batch: ``sum(candidates) * k`` rows stepped
   together (rows of at most ``MAX_WORLD_ROWS`` at once: a large batch is searched in parts).
4. **Choice**: the candidate with the best mean margin of the mover's side (its hand score minus
   the mean of the other sides', as ``agents.match`` measures a hand; in partnership play the side's
   score counts both partners) is played only when it beats the prior's own choice
   (candidate 0) by more than ``min_gain`` points and by more than ``guard`` standard errors of the
   gain paired by world; otherwise the prior's choice is played. The guard keeps noise-driven
   deviations out: with ``guard=0`` (plain argmax of the means) search lost to the heuristic in
   ``classic_4p``, where most candidates differ by less than the rollout noise.

Search is thus an improvement operator on the prior: it plays the prior's move unless the rollouts
find a better one beyond noise.

``phases`` limits the search to some decision phases (``draw``, ``meld`` (melds and the discard),
``answer``, ``final_meld``); the others play the prior's choice. ``stats`` counts the
searched decisions by phase and by the kinds of the policy's and the chosen action.

Defaults (``default_k``, ``default_depth``): ``k=16, depth=60`` without partners, ``k=32,
depth=40`` at a partnership table; ``n=4``, ``guard=1``. A depth cap with the provisional score
both cuts the rollout cost and its noise (the value of the next few rounds, not the whole hand),
which paid for more worlds; docs/agents.md has the measurements.

Deterministic given the rng: each row draws one uniform from it to seed its worlds. The rollout
policy is the heuristic by default (deterministic), or a checkpoint played deterministically.
"""

from __future__ import annotations

import math
import numbers
import os
from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit

from agents._obs import PIECE_ORDER, ObsDecoder, check_legal_mask
from canasta_env.engine import State
from canasta_env.engine.actions import ASK_PARTNER, DISCARD, DRAW_STOCK, MELD_NNN, TAKE_PILE_PAIR
from canasta_env.engine.core import _observe_unchecked, _step_unchecked
from canasta_env.engine.layout import NUM_PARAMS, O_HSCORE, P_NSIDES
from canasta_env.engine.score import score_hand
from canasta_env.messages import short_repr
from canasta_env.policy import Agent, uniforms
from canasta_env.rules import RuleSet, load_rules
from canasta_env.worlds import WorldError, sample_worlds

DEFAULT_N = 4
# worlds per decision and rollout depth (decisions of all seats; 0: to the end of the hand) when not
# given: (k, depth) for tables without partners and for partnership tables (noisier rollouts)
DEFAULT_K, DEFAULT_DEPTH = 16, 60
PARTNER_K, PARTNER_DEPTH = 32, 40
DEFAULT_GUARD = 1.0  # deviate from the policy's choice only when the paired gain exceeds this many s.e.
PHASES = ("draw", "meld", "answer", "final_meld")


@njit(cache=True)
def provisional_scores(data, prm, rows, out):
    """Hand score per side of each listed row as if the hand ended now (a copy is scored)."""
    sides = prm[P_NSIDES]
    for i in range(rows.shape[0]):
        row = data[rows[i]].copy()
        score_hand(row, prm)
        for s in range(sides):
            out[i, s] = row[prm[O_HSCORE] + s]


def default_k(rules: RuleSet) -> int:
    """Worlds per decision when ``k`` is not given: ``PARTNER_K`` at a partnership table (more
    players than sides), else ``DEFAULT_K``."""
    return PARTNER_K if rules.num_players > rules.num_sides else DEFAULT_K


def default_depth(rules: RuleSet) -> int:
    """Rollout depth when ``depth`` is not given: ``PARTNER_DEPTH`` at a partnership table, else
    ``DEFAULT_DEPTH``."""
    return PARTNER_DEPTH if rules.num_players > rules.num_sides else DEFAULT_DEPTH


# Options a name ``search:OPTION=VALUE,...`` may set, with their types (``phases`` joined by ``+``).
OPTION_TYPES: dict[str, type] = {"k": int, "n": int, "depth": int, "seed": int, "guard": float,
                                 "min_gain": float, "rollout": str, "checkpoint": str, "phases": str,
                                 "prior": str}
# What a keyword option of each type must be (a bool is no integer: True would search one world).
_KINDS: dict[type, tuple[str, Any]] = {int: ("an integer", numbers.Integral),
                                       float: ("a number", numbers.Real), str: ("an agent name", str)}
# Inclusive ranges of the numeric options; a seed is a 63-bit integer (it is mixed into int64 streams).
OPTION_RANGES: dict[str, tuple[float, float]] = {"k": (1, 1024), "n": (1, 64), "depth": (0, 1000),
                                                 "seed": (0, 2**63 - 1), "guard": (0.0, 100.0),
                                                 "min_gain": (-1e12, 1e12)}
# The work of one decision, k worlds x n candidates x depth steps, at most 64 times the defaults'
# (16 x 4 x 60 two-handed, 32 x 4 x 40 in partnerships): beyond it a hand takes hours.
MAX_WORK = 64 * 32 * 4 * 60
# Engine rows (candidates x worlds) of one rollout batch: a batch of decisions is searched in parts of
# at most this many rows (a row's choice does not depend on the others'), so memory does not grow with
# the batch (unsplit, a match at k=1024 held 26 MB more per deal: 2.7 GB at 100 deals).
MAX_WORLD_ROWS = 1 << 16


def check_search_options(options: dict[str, Any], where: str = "search",
                         max_steps: int = RuleSet.max_steps_per_hand) -> None:
    """``ValueError`` naming the option when a value is outside its range, the work of a decision
    (k * n * depth, ``depth=0`` counted as ``max_steps``, the rules' step cap of a hand) exceeds
    ``MAX_WORK``, ``phases`` names no phase or an unknown one, ``rollout`` comes with ``checkpoint``,
    or the rollout policy or the prior is itself a search (a search inside every rollout step of a
    search never finishes a hand: agent names nest at most two deep). Keyword options get the checks
    of the name grammar: an ``int`` option takes an integer (not ``16.5``, which ``int`` would
    truncate, nor a bool), a ``float`` option a number, ``rollout`` and ``prior`` names,
    ``checkpoint`` a path. ``phases`` is a comma-joined string (from a name) or a sequence; an empty
    sequence (search no phase) is allowed only as a sequence."""
    for key, kind in OPTION_TYPES.items():
        value = options.get(key)
        if value is None or key == "phases":  # phases: checked by _phase_names below
            continue
        what, classes = ("a path", (str, os.PathLike)) if key == "checkpoint" else _KINDS[kind]
        if not isinstance(value, classes) or isinstance(value, bool):
            raise ValueError(f"{where}: {key} = {short_repr(value)} is not {what}")
    for key, (low, high) in OPTION_RANGES.items():
        value = options.get(key)
        if value is not None and not low <= value <= high:
            raise ValueError(f"{where}: {key} = {short_repr(value)} is outside [{low}, {high}]")
    k, n, depth = (options.get(key) for key in ("k", "n", "depth"))
    depth = DEFAULT_DEPTH if depth is None else depth
    work = (k or DEFAULT_K) * (n or DEFAULT_N) * (depth if depth > 0 else max_steps)
    if work > MAX_WORK:
        shown = f"depth 0 (to the end of the hand: up to {max_steps:,} steps)" if depth == 0 else "depth"
        raise ValueError(f"{where}: k x n x {shown} = {work:,} rollout steps per decision exceed "
                         f"{MAX_WORK:,}; lower k, n or depth")
    phases = options.get("phases")
    if phases is not None:
        _phase_names(phases, where)
    rollout = options.get("rollout")
    if rollout is not None and options.get("checkpoint") is not None:
        raise ValueError(f"{where}: rollout = {short_repr(rollout)} and checkpoint = "
                         f"{short_repr(options['checkpoint'])} both name the rollout policy; give one")
    for key in ("rollout", "prior"):
        name = options.get(key)
        if isinstance(name, str) and name.strip().split(":")[0].strip() == "search":
            raise _nested_search(where, name, key)


def _nested_search(where: str, name: Any, key: str = "rollout") -> ValueError:
    """The error for a rollout policy or prior that is itself a search."""
    what = "roll out with" if key == "rollout" else "take its candidates from"
    return ValueError(f"{where}: {key} = {short_repr(name)}: a search cannot {what} a search (names "
                      f"nest at most two deep: search:{key}=AGENT)")


def _phase_names(phases: str | tuple[str, ...], where: str) -> tuple[str, ...]:
    """The phases that ``phases`` names (comma-joined text or a sequence); ``ValueError`` for an
    unknown phase, an empty entry, or text that names none."""
    text = isinstance(phases, str)
    if not text and not isinstance(phases, (tuple, list)):
        raise ValueError(f"{where}: phases = {short_repr(phases)} is neither text nor a sequence of phases")
    names = tuple(p.strip() for p in phases.split(",")) if text else tuple(phases)
    if text and not any(names):
        raise ValueError(f"{where}: phases names no phase; choose from {', '.join(PHASES)}")
    unknown = [p for p in names if p not in PHASES]
    if unknown:
        what = "phases has an empty entry" if "" in unknown else f"unknown phases {unknown}"
        raise ValueError(f"{where}: {what}; choose from {', '.join(PHASES)}")
    return names


def search_options(spec: str) -> dict[str, Any]:
    """The keyword arguments that ``spec`` names (the part after ``search:``), e.g.
    ``rollout=zoo:classic_4p,k=16,phases=draw+meld``; a value cannot hold a comma. Errors name the
    part of ``spec`` that is wrong."""
    options: dict[str, Any] = {}
    for part in (p.strip() for p in spec.split(",")):
        key, eq, text = (x.strip() for x in part.partition("="))
        if not eq or key not in OPTION_TYPES or not text:
            what = f"unknown option {short_repr(key)}" if eq and key not in OPTION_TYPES else (
                f"{short_repr(part)} is not OPTION=VALUE")
            raise ValueError(f"search options {short_repr(spec)}: {what}; options: {', '.join(OPTION_TYPES)}")
        if key in options:
            raise ValueError(f"search options {short_repr(spec)}: {key} is given twice")
        kind = OPTION_TYPES[key]
        try:
            value = kind(text)
        except ValueError:
            raise ValueError(f"search options {short_repr(spec)}: {key} = {short_repr(text)} is not "
                             f"{'an integer' if kind is int else 'a number'}") from None
        if kind is float and not math.isfinite(value):
            raise ValueError(f"search options {short_repr(spec)}: {key} = {short_repr(text)} is not finite")
        options[key] = value.replace("+", ",") if key == "phases" else value
    check_search_options(options, f"search options {short_repr(spec)}")
    return options


def _kind(action: int) -> str:
    """A coarse name of an action, for the decision counts in ``SearchAgent.stats``."""
    if action == DRAW_STOCK:
        return "draw"
    if TAKE_PILE_PAIR <= action < MELD_NNN:
        return "take"
    if MELD_NNN <= action < DISCARD:
        return "meld"
    if DISCARD <= action < ASK_PARTNER:
        return "discard"
    return "ask" if action == ASK_PARTNER else ("answer" if action > ASK_PARTNER else "end")


class _RowError(Exception):
    """Row ``row`` of a search batch has no worlds (``WorldError`` ``reason``)."""

    def __init__(self, row: int, reason: str) -> None:
        super().__init__(reason)
        self.row, self.reason = row, reason


class SearchAgent:
    """Determinized Monte Carlo search (see the module docstring)."""

    name = "search"
    needs_observations = True

    def __init__(self, rules: RuleSet | str, k: int | None = None, n: int = DEFAULT_N,
                 depth: int | None = None, rollout: str | None = None,
                 checkpoint: str | None = None, seed: int = 0, guard: float = DEFAULT_GUARD,
                 min_gain: float = 0.0, phases: str | tuple[str, ...] = PHASES,
                 prior: str | None = None) -> None:
        from agents import make_agent

        self.rules = load_rules(rules)  # a preset, a file, a dict or a RuleSet, as every agent takes
        if k is None:
            k = default_k(self.rules)
        if depth is None:
            depth = default_depth(self.rules)
        self.max_steps = int(self.rules.resolved().max_steps_per_hand)
        check_search_options({"k": k, "n": n, "depth": depth, "seed": seed, "guard": guard,
                              "min_gain": min_gain, "rollout": rollout, "checkpoint": checkpoint,
                              "phases": phases, "prior": prior}, max_steps=self.max_steps)
        self.k, self.n, self.depth, self.seed = int(k), int(n), int(depth), int(seed)
        self.policy: Agent = (make_agent("policy", self.rules, checkpoint=checkpoint)
                              if checkpoint is not None
                              else make_agent("heuristic" if rollout is None else rollout, self.rules))
        if isinstance(self.policy, SearchAgent):  # a search by another name (module:attribute, ...)
            raise _nested_search("search", rollout)
        shown = short_repr(checkpoint if checkpoint is not None else rollout or "heuristic")
        self._rollout_name = f"{shown} (rollout of search)"
        self.prior, self._prior_name = self.policy, self._rollout_name
        if prior is not None:
            self.prior = make_agent(prior, self.rules)
            self._prior_name = f"{short_repr(prior)} (prior of search)"
            if isinstance(self.prior, SearchAgent):
                raise _nested_search("search", prior, "prior")
        self.guard, self.min_gain = float(guard), float(min_gain)
        names = _phase_names(phases, "search")
        self.phases = np.array([p in names for p in PHASES] + [False], dtype=np.bool_)
        self._decoder = ObsDecoder(self.rules)
        self._phase_at = int(self._decoder.offsets[PIECE_ORDER.index("phase")])
        self.stats: dict[str, int] = {}

    def act(self, observations: npt.NDArray[np.float32], legal_action_mask: npt.NDArray[np.bool_],
            rng: Any) -> npt.NDArray[np.int64]:
        who = f"{self.name}: act"
        obs = self._decoder.check(observations, who)
        mask = check_legal_mask(legal_action_mask, obs.shape[0], who)
        seeds = (uniforms(rng, mask.shape[0], who) * 2.0**53).astype(np.int64) ^ self.seed
        legal = mask.sum(axis=1)
        # the only legal action, where one; -1 (no action) for a row with none, as every agent
        out = np.where(legal > 0, np.argmax(mask, axis=1), -1).astype(np.int64)
        multi = legal > 1
        phase = np.argmax(obs[:, self._phase_at: self._phase_at + 5], axis=1)
        searched = multi & self.phases[phase]
        rows = np.flatnonzero(searched)
        chunk = max(1, MAX_WORLD_ROWS // (self.n * self.k))  # rows whose worlds fit one engine batch
        for start in range(0, rows.size, chunk):
            part = rows[start: start + chunk]
            try:
                out[part] = self._search(obs[part], mask[part], seeds[part], phase[part])
            except _RowError as exc:  # worlds.WorldError: the observation is no live hand of the rules
                raise WorldError(f"{who}: observation row {int(part[exc.row])}: {exc.reason}") from None
        rest = np.flatnonzero(multi & ~searched)
        if rest.size:
            out[rest] = self._policy_act(obs[rest], mask[rest], np.random.default_rng(0), prior=True)
        return out

    def _policy_act(self, obs: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_], rng: Any,
                    prior: bool = False) -> npt.NDArray[np.int64]:
        """The rollout policy's (or with ``prior`` the prior's) action for each row of ``mask``,
        checked as a match checks an agent's (``canasta_env.policy.checked_legal_act``, naming the
        agent). Unchecked, a user's agent returning floats was truncated in silence, and an illegal or
        out-of-range action failed as an ``IndexError`` or as an illegal move of the search itself."""
        from canasta_env.policy import checked_legal_act

        if prior:
            return checked_legal_act(self.prior, self._prior_name, obs, mask, rng)
        return checked_legal_act(self.policy, self._rollout_name, obs, mask, rng)

    def candidates(self, obs: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_]
                   ) -> list[npt.NDArray[np.int64]]:
        """Per row, the candidate actions in the prior's order of preference."""
        left = mask.copy()
        picks: list[list[int]] = [[] for _ in range(mask.shape[0])]
        quiet = np.random.default_rng(0)
        for _ in range(self.n):
            open_rows = np.flatnonzero(left.any(axis=1))
            if open_rows.size == 0:
                break
            chosen = self._policy_act(obs[open_rows], left[open_rows], quiet, prior=True)
            for r, a in zip(open_rows, chosen, strict=True):
                picks[r].append(int(a))
                left[r, a] = False
        return [np.array(p, dtype=np.int64) for p in picks]

    def _search(self, obs: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_],
                seeds: npt.NDArray[np.int64], phase: npt.NDArray[np.int64]
                ) -> npt.NDArray[np.int64]:
        cands = self.candidates(obs, mask)
        state, actions = self._worlds(obs, mask, seeds, cands)
        result = _step_unchecked(state, actions)
        values = self._rollout(state)
        values[result.illegal] = np.nan  # a world whose mask differed (never seen in tests)
        out = np.empty(len(cands), dtype=np.int64)
        pos = 0
        for i, c in enumerate(cands):
            block = values[pos: pos + c.size * self.k].reshape(c.size, self.k)
            pos += c.size * self.k
            out[i] = c[self._choose(block)]
            key = f"{PHASES[int(phase[i])]}:{_kind(int(c[0]))}->{_kind(int(out[i]))}"
            self.stats[key] = self.stats.get(key, 0) + 1
        return out

    def _choose(self, block: npt.NDArray[np.float64]) -> int:
        """Index of the chosen candidate given its (candidates, k) rollout values; candidate 0 is
        the prior's own choice, and another is played only when its mean gain over it, paired
        by world, is above ``min_gain`` and ``guard`` standard errors."""
        means = np.array([np.nanmean(v) if np.isfinite(v).any() else -np.inf for v in block])
        best = int(np.argmax(means))
        if best == 0 or not np.isfinite(means[0]):
            return best
        diff = block[best] - block[0]
        diff = diff[np.isfinite(diff)]
        if diff.size == 0:
            return 0
        gain = float(diff.mean())
        se = float(diff.std(ddof=1)) / np.sqrt(diff.size) if diff.size > 1 else 0.0
        if gain <= self.min_gain or gain <= self.guard * se:
            return 0
        return best

    def _worlds(self, obs: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_],
                seeds: npt.NDArray[np.int64], cands: list[npt.NDArray[np.int64]]
                ) -> tuple[State, npt.NDArray[np.int64]]:
        """One engine batch: for row i, its k worlds repeated once per candidate."""
        data, masks, actions = [], [], []
        params = None
        for i, c in enumerate(cands):
            try:
                worlds = sample_worlds(self.rules, obs[i], self.k, seed=int(seeds[i]),
                                       legal_mask=mask[i])
            except WorldError as exc:
                raise _RowError(i, str(exc)) from None
            params = worlds.params
            data.append(np.tile(worlds.data, (c.size, 1)))
            masks.append(np.tile(worlds.legal_action_mask, (c.size, 1)))
            actions.append(np.repeat(c, self.k))
        assert params is not None and params.shape == (NUM_PARAMS,)
        state = State(self.rules, params, np.concatenate(data), np.concatenate(masks))
        return state, np.concatenate(actions)

    def _rollout(self, state: State) -> npt.NDArray[np.float64]:
        """Play every row with the rollout policy (all seats) to the hand's end or the depth cap;
        the margin of seat 0's side (the searching seat sits at 0 in every world)."""
        quiet = np.random.default_rng(0)
        limit = self.depth if self.depth > 0 else self.max_steps
        for _ in range(limit):
            live = np.flatnonzero(~(state.terminated | state.truncated))
            if live.size == 0:
                break
            movers = state.current_player[live].astype(np.int64)
            obs = _observe_unchecked(state, movers, live)
            acts = self._policy_act(obs, state.legal_action_mask[live], quiet)
            _step_unchecked(state, acts, live)
        scores = state.hand_scores.astype(np.float64)
        unfinished = np.flatnonzero(~state.terminated)
        if unfinished.size:
            est = np.zeros((unfinished.size, state.num_sides), dtype=np.int64)
            provisional_scores(state.data, state.params, unfinished, est)
            scores[unfinished] = est
        sides = state.num_sides
        return scores[:, 0] - (scores.sum(axis=1) - scores[:, 0]) / max(sides - 1, 1)
