"""Worlds from what a seat knows: complete engine states consistent with one observation.

``sample_worlds(rules, observation, k, seed)`` returns a ``State`` of ``k`` rows, each a complete
game that gives the observing seat exactly the observation it was built from. It reads nothing but
that vector (plus, optionally, the seat's own legal-action mask, which the seat also sees), so it
cannot leak hidden information: determinized search (``agents/search.py``) plays its rollouts on
these worlds.

What is fixed and what is sampled:

* **Fixed from the observation**: the observer's hand; every public part of the table (melds per
  owner, opened sides, red threes, scores and minimums, the pile's composition and top card, the
  pile's frozen flag, stock size, hand sizes, kitty/foot sizes and shown flags, closed-canasta
  counts by kind, dealer, seat to move, phase, the turn's value, flags and new slots; under
  ``observe_discards`` each seat's discards this hand, a clipped count as the deck's); the cards
  known to be in other hands (the ``known`` piece) are placed there.
* **Sampled**: the unseen cards (the deck minus everything placed) are dealt uniformly at random to
  the other hands (by their sizes), the face-down kitties/feet (by their sizes) and the stock. Red
  threes are never held (C8), so unseen red threes go only to the stock or a face-down reserve;
  given that, every consistent deal is equally likely.

Choices for what the observation does not show (each keeps the observation identical):

* **Seat**: the rules are symmetric under rotating the seats, so the observer sits at ``seat`` (0
  by default) and the dealer and mover are placed relative to it. Side ``seat % sides`` is the
  observer's side.
* **Pile order below the top**: only counts are observed and no rule reads it (a take moves the
  whole pile); the cards lie in kind order under the top card.
* **Red threes per player**: only side totals are observed; a side's are handed round-robin to its
  players, the observer's seat first (this can change Regal's per-player red-three penalty, G5,
  a scoring detail only).
* **Closed canastas** (meld cap, R2): only counts by kind per owner are observed. A sevens canasta
  is seven sevens, a wild canasta seven wilds (each from the larger unseen stock of jokers and
  twos); natural and mixed ones get ranks (and a mixed one 4 to 6 naturals) from a small dynamic
  programme that spends the fewest unseen wilds. Only the hand score's card values depend on it.
  Counts beyond 8 of a kind (shown as 8) are restored from the number of unseen cards.
* **Has melded** (C30, G5 red threes): a player has melded when their meld owner has a meld on the
  table (open or closed); the mover also when the mover took the pile or started a slot this turn.
  ``TF_MELDED_BEFORE`` follows the owner's melds not started this turn. Both only matter for
  scoring (concealed bonus, red-three penalty), never for legality.
* **Credit toward the minimum after a take** (C17) or a foot's arrival (P3): the observation gives
  only the number of credited cards. With neither this turn every card counts; otherwise the
  credit is chosen among the hand's cards with that total. **Meld-phase flags**
  ``TF_SEVENS_ONLY`` (R5, C27a) and the number of meld actions this turn (C29: ask before
  melding) are guessed from the hand and the turn's new slots. When ``legal_mask`` is given,
  these hidden turn fields are searched (a few hundred candidates at most, in order of
  plausibility) for a combination whose mask equals it; without a mask the first guess is used.
  None of them is observed, so any choice keeps the observation.
* **The answerer's view** (C29, regal_4p): in the answer phase the legality of ``ANSWER_NO``
  depends on the asker's hidden hand; with ``legal_mask`` every world whose mask differs is dealt
  again (up to ``redeal_tries`` times). The asker's credit after a take counts every card not
  known from the pile.
* **Header fields**: decisions this hand start at 0 (a fresh step cap), the hand number is 0, the
  deal address is zero, the last hand's scores are zero; the state is a ``"hand"`` episode (or as
  ``episode`` says).
* **Own known cards**: after a take, the observer's non-credited cards are marked known to the
  others (they came from the pile); otherwise none.

The worlds are exact for the seat to move (observation and mask); for another observing seat the
observation is still identical, but the mover's hidden turn fields are guesses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from canasta_env.engine import State
from canasta_env.engine.cards import (
    BLACK_THREE,
    CARD_VALUES,
    JOKER,
    NUM_KINDS,
    NUM_SLOTS,
    RED_THREE,
    SEVEN,
    TWO,
    WILD_SLOT,
)
from canasta_env.engine.core import (
    CorruptStateError,
    _new_state,
    batch_bytes,
    check_batch_size,
    check_int,
    check_memory,
    check_seed,
)
from canasta_env.engine.deal import CREDIT_ALL, minimum_for
from canasta_env.engine.layout import (
    F_ASKER,
    F_CUR,
    F_DEALER,
    F_GAME_RESULT,
    F_MINIMUM,
    F_NEEDS_MIN,
    F_PHASE,
    F_PILE_FROZEN,
    F_PILE_LEN,
    F_STATUS,
    F_STOCK_LEN,
    F_TURN_FLAGS,
    F_TURN_MELDS,
    F_TURN_VALUE,
    F_WENT_OUT,
    K_MIXED,
    K_NATURAL,
    K_SEVENS,
    K_WILD,
    O_CREDIT,
    O_DECKCOUNT,
    O_DISCARDS,
    O_NEW,
    O_PILE,
    O_STOCK,
    P_ASK,
    P_CAP,
    P_DECK,
    P_JOKERS,
    P_NOWNERS,
    P_NPLAYERS,
    P_NSIDES,
    P_OBS_DISCARDS,
    P_PACKS,
    P_PARTNERS,
    P_RES_SIZE,
    P_TARGET,
    PH_ANSWER,
    PH_DRAW,
    PH_OVER,
    RES_DOWN,
    RES_IN_HAND,
    RES_SHOWN,
    ST_LIVE,
    TF_ASKED,
    TF_DREW,
    TF_MELDED_BEFORE,
    TF_SEVENS_ONLY,
    TF_TOOK,
    deck_counts,
)
from canasta_env.engine.observation import NUM_TURN_FLAGS, bounds, obs_dim, views
from canasta_env.rules import RuleSet, load_rules

MAX_CANDIDATES = 256  # hidden turn-field combinations tried against a given mask
REDEAL_TRIES = 32



class WorldError(ValueError):
    """The observation cannot come from a live hand of these rules (wrong length, more cards
    than the deck holds, a finished hand)."""


@dataclass
class Seen:
    """An observation decoded into integer counts, indexed by absolute seat, side and owner (the
    observer at ``seat``)."""

    seat: int
    hand: npt.NDArray[np.int64]  # (15,) the observer's hand
    hand_sizes: npt.NDArray[np.int64]  # (P,)
    known: npt.NDArray[np.int64]  # (P, 15) cards others are known to hold (observer's row 0)
    red3_side: npt.NDArray[np.int64]  # (S,)
    mnat: npt.NDArray[np.int64]  # (O, 13)
    mjok: npt.NDArray[np.int64]  # (O, 13)
    mtwo: npt.NDArray[np.int64]  # (O, 13)
    opened: npt.NDArray[np.int64]  # (S,)
    scores: npt.NDArray[np.int64]  # (S,)
    pile: npt.NDArray[np.int64]  # (15,) counts
    top: int  # kind of the top card, -1 for an empty pile
    pile_frozen: int
    stock_size: int
    mover: int
    dealer: int
    phase: int
    turn_ratio: float  # value melded this turn / minimum (shown while the own side moves)
    needs_min: int
    credit_total: int  # credited cards in the observer's hand (shown while it moves)
    flags: int  # TF_* bits 0..4 (shown while the own side moves)
    new_slots: npt.NDArray[np.int64]  # (13,)
    closed_kinds: npt.NDArray[np.int64]  # (O, 4) meld cap only
    reserve_sizes: npt.NDArray[np.int64]  # (P,)
    reserve_shown: npt.NDArray[np.int64]  # (P,)
    discards: npt.NDArray[np.int64]  # (P, 15) cards each seat discarded this hand (observe_discards)


def decode(params: npt.NDArray[np.int32], observation: npt.ArrayLike, seat: int = 0) -> Seen:
    """Undo the scaling of ``observation.pieces``, placing the observer at ``seat``."""
    obs = np.asarray(observation, dtype=np.float32)
    if obs.shape != (obs_dim(params),):
        raise WorldError(f"observation of shape {obs.shape}, expected ({obs_dim(params)},)")
    low, high = bounds(params)  # out of the Box (a NaN, 1e6 cards, a negative stock) is no position
    outside = ~((obs >= low) & (obs <= high))
    if outside.any():
        i = int(np.flatnonzero(outside)[0])
        raise WorldError(f"observation[{i}] = {obs[i]} is outside its bounds [{low[i]}, {high[i]}]")
    v = {name: np.asarray(a, dtype=np.float64) for name, a in views(obs, params).items()}
    n, sides, owners = int(params[P_NPLAYERS]), int(params[P_NSIDES]), int(params[P_NOWNERS])
    maxk, deck = float(deck_counts(params).max()), float(params[P_DECK])
    rel_p = (seat + np.arange(n)) % n  # relative index j -> absolute seat
    rel_s = (seat % sides + np.arange(sides)) % sides
    rel_o = (seat + np.arange(owners)) % owners
    known = np.zeros((n, NUM_KINDS), np.int64)
    known[rel_p[1:]] = _rint(v["known"], maxk)
    melds, turn = v["melds"], v["turn"]
    jokers = float(max(int(params[P_JOKERS]), 1))
    cap = bool(params[P_CAP])
    closed = _rint(v["closed_canastas"], 8.0) if cap else np.zeros((owners, 4), np.int64)
    res = v["reserves"] if cap else np.zeros((n, 2))
    res_size = float(max(int(params[P_RES_SIZE]), 1))
    top_hot = int(np.argmax(v["pile_top"]))
    discards = (_absolute(_rint(v["discards"], maxk), rel_p) if params[P_OBS_DISCARDS]
                else np.zeros((n, NUM_KINDS), np.int64))
    return Seen(
        seat=seat, hand=_rint(v["hand"], maxk),
        hand_sizes=_absolute(_rint(v["hand_sizes"], deck), rel_p), known=known,
        red3_side=_absolute(_rint(v["red_threes"], 2.0 * int(params[P_PACKS])), rel_s),
        mnat=_absolute(_rint(melds[..., 0], maxk), rel_o),
        mjok=_absolute(_rint(melds[..., 1], jokers), rel_o),
        mtwo=_absolute(_rint(melds[..., 2], maxk), rel_o),
        opened=_absolute(_rint(v["opened"], 1.0), rel_s),
        scores=_absolute(_rint(v["scores"], float(params[P_TARGET])), rel_s),
        pile=_rint(v["pile_counts"], maxk), top=-1 if top_hot == 15 else top_hot,
        pile_frozen=int(_rint(v["pile_frozen"][0], 1.0)),
        stock_size=int(_rint(v["stock_size"][0], deck)),
        mover=int(rel_p[int(np.argmax(v["to_move"]))]),
        dealer=int(rel_p[int(np.argmax(v["dealer"]))]),
        phase=int(np.argmax(v["phase"])), turn_ratio=float(turn[0]),
        needs_min=int(_rint(turn[1], 1.0)), credit_total=int(_rint(turn[2], maxk * 15.0)),
        flags=sum(1 << i for i in range(NUM_TURN_FLAGS) if turn[3 + i] > 0.5),
        new_slots=_rint(v["new_this_turn"], 1.0), closed_kinds=_absolute(closed, rel_o),
        reserve_sizes=_absolute(_rint(res[:, 0], res_size), rel_p),
        reserve_shown=_absolute(_rint(res[:, 1], 1.0), rel_p), discards=discards,
    )


def _rint(x: npt.ArrayLike, scale: float) -> npt.NDArray[np.int64]:
    return np.rint(np.asarray(x, dtype=np.float64) * scale).astype(np.int64)


def _absolute(values: npt.NDArray[np.int64], order: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Rows listed in relative order (own first) moved to their absolute index."""
    out = np.zeros_like(values)
    out[order] = values
    return out


def sample_worlds(rules: RuleSet | str, observation: npt.ArrayLike, k: int, seed: int = 0, *,
                  seat: int = 0, legal_mask: npt.ArrayLike | None = None,
                  episode: str = "hand", redeal_tries: int = REDEAL_TRIES) -> State:
    """``k`` complete games (one per row) consistent with one seat's observation.

    Args:
        rules: the rule set the observation was made under (a preset name or a ``RuleSet``).
        observation: the seat's float32 observation vector ``(D,)``.
        k: number of worlds.
        seed: the worlds are a pure function of (rules, observation, legal_mask, seat, seed).
        seat: where the observer sits in the worlds (the rules are rotation symmetric).
        legal_mask: the observer's own legal-action mask, when it is the seat to move: hidden turn
            fields are chosen to reproduce it (see the module docstring).
        episode: ``"hand"`` or ``"game"``, as for ``init``.
        redeal_tries: with ``legal_mask``, how often a world whose mask differs is dealt again.

    Raises:
        WorldError: the observation is malformed (a value outside its bounds included), over, or
            needs more cards than the deck holds; the seat or the mask does not fit the rules.
        ValueError: ``k``, ``seat`` or ``seed`` is not an integer, ``k`` below 1 or too large
            for memory, ``seed`` outside [0, 2**64).
    """
    fn = "sample_worlds"
    rules = load_rules(rules) if isinstance(rules, str) else rules.resolved()
    template = _new_state(rules, 1, episode, fn)
    params = template.params
    n = int(params[P_NPLAYERS])
    seat = check_int(seat, "seat", fn)  # 0.5 or True would index the seats, -1 wrap
    if not 0 <= seat < n:
        raise WorldError(f"seat {seat} out of range for {n} players")
    k = check_batch_size(k, fn, "k")
    check_memory(batch_bytes(params, k), f"{k:,} worlds", fn)
    seed = check_seed(seed, fn)
    seen = decode(params, observation, seat)
    if seen.phase >= PH_OVER:
        raise WorldError("the observation shows a finished hand")
    rng = np.random.default_rng([seed, 0x5E1A])
    row, pool = _public_row(template, seen)
    mask = None if legal_mask is None else np.asarray(legal_mask, dtype=bool)
    if mask is not None and mask.shape != template.legal_action_mask.shape[1:]:
        raise WorldError(f"legal_mask of shape {mask.shape}, expected "
                         f"{template.legal_action_mask.shape[1:]}")
    worlds = State(rules, params, np.repeat(row[None], k, axis=0),
                   np.zeros((k, template.legal_action_mask.shape[1]), dtype=bool))
    _deal_hidden(worlds, seen, pool, rng, np.arange(k))
    if mask is not None and seen.mover == seat and seen.phase != PH_ANSWER:
        _choose_turn_fields(worlds, seen, mask, rng)
    _finish_rows(worlds, seen, np.arange(k))
    if mask is not None:
        for _ in range(redeal_tries):
            bad = np.flatnonzero((worlds.legal_action_mask != mask[None]).any(axis=1))
            if bad.size == 0:
                break
            _deal_hidden(worlds, seen, pool, rng, bad)
            _finish_rows(worlds, seen, bad)
    return worlds


def _public_row(template: State, seen: Seen) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64]]:
    """A row with everything the observation fixes placed; returns it and the unseen cards."""
    st, prm = template, template.params
    row = st.data[0]
    row[:] = 0
    n, sides, owners = st.num_players, st.num_sides, st.num_owners
    deck = deck_counts(prm).astype(np.int64)
    row[prm[O_DECKCOUNT]: prm[O_DECKCOUNT] + NUM_KINDS] = deck
    row[F_WENT_OUT], row[F_ASKER], row[F_GAME_RESULT] = -1, -1, -2
    row[F_STATUS] = ST_LIVE
    row[F_CUR], row[F_DEALER], row[F_PHASE] = seen.mover, seen.dealer, seen.phase
    st.hands[0, seen.seat] = seen.hand
    st.known[0] = seen.known
    used = seen.hand + seen.known.sum(axis=0)
    st.meld_naturals[0], st.meld_jokers[0], st.meld_twos[0] = seen.mnat, seen.mjok, seen.mtwo
    for slot in range(NUM_SLOTS):
        kind = BLACK_THREE if slot == NUM_SLOTS - 1 else slot + 4
        if slot != WILD_SLOT:
            used[kind] += seen.mnat[:, slot].sum()
    used[JOKER] += seen.mjok.sum()
    used[TWO] += seen.mtwo.sum()
    for side in range(sides):
        players = [(seen.seat + j) % n for j in range(n) if (seen.seat + j) % n % sides == side]
        for i in range(int(seen.red3_side[side])):
            st.red_threes[0, players[i % len(players)]] += 1
    used[RED_THREE] += seen.red3_side.sum()
    st.opened[0], st.scores[0] = seen.opened, seen.scores
    if prm[P_OBS_DISCARDS]:
        row[prm[O_DISCARDS]: prm[O_DISCARDS] + n * NUM_KINDS] = seen.discards.reshape(-1)
    _place_pile(row, prm, seen)
    used += seen.pile
    if prm[P_CAP]:
        _unclip_closed(st, seen, int((deck - used).sum()))
        used += _place_closed(st, seen, deck - used)
    _place_reserves(st, seen)
    owner_has = (seen.mnat.sum(axis=1) + seen.mjok.sum(axis=1) + seen.mtwo.sum(axis=1)
                 + seen.closed_kinds.sum(axis=1)) > 0
    for p in range(n):
        st.has_melded[0, p] = int(owner_has[p % owners])
    pool = deck - used
    if (pool < 0).any():
        raise WorldError("the observation places more cards of a kind than the deck holds")
    _turn_header(st, seen)
    return row.copy(), pool


def _place_pile(row: npt.NDArray[np.int32], prm: npt.NDArray[np.int32], seen: Seen) -> None:
    """The pile in kind order under its top card (only its composition is observed)."""
    counts = seen.pile.copy()
    if seen.top >= 0:
        counts[seen.top] -= 1
    cards = np.repeat(np.arange(NUM_KINDS), np.maximum(counts, 0))
    if seen.top >= 0:
        cards = np.append(cards, seen.top)
    row[prm[O_PILE]: prm[O_PILE] + cards.size] = cards
    row[F_PILE_LEN] = cards.size
    row[F_PILE_FROZEN] = seen.pile_frozen


def _place_closed(st: State, seen: Seen, free: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Give every closed canasta (counts by kind per owner) cards from ``free``; returns them."""
    free = free.copy()
    used = np.zeros(NUM_KINDS, np.int64)

    def take(kind: int, count: int) -> None:
        if free[kind] < count:
            raise WorldError("closed canastas need more cards than are unseen")
        free[kind] -= count
        used[kind] += count

    def take_wilds(count: int) -> tuple[int, int]:
        jokers = 0
        for _ in range(count):  # one by one from the larger stock of wilds
            kind = JOKER if free[JOKER] >= free[TWO] else TWO
            take(kind, 1)
            jokers += kind == JOKER
        return jokers, count - jokers

    kinds = seen.closed_kinds
    st.closed_canastas[0] = kinds
    for owner in range(st.num_owners):
        for _ in range(int(kinds[owner, K_SEVENS])):
            take(SEVEN, 7)
            _close(st, owner, SEVEN - 4, 0, 0)
    plan = _rank_plan(free, int(kinds[:, K_NATURAL].sum()), int(kinds[:, K_MIXED].sum()))
    naturals_plan = [(r, 7) for r, n in plan if n == 7]
    mixed_plan = [(r, n) for r, n in plan if n < 7]
    for owner in range(st.num_owners):
        for _ in range(int(kinds[owner, K_WILD])):
            _close(st, owner, WILD_SLOT, *take_wilds(7))
        for kind, todo in ((K_NATURAL, naturals_plan), (K_MIXED, mixed_plan)):
            for _ in range(int(kinds[owner, kind])):
                rank, count = todo.pop()
                take(rank, count)
                _close(st, owner, rank - 4, *take_wilds(7 - count))
    return used


def _unclip_closed(st: State, seen: Seen, unseen: int) -> None:
    """Closed-canasta counts are observed up to 8 of a kind per owner: when the unseen cards
    exceed the hidden places by whole canastas, the missing ones are added to counts shown at 8
    (mixed first, then natural, wild, sevens)."""
    places = (np.maximum(seen.hand_sizes - seen.known.sum(axis=1), 0).sum()
              - max(int(seen.hand_sizes[seen.seat] - seen.known[seen.seat].sum()), 0)
              + seen.reserve_sizes.sum() + seen.stock_size)
    extra = (unseen - 7 * int(seen.closed_kinds.sum()) - int(places)) // 7
    clipped = [(o, kind) for kind in (K_MIXED, K_NATURAL, K_WILD, K_SEVENS)
               for o in range(st.num_owners) if seen.closed_kinds[o, kind] >= 8]
    for i in range(max(extra, 0) if clipped else 0):
        o, kind = clipped[i % len(clipped)]
        seen.closed_kinds[o, kind] += 1


def _rank_plan(free: npt.NDArray[np.int64], natural: int, mixed: int) -> list[tuple[int, int]]:
    """(rank, naturals) for ``natural`` natural and ``mixed`` mixed closed canastas that spend the
    fewest wilds: a dynamic programme over the ranks (from f unseen naturals of a rank, ``a``
    natural canastas take 7 each and ``b`` mixed ones 4 to 6 each, with 7a + 4b <= f)."""
    best: dict[tuple[int, int], tuple[int, list[tuple[int, int]]]] = {(0, 0): (0, [])}
    for r in (r for r in range(4, 15) if r != SEVEN):
        f = int(free[r])
        nxt = dict(best)
        for (a0, m0), (w0, plan0) in best.items():
            for a in range(min(f // 7, natural - a0) + 1):
                g = f - 7 * a
                for b in range(min(g // 4, mixed - m0) + 1):
                    if a == b == 0:
                        continue
                    used = min(g, 6 * b)
                    counts = [4 + min(2, max(0, used - 4 * b - 2 * i)) for i in range(b)]
                    wilds = w0 + 7 * b - used
                    key = (a0 + a, m0 + b)
                    if key not in nxt or wilds < nxt[key][0]:
                        nxt[key] = (wilds, plan0 + [(r, 7)] * a + [(r, c) for c in counts])
        best = nxt
    if (natural, mixed) not in best:
        raise WorldError("closed canastas need more naturals than are unseen")
    return best[(natural, mixed)][1]


def _close(st: State, owner: int, slot: int, jokers: int, twos: int) -> None:
    st.closed_slots[0, owner, slot] += 1
    st.closed_jokers[0, owner, slot] += jokers
    st.closed_twos[0, owner, slot] += twos


def _place_reserves(st: State, seen: Seen) -> None:
    """Kitty/foot states: a reserve with cards is face down or shown; an empty one is in hand."""
    for p in range(st.num_players):
        if seen.reserve_sizes[p] > 0:
            st.reserve_state[0, p] = RES_SHOWN if seen.reserve_shown[p] else RES_DOWN
        else:
            st.reserve_state[0, p] = RES_IN_HAND


def _turn_header(st: State, seen: Seen) -> None:
    """Turn bookkeeping of the mover: observed when its side is the observer's, else a guess."""
    prm, row = st.params, st.data[0]
    sides = st.num_sides
    side = seen.mover % sides
    row[F_MINIMUM] = minimum_for(prm, int(seen.scores[side]))
    row[prm[O_CREDIT]: prm[O_CREDIT] + NUM_KINDS] = CREDIT_ALL
    own_side = side == seen.seat % sides
    if own_side:
        flags, needs = seen.flags, seen.needs_min
        row[F_TURN_VALUE] = int(round(seen.turn_ratio * max(int(row[F_MINIMUM]), 1)))
        row[prm[O_NEW]: prm[O_NEW] + NUM_SLOTS] = seen.new_slots
    else:  # another side moves: its turn fields are not shown
        flags = TF_DREW if seen.phase != PH_DRAW else 0
        needs = 1 - int(seen.opened[side])
    owner = seen.mover % st.num_owners
    old = (seen.mnat[owner] + seen.mjok[owner] + seen.mtwo[owner]) * (seen.new_slots == 0)
    if old.sum() + seen.closed_kinds[owner].sum() > 0:
        flags |= TF_MELDED_BEFORE
    if flags & TF_TOOK or seen.new_slots.any():
        st.has_melded[0, seen.mover] = 1
    row[F_TURN_FLAGS], row[F_NEEDS_MIN] = flags, needs
    if seen.phase == PH_ANSWER:
        row[F_ASKER] = (seen.mover + 2) % st.num_players
    elif flags & TF_ASKED:
        row[F_ASKER] = seen.mover
    if seen.mover == seen.seat and seen.phase != PH_ANSWER and _finite_credit(seen, flags):
        credit = _credit_guesses(seen, 1, np.random.default_rng(0))[0]
        row[prm[O_CREDIT]: prm[O_CREDIT] + NUM_KINDS] = credit
    row[F_TURN_MELDS] = _turn_melds_guess(seen, flags)
    if prm[P_CAP] and seen.mover == seen.seat:
        row[F_TURN_FLAGS] |= TF_SEVENS_ONLY if _sevens_guess(seen) else 0


def _finite_credit(seen: Seen, flags: int) -> bool:
    """Whether the observer's credit is a per-kind count: after a take (C17), or after a foot
    joined the hand this turn (P3: its cards do not count), which shows as fewer credited cards
    than cards held."""
    return bool(flags & TF_TOOK) or seen.credit_total < int(seen.hand.sum())


def _only_sevens(hand: npt.NDArray[np.int64]) -> bool:
    return bool(hand.sum() > 0 and hand[SEVEN] == hand.sum())


def _sevens_guess(seen: Seen) -> bool:
    """R5, C27a: melding only removes cards, so a hand with other cards never started as sevens
    only; an only-sevens hand with nothing melded this turn did."""
    return _only_sevens(seen.hand) and seen.turn_ratio == 0 and not seen.new_slots.any()


def _turn_melds_guess(seen: Seen, flags: int) -> int:
    """C29: meld actions this turn (0 or 1 is all the mask reads): a new slot or, after a stock
    draw, any value melded (every card counts then)."""
    if seen.phase == PH_DRAW:
        return 0
    return int(bool(seen.new_slots.any() or (flags & TF_DREW and seen.turn_ratio > 0)))


def _credit_guesses(seen: Seen, count: int, rng: np.random.Generator) -> list[npt.NDArray[np.int64]]:
    """Up to ``count`` distinct credit vectors (C17: cards held before the take), each within the
    hand and summing to the observed number of credited cards: highest values first, lowest first,
    then uniform draws of that many cards of the hand."""
    hand, total = seen.hand, min(seen.credit_total, int(seen.hand.sum()))
    if total == hand.sum():
        return [hand.copy()]
    order_hi = np.argsort(-CARD_VALUES[:NUM_KINDS], kind="stable")
    out: list[npt.NDArray[np.int64]] = []
    for order in (order_hi, order_hi[::-1]):
        c = np.zeros(NUM_KINDS, np.int64)
        left = total
        for kind in order:
            c[kind] = min(hand[kind], left)
            left -= c[kind]
        out.append(c)
    draws = 4 * count - len(out)
    if count > len(out) and draws > 0:  # uniform draws of ``total`` cards without replacement
        cards = np.repeat(np.arange(NUM_KINDS), hand)
        picks = cards[np.argsort(rng.random((draws, cards.size)), axis=1)[:, :total]]
        counts = np.zeros((draws, NUM_KINDS), np.int64)
        np.add.at(counts, (np.repeat(np.arange(draws), total), picks.ravel()), 1)
        out.extend(counts)
    unique: dict[bytes, npt.NDArray[np.int64]] = {}
    for c in out:
        unique.setdefault(c.tobytes(), c)
    return list(unique.values())[:count]


def _choose_turn_fields(worlds: State, seen: Seen, mask: npt.NDArray[np.bool_],
                        rng: np.random.Generator) -> None:
    """Search the observer's hidden turn fields (credit, sevens-only flag, meld count) for a
    combination whose legal mask equals ``mask``; write it into every world."""
    prm = worlds.params
    row = worlds.data[0]
    credits = [row[prm[O_CREDIT]: prm[O_CREDIT] + NUM_KINDS].astype(np.int64)]
    flags = int(row[F_TURN_FLAGS])
    sevens = [flags & TF_SEVENS_ONLY]
    if prm[P_CAP] and _only_sevens(seen.hand) and seen.phase != PH_DRAW:
        sevens.append(TF_SEVENS_ONLY - sevens[0])
    melds = [int(row[F_TURN_MELDS])]
    if prm[P_ASK] and prm[P_PARTNERS] and seen.phase != PH_DRAW:
        melds.append(1 - melds[0])
    if _finite_credit(seen, flags):
        credits = _credit_guesses(seen, max(1, MAX_CANDIDATES // (len(sevens) * len(melds))), rng)
    combos = [(c, s, m) for c in credits for s in sevens for m in melds]
    if len(combos) == 1:
        return
    trial = State(worlds.rules, prm, np.repeat(worlds.data[:1], len(combos), axis=0),
                  np.zeros((len(combos), mask.shape[0]), dtype=bool))
    for i, combo in enumerate(combos):
        _write_turn_fields(trial.data[i], prm, *combo)
    trial.refresh_mask()
    hits = np.flatnonzero((trial.legal_action_mask == mask[None]).all(axis=1))
    best = combos[int(hits[0]) if hits.size else 0]
    for w in range(worlds.num_games):
        _write_turn_fields(worlds.data[w], prm, *best)


def _write_turn_fields(row: npt.NDArray[np.int32], prm: npt.NDArray[np.int32],
                       credit: npt.NDArray[np.int64], sevens: int, melds: int) -> None:
    row[prm[O_CREDIT]: prm[O_CREDIT] + NUM_KINDS] = credit
    row[F_TURN_FLAGS] = (int(row[F_TURN_FLAGS]) & ~TF_SEVENS_ONLY) | sevens
    row[F_TURN_MELDS] = melds


def _deal_hidden(worlds: State, seen: Seen, pool: npt.NDArray[np.int64], rng: np.random.Generator,
                 rows: npt.NDArray[np.int64]) -> None:
    """Deal the unseen cards of ``rows``: other hands by their sizes (beyond their known cards),
    face-down reserves by their sizes, the stock; red threes only to the stock or a reserve."""
    n = worlds.num_players
    free_hand = seen.hand_sizes - seen.known.sum(axis=1)
    free_hand[seen.seat] = 0
    reserve = np.where(worlds.reserve_state[0] != RES_IN_HAND, seen.reserve_sizes, 0)
    dest = np.concatenate([np.repeat(np.arange(n), np.maximum(free_hand, 0)),
                           np.repeat(n + np.arange(n), reserve),
                           np.full(seen.stock_size, 2 * n)])
    if (free_hand < 0).any() or dest.size != pool.sum():
        raise WorldError(f"{pool.sum()} unseen cards for {dest.size} hidden places")
    red3 = int(pool[RED_THREE])
    allowed = np.flatnonzero(dest >= n)
    if red3 > allowed.size:
        raise WorldError("more unseen red threes than stock and reserve places")
    rest = np.repeat(np.arange(NUM_KINDS), np.where(np.arange(NUM_KINDS) == RED_THREE, 0, pool))
    stock_at = dest.size - seen.stock_size
    n_hand = int(np.count_nonzero(dest < n))
    rows = np.asarray(rows, dtype=np.int64)
    r = rows.size
    if r == 0:
        return
    # every row at once: red threes to random allowed places, the other cards shuffled into the rest
    cards = np.full((r, dest.size), -1, np.int64)
    if red3:
        at = allowed[np.argsort(rng.random((r, allowed.size)), axis=1)[:, :red3]]
        cards[np.arange(r)[:, None], at] = RED_THREE
    if rest.size:
        shuffled = rest[np.argsort(rng.random((r, rest.size)), axis=1)]
        cards[cards < 0] = shuffled.ravel()  # row-major: each row's free places get its shuffle
    hands = np.zeros((r, n, NUM_KINDS), np.int64)
    hands[:, seen.seat] = seen.hand
    hands += (seen.known * (np.arange(n) != seen.seat)[:, None])[None]
    ridx = np.repeat(np.arange(r), n_hand)
    np.add.at(hands, (ridx, np.tile(dest[:n_hand], r), cards[:, :n_hand].ravel()), 1)
    reserves = np.zeros((r, n, NUM_KINDS), np.int64)
    n_res = stock_at - n_hand
    if n_res:
        np.add.at(reserves, (np.repeat(np.arange(r), n_res), np.tile(dest[n_hand:stock_at] - n, r),
                             cards[:, n_hand:stock_at].ravel()), 1)
    base = int(worlds.params[O_STOCK])
    worlds.hands[rows] = hands
    worlds.reserves[rows] = reserves
    worlds.data[rows, base: base + seen.stock_size] = cards[:, stock_at:]
    worlds.data[rows, F_STOCK_LEN] = seen.stock_size


def _finish_rows(worlds: State, seen: Seen, rows: npt.NDArray[np.int64]) -> None:
    """Per-world fields that depend on the dealt cards (a hidden mover's credit and sevens flag,
    the observer's own known cards), then the masks."""
    prm = worlds.params
    mover = int(worlds.data[0, F_ASKER]) if seen.phase == PH_ANSWER else seen.mover
    for w in rows:
        row = worlds.data[w]
        took = bool(row[F_TURN_FLAGS] & TF_TOOK)
        if mover != seen.seat:
            hand = worlds.hands[w, mover].astype(np.int64)
            if took:
                credit = np.maximum(hand - seen.known[mover], 0)
                row[prm[O_CREDIT]: prm[O_CREDIT] + NUM_KINDS] = credit
            if prm[P_CAP] and seen.phase != PH_DRAW and _only_sevens(hand):
                row[F_TURN_FLAGS] |= TF_SEVENS_ONLY
        elif took:
            credit = row[prm[O_CREDIT]: prm[O_CREDIT] + NUM_KINDS]
            worlds.known[w, seen.seat] = np.maximum(seen.hand - credit, 0)
    try:
        worlds.refresh_mask()
    except CorruptStateError as exc:  # fields within their bounds that no position combines
        raise WorldError(f"the observation is no position of these rules ({exc})") from None
