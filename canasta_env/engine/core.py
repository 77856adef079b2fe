"""The batch engine's Python API: ``init``, ``step``, ``reset_rows``, ``clone`` and deal replay.

The Python layer only allocates arrays, calls the compiled kernels and returns arrays; every rule
lives in the kernels. ``step`` mutates the ``State`` it is given (like pgx's functional ``step``,
but in place, to avoid copying a large batch every decision).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from canasta_env.engine import kernels
from canasta_env.engine.actions import ACTION_NAMES, NUM_ACTIONS
from canasta_env.engine.cards import NUM_KINDS, NUM_SLOTS
from canasta_env.engine.layout import (
    F_ASKER,
    F_CONCEALED,
    F_CUR,
    F_DEAL_INDEX,
    F_DEAL_ROW,
    F_DEALER,
    F_GAME_RESULT,
    F_HAND_END,
    F_HAND_NO,
    F_MINIMUM,
    F_NEEDS_MIN,
    F_PHASE,
    F_PILE_FROZEN,
    F_PILE_LEN,
    F_SEED_HI,
    F_SEED_LO,
    F_STATUS,
    F_STEPS,
    F_STOCK_LEN,
    F_TRUNC,
    F_TURN_FLAGS,
    F_TURN_VALUE,
    F_WENT_OUT,
    NUM_PARTS,
    O_CJOK,
    O_CKINDS,
    O_CLOSED,
    O_CREDIT,
    O_CTWO,
    O_HANDS,
    O_HSCORE,
    O_KNOWN,
    O_MELDED,
    O_MJOK,
    O_MNAT,
    O_MTWO,
    O_NEW,
    O_OPENED,
    O_PARTS,
    O_PILE,
    O_RED3,
    O_RESERVE,
    O_RESSTATE,
    O_SCORE,
    O_STOCK,
    P_DECK,
    P_NOWNERS,
    P_NPLAYERS,
    P_NSIDES,
    P_WIDTH,
    ST_DONE,
    pack_params,
)
from canasta_env.engine.observation import obs_dim, observe_kernel
from canasta_env.rules import RuleSet, load_rules


class IllegalActionError(ValueError):
    """An action the mask does not allow was played where the caller owns the actions."""


class DealId(NamedTuple):
    """Address of a deal: ``init(rules, B, seed)`` deals ``(seed, b, 0)`` to row b and the k-th
    auto-reset of row b deals ``(seed, b, k)`` (DESIGN.md "Deals and randomness")."""

    seed: int
    row: int
    index: int  # type: ignore[assignment]


class ExplicitDeal(NamedTuple):
    """A deal written out: the deck in dealing order (last element = top) and the dealer."""

    order: npt.NDArray[np.int8]
    dealer: int


class StepResult(NamedTuple):
    """What one ``step`` changed, per row."""

    rewards: npt.NDArray[np.float32]  # (B, P) points: own side's hand score - best other side's
    terminated: npt.NDArray[np.bool_]  # (B,) episode over by the rules
    truncated: npt.NDArray[np.bool_]  # (B,) stopped by a guard (step cap, max_hands)
    illegal: npt.NDArray[np.bool_]  # (B,) the action was not legal: row left unchanged
    events: npt.NDArray[np.int32]  # (B,) EV_* bits of what happened (layout.EVENT_NAMES)


@dataclass
class State:
    """A batch of independent games: ``data`` holds one packed int32 row per game.

    Named properties are views into ``data`` (writable, so scenario builders can edit them; call
    ``refresh_mask`` after editing).
    """

    rules: RuleSet
    params: npt.NDArray[np.int32]  # (NUM_PARAMS,) rule options and row offsets
    data: npt.NDArray[np.int32]  # (B, W) packed game rows
    legal_action_mask: npt.NDArray[np.bool_]  # (B, A) refreshed by every step

    @property
    def num_games(self) -> int:
        return int(self.data.shape[0])

    @property
    def all_rows(self) -> npt.NDArray[np.int64]:
        """``arange(num_games)``, cached."""
        cached = self.__dict__.get("_all_rows")
        if cached is None or cached.shape[0] != self.num_games:
            cached = self.__dict__["_all_rows"] = np.arange(self.num_games, dtype=np.int64)
        return cached

    @property
    def num_players(self) -> int:
        return int(self.params[P_NPLAYERS])

    @property
    def num_owners(self) -> int:
        """Meld owners: the sides, or the players when each player owns their melds (G2)."""
        return int(self.params[P_NOWNERS])

    @property
    def num_sides(self) -> int:
        return int(self.params[P_NSIDES])

    @property
    def num_actions(self) -> int:
        return NUM_ACTIONS

    def _field(self, f: int) -> npt.NDArray[np.int32]:
        return self.data[:, f]

    def _block(self, key: int, *shape: int) -> npt.NDArray[np.int32]:
        start = int(self.params[key])
        size = int(np.prod(shape))
        return self.data[:, start: start + size].reshape(self.num_games, *shape)

    current_player = property(lambda self: self._field(F_CUR))  # (B,) seat to move
    phase = property(lambda self: self._field(F_PHASE))  # (B,) layout.PH_*
    dealer = property(lambda self: self._field(F_DEALER))
    hand_number = property(lambda self: self._field(F_HAND_NO))
    stock_size = property(lambda self: self._field(F_STOCK_LEN))
    pile_size = property(lambda self: self._field(F_PILE_LEN))
    game_result = property(lambda self: self._field(F_GAME_RESULT))  # winning side, -1 draw
    hand_end = property(lambda self: self._field(F_HAND_END))  # layout.HE_*

    turn_value = property(lambda self: self._field(F_TURN_VALUE))  # (B,) value toward the minimum
    turn_flags = property(lambda self: self._field(F_TURN_FLAGS))  # (B,) layout.TF_* bits
    minimum = property(lambda self: self._field(F_MINIMUM))  # (B,) minimum of the mover's side
    needs_minimum = property(lambda self: self._field(F_NEEDS_MIN))  # (B,) side unopened at turn start
    pile_frozen = property(lambda self: self._field(F_PILE_FROZEN))  # (B,) a wild lies in the pile
    asker = property(lambda self: self._field(F_ASKER))  # (B,) seat that asked its partner (C29)
    decisions = property(lambda self: self._field(F_STEPS))  # (B,) decisions in this hand
    went_out = property(lambda self: self._field(F_WENT_OUT))  # (B,) seat that went out, -1 none
    concealed = property(lambda self: self._field(F_CONCEALED))  # (B,) that go-out was concealed

    @property
    def credit(self) -> npt.NDArray[np.int32]:
        """(B, 15) cards of each kind whose melding still counts toward the minimum this turn
        (large when no pile was taken: every card counts)."""
        return self._block(O_CREDIT, NUM_KINDS)

    @property
    def new_this_turn(self) -> npt.NDArray[np.int32]:
        """(B, 13) meld slots the mover's side started this turn."""
        return self._block(O_NEW, NUM_SLOTS)

    @property
    def terminated(self) -> npt.NDArray[np.bool_]:
        return (self.data[:, F_STATUS] == ST_DONE) & (self.data[:, F_TRUNC] == 0)

    @property
    def truncated(self) -> npt.NDArray[np.bool_]:
        return self.data[:, F_TRUNC] == 1

    @property
    def hands(self) -> npt.NDArray[np.int32]:
        """(B, P, 15) count of each card kind in each hand."""
        return self._block(O_HANDS, self.num_players, NUM_KINDS)

    @property
    def known(self) -> npt.NDArray[np.int32]:
        """(B, P, 15) cards each player is known to hold (taken from the pile, not yet played)."""
        return self._block(O_KNOWN, self.num_players, NUM_KINDS)

    @property
    def red_threes(self) -> npt.NDArray[np.int32]:
        """(B, P) red threes laid down by each player."""
        return self._block(O_RED3, self.num_players)

    @property
    def has_melded(self) -> npt.NDArray[np.int32]:
        """(B, P) whether each player has melded or added to a meld this hand."""
        return self._block(O_MELDED, self.num_players)

    @property
    def meld_naturals(self) -> npt.NDArray[np.int32]:
        """(B, owners, 13) naturals (black threes in slot 12) in each owner's meld of each slot (owner =
        side, or player under G2; owner o belongs to side o % num_sides)."""
        return self._block(O_MNAT, self.num_owners, NUM_SLOTS)

    @property
    def meld_jokers(self) -> npt.NDArray[np.int32]:
        return self._block(O_MJOK, self.num_owners, NUM_SLOTS)

    @property
    def meld_twos(self) -> npt.NDArray[np.int32]:
        return self._block(O_MTWO, self.num_owners, NUM_SLOTS)

    @property
    def reserves(self) -> npt.NDArray[np.int32]:
        """(B, P, 15) each player's kitty or foot while it is not in their hand (R1, P1)."""
        return self._block(O_RESERVE, self.num_players, NUM_KINDS)

    @property
    def reserve_state(self) -> npt.NDArray[np.int32]:
        """(B, P) layout.RES_*: face down, shown (joins after this turn's discard, R4), in hand."""
        return self._block(O_RESSTATE, self.num_players)

    @property
    def closed_canastas(self) -> npt.NDArray[np.int32]:
        """(B, owners, 4) canastas each owner has closed under a meld cap, by kind (layout.K_*:
        natural/red, mixed/black, wild, sevens; R2, P2)."""
        return self._block(O_CKINDS, self.num_owners, 4)

    @property
    def closed_slots(self) -> npt.NDArray[np.int32]:
        """(B, owners, 13) closed canastas per meld slot (R2)."""
        return self._block(O_CLOSED, self.num_owners, NUM_SLOTS)

    @property
    def closed_jokers(self) -> npt.NDArray[np.int32]:
        """(B, owners, 13) jokers in each owner's closed canastas of each slot (the rest of their
        seven cards are twos and naturals of the slot's rank)."""
        return self._block(O_CJOK, self.num_owners, NUM_SLOTS)

    @property
    def closed_twos(self) -> npt.NDArray[np.int32]:
        """(B, owners, 13) twos in each owner's closed canastas of each slot."""
        return self._block(O_CTWO, self.num_owners, NUM_SLOTS)

    @property
    def opened(self) -> npt.NDArray[np.int32]:
        """(B, sides) whether each side has met its initial-meld minimum this hand."""
        return self._block(O_OPENED, self.num_sides)

    @property
    def scores(self) -> npt.NDArray[np.int32]:
        """(B, sides) cumulative game scores."""
        return self._block(O_SCORE, self.num_sides)

    @property
    def hand_scores(self) -> npt.NDArray[np.int32]:
        """(B, sides) score of the last scored hand."""
        return self._block(O_HSCORE, self.num_sides)

    @property
    def score_parts(self) -> npt.NDArray[np.int32]:
        """(B, sides, 5) parts of the last hand score (layout.PART_NAMES)."""
        return self._block(O_PARTS, self.num_sides, NUM_PARTS)

    def stock(self, b: int) -> npt.NDArray[np.int32]:
        """Row ``b``'s stock, bottom first (the last element is the next card drawn)."""
        start = int(self.params[O_STOCK])
        return self.data[b, start: start + int(self.data[b, F_STOCK_LEN])]

    def pile(self, b: int) -> npt.NDArray[np.int32]:
        """Row ``b``'s discard pile, bottom first (the last element is the top card)."""
        start = int(self.params[O_PILE])
        return self.data[b, start: start + int(self.data[b, F_PILE_LEN])]

    def deal_id(self, b: int) -> DealId:
        """Address of the deal row ``b`` is playing."""
        d = self.data[b]
        seed = (int(d[F_SEED_HI]) & 0xFFFFFFFF) << 32 | (int(d[F_SEED_LO]) & 0xFFFFFFFF)
        return DealId(seed, int(d[F_DEAL_ROW]), int(d[F_DEAL_INDEX]))

    def legal_actions(self, b: int) -> list[int]:
        """Legal action indices of row ``b``."""
        return [int(a) for a in np.flatnonzero(self.legal_action_mask[b])]

    def refresh_mask(self) -> None:
        """Recompute every mask after the arrays were edited from Python."""
        kernels.refresh_masks(self.data, self.legal_action_mask, self.params)


def _new_state(rules: RuleSet | str, num_games: int, episode: str) -> State:
    rules = load_rules(rules) if isinstance(rules, str) else rules.resolved()
    if num_games < 1:
        raise ValueError(f"num_games must be >= 1, got {num_games}")
    params = pack_params(rules, episode)
    data = np.zeros((num_games, int(params[P_WIDTH])), dtype=np.int32)
    mask = np.zeros((num_games, NUM_ACTIONS), dtype=np.bool_)
    return State(rules, params, data, mask)


def _split_seeds(seeds: npt.NDArray[np.uint64]) -> tuple[npt.NDArray[np.int32], ...]:
    lo = (seeds & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32)
    hi = (seeds >> np.uint64(32)).astype(np.uint32).view(np.int32)
    return lo, hi


def _deal(state: State, rows: npt.NDArray[np.int64], deals: list[DealId]) -> npt.NDArray[np.int32]:
    for d in deals:
        if not (0 <= int(d.seed) < 2**64 and 0 <= int(d.row) < 2**31 and 0 <= int(d.index) < 2**31):
            raise ValueError(f"DealId {d} out of range: seed in [0, 2**64), row and index in [0, 2**31)")
    seeds = np.array([int(d.seed) for d in deals], dtype=np.uint64)
    lo, hi = _split_seeds(seeds)
    events = np.zeros(len(rows), dtype=np.int32)
    kernels.deal_kernel(state.data, state.legal_action_mask, state.params, rows.astype(np.int64),
                        lo, hi, np.array([d.row for d in deals], dtype=np.int32),
                        np.array([d.index for d in deals], dtype=np.int32), events)
    return events


def init(rules: RuleSet | str, num_games: int, seed: int | npt.ArrayLike = 0,
         *, episode: str = "hand") -> State:
    """Create a batch of ``num_games`` games and deal them.

    Args:
        rules: a resolved ``RuleSet`` or a preset name.
        num_games: batch size B.
        seed: an int (row b plays DealId(seed, b, 0)) or a sequence of B per-row seeds (row b
            plays DealId(seeds[b], 0, 0), so SB3's ``seed + i`` maps onto rows).
        episode: ``"hand"`` (an episode is one hand) or ``"game"`` (hands to the target, C33).
    """
    state = _new_state(rules, num_games, episode)
    rows = np.arange(num_games)
    if np.ndim(seed) == 0:
        deals = [DealId(int(seed), b, 0) for b in range(num_games)]  # type: ignore[arg-type]
    else:
        seeds = [int(s) for s in np.asarray(seed).ravel()]
        if len(seeds) != num_games:
            raise ValueError(f"got {len(seeds)} seeds for {num_games} games")
        deals = [DealId(s, 0, 0) for s in seeds]
    _deal(state, rows, deals)
    return state


def init_from_deals(rules: RuleSet | str, deals: list[DealId] | list[ExplicitDeal],
                    *, episode: str = "hand") -> State:
    """A batch replaying the given deals: DealIds (row b re-dealt exactly as its address says) or
    explicit deals (deck order and dealer, stable across library and numpy versions)."""
    if not deals:
        raise ValueError("no deals given")
    state = _new_state(rules, len(deals), episode)
    redeal(state, np.arange(len(deals)), deals)
    return state


def redeal(state: State, rows: npt.ArrayLike, deals: list[DealId] | list[ExplicitDeal]) -> None:
    """Start a new game on each listed row from the given DealIds or explicit deals."""
    idx = np.asarray(rows, dtype=np.int64).reshape(-1)
    if len(deals) != idx.size:
        raise ValueError(f"{len(deals)} deals for {idx.size} rows")
    if not all(isinstance(d, ExplicitDeal) for d in deals):
        _deal(state, idx, [DealId(*d) for d in deals])
        return
    deck = int(state.params[P_DECK])
    expected = np.bincount(_deck_order(state), minlength=NUM_KINDS)
    orders = np.zeros((len(deals), deck), dtype=np.int32)
    for i, d in enumerate(deals):
        order = np.asarray(d.order)  # type: ignore[union-attr,attr-defined]
        if order.shape != (deck,) or not np.array_equal(
                np.bincount(order.astype(np.int64), minlength=NUM_KINDS), expected):
            raise ValueError(f"explicit deal {i}: order is not a permutation of the "
                             f"{deck}-card deck of {state.rules.name}")
        orders[i] = order
    dealers = np.array([int(d.dealer) for d in deals], dtype=np.int32)  # type: ignore[union-attr]
    if np.any((dealers < 0) | (dealers >= state.num_players)):
        raise ValueError(f"explicit deal dealer out of range [0, {state.num_players})")
    kernels.explicit_deal_kernel(state.data, state.legal_action_mask, state.params, idx, orders,
                                 dealers)


def _deck_order(state: State) -> npt.NDArray[np.int64]:
    from canasta_env.engine.layout import deck_counts

    return np.repeat(np.arange(NUM_KINDS), deck_counts(state.params))


def explicit_deal(rules: RuleSet | str, deal: DealId, hand: int = 0) -> ExplicitDeal:
    """The deck order and dealer a DealId produces for hand ``hand`` of its game (the dealer of
    later hands passes left, C4)."""
    from canasta_env.engine.deal import shuffled_order

    state = _new_state(rules, 1, "hand")
    order = np.empty(int(state.params[P_DECK]), dtype=np.int32)
    lo, hi = _split_seeds(np.array([deal.seed], dtype=np.uint64))
    dealer = shuffled_order(state.params, int(lo[0]), int(hi[0]), deal.row, deal.index, hand, order)
    if hand > 0:
        first = shuffled_order(state.params, int(lo[0]), int(hi[0]), deal.row, deal.index, 0,
                               np.empty_like(order))
        dealer = (first + hand) % state.num_players
    return ExplicitDeal(order.astype(np.int8), int(dealer))


def reset_rows(state: State, rows: npt.ArrayLike) -> npt.NDArray[np.int32]:
    """Start each listed row's next deal, DealId(seed, row, index + 1); returns deal event bits."""
    rows = np.asarray(rows, dtype=np.int64).ravel()
    if rows.size == 0:
        return np.zeros(0, dtype=np.int32)
    d = state.data[rows]
    events = np.zeros(rows.size, dtype=np.int32)
    kernels.deal_kernel(state.data, state.legal_action_mask, state.params, rows,
                        d[:, F_SEED_LO].copy(), d[:, F_SEED_HI].copy(), d[:, F_DEAL_ROW].copy(),
                        d[:, F_DEAL_INDEX] + 1, events)
    return events


def step(state: State, actions: npt.ArrayLike, rows: npt.ArrayLike | None = None) -> StepResult:
    """Apply one action per row, in place. Rows whose action is illegal are left unchanged and
    flagged in ``illegal``; finished rows are no-ops.

    With ``rows``, only those rows step (``actions[i]`` for ``rows[i]``) and every returned array
    is indexed like ``rows``; the other rows are untouched.
    """
    acts = np.asarray(actions, dtype=np.int64).reshape(-1)
    idx = state.all_rows if rows is None else np.asarray(rows, dtype=np.int64).reshape(-1)
    if acts.shape[0] != idx.shape[0]:
        raise ValueError(f"expected {idx.shape[0]} actions, got {acts.shape[0]}")
    n = idx.shape[0]
    rewards = np.zeros((n, state.num_players), dtype=np.float32)
    status = np.zeros(n, dtype=np.int32)
    events = np.zeros(n, dtype=np.int32)
    kernels.step_kernel(state.data, state.legal_action_mask, state.params, idx, acts, rewards,
                        status, events)
    if np.any(status == kernels.STEP_DEAD_END):
        bad = int(idx[np.flatnonzero(status == kernels.STEP_DEAD_END)[0]])
        raise RuntimeError(f"engine bug: row {bad} ({state.deal_id(bad)}) is live with no legal "
                           "action")
    terminated, truncated = state.terminated, state.truncated
    if rows is not None:
        terminated, truncated = terminated[idx], truncated[idx]
    return StepResult(rewards, terminated, truncated, status == kernels.STEP_ILLEGAL, events)


def step_one(state: State, action: int) -> StepResult:
    """Single-game path: like ``step`` on a batch of one, raising ``IllegalActionError``."""
    if state.num_games != 1:
        raise ValueError("step_one needs a batch of one game")
    result = step(state, [action])
    if result.illegal[0]:
        raise_illegal(state, 0, action)
    return result


def raise_illegal(state: State, b: int, action: int) -> None:
    """Raise ``IllegalActionError`` naming the row, the action and the legal ones."""
    name = ACTION_NAMES[action] if 0 <= int(action) < NUM_ACTIONS else "out of range"
    legal = ", ".join(f"{a} {ACTION_NAMES[a]}" for a in state.legal_actions(b))
    raise IllegalActionError(f"row {b}: action {action} ({name}) is not legal; legal: {legal}")


def observe(state: State, players: npt.ArrayLike, rows: npt.ArrayLike | None = None
            ) -> npt.NDArray[np.float32]:
    """Observations ``(B, D)`` of each row from seat ``players[b]`` (observation.py lists the
    pieces); with ``rows``, ``(len(rows), D)`` for those rows only."""
    idx = state.all_rows if rows is None else np.asarray(rows, dtype=np.int64).reshape(-1)
    seats = np.asarray(players, dtype=np.int64)
    if seats.ndim == 0 or seats.shape[0] != idx.shape[0]:
        seats = np.broadcast_to(seats, idx.shape)
    if seats.size and (seats.min() < 0 or seats.max() >= state.num_players):
        raise ValueError(f"players must be seats in [0, {state.num_players})")
    out = np.empty((idx.shape[0], obs_dim(state.params)), dtype=np.float32)
    observe_kernel(state.data, state.params, idx, np.ascontiguousarray(seats), out)
    return out


def clone(state: State, rows: npt.ArrayLike | None = None) -> State:
    """A deep copy of the state, or of the listed rows only."""
    if rows is None:
        return State(state.rules, state.params.copy(), state.data.copy(),
                     state.legal_action_mask.copy())
    idx = np.asarray(rows, dtype=np.int64).ravel()
    return State(state.rules, state.params.copy(), state.data[idx].copy(),
                 state.legal_action_mask[idx].copy())
