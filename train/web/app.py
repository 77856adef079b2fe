"""The web table's ASGI app (Starlette): the pages, the static files and the JSON API.

Routes (docs/web.md has the request and answer of each):

=======  ======================================  ===============================================
GET      /                                       the table page (static/index.html)
GET      /replay                                 the replay page (static/replay.html)
GET      /static/...                             JS, CSS
GET      /api/config                             rules, seats, options and limits of this server
POST     /api/games                              a new game ``{"seat"?, "seed"?}``
GET      /api/games/{id}                         the table as the human sees it
POST     /api/games/{id}/actions                 the human's move ``{"seat", "action", "version"}``
GET      /api/records                            record files in the record dir
POST     /api/records                            upload a JSON-lines record file
GET      /api/records/{file}                     the hands of a record file
GET      /api/records/{file}/hands/{k}           hand ``k`` replayed: omniscient frames and moves
=======  ======================================  ===============================================

Every refusal is a one-line JSON answer ``{"error": "..."}`` and changes nothing: a body over the
cap (413) or too slow (408), not JSON or not an object (400), not sent as JSON (415), an unknown
game (404), a stale version, not the human's turn or the agents still thinking (409), another seat
or a link in the record dir (403), an illegal action or a record that does not replay (422), a
saved game that cannot be restored (410); 503 when the record dir cannot be used or is full. A move
or a new game whose agents take longer than ``think_seconds`` is answered 202 ``{"busy": true}``:
the agents play on, on a worker thread, and the page asks for the table again.
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from canasta_env.messages import short_repr
from train.web.bodies import check_type, known_keys, read_body, read_json
from train.web.errors import GameError, log
from train.web.game import Game
from train.web.middleware import HANDLERS, Guard
from train.web.replays import hand_frames, list_records, read_file, save_upload, summary
from train.web.store import GameStore

RECORD_TYPES = ("application/x-ndjson", "application/jsonl", "application/json")


def static_dir() -> Path:
    """The folder of the page files shipped in the package (``train/web/static``)."""
    return Path(str(resources.files("train.web") / "static"))


def create_app(store: GameStore, *, config: dict[str, Any] | None = None,
               allowed_hosts: list[str] | None = None) -> Starlette:
    """The app serving ``store``'s games and the record files of its record dir. ``config`` is
    what ``/api/config`` answers besides the rules and seats; ``allowed_hosts`` (a loopback bind)
    refuses requests for other host names, so a web page elsewhere cannot reach the table through
    DNS rebinding. The route handlers find the store, the config and the page files in
    ``app.state``; the store's agent threads stop with the app."""
    static = static_dir()
    middleware = [Middleware(Guard, allowed_hosts=allowed_hosts),
                  Middleware(GZipMiddleware, minimum_size=2048)]

    @asynccontextmanager
    async def lifespan(app: Starlette) -> Any:
        yield
        store.close()

    app = Starlette(routes=routes(static), middleware=middleware, exception_handlers=HANDLERS,
                    lifespan=lifespan)
    app.state.store, app.state.config, app.state.static = store, dict(config or {}), static
    return app


def routes(static: Path) -> list[Route | Mount]:
    """The routes of the module docstring's table, the static files served from ``static``."""
    return [
        Route("/", index),
        Route("/replay", replay_page),
        Route("/api/config", get_config),
        Route("/api/games", new_game, methods=["POST"]),
        Route("/api/games/{game_id}", get_game),
        Route("/api/games/{game_id}/actions", post_action, methods=["POST"]),
        Route("/api/records", records),
        Route("/api/records", upload, methods=["POST"]),
        Route("/api/records/{name}", record_file),
        Route("/api/records/{name}/hands/{index}", record_hand),
        Mount("/static", StaticFiles(directory=static), name="static"),
    ]


def _store(request: Request) -> GameStore:
    store: GameStore = request.app.state.store
    return store


# ---- pages ---------------------------------------------------------------------------------------
async def index(request: Request) -> Response:
    """The table page."""
    return FileResponse(request.app.state.static / "index.html")


async def replay_page(request: Request) -> Response:
    """The replay page."""
    return FileResponse(request.app.state.static / "replay.html")


# ---- games ---------------------------------------------------------------------------------------
async def get_config(request: Request) -> Response:
    """The rules, seats, options and the limits a page needs to know (upload size, think time)."""
    store = _store(request)
    rules, limits = store.pool.rules, store.limits
    return JSONResponse({**request.app.state.config, "rules": rules.name, "num_players": rules.num_players,
                         "partnerships": rules.partnerships, "opponents": store.opponents,
                         "partner": store.partner, "show_policy": store.show_policy,
                         "hands": store.hands, "record_dir": str(store.record_dir),
                         "limits": {"max_upload": limits.max_upload, "max_body": limits.max_body,
                                    "think_seconds": limits.think_seconds}})


async def new_game(request: Request) -> Response:
    """A new game (checked on a thread), its agents' first moves on an agent thread: 201 or 202."""
    store = _store(request)
    data = await read_json(request, store.limits.max_body, store.limits.body_seconds)
    known_keys(data, {"seat", "seed"})
    game = await run_in_threadpool(store.start, data.get("seat", 0), data.get("seed"))
    return await _settle(store, game, 201)


async def get_game(request: Request) -> Response:
    """The table of a game (read back from its file if it left memory); 409 while agents think."""
    return JSONResponse(await run_in_threadpool(_store(request).view, request.path_params["game_id"]))


async def post_action(request: Request) -> Response:
    """The human's move, checked and played on a thread, the agents' replies on an agent thread."""
    store = _store(request)
    game_id = request.path_params["game_id"]
    data = await read_json(request, store.limits.max_body, store.limits.body_seconds)
    known_keys(data, {"seat", "action", "version"})
    missing = sorted({"seat", "action", "version"} - set(data))
    if missing:
        raise GameError(400, f"missing key(s) {', '.join(missing)}: a move is "
                             '{"seat": S, "action": A, "version": V}')
    game = await run_in_threadpool(store.begin_move, game_id, data["seat"], data["action"], data["version"])
    return await _settle(store, game, 200)


async def _settle(store: GameStore, game: Game, status: int) -> Response:
    """The answer once the agents of ``game`` have replied (on a worker thread): the table with
    ``status``, or 202 ``{"busy": true}`` when they take longer than ``think_seconds`` (they play
    on; the page asks for the table again), so a slow agent stalls no answer."""
    future = asyncio.wrap_future(store.submit(game))
    try:
        view = await asyncio.wait_for(asyncio.shield(future), store.limits.think_seconds)
    except asyncio.TimeoutError:
        future.add_done_callback(_quiet)
        return JSONResponse({"busy": True, "id": game.id, "error": "the agent is busy: it is still "
                             "thinking; ask for the table again in a moment"},
                            status_code=202, headers={"Retry-After": "1"})
    return JSONResponse(view, status_code=status)


def _quiet(future: asyncio.Future[Any]) -> None:
    """Collect the outcome of agents no answer waited for (``GameStore.finish`` logged it)."""
    if not future.cancelled() and future.exception() is not None:
        log.debug("agents finished with %s", future.exception())


# ---- records -------------------------------------------------------------------------------------
async def records(request: Request) -> Response:
    """The record files of the record dir (regular files only)."""
    return JSONResponse({"files": await run_in_threadpool(list_records, _store(request).record_dir)})


async def upload(request: Request) -> Response:
    """An uploaded record file, kept only when every hand replays (and within the disk cap)."""
    store = _store(request)
    check_type(request, RECORD_TYPES)
    body = await read_body(request, store.limits.max_upload, store.limits.body_seconds)

    def keep() -> dict[str, Any]:
        store.ensure_dirs()
        return save_upload(store.record_dir, body, store.quota)

    return JSONResponse(await run_in_threadpool(keep), status_code=201)


async def record_file(request: Request) -> Response:
    """One line per hand of a record file."""
    record_dir, name = _store(request).record_dir, request.path_params["name"]
    hands = await run_in_threadpool(lambda: summary(read_file(record_dir, name)))
    return JSONResponse({"file": name, "hands": hands})


async def record_hand(request: Request) -> Response:
    """Hand ``k`` of a record file replayed: its frames and moves."""
    record_dir = _store(request).record_dir
    name, number = request.path_params["name"], request.path_params["index"]
    # checked before int(): a path of 5,000 digits would raise in int(), a 500
    index = int(number) if number.isascii() and number.isdigit() and len(number) <= 7 else -1

    def frames() -> dict[str, Any]:
        hands = read_file(record_dir, name)
        if not 0 <= index < len(hands):
            held = f"hands 0-{len(hands) - 1}" if hands else "no hands"
            raise GameError(404, f"{name} has {held}, no hand {short_repr(number, 40)}")
        return {"file": name, "index": index, **hand_frames(hands[index])}

    return JSONResponse(await run_in_threadpool(frames))
