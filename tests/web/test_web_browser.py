"""End to end: a real ``canasta serve`` (uvicorn on a free localhost port) driven by headless
Chromium (Playwright, the system's /usr/bin/chromium, installed by .ci/run) through a whole hand:
open the page, draw by clicking the stock, meld and discard by clicking cards, reload the page,
play to the end of the hand, then open its replay and step forward, back and jump to a turn.

To reach the end quickly the human then clicks the first move of the page's "All legal moves" list
each turn; every move is still a click in the real page. A missing Chromium fails the test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from canasta_env.records import read_records, replay
from scripts.web_local import CHROMIUM, CHROMIUM_ARGS


def _seed_with_a_meld_after_the_draw(url: str) -> int:
    """A deal where the human can meld right after drawing (so the test melds by clicking)."""
    with httpx.Client(base_url=url, timeout=30) as api:
        for seed in range(100):
            view = api.post("/api/games", json={"seed": seed}).json()
            names = {m["name"]: m["id"] for m in view["legal"]}
            if "DRAW_STOCK" not in names:
                continue
            draw = {"seat": 0, "action": names["DRAW_STOCK"], "version": view["version"]}
            view = api.post(f"/api/games/{view['id']}/actions", json=draw).json()
            if any(m["name"].startswith("MELD_") for m in view["legal"]):
                return seed
    raise AssertionError("no deal in 100 lets the human meld after the first draw")


def _click_and_wait(page: Any, selector: str) -> None:
    """Click (a move) and wait until the page shows the table's next version."""
    version = page.evaluate("document.body.dataset.version")
    page.click(selector)
    # a function, not an expression: Playwright evaluates an expression string with eval(), which
    # the page's Content-Security-Policy forbids
    page.wait_for_function(f"() => document.body.dataset.version !== '{version}' "
                           "&& !document.body.dataset.busy")


def _no_error(page: Any) -> None:
    assert page.locator("#error").is_hidden(), page.inner_text("#error")


def _replay_forward_back_and_jump(page: Any) -> int:
    """The replay of the hand just finished: forward, back, jump; returns its number of steps."""
    page.click("#replay-hand")
    page.wait_for_function("() => document.body.dataset.steps !== undefined")
    steps = int(page.evaluate("document.body.dataset.steps"))
    first = page.inner_text("#move-now")
    for _ in range(3):
        page.click("#next")
    assert page.evaluate("document.body.dataset.step") == "3"
    page.click("#prev")
    assert page.evaluate("document.body.dataset.step") == "2"
    page.click("#first")
    assert page.inner_text("#move-now") == first
    page.fill("#step-input", str(steps))
    page.click("#jump")
    assert page.evaluate("document.body.dataset.step") == str(steps)
    assert "End of the hand" in page.inner_text("#move-now")
    assert page.locator("#seats .seat").count() == 2  # omniscient: both hands shown
    assert page.locator("#seats .seat .fan.open").count() == 2
    page.keyboard.press("ArrowLeft")
    assert page.evaluate("document.body.dataset.step") == str(steps - 1)
    return steps


def test_a_whole_hand_in_chromium_then_its_replay(server: tuple[str, Path]) -> None:
    from playwright.sync_api import sync_playwright

    url, record_dir = server
    seed = _seed_with_a_meld_after_the_draw(url)
    game = httpx.post(f"{url}/api/games", json={"seed": seed}).json()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(f"{url}/#game={game['id']}")
            page.wait_for_selector("#hand .card")
            assert page.evaluate("window.__table.id") == game["id"]
            cards = page.locator("#hand .card").count()

            # draw: click the stock
            _click_and_wait(page, "#stock.clickable")
            assert page.locator("#hand .card").count() > cards
            assert "you drew" in page.inner_text("#log")

            # meld: click a card of a rank that can be melded, then the meld move it offers
            view = page.evaluate("window.__table")
            meld = next(m for m in view["legal"] if m["name"].startswith("MELD_"))
            kind = meld["cards"][0]
            page.click(f'#hand .card[data-kind="{kind}"] >> nth=0')
            assert page.locator(f'#hand .card.selected[data-kind="{kind}"]').count() >= 1
            _click_and_wait(page, f'#actions button[data-name="{meld["name"]}"]')
            slot = meld["name"].rsplit("_", 1)[1]
            assert page.locator(f'.side-melds[data-side="0"] .meld[data-slot="{slot}"]').count() == 1

            # a reload finds the same game, at the same version
            version = page.evaluate("document.body.dataset.version")
            page.reload()
            page.wait_for_selector("#hand .card")
            assert page.evaluate("document.body.dataset.version") == version

            # discard: click a card, then its discard move (unless the meld ended the turn's choices)
            view = page.evaluate("window.__table")
            discard = next((m for m in view["legal"] if m["name"].startswith("DISCARD_")), None)
            if discard is not None:
                page.click(f'#hand .card[data-kind="{discard["cards"][0]}"] >> nth=0')
                _click_and_wait(page, f'#actions button[data-name="{discard["name"]}"]')
            _no_error(page)

            # to the end of the hand: the first offered move, clicked, every turn
            page.click("#all-moves summary")
            for _ in range(600):
                if page.evaluate("document.body.dataset.over") == "1":
                    break
                _click_and_wait(page, "#legal-list button.first")
            assert page.evaluate("document.body.dataset.over") == "1"
            _no_error(page)
            assert "Hand 1 over" in page.inner_text("#banner")

            steps = _replay_forward_back_and_jump(page)
            _no_error(page)
            assert not errors, errors
        finally:
            browser.close()
    (record,) = read_records(record_dir / f"{game['id']}.jsonl")
    assert len(record.actions) == steps
    replay(record)


def test_the_page_waits_for_a_slow_agent_and_shows_its_moves(serve: Any) -> None:
    """Agents slower than --think-seconds: the server answers 202 "busy", the page asks for the
    table again until the agent has moved, and shows no error meanwhile."""
    from playwright.sync_api import sync_playwright

    url, _, _ = serve("--opponent", "web_drill:SlowAgent", "--think-seconds", "0.2",
                      env={"CANASTA_SLOW_AGENT_SECONDS": "0.4"})
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(url)
            page.wait_for_selector("#hand .card", timeout=60_000)
            page.click("#all-moves summary")
            for _ in range(2):  # each move waits for the agent's reply (202, then the table)
                version = int(page.evaluate("document.body.dataset.version"))
                page.click("#legal-list button.first")
                page.wait_for_function(f"() => Number(document.body.dataset.version) > {version} "
                                       "&& !document.body.dataset.busy", timeout=60_000)
                _no_error(page)
            assert page.locator("#log li").count() >= 2
            assert not errors, errors
        finally:
            browser.close()
