"""scripts/learning_ablation.py: every variant changes options the trainer has, and the discards
variant trains on a rules file that is the same table with ``observe_discards`` on."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from canasta_env.rules import load_rules
from scripts.learning_ablation import VARIANTS, rules_with_discards
from train.learning.config import TrainArgs


def test_every_variant_changes_options_of_the_trainer() -> None:
    fields = {f.name for f in dataclasses.fields(TrainArgs)}
    for name, (_, overrides) in VARIANTS.items():
        assert set(overrides) - {"observe_discards"} <= fields, name


def test_the_discards_rules_are_the_table_with_the_option(tmp_path: Path) -> None:
    path = rules_with_discards("classic_4p", tmp_path)
    got, plain = load_rules(str(path)), load_rules("classic_4p")
    assert got.observe_discards and got.name == "classic_4p_discards"
    assert dataclasses.replace(got, observe_discards=False, name=plain.name) == plain
