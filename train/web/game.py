"""Games of the web table: one human seat, agents in the others, held by id in memory and on disk.

A game is its rules, its seed and the list of every action played: the engine deals from the seed,
so replaying the actions rebuilds the exact state. That list (with the move log and the agents'
recorded top choices) is what is saved, as JSON, after every request; a page reload or a server
restart finds the game again by id. Every finished hand is appended, as a ``canasta_env.records``
hand record, to ``<record dir>/<game id>.jsonl``, which ``canasta replay`` and the replay page read.

A human move is checked before anything changes: the game id, the seat, the version (how many
actions the game has had: a stale page cannot play twice) and the action, which must be legal in
the engine's mask. Then the agents play until it is the human's turn again or the game is over
(``run_agents``; ``train.web.store`` runs it on a worker thread, so a slow agent stalls no other
game, and marks the game ``busy`` meanwhile). An agent's move is checked (``agent_move``): one that
fails (raises, gives no integer action or an illegal one) stops the game where it stands, the
human's moves kept, with ``failure`` saying which agent failed and how (saved as ``agent_error``).

Seats, the agents built once per name and their top choices come from ``train.play.seats``, as
at the terminal table; the refusals are ``train.web.errors``, the saved file's checks
``train.web.saved_game``, the record file's appends ``train.web.files`` (never through a link).
``AgentPool`` and ``GameError`` are importable from here too.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from canasta_env.messages import one_line
from canasta_env.rules import RuleSet
from train.play.seats import (
    AgentError,
    AgentPool,
    Seat,
    adviser,
    agent_move,
    build_seats,
    seats_from_specs,
    top_choices,
)
from train.web.errors import GameError, agent_failed, is_int, log, shown
from train.web.files import append_text
from train.web.saved_game import GAME_FORMAT, GAME_VERSION, checked_save

__all__ = ["GAME_ID", "AgentPool", "Game", "GameError", "hint_entry", "web_seats"]

GAME_ID = re.compile(r"[0-9a-f]{16}")
LOG_SHOWN = 60  # moves of the log sent with each view
TOP_K = 3
MAX_FAILURE = 500  # an agent's error as a game keeps it (and its saved file)


def web_seats(pool: AgentPool, human: int, opponents: Sequence[str], partner: str | None) -> list[Seat]:
    """Seat the human at ``human``; in partnership games the human's partners play ``partner``
    (default: the first opponent), the other seats take ``opponents`` in turn. Seats are labelled
    by their agent names as given, the names a saved game restores them by."""
    return build_seats(pool.rules, [human], opponents, partner, pool=pool, name_paths=False)


def hint_entry(agent: Any, obs: np.ndarray, mask: np.ndarray, pick: int | None,
               rng: np.random.Generator, label: str = "adviser") -> list[list[Any]]:
    """An agent's top choices as the log and the records hold them: ``[[name, probability], ...]``
    for a learned policy, else ``[[name, None]]`` for its pick (``pick``, or what it would play now;
    ``AgentError`` naming ``label`` when it fails)."""
    from canasta_env.engine import ACTION_NAMES

    choices = top_choices(agent, obs, mask, rng, pick=pick, k=TOP_K, label=label)
    return [[ACTION_NAMES[a], None if p is None else round(p, 4)] for a, p in choices]


class Game:
    """One game at the table: the engine state, its recorder, the move log and the seats."""

    def __init__(self, game_id: str, rules: RuleSet, seats: Sequence[Seat], seed: int, human: int,
                 record_dir: Path, *, hands: int | None = None, show_policy: bool = False) -> None:
        from canasta_env.engine import init
        from canasta_env.records import BatchRecorder

        self.id, self.rules, self.seats, self.seed, self.human = game_id, rules, list(seats), seed, human
        self.hands, self.show_policy = hands, show_policy
        self.record_dir = record_dir
        self.labels = [s.label for s in self.seats]
        self.state = init(rules, 1, seed, episode="hand" if hands == 1 else "game")
        self.recorder = BatchRecorder(self.state, self.labels,
                                      meta={"source": "canasta serve", "seed": seed, "game": game_id})
        self.actions: list[int] = []
        self.hints: list[list[list[Any]] | None] = []  # per action: the mover's top choices
        self.log: list[dict[str, Any]] = []
        self.hands_done = 0
        self.hands_recorded = 0
        self.last_hand: dict[str, Any] | None = None
        self._hand_start = 0
        self._replaying = False
        self.rng = np.random.default_rng(seed)
        self._hint_cache: tuple[int, list[list[Any]] | None] | None = None
        self.hint_error: str | None = None  # why the hint of this version could not be had
        self.failure: str | None = None  # set when an agent failed: the game stops there
        self._no_top: set[int] = set()  # seats whose top choices could not be had (logged once)
        # held by the store while a request reads or changes the game; ``busy`` while its agents
        # think outside the lock; ``users``: requests holding it (it stays in memory meanwhile)
        self.lock = threading.Lock()
        self.busy = False
        self.users = 0

    # ---- state ---------------------------------------------------------------------------------
    @property
    def version(self) -> int:
        """How many actions the game has had: a move names the version it was chosen on."""
        return len(self.actions)

    @property
    def record_file(self) -> Path:
        return self.record_dir / f"{self.id}.jsonl"

    def over(self) -> bool:
        st = self.state
        done = bool(st.terminated[0] or st.truncated[0])
        return done or (self.hands is not None and self.hands_done >= self.hands)

    def human_to_move(self) -> bool:
        return not self.over() and int(self.state.current_player[0]) == self.human

    # ---- moves ---------------------------------------------------------------------------------
    def play(self, seat: Any, action: Any, version: Any) -> None:
        """The human's move, checked first (``GameError`` changes nothing); the agents' replies
        are ``run_agents``'s."""
        if self.failure is not None:
            raise agent_failed(self)
        if not is_int(seat) or seat != self.human:
            raise GameError(403, f"seat {shown(seat)} is not yours: you sit at seat {self.human}")
        if not is_int(version):
            raise GameError(400, "'version' must be an integer: the version of the table you moved on")
        if version != self.version:
            raise GameError(409, f"stale move: the table is at version {self.version}, the move was made "
                                 f"on version {version}; reload the table")
        if self.over():
            raise GameError(409, "the game is over; start a new game")
        if not self.human_to_move():
            raise GameError(409, f"it is not your turn: seat {int(self.state.current_player[0])} is to move")
        if not is_int(action):
            raise GameError(400, f"'action' must be an integer action id, got {shown(action)}")
        legal = self.state.legal_actions(0)
        if action not in legal:
            from canasta_env.engine import NUM_ACTIONS, action_name

            what = action_name(action) if 0 <= action < NUM_ACTIONS else "no action"
            raise GameError(422, f"action {action} ({what}) is not legal now; legal: {legal}")
        self._move(self.human, int(action), None)

    def run_agents(self) -> None:
        """Agents play until the human is to move or the game is over. An agent that fails stops
        the game before its move: ``failure`` says why and ``AgentError`` is raised (the moves
        played so far stay)."""
        from canasta_env.engine import observe

        while self.failure is None and not self.over() and not self.human_to_move():
            seat = int(self.state.current_player[0])
            agent = self.seats[seat].agent
            obs = observe(self.state, [seat])
            mask = self.state.legal_action_mask.copy()
            try:
                action = agent_move(agent, self.labels[seat], seat, obs, mask, self.rng)
            except AgentError as exc:
                self.failure = one_line(exc, MAX_FAILURE)
                raise
            self._move(seat, action, self._agent_hint(agent, seat, obs, mask, action))

    def _agent_hint(self, agent: Any, seat: int, obs: np.ndarray, mask: np.ndarray, action: int
                    ) -> list[list[Any]] | None:
        """With ``show_policy``, the top choices of the agent that played ``action``; none when
        they cannot be had (its move stands; logged once), as for the human's hint: a learned policy
        whose ``action_probabilities`` raised, or gave NaN (which JSON has not), was a 500 for the
        move and every view after it."""
        if not self.show_policy:
            return None
        try:
            return hint_entry(agent, obs, mask, action, self.rng, self.labels[seat])
        except AgentError as exc:
            if seat not in self._no_top:  # one log line per seat and game, not one per move
                self._no_top.add(seat)
                log.warning("game %s: no top choices of seat %d: %s", self.id, seat,
                            one_line(exc, MAX_FAILURE))
            return None

    def _move(self, seat: int, action: int, hint: list[list[Any]] | None) -> None:
        from canasta_env.engine import ACTION_NAMES
        from train.play.table_view import describe

        hand_before = self.state.hands[0, seat].copy()
        hand_number = int(self.state.hand_number[0]) + 1
        records = self._step(action, hint)
        entry: dict[str, Any] = {"i": len(self.actions) - 1, "hand": hand_number, "seat": seat,
                                 "who": "you" if seat == self.human else self.labels[seat],
                                 "name": ACTION_NAMES[action], "text": describe(action)}
        if seat == self.human and ACTION_NAMES[action] == "DRAW_STOCK" \
                and int(self.state.hand_number[0]) + 1 == hand_number:
            from train.web.views import kinds_list

            entry["drew"] = kinds_list(np.maximum(self.state.hands[0, seat] - hand_before, 0))
        if hint is not None:
            entry["top"] = hint
        self.log.append(entry)
        for record in records:
            self._hand_over(record)

    def _step(self, action: int, hint: list[list[Any]] | None) -> list[Any]:
        """Apply one action to the engine and the recorder; returns the records of the hands it
        ended (``_hand_over`` saves them)."""
        from canasta_env.engine import step_one

        result = step_one(self.state, action)
        self.actions.append(action)
        self.hints.append(hint)
        return self.recorder.record([action], result)

    def _hand_over(self, record: Any) -> None:
        from canasta_env.records import END_TEXT

        hints = self.hints[self._hand_start: len(self.actions)]
        if any(h is not None for h in hints):
            record.meta["top_moves"] = hints
        self._hand_start = len(self.actions)
        index = self.hands_done
        self.hands_done += 1
        if not self._replaying or index >= self.hands_recorded:
            append_text(self.record_file, json.dumps(record.to_json(), separators=(",", ":")) + "\n")
            self.hands_recorded = index + 1
        who = f"P{record.went_out} ({self._seat_name(record.went_out)})" if record.went_out >= 0 else ""
        self.last_hand = {
            "hand": record.hand_number + 1, "end": record.end,
            "text": END_TEXT.get(record.end, record.end).format(who=who)
            + (" concealed" if record.concealed else ""),
            "hand_scores": record.hand_scores, "score_parts": record.score_parts,
            "scores": record.scores_after, "record_file": self.record_file.name, "record_index": index,
        }
        self.log.append({"i": len(self.actions) - 1, "hand": record.hand_number + 1, "seat": -1,
                         "who": "table", "name": "HAND_OVER",
                         "text": f"hand {record.hand_number + 1} over: {self.last_hand['text']}; "
                                 f"hand scores {record.hand_scores}, game scores {record.scores_after}"})

    def _seat_name(self, seat: int) -> str:
        return "you" if seat == self.human else self.labels[seat]

    # ---- what the page gets --------------------------------------------------------------------
    def hint(self) -> list[list[Any]] | None:
        """With ``show_policy``, on the human's turn: what an agent would play in the human's seat
        (a learned agent's top probabilities if there is one, else a rule agent's pick)."""
        if not self.show_policy or not self.human_to_move():
            self.hint_error = None
            return None
        if self._hint_cache is not None and self._hint_cache[0] == self.version:
            return self._hint_cache[1]
        from canasta_env.engine import observe

        seat = adviser(self.seats)
        assert seat is not None  # the human plays against at least one agent
        obs = observe(self.state, [self.human])
        mask = self.state.legal_action_mask.copy()
        hint, self.hint_error = None, None
        try:
            hint = hint_entry(seat.agent, obs, mask, None, np.random.default_rng(self.version), seat.label)
        except AgentError as exc:  # no hint this turn; the game plays on, the view says why
            self.hint_error = f"no hint: {one_line(exc, MAX_FAILURE)}"
            log.warning("game %s: %s", self.id, self.hint_error)
        self._hint_cache = (self.version, hint)
        return hint

    def view(self) -> dict[str, Any]:
        """The table as the human sees it, with the legal moves on the human's turn."""
        from train.web.views import legal_moves, table_view

        view = table_view(self.state, self.human, self.labels)
        view.update({
            "id": self.id, "version": self.version, "seat": self.human, "seed": self.seed,
            "your_turn": self.human_to_move(), "game_over": self.over(), "hands_done": self.hands_done,
            "legal": legal_moves(self.state) if self.human_to_move() else [],
            "log": self.log[-LOG_SHOWN:], "hint": self.hint(), "last_hand": self.last_hand,
            "result": self._result() if self.over() else None, "show_policy": self.show_policy,
            "hint_error": self.hint_error,
            "record_file": self.record_file.name if self.hands_recorded else None,
        })
        return view

    def _result(self) -> str:
        st = self.state
        result = int(st.game_result[0])
        if st.terminated[0] and result >= -1:
            if result == -1:
                return "The game is a draw."
            mine = result == self.human % st.num_sides
            return f"Side {result} wins the game" + (" (your side)." if mine else ".")
        if st.truncated[0]:
            return "The game was stopped by a guard (step cap or max_hands)."
        return f"Game over after {self.hands_done} hand(s)."

    # ---- saving --------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """The saved game: what ``from_json`` replays (rules, seats, seed, every action), the
        agents' random stream (so a restored game plays on as the one it replaces) and the log."""
        return {"format": GAME_FORMAT, "version": GAME_VERSION, "id": self.id,
                "rules": self.rules.to_dict(), "seats": [s.spec for s in self.seats], "human": self.human,
                "seed": self.seed, "hands": self.hands, "show_policy": self.show_policy,
                "actions": self.actions, "hints": self.hints, "log": self.log,
                "hands_recorded": self.hands_recorded, "rng": self.rng.bit_generator.state,
                "over": self.over(), **({} if self.failure is None else {"agent_error": self.failure})}

    @classmethod
    def from_json(cls, data: Any, pool: AgentPool, record_dir: Path, *, game_id: str,
                  agents: set[str]) -> Game:
        """Rebuild saved game ``game_id`` by replaying its actions from its seed (any error:
        ``ValueError``). The file is checked first, as the server's files are writable by anyone
        with the record dir: its id must be its file's, its rules the server's, and its seats only
        ``agents``, the server's own (a name there could import a module or unpickle a checkpoint)."""
        checked = checked_save(data, pool.rules, game_id, agents)
        seats = seats_from_specs(checked["seats"], pool, name_paths=False)
        game = cls(game_id, pool.rules, seats, checked["seed"], checked["human"], record_dir,
                   hands=checked["hands"], show_policy=checked["show_policy"])
        game.hands_recorded = checked["hands_recorded"]
        game._replaying = True
        for action, hint in zip(checked["actions"], checked["hints"], strict=True):
            for record in game._step(action, hint):
                game._hand_over(record)
        game._replaying = False
        if game.hands_recorded > game.hands_done:  # the hands past them would never be recorded
            raise ValueError(f"'hands_recorded' {game.hands_recorded} counts more hands than its "
                             f"actions finish ({game.hands_done})")
        game.log = checked["log"]
        if "rng" in checked:
            game.rng.bit_generator.state = checked["rng"]
        game.failure = checked.get("agent_error")
        if game.failure is None and not game.over() and not game.human_to_move():  # never saved so
            game.failure = "its agents' moves were never played (the saved file stops before them)"
        return game
