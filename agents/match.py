"""Agents playing dealt hands on the batch engine: the one play loop of matches and tournaments.

``play_games(rules, agents, seats, deals, streams)`` plays game g on ``deals[g]`` with seat p held by
``agents[seats[g, p]]``; each step every agent acts on its whole batch of decisions at once. Agent
randomness comes from one stream per (game, agent), keyed by ``streams[g]`` and the agent's index, so
a game's play never depends on the batch it ran in or on the other games.

``play_match(rules, a, b, deals)`` is the two-agent duplicate form: each deal once per side
assignment (agent A holds side ``k``, B every other side), margins averaged over the seatings.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from canasta_env.engine import DealId, ExplicitDeal, IllegalActionError, init_from_deals, raise_illegal
from canasta_env.engine.cards import WILD_SLOT
from canasta_env.engine.core import State, _observe_unchecked, _step_unchecked, check_actions
from canasta_env.engine.layout import EV_PILE_TAKE
from canasta_env.luck import LuckTracker, corrections, luck_weights
from canasta_env.messages import one_line, short_repr
from canasta_env.policy import Agent, RowRandom, checked_act, stream_keys
from canasta_env.rules import RuleSet, load_rules


class StepHook(Protocol):
    """Called around every engine step of the live rows (``canasta_env.luck.LuckTracker`` is one)."""

    def before_step(self, state: State, live: npt.NDArray[np.int64]) -> None: ...

    def after_step(self, state: State, live: npt.NDArray[np.int64]) -> None: ...


@dataclass
class GameOutcomes:
    """Per game (row) of ``play_games``; per-side arrays are (G, sides)."""

    scores: npt.NDArray[np.int64]  # hand score of each side
    went_out: npt.NDArray[np.int64]  # (G,) seat that went out, -1 none
    decisions: npt.NDArray[np.int64]  # (G,) decisions in the hand
    pile_takes: npt.NDArray[np.int64]
    natural_canastas: npt.NDArray[np.int64]
    mixed_canastas: npt.NDArray[np.int64]
    wild_canastas: npt.NDArray[np.int64]
    sevens_canastas: npt.NDArray[np.int64]  # R2, P2 (closed canastas count by their kind)
    red_threes: npt.NDArray[np.int64]
    opened: npt.NDArray[np.bool_]
    truncated: npt.NDArray[np.bool_]  # (G,) stopped by the step cap
    records: list[Any]  # canasta_env.records.HandRecord of every game, when asked for
    luck: npt.NDArray[np.float64] | None = None  # (G, sides, features) of canasta_env.luck, when asked for


def play_games(rules: RuleSet | str, agents: Sequence[Agent], seats: npt.ArrayLike,
               deals: Sequence[DealId] | Sequence[ExplicitDeal], streams: npt.ArrayLike,
               seed: int = 0, record_seats: Sequence[Sequence[str]] | None = None,
               record_meta: dict[str, Any] | None = None, *, luck: bool = False,
               hooks: Sequence[Callable[[State], StepHook]] = (),
               names: Sequence[str] | None = None) -> GameOutcomes:
    """Play one hand per game; see the module docstring. With ``record_seats`` (a label per seat of
    every game) each hand is also returned as a game record (``canasta_env.records``); with ``luck``
    the luck features of every side are tracked (``canasta_env.luck``). Each of ``hooks`` is built
    on the dealt state and called around every step, after the agents have acted; a hook may
    reorder the stock, so no records are kept with hooks. An agent that fails in play (``act``
    raises, returns no integer per decision, or an illegal action) is a one-line ``ValueError``
    naming it (by ``names[i]``, else its index and class)."""
    rules = load_rules(rules)
    if hooks and record_seats is not None:
        raise ValueError("play_games: game records with step hooks (a hook may change the state)")
    seat_agent = np.asarray(seats, dtype=np.int64)
    games, players = seat_agent.shape
    if players != rules.num_players or len(deals) != games:
        raise ValueError(f"seats {seat_agent.shape} and {len(deals)} deals for {rules.name} "
                         f"({rules.num_players} players)")
    sides = rules.num_sides
    state = init_from_deals(rules, list(deals))
    stream_ids = np.asarray(streams, dtype=np.uint64)
    randoms = [RowRandom(stream_keys(np.full(games, seed, dtype=np.uint64), stream_ids, 0x3A7C + i))
               for i in range(len(agents))]
    recorder = None
    if record_seats is not None:
        from canasta_env.records import BatchRecorder

        explicit = list(deals) if isinstance(deals[0], ExplicitDeal) else None
        recorder = BatchRecorder(state, record_seats, deals=explicit, meta=record_meta)
    records: list[Any] = []
    tracker = LuckTracker(state) if luck else None
    around = [hook(state) for hook in hooks] + ([tracker] if tracker is not None else [])
    pile_takes = np.zeros((games, sides), dtype=np.int64)
    decisions = np.zeros(games, dtype=np.int64)
    while True:
        live = np.flatnonzero(~(state.terminated | state.truncated))
        if live.size == 0:
            break
        movers = state.current_player[live].astype(np.int64)
        mask = state.legal_action_mask[live]
        acting = seat_agent[live, movers]
        actions = np.empty(live.size, np.int64)
        for i in np.unique(acting):
            sel = acting == i
            rows = live[sel]
            agent = agents[int(i)]
            if getattr(agent, "needs_observations", True):
                obs = _observe_unchecked(state, movers[sel], rows)
            else:
                obs = np.zeros((rows.size, 0), dtype=np.float32)
            actions[sel] = checked_act(agent, _name(agents, names, int(i)), obs, mask[sel],
                                randoms[int(i)].subset(rows))
        # the state is this loop's own (agents get copies of observations and masks), so only the
        # agents' actions need checking; the kernel flags out-of-range ones illegal
        for hook in around:
            hook.before_step(state, live)
        result = _step_unchecked(state, check_actions(actions, live.size, "match"), live)
        for hook in around:
            hook.after_step(state, live)
        if result.illegal.any():
            bad = int(np.flatnonzero(result.illegal)[0])
            try:
                raise_illegal(state, int(live[bad]), int(actions[bad]))
            except IllegalActionError as exc:
                raise IllegalActionError(f"agent {_name(agents, names, int(acting[bad]))} (seat "
                                         f"{movers[bad]}): {exc}") from None
        if recorder is not None:
            records.extend(recorder.record(actions, result, live))
        decisions[live] += 1
        took = (result.events & EV_PILE_TAKE) != 0
        np.add.at(pile_takes, (live[took], movers[took] % sides), 1)
    return _outcomes(state, decisions, pile_takes, records, None if tracker is None else tracker.features)


def _name(agents: Sequence[Agent], names: Sequence[str] | None, i: int) -> str:
    """How errors name agent ``i``."""
    return short_repr(names[i]) if names is not None else f"#{i} ({type(agents[i]).__name__})"


def _outcomes(state: Any, decisions: npt.NDArray[np.int64], pile_takes: npt.NDArray[np.int64],
              records: list[Any], luck: npt.NDArray[np.float64] | None) -> GameOutcomes:
    """The outcomes of ``play_games`` from its finished state."""
    games, sides = state.num_games, state.num_sides
    size = (state.meld_naturals + state.meld_jokers + state.meld_twos)[:, :, :WILD_SLOT + 1]
    wilds = (state.meld_jokers + state.meld_twos)[:, :, :WILD_SLOT + 1]
    canasta = size >= 7  # per meld owner; owner o is on side o % sides
    closed = state.closed_canastas.astype(np.int64)  # closed at seven under a meld cap (R2, P2)

    def by_side(per_owner: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
        """Sum over the owners (or seats) of each side: index o belongs to side o % sides."""
        return per_owner.reshape(games, -1, sides).sum(axis=1).astype(np.int64)

    return GameOutcomes(
        scores=state.hand_scores.astype(np.int64).copy(),
        went_out=state.went_out.astype(np.int64).copy(),
        decisions=decisions,
        pile_takes=pile_takes,
        natural_canastas=by_side((canasta[:, :, :WILD_SLOT] & (wilds[:, :, :WILD_SLOT] == 0)).sum(axis=2)
                                 + closed[:, :, 0]),
        mixed_canastas=by_side((canasta[:, :, :WILD_SLOT] & (wilds[:, :, :WILD_SLOT] > 0)).sum(axis=2)
                               + closed[:, :, 1]),
        wild_canastas=by_side(canasta[:, :, WILD_SLOT].astype(np.int64) + closed[:, :, 2]),
        sevens_canastas=by_side(closed[:, :, 3]),
        red_threes=by_side(state.red_threes),
        opened=state.opened.astype(bool).copy(),
        truncated=state.truncated.copy(),
        records=records,
        luck=luck,
    )


@dataclass
class MatchResult:
    margins: npt.NDArray[np.float64]  # (deals, seatings) A's score minus the others' mean
    truncated: int  # games stopped by the step cap
    decisions: int
    went_out: npt.NDArray[np.bool_]  # (deals, seatings) A's side went out
    opened: npt.NDArray[np.bool_]  # (deals, seatings) A's side met its minimum (melded)
    luck_margins: npt.NDArray[np.float64] | None = None  # (deals, seatings) luck corrections of the
    luck_wins: npt.NDArray[np.float64] | None = None  # margin and the win indicator (canasta_env.luck)

    @property
    def deal_margins(self) -> npt.NDArray[np.float64]:
        return self.margins.mean(axis=1)

    @property
    def deal_wins(self) -> npt.NDArray[np.float64]:
        """Per deal, the share of seatings A won (a tie counts a half)."""
        return ((self.margins > 0) + 0.5 * (self.margins == 0)).mean(axis=1)

    def summary(self, resamples: int = 2000, seed: int = 0) -> dict[str, float]:
        m_lo, m_hi = bootstrap_ci(self.deal_margins, resamples, seed)
        w_lo, w_hi = bootstrap_ci(self.deal_wins, resamples, seed)
        out = {"deals": float(self.margins.shape[0]), "mean_margin": float(self.deal_margins.mean()),
               "margin_lo": m_lo, "margin_hi": m_hi, "win_rate": float(self.deal_wins.mean()),
               "win_lo": w_lo, "win_hi": w_hi, "truncated": float(self.truncated),
               "went_out": float(self.went_out.mean()), "opened": float(self.opened.mean())}
        if self.luck_margins is not None and self.luck_wins is not None:
            luck_m, luck_w = self.luck_margins.mean(axis=1), self.luck_wins.mean(axis=1)
            out.update(luck_summary("margin", self.deal_margins, luck_m, resamples, seed))
            out.update(luck_summary("win", self.deal_wins, luck_w, resamples, seed))
        return out


LUCK_FOLDS = 10
MAX_DEALS = 10**7  # agents.match on the command line: more deals than this is a typo


def luck_summary(name: str, plain: npt.NDArray[np.float64], correction: npt.NDArray[np.float64],
                 resamples: int, seed: int) -> dict[str, float]:
    """The luck-corrected mean of ``plain`` per deal, its bootstrap interval and the variance ratio
    (corrected over plain): ``{name}_luck``, ``{name}_luck_lo``, ``{name}_luck_hi``, ``{name}_var_ratio``.

    Each deal's correction is scaled by the coefficient that minimises the corrected variance, fitted
    on the other folds of deals (``LUCK_FOLDS``, cross-fitting): a deal's correction has expectation
    zero and is independent of the other deals, so the scaled one has too and the mean stays
    unbiased, while a correction that fits the pair badly (weights fitted on another pair) is scaled
    down instead of adding variance."""
    corrected = plain - cross_fitted_scale(plain, correction) * correction
    lo, hi = bootstrap_ci(corrected, resamples, seed)
    ratio = float(corrected.var() / plain.var()) if plain.var() > 0 else float("nan")
    return {f"{name}_luck": float(corrected.mean()), f"{name}_luck_lo": lo, f"{name}_luck_hi": hi,
            f"{name}_var_ratio": ratio}


def cross_fitted_scale(plain: npt.NDArray[np.float64], correction: npt.NDArray[np.float64],
                       folds: int = LUCK_FOLDS) -> npt.NDArray[np.float64]:
    """Per deal, ``cov(plain, correction) / var(correction)`` over the deals of the other folds
    (deal ``i`` is in fold ``i % folds``); 1 with fewer than two deals a fold."""
    n = len(plain)
    if n < 2 * folds:
        return np.ones(n)
    fold = np.arange(n) % folds
    scale = np.ones(n)
    for k in range(folds):
        rest = fold != k
        c = correction[rest] - correction[rest].mean()
        denom = float(c @ c)
        if denom > 0:
            scale[~rest] = float((plain[rest] - plain[rest].mean()) @ c) / denom
    return scale


def bootstrap_ci(values: npt.ArrayLike, resamples: int = 2000, seed: int = 0,
                 level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values``; NaN from fewer than two values
    (no spread to resample: one deal's interval was the point itself, as if certain)."""
    x = np.asarray(values, dtype=np.float64)
    if x.size < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1)
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(means, [tail, 100.0 - tail])
    return float(lo), float(hi)


def play_match(rules: RuleSet | str, agent_a: Agent, agent_b: Agent,
               deals: int | Sequence[ExplicitDeal], seed: int = 0, rng_seed: int = 0,
               record_to: str | Path | None = None, labels: tuple[str, str] = ("A", "B"), *,
               luck: bool = False, hooks: Sequence[Callable[[State], StepHook]] = ()) -> MatchResult:
    """Play each deal once per seating of A; see the module docstring. ``deals`` is a count (deal i
    is ``DealId(seed, i, 0)``) or a list of explicit deals (e.g. from a fixed deal set). With
    ``record_to`` every hand is appended to that JSON-lines file of game records, seats labelled;
    with ``luck`` the luck corrections of every hand are kept (``canasta_env.luck``); ``hooks`` go
    to ``play_games``."""
    rules = load_rules(rules)
    weights = luck_weights(rules) if luck else None
    sides, players = rules.num_sides, rules.num_players
    dealt = [DealId(seed, i, 0) for i in range(deals)] if isinstance(deals, int) else list(deals)
    n = len(dealt)
    a_side = np.repeat(np.arange(sides), n)  # game g: seating g // n of deal g % n
    seat_side = np.arange(players) % sides
    seats = np.where(seat_side[None, :] == a_side[:, None], 0, 1)
    record_seats = [[labels[a] for a in row] for row in seats] if record_to is not None else None
    out = play_games(rules, [agent_a, agent_b], seats, dealt * sides,
                     np.arange(n * sides) % n * sides + a_side, rng_seed, record_seats, luck=luck,
                     hooks=hooks, names=labels)
    if record_to is not None:
        from canasta_env.records import write_records

        write_records(record_to, out.records)
    scores = out.scores.astype(np.float64)
    games = np.arange(n * sides)
    own = scores[games, a_side]
    margins = own - (scores.sum(axis=1) - own) / max(sides - 1, 1)
    went_out = (out.went_out >= 0) & (out.went_out % sides == a_side)
    opened = out.opened[games, a_side]
    shape = (sides, n)
    luck_m = luck_w = None
    if weights is not None and out.luck is not None:
        luck_m, luck_w = (c.reshape(shape).T.copy() for c in corrections(out.luck, a_side, weights))
    return MatchResult(margins.reshape(shape).T.copy(), int(out.truncated.sum()), int(out.decisions.sum()),
                       went_out.reshape(shape).T.copy(), opened.reshape(shape).T.copy(), luck_m, luck_w)


def main(argv: list[str] | None = None) -> None:
    """``python -m agents.match PRESET A B --deals N``: duplicate match with bootstrap intervals."""
    import argparse

    from agents import make_agent

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("preset")
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--deals", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--luck-correction", action="store_true",
                        help="also report the luck-corrected margin and win rate (canasta_env.luck)")
    args = parser.parse_args(argv)
    if not 1 <= args.deals <= MAX_DEALS:  # one line naming the flag, as the errors below
        parser.exit(2, f"agents.match: error: --deals {args.deals}: want 1 to {MAX_DEALS:,} deals\n")
    if not 0 <= args.seed < 2**64:  # deal seeds (DealId)
        parser.exit(2, f"agents.match: error: --seed {args.seed}: want a whole number in [0, 2**64 - 1]\n")
    try:
        rules = load_rules(args.preset)
        if args.luck_correction:
            luck_weights(rules)  # refuse rules without fitted weights before building agents
        result = play_match(rules, make_agent(args.a, rules), make_agent(args.b, rules), args.deals,
                            args.seed, labels=(args.a, args.b), luck=args.luck_correction)
    except (ValueError, OSError, ModuleNotFoundError) as exc:  # a user's mistake: one line, status 2
        from canasta_env.messages import missing_extra

        advice = missing_extra(exc)
        if isinstance(exc, ModuleNotFoundError) and advice is None:
            raise
        parser.exit(2, f"agents.match: error: {advice or one_line(exc)}\n")
    s = result.summary()
    print(f"{args.preset} {args.a} vs {args.b}, {args.deals} deals x {result.margins.shape[1]} seatings: "
          f"mean margin {s['mean_margin']:.1f} [{s['margin_lo']:.1f}, {s['margin_hi']:.1f}], "
          f"win rate {s['win_rate']:.3f} [{s['win_lo']:.3f}, {s['win_hi']:.3f}], "
          f"opened {s['opened']:.3f}, went out {s['went_out']:.3f}, truncated {int(s['truncated'])}")
    if args.luck_correction:
        print(f"luck-corrected: mean margin {s['margin_luck']:.1f} [{s['margin_luck_lo']:.1f}, "
              f"{s['margin_luck_hi']:.1f}] (variance ratio {s['margin_var_ratio']:.3f}), win rate "
              f"{s['win_luck']:.3f} [{s['win_luck_lo']:.3f}, {s['win_luck_hi']:.3f}] "
              f"(variance ratio {s['win_var_ratio']:.3f})")


if __name__ == "__main__":
    main()
