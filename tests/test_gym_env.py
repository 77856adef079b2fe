"""``Canasta-v0``: Gymnasium's and SB3's env checkers, registration, the illegal-action policy,
per-episode learner seats, determinism, partnership views, rewards (scripted hands, sums with and
without shaping, signs), and the information and seat-symmetry properties of observations."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env

import canasta_env
from canasta_env.engine import (
    ACTION_NAMES,
    DealId,
    IllegalActionError,
    State,
    action_index,
    clone,
    init,
    observe,
    reset_rows,
    step,
)
from canasta_env.engine.cards import RED_THREE
from canasta_env.engine.observation import views
from canasta_env.engine.render import render
from canasta_env.envs.gym_env import CanastaEnv
from canasta_env.envs.learner import default_reward_scale
from canasta_env.policy import RandomAgent
from canasta_env.rules import preset_names
from canasta_env.scenario import scenario
from canasta_env.testing import card_counts, keyed_actions, resample_hidden, rotate_seats

PRESETS = preset_names()  # every shipped preset, variants included
ENV_ID = "canasta_env:Canasta-v0"


def _make(preset: str, **options: Any) -> CanastaEnv:
    return gymnasium.make(ENV_ID, rules=preset, **options).unwrapped  # type: ignore[return-value]


def _random_policy(rng: np.random.Generator) -> Any:
    return lambda env, obs: int(rng.choice(np.flatnonzero(env.action_masks())))


def _lowest_legal(env: CanastaEnv, obs: np.ndarray) -> int:
    return int(np.flatnonzero(env.action_masks())[0])


def _episode(env: CanastaEnv, policy: Any, seed: int | None = None,
             options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Play one episode; its observations, rewards, infos and the final engine state."""
    obs, info = env.reset(seed=seed, options=options)
    observations, rewards, infos = [obs], [], [info]
    terminated = truncated = False
    while not (terminated or truncated):
        obs, reward, terminated, truncated, info = env.step(policy(env, obs))
        observations.append(obs)
        rewards.append(reward)
        infos.append(info)
    return {"obs": observations, "rewards": rewards, "infos": infos, "seat": infos[0]["learner_seat"],
            "terminated": terminated, "truncated": truncated, "state": env._core.require_state()}


def _margin(state: State, seat: int) -> int:
    """The learner side's hand score minus the best other side's (engine state, row 0)."""
    hs = state.hand_scores[0].astype(np.int64)
    side = seat % state.num_sides
    return int(hs[side] - np.delete(hs, side).max())


class Scripted:
    """An injected agent playing the first legal action of a preference list (else the lowest)."""

    needs_observations = False

    def __init__(self, *preferences: str) -> None:
        self.preferences = [action_index(p) for p in preferences]

    def act(self, observations: np.ndarray, legal_action_mask: np.ndarray,
            rng: Any) -> np.ndarray:
        out = []
        for mask in legal_action_mask:
            legal = [a for a in self.preferences if mask[a]]
            out.append(legal[0] if legal else int(np.flatnonzero(mask)[0]))
        return np.array(out, dtype=np.int64)


def _inject(env: CanastaEnv, state: State) -> None:
    """Replace the env's game by a scenario state (white-box: the LearnerBatch's engine state)."""
    env._core.state = state


# ---- checkers and registration ---------------------------------------------------------------------
@pytest.mark.parametrize("preset", PRESETS)
def test_gymnasium_check_env(preset: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the checker's warnings are failures too
        gym_check_env(gymnasium.make(ENV_ID, rules=preset).unwrapped)


@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("preset", PRESETS)
def test_sb3_check_env(preset: str) -> None:
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sb3_check_env(gymnasium.make(ENV_ID, rules=preset))


def test_make_works_in_a_fresh_interpreter_without_importing_first() -> None:
    code = ("import sys, gymnasium\n"
            "assert 'canasta_env' not in sys.modules\n"
            "env = gymnasium.make('canasta_env:Canasta-v0')\n"
            "obs, info = env.reset(seed=0)\n"
            "assert env.observation_space.contains(obs)\n"
            "print(type(env.unwrapped).__name__)\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "CanastaEnv"


def test_registered_without_time_limit() -> None:
    spec = gymnasium.spec("Canasta-v0")
    assert spec.max_episode_steps is None
    assert spec.vector_entry_point is not None
    env = gymnasium.make(ENV_ID)
    wrapper: Any = env
    while isinstance(wrapper, gymnasium.Wrapper):
        assert not isinstance(wrapper, gymnasium.wrappers.TimeLimit)
        wrapper = wrapper.env
    assert isinstance(wrapper, CanastaEnv)


# ---- illegal actions ------------------------------------------------------------------------------
@pytest.mark.parametrize("preset", PRESETS)
def test_illegal_action_raise_names_action_and_legal_ones(preset: str) -> None:
    env = _make(preset, illegal_action="raise")
    env.reset(seed=3)
    mask = env.action_masks()
    illegal = int(np.flatnonzero(~mask)[0])
    with pytest.raises(IllegalActionError) as err:
        env.step(illegal)
    message = str(err.value)
    assert f"action {illegal} ({ACTION_NAMES[illegal]})" in message
    for a in np.flatnonzero(mask):
        assert f"{a} {ACTION_NAMES[a]}" in message
    # the env is unchanged and still playable with a legal action
    assert np.array_equal(env.action_masks(), mask)
    env.step(int(np.flatnonzero(mask)[0]))


@pytest.mark.parametrize("preset", PRESETS)
def test_illegal_action_terminate(preset: str) -> None:
    env = _make(preset)  # illegal_action="terminate" is the default
    env.reset(seed=3)
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    obs, reward, terminated, truncated, info = env.step(illegal)
    assert (reward, terminated, truncated) == (-1.0, True, False)
    assert info["illegal_action"] is True
    assert not env.action_masks().any()
    assert env.observation_space.contains(obs)
    env.reset()
    legal = int(np.flatnonzero(env.action_masks())[0])
    assert env.step(legal)[4]["illegal_action"] is False
    custom = _make(preset, illegal_reward=-5.0)
    custom.reset(seed=3)
    assert custom.step(illegal)[1] == -5.0


# ---- types, seats, determinism ---------------------------------------------------------------------
@pytest.mark.parametrize("preset", PRESETS)
def test_rewards_are_float_and_flags_bool(preset: str) -> None:
    env = _make(preset)
    ep = _episode(env, _random_policy(np.random.default_rng(0)), seed=1)
    assert all(type(r) is float for r in ep["rewards"])
    assert type(ep["terminated"]) is bool and type(ep["truncated"]) is bool
    assert all(type(i["illegal_action"]) is bool and type(i["forced_steps"]) is int
               for i in ep["infos"][1:])
    assert all(i["action_mask"].dtype == np.int8 for i in ep["infos"])
    assert all(o.dtype == np.float32 and env.observation_space.contains(o) for o in ep["obs"])


@pytest.mark.parametrize("preset", PRESETS)
def test_learner_seat_drawn_per_episode_unless_fixed(preset: str) -> None:
    n = canasta_env.load_rules(preset).num_players
    env = _make(preset)
    seeded = {env.reset(seed=s)[1]["learner_seat"] for s in range(40)}
    assert seeded == set(range(n))
    env.reset(seed=0)
    unseeded = {env.reset()[1]["learner_seat"] for _ in range(40)}
    assert unseeded == set(range(n))
    # the draw is part of the seeded episode
    assert env.reset(seed=12)[1]["learner_seat"] == env.reset(seed=12)[1]["learner_seat"]
    fixed = _make(preset, learner_seat=n - 1)
    assert {fixed.reset(seed=s)[1]["learner_seat"] for s in range(10)} == {n - 1}
    assert {fixed.reset()[1]["learner_seat"] for _ in range(10)} == {n - 1}
    for k in range(n):
        assert env.reset(seed=5, options={"learner_seat": k})[1]["learner_seat"] == k
        assert env.reset(options={"learner_seat": k})[1]["learner_seat"] == k
    with pytest.raises(ValueError, match="learner"):
        env.reset(options={"learner_seat": n})
    with pytest.raises(ValueError, match="learner_seat"):
        _make(preset, learner_seat=n)


def test_reset_option_learner_seat_is_per_episode() -> None:
    env = _make("classic_4p")
    seats = [env.reset(seed=s, options={"learner_seat": 2})[1]["learner_seat"] for s in range(5)]
    assert seats == [2] * 5
    drawn = {env.reset()[1]["learner_seat"] for _ in range(40)}
    assert len(drawn) > 1, "a learner_seat reset option must not fix the seat for later episodes"


def test_reset_option_deal() -> None:
    env = _make("classic_2p")
    _, info = env.reset(seed=1, options={"deal": DealId(77, 0, 3), "learner_seat": 1})
    assert info["deal"] == (77, 0, 3) and info["learner_seat"] == 1


def test_unknown_reset_option_warns() -> None:
    env = _make("classic_2p")
    with pytest.warns(UserWarning, match="unknown reset options"):
        env.reset(seed=0, options={"opponent": "random"})
    with pytest.warns(UserWarning):
        env.reset(seed=0, options=1)  # type: ignore[arg-type]


@pytest.mark.parametrize("preset", PRESETS)
def test_same_seed_same_trajectory(preset: str) -> None:
    for policy_seed in (None, 4):
        runs = []
        for _ in range(2):
            policy = _lowest_legal if policy_seed is None else _random_policy(
                np.random.default_rng(policy_seed))
            env = _make(preset)
            runs.append([_episode(env, policy, seed=21)] + [_episode(env, policy) for _ in range(2)])
        for a, b in zip(*runs, strict=True):
            assert len(a["obs"]) == len(b["obs"])
            assert all(np.array_equal(x, y) for x, y in zip(a["obs"], b["obs"], strict=True))
            assert a["rewards"] == b["rewards"] and a["seat"] == b["seat"]
            assert [i["forced_steps"] for i in a["infos"][1:]] == [
                i["forced_steps"] for i in b["infos"][1:]]
    other = _episode(_make(preset), _lowest_legal, seed=22)
    first = runs[0][0]
    assert len(other["obs"]) != len(first["obs"]) or not all(
        np.array_equal(x, y) for x, y in zip(other["obs"], first["obs"], strict=False))


@pytest.mark.parametrize("partners", [None, RandomAgent()], ids=["own_side", "partner_agent"])
def test_partnership_learner_observes_from_its_side_seat_to_move(partners: Any) -> None:
    env = _make("classic_4p", partners=partners, render_mode="ansi")
    rng = np.random.default_rng(1)
    partner_moves = 0
    for seed in range(6):
        obs, info = env.reset(seed=seed)
        seat = info["learner_seat"]
        done = False
        while not done:
            state = env._core.require_state()
            cur = int(state.current_player[0])
            if partners is None:
                assert cur % 2 == seat % 2, "the learner must only be asked for its own side"
            else:
                assert cur == seat, "with a partner agent the learner plays its own seat only"
            partner_moves += cur != seat
            assert np.array_equal(obs, observe(state, [cur])[0])
            assert np.array_equal(env.action_masks(), state.legal_action_mask[0])
            assert f"view of P{cur}" in str(env.render())
            obs, _, terminated, truncated, info = env.step(
                int(rng.choice(np.flatnonzero(env.action_masks()))))
            assert info["learner_seat"] == seat
            done = terminated or truncated
        assert np.array_equal(obs, observe(env._core.require_state(), [seat])[0])
    assert (partner_moves > 0) == (partners is None)


# ---- rewards --------------------------------------------------------------------------------------
def _going_out(preset: str, mover: int) -> State:
    """Seat ``mover`` (after its draw) holds three fives and a nine next to its side's two natural
    canastas: MELD_NNN_5 and the forced DISCARD_9 take it out; every other seat holds Q Q 9 7 7."""
    rules = canasta_env.load_rules(preset)
    hands = ["Q Q 9 7 7"] * rules.num_players
    hands[mover] = "5 5 5 9"
    return scenario(rules, hands, melds={mover % rules.num_sides: ["K K K K K K K", "A A A A A A A"]},
                    turn=mover, phase="meld")


@pytest.mark.parametrize(("preset", "learner", "mover"),
                         [("classic_2p", 0, 0), ("classic_3p", 2, 2), ("classic_4p", 1, 1),
                          ("classic_4p", 2, 0)])
def test_scripted_hand_learner_side_wins(preset: str, learner: int, mover: int) -> None:
    """The learner's side goes out (in 4p, from the partner's seat it also plays)."""
    env = _make(preset, learner_seat=learner)
    env.reset(seed=0)
    _inject(env, _going_out(preset, mover))
    obs, reward, terminated, truncated, info = env.step(action_index("MELD_NNN_5"))
    state = env._core.require_state()
    assert terminated and not truncated
    assert info["forced_steps"] == 1  # DISCARD_9, the only legal action left
    assert int(state.went_out[0]) == mover
    n, sides = state.num_players, state.num_sides
    # the mover's side: natural canastas of kings and aces (70 + 140 + 2 x 500), the fives (15),
    # going out (100), minus its other seats' hands; every other side: minus its hands (Q Q 9 7 7
    # = 40 a seat).
    per_side = n // sides
    winner = 210 + 1000 + 15 + 100 - 40 * (per_side - 1)
    expected = (winner - (-40 * per_side)) / 1000
    assert _margin(state, learner) * default_reward_scale(state.rules) == pytest.approx(expected)
    assert reward == pytest.approx(expected) and reward > 0
    assert np.array_equal(obs, observe(state, [learner])[0])


def test_scripted_hand_learner_side_loses() -> None:
    """The learner discards a nine; the opponent takes the pile with its pair and goes out."""
    env = _make("classic_2p", learner_seat=0,
                opponent=Scripted("TAKE_PILE_PAIR", "MELD_NNN_5", "DISCARD_8"))
    env.reset(seed=0)
    _inject(env, scenario("classic_2p", ["Q Q 9 7 7", "9 9 5 5 5 8"],
                          melds={1: ["K K K K K K K", "A A A A A A A"]}, turn=0, phase="meld"))
    _, reward, terminated, _, _ = env.step(action_index("DISCARD_9"))
    state = env._core.require_state()
    assert terminated and int(state.went_out[0]) == 1
    # opponent: natural canastas of kings and aces (70 + 140 + 2 x 500), melds 9 9 9 and 5 5 5
    # (30 + 15), going out 100; learner: minus Q Q 7 7
    assert state.hand_scores[0].tolist() == [-30, 1355]
    assert reward == pytest.approx(-(1355 + 30) / 1000)


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("shaping", [0.0, 1.0])
def test_episode_rewards_sum_to_scaled_margin(preset: str, shaping: float) -> None:
    """Every episode's rewards add up to its margin: 50 random hands per preset and shaping (1,000
    in all; measured: 37 to 113 learner steps a hand, won and lost hands by the fourth in every
    preset)."""
    env = _make(preset, shaping=shaping)
    scale = default_reward_scale(env.rules)
    policy = _random_policy(np.random.default_rng(7))
    signs = set()
    shaped_steps = 0
    for seed in range(50):
        ep = _episode(env, policy, seed=seed)
        margin = _margin(ep["state"], ep["seat"])
        assert ep["terminated"] and not ep["truncated"]
        assert sum(ep["rewards"]) == pytest.approx(margin * scale, abs=1e-9), (
            f"seed {seed}: rewards {sum(ep['rewards'])} != margin {margin} x {scale}")
        if shaping == 0.0:
            assert all(r == 0.0 for r in ep["rewards"][:-1]), "sparse rewards only at the end"
            assert ep["rewards"][-1] == pytest.approx(margin * scale)
        shaped_steps += sum(r != 0.0 for r in ep["rewards"][:-1])
        signs.add(np.sign(margin))
    assert signs >= {-1.0, 1.0}
    assert (shaped_steps > 0) == (shaping > 0)


@pytest.mark.parametrize("preset", PRESETS)
def test_win_loss_reward_is_sign_of_margin(preset: str) -> None:
    env = _make(preset, reward_mode="win_loss")
    policy = _random_policy(np.random.default_rng(8))
    seen = set()
    for seed in range(25):
        ep = _episode(env, policy, seed=seed)
        margin = _margin(ep["state"], ep["seat"])
        assert ep["rewards"][-1] == float(np.sign(margin))
        assert all(r == 0.0 for r in ep["rewards"][:-1])
        seen.add(ep["rewards"][-1])
    assert seen >= {-1.0, 1.0}


def test_reward_scale_option() -> None:
    base = _episode(_make("classic_2p"), _lowest_legal, seed=3)
    scaled = _episode(_make("classic_2p", reward_scale=0.01), _lowest_legal, seed=3)
    assert scaled["rewards"][-1] == pytest.approx(base["rewards"][-1] * 10)


# ---- information and symmetry of observations -----------------------------------------------------
def _random_states(preset: str, count: int, seed: int, batch: int = 100) -> Iterator[State]:
    """``count`` states of random (meld-eager) play, as batches of ``batch`` rows taken every few
    decisions, so early, middle and late positions of hands all appear."""
    state = init(preset, batch, seed)
    rng = np.random.default_rng(seed)
    taken = 0
    while taken < count:
        for _ in range(int(rng.integers(5, 25))):
            actions = keyed_actions(state.data, state.legal_action_mask, seed, True)
            result = step(state, actions)
            done = np.flatnonzero(result.terminated | result.truncated)
            if done.size:
                reset_rows(state, done)
        yield clone(state)
        taken += batch


@pytest.mark.parametrize("preset", PRESETS)
def test_resample_hidden_keeps_the_players_information(preset: str) -> None:
    rng = np.random.default_rng(0)
    checked = hands_changed = eligible = 0
    for batch in _random_states(preset, 1000, seed=11):
        for b in range(batch.num_games):
            state = clone(batch, [b])
            cur = int(state.current_player[0])
            player = cur if b % 2 else int(rng.integers(state.num_players))
            resampled = resample_hidden(state, player, rng)
            seen, after = observe(state, [player]), observe(resampled, [player])
            if seen.tobytes() != after.tobytes():
                old, new = views(seen, state.params), views(after, state.params)
                leaked = [k for k in old if not np.array_equal(old[k], new[k])]
                pytest.fail(f"{preset}: seat {player}'s observation (pieces {leaked}) depends on "
                            f"cards it cannot see; seat {cur} to move\n{render(state, 0)}")
            assert render(resampled, 0, player) == render(state, 0, player)
            if player == cur:
                assert np.array_equal(resampled.legal_action_mask, state.legal_action_mask)
            assert np.array_equal(card_counts(resampled), card_counts(state))
            assert np.array_equal(resampled.hands[0, player], state.hands[0, player])
            assert np.array_equal(resampled.hands[0].sum(axis=1), state.hands[0].sum(axis=1))
            assert np.array_equal(resampled.known, state.known)
            assert np.all(resampled.hands[0] >= resampled.known[0])
            unknown = (state.hands[0] - state.known[0]).sum() - (
                state.hands[0, player] - state.known[0, player]).sum()
            if unknown > 0:
                eligible += 1
                hands_changed += not np.array_equal(resampled.hands, state.hands)
            checked += 1
    assert checked >= 1000
    assert hands_changed >= 0.9 * eligible, (hands_changed, eligible)


def _swap_known_card(state: State, holder: int) -> bool:
    """Turn one card ``holder`` is known to hold into a different kind taken from the stock
    (consistently in hands, known cards and stock); False if no such swap exists."""
    known, hand, stock = state.known[0, holder], state.hands[0, holder], state.stock(0)
    for kind in np.flatnonzero(known):
        for pos, other in enumerate(stock):
            if other != kind and other != RED_THREE:
                known[kind] -= 1
                hand[kind] -= 1
                known[other] += 1
                hand[other] += 1
                stock[pos] = kind
                state.refresh_mask()
                return True
    return False


@pytest.mark.parametrize("preset", PRESETS)
def test_changing_a_known_card_of_an_opponent_changes_the_observation(preset: str) -> None:
    changed = 0
    for batch in _random_states(preset, 1000, seed=12):
        for b in np.flatnonzero(batch.known.sum(axis=2).any(axis=1)):
            state = clone(batch, [b])
            counts = card_counts(state)
            holder = int(np.flatnonzero(state.known[0].sum(axis=1))[0])
            observers = [p for p in range(state.num_players) if p != holder]
            before = observe(state, observers, rows=[0] * len(observers))
            if not _swap_known_card(state, holder):
                continue
            assert np.array_equal(card_counts(state), counts)
            after = observe(state, observers, rows=[0] * len(observers))
            for i, p in enumerate(observers):
                assert not np.array_equal(before[i], after[i]), (
                    f"seat {p} does not see that seat {holder}'s known card changed")
            changed += 1
    assert changed >= 20, f"only {changed} states with known cards"


@pytest.mark.parametrize("preset", PRESETS)
def test_observation_is_seat_symmetric(preset: str) -> None:
    checked = 0
    for batch in _random_states(preset, 1000, seed=13):
        n = batch.num_players
        views = [observe(batch, p) for p in range(n)]
        for k in range(1, n):
            rotated = rotate_seats(batch, k)
            assert np.array_equal(rotated.legal_action_mask, batch.legal_action_mask)
            assert np.array_equal(card_counts(rotated), card_counts(batch))
            for p in range(n):
                assert np.array_equal(observe(rotated, (p + k) % n), views[p]), (
                    f"seat {p} rotated by {k}")
        checked += batch.num_games
    assert checked >= 1000
