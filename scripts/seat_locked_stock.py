"""Does duplicate play buy little because a pile take re-routes the stock? ``python
scripts/seat_locked_stock.py --rules classic_4p --agents zoo:classic_4p heuristic:pile_fighter``.

Plays one duplicate match twice on the same deals: as dealt, and with a **seat-locked stock**, in
which every seat draws from its own queue of the dealt stock's positions (seat p: positions p,
p + players, ... from the top, then the deepest card left), so a seat receives the same cards in both
seatings of a deal whoever takes the pile. The game is unchanged in law: given everything on the
table the unseen stock positions are exchangeable, so drawing them in any order chosen without
looking at them gives every card the same chance as drawing from the top. Prints, for each, the
correlation of A's results between a deal's two seatings (the more negative, the more of the
cards' luck the seatings cancel), the per-deal standard deviation of the margin and the win rate,
and the variance ratio left by ``--luck-correction``'s control variate.
"""

from __future__ import annotations

import argparse

import numpy as np
import numpy.typing as npt

from agents import make_agent
from agents.match import play_match
from canasta_env.engine import layout as L
from canasta_env.engine.core import State
from canasta_env.luck import luck_weights
from canasta_env.rules import load_rules

TOP = 8  # cards put on top before each draw: a draw of two plus red threes' replacements


class SeatLockedStock:
    """A ``play_games`` hook: before every draw phase, the mover's next unused queue positions go on
    top of the stock, the other unused positions below, the deepest first (a seat whose queue has
    run out takes the cards the others would reach last)."""

    def __init__(self, state: State) -> None:
        self.at = int(state.params[L.O_STOCK])
        players = state.num_players
        self.cards, self.used, self.queues = [], [], []
        for r in range(state.num_games):
            n = int(state.stock_size[r])
            self.cards.append(state.data[r, self.at: self.at + n][::-1].copy())  # 0: the top
            self.used.append(np.zeros(n, dtype=bool))
            self.queues.append([np.arange(p, n, players) for p in range(players)])
        self.placed: dict[int, npt.NDArray[np.int64]] = {}

    def before_step(self, state: State, live: npt.NDArray[np.int64]) -> None:
        self.placed = {}
        for r in live[state.phase[live] == L.PH_DRAW].tolist():
            used = self.used[r]
            queue = self.queues[r][int(state.current_player[r])]
            top = queue[~used[queue]][:TOP]
            rest = np.flatnonzero(~used)[::-1]  # the deepest first: others' queues last longest
            order = np.concatenate([top, rest[~np.isin(rest, top)]])
            state.data[r, self.at: self.at + order.size] = self.cards[r][order][::-1]
            self.placed[r] = order

    def after_step(self, state: State, live: npt.NDArray[np.int64]) -> None:
        for r, order in self.placed.items():
            self.used[r][order[: order.size - int(state.stock_size[r])]] = True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rules", default="classic_4p")
    parser.add_argument("--agents", nargs=2, default=["zoo:classic_4p", "heuristic:pile_fighter"])
    parser.add_argument("--deals", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    try:
        luck_weights(load_rules(args.rules))  # the rules with fitted weights only
        a, b = (make_agent(name, args.rules) for name in args.agents)
    except ValueError as err:
        parser.error(str(err))
    for label, hooks in (("as dealt", ()), ("seat-locked stock", (SeatLockedStock,))):
        res = play_match(args.rules, a, b, args.deals, seed=args.seed, luck=True, hooks=hooks)
        m = res.margins
        wins = (m > 0) + 0.5 * (m == 0)
        s = res.summary()
        print(f"{args.rules} {args.agents[0]} vs {args.agents[1]}, {args.deals} deals, {label}: "
              f"margin {s['mean_margin']:.0f} [{s['margin_lo']:.0f}, {s['margin_hi']:.0f}], sd a deal "
              f"{res.deal_margins.std():.0f}, seatings' correlation {np.corrcoef(m.T)[0, 1]:.3f}; win rate "
              f"{s['win_rate']:.3f} [{s['win_lo']:.3f}, {s['win_hi']:.3f}], sd a deal "
              f"{res.deal_wins.std():.3f}, "
              f"seatings' correlation {np.corrcoef(wins.T)[0, 1]:.3f}; luck-corrected variance ratio "
              f"{s['margin_var_ratio']:.2f} (margin), {s['win_var_ratio']:.2f} (win)")


if __name__ == "__main__":
    main()
