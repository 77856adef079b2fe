"""canasta_env.rules: presets, the initial-meld table, validation messages, round trips."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from canasta_env.rules import RulesError, RuleSet, load_rules, preset_names


def write(tmp_path: Path, text: str, name: str = "rules.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- presets -----------------------------------------------------------------------------------


def test_preset_names_lists_the_classic_presets() -> None:
    assert {"classic_2p", "classic_3p", "classic_4p"} <= set(preset_names())


@pytest.mark.parametrize(
    ("name", "players", "hand", "draw", "go_out", "partnerships", "sides"),
    [
        ("classic_2p", 2, 15, 2, 2, False, 2),
        ("classic_3p", 3, 13, 1, 1, False, 3),
        ("classic_4p", 4, 11, 1, 1, True, 2),
    ],
)
def test_presets_resolve(
    name: str, players: int, hand: int, draw: int, go_out: int, partnerships: bool, sides: int
) -> None:
    r = load_rules(name)
    assert r.name == name
    assert r.num_players == players
    assert r.hand_size == hand
    assert r.draw_count == draw
    assert r.go_out_requires == go_out
    assert r.partnerships is partnerships
    assert r.num_sides == sides
    assert r.deck_size == 108
    assert r.resolved() == r  # load_rules returns a fully resolved rule set


def test_default_ruleset_is_unresolved_until_resolved() -> None:
    r = RuleSet(num_players=2)
    assert r.hand_size is None and r.draw_count is None and r.partnerships is None
    assert r.resolved().hand_size == 15


def test_preset_from_file_path(tmp_path: Path) -> None:
    path = write(tmp_path, "name: mine\nnum_players: 3\n")
    r = load_rules(path)
    assert (r.name, r.num_players, r.hand_size) == ("mine", 3, 13)
    assert load_rules(str(path)) == r


def test_empty_yaml_file_is_classic(tmp_path: Path) -> None:
    r = load_rules(write(tmp_path, "# nothing but a comment\n"))
    assert r == RuleSet().resolved()


def test_unknown_preset_lists_presets() -> None:
    with pytest.raises(RulesError) as exc:
        load_rules("classic_9p")
    msg = str(exc.value)
    assert "classic_9p" in msg
    for name in preset_names():
        assert name in msg


def test_missing_yaml_file_names_the_path(tmp_path: Path) -> None:
    path = tmp_path / "absent.yaml"
    with pytest.raises(RulesError, match=re.escape(str(path))):
        load_rules(path)


# --- initial meld minimum (C16) -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("score", "minimum"),
    [(-5, 15), (-1000, 15), (0, 50), (1495, 50), (1500, 90), (2995, 90), (3000, 120), (9999, 120)],
)
def test_minimum_for_bands(score: int, minimum: int) -> None:
    assert load_rules("classic_4p").minimum_for(score) == minimum


def test_minimum_for_custom_table(tmp_path: Path) -> None:
    path = write(tmp_path, "initial_meld_table: [[null, 0], [100, 10]]\n")
    r = load_rules(path)
    assert r.initial_meld_table == ((None, 0), (100, 10))
    assert [r.minimum_for(s) for s in (-1, 99, 100)] == [0, 0, 10]


# --- errors name the key and the file -----------------------------------------------------------


def test_unknown_key_names_key_and_file(tmp_path: Path) -> None:
    path = write(tmp_path, "num_players: 4\nhand_sise: 11\n")
    with pytest.raises(RulesError) as exc:
        load_rules(path)
    msg = str(exc.value)
    assert "hand_sise" in msg
    assert str(path) in msg
    assert "hand_size" in msg  # the known options are listed


def test_non_string_keys_are_reported_not_crashed(tmp_path: Path) -> None:
    # YAML 1.1 reads `on` as True and `1` as an int; sorting mixed keys must not raise TypeError.
    path = write(tmp_path, "on: 1\n1: 2\nfoo: 3\n")
    with pytest.raises(RulesError) as exc:
        load_rules(path)
    assert "foo" in str(exc.value) and str(path) in str(exc.value)


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("num_players: four\n", "num_players"),  # wrong type
        ("num_players: 7\n", "num_players"),  # out of range
        ("target_score: 5000.5\n", "target_score"),  # float for an int
        ("packs: true\n", "packs"),  # bool is not an int here
        ("draw_count: 3\n", "draw_count"),  # optional int out of range
        ("hand_size: 30\n", "hand_size"),
        ("wild_le_naturals: 1\n", "wild_le_naturals"),  # int for a bool
        ("partnerships: yes please\n", "partnerships"),
        ("name: ''\n", "name"),
        ("upcard_policy: cover\n", "upcard_policy"),  # bad choice string
        ("tie_rule: [draw]\n", "tie_rule"),
        ("reserve_pickup: immediate\n", "reserve_pickup"),  # valid choice, not implemented yet
        ("reserve_size: 11\nreserve_pickup: after_turn\n", "reserve_size"),  # no canasta closes (R4)
        ("num_players: 3\npartnerships: true\n", "partnerships"),
        ("num_players: 2\nask_partner: true\n", "ask_partner"),
        ("hand_size: 20\npacks: 1\njokers: 0\n", "hand_size"),  # the deal leaves no stock
    ],
)
def test_bad_values_name_key_and_file(tmp_path: Path, text: str, key: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(RulesError) as exc:
        load_rules(path)
    msg = str(exc.value)
    assert repr(key) in msg
    assert str(path) in msg


def test_a_reserve_comes_with_the_four_canasta_kinds(tmp_path: Path) -> None:
    """R4/P3: the kitty or foot joins the hand when a canasta closes, so it needs the capped melds;
    the twin of the classic-kinds refusal above."""
    text = ("reserve_size: 11\nreserve_pickup: after_turn\ncanasta_kinds: four\nmax_meld_size: 7\n"
            "go_out_requires: each_kind\n")
    assert load_rules(write(tmp_path, text)).reserve_size == 11


def test_bad_choice_lists_the_choices(tmp_path: Path) -> None:
    path = write(tmp_path, "upcard_policy: cover\n")
    with pytest.raises(RulesError, match="cover_and_freeze, keep"):
        load_rules(path)


@pytest.mark.parametrize(
    "table",
    [
        "oops",  # not a list
        "[]",  # empty
        "[[null, 15], [0]]",  # row of the wrong length
        "[[null, 15], 50]",  # row not a list
        "[[null, 15], [zero, 50]]",  # lower bound not an int
        "[[null, 15], [0, -1]]",  # negative minimum
        "[[null, 15], [0, fifty]]",  # minimum not an int
        "[[null, 15], [0, true]]",  # bool is not an int
        "[[0, 15], [1500, 90]]",  # first row must start at null (minus infinity)
        "[[null, 15], [1500, 90], [0, 50]]",  # bounds out of order
        "[[null, 15], [null, 50]]",  # a second null bound
    ],
)
def test_malformed_initial_meld_table_names_key_and_file(tmp_path: Path, table: str) -> None:
    path = write(tmp_path, f"initial_meld_table: {table}\n")
    with pytest.raises(RulesError) as exc:
        load_rules(path)
    msg = str(exc.value)
    assert "initial_meld_table" in msg
    assert str(path) in msg


def test_invalid_yaml_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "num_players: [4\nhand_size: 11\n")
    with pytest.raises(RulesError) as exc:
        load_rules(path)
    assert str(path) in str(exc.value)
    assert "YAML" in str(exc.value)


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, "- num_players\n- 4\n")
    with pytest.raises(RulesError, match=re.escape(str(path))):
        load_rules(path)


def test_rules_error_is_a_value_error() -> None:
    assert issubclass(RulesError, ValueError)


def test_direct_construction_is_validated() -> None:
    with pytest.raises(RulesError, match="'max_wilds'"):
        RuleSet(max_wilds=-1)


# --- round trips and overrides ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["classic_2p", "classic_3p", "classic_4p"])
def test_to_dict_from_dict_round_trip(name: str) -> None:
    r = load_rules(name)
    data = r.to_dict()
    assert isinstance(data["initial_meld_table"], list)  # plain data, e.g. for JSON checkpoints
    assert RuleSet.from_dict(data) == r
    assert load_rules(data) == r
    assert load_rules(r) == r


def test_round_trip_of_unresolved_defaults() -> None:
    r = RuleSet(name="x", num_players=3, go_out_bonus=250)
    assert RuleSet.from_dict(r.to_dict()) == r


def test_to_dict_survives_yaml(tmp_path: Path) -> None:
    import yaml

    r = load_rules("classic_2p", target_score=3000)
    path = write(tmp_path, yaml.safe_dump(r.to_dict()))
    assert load_rules(path) == r


def test_from_dict_refuses_non_mapping() -> None:
    with pytest.raises(RulesError, match="mapping"):
        RuleSet.from_dict([("num_players", 4)])  # type: ignore[arg-type]


def test_overrides_replace_options() -> None:
    r = load_rules("classic_4p", target_score=3000, go_out_bonus=0)
    assert (r.target_score, r.go_out_bonus, r.num_players) == (3000, 0, 4)
    assert load_rules("classic_4p").target_score == 5000  # the preset itself is unchanged


def test_overrides_are_resolved_after_merging() -> None:
    r = load_rules("classic_4p", num_players=2, name="two")
    assert (r.num_players, r.hand_size, r.draw_count, r.go_out_requires) == (2, 15, 2, 2)
    assert r.partnerships is False


def test_overrides_of_a_file(tmp_path: Path) -> None:
    path = write(tmp_path, "num_players: 3\ntarget_score: 3000\n")
    r = load_rules(path, target_score=2000, hand_size=12)
    assert (r.num_players, r.target_score, r.hand_size) == (3, 2000, 12)


def test_bad_override_names_key_and_source() -> None:
    with pytest.raises(RulesError) as exc:
        load_rules("classic_4p", target_score="lots")
    msg = str(exc.value)
    assert "'target_score'" in msg and "classic_4p" in msg and "override" in msg
    with pytest.raises(RulesError, match="'hand_sise'"):
        load_rules("classic_4p", hand_sise=11)


def test_ruleset_is_frozen_and_hashable() -> None:
    r = load_rules("classic_4p")
    with pytest.raises(AttributeError):
        r.num_players = 2  # type: ignore[misc]
    assert hash(r) == hash(load_rules("classic_4p"))
