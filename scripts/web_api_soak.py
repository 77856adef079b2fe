"""Soak test of the web table against a real server on 127.0.0.1: many clients at once, one slow
agent, hostile requests and connections, with the server's memory and disk measured.

Starts the app on uvicorn in a subprocess (this script with ``--serve``: ``canasta serve``'s app and
limits; its store seats ``web_drill.SlowAgent`` in the game of seed ``SLOW_SEED``), then at once:
``--clients`` (100) clients play ``--games`` (1,000) one-hand games of random legal moves against
``--opponent`` (a move every ``--think`` seconds on average, as a person clicks; 0: at once), one
more plays the slow agent's game, a process fires ``--hostile`` (500) tampered requests at a game
in play (each a 4xx JSON error changing neither the game nor its file), and raw sockets send half
request lines (cut off after ``--header-seconds``) and leave mid-body (one log line each). Requires:
no 5xx, no answer slower than ``--stall`` (2 s), every game finished, every record left in the
record dir replaying, and the record dir under ``--max-disk-mb`` throughout.

    python scripts/web_api_soak.py                       # 1,000 games, 100 clients, 500 hostile
    python scripts/web_api_soak.py --games 50 --clients 10 --hostile 60
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import random
import stat
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WEB_TESTS = ROOT / "tests" / "web"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(WEB_TESTS))

SLOW_SEED = 999_999_999
SLOW_AGENT = "web_drill:SlowAgent"


# ---- the server (run as a subprocess: python scripts/web_api_soak.py --serve ...) -----------------
def serve(args: argparse.Namespace) -> int:
    """``canasta serve``'s app with these limits; the game of ``SLOW_SEED`` seats the slow agent."""
    from canasta_env.rules import load_rules
    from train.web.app import create_app
    from train.web.game import AgentPool
    from train.web.limits import MIB, Limits
    from train.web.server import bind
    from train.web.server import serve as run_server
    from train.web.store import GameStore

    class SoakStore(GameStore):
        def opponents_for(self, seed: int) -> list[str]:
            return [SLOW_AGENT] if seed == SLOW_SEED else self.opponents

    limits = Limits(max_disk=int(args.max_disk_mb * MIB), header_seconds=args.header_seconds)
    store = SoakStore(AgentPool(load_rules(args.rules)), Path(args.record_dir), opponents=[args.opponent],
                      partner=None, hands=1, limits=limits)
    store.agents.add(SLOW_AGENT)
    store.pool.get(SLOW_AGENT)
    store.warm()
    sock = bind("127.0.0.1", args.port)
    print(f"ready {sock.getsockname()[1]}", flush=True)
    run_server(create_app(store, allowed_hosts=["127.0.0.1"]), sock, limits)
    return 0


# ---- what the clients saw ------------------------------------------------------------------------
@dataclass
class Stats:
    """Every answer's status and time, the games finished and the failures seen."""

    statuses: Counter[int] = field(default_factory=Counter)
    times: list[float] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    busy: int = 0  # 202 answers and 409 "busy" polls
    started: int = 0

    def took(self, status: int, seconds: float) -> None:
        self.statuses[status] += 1
        self.times.append(seconds)


class Failed:
    """An answer that never came (the connection failed): counted as an error, status 0."""

    def __init__(self, method: str, url: str, exc: Exception) -> None:
        self.status_code, self.text, self.what = 0, f"{type(exc).__name__}: {exc}", f"{method} {url}"
        self.json: Any = dict


async def ask(client: Any, stats: Stats, method: str, url: str, **kw: Any) -> Any:
    """The answer to one request, timed; a failed connection is a ``Failed`` answer."""
    import httpx

    start = time.perf_counter()
    try:
        r = await client.request(method, url, **kw)
    except httpx.TransportError as exc:
        r = Failed(method, url, exc)
    stats.took(r.status_code, time.perf_counter() - start)
    return r


async def settled(client: Any, stats: Stats, r: Any, poll: float = 0.1) -> dict[str, Any] | None:
    """The table an answer gives, asked for again while the agents think (202, 409 busy)."""
    while r.status_code == 202 or (r.status_code == 409 and r.json().get("busy")):
        stats.busy += 1
        game_id = r.json().get("id", getattr(r, "game_id", None))
        await asyncio.sleep(poll)
        r = await ask(client, stats, "GET", f"/api/games/{game_id}")
        r.game_id = game_id
    if r.status_code not in (200, 201):
        what = r.what if isinstance(r, Failed) else f"{r.request.method} {r.request.url.path}"
        stats.errors.append(f"{what}: {r.status_code} {r.text[:200]}")
        return None
    view: dict[str, Any] = r.json()
    return view


async def play(client: Any, stats: Stats, rng: random.Random, seed: int, seat: int, think: float,
               until: asyncio.Event | None = None, poll: float = 0.1) -> None:
    """One game of random legal moves, each after ``think`` seconds on average, as a person
    clicks (``until``: stop when it is set, for the slow game)."""
    view = await settled(client, stats, await ask(client, stats, "POST", "/api/games",
                                                  json={"seed": seed, "seat": seat}), poll)
    while view is not None and not view["game_over"] and not (until and until.is_set()):
        await asyncio.sleep(rng.uniform(0.5, 1.5) * think)
        move = {"seat": view["seat"], "action": rng.choice(view["legal"])["id"], "version": view["version"]}
        r = await ask(client, stats, "POST", f"/api/games/{view['id']}/actions", json=move)
        r.game_id = view["id"]
        view = await settled(client, stats, r, poll)
    if view is not None and view["game_over"]:
        stats.ids.append(view["id"])


async def players(url: str, args: argparse.Namespace, stats: Stats, slow: Stats) -> None:
    """``args.clients`` clients play ``args.games`` games between them; one more plays the slow
    agent's game until they are done."""
    import httpx

    done = asyncio.Event()
    seats = 4 if "4p" in args.rules else 2

    # a client drops an idle connection before the server's keep-alive (5 s) closes it, so that it
    # never sends a request on a connection the server is closing (the race every HTTP client has)
    limits = httpx.Limits(keepalive_expiry=2.0)

    async def client_loop(k: int) -> None:
        rng = random.Random(args.seed * 1000 + k)
        await asyncio.sleep(k * args.ramp / args.clients)  # people arrive over a few seconds
        async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
            while stats.started < args.games:
                g = stats.started
                stats.started += 1
                await play(client, stats, rng, seed=args.seed * 100_003 + g, seat=g % seats, think=args.think)

    async def slow_loop() -> None:
        async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
            while not done.is_set():
                await play(client, slow, random.Random(1), seed=SLOW_SEED, seat=0, think=args.think,
                           until=done, poll=0.3)

    slow_task = asyncio.create_task(slow_loop())
    await asyncio.gather(*(client_loop(k) for k in range(args.clients)))
    done.set()
    await slow_task


# ---- hostile requests and connections ------------------------------------------------------------
def ready() -> None:
    """Import what ``hostile`` needs (in its process, before the clients start)."""
    import httpx  # noqa: F401
    import web_drill  # noqa: F401


def hostile(url: str, record_dir: Path, count: int, seed: int) -> dict[str, Any]:
    """``count`` tampered requests at a game in play: each a 4xx, the game unchanged. Run in a
    process of its own, so that building an 8 MiB upload does not hold up the players' timing."""
    import httpx
    from web_drill import hostile_requests

    statuses: Counter[int] = Counter()
    out: dict[str, Any] = {}
    try:
        with httpx.Client(base_url=url, timeout=60, limits=httpx.Limits(keepalive_expiry=2.0)) as client:
            view = client.post("/api/games", json={"seed": 7}).json()
            for _, status in hostile_requests(client, view, record_dir / "games", count, random.Random(seed),
                                              only=True):
                statuses[status] += 1
    except AssertionError as exc:
        out["error"] = f"hostile request accepted or changed the game: {exc}"
    except httpx.TransportError as exc:
        out["error"] = f"hostile request failed: {type(exc).__name__}: {exc}"
    out["statuses"] = statuses
    return out


async def slow_connections(url: str, count: int, limit: float) -> list[float]:
    """Seconds until the server closed each of ``count`` connections that sent half a request line."""
    host, port = url.removeprefix("http://").split(":")

    async def one() -> float:
        start = time.perf_counter()
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(b"GET /api/con")
        await writer.drain()
        try:
            await asyncio.wait_for(reader.read(), limit)
        except asyncio.TimeoutError:
            pass
        writer.close()
        return time.perf_counter() - start

    return list(await asyncio.gather(*(one() for _ in range(count))))


async def gone_mid_body(url: str, count: int) -> None:
    """``count`` clients that leave halfway through an upload's body."""
    host, port = url.removeprefix("http://").split(":")
    for _ in range(count):
        _, writer = await asyncio.open_connection(host, int(port))
        writer.write(b"POST /api/records HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Content-Type: application/x-ndjson\r\nContent-Length: 50000\r\n\r\n"
                     b'{"format": "canasta-hand-record", ')
        await writer.drain()
        await asyncio.sleep(0.2)
        writer.close()


# ---- measures ------------------------------------------------------------------------------------
def disk(folder: Path) -> int:
    """Bytes of the regular files under ``folder`` now (files removed meanwhile left out)."""
    total = 0
    for root, _, names in os.walk(folder):
        for name in names:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            total += st.st_size if stat.S_ISREG(st.st_mode) else 0
    return total


async def watch_disk(folder: Path, peak: list[int], stop: asyncio.Event, stats: Stats) -> None:
    """The record dir's peak size, sampled every 2 s; a progress line on stderr every minute."""
    start = last = time.perf_counter()
    while not stop.is_set():
        peak[0] = max(peak[0], await asyncio.to_thread(disk, folder))
        if time.perf_counter() - last > 60:
            last = time.perf_counter()
            print(f"  {last - start:.0f} s: {len(stats.ids)} games, {len(stats.times)} requests, slowest "
                  f"{max(stats.times, default=0):.2f} s, {len(stats.errors)} errors, "
                  f"disk {peak[0] / 2**20:.1f} MiB", file=sys.stderr, flush=True)
        await asyncio.sleep(2)


def start_server(args: argparse.Namespace, record_dir: Path, log: Any) -> tuple[subprocess.Popen[str], str]:
    cmd = [sys.executable, __file__, "--serve", "--record-dir", str(record_dir), "--rules", args.rules,
           "--opponent", args.opponent, "--max-disk-mb", str(args.max_disk_mb),
           "--header-seconds", str(args.header_seconds)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(WEB_TESTS), str(ROOT)]),
           "CANASTA_SLOW_AGENT_SECONDS": str(args.slow_seconds)}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("ready "):
        proc.kill()
        raise SystemExit(f"the server did not start: {line}")
    return proc, f"http://127.0.0.1:{line.split()[1]}"


def records_replay(record_dir: Path) -> tuple[int, int]:
    """(records left in the record dir that replay, those that do not)."""
    from canasta_env.records import read_records, replay

    good = bad = 0
    for path in record_dir.glob("*.jsonl"):
        try:
            for record in read_records(path):
                replay(record)
            good += 1
        except Exception as exc:  # report every failure, then fail
            bad += 1
            print(f"record {path.name}: {exc}", file=sys.stderr)
    return good, bad


# ---- the run -------------------------------------------------------------------------------------
async def soak(url: str, args: argparse.Namespace, record_dir: Path) -> dict[str, Any]:
    """Everything at once: the players, the slow game, the hostile process and connections."""
    stats, slow, peak, stop = Stats(), Stats(), [disk(record_dir)], asyncio.Event()
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(pool, ready)  # its imports done before the clients start
        start = time.perf_counter()
        attack = loop.run_in_executor(pool, hostile, url, record_dir, args.hostile, args.seed)
        watcher = asyncio.create_task(watch_disk(record_dir, peak, stop, stats))
        cut_off, _, _, out = await asyncio.gather(
            slow_connections(url, args.slowloris, args.header_seconds + 10), gone_mid_body(url, args.gone),
            players(url, args, stats, slow), attack)
    stop.set()
    await watcher
    return {"stats": stats, "slow": slow, "hostile": out, "peak": peak[0], "cut_off": cut_off or [0.0],
            "seconds": time.perf_counter() - start}


def report(args: argparse.Namespace, result: dict[str, Any], before: tuple[int, int],
           after: tuple[int, int], replayed: tuple[int, int], log_text: str) -> int:
    """Print what happened; 1 when any requirement failed."""
    stats, slow, out = result["stats"], result["slow"], result["hostile"]
    times = sorted(stats.times + slow.times)
    five = sum(n for s, n in (stats.statuses + slow.statuses).items() if s >= 500)
    stalled = sum(t > args.stall for t in times)
    p = lambda q: times[min(len(times) - 1, int(q * len(times)))] * 1000  # noqa: E731
    mib = lambda b: f"{b / 2**20:.1f} MiB"  # noqa: E731
    gone = log_text.count("left before sending the whole body")
    cut_limit = args.header_seconds + 3
    print(f"{len(stats.ids)} of {args.games} games played by {args.clients} concurrent clients (a move "
          f"every {args.think:g} s on average, as a person clicks) in "
          f"{result['seconds']:.0f} s ({len(times)} requests; answers p50 {p(.5):.0f} ms, "
          f"p99 {p(.99):.0f} ms, max {times[-1] * 1000:.0f} ms; {stalled} over {args.stall:g} s; "
          f"{five} 5xx; {len(stats.errors)} errors)")
    print(f"slow agent ({args.slow_seconds:g} s a move): {len(slow.times)} requests, {slow.busy} answered "
          f"'busy' (202/409), max answer {max(slow.times) * 1000:.0f} ms, {len(slow.errors)} errors")
    refused: Counter[int] = out.get("statuses", Counter())
    hostile_ok = "error" not in out and sum(refused.values()) == args.hostile
    print(f"{sum(refused.values())} of {args.hostile} hostile requests refused with 4xx and no change; "
          "statuses: " + ", ".join(f"{s}: {n}" for s, n in sorted(refused.items())))
    print(f"{len(result['cut_off'])} half-sent request lines cut off after at most "
          f"{max(result['cut_off']):.1f} s; {gone} of {args.gone} mid-body disconnects logged in one line; "
          f"tracebacks in the server log: {log_text.count('Traceback')}")
    print(f"server memory (RSS) {mib(before[0])} before, {mib(after[0])} after; record dir {mib(before[1])} "
          f"before, {mib(after[1])} after, peak {mib(result['peak'])} (cap {args.max_disk_mb:g} MiB)")
    print(f"{replayed[0]} record files left in the record dir replay, {replayed[1]} do not")
    print(f"CPU: server {result['cpu'][0]:.0f} s ({result['cpu'][0] / len(times) * 1000:.1f} ms a request), "
          f"clients {result['cpu'][1]:.0f} s; load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores")
    for line in (stats.errors + slow.errors)[:10]:
        print(f"  error: {line}", file=sys.stderr)
    if "error" in out:
        print(f"  {out['error']}", file=sys.stderr)
    failed = (five or stalled or stats.errors or slow.errors or not hostile_ok or len(stats.ids) != args.games
              or max(result["cut_off"]) > cut_limit or gone != args.gone or "Traceback" in log_text
              or result["peak"] > args.max_disk_mb * 2**20 * 1.05 or replayed[1])
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--hostile", type=int, default=500)
    parser.add_argument("--slowloris", type=int, default=20, help="connections that send half a request line")
    parser.add_argument("--gone", type=int, default=10, help="clients that leave mid-body")
    parser.add_argument("--rules", default="classic_2p")
    parser.add_argument("--opponent", default="random")
    parser.add_argument("--slow-seconds", type=float, default=3.0, help="the slow agent's time a move")
    parser.add_argument("--stall", type=float, default=2.0, help="an answer slower than this is a stall")
    parser.add_argument("--ramp", type=float, default=5.0, help="seconds over which the clients arrive")
    parser.add_argument("--think", type=float, default=1.0,
                        help="a client's pause before each move, on average (0: as fast as it can)")
    parser.add_argument("--max-disk-mb", type=float, default=16.0)
    parser.add_argument("--header-seconds", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--record-dir", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        return serve(args)
    import psutil

    with tempfile.TemporaryDirectory() as tmp:
        record_dir, log_path = Path(tmp) / "records", Path(tmp) / "serve.log"
        with open(log_path, "w") as log:
            proc, url = start_server(args, record_dir, log)
            try:
                server, me = psutil.Process(proc.pid), psutil.Process()
                before = (server.memory_info().rss, disk(record_dir))
                cpu = (sum(server.cpu_times()[:2]), sum(me.cpu_times()[:2]))
                result = asyncio.run(soak(url, args, record_dir))
                after = (server.memory_info().rss, disk(record_dir))
                result["cpu"] = (sum(server.cpu_times()[:2]) - cpu[0], sum(me.cpu_times()[:2]) - cpu[1])
            finally:
                proc.terminate()
                proc.wait(timeout=30)
        log_text = log_path.read_text()
        status = report(args, result, before, after, records_replay(record_dir), log_text)
        if status:
            print("server log (last 20 lines):\n" + "\n".join(log_text.splitlines()[-20:]), file=sys.stderr)
        return status


if __name__ == "__main__":
    sys.exit(main())
