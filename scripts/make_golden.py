"""Regenerate the golden playthroughs and perft counts in tests/engine/golden/.

Run after an intended rules change and review the diff:  python scripts/make_golden.py
"""

from __future__ import annotations

import json
from pathlib import Path

from canasta_env.engine import DealId
from canasta_env.rules import preset_names
from canasta_env.testing import golden_playthrough, perft

GOLDEN = Path(__file__).resolve().parent.parent / "tests" / "engine" / "golden"
PRESETS = tuple(preset_names())  # every shipped preset, variants included
PERFT_DEALS = [DealId(1000 + i, 0, 0) for i in range(10)]
PERFT_DEPTH = 3


def perft_table(preset: str) -> dict[str, list[int]]:
    return {str(tuple(d)): perft(preset, d, PERFT_DEPTH) for d in PERFT_DEALS}


def main() -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for preset in PRESETS:
        (GOLDEN / f"{preset}_playthrough.txt").write_text(golden_playthrough(preset))
        table = perft_table(preset)
        text = "{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}" for k, v in table.items())
        (GOLDEN / f"{preset}_perft.json").write_text(text + "\n}\n")
        print("wrote", preset)


if __name__ == "__main__":
    main()
