"""The batch engine's Python API: ``init``, ``step``, ``reset_rows``, ``clone`` and deal replay.

The Python layer only checks its arguments, allocates arrays, calls the compiled kernels and
returns arrays; every rule lives in the kernels. The kernels do not bounds-check, so every public
function refuses bad ``rows``/``actions``/seeds (``ValueError``, ``RowIndexError``) and rows whose
fields were edited out of range (``CorruptStateError``, ``integrity.py``) before a kernel runs, and
``init`` refuses a batch that cannot fit in memory before allocating it. ``step``
mutates the ``State`` it is given (like pgx's functional ``step``, but in place, to avoid copying a
large batch every decision).
"""

from __future__ import annotations

import operator
import os
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from canasta_env.engine import kernels
from canasta_env.engine import layout as L
from canasta_env.engine.actions import ACTION_NAMES, NUM_ACTIONS
from canasta_env.engine.cards import KIND_NAMES, NUM_KINDS
from canasta_env.engine.integrity import (
    BAD_ACTION,
    BAD_CARDS,
    BAD_CLOSED_CARDS,
    BAD_PILE,
    BAD_STOCK,
    FIELDS,
    REPORT_SIZE,
    find_corrupt,
)
from canasta_env.engine.observation import divisors, obs_dim, observe_kernel
from canasta_env.engine.threads import check_threads, run_rows
from canasta_env.messages import short_repr
from canasta_env.rules import RuleSet, load_rules


class IllegalActionError(ValueError):
    """An action the mask does not allow was played where the caller owns the actions."""


class DealId(NamedTuple):
    """Address of a deal: ``init(rules, B, seed)`` deals ``(seed, b, 0)`` to row b and the k-th
    auto-reset of row b deals ``(seed, b, k)`` (docs/engine.md)."""

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
    threads: int = 1  # kernels split large batches over this many threads (engine/threads.py)

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
    def obs_divisors(self) -> npt.NDArray[np.float64]:
        """The observation's declared divisors (``observation.divisors``) in float64, cached: the
        encoder divides by them."""
        cached = self.__dict__.get("_obs_divisors")
        if cached is None:
            cached = self.__dict__["_obs_divisors"] = divisors(self.params).astype(np.float64)
        return cached

    @property
    def num_players(self) -> int:
        return int(self.params[L.P_NPLAYERS])

    @property
    def num_owners(self) -> int:
        """Meld owners: the sides, or the players when each player owns their melds (G2)."""
        return int(self.params[L.P_NOWNERS])

    @property
    def num_sides(self) -> int:
        return int(self.params[L.P_NSIDES])

    @property
    def num_actions(self) -> int:
        return NUM_ACTIONS

    def _field(self, f: int) -> npt.NDArray[np.int32]:
        return self.data[:, f]

    def _block(self, key: int) -> npt.NDArray[np.int32]:
        """The ``(B, rows, width)`` view of a block of ``layout.ROW_BLOCKS`` (``(B, rows)`` for width
        1, ``(B, width)`` for a block of the table)."""
        rows, width = L.BLOCK_SHAPE[key]
        assert isinstance(width, int), "stock and pile are read by State.stock and State.pile"
        count = L.block_rows(self.params)[rows]
        shape = ((count,) if rows != "one" else ()) + ((width,) if width != 1 else ())
        start = int(self.params[key])
        return self.data[:, start: start + int(np.prod(shape))].reshape(self.num_games, *shape)

    current_player = property(lambda self: self._field(L.F_CUR))  # (B,) seat to move
    phase = property(lambda self: self._field(L.F_PHASE))  # (B,) layout.PH_*
    dealer = property(lambda self: self._field(L.F_DEALER))
    hand_number = property(lambda self: self._field(L.F_HAND_NO))
    stock_size = property(lambda self: self._field(L.F_STOCK_LEN))
    pile_size = property(lambda self: self._field(L.F_PILE_LEN))
    game_result = property(lambda self: self._field(L.F_GAME_RESULT))  # winning side, -1 draw
    hand_end = property(lambda self: self._field(L.F_HAND_END))  # layout.HE_*

    turn_value = property(lambda self: self._field(L.F_TURN_VALUE))  # (B,) value toward the minimum
    turn_flags = property(lambda self: self._field(L.F_TURN_FLAGS))  # (B,) layout.TF_* bits
    minimum = property(lambda self: self._field(L.F_MINIMUM))  # (B,) minimum of the mover's side
    needs_minimum = property(lambda self: self._field(L.F_NEEDS_MIN))  # (B,) side unopened at turn start
    pile_frozen = property(lambda self: self._field(L.F_PILE_FROZEN))  # (B,) a wild lies in the pile
    asker = property(lambda self: self._field(L.F_ASKER))  # (B,) seat that asked its partner (C29)
    decisions = property(lambda self: self._field(L.F_STEPS))  # (B,) decisions in this hand
    went_out = property(lambda self: self._field(L.F_WENT_OUT))  # (B,) seat that went out, -1 none
    concealed = property(lambda self: self._field(L.F_CONCEALED))  # (B,) that go-out was concealed

    @property
    def credit(self) -> npt.NDArray[np.int32]:
        """(B, 15) cards of each kind whose melding still counts toward the minimum this turn
        (large when no pile was taken: every card counts)."""
        return self._block(L.O_CREDIT)

    @property
    def new_this_turn(self) -> npt.NDArray[np.int32]:
        """(B, 13) meld slots the mover's side started this turn."""
        return self._block(L.O_NEW)

    @property
    def terminated(self) -> npt.NDArray[np.bool_]:
        return (self.data[:, L.F_STATUS] == L.ST_DONE) & (self.data[:, L.F_TRUNC] == 0)

    @property
    def truncated(self) -> npt.NDArray[np.bool_]:
        return self.data[:, L.F_TRUNC] == 1

    @property
    def hands(self) -> npt.NDArray[np.int32]:
        """(B, P, 15) count of each card kind in each hand."""
        return self._block(L.O_HANDS)

    @property
    def known(self) -> npt.NDArray[np.int32]:
        """(B, P, 15) cards each player is known to hold (taken from the pile, not yet played)."""
        return self._block(L.O_KNOWN)

    @property
    def red_threes(self) -> npt.NDArray[np.int32]:
        """(B, P) red threes laid down by each player."""
        return self._block(L.O_RED3)

    @property
    def has_melded(self) -> npt.NDArray[np.int32]:
        """(B, P) whether each player has melded or added to a meld this hand."""
        return self._block(L.O_MELDED)

    @property
    def meld_naturals(self) -> npt.NDArray[np.int32]:
        """(B, owners, 13) naturals (black threes in slot 12) in each owner's meld of each slot (owner =
        side, or player under G2; owner o belongs to side o % num_sides)."""
        return self._block(L.O_MNAT)

    @property
    def meld_jokers(self) -> npt.NDArray[np.int32]:
        return self._block(L.O_MJOK)

    @property
    def meld_twos(self) -> npt.NDArray[np.int32]:
        return self._block(L.O_MTWO)

    @property
    def reserves(self) -> npt.NDArray[np.int32]:
        """(B, P, 15) each player's kitty or foot while it is not in their hand (R1, P1)."""
        return self._block(L.O_RESERVE)

    @property
    def reserve_state(self) -> npt.NDArray[np.int32]:
        """(B, P) layout.RES_*: face down, shown (joins after this turn's discard, R4), in hand."""
        return self._block(L.O_RESSTATE)

    @property
    def closed_canastas(self) -> npt.NDArray[np.int32]:
        """(B, owners, 4) canastas each owner has closed under a meld cap, by kind (layout.K_*:
        natural/red, mixed/black, wild, sevens; R2, P2)."""
        return self._block(L.O_CKINDS)

    @property
    def closed_slots(self) -> npt.NDArray[np.int32]:
        """(B, owners, 13) closed canastas per meld slot (R2)."""
        return self._block(L.O_CLOSED)

    @property
    def closed_jokers(self) -> npt.NDArray[np.int32]:
        """(B, owners, 13) jokers in each owner's closed canastas of each slot (the rest of their
        seven cards are twos and naturals of the slot's rank)."""
        return self._block(L.O_CJOK)

    @property
    def closed_twos(self) -> npt.NDArray[np.int32]:
        """(B, owners, 13) twos in each owner's closed canastas of each slot."""
        return self._block(L.O_CTWO)

    @property
    def opened(self) -> npt.NDArray[np.int32]:
        """(B, sides) whether each side has met its initial-meld minimum this hand."""
        return self._block(L.O_OPENED)

    @property
    def scores(self) -> npt.NDArray[np.int32]:
        """(B, sides) cumulative game scores."""
        return self._block(L.O_SCORE)

    @property
    def hand_scores(self) -> npt.NDArray[np.int32]:
        """(B, sides) score of the last scored hand."""
        return self._block(L.O_HSCORE)

    @property
    def score_parts(self) -> npt.NDArray[np.int32]:
        """(B, sides, 5) parts of the last hand score (layout.PART_NAMES)."""
        return self._block(L.O_PARTS)

    def row_index(self, b: object, what: str = "row") -> int:
        """``b`` as a row of this batch: an integer in ``[0, num_games)`` (negative indices are
        refused, not wrapped); ``RowIndexError`` otherwise."""
        i = check_int(b, what, "State")
        if not 0 <= i < self.num_games:
            raise RowIndexError(f"State: {what} {short_repr(i)} is out of range for a batch of "
                                f"{self.num_games} games")
        return i

    def _sound_row(self, b: object, fn: str) -> int:
        """``row_index(b)``, after checking that row's fields (``CorruptStateError``)."""
        i = self.row_index(b)
        _check_state(self, fn)
        check_integrity(self, np.array([i], dtype=np.int64), fn)
        return i

    def stock(self, b: int) -> npt.NDArray[np.int32]:
        """Row ``b``'s stock, bottom first (the last element is the next card drawn)."""
        b = self._sound_row(b, "State.stock")
        start = int(self.params[L.O_STOCK])
        return self.data[b, start: start + int(self.data[b, L.F_STOCK_LEN])]

    def pile(self, b: int) -> npt.NDArray[np.int32]:
        """Row ``b``'s discard pile, bottom first (the last element is the top card)."""
        b = self._sound_row(b, "State.pile")
        start = int(self.params[L.O_PILE])
        return self.data[b, start: start + int(self.data[b, L.F_PILE_LEN])]

    def deal_id(self, b: int) -> DealId:
        """Address of the deal row ``b`` is playing."""
        d = self.data[self.row_index(b)]
        seed = (int(d[L.F_SEED_HI]) & 0xFFFFFFFF) << 32 | (int(d[L.F_SEED_LO]) & 0xFFFFFFFF)
        return DealId(seed, int(d[L.F_DEAL_ROW]), int(d[L.F_DEAL_INDEX]))

    def legal_actions(self, b: int) -> list[int]:
        """Legal action indices of row ``b``."""
        return [int(a) for a in np.flatnonzero(self.legal_action_mask[self.row_index(b)])]

    def refresh_mask(self) -> None:
        """Recompute every mask after the arrays were edited from Python; ``CorruptStateError``
        (nothing recomputed) when an edit left a row the kernels cannot run on."""
        _check_state(self, "refresh_mask")
        check_integrity(self, self.all_rows, "refresh_mask")
        run_rows(self.threads, kernels.mask_rows, (self.data, self.legal_action_mask, self.params),
                 (self.all_rows,))


# ---- input validation ------------------------------------------------------------------------
# The kernels index rows without bounds checks (numba), so every public entry point checks its
# ``rows``/``actions`` first; the package's own loops, which build their rows themselves, call the
# ``_*_unchecked`` twins directly (the checks cost a few microseconds a call, a visible share of a
# batch-1 step).

MAX_GAMES = 2**31 - 1  # deal addresses store the row in an int32
SEED_LIMIT = 2**64
_ROW_OVERHEAD = 64  # bytes per game of temporaries while dealing (seeds, row ids, events, arange)


class CorruptStateError(ValueError):
    """A state's fields were edited into values the kernels cannot run on: a seat, phase, length,
    card kind or count out of range, cards that do not add up to the deck, params that are not its
    rules', or a mask allowing an action the row cannot play."""


class RowIndexError(IndexError, ValueError):
    """A row index outside the batch (an ``IndexError`` that is also a ``ValueError``, so callers
    that turn user mistakes into messages catch it)."""


def _int_vector(fn: str, name: str, values: object,
                error: type[ValueError] = ValueError) -> np.ndarray:
    """``values`` as a 1-D array of an integer dtype (its own, not converted); ``ValueError`` for
    bools, floats, strings, objects and other shapes, ``error`` for Python ints beyond 64 bits. An
    empty sequence is an empty int64 array."""
    if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.kind in "iu":
        return values
    try:
        arr = np.asarray(values)
    except (ValueError, TypeError, OverflowError):
        arr = None
    if not isinstance(values, np.ndarray) and (arr is None or arr.dtype.kind in "fO"):
        _refuse_huge_ints(fn, name, values, error)  # numpy made floats or objects of big ints
    if arr is None or arr.dtype == object:
        raise ValueError(f"{fn}: {name} must be a 1-D sequence of integers, got "
                         f"{short_repr(values)}")
    if arr.ndim == 1 and arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.ndim != 1:
        raise ValueError(f"{fn}: {name} must be 1-D, got shape {arr.shape} ({short_repr(values)})")
    if arr.dtype.kind not in "iu":
        raise ValueError(f"{fn}: {name} must hold integers, got dtype {arr.dtype} "
                         f"({short_repr(values)})")
    return arr


def _refuse_huge_ints(fn: str, name: str, values: object, error: type[ValueError]) -> None:
    """Raise ``error`` naming the first entry when ``values`` is a flat sequence of Python ints
    one of which does not fit in an int64; return otherwise."""
    try:
        items = np.asarray(values, dtype=object)
    except (ValueError, TypeError):
        return
    if items.ndim != 1 or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                  for v in items):
        return
    for i, v in enumerate(items):
        if not -(2**63) <= v < 2**63:
            raise error(f"{fn}: {name}[{i}] = {short_repr(int(v))} is out of range")


def check_rows(state: State, rows: object, fn: str, *, unique: bool = False
               ) -> npt.NDArray[np.int64]:
    """``rows`` as int64 row indices of ``state``, each in ``[0, num_games)`` (negative indices are
    refused, not wrapped) and, with ``unique``, each listed once; raises ``RowIndexError`` or
    ``ValueError`` naming ``fn`` and the first bad entry."""
    idx = _int_vector(fn, "rows", rows, RowIndexError)
    n = state.num_games
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        i = int(np.flatnonzero((idx < 0) | (idx >= n))[0])
        raise RowIndexError(f"{fn}: rows[{i}] = {int(idx[i])} is out of range for a batch of "
                            f"{n} games")
    idx = idx.astype(np.int64, copy=False)
    if unique and idx.size > 1:
        seen = np.zeros(n, dtype=np.bool_)
        seen[idx] = True
        if np.count_nonzero(seen) != idx.size:
            first = np.unique(idx, return_index=True)[1]
            i = int(np.setdiff1d(np.arange(idx.size), first)[0])
            raise ValueError(f"{fn}: rows[{i}] = {int(idx[i])} is listed twice; each row may "
                             "appear once")
    return idx


def check_actions(actions: object, n: int, fn: str) -> npt.NDArray[np.int64]:
    """``actions`` as ``n`` int64 actions; ``ValueError`` for non-integers (3.7 is refused, not
    played as 3), bools and a wrong count. Out-of-range integers stay: ``step`` flags them illegal
    (like any action the mask refuses) and ``-1`` is the usual "no action" of finished rows."""
    acts = _int_vector(fn, "actions", actions)
    if acts.shape[0] != n:
        raise ValueError(f"{fn}: expected {n} actions (one per row), got {acts.shape[0]}")
    if acts.dtype.kind == "u":  # keep huge unsigned values out of range rather than wrapped
        acts = np.minimum(acts, NUM_ACTIONS)
    return acts.astype(np.int64, copy=False)


def check_int(value: object, name: str, fn: str) -> int:
    """``value`` as a Python int: ints and numpy integers (0-d arrays included); ``ValueError`` for
    bools, floats (even 3.0), strings and the rest."""
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{fn}: {name} must be an integer, got {value!r}")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise ValueError(f"{fn}: {name} must be an integer, got {short_repr(value)} "
                         f"({type(value).__name__})") from None


def check_action(action: object, fn: str) -> int:
    """One action as a Python int (see ``check_int``); its range is the caller's business."""
    return check_int(action, "action", fn)


def check_seed(seed: object, fn: str, name: str = "seed", span: int = 1) -> int:
    """A seed as a Python int in ``[0, 2**64 - span]`` (``span`` consecutive seeds ``seed + i``
    must all fit the engine's 64-bit deal addresses)."""
    s = check_int(seed, name, fn)
    if not 0 <= s <= SEED_LIMIT - span:
        more = f" (and {name} + {span - 1} for {span} envs)" if span > 1 else ""
        raise ValueError(f"{fn}: {name} = {short_repr(s)} is out of range: seeds are integers in "
                         f"[0, 2**64){more}")
    return s


def check_batch_size(value: object, fn: str, name: str = "num_games") -> int:
    """A batch size as a Python int in ``[1, MAX_GAMES]``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{fn}: {name} must be an integer >= 1, got {short_repr(value)} "
                         f"({type(value).__name__})")
    n = int(value)
    if not 1 <= n <= MAX_GAMES:
        raise ValueError(f"{fn}: {name} must be in [1, {MAX_GAMES}], got {n}")
    return n


_WRITERS = frozenset({"step", "reset_rows", "redeal", "refresh_mask"})  # they change the arrays in place


def _check_state(state: State, fn: str) -> None:
    """The arrays a kernel will index have the shapes and dtypes the parameter vector implies."""
    data, mask, prm = state.data, state.legal_action_mask, state.params
    if not (isinstance(prm, np.ndarray) and prm.dtype == np.int32 and prm.shape == (L.NUM_PARAMS,)
            and isinstance(data, np.ndarray) and data.dtype == np.int32 and data.ndim == 2
            and data.shape[1] == prm[L.P_WIDTH] and isinstance(mask, np.ndarray)
            and mask.dtype == np.bool_ and mask.shape == (data.shape[0], NUM_ACTIONS)):
        raise ValueError(f"{fn}: the state's arrays do not match its parameters (data, "
                         "legal_action_mask or params were replaced); make it with init()")
    if fn in _WRITERS and not (data.flags.writeable and mask.flags.writeable):
        raise ValueError(f"{fn}: the state's data or legal_action_mask is read-only; {fn} changes "
                         "them in place (clone() gives a writable copy)")
    check_threads(state.threads, f"{fn}: state.threads")


_NO_ACTIONS = np.zeros(0, dtype=np.int64)
_NO_ROWS = np.zeros(0, dtype=np.int64)
_PARAMS_OF_RULES: dict[tuple[int, int], tuple[RuleSet, npt.NDArray[np.int32]]] = {}


def check_integrity(state: State, rows: npt.NDArray[np.int64], fn: str,
                    actions: npt.NDArray[np.int64] | None = None) -> None:
    """Refuse (``CorruptStateError`` naming ``fn``, the row and the field) when the state's params
    are not its rules' or one of ``rows`` (in range, int64) holds a field the kernels would index
    out of range; with ``actions`` (one per row), also a masked-in action the row cannot play.
    One compiled pass (``integrity.find_corrupt``), run by the public entry points only."""
    report = np.zeros(REPORT_SIZE, dtype=np.int64)
    bad = find_corrupt(state.data, state.params, _params_of_rules(state, fn),
                       state.legal_action_mask, rows, _NO_ACTIONS if actions is None else actions,
                       report)
    if bad == -1:
        return
    code, i, j, value, low, high = (int(x) for x in report)
    if bad == -2:
        raise CorruptStateError(f"{fn}: the state's params[{i}] = {value} is not {low} as its rules "
                                f"({short_repr(state.rules.name, 40)}) give; make states with init()")
    raise CorruptStateError(f"{fn}: row {int(rows[bad])} is corrupt: "
                            f"{_corruption(code, i, j, value, low, high)}")


def _corruption(code: int, i: int, j: int, value: int, low: int, high: int) -> str:
    """What ``find_corrupt`` reported, in words."""
    name = FIELDS[code]
    if code == BAD_CARDS:
        return f"its {KIND_NAMES[i]} cards add up to {value}, the deck holds {low}"
    if code == BAD_ACTION:
        return (f"legal_action_mask allows action {i} ({ACTION_NAMES[i]}), which the row cannot "
                "play (call refresh_mask() after editing a state)")
    if code == BAD_CLOSED_CARDS:
        return (f"closed_slots[{i}, {j}] cannot hold its closed_jokers and closed_twos "
                f"({value} naturals left)")
    if code in (BAD_STOCK, BAD_PILE):
        return f"{name}[{i}] = {value} is not a card kind in [{low}, {high}]"
    index = "" if i < 0 else f"[{i}]" if j < 0 else f"[{i}, {j}]"
    return f"{name}{index} = {value} outside [{low}, {high}]"


def _params_of_rules(state: State, fn: str) -> npt.NDArray[np.int32]:
    """``pack_params`` of the state's rules and episode, cached by rule-set object."""
    rules = state.rules
    if not isinstance(rules, RuleSet):
        raise CorruptStateError(f"{fn}: the state's rules are not a RuleSet, got "
                                f"{short_repr(rules)}; make states with init()")
    game = int(state.params[L.P_EPISODE_GAME] != 0)
    hit = _PARAMS_OF_RULES.get((id(rules), game))
    if hit is None or hit[0] is not rules:
        if len(_PARAMS_OF_RULES) >= 64:
            _PARAMS_OF_RULES.clear()
        hit = _PARAMS_OF_RULES[(id(rules), game)] = (rules, L.pack_params(rules, ("hand", "game")[game]))
    return hit[1]


# ---- memory ----------------------------------------------------------------------------------

def available_memory() -> int | None:
    """Bytes this process can still allocate: ``MemAvailable`` from ``/proc/meminfo`` (capped by a
    cgroup v2 limit and by an address-space limit, ``ulimit -v``, when one is set), else free
    physical pages; ``None`` when unknown."""
    avail = _meminfo_available()
    if avail is None:
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            return None
    for limit in (_cgroup_available(), _address_space_left()):
        if limit is not None:
            avail = min(avail, limit)
    return avail


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _address_space_left() -> int | None:
    """An address-space limit (``ulimit -v``) less what this process has mapped already; ``None``
    without one. Physical memory alone passed a batch that then failed to allocate under it."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft == resource.RLIM_INFINITY or soft <= 0:
            return None
        with open("/proc/self/status", encoding="ascii") as f:
            mapped = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    except (ImportError, OSError, ValueError, IndexError, StopIteration):
        return None
    return max(soft - mapped, 0)


def _cgroup_available() -> int | None:
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="ascii") as f:
            limit = f.read().strip()
        if limit == "max":
            return None
        with open("/sys/fs/cgroup/memory.current", encoding="ascii") as f:
            used = int(f.read().strip())
        return max(int(limit) - used, 0)
    except (OSError, ValueError):
        return None


def batch_bytes(params: npt.NDArray[np.int32], num_games: int, extra_per_game: int = 0) -> int:
    """Bytes a batch of ``num_games`` needs: the packed rows (``4 * width`` each), the masks, the
    temporaries of dealing, one observation of every row (``observe``'s ``(B, D)`` float32: a
    batch that fits only without it fails on its first observe), plus ``extra_per_game`` (a vector
    env's other observation buffers)."""
    return num_games * (int(params[L.P_WIDTH]) * 4 + NUM_ACTIONS + _ROW_OVERHEAD + 4 * obs_dim(params)
                        + extra_per_game)


def check_memory(needed: int, what: str, fn: str) -> None:
    """``ValueError`` before allocating when ``needed`` bytes exceed the memory available (no
    refusal when the available memory is unknown)."""
    avail = available_memory()
    if avail is not None and needed > avail:
        raise ValueError(f"{fn}: {what} needs about {needed:,} bytes ({needed / 2**30:.1f} GiB) "
                         f"but only {avail:,} bytes ({avail / 2**30:.1f} GiB) of memory are "
                         "available; use a smaller batch")


# ---- batches and deals -----------------------------------------------------------------------

def _new_state(rules: RuleSet | str, num_games: object, episode: str, fn: str = "init",
               threads: object = 1) -> State:
    n = check_batch_size(num_games, fn)
    threads = check_threads(threads, f"{fn}: threads")
    # anything but a RuleSet goes through load_rules, which names a bad value (None, 5) in a
    # RulesError instead of failing on a missing attribute
    rules = rules.resolved() if isinstance(rules, RuleSet) else load_rules(rules)
    params = L.pack_params(rules, episode)
    check_memory(batch_bytes(params, n), f"a batch of {n:,} {rules.name} games", fn)
    data = np.zeros((n, int(params[L.P_WIDTH])), dtype=np.int32)
    mask = np.zeros((n, NUM_ACTIONS), dtype=np.bool_)
    return State(rules, params, data, mask, threads)


def _split_seeds(seeds: npt.NDArray[np.uint64]) -> tuple[npt.NDArray[np.int32], ...]:
    lo = (seeds & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32)
    hi = (seeds >> np.uint64(32)).astype(np.uint32).view(np.int32)
    return lo, hi


def _check_deal_id(deal: object, fn: str, where: str) -> DealId:
    """A DealId (or a ``(seed, row, index)`` tuple) with integer fields in range."""
    if not isinstance(deal, tuple) or isinstance(deal, ExplicitDeal) or len(deal) != 3:
        raise ValueError(f"{fn}: {where} must be a DealId (seed, row, index), got "
                         f"{short_repr(deal)}")
    seed = check_seed(deal[0], fn, f"{where}.seed")
    row, index = (check_int(v, f"{where}.{k}", fn) for k, v in (("row", deal[1]),
                                                                  ("index", deal[2])))
    for k, v in (("row", row), ("index", index)):
        if not 0 <= v <= MAX_GAMES:
            raise ValueError(f"{fn}: {where}.{k} = {short_repr(v)} is out of range [0, 2**31)")
    return DealId(seed, row, index)


def _deal_arrays(state: State, rows: npt.NDArray[np.int64], seeds: npt.NDArray[np.uint64],
                 deal_rows: npt.NDArray[np.int32], deal_index: npt.NDArray[np.int32]
                 ) -> npt.NDArray[np.int32]:
    lo, hi = _split_seeds(seeds)
    events = np.zeros(len(rows), dtype=np.int32)
    run_rows(state.threads, kernels.deal_kernel, (state.data, state.params),
             (rows, lo, hi, deal_rows, deal_index, events))
    _mask_rows(state, rows)
    return events


def _mask_rows(state: State, rows: npt.NDArray[np.int64]) -> None:
    run_rows(state.threads, kernels.mask_rows, (state.data, state.legal_action_mask, state.params),
             (rows,))


def _deal(state: State, rows: npt.NDArray[np.int64], deals: list[DealId]) -> npt.NDArray[np.int32]:
    return _deal_arrays(state, rows, np.array([d.seed for d in deals], dtype=np.uint64),
                        np.array([d.row for d in deals], dtype=np.int32),
                        np.array([d.index for d in deals], dtype=np.int32))


def _seed_array(seed: object, n: int, fn: str) -> npt.NDArray[np.uint64]:
    """``n`` per-row seeds, each an integer in [0, 2**64): a flat sequence (a 2-D array is refused,
    not flattened)."""
    try:
        arr = np.asarray(seed)
    except (ValueError, TypeError, OverflowError):
        raise ValueError(f"{fn}: seed must be an int or a sequence of ints, got "
                         f"{short_repr(seed)}") from None
    if arr.ndim > 1:
        raise ValueError(f"{fn}: seed must be an int or a 1-D sequence of ints, got shape "
                         f"{arr.shape} ({short_repr(seed)})")
    arr = arr.ravel()
    if arr.dtype == object or (arr.dtype.kind == "f" and not isinstance(seed, np.ndarray)):
        # Python ints beyond int64 (numpy makes objects or floats of them): check each one
        items = np.asarray(seed, dtype=object).ravel()
        arr = np.array([check_seed(s, fn, f"seed[{i}]") for i, s in enumerate(items)],
                       dtype=np.uint64)
    elif arr.dtype.kind not in "iu":
        raise ValueError(f"{fn}: seeds must be integers, got dtype {arr.dtype} "
                         f"({short_repr(seed)})")
    elif arr.size and arr.min() < 0:
        i = int(np.flatnonzero(arr < 0)[0])
        raise ValueError(f"{fn}: seed[{i}] = {int(arr[i])} is out of range: seeds are integers "
                         "in [0, 2**64)")
    if arr.size != n:
        raise ValueError(f"{fn}: got {arr.size} seeds for {n} games")
    return arr.astype(np.uint64)


def init(rules: RuleSet | str, num_games: int, seed: int | npt.ArrayLike = 0,
         *, episode: str = "hand", threads: int = 1) -> State:
    """Create a batch of ``num_games`` games and deal them.

    Args:
        rules: a resolved ``RuleSet`` or a preset name.
        num_games: batch size B; refused before allocating when it cannot fit in memory.
        seed: an int (row b plays DealId(seed, b, 0)) or a sequence of B per-row seeds (row b
            plays DealId(seeds[b], 0, 0), so SB3's ``seed + i`` maps onto rows).
        episode: ``"hand"`` (an episode is one hand) or ``"game"`` (hands to the target, C33).
        threads: split the kernels' work on large batches over this many threads (``State.threads``,
            which may also be set later; the same results as serial). Keep 1 while a learner needs
            the other cores.
    """
    n = check_batch_size(num_games, "init")
    try:
        scalar = np.ndim(seed) == 0  # type: ignore[arg-type]
    except (ValueError, TypeError):  # ragged: _seed_array names it
        scalar = False
    if scalar:
        one_seed = check_seed(seed, "init")
        state = _new_state(rules, n, episode, "init", threads)
        seeds = np.full(n, one_seed, dtype=np.uint64)
        deal_rows = np.arange(n, dtype=np.int32)
    else:
        seeds = _seed_array(seed, n, "init")
        state = _new_state(rules, n, episode, "init", threads)
        deal_rows = np.zeros(n, dtype=np.int32)
    _deal_arrays(state, state.all_rows, seeds, deal_rows, np.zeros(n, dtype=np.int32))
    return state


def init_from_deals(rules: RuleSet | str, deals: list[DealId] | list[ExplicitDeal],
                    *, episode: str = "hand", threads: int = 1) -> State:
    """A batch replaying the given deals: DealIds (row b re-dealt exactly as its address says) or
    explicit deals (deck order and dealer, stable across library and numpy versions)."""
    deals = _deal_list(deals, "init_from_deals")
    if not deals:
        raise ValueError("init_from_deals: no deals given")
    state = _new_state(rules, len(deals), episode, "init_from_deals", threads)
    _redeal_unchecked(state, state.all_rows, deals, "init_from_deals")
    return state


def _deal_list(deals: object, fn: str) -> list:  # type: ignore[type-arg]
    if isinstance(deals, (DealId, ExplicitDeal)):
        raise ValueError(f"{fn}: deals must be a list of deals, got a single {type(deals).__name__}")
    try:
        return list(deals)  # type: ignore[call-overload]
    except TypeError:
        raise ValueError(f"{fn}: deals must be a list of DealIds or ExplicitDeals, got "
                         f"{short_repr(deals)}") from None


def redeal(state: State, rows: npt.ArrayLike, deals: list[DealId] | list[ExplicitDeal]) -> None:
    """Start a new game on each listed row from the given DealIds or explicit deals."""
    _check_state(state, "redeal")
    check_integrity(state, _NO_ROWS, "redeal")  # the params; the rows are rewritten whole
    idx = check_rows(state, rows, "redeal", unique=True)
    deals = _deal_list(deals, "redeal")
    if len(deals) != idx.size:
        raise ValueError(f"redeal: {len(deals)} deals for {idx.size} rows")
    _redeal_unchecked(state, idx, deals, "redeal")


def _redeal_unchecked(state: State, idx: npt.NDArray[np.int64], deals: list, fn: str  # type: ignore[type-arg]
                      ) -> None:
    """Deal valid ``rows`` (the deals themselves are still checked: they may come from a user)."""
    if not any(isinstance(d, ExplicitDeal) for d in deals):
        _deal(state, idx, [_check_deal_id(d, fn, f"deals[{i}]") for i, d in enumerate(deals)])
        return
    if not all(isinstance(d, ExplicitDeal) for d in deals):
        raise ValueError(f"{fn}: deals must be all DealIds or all ExplicitDeals, not a mix")
    deck = int(state.params[L.P_DECK])
    expected = np.bincount(_deck_order(state), minlength=NUM_KINDS)
    orders = np.zeros((len(deals), deck), dtype=np.int32)
    dealers = np.zeros(len(deals), dtype=np.int32)
    for i, d in enumerate(deals):
        orders[i] = _check_order(d.order, expected, state, fn, i)
        dealer = check_int(d.dealer, f"deals[{i}].dealer", fn)
        if not 0 <= dealer < state.num_players:
            raise ValueError(f"{fn}: deals[{i}].dealer = {short_repr(dealer)} is out of range "
                             f"[0, {state.num_players})")
        dealers[i] = dealer
    run_rows(state.threads, kernels.explicit_deal_kernel, (state.data, state.params),
             (idx, orders, dealers))
    _mask_rows(state, idx)


def _check_order(order: object, expected: np.ndarray, state: State, fn: str, i: int
                 ) -> npt.NDArray[np.int64]:
    """An explicit deal's deck order: integers, one per card of the rule set's deck."""
    deck = int(state.params[L.P_DECK])
    arr = _int_vector(fn, f"deals[{i}].order", order)
    if arr.shape != (deck,) or arr.min() < 0 or arr.max() >= NUM_KINDS or not np.array_equal(
            np.bincount(arr.astype(np.int64), minlength=NUM_KINDS), expected):
        raise ValueError(f"{fn}: explicit deal {i}: order is not a permutation of the "
                         f"{deck}-card deck of {state.rules.name}")
    return arr.astype(np.int64, copy=False)


def _deck_order(state: State) -> npt.NDArray[np.int64]:
    from canasta_env.engine.layout import deck_counts

    return np.repeat(np.arange(NUM_KINDS), deck_counts(state.params))


def explicit_deal(rules: RuleSet | str, deal: DealId, hand: int = 0) -> ExplicitDeal:
    """The deck order and dealer a DealId produces for hand ``hand`` of its game (the dealer of
    later hands passes left, C4)."""
    from canasta_env.engine.deal import shuffled_order

    deal = _check_deal_id(deal, "explicit_deal", "deal")
    hand = check_int(hand, "hand", "explicit_deal")
    if not 0 <= hand <= MAX_GAMES:
        raise ValueError(f"explicit_deal: hand = {hand} is out of range [0, 2**31)")
    state = _new_state(rules, 1, "hand", "explicit_deal")
    order = np.empty(int(state.params[L.P_DECK]), dtype=np.int32)
    lo, hi = _split_seeds(np.array([deal.seed], dtype=np.uint64))
    # int32 fields as in a game row, so that this runs the kernels' compiled shuffle
    address = (lo[0], hi[0], np.int32(deal.row), np.int32(deal.index))
    dealer = shuffled_order(state.params, *address, hand, order)
    if hand > 0:
        first = shuffled_order(state.params, *address, 0, np.empty_like(order))
        dealer = (first + hand) % state.num_players
    return ExplicitDeal(order.astype(np.int8), int(dealer))


# ---- stepping and observing ------------------------------------------------------------------

def reset_rows(state: State, rows: npt.ArrayLike) -> npt.NDArray[np.int32]:
    """Start each listed row's next deal, DealId(seed, row, index + 1); returns deal event bits.
    Only the params are checked for integrity: a deal reads nothing of a row but its deal address
    (not an index) and rewrites all of it, so it also repairs a corrupt row."""
    _check_state(state, "reset_rows")
    check_integrity(state, _NO_ROWS, "reset_rows")
    return _reset_rows_unchecked(state, check_rows(state, rows, "reset_rows", unique=True))


def _reset_rows_unchecked(state: State, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int32]:
    """``reset_rows`` for int64 rows known to be in range and distinct (the package's loops). A
    row at the last deal index (``MAX_GAMES``, as ``_check_deal_id`` allows) is refused before any
    row is dealt: its next index would wrap to a negative one that ``redeal`` cannot replay."""
    if rows.size == 0:
        return np.zeros(0, dtype=np.int32)
    d = state.data[rows]
    index = d[:, L.F_DEAL_INDEX]
    if index.max() >= MAX_GAMES:
        b = int(rows[int(np.argmax(index))])
        raise ValueError(f"reset_rows: row {b} is at deal index {MAX_GAMES:,}, the last of "
                         f"DealId(seed, row, index) (index in [0, 2**31)); redeal it from another "
                         f"seed or DealId")
    events = np.zeros(rows.size, dtype=np.int32)
    run_rows(state.threads, kernels.deal_kernel, (state.data, state.params),
             (rows, d[:, L.F_SEED_LO].copy(), d[:, L.F_SEED_HI].copy(), d[:, L.F_DEAL_ROW].copy(),
              index + 1, events))
    _mask_rows(state, rows)
    return events


def step(state: State, actions: npt.ArrayLike, rows: npt.ArrayLike | None = None) -> StepResult:
    """Apply one action per row, in place. Rows whose action is illegal (out of range included)
    are left unchanged and flagged in ``illegal``; finished rows are no-ops.

    With ``rows``, only those rows step (``actions[i]`` for ``rows[i]``, each row listed once) and
    every returned array is indexed like ``rows``; the other rows are untouched.

    Raises:
        ValueError: non-integer actions or rows, a wrong number of actions, a repeated row.
        RowIndexError: a row outside ``[0, num_games)`` (an ``IndexError`` and a ``ValueError``).
        CorruptStateError: a stepped row edited out of range, or its mask allowing the action
            when the row cannot play it (a ``ValueError``; nothing is stepped).
    """
    _check_state(state, "step")
    idx = None if rows is None else check_rows(state, rows, "step", unique=True)
    n = state.num_games if idx is None else idx.shape[0]
    acts = check_actions(actions, n, "step")
    check_integrity(state, state.all_rows if idx is None else idx, "step", acts)
    return _step_unchecked(state, acts, idx)


def _step_unchecked(state: State, acts: npt.NDArray[np.int64],
                    rows: npt.NDArray[np.int64] | None = None) -> StepResult:
    """``step`` for int64 ``acts`` and int64 ``rows`` known to be in range and distinct: the
    package's own loops, which build their rows themselves, skip the checks."""
    idx = state.all_rows if rows is None else rows
    n = idx.shape[0]
    rewards = np.empty((n, state.num_players), dtype=np.float32)  # the kernel writes every output
    flags = np.empty((3, n), np.bool_)  # one allocation: the call's overhead is most of a batch-1 step
    illegal, terminated, truncated = flags[0], flags[1], flags[2]
    events = np.empty(n, dtype=np.int32)
    dead_ends = run_rows(state.threads, kernels.step_kernel,
                         (state.data, state.legal_action_mask, state.params),
                         (idx, acts, rewards, illegal, terminated, truncated, events))
    if dead_ends:
        live = state.data[idx, L.F_STATUS] == L.ST_LIVE
        bad = int(idx[np.flatnonzero(live & ~state.legal_action_mask[idx].any(axis=1))[0]])
        raise RuntimeError(f"engine bug: row {bad} ({state.deal_id(bad)}) is live with no legal "
                           "action")
    return StepResult(rewards, terminated, truncated, illegal, events)


def step_one(state: State, action: int) -> StepResult:
    """Single-game path: like ``step`` on a batch of one, raising ``IllegalActionError`` for an
    illegal or out-of-range action and ``ValueError`` for a non-integer one."""
    if state.num_games != 1:
        raise ValueError("step_one needs a batch of one game")
    a = check_action(action, "step_one")
    if not 0 <= a < NUM_ACTIONS:
        raise_illegal(state, 0, a)
    result = step(state, [a])
    if result.illegal[0]:
        raise_illegal(state, 0, a)
    return result


def raise_illegal(state: State, b: int, action: int) -> None:
    """Raise ``IllegalActionError`` naming the row, the action and the legal ones."""
    name = ACTION_NAMES[action] if 0 <= int(action) < NUM_ACTIONS else "out of range"
    legal = ", ".join(f"{a} {ACTION_NAMES[a]}" for a in state.legal_actions(b))
    raise IllegalActionError(f"row {b}: action {short_repr(action)} ({name}) is not legal; "
                             f"legal: {legal}")


def observe(state: State, players: npt.ArrayLike, rows: npt.ArrayLike | None = None
            ) -> npt.NDArray[np.float32]:
    """Observations ``(B, D)`` of each row from seat ``players[b]`` (observation.py lists the
    pieces); with ``rows``, ``(len(rows), D)`` for those rows only (a row may repeat)."""
    _check_state(state, "observe")
    idx = state.all_rows if rows is None else check_rows(state, rows, "observe")
    seats = np.asarray(players) if np.ndim(players) == 0 else _int_vector(
        "observe", "players", players)
    if seats.dtype.kind not in "iu":
        raise ValueError(f"observe: players must be integer seats, got {short_repr(players)}")
    if seats.ndim == 1 and seats.shape[0] not in (1, idx.shape[0]):
        raise ValueError(f"observe: expected {idx.shape[0]} players (one per row), got "
                         f"{seats.shape[0]}")
    if seats.size and (seats.min() < 0 or seats.max() >= state.num_players):
        raise ValueError(f"observe: players must be seats in [0, {state.num_players})")
    check_integrity(state, idx, "observe")
    return _observe_unchecked(state, seats.astype(np.int64, copy=False), idx)


def _observe_unchecked(state: State, seats: npt.NDArray[np.int64],
                       rows: npt.NDArray[np.int64] | None = None) -> npt.NDArray[np.float32]:
    """``observe`` for int64 seats in range (one per row, or one for all) and int64 rows in
    range."""
    idx = state.all_rows if rows is None else rows
    if seats.ndim == 0 or seats.shape[0] != idx.shape[0]:
        seats = np.broadcast_to(seats, idx.shape)
    out = np.empty((idx.shape[0], obs_dim(state.params)), dtype=np.float32)
    run_rows(state.threads, observe_kernel, (state.data, state.params, state.obs_divisors),
             (idx, np.ascontiguousarray(seats), out))
    return out


def clone(state: State, rows: npt.ArrayLike | None = None) -> State:
    """A deep copy of the state, or of the listed rows only (a row may repeat)."""
    if rows is None:
        return State(state.rules, state.params.copy(), state.data.copy(),
                     state.legal_action_mask.copy(), state.threads)
    idx = check_rows(state, rows, "clone")
    return State(state.rules, state.params.copy(), state.data[idx].copy(),
                 state.legal_action_mask[idx].copy(), state.threads)
