"""The ``observe_discards`` option: each seat's discards this hand join the observation (own seat
first), counted from the actions played and cleared when a hand is dealt; without it the observation
is the one every shipped checkpoint was trained on."""

from __future__ import annotations

import numpy as np
import pytest

from canasta_env.engine import init, observe, reset_rows, step
from canasta_env.engine import layout as L
from canasta_env.engine.actions import DISCARD
from canasta_env.engine.cards import NUM_KINDS
from canasta_env.engine.observation import layout_hash, obs_dim, pieces, views
from canasta_env.rules import load_rules
from canasta_env.testing import keyed_actions


@pytest.mark.parametrize("preset", ["classic_2p", "classic_4p", "railroad_2p"])
def test_each_seat_s_discards_this_hand_are_observed_own_seat_first(preset: str) -> None:
    rules = load_rules(preset, observe_discards=True)
    batch, n = 16, rules.num_players
    state = init(rules, batch, 7, episode="game")
    maxk = float(L.deck_counts(state.params).max())
    tally = np.zeros((batch, n, NUM_KINDS), np.int64)
    hand_no = state.data[:, L.F_HAND_NO].copy()
    seen_discards = seen_new_hand = 0
    for decision in range(1500):
        mover = state.data[:, L.F_CUR].copy()
        acts = keyed_actions(state.data, state.legal_action_mask, decision, decision % 2 == 0)
        result = step(state, acts)
        for b in np.flatnonzero((acts >= DISCARD) & (acts < DISCARD + NUM_KINDS)):
            tally[b, mover[b], acts[b] - DISCARD] += 1
            seen_discards += 1
        dealt = state.data[:, L.F_HAND_NO] != hand_no
        tally[dealt] = 0  # a new hand starts with no discards
        seen_new_hand += int(dealt.sum())
        hand_no = state.data[:, L.F_HAND_NO].copy()
        live = np.flatnonzero(~(result.terminated | result.truncated))
        for seat in range(n):
            got = views(observe(state, np.full(live.size, seat), live), state.params)["discards"]
            want = np.minimum(np.stack([tally[live, (seat + j) % n] for j in range(n)], axis=1) / maxk, 1.0)
            np.testing.assert_allclose(got, want, err_msg=f"seat {seat}, decision {decision}")
        done = np.flatnonzero(result.terminated | result.truncated)
        if done.size:
            reset_rows(state, done)
            tally[done] = 0
            hand_no[done] = state.data[done, L.F_HAND_NO]
    assert seen_discards > 500 and seen_new_hand > 0


def test_a_count_past_the_deck_s_is_clipped() -> None:
    """A card taken back with the pile can be thrown again: nine sevens from a deck of eight."""
    state = init(load_rules("classic_2p", observe_discards=True), 1, 3)
    state.data[0, L.discards_at(state.params, 1) + 7] = 9
    state.data[0, L.discards_at(state.params, 1) + 8] = 4
    seen = views(observe(state, [0]), state.params)["discards"][0]
    assert seen[1, 7] == 1.0 and seen[1, 8] == 0.5 and seen[0].sum() == 0


@pytest.mark.parametrize("preset", ["classic_2p", "classic_4p", "pennies_6p"])
def test_without_the_option_the_observation_is_unchanged(preset: str) -> None:
    """The negative twin: no ``discards`` piece, and the layout every zoo checkpoint was trained on."""
    plain = L.pack_params(load_rules(preset), "hand")
    with_it = L.pack_params(load_rules(preset, observe_discards=True), "hand")
    assert "discards" not in [p.name for p in pieces(plain)]
    assert obs_dim(with_it) == obs_dim(plain) + int(plain[L.P_NPLAYERS]) * NUM_KINDS
    assert layout_hash(with_it) != layout_hash(plain)
    if preset != "pennies_6p":
        import json
        from importlib.resources import files

        layout = json.loads((files("agents.zoo") / preset / "meta.json").read_text())["layout"]
        assert layout["layout_hash"] == layout_hash(plain) and layout["obs_dim"] == obs_dim(plain)
