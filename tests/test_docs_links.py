"""The documents hold together: every relative link of README.md, CHANGELOG.md, agents/zoo/README.md
and docs/*.md resolves to a file of the repository (and, into a Markdown file, to one of its
headings), nothing links outside the repository except to public websites (never into the shared
folder beside a checkout),
every docs/ page and every image of docs/img/ is linked, and the README stays short.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
README_MAX_LINES = 220
DOCUMENTS = [README, ROOT / "CHANGELOG.md", ROOT / "agents" / "zoo" / "README.md",
             *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$", flags=re.S | re.M)
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", flags=re.S)
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", flags=re.M)
HTML_LINK = re.compile(r"<(?:a|img)\b[^>]*?\b(?:href|src)=\"([^\"]*)\"", flags=re.I)
HTML_ANCHOR = re.compile(r"<a\b[^>]*?\b(?:id|name)=\"([^\"]+)\"", flags=re.I)
HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", flags=re.M)
SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")
PUBLIC_SCHEMES = {"http", "https", "mailto"}
# spelled in two parts so that this file does not itself point outside (tests/test_rule_ids.py)
OUTSIDE_SHARED = "../" + "shared"
SHARED = re.compile(re.escape(OUTSIDE_SHARED) + r"\b")


def strip_code(text: str) -> str:
    """The text without fenced code blocks and inline code spans (links there are examples, not links)."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def link_targets(text: str) -> list[str]:
    """Every link and image target of a Markdown text: inline, reference-style and HTML."""
    prose = strip_code(text)
    return [t for pattern in (INLINE_LINK, REFERENCE_LINK, HTML_LINK) for t in pattern.findall(prose)]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: the rendered text, lower case, punctuation dropped, spaces to -."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text stays
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchors a Markdown text defines: its headings (duplicates numbered -1, -2, ...) and <a id>."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for heading in HEADING.findall(FENCE.sub("", text)):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found | set(HTML_ANCHOR.findall(text))


def check_document(path: Path, text: str, root: Path = ROOT) -> list[str]:
    """What is wrong with the links of one document, one line per problem (empty: nothing)."""
    problems = []
    if SHARED.search(text):
        problems.append(f"{path.name}: mentions {OUTSIDE_SHARED}, which is outside the repository")
    for target in link_targets(text):
        where = f"{path.name}: link {target!r}"
        scheme = SCHEME.match(target)
        if scheme:
            if scheme.group(1).lower() not in PUBLIC_SCHEMES:
                problems.append(f"{where} is not a public web address")
            continue
        file_part, _, anchor = target.partition("#")
        if not file_part and not anchor:
            problems.append(f"{where} is empty")
            continue
        if file_part.startswith("/"):
            problems.append(f"{where} is absolute; use a path relative to the document")
            continue
        if not file_part:
            if unquote(anchor).lower() not in anchors(text):
                problems.append(f"{where}: no heading #{anchor} in {path.name}")
            continue
        resolved = (path.parent / unquote(file_part)).resolve()
        if not resolved.is_relative_to(root.resolve()):
            problems.append(f"{where} points outside the repository")
            continue
        if not resolved.exists():
            problems.append(f"{where} names a file that does not exist")
            continue
        if anchor and resolved.suffix == ".md" and resolved.is_file():
            if unquote(anchor).lower() not in anchors(resolved.read_text(encoding="utf-8")):
                problems.append(f"{where}: no heading #{anchor} in {resolved.name}")
    return problems


@pytest.mark.parametrize("doc", DOCUMENTS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_link_resolves_inside_the_repository(doc: Path) -> None:
    assert doc.is_file(), f"{doc.relative_to(ROOT)} is missing"
    assert check_document(doc, doc.read_text(encoding="utf-8")) == []


def _readme_links() -> set[Path]:
    targets = link_targets(README.read_text(encoding="utf-8"))
    return {(ROOT / unquote(t.partition("#")[0])).resolve() for t in targets
            if t.partition("#")[0] and not SCHEME.match(t)}


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = _readme_links()
    missing = [p.name for p in sorted((ROOT / "docs").glob("*.md")) if p.resolve() not in linked]
    assert not missing, f"docs pages the README does not link: {missing}"


def test_every_image_is_shown_somewhere() -> None:
    shown = set()
    for doc in DOCUMENTS:
        for target in link_targets(doc.read_text(encoding="utf-8")):
            if target.partition("#")[0] and not SCHEME.match(target):
                shown.add((doc.parent / unquote(target.partition("#")[0])).resolve())
    images = [p for p in sorted((ROOT / "docs" / "img").iterdir()) if p.is_file()]
    unshown = [p.name for p in images if p.resolve() not in shown]
    assert not unshown, f"images under docs/img/ that no document shows: {unshown}"


def test_readme_is_short() -> None:
    lines = len(README.read_text(encoding="utf-8").splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; keep it at {README_MAX_LINES} or fewer"


# ---- the checks themselves can fail --------------------------------------------------------------


def test_the_checker_catches_broken_and_outside_links(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("# A page\n\n## Known limits\n")
    doc = tmp_path / "README.md"
    text = "\n".join([
        "# Title",
        "[fine](docs/page.md) [fine too](docs/page.md#known-limits) [here](#title) [web](https://example.org)",
        "[gone](docs/missing.md)",
        "[bad anchor](docs/page.md#no-such-heading) [bad here](#no-such-title)",
        f"[shared]({OUTSIDE_SHARED}/notes.md)",
        "[local file](file:///etc/passwd)",
        "![picture](docs/img/missing.png)",
        "`[in code](docs/also-missing.md)`",
        "```\n[in a block](docs/also-missing.md)\n```",
    ])
    problems = check_document(doc, text, root=tmp_path)
    assert len(problems) == 7, problems
    joined = "\n".join(problems)
    for expected in ("docs/missing.md", "no-such-heading", "no-such-title", OUTSIDE_SHARED, "file:///etc/passwd",
                     "docs/img/missing.png"):
        assert expected in joined
    assert "also-missing" not in joined


def test_anchors_follow_github_slugs() -> None:
    text = ("# Rollouts on Ray (`--ray [ADDRESS] --num-workers N`)\n## Engine A/B runs\n"
            "## League with exploiters (`exploiter_every`)\n## Notes\n## Notes\n")
    assert anchors(text) == {"rollouts-on-ray---ray-address---num-workers-n", "engine-ab-runs",
                             "league-with-exploiters-exploiter_every", "notes", "notes-1"}
