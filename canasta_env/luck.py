"""Luck-corrected results: a control variate that subtracts the luck of the cards from each hand.

AIVAT's idea (Burch et al., AAAI 2018) for Canasta. At every chance event the tracker adds, per side,
``phi(after) - E[phi(after) | before]`` for a vector of features ``phi`` of the cards a side receives
by chance; a result's correction is a weighted sum of those, ``beta . (F[a] - mean F[others])``. Each
term has expectation zero whatever ``beta`` is (martingale differences), so the corrected result
(plain minus correction) is unbiased by construction; a good ``beta`` (fitted by least squares on
separate deals, ``canasta_env.luck_weights``) makes it far less noisy.

The chance events, read from the engine state (no engine change):

* **the deal** (hands, red threes laid down and replaced, the upcards): a side's deal features are
  seat-agnostic sums over its players' dealt cards (kind counts, pairs, triples, all the red threes)
  plus "moves first". Every hand is the same size and the deck uniformly shuffled, so the players'
  received cards are exchangeable and every side has the same expected deal features: centring them
  on the table's mean gives each side an exactly zero-mean term. Upcards go to the pile, which the
  features do not count: their term is zero.
* **every card that leaves the stock in a step** (a draw, a red three's replacement; all go to the
  mover): given everything on the table, the rest of the stock is a uniformly random order of its
  multiset, so the expectation over the next card is the average over the stock's cards, computed
  exactly from the stock in the state. Its features depend on the mover's hand and the side's melds
  before the card (a card that fits a pair or a meld is worth more).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from canasta_env.engine import cards as C
from canasta_env.engine import layout as L
from canasta_env.engine.core import State
from canasta_env.rules import RuleSet

K = C.NUM_KINDS
NATURAL = np.zeros(K, dtype=bool)
NATURAL[C.FOUR:] = True
DEAL_FEATURES = (*(f"deal_{n}" for n in C.KIND_NAMES), "deal_pairs", "deal_triples", "deal_all_red3",
                 "moves_first")
_FITS = 3  # how a drawn natural fits the hand: no card of its kind, one, a pair or a side meld
_FIT_NAMES = ("", "_single", "_fits")
_DRAW_KINDS = tuple(f"draw_{n}{f}" for n in C.KIND_NAMES for f in _FIT_NAMES)
DRAW_FEATURES = (*_DRAW_KINDS, *(f"{n}_early" for n in _DRAW_KINDS), "draw_last_red3")
FEATURES = DEAL_FEATURES + DRAW_FEATURES
NUM_FEATURES = len(FEATURES)
_D0 = len(DEAL_FEATURES)


def check_supported(rules: RuleSet) -> None:
    """Refuse, in one line, a table where the deal's exchangeability argument does not hold."""
    r = rules.resolved()
    if r.num_players % rules.num_sides:
        raise ValueError(f"luck correction: {rules.name} has sides of unequal size")


class LuckTracker:
    """Per side, the sum over a batch of hands of the chance events' centred luck features.

    Call ``before_step(state, live)`` before and ``after_step(state, live)`` after every engine step
    of the rows ``live``; ``features`` is ``(G, sides, NUM_FEATURES)``.
    """

    def __init__(self, state: State) -> None:
        """Start on ``state`` right after its deal, one hand per row (``ValueError`` otherwise: the
        deal's features would be read from hands already played, and a game's next deal, made
        inside a step, would be missed; either biases the corrections in silence)."""
        if state.params[L.P_EPISODE_GAME]:
            raise ValueError("luck correction: the state plays episode='game', whose next hands are dealt "
                             "inside a step; follow one hand per row (episode='hand')")
        played = np.flatnonzero(state.data[:, L.F_STEPS] != 0)
        if played.size:
            raise ValueError(f"luck correction: row {int(played[0])} has played "
                             f"{int(state.data[played[0], L.F_STEPS])} decisions of its hand; start the "
                             "tracker right after the deal")
        self.sides = state.num_sides
        self.players = state.num_players
        self.deck = int(state.params[L.P_DECK])
        self.all_red3 = 2 * int(state.params[L.P_PACKS])
        g = state.num_games
        stock_at = int(state.params[L.O_STOCK])
        stock = state.data[:, stock_at: stock_at + self.deck]
        held = np.arange(self.deck)[None, :] < state.stock_size[:, None]
        self.remaining = np.zeros((g, K), dtype=np.int64)  # kinds left in each stock
        np.add.at(self.remaining, (np.repeat(np.arange(g), self.deck)[held.ravel()], stock[held]), 1)
        self.features = np.zeros((g, self.sides, NUM_FEATURES), dtype=np.float64)
        deal = deal_features(state)
        self.features[:, :, :_D0] = deal - deal.mean(axis=1, keepdims=True)
        self._stock_len = self._drawing = self._side = self._red3 = np.zeros(0, dtype=np.int64)
        self._hand = np.zeros((0, K), dtype=np.int64)
        self._melds = np.zeros((0, K), dtype=bool)

    def before_step(self, state: State, live: npt.NDArray[np.int64]) -> None:
        """Note the stock size of every live row, and the mover's hand, side's melds and red threes
        of the rows about to draw (only a draw takes cards from the stock)."""
        self._stock_len = state.stock_size[live].astype(np.int64)
        self._drawing = np.flatnonzero(state.phase[live] == L.PH_DRAW)
        rows = live[self._drawing]
        movers = state.current_player[rows].astype(np.int64)
        self._side = movers % self.sides
        self._hand = state.hands[rows, movers].astype(np.int64)
        self._melds = side_melds(state, rows, self._side)
        self._red3 = side_red3(state, rows, self._side)

    def after_step(self, state: State, live: npt.NDArray[np.int64]) -> None:
        """Add the centred draw features of every card that left the stock in the step, in order."""
        left_all = self._stock_len - state.stock_size[live]
        if not left_all.any():
            return
        if left_all[self._drawing].sum() != left_all.sum():
            raise RuntimeError("luck correction: cards left the stock outside a draw")
        stock_at = int(state.params[L.O_STOCK])
        left = left_all[self._drawing]
        rows, start = live[self._drawing], self._stock_len[self._drawing]
        hand, red3 = self._hand, self._red3
        for j in range(int(left.max())):
            now = np.flatnonzero(left > j)
            r, s = rows[now], self._side[now]
            pos = start[now] - 1 - j
            card = state.data[r, stock_at + pos].astype(np.int64)
            rem = self.remaining[r].astype(np.float64)
            chance = rem / rem.sum(axis=1, keepdims=True)
            received = np.zeros((r.size, K))
            received[np.arange(r.size), card] = 1.0
            # phi is linear in a one-hot of the kind drawn: phi(received) - phi(expected kind mix)
            self.features[r, s, _D0:] += draw_phi(hand[now], self._melds[now], red3[now], pos / self.deck,
                                                  self.all_red3, received - chance)
            self.remaining[r, card] -= 1
            is_red3 = card == C.RED_THREE
            red3[now[is_red3]] += 1
            hand[now[~is_red3], card[~is_red3]] += 1


def deal_features(state: State) -> npt.NDArray[np.float64]:
    """(G, sides, len(DEAL_FEATURES)) of every side's dealt cards, right after the deal."""
    g, sides = state.num_games, state.num_sides
    hands = state.hands.astype(np.int64)
    received = hands.copy()
    received[:, :, C.RED_THREE] += state.red_threes
    per_player = np.zeros((g, state.num_players, _D0), dtype=np.float64)
    per_player[:, :, :K] = received
    per_player[:, :, K] = ((hands >= 2) & NATURAL).sum(axis=2)
    per_player[:, :, K + 1] = ((hands >= 3) & NATURAL).sum(axis=2)
    out = per_player.reshape(g, -1, sides, _D0).sum(axis=1)
    red3 = out[:, :, C.RED_THREE]
    out[:, :, K + 2] = red3 == 2 * int(state.params[L.P_PACKS])
    first = state.current_player.astype(np.int64) % sides
    out[np.arange(g), first, K + 3] = 1.0
    return out


def side_melds(state: State, rows: npt.NDArray[np.int64], side: npt.NDArray[np.int64]
               ) -> npt.NDArray[np.bool_]:
    """(n, K) whether the side of each row has a meld of each natural kind (owners of the side)."""
    size = (state.meld_naturals[rows] + state.meld_jokers[rows] + state.meld_twos[rows]).astype(np.int64)
    owners = np.arange(size.shape[1]) % state.num_sides
    mine = (owners[None, :] == side[:, None])[:, :, None]
    per_slot = (size * mine).sum(axis=1)  # (n, slots)
    out = np.zeros((rows.size, K), dtype=bool)
    out[:, C.FOUR:] = per_slot[:, :C.NUM_RANK_SLOTS] > 0
    return out


def side_red3(state: State, rows: npt.NDArray[np.int64], side: npt.NDArray[np.int64]
              ) -> npt.NDArray[np.int64]:
    """(n,) red threes the side of each row has laid down."""
    red = state.red_threes[rows].astype(np.int64)
    seats = np.arange(red.shape[1]) % state.num_sides
    return (red * (seats[None, :] == side[:, None])).sum(axis=1)


def draw_phi(hand: npt.NDArray[np.int64], melds: npt.NDArray[np.bool_], red3: npt.NDArray[np.int64],
             stock_frac: npt.NDArray[np.float64], all_red3: int, kinds: npt.NDArray[np.float64]
             ) -> npt.NDArray[np.float64]:
    """(n, len(DRAW_FEATURES)): the draw features of a card whose kind is given as ``kinds`` (n, K),
    one-hot for a card drawn, a distribution for its expectation (the features are linear in it): the
    kind by how it fits the mover's hand (no card of it, one, a pair or a side meld), plain and
    weighted by the share of the deck still in the stock, and a red three that completes a side's set."""
    n = hand.shape[0]
    phi = np.zeros((n, len(DRAW_FEATURES)), dtype=np.float64)
    fit = np.where(NATURAL, np.where(melds | (hand >= 2), 2, np.minimum(hand, 1)), 0)  # (n, K)
    col = (np.arange(K)[None, :] * _FITS + fit).ravel()  # distinct within a row
    rows = np.repeat(np.arange(n), K)
    phi[rows, col] = kinds.ravel()
    phi[rows, K * _FITS + col] = (kinds * stock_frac[:, None]).ravel()
    phi[:, 2 * K * _FITS] = kinds[:, C.RED_THREE] * (red3 == all_red3 - 1)
    return phi


@dataclass(frozen=True)
class LuckWeights:
    """Fitted weights of the features (``FEATURES`` order) for the margin and the win indicator."""

    rules: str
    margin: npt.NDArray[np.float64]
    win: npt.NDArray[np.float64]


def luck_weights(rules: RuleSet) -> LuckWeights:
    """The fitted weights for ``rules``; one line naming the tables fitted when there are none."""
    from canasta_env.luck_weights import FEATURES as FITTED_FEATURES
    from canasta_env.luck_weights import WEIGHTS
    from canasta_env.rules import load_rules

    check_supported(rules)
    entry = WEIGHTS.get(rules.name)
    if entry is None or load_rules(rules.name) != rules:
        raise ValueError(f"--luck-correction: no fitted luck weights for rules {rules.name!r} (fitted for "
                         f"the presets {', '.join(sorted(WEIGHTS)) or 'none'})")
    if list(FITTED_FEATURES) != list(FEATURES):
        raise ValueError(f"luck weights of {rules.name} are for other features; refit them "
                         "(python scripts/fit_luck_weights.py)")
    return LuckWeights(rules.name, np.asarray(entry["margin"], dtype=np.float64),
                       np.asarray(entry["win"], dtype=np.float64))


def side_contrast(features: npt.NDArray[np.float64], a_side: npt.NDArray[np.int64]
                  ) -> npt.NDArray[np.float64]:
    """(G, NUM_FEATURES): side ``a_side[g]``'s features minus the mean of the other sides' (the
    contrast a margin ``own - mean(others)`` is corrected with)."""
    g, sides = features.shape[:2]
    own = features[np.arange(g), a_side]
    return own - (features.sum(axis=1) - own) / max(sides - 1, 1)


def corrections(features: npt.NDArray[np.float64], a_side: npt.NDArray[np.int64],
                weights: LuckWeights) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """(margin correction, win correction) of side ``a_side[g]`` in every game: subtract them from the
    plain margin and win indicator."""
    x = side_contrast(features, a_side)
    return x @ weights.margin, x @ weights.win
