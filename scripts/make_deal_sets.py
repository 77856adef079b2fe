"""Write the shipped evaluation deal sets: ``python scripts/make_deal_sets.py [--count 10000]``.

Writes a set for each classic table size and each Railroad and Pennies preset that has none of this
version yet; presets with the same deck and table size (the Regal ones) use these
(``load_deal_set``). The variants' sets hold 2,000 deals (4,000 duplicate hands a match): their
decks are two to four times classic's and their hands several times longer. A shipped set is never regenerated
in place: a changed set gets a new version (``v2``), so results that name ``v1`` stay comparable.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from canasta_env.deal_sets import make_deal_set, save_deal_set

SEED = 20261130  # names the v1 sets: deal i is DealId(SEED, i, 0) under the engine that wrote them
PRESETS = ("classic_2p", "classic_3p", "classic_4p")
VARIANTS = ("railroad_2p", "railroad_4p", "pennies_4p", "pennies_6p")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--variant-count", type=int, default=2_000)
    parser.add_argument("--version", default="v1")
    parser.add_argument("--out", default=str(Path(__file__).parents[1] / "canasta_env" / "deal_sets"))
    args = parser.parse_args()
    for preset in PRESETS + VARIANTS:
        count = args.count if preset in PRESETS else args.variant_count
        path = Path(args.out) / f"{preset}-{args.version}.npz"
        if path.exists():
            print(f"{path} exists: kept (shipped sets are immutable; a change is a new --version)")
            continue
        deal_set = make_deal_set(preset, count, SEED, args.version)
        save_deal_set(deal_set, path)
        print(f"{path}: {len(deal_set)} deals, sha256 {deal_set.sha256[:16]}...")


if __name__ == "__main__":
    main()
