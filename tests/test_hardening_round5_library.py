"""The library surface under misuse, round five: the world sampler checks its observation (NaN, values
outside the Box), its k, seat, seed and mask, and names an impossible position a WorldError; SB3's
VecEnv and the Gymnasium VectorEnv refuse a render_mode they cannot honour (SB3's render() recursed);
a rule option given a numpy array is a RulesError naming it; a deal set refuses indices that are not
its deals (-1 wrapped, 0.7 truncated) and make_deal_set a count or version it cannot keep; render()
refuses a row or player that is no row or seat. Each refusal has a twin: the valid neighbour."""

from __future__ import annotations

import numpy as np
import pytest

from canasta_env.deal_sets import load_deal_set, make_deal_set
from canasta_env.engine import init, observe
from canasta_env.engine.observation import views
from canasta_env.engine.render import render
from canasta_env.envs.gym_env import CanastaVectorEnv
from canasta_env.envs.sb3_env import CanastaVecEnv
from canasta_env.rules import RulesError, load_rules
from canasta_env.worlds import WorldError, sample_worlds


def _one_line(exc: pytest.ExceptionInfo[BaseException], *words: str) -> None:
    text = str(exc.value)
    assert "\n" not in text and all(w in text for w in words), text


def _observation() -> tuple[np.ndarray, np.ndarray]:
    """Seat 0's observation and mask at the start of a classic_2p hand (seat 1 is to move)."""
    state = init("classic_2p", 1, seed=3)
    return observe(state, [0])[0], state.legal_action_mask[0]


# ---- the world sampler ------------------------------------------------------------------------
@pytest.mark.parametrize("value", [float("nan"), 1e6, -1.0])
def test_sample_worlds_refuses_an_observation_outside_its_bounds(value: float) -> None:
    """Was: ValueError 'negative dimensions are not allowed' (-1), 'array is too big' (NaN), and for
    1e6 an array of 120 million cards built before a broadcast error."""
    obs, _ = _observation()
    bad = obs.copy()
    bad[0] = value
    with pytest.raises(WorldError) as exc:
        sample_worlds("classic_2p", bad, 2)
    _one_line(exc, "observation[0]", "bounds")


@pytest.mark.parametrize(("options", "match"), [
    ({"k": 2.5}, "k must be an integer"), ({"k": 0}, "k must be in"),
    ({"k": 2**31 - 1}, "use a smaller batch"),  # was: an attempt to allocate terabytes
    ({"seat": True}, "seat must be an integer"), ({"seat": 0.5}, "seat must be an integer"),
    ({"seed": -1}, "out of range"), ({"seed": 1.5}, "seed must be an integer"),  # were: seed 2**64 - 1, 1
    ({"legal_mask": np.ones(5, bool)}, "legal_mask of shape"),  # was: a broadcast error
])
def test_sample_worlds_checks_k_seat_seed_and_mask(options: dict[str, object], match: str) -> None:
    obs, _ = _observation()
    kwargs: dict[str, object] = {"k": 2, **options}
    with pytest.raises(ValueError, match=match) as exc:
        sample_worlds("classic_2p", obs, **kwargs)  # type: ignore[arg-type]
    _one_line(exc)


def test_an_impossible_position_within_the_bounds_is_a_world_error() -> None:
    """A second pile top (a fifth joker) within the bounds: was CorruptStateError from refresh_mask,
    which the search agent, catching WorldError, did not name."""
    obs, _ = _observation()
    bad = obs.copy()
    views(bad, init("classic_2p", 1).params)["pile_top"][0] = 1.0
    with pytest.raises(WorldError, match="no position of these rules") as exc:
        sample_worlds("classic_2p", bad, 2)
    _one_line(exc, "JK")


def test_sample_worlds_of_a_real_observation_still_work() -> None:  # the twin
    obs, mask = _observation()
    worlds = sample_worlds("classic_2p", obs, np.int64(3), seed=2**64 - 1, seat=np.int64(0),
                           legal_mask=None)
    assert worlds.num_games == 3
    assert np.array_equal(observe(worlds, np.zeros(3, np.int64)), np.repeat(obs[None], 3, axis=0))
    again = sample_worlds("classic_2p", obs, 3, seed=2**64 - 1)
    assert np.array_equal(worlds.data, again.data)  # the same seed, the same worlds
    assert sample_worlds("classic_2p", obs, 2, seat=1, legal_mask=np.zeros_like(mask)).num_games == 2


# ---- render modes the vector envs cannot honour ------------------------------------------------
@pytest.mark.parametrize("mode", ["human", "rgb_array"])
def test_sb3_set_attr_refuses_a_render_mode(mode: str) -> None:
    """Was: set, then SB3's render() recursed through env_method('render') (RecursionError) or
    failed to tile the None images."""
    env = CanastaVecEnv(2)
    with pytest.raises(ValueError, match="only None") as exc:
        env.set_attr("render_mode", mode)
    _one_line(exc, "render_mode")
    assert env.render_mode is None
    env.set_attr("render_mode", None)  # the twin
    env.reset()
    with pytest.warns(UserWarning, match="render_mode"):
        assert env.render() is None


def test_the_vector_env_refuses_a_render_mode_it_dropped() -> None:
    import gymnasium

    with pytest.raises(ValueError, match="draws nothing") as exc:  # was: dropped silently
        CanastaVecEnv(2, render_mode="human")
    _one_line(exc, "render_mode")
    with pytest.raises(ValueError, match="draws nothing"):
        gymnasium.make_vec("canasta_env:Canasta-v0", num_envs=2, render_mode="ansi",
                           vectorization_mode="vector_entry_point")
    assert CanastaVectorEnv(2, render_mode=None).render_mode is None  # the twin


# ---- rule options -------------------------------------------------------------------------------
@pytest.mark.parametrize(("key", "value"), [
    ("tie_rule", np.array(["draw", "extra_hand"])), ("go_out_requires", np.array([1, 2])),
    ("upcard_policy", ["keep"]),
])
def test_an_array_for_a_choice_is_a_rules_error_naming_it(key: str, value: object) -> None:
    """Was: 'The truth value of an array with more than one element is ambiguous', naming nothing."""
    with pytest.raises(RulesError) as exc:
        load_rules("classic_2p", **{key: value})
    _one_line(exc, repr(key))


def test_choices_given_as_strings_still_load() -> None:  # the twin
    assert load_rules("classic_2p", tie_rule="draw", go_out_requires=1).tie_rule == "draw"
    assert load_rules("classic_2p", tie_rule=np.str_("draw")).tie_rule == "draw"
    assert load_rules("railroad_2p", go_out_requires="each_kind").go_out_requires == "each_kind"


# ---- deal sets ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("call", "match"), [
    (lambda d: d.deal(-1), "out of range"),  # was: the last deal
    (lambda d: d.deal(10**6), "out of range"),  # was: numpy's IndexError naming no set
    (lambda d: d.deal(1.5), "must be an integer"),  # was: numpy's IndexError
    (lambda d: d.deal(True), "must be an integer"),
    (lambda d: d.deals([0.7, 1.2]), "must be an integer"),  # was: deals 0 and 1
    (lambda d: d.first(2.5), "must be an integer"),  # was: TypeError from range()
    (lambda d: d.first(None), "must be an integer"),  # was: TypeError from '<'
])
def test_deal_set_indices_must_be_its_deals(call, match: str) -> None:  # type: ignore[no-untyped-def]
    deal_set = load_deal_set("v1", "classic_2p")
    with pytest.raises(ValueError, match=match) as exc:
        call(deal_set)
    _one_line(exc)


def test_deal_set_integer_indices_still_work() -> None:  # the twin
    deal_set = load_deal_set("v1", "classic_2p")
    assert np.array_equal(deal_set.deal(np.int64(3)).order, deal_set.deal(3).order)
    assert len(deal_set.deals(np.arange(4))) == len(deal_set.first(4)) == 4
    assert deal_set.deal(len(deal_set) - 1).dealer in (0, 1)


@pytest.mark.parametrize(("count", "version", "match"), [
    (0, "v1", "count must be in"),  # was: 'need at least one array to stack'
    (2.0, "v1", "count must be an integer"),  # was: TypeError from range()
    (2, "x" * 200, "version"),  # was: made, then refused when loaded
    (2, "", "version"), (2, "v\n1", "version"),
])
def test_make_deal_set_refuses_what_it_cannot_keep(count: object, version: str, match: str) -> None:
    with pytest.raises(ValueError, match=match) as exc:
        make_deal_set("classic_2p", count, 0, version)  # type: ignore[arg-type]
    _one_line(exc, "make_deal_set")


def test_make_deal_set_of_a_few_deals_still_works() -> None:  # the twin
    deal_set = make_deal_set("classic_2p", 2, 0, "test")
    assert (deal_set.name, len(deal_set)) == ("classic_2p-test", 2)


# ---- render -------------------------------------------------------------------------------------
@pytest.mark.parametrize(("row", "player", "match"), [
    (100, 0, "out of range"),  # was: numpy's IndexError
    (1.0, 0, "row must be an integer"),
    (0, 5, "not a seat"), (0, -1, "not a seat"),  # were: every hand hidden, 'view of P5'
    (0, True, "player must be an integer"),  # was: seat 1's hand, 'view of PTrue'
    (0, "0", "player must be an integer"),  # was: every hand hidden
])
def test_render_refuses_a_row_or_player_that_is_none(row: object, player: object, match: str) -> None:
    state = init("classic_2p", 2)
    with pytest.raises(ValueError, match=match) as exc:
        render(state, row, player)  # type: ignore[arg-type]
    _one_line(exc)


def test_render_of_a_row_and_seat_still_works() -> None:  # the twin
    state = init("classic_2p", 2)
    text = render(state, np.int64(1), np.int64(0))
    assert "view of P0" in text and render(state, 0, None).startswith("classic_2p")


def test_a_new_table_size_for_filled_in_rules_is_refused() -> None:
    """A loaded rule set has its table-size options filled in: moving it to four players kept
    15-card hands and no partnerships in silence."""
    with pytest.raises(RulesError, match="num_players 4 would keep partnerships, hand_size"):
        load_rules(load_rules("classic_2p"), num_players=4)


def test_a_table_size_given_by_name_or_in_full_still_loads() -> None:
    two = load_rules("classic_2p")
    assert load_rules("classic_2p", num_players=4).hand_size == 11  # by name: filled in for four
    assert load_rules(two, num_players=2) == two  # the same table size
    four = load_rules(two, num_players=4, hand_size=11, draw_count=1, go_out_requires=1, partnerships=True)
    assert (four.hand_size, four.partnerships) == (11, True)
    railroad = load_rules("railroad_2p", num_players=6)  # options a preset gives itself stay as given
    assert railroad.hand_size == load_rules("railroad_2p").hand_size


# ---- options that are a choice of strings ------------------------------------------------------
def _learner(**options: object) -> object:
    from canasta_env.envs.learner import LearnerConfig

    return LearnerConfig(rules="classic_2p", **options)  # type: ignore[arg-type]


def _raw_env(**options: object) -> object:
    from canasta_env.envs.pettingzoo_env import raw_env

    return raw_env("classic_2p", **options)  # type: ignore[arg-type]


def _rllib(**options: object) -> object:
    pytest.importorskip("ray")
    from canasta_env.envs.rllib_env import CanastaMultiAgentEnv

    return CanastaMultiAgentEnv(options)


def _pack(**options: object) -> object:
    from canasta_env.engine.layout import pack_params

    return pack_params(load_rules("classic_2p"), **options)  # type: ignore[arg-type]


CHOICES = [(_pack, "episode", "game"), (_learner, "episode", "game"),
           (_learner, "reward_mode", "win_loss"), (_learner, "illegal_action", "raise"),
           (_raw_env, "episode", "game"), (_raw_env, "reward_mode", "win_loss"),
           (_rllib, "illegal_action", "raise")]


@pytest.mark.parametrize(("make", "option", "valid"), CHOICES)
def test_an_array_for_an_option_choice_is_a_value_error_naming_it(make, option: str,  # type: ignore[no-untyped-def]
                                                                  valid: str) -> None:
    """Was: numpy's 'The truth value of an array with more than one element is ambiguous', naming
    no option (``value not in ("a", "b")`` compares the array element by element)."""
    with pytest.raises(ValueError, match=f"{option} must be ") as exc:
        make(**{option: np.array([valid, valid])})
    _one_line(exc, valid)


@pytest.mark.parametrize(("make", "option", "valid"), CHOICES)
def test_an_option_choice_given_as_a_string_still_works(make, option: str,  # type: ignore[no-untyped-def]
                                                        valid: str) -> None:  # the twin
    assert make(**{option: valid}) is not None
    assert make(**{option: np.str_(valid)}) is not None
    with pytest.raises(ValueError, match=f"{option} must be ") as exc:  # a wrong string: as before
        make(**{option: "bogus"})
    _one_line(exc, "'bogus'")


# ---- the last deal index ------------------------------------------------------------------------
def test_reset_rows_refuses_to_go_past_the_last_deal_index() -> None:
    """Was: the index wrapped to -2**31, a DealId that redeal refuses ('out of range')."""
    from canasta_env.engine import DealId, init_from_deals, reset_rows

    state = init_from_deals("classic_2p", [DealId(5, 0, 7), DealId(5, 1, 2**31 - 1)])
    before = state.data.copy()
    with pytest.raises(ValueError, match=r"row 1 is at deal index 2,147,483,647") as exc:
        reset_rows(state, [0, 1])
    _one_line(exc, "reset_rows", "redeal")
    assert np.array_equal(state.data, before)  # refused before any row was dealt


def test_reset_rows_up_to_the_last_deal_index_still_works() -> None:  # the twin
    from canasta_env.engine import DealId, init_from_deals, reset_rows

    state = init_from_deals("classic_2p", [DealId(5, 0, 2**31 - 2)])
    reset_rows(state, [0])
    assert state.deal_id(0) == DealId(5, 0, 2**31 - 1)
    replay = init_from_deals("classic_2p", [state.deal_id(0)])  # the address replays
    assert np.array_equal(replay.data, state.data)


# ---- memory for the observations ----------------------------------------------------------------
def test_init_counts_the_observations_of_its_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Was: a batch whose rows and masks fit, but not its (B, D) observations, was made and then
    failed with MemoryError on its first observe."""
    from canasta_env.engine import core

    probe = init("classic_4p", 2)
    per_game = (probe.data[0].nbytes + probe.legal_action_mask[0].nbytes
                + observe(probe, [0, 0])[0].nbytes)
    monkeypatch.setattr(core, "available_memory", lambda: 1000 * per_game - 1)
    with pytest.raises(ValueError, match="use a smaller batch") as exc:
        init("classic_4p", 1000)
    _one_line(exc, "1,000 classic_4p games")


def test_a_batch_and_its_observations_that_fit_still_init(monkeypatch: pytest.MonkeyPatch) -> None:
    from canasta_env.engine import NUM_ACTIONS, core
    from canasta_env.engine.core import batch_bytes
    from canasta_env.engine.layout import P_WIDTH
    from canasta_env.engine.observation import obs_dim
    from canasta_env.envs.learner import vector_env_bytes

    params = init("classic_4p", 1).params
    monkeypatch.setattr(core, "available_memory", lambda: batch_bytes(params, 1000))
    state = init("classic_4p", 1000)
    assert observe(state, np.zeros(1000, np.int64)).shape == (1000, obs_dim(params))
    # a vector env's estimate, which counted the observations already, is as it was
    width, dim = int(params[P_WIDTH]), obs_dim(params)
    assert vector_env_bytes(load_rules("classic_4p"), "hand", 10) == 10 * (
        4 * width + 3 * NUM_ACTIONS + 128 + 16 * dim)


# ---- deal set sizes ----------------------------------------------------------------------------
@pytest.mark.parametrize("count", [2**31 - 1, 621_341])
def test_make_deal_set_refuses_more_deals_than_a_file_holds(count: int) -> None:
    """Was: accepted, then hours of dealing (2**31 - 1) or a file load_deal_set refuses (its orders
    over MAX_MEMBER_BYTES)."""
    import time

    start = time.perf_counter()
    with pytest.raises(ValueError, match="more than a deal set of classic_2p can hold") as exc:
        make_deal_set("classic_2p", count, 0)
    _one_line(exc, "make_deal_set", f"{count:,}", "621,340")
    assert time.perf_counter() - start < 1


def test_a_deal_set_of_the_largest_count_still_saves_and_loads(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The twin: at ``max_deals`` the set is made, and its file loads (a member limit lowered so
    that the largest set is three deals)."""
    import canasta_env.deal_sets as ds

    rules = load_rules("classic_2p")
    monkeypatch.setattr(ds, "MAX_MEMBER_BYTES", ds._NPY_HEADER_BYTES + 3 * rules.deck_size)
    assert ds.max_deals(rules) == 3
    with pytest.raises(ValueError, match="can hold"):
        make_deal_set(rules, 4, 0)
    ds.save_deal_set(make_deal_set(rules, 3, 0, "big"), tmp_path / "big.npz")
    assert len(load_deal_set(tmp_path / "big.npz", rules)) == 3
