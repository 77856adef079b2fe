"""Golden playthroughs and perft counts: rule drift shows up as a diff against committed files.

Regenerate with ``python scripts/make_golden.py`` after an intended change, and review the diff.
"""

from __future__ import annotations

import json

import pytest

from canasta_env.testing import golden_playthrough
from scripts.make_golden import GOLDEN, PERFT_DEPTH, PRESETS, perft_table


@pytest.mark.parametrize("preset", PRESETS)
def test_golden_playthrough(preset: str) -> None:
    expected = (GOLDEN / f"{preset}_playthrough.txt").read_text()
    assert golden_playthrough(preset) == expected


@pytest.mark.parametrize("preset", PRESETS)
def test_perft_counts(preset: str) -> None:
    expected = json.loads((GOLDEN / f"{preset}_perft.json").read_text())
    got = perft_table(preset)
    assert got == expected
    assert all(len(v) == PERFT_DEPTH for v in got.values())
