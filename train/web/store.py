"""The games of the web table by id: the recent ones in memory, all of them saved on disk.

Each game has its own lock, so requests on different games never wait for each other; the store's
lock guards only the table of games. A move is checked and played under the game's lock, then the
agents' replies are played on a worker thread (``submit``), outside any lock, while the game is
marked ``busy``: another request on that game is answered "the agent is busy" (409) at once, and
requests on other games go on. The app waits ``think_seconds`` for the agents, then answers 202.
An agent that fails (raises, gives no integer action or an illegal one) stops its game where it
stands: the game is saved with the human's moves and why it stopped, and every request on it is
answered 502 naming the agent (``train.web.errors.agent_failed``); the other games play on.

Bounded: at most ``max_games`` games in memory (the least recently used one not in play is
dropped, to be read back from its file when asked), the record dir's games, records and uploads
under ``max_disk`` (``train.web.quota``), the record dir made again if it goes away (a clear 503
when it cannot be). A saved file is read as untrusted input (``train.web.saved_game``).
"""

from __future__ import annotations

import json
import secrets
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from train.common.outputs import write_atomic
from train.play.seats import AgentError, agent_move
from train.web.errors import GameError, agent_failed, busy, is_int, log, shown
from train.web.files import clear_leftovers, ensure_dir, read_regular
from train.web.game import GAME_ID, AgentPool, Game, web_seats
from train.web.limits import Limits
from train.web.quota import DiskQuota
from train.web.saved_game import MAX_SAVED_BYTES
from train.web.schema import MAX_NAME, loads

RESTORE_ERRORS = (ValueError, KeyError, TypeError, IndexError, OverflowError, RecursionError)


def check_labels(agents: set[str]) -> None:
    """Refuse an agent name longer than a saved game or a record may label a seat with
    (``MAX_NAME``): its games would be saved but never restored, its records never replayed."""
    long = sorted(a for a in agents if len(a) > MAX_NAME)
    if long:
        raise ValueError(f"agent name {shown(long[0])} has {len(long[0])} characters; the web table "
                         f"labels seats with names of at most {MAX_NAME}")


class GameStore:
    """Games by id (see the module docstring); ``limits`` are the server's caps."""

    def __init__(self, pool: AgentPool, record_dir: Path, *, opponents: Sequence[str], partner: str | None,
                 hands: int | None = None, show_policy: bool = False, limits: Limits | None = None) -> None:
        self.pool, self.record_dir = pool, record_dir
        self.opponents, self.partner = list(opponents), partner
        self.agents = {*self.opponents, *([partner] if partner else [])}  # the only ones a game may name
        check_labels(self.agents)
        self.hands, self.show_policy = hands, show_policy
        self.limits = limits or Limits()
        self.games_dir = record_dir / "games"
        self.ensure_dirs()
        clear_leftovers(self.games_dir)
        self.lock = threading.RLock()
        self._games: OrderedDict[str, Game] = OrderedDict()
        self._finished: dict[str, bool] = {}
        self.quota = DiskQuota(record_dir, self.limits.max_disk, self.status,
                               stale_seconds=self.limits.stale_seconds)
        self._workers = ThreadPoolExecutor(self.limits.agent_threads, thread_name_prefix="canasta-agents")
        web_seats(pool, 0, self.opponents, partner)  # every agent built (and checked) before serving

    @property
    def keep(self) -> int:
        """Games held in memory at most (more only while every one of them is in play)."""
        return self.limits.max_games

    def warm(self) -> None:
        """Load the engine's and the agents' compiled kernels now (a deal, a view and one decision
        of each agent), so the first request is answered as fast as the others."""
        from canasta_env.engine import init, observe
        from train.web.views import legal_moves, table_view

        state = init(self.pool.rules, 1, 0)
        seat = int(state.current_player[0])
        table_view(state, seat, ["warm"] * state.num_players)
        legal_moves(state)
        obs, mask = observe(state, [seat]), state.legal_action_mask.copy()
        for spec in sorted(self.agents):
            try:
                agent_move(self.pool.get(spec), spec, None, obs, mask, np.random.default_rng(0))
            except AgentError as exc:
                raise AgentError(f"{exc} (its first move, tried before serving)") from None

    def close(self) -> None:
        """Stop the agents' worker threads (an agent mid-move finishes its move)."""
        self._workers.shutdown(wait=False, cancel_futures=True)

    def ensure_dirs(self) -> None:
        """The record dir and its ``games`` folder, made again if they went away; ``GameError``
        503 when they cannot be (a file in their place)."""
        ensure_dir(self.record_dir, "record dir", follow=True)
        ensure_dir(self.games_dir, "games folder")

    # ---- one game at a time ------------------------------------------------------------------
    def opponents_for(self, seed: int) -> list[str]:
        """The opponents' agents of a new game (all of the server's, in turn; a soak test's store
        may seat another agent for some seeds)."""
        return self.opponents

    def start(self, seat: Any = 0, seed: Any = None) -> Game:
        """A new game, held busy until ``finish`` has moved the agents up to the human's turn."""
        n = self.pool.rules.num_players
        if not is_int(seat) or not 0 <= seat < n:
            raise GameError(400, f"'seat' must be a seat number 0-{n - 1}, got {shown(seat)}")
        if seed is None:
            seed = secrets.randbelow(2**31)
        if not is_int(seed) or not 0 <= seed < 2**63:
            raise GameError(400, f"'seed' must be an integer in [0, 2**63), got {shown(seed)}")
        self.ensure_dirs()
        seats = web_seats(self.pool, seat, self.opponents_for(seed), self.partner)
        game = Game(secrets.token_hex(8), self.pool.rules, seats, seed, seat, self.record_dir,
                    hands=self.hands, show_policy=self.show_policy)
        game.busy = True
        with self.lock:
            self._remember(game)
        return game

    def begin_move(self, game_id: str, seat: Any, action: Any, version: Any) -> Game:
        """The human's move, checked and played (``GameError`` changes nothing); the game is then
        busy until ``finish`` has played the agents' replies."""
        with self.using(game_id) as game:
            if game.busy:
                raise busy(game_id)
            if game.failure is not None:
                raise agent_failed(game)
            self.ensure_dirs()
            before = game.version
            try:
                game.play(seat, action, version)
            except BaseException:
                if game.version != before:  # played, then failed (its hand's record not written)
                    self._forget(game)  # the file still holds the game before the move
                raise
            game.busy = True
            return game

    def finish(self, game: Game) -> dict[str, Any]:
        """The agents play up to the human's turn, the game is saved and no longer busy; returns
        the view. An agent that fails stops the game there: it is saved as it stands, logged in
        one line, and ``agent_failed`` (502) raised. On any other error the game is dropped from
        memory (its file holds the last saved state) and the error raised."""
        try:
            try:
                game.run_agents()
            except AgentError:  # game.failure says which agent and how; the moves so far are kept
                pass
            with game.lock:
                self.save(game)
                view = game.view() if game.failure is None else {}
                game.busy = False
        except BaseException as exc:
            self._forget(game)
            if not isinstance(exc, GameError):
                log.error("game %s: the agents' moves failed: %s: %s", game.id, type(exc).__name__, exc)
            raise
        if game.failure is not None:
            log.warning("game %s stopped at version %d: %s", game.id, game.version, game.failure)
            raise agent_failed(game)
        return view

    def submit(self, game: Game) -> Future[dict[str, Any]]:
        """``finish(game)`` on an agent worker thread."""
        return self._workers.submit(self.finish, game)

    def new(self, seat: Any = 0, seed: Any = None) -> Game:
        """A new game, the agents already moved up to the human's first turn (on this thread)."""
        game = self.start(seat, seed)
        self.finish(game)
        return game

    def move(self, game_id: str, seat: Any, action: Any, version: Any) -> Game:
        """The human's move in a game, then the agents' (on this thread); saved."""
        game = self.begin_move(game_id, seat, action, version)
        self.finish(game)
        return game

    def view(self, game_id: str) -> dict[str, Any]:
        """The table as the human of game ``game_id`` sees it; 409 while its agents think, 502
        when an agent stopped it."""
        with self.using(game_id) as game:
            if game.busy:
                raise busy(game_id)
            if game.failure is not None:
                raise agent_failed(game)
            return game.view()

    # ---- the table of games ------------------------------------------------------------------
    @contextmanager
    def using(self, game_id: str) -> Iterator[Game]:
        """The game, under its lock, kept in memory while the caller holds it."""
        with self.lock:
            game = self.get(game_id)
            game.users += 1
        try:
            with game.lock:
                yield game
        finally:
            with self.lock:
                game.users -= 1

    def get(self, game_id: str) -> Game:
        """The game with this id, from memory or from its saved file; ``GameError`` 404 if none,
        410 if its file cannot be restored, 403 if it is a link."""
        if not isinstance(game_id, str) or not GAME_ID.fullmatch(game_id):
            raise GameError(404, f"no game {shown(game_id)}: game ids are 16 hex digits")
        with self.lock:
            if game_id in self._games:
                self._games.move_to_end(game_id)
                return self._games[game_id]
            game = self._load(game_id)
            self._remember(game)
            return game

    def _load(self, game_id: str) -> Game:
        path = self.games_dir / f"{game_id}.json"
        try:
            raw = read_regular(path, MAX_SAVED_BYTES, f"game {game_id}")
        except GameError as exc:
            if exc.status == 404:
                raise GameError(404, f"no game {game_id} (unknown, or saved by another record dir)") from None
            if exc.status != 422:
                raise
            raise GameError(410, f"game {game_id} cannot be restored: {exc.message}") from None
        try:
            data = loads(raw, "the saved file")
            game = Game.from_json(data, self.pool, self.record_dir, game_id=game_id, agents=self.agents)
        except RESTORE_ERRORS as exc:
            raise GameError(410, f"game {game_id} cannot be restored: {exc}") from None
        self._finished[game_id] = game.over()
        return game

    def _remember(self, game: Game) -> None:
        """Hold ``game``, dropping the least recently used games not in play past ``keep``;
        ``GameError`` 503 when every game held is in play."""
        if game.id not in self._games and len(self._games) >= self.keep \
                and not any(self._idle(g) for g in self._games.values()):
            raise GameError(503, f"the server holds {len(self._games)} games whose agents are still "
                                 "playing; try again in a moment", headers={"Retry-After": "1"})
        self._games[game.id] = game
        self._games.move_to_end(game.id)
        for old in [g for g in self._games.values() if self._idle(g)]:
            if len(self._games) <= self.keep:
                break
            del self._games[old.id]

    @staticmethod
    def _idle(game: Game) -> bool:
        return not game.busy and game.users == 0

    def _forget(self, game: Game) -> None:
        with self.lock:
            if self._games.get(game.id) is game:
                del self._games[game.id]

    def held(self) -> int:
        """How many games are in memory now."""
        return len(self._games)

    # ---- files -------------------------------------------------------------------------------
    def save(self, game: Game) -> None:
        """Write the game's file atomically (a crash leaves the old or the new one, never half),
        within the disk cap; ``GameError`` 503 when the record dir cannot take it."""
        self.ensure_dirs()
        data = json.dumps(game.to_json(), separators=(",", ":")).encode("utf-8")
        self.quota.room(len(data))
        write_atomic(self.games_dir / f"{game.id}.json", data)
        self._finished[game.id] = game.over()

    def status(self, game_id: str) -> str:
        """What the disk quota may do with game ``game_id``: "live" (in memory and in play, or
        unfinished and in memory: kept), "finished" or "unfinished". A finished game about to be
        removed is dropped from memory too."""
        with self.lock:
            game = self._games.get(game_id)
            if game is not None:
                if not self._idle(game) or not game.over():
                    return "live"
                del self._games[game_id]
                self._finished.pop(game_id, None)
                return "finished"
        over = self._finished.pop(game_id, None)
        if over is None:
            over = self._saved_over(game_id)
        if not over:
            self._finished[game_id] = over
        return "finished" if over else "unfinished"

    def _saved_over(self, game_id: str) -> bool:
        """Whether a saved file (of an earlier run) says its game is over; a file that cannot be
        read counts as finished (nothing can play on), an older file without ``over`` as not."""
        try:
            data = loads(read_regular(self.games_dir / f"{game_id}.json", MAX_SAVED_BYTES, "game"), "game")
        except (GameError, ValueError):
            return True
        return isinstance(data, dict) and data.get("over") is True
