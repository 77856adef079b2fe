"""The page's files keep to what the Content-Security-Policy and the one escaping path need: markup
enters the DOM only through ``Cards.setHtml`` (the one ``innerHTML``), nothing evaluates text as
code, and the HTML has no inline script, handler or style for the policy to block."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

STATIC = Path(__file__).resolve().parents[2] / "train" / "web" / "static"
SCRIPTS = sorted(STATIC.glob("*.js"))
PAGES = sorted(STATIC.glob("*.html"))


def test_markup_enters_the_page_through_set_html_alone() -> None:
    uses = {p.name: len(re.findall(r"\.innerHTML\s*=", p.read_text())) for p in SCRIPTS}
    assert uses == {p.name: (1 if p.name == "cards.js" else 0) for p in SCRIPTS}


@pytest.mark.parametrize("pattern", [r"insertAdjacentHTML", r"outerHTML", r"document\.write", r"\beval\(",
                                     r"new Function", r"setTimeout\(\s*[\"'`]", r"javascript:",
                                     r"\.srcdoc", r"createContextualFragment"])
def test_no_script_evaluates_text_as_code_or_markup(pattern: str) -> None:
    for path in SCRIPTS:
        assert not re.search(pattern, path.read_text()), (path.name, pattern)


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_the_pages_have_no_inline_script_handler_or_style(page: Path) -> None:
    html = page.read_text()
    scripts = re.findall(r"<script\b([^>]*)>(.*?)</script>", html, re.DOTALL)
    assert scripts and all(re.fullmatch(r' src="/static/\w+\.js"', attrs) and not code.strip()
                           for attrs, code in scripts), scripts  # the page's own files, no inline code
    assert not re.search(r"\son[a-z]+\s*=", html, re.IGNORECASE)
    assert not re.search(r"\sstyle\s*=", html, re.IGNORECASE)
