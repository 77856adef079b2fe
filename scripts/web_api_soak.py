"""Soak test of the web table's API: random legal games through HTTP, then hostile requests.

Plays ``--games`` one-hand games (default 1,000) of random legal moves against ``--opponent``
through the Starlette app (TestClient: the whole ASGI stack, no socket), requiring a 2xx for every
request, then checks that every hand was recorded and replays; then fires ``--hostile`` tampered
requests (default 200: illegal, out-of-range and mistyped actions, wrong seat, stale versions,
unknown and malformed game ids, oversized and malformed bodies, wrong methods and content types,
bad record names and uploads) at a game in progress, requiring a 4xx JSON error and no change of
the game or any saved file after each.

    python scripts/web_api_soak.py                      # 1,000 games, 200 hostile requests
    python scripts/web_api_soak.py --games 50 --rules classic_4p
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "web"))

from web_drill import hostile_requests, play_random_game  # noqa: E402

from canasta_env.records import read_records, replay  # noqa: E402
from canasta_env.rules import load_rules  # noqa: E402
from train.web.app import create_app  # noqa: E402
from train.web.game import AgentPool, GameStore  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=1000)
    parser.add_argument("--hostile", type=int, default=200)
    parser.add_argument("--rules", default="classic_2p")
    parser.add_argument("--opponent", default="random")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient

    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        record_dir = Path(tmp)
        store = GameStore(AgentPool(load_rules(args.rules)), record_dir, opponents=[args.opponent],
                          partner=None, hands=1)
        with TestClient(create_app(store)) as client:
            start = time.perf_counter()
            moves = errors = 0
            ids = []
            for g in range(args.games):
                try:
                    view = play_random_game(client, rng, seed=args.seed * 100_003 + g,
                                            seat=g % store.pool.rules.num_players)
                except AssertionError as exc:
                    errors += 1
                    print(f"game {g}: {exc}", file=sys.stderr)
                    continue
                ids.append(view["id"])
                moves += view["version"]
            played = time.perf_counter() - start
            bad_records = 0
            for game_id in ids:
                try:
                    (record,) = read_records(record_dir / f"{game_id}.jsonl")
                    replay(record)
                except Exception as exc:  # report every failure, then fail
                    bad_records += 1
                    print(f"record {game_id}: {exc}", file=sys.stderr)
            print(f"{len(ids)} of {args.games} games ({args.rules} vs {args.opponent}) played through "
                  f"HTTP ({moves} decisions, human and agent) in {played:.1f} s, {errors} errors; "
                  f"{len(ids) - bad_records} records replay, {bad_records} do not")

            view = client.post("/api/games", json={"seed": 1}).json()
            statuses: Counter[int] = Counter()
            kinds: Counter[str] = Counter()
            hostile_errors = 0
            try:
                for kind, status in hostile_requests(client, view, record_dir / "games", args.hostile, rng):
                    statuses[status] += 1
                    kinds[kind] += 1
            except AssertionError as exc:
                hostile_errors += 1
                print(f"hostile request accepted or changed the game: {exc}", file=sys.stderr)
            print(f"{sum(statuses.values())} of {args.hostile} hostile requests refused with 4xx and no "
                  f"state change ({len(kinds)} kinds); statuses: "
                  + ", ".join(f"{s}: {n}" for s, n in sorted(statuses.items())))
    failed = errors or bad_records or hostile_errors or sum(statuses.values()) != args.hostile
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
