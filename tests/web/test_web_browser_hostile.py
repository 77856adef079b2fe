"""Hostile strings in headless Chromium: markup planted in a saved game's move log, in an uploaded
record's seat (agent) labels and rules name, and fed straight to the page's drawing functions
(with malformed log entries). None of it runs: a ``window.__pwned`` flag the payloads would set
stays undefined, the text appears literally, no element is made from it, and no inline script is
even attempted (no Content-Security-Policy violation). Checked twice: with the server's CSP, and
with the CSP bypassed (the page's escaping alone). Every answer carries the CSP header.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from web_drill import play_random_game

from scripts.web_local import CHROMIUM, CHROMIUM_ARGS
from train.web.middleware import CSP

PAYLOADS = ['<img src=x onerror="window.__pwned=1">', "<script>window.__pwned=2</script>",
            '"><svg onload="window.__pwned=3">', "'><img src=y onerror=window.__pwned=4>"]
INJECTED = "img, script, svg[onload], iframe"  # elements a payload would make
WATCH = """window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) => window.__violations.push(e.violatedDirective));"""
MALFORMED = [{"seat": PAYLOADS[0], "who": PAYLOADS[1], "text": PAYLOADS[2], "top": "zzz"},
             {"seat": 1, "who": {"x": 1}, "text": None, "top": [[1, 2], [None], "x", [PAYLOADS[3], "50"]]},
             {"seat": 0, "who": "you", "text": "drew", "drew": 5},
             {"seat": -1, "text": PAYLOADS[0], "top": 7},
             None, "just text", 42, {"top": [["DRAW_STOCK", float("inf")]]}]


def _plant_in_saved_game(url: str, record_dir: Path) -> str:
    """A game whose saved move log names the payloads as movers and moves (valid types: the server
    restores it), pushed out of the server's memory so the page's request reads the file."""
    with httpx.Client(base_url=url, timeout=30) as api:
        view = api.post("/api/games", json={"seed": 4}).json()
        for _ in range(3):
            move = {"seat": 0, "action": view["legal"][-1]["id"], "version": view["version"]}
            view = api.post(f"/api/games/{view['id']}/actions", json=move).json()
        api.post("/api/games", json={"seed": 5})  # --max-games 1: the first is now only on disk
    path = record_dir / "games" / f"{view['id']}.json"
    data = json.loads(path.read_text())
    for k, entry in enumerate(data["log"]):
        entry["who"], entry["text"] = PAYLOADS[k % 4], PAYLOADS[(k + 1) % 4]
    path.write_text(json.dumps(data))
    return str(view["id"])


def _hostile_record(url: str, record_dir: Path) -> bytes:
    """A played hand's record with the payloads as its seat labels and rules name."""
    with httpx.Client(base_url=url, timeout=30) as api:
        view = play_random_game(api, random.Random(6), seed=6)
    record = json.loads((record_dir / f"{view['id']}.jsonl").read_text())
    record["seats"] = PAYLOADS[:2]
    record["rules"]["name"] = record["preset"] = PAYLOADS[2]
    return (json.dumps(record) + "\n").encode()


def _nothing_ran(page: Any, where: str) -> str:
    """The text of ``where``: no payload ran, made an element or tried an inline script."""
    assert page.evaluate("window.__pwned") is None
    assert page.locator(f"{where} :is({INJECTED})").count() == 0, page.inner_html(where)[:500]
    assert page.evaluate("window.__violations") == []
    return str(page.inner_text(where))


def _check_table(page: Any, url: str, game_id: str) -> None:
    page.goto(f"{url}/#game={game_id}")
    page.wait_for_selector("#log li")
    log = _nothing_ran(page, "#log")
    assert PAYLOADS[0] in log and PAYLOADS[1] in log  # drawn literally, as text
    assert page.locator("#hand .card").count() > 0  # the rest of the table is drawn


def _check_replay(page: Any, url: str, record: bytes) -> None:
    page.goto(f"{url}/replay")
    page.set_input_files("#upload", files=[{"name": "hostile.jsonl", "mimeType": "application/x-ndjson",
                                            "buffer": record}])
    page.wait_for_selector("#moves li")
    assert PAYLOADS[0] in _nothing_ran(page, "#moves") and PAYLOADS[1] in _nothing_ran(page, "#seats")
    assert PAYLOADS[2] in page.inner_text("#replay-info")
    options = page.locator("#hand-select option").all_inner_texts()
    assert any(PAYLOADS[0] in o and PAYLOADS[2] in o for o in options), options
    page.click("#next")
    assert PAYLOADS[0] in _nothing_ran(page, "#move-now") or PAYLOADS[1] in page.inner_text("#move-now")


def _check_drawing_functions(page: Any) -> None:
    """Malformed log entries and a hostile agent label fed to the page's own drawing functions:
    each entry is drawn as far as it can be (a line each, the log never blank), none runs."""
    drawn = page.evaluate("""(entries) => {
        const box = document.createElement("ul");
        document.body.appendChild(box);
        window.Cards.setHtml(box, window.Cards.html`${entries.map(window.Render.logLine)}`);
        const seats = document.createElement("div");
        document.body.appendChild(seats);
        const view = {num_sides: 2, players: [{seat: 0, label: "you"},
                      {seat: 1, label: entries[0].seat, cards: "9", known: "x", reserve: {size: "<b>"}}]};
        window.Cards.setHtml(seats, window.Render.seatsHtml(view, 0));
        box.id = "drawn-log"; seats.id = "drawn-seats";
        return {lines: box.querySelectorAll("li").length, text: box.innerText, seat: seats.innerText};
    }""", MALFORMED)
    assert drawn["lines"] == len(MALFORMED)
    assert PAYLOADS[1] in drawn["text"] and PAYLOADS[2] in drawn["text"] and PAYLOADS[0] in drawn["seat"]
    _nothing_ran(page, "#drawn-log")
    _nothing_ran(page, "#drawn-seats")


def test_hostile_strings_are_drawn_as_text_and_never_run(
        serve: Callable[..., tuple[str, Path, Path]]) -> None:
    from playwright.sync_api import sync_playwright

    url, record_dir, _ = serve("--opponent", "random", "--max-games", "1")
    game_id = _plant_in_saved_game(url, record_dir)
    record = _hostile_record(url, record_dir)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for bypass_csp in (False, True):  # with the CSP, then the escaping alone
                context = browser.new_context(bypass_csp=bypass_csp)
                context.add_init_script(WATCH)
                page = context.new_page()
                errors: list[str] = []
                page.on("pageerror", lambda exc, errors=errors: errors.append(str(exc)))
                headers: list[tuple[str, dict[str, str]]] = []
                page.on("response", lambda r, headers=headers: headers.append((r.url, r.headers)))
                _check_table(page, url, game_id)
                _check_drawing_functions(page)
                _check_replay(page, url, record)
                assert not errors, errors
                assert len(headers) >= 8
                for where, got in headers:
                    assert got.get("content-security-policy") == CSP, where
                    assert got.get("x-content-type-options") == "nosniff", where
                context.close()
        finally:
            browser.close()
