"""Worlds sampled from one seat's observation (canasta_env/worlds.py): same observation, same mask,
every card of the deck exactly once.

``python -m tests.engine.test_worlds --states 1000`` runs the same check on more states per preset
(and prints how often the hidden turn fields had to be searched).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import numpy.typing as npt
import pytest

from canasta_env.engine import State, init, observe, step
from canasta_env.engine.cards import NUM_KINDS, RED_THREE
from canasta_env.engine.layout import PH_ANSWER, TF_TOOK, deck_counts
from canasta_env.policy import RandomAgent
from canasta_env.worlds import WorldError, sample_worlds

PRESETS = ["classic_2p", "classic_3p", "classic_4p", "regal_2p", "regal_3p", "regal_4p",
           "railroad_2p", "railroad_4p", "pennies_4p", "pennies_6p"]
STATES = 40  # per preset in the test suite; the module's main runs more
K = 3


def reachable_states(preset: str, count: int, seed: int) -> State:
    """``count`` live positions: row b plays uniform random legal moves from its deal for a
    random number of steps (a step that would end the hand is undone and the row stops there)."""
    rng = np.random.default_rng(seed)
    state = init(preset, count, seed=seed)
    steps = rng.integers(0, 300, size=count)
    agent = RandomAgent()
    for t in range(int(steps.max())):
        live = np.flatnonzero(steps > t)
        if live.size == 0:
            break
        data, mask = state.data[live].copy(), state.legal_action_mask[live].copy()
        step(state, agent.act(None, mask, rng), live)
        ended = state.terminated[live] | state.truncated[live]
        state.data[live[ended]], state.legal_action_mask[live[ended]] = data[ended], mask[ended]
        steps[live[ended]] = t
    assert not (state.terminated | state.truncated).any()
    return state


def card_totals(worlds: State) -> npt.NDArray[np.int64]:
    """(K, 15) every card of each world: hands, reserves, stock, pile, melds, closed canastas,
    red threes."""
    k = worlds.num_games
    total = worlds.hands.sum(axis=1) + worlds.reserves.sum(axis=1)
    total = total.astype(np.int64)
    for w in range(k):
        total[w] += np.bincount(worlds.stock(w), minlength=NUM_KINDS)
        total[w] += np.bincount(worlds.pile(w), minlength=NUM_KINDS)
    nat = worlds.meld_naturals.sum(axis=1)
    total[:, 4:15] += nat[:, :11]
    total[:, 3] += nat[:, 12]
    total[:, 0] += worlds.meld_jokers.sum(axis=(1, 2)) + worlds.closed_jokers.sum(axis=(1, 2))
    total[:, 1] += worlds.meld_twos.sum(axis=(1, 2)) + worlds.closed_twos.sum(axis=(1, 2))
    closed = worlds.closed_slots.sum(axis=1)  # seven cards each: naturals of the slot + wilds
    wilds = worlds.closed_jokers.sum(axis=1) + worlds.closed_twos.sum(axis=1)
    naturals = 7 * closed - wilds
    total[:, 4:15] += naturals[:, :11]
    total[:, RED_THREE] += worlds.red_threes.sum(axis=1)
    return total


def check_preset(preset: str, states: int, k: int, seed: int = 0) -> dict[str, int]:
    """Assert the worlds of ``states`` reachable positions; returns counts of what was covered."""
    state = reachable_states(preset, states, seed)
    deck = deck_counts(state.params).astype(np.int64)
    movers = state.current_player.astype(np.int64)
    obs = observe(state, movers)
    covered = {"states": states, "took": 0, "answer": 0}
    for b in range(states):
        worlds = sample_worlds(state.rules, obs[b], k, seed=b, seat=int(movers[b]),
                               legal_mask=state.legal_action_mask[b])
        seat = int(movers[b])
        got = observe(worlds, np.full(k, seat, dtype=np.int64))
        assert np.array_equal(got, np.repeat(obs[b][None], k, axis=0)), (preset, b, "observation")
        assert (worlds.legal_action_mask == state.legal_action_mask[b][None]).all(), (preset, b, "mask")
        assert (card_totals(worlds) == deck[None]).all(), (preset, b, "cards")
        assert (worlds.current_player == seat).all()
        covered["took"] += bool(state.turn_flags[b] & TF_TOOK)
        covered["answer"] += int(state.phase[b]) == PH_ANSWER
    return covered


@pytest.mark.parametrize("preset", PRESETS)
def test_worlds_keep_observation_mask_and_cards(preset: str) -> None:
    check_preset(preset, STATES, K, seed=7)


def test_worlds_differ_and_hidden_cards_vary() -> None:
    """Negative twin: worlds sampled from another seat's observation do not give this seat its
    observation; the hidden cards really are resampled (seeds change them, not the own hand)."""
    state = reachable_states("classic_2p", 8, seed=3)
    b = int(np.flatnonzero(state.stock_size > 20)[0])  # cards left to hide
    me = int(state.current_player[b])
    mine, theirs = observe(state, [me, 1 - me], [b, b])
    other = sample_worlds("classic_2p", theirs, 4, seed=0, seat=1 - me)
    assert not np.array_equal(observe(other, np.full(4, me, dtype=np.int64))[0], mine)
    a = sample_worlds("classic_2p", mine, 6, seed=1, seat=me)
    c = sample_worlds("classic_2p", mine, 6, seed=2, seat=me)
    assert (a.hands[:, me] == state.hands[b, me]).all()
    assert not np.array_equal(a.hands[:, 1 - me], c.hands[:, 1 - me])
    again = sample_worlds("classic_2p", mine, 6, seed=1, seat=me)
    assert np.array_equal(a.data, again.data)  # a pure function of its inputs


def test_world_refuses_bad_input() -> None:
    state = reachable_states("classic_4p", 2, seed=1)
    obs = observe(state, [0])[0]
    with pytest.raises(WorldError):
        sample_worlds("classic_4p", obs[:-1], 2)
    bad = obs.copy()
    bad[:15] = 1.0  # eight of every kind in hand: more than the deck
    with pytest.raises(WorldError):
        sample_worlds("classic_4p", bad, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description="World checks on more states per preset.")
    parser.add_argument("--states", type=int, default=1000)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--presets", nargs="*", default=PRESETS)
    args = parser.parse_args()
    for preset in args.presets:
        start = time.perf_counter()
        covered = check_preset(preset, args.states, args.k, seed=1000)
        print(f"{preset}: ok {covered} in {time.perf_counter() - start:.1f}s", flush=True)


if __name__ == "__main__":
    main()
