"""The style population (agents.rule_based.styles): profiles by name and by fields, one-line errors, profiles
that play measurably different games, and held-out profiles kept out of the training configs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import yaml

from agents import make_agent
from agents.match import play_games
from agents.rule_based.heuristic import HeuristicAgent, HeuristicConfig
from agents.rule_based.styles import HELD_OUT_STYLES, STYLES, TRAINING_STYLES, style_agent_names
from canasta_env.engine import DealId
from canasta_env.rules import load_rules

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("preset", ["classic_2p", "classic_4p"])
def test_each_profile_changes_its_fields_over_the_rules_defaults(preset: str) -> None:
    rules = load_rules(preset)
    base = HeuristicConfig.for_rules(rules)
    two_card = preset == "classic_2p"
    for name, style in STYLES.items():
        agent = make_agent(f"heuristic:{name}", rules)
        assert isinstance(agent, HeuristicAgent) and agent.name == f"heuristic:{name}"
        want = {**style.fields, **(style.two_card if two_card else style.one_card)}
        assert dataclasses.replace(base, **want) == agent.config != base
        assert make_agent("heuristic", rules, style=name).config == agent.config


def test_fields_override_a_profile_and_stand_alone() -> None:
    agent = make_agent("heuristic:pile_fighter, freeze_pile=9", "classic_2p")
    assert agent.config.freeze_pile == 9.0
    assert agent.config.pair_keep == STYLES["pile_fighter"].fields["pair_keep"]
    alone = make_agent("heuristic:go_out_margin=-1000,keep_cards=1", "classic_2p")
    assert (alone.config.go_out_margin, alone.config.keep_cards) == (-1000.0, 1.0)
    assert alone.config.pair_take_pile == HeuristicConfig().pair_take_pile


@pytest.mark.parametrize(("name", "says"), [
    ("heuristic:nope", "'nope' (first) is not a profile"),
    ("heuristic:eager,hoarder", "'hoarder' (part 2) is a profile, but only the first part may name one"),
    ("heuristic:eager,eager", "'eager' (part 2) is a profile, but only the first part may name one"),
    ("heuristic:eager,nope", "'nope' (part 2) is not FIELD=VALUE"),
    ("heuristic:freeze_pile=6,freeze_pile=7", "freeze_pile is given twice"),
    ("heuristic:pile_fighter,freeze_pile=6, freeze_pile =7", "freeze_pile is given twice"),
    ("heuristic:eager,colour=3", "unknown field 'colour'"),
    ("heuristic:freeze_pile=lots", "freeze_pile = 'lots' is not a finite number"),
    ("heuristic:freeze_pile=nan", "is not a finite number"),
    ("heuristic:", "is empty"),
])
def test_bad_styles_are_refused_in_one_line_naming_the_part(name: str, says: str) -> None:
    with pytest.raises(ValueError, match="heuristic style") as info:
        make_agent(name, "classic_2p")
    assert says in str(info.value) and "\n" not in str(info.value)


def test_a_config_and_a_style_together_are_refused() -> None:
    with pytest.raises(ValueError, match="not both"):
        HeuristicAgent("classic_2p", HeuristicConfig(), style="eager")


def test_the_registry_prefix_is_only_for_styled_agents() -> None:
    with pytest.raises(ValueError, match="cannot import module 'greedy'|unknown agent"):
        make_agent("greedy:eager", "classic_2p")


def _side_stats(preset: str, name: str, deals: int = 150) -> dict[str, float]:
    """Per hand of ``name`` (seat 0's side) against the plain heuristic: going out, pile takes,
    decisions."""
    rules = load_rules(preset)
    agents = [make_agent(name, rules), make_agent("heuristic", rules)]
    seats = np.tile(np.arange(rules.num_players) % rules.num_sides != 0, (deals, 1)).astype(np.int64)
    out = play_games(rules, agents, seats, [DealId(31, i, 0) for i in range(deals)], np.arange(deals))
    went = (out.went_out >= 0) & (out.went_out % rules.num_sides == 0)
    return {"went_out": float(went.mean()), "pile_takes": float(out.pile_takes[:, 0].mean()),
            "decisions": float(out.decisions.mean())}


def test_profiles_play_visibly_different_games() -> None:
    """The same deals against the same opponent: the hoarder goes out far less than the eager player
    and makes the hands longer; the pile fighter takes the pile far more often than the eager player
    in both table sizes, and the eager player (the negative twin) no more often than the plain
    heuristic."""
    eager = _side_stats("classic_2p", "heuristic:eager")
    hoarder = _side_stats("classic_2p", "heuristic:hoarder")
    assert eager["went_out"] > hoarder["went_out"] + 0.1
    assert hoarder["decisions"] > eager["decisions"] * 1.05
    assert _side_stats("classic_2p", "heuristic:pile_fighter")["pile_takes"] > eager["pile_takes"] * 1.3
    eager4 = _side_stats("classic_4p", "heuristic:eager")
    assert _side_stats("classic_4p", "heuristic:pile_fighter")["pile_takes"] > eager4["pile_takes"] * 1.2
    assert eager4["pile_takes"] <= _side_stats("classic_4p", "heuristic")["pile_takes"]


def test_the_new_corners_play_visibly_different_games() -> None:
    """Against the plain heuristic on the same deals: the concealed player takes the pile far less
    than the plain heuristic and the pile hoarder far more; the freezer (wilds kept in hand) and
    the dumper (everything melded, no cards left to take the pile with) go out less often; the slow
    builder makes the hands longer."""
    plain = _side_stats("classic_2p", "heuristic")
    assert _side_stats("classic_2p", "heuristic:concealed")["pile_takes"] < plain["pile_takes"] * 0.7
    assert _side_stats("classic_2p", "heuristic:pile_hoarder")["pile_takes"] > plain["pile_takes"] * 1.5
    assert _side_stats("classic_2p", "heuristic:freezer")["went_out"] < plain["went_out"] - 0.08
    assert _side_stats("classic_2p", "heuristic:dumper")["went_out"] < plain["went_out"] - 0.08
    assert _side_stats("classic_2p", "heuristic:slow_builder")["decisions"] > plain["decisions"] * 1.05


def test_held_out_profiles_stay_out_of_the_training_configs() -> None:
    assert HELD_OUT_STYLES and TRAINING_STYLES and not set(HELD_OUT_STYLES) & set(TRAINING_STYLES)
    assert style_agent_names(held_out=True) == [f"heuristic:{n}" for n in HELD_OUT_STYLES]
    held = set(style_agent_names(held_out=True))
    configs = sorted((ROOT / "configs" / "train").glob("robust_*.yaml"))
    assert configs
    for path in configs:
        config = yaml.safe_load(path.read_text())
        named = {str(n).split(",")[0] for n in [*config["league"], *config["eval_opponents"]]}
        assert not named & held, path
        assert named & set(style_agent_names(held_out=False)), path
