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


def test_a_widened_start_plays_as_the_net_it_widens_whatever_the_discards(tmp_path: Path) -> None:
    """Zero columns for the ``discards`` piece: the same choices as zoo:classic_2p, even mid-hand
    where the piece is not zero (its twin: the original net on the plain observation)."""
    import numpy as np

    from agents import make_agent
    from canasta_env.engine import init, observe, step
    from canasta_env.testing import keyed_actions
    from scripts.learning_ablation import widened_init

    rules = load_rules(str(rules_with_discards("classic_2p", tmp_path)))
    widened = make_agent(str(widened_init("zoo:classic_2p", tmp_path / "classic_2p_discards.yaml", tmp_path)),
                         rules)
    original = make_agent("zoo:classic_2p", "classic_2p")
    with_discards, plain = init(rules, 32, 5), init("classic_2p", 32, 5)
    for decision in range(40):  # the same deals and moves: both tables stay alike
        acts = keyed_actions(plain.data, plain.legal_action_mask, decision, False)
        step(with_discards, acts)
        step(plain, acts)
    wide_obs = observe(with_discards, with_discards.current_player)
    plain_obs = observe(plain, plain.current_player)
    assert wide_obs[:, plain_obs.shape[1]:].any()  # discards were seen
    np.testing.assert_array_equal(wide_obs[:, :plain_obs.shape[1]], plain_obs)
    got = widened.act(wide_obs, with_discards.legal_action_mask, np.random.default_rng(0))
    want = original.act(plain_obs, plain.legal_action_mask, np.random.default_rng(0))
    np.testing.assert_array_equal(got, want)
