"""``canasta play``: a game of Canasta in the terminal, humans against (or beside) agents.

Any seats can be human (``--human 0 2``: hot seat); the others are played by ``--opponent``, and in
partnership games a human's partner by ``--partners`` (default: the opponent agent). A human sees
only what their seat may know (``train.play.table_view``), picks a move by its number in the list or by
its action name (a unique prefix is enough), and is asked again after bad input. The whole game is
played by default (hands until a side reaches the target), ``--hands N`` stops after N hands.

Nothing is lost when input ends (EOF), on ``q`` or on Ctrl-C: every finished hand is already in the
``--record`` file, the hand in progress is saved as an ``unfinished`` record, and the scores so far
are printed. An agent that fails (``act`` raises, gives no integer action or an illegal one) stops
the game the same way, then one line names it (``AgentError``, status 2 at the command line).
``canasta replay FILE`` steps through the records. Never imports torch unless an agent
is a learned policy (a checkpoint directory).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table
from rich.text import Text

from canasta_env.messages import short_repr
from train.play.prompt import console_input
from train.play.seats import AgentError, Seat, adviser, agent_move, is_learned, top_moves

_NUMBER = re.compile(r"[+-]?[0-9]+")

HELP_TEXT = (
    "Type the number of a move from the list, or its name (DRAW_STOCK, MELD_NNN_K, DISCARD_7; "
    "case does not matter and a unique start such as 'disc' is enough when only one legal move "
    "begins with it). 't' shows the table again, 'q' saves and quits, '?' shows this help."
)
PART_HEADERS = ("melds", "canastas", "red 3s", "going out", "cards held")  # layout.PART_NAMES


class QuitGame(Exception):
    """The human typed ``q``."""


def parse_move(text: str, legal: Sequence[int]) -> tuple[int | None, str]:
    """Read a typed move: ``(action, "")`` or ``(None, explanation)``.

    Accepts a number from the list of legal moves (1-based), an action name, or the unique start of
    a legal move's name; case is ignored.
    """
    from canasta_env.engine import ACTION_NAMES
    from canasta_env.engine.actions import ACTION_BY_NAME

    word = text.strip()
    if not word:
        return None, f"Type a move number (1-{len(legal)}) or a move name; '?' for help."
    if _NUMBER.fullmatch(word):  # ASCII digits only: int() refuses '+-5', '²' and 5,000 digits
        n = int(word) if len(word) <= 9 else None
        if n is not None and 1 <= n <= len(legal):
            return legal[n - 1], ""
        shown = n if n is not None else short_repr(word)
        return None, f"There is no move number {shown}: choose a number from 1 to {len(legal)}."
    name = word.upper()
    if name in ACTION_BY_NAME:
        action = ACTION_BY_NAME[name]
        if action in legal:
            return action, ""
        return None, f"{name} is not a legal move now; choose one from the list."
    matches = [a for a in legal if ACTION_NAMES[a].startswith(name)]
    if len(matches) == 1:
        return matches[0], ""
    if matches:
        shown = ", ".join(ACTION_NAMES[a] for a in matches[:8])
        return None, f"{short_repr(word)} could be several moves: {shown}. Type more of the name or a number."
    if any(n.startswith(name) for n in ACTION_BY_NAME):
        return None, f"No legal move starts with {short_repr(word)} now; choose one from the list."
    return None, f"{short_repr(word)} is not a move. Type a number from 1 to {len(legal)} or a move name."


class PlaySession:
    """One game (or ``hands`` hands) on a batch of one, seats played by humans or agents."""

    def __init__(self, rules: Any, seats: Sequence[Seat], *, seed: int, hands: int | None = None,
                 record: str | Path | None = None, show_policy: bool = False,
                 console: Console | None = None, read_line: Callable[[str], str] | None = None) -> None:
        from canasta_env.engine import init
        from canasta_env.records import BatchRecorder

        self.rules, self.seats, self.seed, self.hands = rules, list(seats), seed, hands
        self.labels = [s.label for s in self.seats]
        self.state = init(rules, 1, seed, episode="hand" if hands == 1 else "game")
        self.recorder = BatchRecorder(self.state, self.labels,
                                      meta={"source": "canasta play", "seed": seed})
        self.record_path = record
        self.show_policy = show_policy
        self.console = console or Console(highlight=False)
        self.read_line = read_line or (lambda prompt: console_input(self.console, prompt))
        self.rng = np.random.default_rng(seed)
        self.hands_done = self.recorded = 0
        self.last_human: int | None = None
        self.log: list[str] = []

    # ---- the loop -----------------------------------------------------------------------------
    def play(self) -> int:
        """Play until the game (or the requested hands) is over; returns the exit status."""
        try:
            while not self._over():
                self._decide_and_step()
        except EOFError:
            return self._stop("end of input")
        except QuitGame:
            return self._stop("quit")
        except KeyboardInterrupt:
            self._stop("interrupted (Ctrl-C)")
            return 130
        except AgentError:  # the hand so far is saved; the caller says which agent failed, once
            self._stop("an agent failed")
            raise
        except Exception:  # a bug elsewhere (an agent, the engine): keep what was played, then fail
            self._stop("error")
            raise
        self._flush_log()
        self._final()
        return 0

    def _over(self) -> bool:
        st = self.state
        done = bool(st.terminated[0] or st.truncated[0])
        return done or (self.hands is not None and self.hands_done >= self.hands)

    def _decide_and_step(self) -> None:
        from canasta_env.engine import step_one

        seat = int(self.state.current_player[0])
        agent = self.seats[seat].agent
        action = self._human_move(seat) if agent is None else self._agent_move(seat, agent)
        hand_before = self.state.hands[0, seat].copy()
        result = step_one(self.state, action)
        records = self.recorder.record([action], result)
        if agent is None:
            self._echo_human(seat, action, None if records else hand_before)
        self._save(records)
        if records:  # the hand ended (in a whole game the next one is already dealt)
            self._hand_over(records[0])

    # ---- seats ----------------------------------------------------------------------------------
    def _human_move(self, seat: int) -> int:
        from canasta_env.engine import observe
        from train.play.table_view import seat_view

        self._flush_log()
        humans = [p for p, s in enumerate(self.seats) if s.agent is None]
        if len(humans) > 1 and seat != self.last_human:
            self.console.rule(f"P{seat}'s turn: pass the keyboard to P{seat}")
        self.last_human = seat
        self.console.print(seat_view(self.state, seat, self.labels))
        legal = self.state.legal_actions(0)
        hint = self._policy_hint(observe(self.state, [seat]))
        if hint:
            self._say(hint, "cyan")
        prompt = f"P{seat}, your move [1-{len(legal)}, a name, ? help, q quit]: "
        while True:
            text = self.read_line(prompt)
            word = text.strip().lower()
            if word in ("q", "quit", "exit"):
                raise QuitGame
            if word in ("?", "h", "help"):
                self._say(HELP_TEXT)
                continue
            if word in ("t", "table"):
                self.console.print(seat_view(self.state, seat, self.labels))
                continue
            action, message = parse_move(text, legal)
            if action is not None:
                return action
            self._say(message, "red")

    def _policy_hint(self, obs: np.ndarray) -> str:
        if not self.show_policy:
            return ""
        seat = adviser(self.seats, learned_only=True)
        if seat is None:
            return ""
        from canasta_env.engine import ACTION_NAMES

        moves = top_moves(seat.agent, obs, self.state.legal_action_mask, label=seat.label)
        return f"{seat.label} would play: " + ", ".join(
            f"{ACTION_NAMES[a]} {p:.2f}" for a, p in moves)

    def _agent_move(self, seat: int, agent: Any) -> int:
        from canasta_env.engine import ACTION_NAMES, observe
        from train.play.table_view import describe

        obs = observe(self.state, [seat])
        mask = self.state.legal_action_mask.copy()
        action = agent_move(agent, self.labels[seat], seat, obs, mask, self.rng)
        line = f"P{seat} {self.labels[seat]}: {describe(action)}"
        if self.show_policy and is_learned(agent):
            line += "   [top moves: " + ", ".join(f"{ACTION_NAMES[a]} {p:.2f}"
                                                 for a, p in top_moves(agent, obs, mask,
                                                                       label=self.labels[seat])) + "]"
        self.log.append(line)
        return action

    def _echo_human(self, seat: int, action: int, hand_before: np.ndarray | None) -> None:
        """Repeat the human's move; after a draw, name the cards drawn (``hand_before`` is None
        when the move ended the hand)."""
        from canasta_env.engine import ACTION_NAMES
        from train.play.table_view import cards_by_rank, describe

        line = f"P{seat} (you): {ACTION_NAMES[action]}, {describe(action)}"
        if hand_before is not None and ACTION_NAMES[action] == "DRAW_STOCK":
            gained = np.maximum(self.state.hands[0, seat] - hand_before, 0)
            line += f"; you drew {cards_by_rank(gained)}"
        self._say(line, "bold")

    def _flush_log(self) -> None:
        for line in self.log:
            self._say(line)
        self.log.clear()

    # ---- hands, records, scores -----------------------------------------------------------------
    def _save(self, records: list[Any]) -> None:
        if records and self.record_path is not None:
            from canasta_env.records import write_records

            try:
                self.recorded += write_records(self.record_path, records)
            except OSError as exc:  # a full disk, a file made read-only mid-game: name the file
                raise ValueError(f"--record {self.record_path}: cannot append {len(records)} hand "
                                 f"record(s): {exc.strerror or exc}") from None

    def _hand_over(self, record: Any) -> None:
        from canasta_env.records import END_TEXT

        self._flush_log()
        self.hands_done += 1
        who = self._seat_text(record.went_out) if record.went_out >= 0 else ""
        how = END_TEXT.get(record.end, record.end).format(who=who)
        how += " concealed" if record.concealed else ""
        self.console.rule(f"Hand {record.hand_number + 1} over: {how}")
        table = Table(show_edge=False, pad_edge=False)
        table.add_column("side", no_wrap=True)
        for col in (*PART_HEADERS, "hand total", "game score"):
            table.add_column(col, justify="right")
        parts = record.score_parts or [[0] * len(PART_HEADERS)] * len(record.scores_after)
        hand = record.hand_scores or [0] * len(record.scores_after)
        for side, total in enumerate(record.scores_after):
            table.add_row(self._side_name(side), *map(str, parts[side]), str(hand[side]), str(total))
        self.console.print(table)

    def _seat_text(self, seat: int) -> str:
        """``P0 you`` when there is one human, else ``P0 human`` / ``P1 heuristic``."""
        from train.play.table_view import seat_name

        humans = [p for p, s in enumerate(self.seats) if s.agent is None]
        return seat_name(seat, self.labels, humans[0] if len(humans) == 1 else None)

    def _side_name(self, side: int) -> str:
        from train.play.table_view import side_seats

        return f"{side} (" + ", ".join(self._seat_text(p) for p in side_seats(self.state, side)) + ")"

    def _scores_table(self) -> Table:
        table = Table(show_edge=False, pad_edge=False)
        table.add_column("side")
        table.add_column("game score", justify="right")
        for side in range(self.state.num_sides):
            table.add_row(self._side_name(side), str(int(self.state.scores[0, side])))
        return table

    def _final(self) -> None:
        st = self.state
        result = int(st.game_result[0])  # winning side, -1 draw, -2 no game decided
        if st.terminated[0] and result >= -1:
            verdict = "a draw" if result == -1 else f"side {self._side_name(result)} wins"
        elif st.truncated[0]:
            verdict = "stopped by a guard (step cap or max_hands)"
        else:
            verdict = f"after {self.hands_done} hand(s)"
        self.console.rule(f"Final scores: {verdict}")
        self.console.print(self._scores_table())
        self._footer()

    def _stop(self, why: str) -> int:
        self._flush_log()
        unfinished = self.recorder.unfinished()
        self._save(unfinished)
        self.console.print()
        self.console.rule(f"Game stopped ({why}) after {self.hands_done} complete hand(s): scores so far")
        self.console.print(self._scores_table())
        self._footer()
        return 0

    def _footer(self) -> None:
        self._say(f"Seed {self.seed} (play the same deals again with --seed {self.seed}).")
        if self.record_path is not None:
            self._say(f"{self.recorded} hand record(s) appended to {self.record_path}; "
                      f"step through them with: canasta replay {self.record_path}")

    def _say(self, text: str, style: str = "") -> None:
        """One line of plain text (never read as markup; long lines left to the terminal)."""
        self.console.print(Text(text, style=style), soft_wrap=True)
