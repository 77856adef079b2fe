"""Step hooks in the play loop, and the seat-locked stock of scripts/seat_locked_stock.py."""

from __future__ import annotations

import numpy as np
import pytest

from agents import make_agent
from agents.match import play_games, play_match
from canasta_env.engine import DealId
from canasta_env.engine import layout as L
from scripts.seat_locked_stock import SeatLockedStock

DEALS = 12


class DrawLog:
    """Every card that leaves the stock, per (game, seat), in order."""

    def __init__(self, state):  # noqa: ANN001 - a play_games hook factory
        self.at = int(state.params[L.O_STOCK])
        self.drawn = {(g, p): [] for g in range(state.num_games) for p in range(state.num_players)}
        self.stock = self.movers = np.zeros(0, dtype=np.int64)

    def before_step(self, state, live) -> None:  # noqa: ANN001
        self.stock = state.stock_size[live].astype(np.int64)
        self.movers = state.current_player[live].astype(np.int64)

    def after_step(self, state, live) -> None:  # noqa: ANN001
        for i, g in enumerate(live.tolist()):
            for pos in range(int(self.stock[i]) - 1, int(state.stock_size[g]) - 1, -1):
                self.drawn[g, int(self.movers[i])].append(int(state.data[g, self.at + pos]))


def _draws(hooks, deals=DEALS):  # noqa: ANN001, ANN202
    logs = []

    def log(state):  # noqa: ANN001, ANN202
        logs.append(DrawLog(state))
        return logs[-1]

    rules = "classic_2p"
    seats = np.array([[0, 1]] * deals + [[1, 0]] * deals)
    dealt = [DealId(5, i, 0) for i in range(deals)] * 2
    play_games(rules, [make_agent("heuristic", rules), make_agent("greedy", rules)], seats, dealt,
               np.arange(2 * deals), hooks=(*hooks, log))
    return logs[0].drawn


def test_a_seat_locked_stock_gives_each_seat_the_same_cards_in_both_seatings() -> None:
    locked, plain = _draws((SeatLockedStock,)), _draws(())
    same_locked = same_plain = 0
    for d in range(DEALS):
        for p in range(2):
            a, b = locked[d, p], locked[DEALS + d, p]
            n = min(len(a), len(b))
            assert n > 0
            same_locked += a[:n] == b[:n]
            c, e = plain[d, p], plain[DEALS + d, p]
            same_plain += c[:min(len(c), len(e))] == e[:min(len(c), len(e))]
    assert same_locked == 2 * DEALS  # as far as both seatings' draws go
    assert same_plain < same_locked  # as dealt, a pile take re-routes the stock


def test_a_seat_locked_stock_leaves_the_game_s_law_alone() -> None:
    rules = "classic_2p"
    a, b = make_agent("heuristic", rules), make_agent("greedy", rules)
    plain = play_match(rules, a, b, 300, seed=9).summary()
    locked = play_match(rules, a, b, 300, seed=9, hooks=(SeatLockedStock,)).summary()
    assert plain["win_lo"] <= locked["win_rate"] <= plain["win_hi"]
    assert locked["win_lo"] <= plain["win_rate"] <= locked["win_hi"]


def test_records_are_refused_with_hooks() -> None:
    rules = "classic_2p"
    with pytest.raises(ValueError, match="records with step hooks"):
        play_games(rules, [make_agent("greedy", rules)], np.zeros((1, 2), dtype=np.int64), [DealId(1, 0, 0)],
                   np.arange(1), record_seats=[["A", "A"]], hooks=(SeatLockedStock,))
