"""The rule vocabulary lives in the repository: every rule id that code, tests, configs or docs cite
(C19a, R5, G2, ...) is defined in docs/rules.md, and nothing points at rule texts outside it."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SEARCHED = ("canasta_env", "agents", "train", "tests", "docs", "configs", "notebooks", "scripts", "README.md")
SUFFIXES = {".py", ".md", ".yaml", ".yml", ".ipynb", ".toml"}
DEFINITION = re.compile(r"^ *- \*\*([CGRP]\d{1,2}[a-z]?)\.\*\*", re.MULTILINE)
CITATION = re.compile(r"\b([CGRP]\d{1,2}[a-z]?)\b")
# "P0" is the first seat's label in tables and records (seats P0-P5 share the Pennies ids' spelling,
# but no rule is numbered 0).
NOT_RULES = {"P0", "C64"}  # C64: safetensors' name of complex64


def _files() -> list[Path]:
    """Every searched text file but this one (whose examples are deliberately undefined)."""
    out = []
    for name in SEARCHED:
        path = REPO / name
        found = [path] if path.is_file() else sorted(path.rglob("*")) if path.is_dir() else []
        out += [p for p in found if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts
                and p.resolve() != Path(__file__).resolve()]
    return out


def _defined() -> set[str]:
    return set(DEFINITION.findall((REPO / "docs" / "rules.md").read_text(encoding="utf-8")))


def test_rules_md_defines_each_family() -> None:
    defined = _defined()
    for family, first, last in (("C", 0, 33), ("G", 1, 5), ("R", 1, 8), ("P", 1, 6)):
        assert {f"{family}{n}" for n in range(first, last + 1)} <= defined, family


def test_every_cited_rule_id_is_defined_in_rules_md() -> None:
    defined = _defined()
    undefined: dict[str, list[str]] = {}
    for path in _files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for rule_id in set(CITATION.findall(text)) - defined - NOT_RULES:
            undefined.setdefault(rule_id, []).append(str(path.relative_to(REPO)))
    assert not undefined, f"rule ids cited but not defined in docs/rules.md: {undefined}"


def test_the_citation_check_sees_an_undefined_id() -> None:
    assert set(CITATION.findall("see C31d and (R9), not P0")) - _defined() - NOT_RULES == {"C31d", "R9"}


def test_nothing_points_outside_the_repository() -> None:
    outside = re.compile(r"RULES\.md|DESIGN\.md|STYLE\.md|\.\./shared|shared/seeds")
    hits = [str(p.relative_to(REPO)) for p in _files()
            if outside.search(p.read_text(encoding="utf-8", errors="replace"))]
    assert not hits, f"references to files outside the repository: {hits}"
