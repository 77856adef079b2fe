"""The batch API: deal addressing, replay, illegal actions, clone, observations, game episodes."""

from __future__ import annotations

import numpy as np
import pytest

from canasta_env.engine import (
    ACTION_NAMES,
    NUM_ACTIONS,
    DealId,
    ExplicitDeal,
    IllegalActionError,
    action_index,
    clone,
    explicit_deal,
    init,
    init_from_deals,
    observe,
    reset_rows,
    step,
    step_one,
)
from canasta_env.engine.actions import decode, encode
from canasta_env.engine.cards import RED_THREE
from canasta_env.engine.layout import O_STOCK
from canasta_env.engine.observation import bounds, divisors, layout_hash, obs_dim, pieces, spans, views
from canasta_env.engine.render import render
from canasta_env.policy import RandomAgent
from canasta_env.rules import preset_names
from canasta_env.testing import keyed_actions

PRESETS = preset_names()  # every shipped preset, variants included


def test_action_layout_round_trip() -> None:
    assert len(ACTION_NAMES) == NUM_ACTIONS == len(set(ACTION_NAMES))
    for a in range(NUM_ACTIONS):
        assert action_index(ACTION_NAMES[a]) == a
        assert encode(*decode(a)) == a
    with pytest.raises(ValueError, match="unknown action name"):
        action_index("MELD_EVERYTHING")


@pytest.mark.parametrize("preset", PRESETS)
def test_row_deal_does_not_depend_on_batch(preset: str) -> None:
    """DealId(seed, b, 0) is the same deal in a batch of 1 and of 64."""
    big = init(preset, 64, seed=5)
    for b in (0, 17, 63):
        alone = init_from_deals(preset, [DealId(5, b, 0)])
        assert np.array_equal(alone.data[0], big.data[b])


@pytest.mark.parametrize("preset", PRESETS)
def test_explicit_deal_replays_deal_id(preset: str) -> None:
    deal = DealId(123, 4, 2)
    by_id = init_from_deals(preset, [deal])
    by_order = init_from_deals(preset, [explicit_deal(preset, deal)])
    assert np.array_equal(by_id.hands, by_order.hands)
    assert np.array_equal(by_id.stock(0), by_order.stock(0))
    assert np.array_equal(by_id.pile(0), by_order.pile(0))
    assert int(by_id.dealer[0]) == int(by_order.dealer[0])


def test_explicit_deal_must_be_the_deck() -> None:
    order, dealer = explicit_deal("classic_2p", DealId(1, 0, 0))
    bad = order.copy()
    bad[0] = bad[1] = 0  # two jokers too many of one kind, one of another missing
    if np.array_equal(np.sort(bad), np.sort(order)):
        bad[2] = 0
    with pytest.raises(ValueError, match="not a permutation"):
        init_from_deals("classic_2p", [ExplicitDeal(bad, dealer)])


def test_seeds_give_different_deals_and_reset_moves_on() -> None:
    a, b = init("classic_4p", 1, seed=1), init("classic_4p", 1, seed=2)
    assert not np.array_equal(a.hands, b.hands)
    before = a.hands.copy()
    reset_rows(a, [0])
    assert a.deal_id(0) == DealId(1, 0, 1)
    assert not np.array_equal(before, a.hands)


def test_per_row_seeds_map_to_deal_ids() -> None:
    state = init("classic_2p", 3, seed=[10, 11, 12])
    for b in range(3):
        alone = init_from_deals("classic_2p", [DealId(10 + b, 0, 0)])
        assert np.array_equal(alone.data[0], state.data[b])


def test_illegal_action_is_flagged_and_leaves_row_unchanged() -> None:
    state = init("classic_4p", 4, seed=3)
    before = state.data.copy()
    actions = np.array([action_index("DRAW_STOCK")] * 4)
    actions[2] = action_index("DISCARD_K")  # never legal in the draw phase
    result = step(state, actions)
    assert result.illegal.tolist() == [False, False, True, False]
    assert np.array_equal(state.data[2], before[2])
    assert not np.array_equal(state.data[0], before[0])


def test_single_game_path_raises_naming_action_and_legal_ones() -> None:
    state = init("classic_2p", 1, seed=3)
    with pytest.raises(IllegalActionError, match=r"DISCARD_K.*legal: 0 DRAW_STOCK"):
        step_one(state, action_index("DISCARD_K"))
    with pytest.raises(IllegalActionError, match="out of range"):
        step_one(state, NUM_ACTIONS + 5)


def test_finished_rows_are_no_ops_until_reset() -> None:
    state = init("classic_2p", 8, seed=4)
    while not state.terminated.any():
        step(state, keyed_actions(state.data, state.legal_action_mask, 1, True))
    b = int(np.flatnonzero(state.terminated)[0])
    frozen = state.data[b].copy()
    assert not state.legal_action_mask[b].any()
    result = step(state, keyed_actions(state.data, state.legal_action_mask, 2, True))
    assert np.array_equal(state.data[b], frozen) and not result.illegal[b]
    assert result.rewards[b].tolist() == [0.0, 0.0]


def test_clone_is_independent() -> None:
    state = init("classic_4p", 4, seed=9)
    copy = clone(state, [1, 3])
    step(copy, [action_index("DRAW_STOCK")] * 2)
    assert np.array_equal(state.data[[1, 3]], init("classic_4p", 4, seed=9).data[[1, 3]])


@pytest.mark.parametrize("preset", PRESETS)
def test_same_seed_same_trajectory(preset: str) -> None:
    def run() -> np.ndarray:
        state = init(preset, 16, seed=21)
        rng = np.random.default_rng(0)
        for _ in range(300):
            result = step(state, RandomAgent().act(None, state.legal_action_mask, rng))  # type: ignore[arg-type]
            done = np.flatnonzero(result.terminated | result.truncated)
            reset_rows(state, done)
        return state.data.copy()

    assert np.array_equal(run(), run())


@pytest.mark.parametrize("preset", PRESETS)
def test_observations_lie_in_their_box_and_hide_other_hands(preset: str) -> None:
    state = init(preset, 64, seed=2)
    low, high = bounds(state.params)
    assert low.shape == (obs_dim(state.params),)
    for i in range(400):
        seats = (state.current_player + i) % state.num_players
        obs = observe(state, seats)
        assert obs.dtype == np.float32 and obs.shape == (64, obs_dim(state.params))
        assert (obs >= low).all() and (obs <= high).all()
        result = step(state, keyed_actions(state.data, state.legal_action_mask, 5, True))
        reset_rows(state, np.flatnonzero(result.terminated | result.truncated))
    # An observation depends on other hands only through what is public: swap an unknown card of
    # the next hand with a stock card of another kind (the deck stays whole), in the first live row
    # where the next hand holds an unknown card and the stock one of another kind.
    for b in range(state.num_games):
        me = int(state.current_player[b])
        other = (me + 1) % state.num_players
        hidden = clone(state, [b])
        hand = hidden.hands[0, other]
        kinds = np.flatnonzero(hand > hidden.known[0, other])
        start = int(hidden.params[O_STOCK])
        stock = hidden.data[0, start:start + int(hidden.stock_size[0])]
        if state.terminated[b] or not len(kinds):
            continue
        k = int(kinds[0])
        slots = np.flatnonzero((stock != k) & (stock != RED_THREE))
        if slots.size:
            break
    else:
        pytest.fail("no row with an unknown card to swap")
    slot = int(slots[0])
    hand[k] -= 1
    hand[stock[slot]] += 1
    stock[slot] = k
    assert not np.array_equal(hidden.hands[0], clone(state, [b]).hands[0])
    assert np.array_equal(observe(hidden, [me]), observe(clone(state, [b]), [me]))


def test_observation_views_and_layout_hash() -> None:
    state = init("classic_4p", 2, seed=0)
    obs = observe(state, state.current_player)
    v = views(obs, state.params)
    assert set(v) == {p.name for p in pieces(state.params)}
    (hand_divisor,) = next(p.divisor for p in pieces(state.params) if p.name == "hand")
    counts = v["hand"][0] * hand_divisor
    assert np.allclose(counts, state.hands[0, int(state.current_player[0])])
    assert v["phase"][0, 0] == 1.0
    assert layout_hash(state.params) == layout_hash(init("classic_4p", 1).params)
    assert layout_hash(state.params) != layout_hash(init("classic_2p", 1).params)


@pytest.mark.parametrize("preset", PRESETS)
def test_declared_divisors_undo_the_kernels_scaling(preset: str) -> None:
    """``Piece.divisor`` is the one declaration of the scales: stored value x divisor is an integer
    for every element that declares one (the percent of the minimum melded aside, which rounds),
    and the decoded hand, own melds and own closed canastas are the state's."""
    state = init(preset, 32, seed=4)
    div = divisors(state.params).astype(np.float64)
    assert div.shape == (obs_dim(state.params),)
    exact = div > 0
    turn = next(start for p, start, _ in spans(state.params) if p.name == "turn")
    exact[turn] = False  # the percent of the minimum melded, rounded
    for _ in range(150):
        me = state.current_player.copy()
        obs = observe(state, me).astype(np.float64)
        scaled = obs * div
        assert np.abs(scaled - np.rint(scaled))[:, exact].max() < 1e-3
        v = views(np.rint(scaled), state.params)
        rows = np.arange(state.num_games)
        own = me % state.num_owners
        assert np.array_equal(v["hand"], state.hands[rows, me])
        assert np.array_equal(v["melds"][:, 0, :, 0], state.meld_naturals[rows, own])
        assert np.array_equal(v["melds"][:, 0, :, 1], state.meld_jokers[rows, own])
        if "closed_canastas" in v:
            assert np.array_equal(v["closed_canastas"][:, 0], np.minimum(state.closed_canastas[rows, own], 8))
        result = step(state, keyed_actions(state.data, state.legal_action_mask, 3, True))
        reset_rows(state, np.flatnonzero(result.terminated | result.truncated))


def test_render_hides_hidden_cards() -> None:
    state = init("classic_2p", 1, seed=8)
    view = render(state, 0, player=0)
    other = next(line for line in view.splitlines() if line.startswith("P1"))
    assert other.endswith(f"| {int(state.hands[0, 1].sum())} cards")
    assert "pile contents" not in view
    assert "pile contents" in render(state, 0)


def test_full_game_episode_reaches_target() -> None:
    state = init("classic_2p", 4, seed=13, episode="game")
    hands = np.zeros(4, dtype=int)
    for _ in range(20000):
        if (state.terminated | state.truncated).all():
            break
        result = step(state, keyed_actions(state.data, state.legal_action_mask, 3, True))
        hands += (result.events & 1) > 0
    assert state.terminated.all()
    assert (state.scores.max(axis=1) >= 5000).all()
    assert (hands >= 2).all()
    winners = state.game_result
    assert all(state.scores[b, winners[b]] == state.scores[b].max() for b in range(4))


def test_observation_doc_is_current() -> None:
    from scripts.make_observation_doc import DOC, text

    assert DOC.read_text() == text(), "run python scripts/make_observation_doc.py"


_PLAYOUT = """
import hashlib, sys
import numpy as np
from canasta_env.engine import init, observe, step
s = init("classic_2p", 2, seed=3)
rng = np.random.default_rng(0)
for _ in range(40):
    step(s, [rng.choice(np.flatnonzero(m)) for m in s.legal_action_mask])
obs = observe(s, [0, 1])
print(hashlib.sha256(s.data.tobytes() + obs.tobytes()).hexdigest())
"""


def test_numba_disable_jit_plays_the_same_game() -> None:
    """The debugging path: with ``NUMBA_DISABLE_JIT=1`` the kernels run as plain Python/numpy and play
    the same deal and the same game as the compiled ones, without warnings."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_DISABLE_JIT": "1", "PYTHONWARNINGS": "error"}
    plain = subprocess.run([sys.executable, "-c", _PLAYOUT], capture_output=True, text=True, env=env,
                           timeout=300)
    assert plain.returncode == 0, plain.stderr[-2000:]
    env["NUMBA_DISABLE_JIT"] = "0"
    compiled = subprocess.run([sys.executable, "-c", _PLAYOUT], capture_output=True, text=True,
                              env=env, timeout=300)
    assert plain.stdout == compiled.stdout and len(plain.stdout.strip()) == 64
