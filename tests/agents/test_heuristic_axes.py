"""The heuristic's strategic axes (agents.rule_based.heuristic_config): at their defaults the default
heuristic and the profiles that predate them play exactly as before; each axis at another value
plays differently; every field has a range, and values outside it are refused in one line."""

from __future__ import annotations

import dataclasses
import hashlib
from functools import cache

import numpy as np
import numpy.typing as npt
import pytest

from agents import make_agent
from agents.match import play_games
from agents.rule_based.heuristic import KERNEL_CONFIG, HeuristicConfig
from agents.rule_based.heuristic_config import FIELD_RANGES, check_ranges
from agents.rule_based.styles import STYLES
from canasta_env.deal_sets import load_deal_set
from canasta_env.engine import init, observe, reset_rows, step
from canasta_env.rules import load_rules

PRESETS = ("classic_2p", "classic_4p", "railroad_2p")
# sha256[:16] of the sampled observations and of each agent's actions on them, recorded with the
# heuristic as it was before the strategic axes were added (6,400 observations per preset)
BEFORE = {
    "classic_2p": ("785a9119fb9f1d4b", {
        "heuristic": "cd151a4b0af7c442", "heuristic:eager": "17a1af39d6b20139",
        "heuristic:hoarder": "9bc14b1f441548fc", "heuristic:pile_fighter": "bf3001324c644f3d",
        "heuristic:builder": "b7d7dbc5f915c631", "heuristic:defensive": "ab899c0cd522eb95",
        "heuristic:rusher": "ed6d3d47c155616b"}),
    "classic_4p": ("0e5cbc8b42a5bac7", {
        "heuristic": "2ef848da9ce48734", "heuristic:eager": "a3bd85cdb9f8321e",
        "heuristic:hoarder": "389f182bbb270fcf", "heuristic:pile_fighter": "22ead1a2288ce8bd",
        "heuristic:builder": "b81a9905867a4680", "heuristic:defensive": "aa312c875636fe51",
        "heuristic:rusher": "772e2281596b0af3"}),
    "railroad_2p": ("41c3d41c30a891e3", {
        "heuristic": "1e584aa3ee30f1f6", "heuristic:eager": "c20da4dc995e1944",
        "heuristic:hoarder": "9db81a133bd03b5c", "heuristic:pile_fighter": "3006e61d39f20435",
        "heuristic:builder": "9dd39deebd5abdc5", "heuristic:defensive": "2b94647a1f4749d9",
        "heuristic:rusher": "78655c6af839cd69"}),
}
# each new axis at a value other than its default
AXES = {"hold_open": 1, "open_take_discount": 4, "wild_keep": 2, "wild_min_meld": 4, "hold_new": 4,
        "go_out_extra": 1, "fish": 150, "value_weight": -1}


def _digest(array: npt.NDArray[np.generic]) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()[:16]


@cache
def sampled(preset: str, batch: int = 64, steps: int = 400, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """Observations and masks of every 4th decision of ``batch`` tables in which even rows play the
    default heuristic and odd rows uniformly random legal moves (hands reset as they end)."""
    rules = load_rules(preset)
    state = init(rules, batch, seed)
    heuristic = make_agent("heuristic", rules)
    rng = np.random.default_rng(seed)
    plays_heuristic = np.arange(batch) % 2 == 0
    observations, masks = [], []
    for i in range(steps):
        mask = state.legal_action_mask.copy()
        live = np.flatnonzero(mask.any(axis=1))
        obs = observe(state, state.current_player[live].astype(np.int64), live)
        if i % 4 == 0:
            observations.append(obs)
            masks.append(mask[live])
        actions = np.full(batch, -1, np.int64)
        actions[live] = (rng.random((live.size, mask.shape[1])) * mask[live]).argmax(axis=1)
        h = plays_heuristic[live]
        actions[live[h]] = heuristic.act(obs[h], mask[live][h])
        step(state, actions)
        done = np.flatnonzero(state.terminated | state.truncated)
        if done.size:
            reset_rows(state, done)
    return np.concatenate(observations), np.concatenate(masks)


@pytest.mark.parametrize("preset", PRESETS)
def test_the_default_and_the_older_profiles_play_as_before_the_axes(preset: str) -> None:
    obs, mask = sampled(preset)
    obs_digest, actions = BEFORE[preset]
    assert _digest(obs) == obs_digest  # the sample itself (played partly by the default heuristic)
    for name, digest in actions.items():
        assert _digest(make_agent(name, preset).act(obs, mask).astype(np.int64)) == digest, name


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("field", list(AXES))
def test_each_axis_changes_play(preset: str, field: str) -> None:
    obs, mask = sampled(preset)
    default = make_agent("heuristic", preset).act(obs, mask)
    moved = make_agent(f"heuristic:{field}={AXES[field]}", preset).act(obs, mask)
    assert (moved != default).sum() >= 5, field
    assert mask[np.arange(len(moved)), moved].all()


def test_every_field_has_a_range_holding_its_defaults_and_the_profiles() -> None:
    names = [f.name for f in dataclasses.fields(HeuristicConfig)]
    assert set(FIELD_RANGES) == set(names) == set(KERNEL_CONFIG)
    assert all(r.low < r.high for r in FIELD_RANGES.values())
    for preset in ("classic_2p", "classic_4p"):
        rules = load_rules(preset)
        assert check_ranges(HeuristicConfig.for_rules(rules)) == []
        for name in STYLES:
            assert check_ranges(make_agent(f"heuristic:{name}", rules).config) == [], name


@pytest.mark.parametrize(("spec", "says"), [
    ("heuristic:eager,freeze_pile=-1", "freeze_pile = '-1' is outside its range [0, 100]"),
    ("heuristic:go_out_margin=1e9", "go_out_margin = '1e9' is outside its range [-2000, 10000]"),
    ("heuristic:keep_cards=2.5", "keep_cards = '2.5' is outside its range [0, 10], whole numbers"),
    ("heuristic:wild_min_meld=2", "wild_min_meld = '2' is outside its range [3, 6], whole numbers"),
    ("heuristic:value_weight=4", "value_weight = '4' is outside its range [-3, 3]"),
])
def test_a_value_outside_its_range_is_refused_in_one_line(spec: str, says: str) -> None:
    with pytest.raises(ValueError, match="heuristic style") as info:
        make_agent(spec, "classic_2p")
    assert says in str(info.value) and "\n" not in str(info.value)


def test_range_ends_are_accepted() -> None:
    agent = make_agent("heuristic:freeze_pile=0,go_out_margin=10000,value_weight=-3,wild_min_meld=3",
                       "classic_2p")
    assert (agent.config.freeze_pile, agent.config.go_out_margin) == (0.0, 10_000.0)


def test_the_concealed_player_goes_out_concealed_and_the_default_does_not() -> None:
    """Same 100 deals of v1 against the plain heuristic, the profile holding side 0."""
    rules = load_rules("classic_2p")
    deals = load_deal_set("v1", rules).first(100)
    seats = np.tile([0, 1], (100, 1))
    counts = {}
    for name in ("heuristic:concealed", "heuristic"):
        out = play_games(rules, [make_agent(name, rules), make_agent("heuristic", rules)], seats, deals,
                         np.arange(100), record_seats=[["A", "B"]] * 100)
        counts[name] = sum(r.concealed and r.went_out == 0 for r in out.records)
    assert counts["heuristic:concealed"] >= 3 and counts["heuristic"] == 0, counts
