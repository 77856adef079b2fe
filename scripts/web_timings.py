"""Time the web table: how soon ``canasta serve`` answers, and how soon an agent's move appears.

For each ``--opponent`` it starts ``canasta serve`` on a free localhost port ``--starts`` times and
times, from the process start, the first answer of ``/api/config`` and of a new game (run it once
before, or keep the first start out, for a warm numba cache). Then it plays ``--moves`` random legal
human moves through HTTP (httpx against the real uvicorn server) and times each move's answer,
which holds the agents' replies up to the human's next turn, and, in this process, each decision of
the agent alone (observe, act, step: the part of an answer the agent's choice adds).

    python scripts/web_timings.py --opponent heuristic zoo:classic_2p
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from scripts.web_local import free_port

REPO = Path(__file__).resolve().parents[1]


def start_server(opponent: str, record_dir: str) -> tuple[subprocess.Popen[bytes], str, float, float]:
    """(process, URL, seconds to the first /api/config answer, seconds to the first new game)."""
    port = free_port()
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "train.cli", "serve", "--opponent", opponent, "--port",
                             str(port), "--record-dir", record_dir], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    while True:
        try:
            if httpx.get(f"{url}/api/config", timeout=5).status_code == 200:
                break
        except httpx.TransportError:
            if proc.poll() is not None:
                why = f"canasta serve --opponent {opponent} exited with {proc.returncode}"
                raise SystemExit(why) from None
            time.sleep(0.02)
    ready = time.perf_counter() - start
    httpx.post(f"{url}/api/games", json={"seed": 0}, timeout=60).raise_for_status()
    return proc, url, ready, time.perf_counter() - start


def agent_decisions(opponent: str, count: int) -> list[float]:
    """Seconds per agent decision (observe + act + step) in games against ``opponent``."""
    import numpy as np

    from canasta_env.engine import init, observe, step_one
    from canasta_env.rules import load_rules
    from train.web.game import AgentPool

    pool = AgentPool(load_rules("classic_2p"))
    agent = pool.get(opponent)
    rng = np.random.default_rng(0)
    times: list[float] = []
    seed = 0
    while len(times) < count:
        state = init(pool.rules, 1, seed, episode="hand")
        seed += 1
        while not state.terminated[0] and len(times) < count:
            t = time.perf_counter()
            seat = int(state.current_player[0])
            action = int(agent.act(observe(state, [seat]), state.legal_action_mask.copy(), rng)[0])
            step_one(state, action)
            times.append(time.perf_counter() - t)
    return times


def pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--opponent", nargs="+", default=["heuristic", "zoo:classic_2p"])
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--moves", type=int, default=200)
    args = parser.parse_args(argv)
    rng = random.Random(0)
    for opponent in args.opponent:
        with tempfile.TemporaryDirectory() as tmp:
            readies, games = [], []
            for i in range(args.starts):
                proc, url, ready, game = start_server(opponent, tmp)
                readies.append(ready)
                games.append(game)
                if i + 1 < args.starts:
                    proc.terminate()
                    proc.wait()
            latencies, replies = [], []
            try:
                with httpx.Client(base_url=url, timeout=60) as api:
                    view = api.post("/api/games", json={"seed": 1}).json()
                    while len(latencies) < args.moves:
                        if view["game_over"]:
                            view = api.post("/api/games", json={}).json()
                        move = rng.choice(view["legal"])["id"]
                        t = time.perf_counter()
                        r = api.post(f"/api/games/{view['id']}/actions",
                                     json={"seat": 0, "action": move, "version": view["version"]})
                        latencies.append(time.perf_counter() - t)
                        r.raise_for_status()
                        replies.append(r.json()["version"] - view["version"] - 1)
                        view = r.json()
            finally:
                proc.terminate()
                proc.wait()
        decisions = agent_decisions(opponent, args.moves)
        with_agent = [lat for lat, n in zip(latencies, replies, strict=True) if n > 0]
        print(f"{opponent}: canasta serve answers in {statistics.median(readies):.2f} s (median of "
              f"{args.starts} starts: {', '.join(f'{x:.2f}' for x in readies)}), first game in "
              f"{statistics.median(games):.2f} s")
        print(f"{opponent}: move answered in p50 {1e3 * statistics.median(latencies):.1f} ms, p95 "
              f"{1e3 * pct(latencies, 0.95):.1f} ms, max {1e3 * max(latencies):.1f} ms over {len(latencies)} "
              f"moves; with the agent's reply ({len(with_agent)} moves, {sum(replies)} agent decisions): "
              f"p50 {1e3 * statistics.median(with_agent):.1f} ms, p95 {1e3 * pct(with_agent, 0.95):.1f} ms, "
              f"max {1e3 * max(with_agent):.1f} ms")
        print(f"{opponent}: one agent decision (observe, act, step) p50 "
              f"{1e3 * statistics.median(decisions):.2f} ms, p95 {1e3 * pct(decisions, 0.95):.2f} ms, "
              f"max {1e3 * max(decisions):.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
