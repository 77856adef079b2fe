"""The Python examples of README.md and docs/*.md run as written.

Every ```python block runs on its own, in a fresh namespace, with a temporary working directory that
holds the ``my_rules.yaml`` the rules examples load (the YAML example of docs/rules.md when there is
one). Keep the examples fast (seconds each) and self-contained: a reader copies them as they are.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCUMENTS = [README, *sorted((ROOT / "docs").glob("*.md"))]
PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", flags=re.S)
YAML_BLOCK = re.compile(r"```yaml\n(# my_rules\.yaml\n.*?)```", flags=re.S)
FALLBACK_RULES = "name: quick_4p\nnum_players: 4\ntarget_score: 3000\n"


def _blocks() -> list[object]:
    params = []
    for doc in DOCUMENTS:
        name = doc.relative_to(ROOT).as_posix()
        for i, code in enumerate(PYTHON_BLOCK.findall(doc.read_text(encoding="utf-8"))):
            params.append(pytest.param(name, code, id=f"{name}:block{i}"))
    return params


def _my_rules() -> str:
    found = YAML_BLOCK.findall((ROOT / "docs" / "rules.md").read_text(encoding="utf-8"))
    return found[0] if found else FALLBACK_RULES


def test_readme_shows_the_engine_and_an_env() -> None:
    blocks = PYTHON_BLOCK.findall(README.read_text(encoding="utf-8"))
    assert any("from canasta_env.engine import" in b for b in blocks), "the engine example is missing"
    assert any("MaskablePPO" in b and "gymnasium.make(" in b for b in blocks), "the SB3 example is missing"


@pytest.mark.parametrize(("name", "code"), _blocks())
def test_python_block_runs(name: str, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_rules.yaml").write_text(_my_rules())
    exec(compile(code, name, "exec"), {"__name__": "__doc_example__"})
