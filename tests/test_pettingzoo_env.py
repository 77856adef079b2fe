"""The PettingZoo AEC env ``canasta_v0``: PettingZoo's API and seed tests, deals per seed, illegal
actions (raw: raise; wrapped: the offender loses), masks, side rewards, rendering."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from pettingzoo.test import api_test, seed_test

import canasta_env
from canasta_env.engine import ACTION_NAMES, NUM_ACTIONS, IllegalActionError, action_index, observe
from canasta_env.engine.render import render
from canasta_env.envs import pettingzoo_env
from canasta_env.envs.learner import default_reward_scale
from canasta_env.rules import preset_names

PRESETS = preset_names()  # every shipped preset, variants included


pytestmark = pytest.mark.usefixtures("pettingzoo_test_warnings")


def _random_action(env: Any, rng: np.random.Generator) -> int | None:
    """A uniformly random legal action for the agent to move (None once it is done)."""
    agent = env.agent_selection
    if env.terminations[agent] or env.truncations[agent]:
        return None
    return int(rng.choice(np.flatnonzero(env.observe(agent)["action_mask"])))


def _hands(env: Any) -> np.ndarray:
    return env.unwrapped.state.hands[0].copy()


# ---- PettingZoo's own tests -----------------------------------------------------------------------
@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("make", [canasta_env.env, canasta_env.raw_env], ids=["env", "raw_env"])
def test_api_test(preset: str, make: Any) -> None:
    api_test(make(preset), num_cycles=1000, verbose_progress=False)


@pytest.mark.parametrize("preset", PRESETS)
def test_seed_test(preset: str) -> None:
    seed_test(lambda: canasta_env.env(preset), num_cycles=500)


def test_canasta_v0_name() -> None:
    assert pettingzoo_env.raw_env.metadata["name"] == "canasta_v0"
    assert pettingzoo_env.raw_env.metadata["is_parallelizable"] is False
    assert isinstance(canasta_env.raw_env("classic_2p"), pettingzoo_env.raw_env)


def test_canasta_v0_alias() -> None:
    """The issue names ``canasta_env.canasta_v0`` (PettingZoo's ``<game>_v<N>`` module convention)."""
    from canasta_env import canasta_v0  # type: ignore[attr-defined]

    assert canasta_v0.env is not None and canasta_v0.raw_env is not None
    canasta_v0.env("classic_2p").reset(seed=0)


# ---- deals per seed -----------------------------------------------------------------------------
@pytest.mark.parametrize("preset", PRESETS)
def test_different_seeds_deal_different_hands(preset: str) -> None:
    """100 seed pairs, half of them differing only in the seed's high 32 bits."""
    env = canasta_env.raw_env(preset)
    pairs = [(i, i + 1) for i in range(50)] + [(i, i + 2**32) for i in range(50)]
    for a, b in pairs:
        env.reset(seed=a)
        hands_a, obs_a = _hands(env), env.observe("player_0")["observation"]
        env.reset(seed=b)
        hands_b, obs_b = _hands(env), env.observe("player_0")["observation"]
        assert not np.array_equal(hands_a, hands_b), f"seeds {a} and {b} dealt the same hands"
        assert not np.array_equal(obs_a, obs_b), f"seeds {a} and {b}: same view of player_0"
        env.reset(seed=a)
        assert np.array_equal(_hands(env), hands_a), f"seed {a} does not replay its deal"


@pytest.mark.parametrize("preset", PRESETS)
def test_unseeded_reset_does_not_repeat_the_deal(preset: str) -> None:
    env = canasta_env.raw_env(preset)
    env.reset(seed=7)
    previous = _hands(env)
    for _ in range(20):
        env.reset()
        hands = _hands(env)
        assert not np.array_equal(hands, previous)
        previous = hands
    # Fresh envs reset without a seed draw fresh entropy.
    first, second = canasta_env.raw_env(preset), canasta_env.raw_env(preset)
    first.reset()
    second.reset()
    assert not np.array_equal(_hands(first), _hands(second))
    previous = _hands(first)
    first.reset()
    assert not np.array_equal(_hands(first), previous)


def test_reset_options_are_ignored_with_a_warning() -> None:
    env = canasta_env.raw_env("classic_2p")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env.reset(seed=0)
        env.reset(seed=0, options={})
    with pytest.warns(UserWarning, match="ignored"):
        env.reset(seed=0, options={"learner_seat": 1})
    assert env.state is not None and env.agents == env.possible_agents


# ---- illegal actions ------------------------------------------------------------------------------
@pytest.mark.parametrize("preset", PRESETS)
def test_raw_env_raises_on_illegal_action(preset: str) -> None:
    env = canasta_env.raw_env(preset)
    env.reset(seed=1)
    mask = env.observe(env.agent_selection)["action_mask"]
    illegal = int(np.flatnonzero(mask == 0)[0])
    legal = np.flatnonzero(mask)
    before = env.unwrapped.state.data.copy()
    with pytest.raises(IllegalActionError) as err:
        env.step(illegal)
    message = str(err.value)
    assert f"action {illegal} ({ACTION_NAMES[illegal]})" in message
    for a in legal:
        assert f"{a} {ACTION_NAMES[a]}" in message
    assert np.array_equal(env.unwrapped.state.data, before), "an illegal action changed the game"


@pytest.mark.parametrize("preset", PRESETS)
def test_wrapped_env_ends_game_with_minus_one_for_offender(preset: str) -> None:
    env = canasta_env.env(preset)
    env.reset(seed=2)
    rng = np.random.default_rng(0)
    for _ in range(5):  # a few legal moves first
        env.step(_random_action(env, rng))
    offender = env.agent_selection
    mask = env.observe(offender)["action_mask"]
    env.step(int(np.flatnonzero(mask == 0)[0]))
    seen: dict[str, float] = {}
    while env.agents:
        agent = env.agent_selection
        _, reward, terminated, truncated, _ = env.last()
        assert terminated
        seen[agent] = reward
        env.step(None)
    assert seen[offender] == -1.0
    assert all(r == 0.0 for a, r in seen.items() if a != offender)
    assert set(seen) == set(env.possible_agents)


# ---- spaces and masks -----------------------------------------------------------------------------
@pytest.mark.parametrize("make", [canasta_env.env, canasta_env.raw_env], ids=["env", "raw_env"])
def test_spaces_are_the_same_object_each_call(make: Any) -> None:
    env = make("classic_4p")
    for agent in env.possible_agents:
        assert env.observation_space(agent) is env.observation_space(agent)
        assert env.action_space(agent) is env.action_space(agent)
        space = env.observation_space(agent)
        assert space["action_mask"].dtype == np.int8
        assert space["observation"].dtype == np.float32
        assert env.action_space(agent).n == NUM_ACTIONS


@pytest.mark.parametrize("preset", PRESETS)
def test_masks_int8_and_zero_for_agents_not_to_move(preset: str) -> None:
    env = canasta_env.raw_env(preset)
    rng = np.random.default_rng(3)
    space = env.observation_space("player_0")
    for seed in range(3):
        env.reset(seed=seed)
        decisions = 0
        while True:
            state = env.unwrapped.state
            mover = env.agent_selection
            live = not (env.terminations[mover] or env.truncations[mover])
            for agent in env.agents:
                obs = env.observe(agent)
                mask, info_mask = obs["action_mask"], env.infos[agent]["action_mask"]
                assert mask.dtype == np.int8 and info_mask.dtype == np.int8
                assert mask.shape == (NUM_ACTIONS,)
                assert np.array_equal(mask, info_mask)
                if agent == mover and live:
                    assert np.array_equal(mask.astype(bool), state.legal_action_mask[0])
                    assert mask.any()
                else:
                    assert not mask.any(), f"{agent} is not to move but has legal actions"
                seat = env.unwrapped.agent_name_mapping[agent]
                assert np.array_equal(obs["observation"], observe(state, [seat])[0])
                assert space.contains(obs)
            if not live:
                break
            env.step(_random_action(env, rng))
            decisions += 1
        # a finished hand: every agent done, every mask zero
        assert all(env.terminations[a] or env.truncations[a] for a in env.agents)
        assert decisions > 10


# ---- rewards --------------------------------------------------------------------------------------
def _play_hand(env: Any, rng: np.random.Generator) -> tuple[dict[str, float], dict[str, float]]:
    """Play one hand at random; the rewards of the scoring step and each agent's ``last()`` reward."""
    scored: dict[str, float] = {}
    while True:
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            break
        hand_no = int(env.unwrapped.state.hand_number[0])
        env.step(_random_action(env, rng))
        if any(env.rewards.values()) or int(env.unwrapped.state.hand_number[0]) != hand_no:
            assert not scored, "rewards set twice in one hand"
            scored = dict(env.rewards)
        elif not env.terminations[env.agent_selection]:
            assert all(r == 0.0 for r in env.rewards.values())
    last = {}
    while env.agents:
        agent = env.agent_selection
        last[agent] = env.last()[1]
        env.step(None)
    return scored, last


@pytest.mark.parametrize("preset", PRESETS)
def test_side_rewards_when_a_hand_is_scored(preset: str) -> None:
    env = canasta_env.env(preset)
    raw = env.unwrapped
    sides = raw.rules.num_sides
    scale = default_reward_scale(raw.rules)
    rng = np.random.default_rng(11)
    nonzero = 0
    for seed in range(12):
        env.reset(seed=seed)
        scored, last = _play_hand(env, rng)
        state = raw.state
        assert state.terminated[0]
        assert set(scored) == set(env.possible_agents), "rewards must be set for every agent"
        hs = state.hand_scores[0].astype(np.int64)
        for agent, reward in scored.items():
            side = raw.agent_name_mapping[agent] % sides
            margin = hs[side] - np.delete(hs, side).max()
            assert reward == pytest.approx(margin * scale), (agent, reward, hs)
            assert last[agent] == pytest.approx(reward), "last() must report the hand's reward"
            nonzero += reward != 0
        by_side = [{scored[a] for a in env.possible_agents if raw.agent_name_mapping[a] % sides == s}
                   for s in range(sides)]
        assert all(len(r) == 1 for r in by_side), f"partners got different rewards: {by_side}"
        if sides == 2:
            assert sum(r.pop() for r in by_side) == pytest.approx(0.0)
    assert nonzero > 0


def test_win_loss_rewards_are_signs() -> None:
    env = canasta_env.env("classic_4p", reward_mode="win_loss")
    raw = env.unwrapped
    rng = np.random.default_rng(5)
    for seed in range(6):
        env.reset(seed=seed)
        scored, _ = _play_hand(env, rng)
        hs = raw.state.hand_scores[0].astype(np.int64)
        for agent, reward in scored.items():
            side = raw.agent_name_mapping[agent] % 2
            assert reward == float(np.sign(hs[side] - hs[1 - side]))


def test_game_episode_rewards_each_hand() -> None:
    """With ``episode="game"`` a scored hand sets rewards for every agent and play goes on."""
    env = canasta_env.raw_env("classic_2p", episode="game")
    rng = np.random.default_rng(2)
    env.reset(seed=4)
    hands_scored = 0
    while hands_scored < 2 and not env.terminations[env.agent_selection]:
        hand_no = int(env.state.hand_number[0])
        env.step(_random_action(env, rng))
        if int(env.state.hand_number[0]) != hand_no or env.terminations[env.agent_selection]:
            hands_scored += 1
            assert env.rewards["player_0"] == pytest.approx(-env.rewards["player_1"])
            assert env.rewards["player_0"] != 0.0
    assert hands_scored >= 1


# ---- rendering and action names -------------------------------------------------------------------
@pytest.mark.parametrize("preset", PRESETS)
def test_render_ansi_is_the_current_players_view(preset: str) -> None:
    env = canasta_env.raw_env(preset, render_mode="ansi")
    env.reset(seed=9)
    rng = np.random.default_rng(0)
    for _ in range(8):
        state = env.state
        cur = int(state.current_player[0])
        text = env.render()
        assert text == render(state, 0, cur)
        assert f"view of P{cur}" in text
        assert "pile contents" not in text
        others = [p for p in range(state.num_players) if p != cur]
        assert all(f"P{p}  red3 {int(state.red_threes[0, p])} | {int(state.hands[0, p].sum())} cards"
                   in text for p in others)
        env.step(_random_action(env, rng))


def test_omniscient_render_shows_pile_and_hands() -> None:
    env = canasta_env.raw_env("classic_2p", render_mode="ansi", omniscient_render=True)
    env.reset(seed=9)
    text = env.render()
    assert text == render(env.state, 0, None)
    assert "pile contents:" in text and "view of" not in text
    assert " cards" not in text  # every hand written out


def test_render_human_prints_and_no_mode_warns(capsys: pytest.CaptureFixture[str]) -> None:
    env = canasta_env.raw_env("classic_2p", render_mode="human")
    env.reset(seed=0)
    assert env.render() is None
    assert "view of P" in capsys.readouterr().out
    quiet = canasta_env.raw_env("classic_2p")
    quiet.reset(seed=0)
    with pytest.warns(UserWarning, match="render_mode"):
        assert quiet.render() is None
    with pytest.raises(ValueError, match="render_mode"):
        canasta_env.raw_env("classic_2p", render_mode="rgb_array")


def test_action_to_string() -> None:
    raw = canasta_env.raw_env("classic_4p")
    wrapped = canasta_env.env("classic_4p")
    for a in range(NUM_ACTIONS):
        assert raw.action_to_string(a) == ACTION_NAMES[a]
        assert wrapped.unwrapped.action_to_string(np.int64(a)) == ACTION_NAMES[a]
    assert raw.action_to_string(action_index("DRAW_STOCK")) == "DRAW_STOCK"
    assert pettingzoo_env.raw_env.action_to_string(action_index("MELD_NNN_K")) == "MELD_NNN_K"


def test_reset_option_deal_plays_that_deal() -> None:
    from canasta_env.engine import DealId, explicit_deal

    deal = DealId(77, 3, 2)
    a = canasta_env.raw_env("classic_2p")
    a.reset(options={"deal": deal})
    b = canasta_env.raw_env("classic_2p")
    b.reset(options={"deal": explicit_deal("classic_2p", deal)})
    assert np.array_equal(a.state.hands, b.state.hands)
    assert np.array_equal(a.observe("player_0")["observation"], b.observe("player_0")["observation"])
