"""The web table's ASGI app (Starlette): the pages, the static files and the JSON API.

Routes (docs/web.md has the request and answer of each):

=======  ======================================  ===============================================
GET      /                                       the table page (static/index.html)
GET      /replay                                 the replay page (static/replay.html)
GET      /static/...                             JS, CSS
GET      /api/config                             rules, seats, options of this server
POST     /api/games                              a new game ``{"seat"?, "seed"?}``
GET      /api/games/{id}                         the table as the human sees it
POST     /api/games/{id}/actions                 the human's move ``{"seat", "action", "version"}``
GET      /api/records                            record files in the record dir
POST     /api/records                            upload a JSON-lines record file
GET      /api/records/{file}                     the hands of a record file
GET      /api/records/{file}/hands/{k}           hand ``k`` replayed: omniscient frames and moves
=======  ======================================  ===============================================

Every refusal is a 4xx JSON answer ``{"error": "..."}`` and changes nothing: a body over the cap
(413), not JSON or not an object (400), not sent as JSON (415), an unknown game (404), a stale
version or not the human's turn (409), another seat (403), an illegal action (422).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from canasta_env.messages import short_repr
from train.web.game import GameError, GameStore
from train.web.replays import hand_frames, list_records, read_file, save_upload, summary

MAX_BODY = 64 * 1024  # a move or a new game is well under 1 KiB
MAX_UPLOAD = 8 * 1024 * 1024  # a record file of a few dozen hands
RECORD_TYPES = ("application/x-ndjson", "application/jsonl", "application/json")


def static_dir() -> Path:
    """The folder of the page files shipped in the package (``train/web/static``)."""
    return Path(str(resources.files("train.web") / "static"))


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused with 413 once it passes ``limit`` bytes (the declared length is
    checked first, then the bytes as they arrive: a lying Content-Length gains nothing)."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise GameError(413, f"request body too large: the limit is {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise GameError(413, f"request body too large: the limit is {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def check_type(request: Request, accepted: tuple[str, ...]) -> None:
    """415 unless the body is declared as one of ``accepted``: a form or a ``no-cors`` fetch on
    another site can only send the types a browser lets through without asking this server, and
    none of those is accepted here, so another site cannot start games or upload files."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind not in accepted:
        raise GameError(415, f"send the body as {' or '.join(accepted)}")


async def read_json(request: Request) -> dict[str, Any]:
    """A JSON object body (at most ``MAX_BODY`` bytes, sent as ``application/json``); empty is ``{}``."""
    check_type(request, ("application/json",))
    body = await read_body(request, MAX_BODY)
    if not body.strip():
        return {}
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        raise GameError(400, "the body is not valid JSON") from None
    if not isinstance(data, dict):
        raise GameError(400, f"the body must be a JSON object, got {type(data).__name__}")
    return data


def _known(data: dict[str, Any], keys: set[str]) -> None:
    unknown = sorted(set(data) - keys)
    if unknown:
        raise GameError(400, f"unknown key(s) {', '.join(map(repr, unknown[:5]))}; known: "
                             f"{', '.join(sorted(keys))}")


def create_app(store: GameStore, *, config: dict[str, Any] | None = None,
               allowed_hosts: list[str] | None = None) -> Starlette:
    """The app serving ``store``'s games and the record files of its record dir. ``config`` is
    what ``/api/config`` answers besides the rules and seats; ``allowed_hosts`` (a loopback bind)
    refuses requests for other host names, so a web page elsewhere cannot reach the table through
    DNS rebinding. The route handlers find the store, the config and the page files in
    ``app.state``."""
    static = static_dir()
    middleware = [Middleware(GZipMiddleware, minimum_size=2048)]
    if allowed_hosts:
        middleware.insert(0, Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts))
    handlers: dict[Any, Any] = {GameError: _game_error, HTTPException: _http_error}
    app = Starlette(routes=routes(static), middleware=middleware, exception_handlers=handlers)
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
    return FileResponse(request.app.state.static / "index.html")


async def replay_page(request: Request) -> Response:
    return FileResponse(request.app.state.static / "replay.html")


# ---- games ---------------------------------------------------------------------------------------
async def get_config(request: Request) -> Response:
    store = _store(request)
    rules = store.pool.rules
    return JSONResponse({**request.app.state.config, "rules": rules.name, "num_players": rules.num_players,
                         "partnerships": rules.partnerships, "opponents": store.opponents,
                         "partner": store.partner, "show_policy": store.show_policy,
                         "hands": store.hands, "record_dir": str(store.record_dir)})


async def new_game(request: Request) -> Response:
    store = _store(request)
    data = await read_json(request)
    _known(data, {"seat", "seed"})
    game = await run_in_threadpool(store.new, data.get("seat", 0), data.get("seed"))
    return JSONResponse(await run_in_threadpool(_view, store, game.id), status_code=201)


async def get_game(request: Request) -> Response:
    game_id = request.path_params["game_id"]
    return JSONResponse(await run_in_threadpool(_view, _store(request), game_id))


async def post_action(request: Request) -> Response:
    store = _store(request)
    game_id = request.path_params["game_id"]
    data = await read_json(request)
    _known(data, {"seat", "action", "version"})
    missing = sorted({"seat", "action", "version"} - set(data))
    if missing:
        raise GameError(400, f"missing key(s) {', '.join(missing)}: a move is "
                             '{"seat": S, "action": A, "version": V}')
    await run_in_threadpool(store.move, game_id, data["seat"], data["action"], data["version"])
    return JSONResponse(await run_in_threadpool(_view, store, game_id))


# ---- records -------------------------------------------------------------------------------------
async def records(request: Request) -> Response:
    return JSONResponse({"files": await run_in_threadpool(list_records, _store(request).record_dir)})


async def upload(request: Request) -> Response:
    check_type(request, RECORD_TYPES)
    body = await read_body(request, MAX_UPLOAD)
    return JSONResponse(await run_in_threadpool(save_upload, _store(request).record_dir, body),
                        status_code=201)


async def record_file(request: Request) -> Response:
    record_dir, name = _store(request).record_dir, request.path_params["name"]
    hands = await run_in_threadpool(lambda: summary(read_file(record_dir, name)))
    return JSONResponse({"file": name, "hands": hands})


async def record_hand(request: Request) -> Response:
    record_dir = _store(request).record_dir
    name, number = request.path_params["name"], request.path_params["index"]
    # checked before int(): a path of 5,000 digits would raise in int(), a 500
    index = int(number) if number.isascii() and number.isdigit() and len(number) <= 7 else -1

    def frames() -> dict[str, Any]:
        hands = read_file(record_dir, name)
        if not 0 <= index < len(hands):
            raise GameError(404, f"{name} has hands 0-{len(hands) - 1}, no hand {short_repr(number, 40)}")
        return {"file": name, "index": index, **hand_frames(hands[index])}

    return JSONResponse(await run_in_threadpool(frames))


def _view(store: GameStore, game_id: str) -> dict[str, Any]:
    with store.lock:
        return store.get(game_id).view()


async def _game_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, GameError)
    return JSONResponse({"error": exc.message}, status_code=exc.status)


async def _http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own refusals (no such route, wrong method) as JSON too."""
    assert isinstance(exc, HTTPException)
    return JSONResponse({"error": exc.detail}, status_code=exc.status_code, headers=exc.headers)
