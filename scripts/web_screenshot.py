"""Take the README's screenshot of the web table (docs/img/web_table.png) with headless Chromium.

Starts ``canasta serve`` on a free localhost port, plays the human seat through the page (melds and
takes first, then draws, then the discard of the rarest card, each a click on the page's list of
legal moves) until both sides have melds, selects a card of the hand so the moves it offers show,
and saves the page. Needs the system Chromium (/usr/bin/chromium) and the ``web`` extra.

    python scripts/web_screenshot.py --out docs/img/web_table.png
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from scripts.web_local import CHROMIUM, CHROMIUM_ARGS, free_port

REPO = Path(__file__).resolve().parents[1]


def choose(view: dict[str, Any]) -> int:
    """A plain human's move: take or meld when possible, else draw, else discard the rarest card."""
    legal = view["legal"]
    for prefix in ("TAKE_PILE", "MELD_", "ADD_NATURAL", "DRAW_STOCK"):
        moves = [m for m in legal if m["name"].startswith(prefix)]
        if moves:
            return int(moves[0]["id"])
    hand = Counter(view["players"][view["seat"]]["hand"])
    discards = [m for m in legal if m["name"].startswith("DISCARD_") and m["cards"][0] not in ("JK", "2")]
    if discards:
        return int(min(discards, key=lambda m: hand[m["cards"][0]])["id"])
    return int(legal[0]["id"])


def melds_on_both_sides(view: dict[str, Any]) -> bool:
    return all(sum(len(o["melds"]) for o in s["melds"]) >= 2 for s in view["sides"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "docs" / "img" / "web_table.png"))
    parser.add_argument("--opponent", default="zoo:classic_2p")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen([sys.executable, "-m", "train.cli", "serve", "--opponent", args.opponent,
                                 "--show-policy", "--port", str(port), "--record-dir", tmp], cwd=REPO)
        try:
            for _ in range(600):
                try:
                    if httpx.get(f"{url}/api/config", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.2)
            game = httpx.post(f"{url}/api/games", json={"seed": args.seed}, timeout=60).json()
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                page.goto(f"{url}/#game={game['id']}")
                page.wait_for_selector("#hand .card")
                page.click("#all-moves summary")
                for _ in range(400):
                    view = page.evaluate("window.__table")
                    if view["game_over"] or view["hands_done"]:
                        raise SystemExit("the hand ended before both sides melded: try another --seed")
                    if melds_on_both_sides(view) and view["phase"] == "meld" and len(view["legal"]) > 1:
                        break
                    version = view["version"]
                    page.click(f'#legal-list button[data-action="{choose(view)}"]')
                    page.wait_for_function(f"document.body.dataset.version !== '{version}' "
                                           "&& !document.body.dataset.busy")
                page.click("#all-moves summary")  # fold the fallback list again
                uses = Counter(k for m in view["legal"] for k in set(m["cards"]))
                kind = max(view["players"][view["seat"]]["hand"], key=lambda k: uses[k])  # most moves
                page.click(f'#hand .card[data-kind="{kind}"] >> nth=0')
                page.mouse.move(0, 0)
                Path(args.out).parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=args.out)
                browser.close()
        finally:
            proc.terminate()
            proc.wait()
    print(f"saved {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
