"""``act(observations, legal_action_mask, rng)`` given what a library user may pass by mistake: every
agent kind refuses bad input in one line naming it (``agents._obs``: the shared checks), returns -1
for a row without a legal action and a legal action for every other row. Each refusal has a twin:
the valid neighbour still plays."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from agents import make_agent
from canasta_env.engine import init, observe, step
from canasta_env.policy import RandomAgent

SMALL_SEARCH = "search:k=2,n=2,depth=4"
# agents that read observations
DECODERS = ("greedy", "heuristic", "heuristic:eager", "planner:racer", SMALL_SEARCH)


def _position(preset: str = "classic_2p", count: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """Observations and masks a few random moves into the hand (several legal actions a row)."""
    state = init(preset, count, seed=4)
    rng = np.random.default_rng(0)
    for _ in range(9):
        step(state, RandomAgent().act(None, state.legal_action_mask, rng))
    return observe(state, state.current_player.astype(np.int64)), state.legal_action_mask.copy()


@pytest.fixture(scope="module")
def learned() -> dict[str, Any]:
    """The shipped 2-player policy, argmax and sampled (skipped without torch)."""
    pytest.importorskip("torch")
    return {"zoo:classic_2p": make_agent("zoo:classic_2p", "classic_2p"),
            "sampled:zoo:classic_2p": make_agent("sampled:zoo:classic_2p", "classic_2p")}


def _agents(learned: dict[str, Any] | None = None) -> dict[str, Any]:
    agents = {name: make_agent(name, "classic_2p") for name in DECODERS}
    return {**agents, **(learned or {})}


def _legal(actions: np.ndarray, mask: np.ndarray) -> bool:
    rows = np.arange(mask.shape[0])
    has = mask.any(axis=1)
    return bool(actions.dtype == np.int64 and actions.shape == (mask.shape[0],)
                and (mask[rows[has], actions[has]]).all() and (actions[~has] == -1).all())


def _refused(words: str, call: Callable[..., Any], *args: Any) -> str:
    """The one-line ValueError of ``call(*args)``, matching ``words``."""
    with pytest.raises(ValueError, match=words) as info:
        call(*args)
    text = str(info.value)
    assert "\n" not in text
    return text


def _bad_observations(obs: np.ndarray) -> dict[str, tuple[np.ndarray, str]]:
    nan, inf, big = obs.copy(), obs.copy(), obs.copy()
    nan[2, 7] = np.nan
    inf[0, 3] = np.inf
    big[1, 0] = 1000.0
    return {"nan": (nan, r"row 2, column 7 \(hand\) is nan"),
            "inf": (inf, r"row 0, column 3 \(hand\) is inf"),
            "out of range": (big, r"row 1, column 0 \(hand\) is 1000.0, outside \[0, 1\]"),
            "transposed": (obs.T.copy(), r"expected observations of shape \(B, 183\)"),
            "one row, not a batch": (obs[0], r"expected observations of shape \(B, 183\)"),
            "another table's": (_position("classic_4p")[0],
                                r"shape \(B, 183\) for classic_2p, got \(6, 219\)")}


@pytest.mark.parametrize("name", DECODERS)
def test_observations_that_are_no_observation_are_refused_in_one_line(name: str) -> None:
    """NaN, infinite and out-of-range entries were decoded to garbage counts (NaN cast to -2**31)
    and played silently by the rule agents; search raised 'array is too big' or 'negative
    dimensions are not allowed' from deep inside the world sampler, or played a 4-player
    observation on a 2-player table when the row had one legal action."""
    obs, mask = _position()
    agent = make_agent(name, "classic_2p")
    for what, (bad, words) in _bad_observations(obs).items():
        bad_mask = mask if bad.ndim == 2 and bad.shape[0] == mask.shape[0] else mask[: max(bad.shape[0], 1)]
        text = _refused(words, agent.act, bad, bad_mask, np.random.default_rng(0))
        assert text.startswith(name.split(":")[0]), (what, text)
    # the twin: the same observations, valid, in float64, Fortran order or reversed, still play
    for good, good_mask in ((obs, mask), (obs.astype(np.float64), mask), (np.asfortranarray(obs), mask),
                            (obs[::-1], mask[::-1])):
        assert _legal(agent.act(good, good_mask, np.random.default_rng(0)), good_mask)


def test_the_learned_policy_checks_its_inputs_too(learned: dict[str, Any]) -> None:
    """Torch's shape errors ('mat1 and mat2 shapes cannot be multiplied') named neither the agent
    nor the observations; a NaN was blamed on the network ('weights too large ... diverged run');
    a reversed batch (negative strides) was refused by torch though valid."""
    obs, mask = _position()
    for name, agent in learned.items():
        for bad, words in _bad_observations(obs).values():
            if bad.ndim == 2 and bad.shape[0] == mask.shape[0]:
                _refused(words.split(r" \(hand\)")[0], agent.act, bad, mask, np.random.default_rng(0))
            else:
                _refused(r"expected observations of shape \(B, 183\)", agent.act, bad, mask[:1],
                         np.random.default_rng(0))
        nan = obs.copy()
        nan[0, 0] = np.nan
        assert "network" not in _refused("is nan", agent.action_probabilities, nan, mask)
        assert _legal(agent.act(obs[::-1], mask[::-1], np.random.default_rng(0)), mask[::-1]), name
        readonly = obs.copy()
        readonly.flags.writeable = False
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # torch warned of a non-writable array
            assert _legal(agent.act(readonly, mask, np.random.default_rng(0)), mask), name


@pytest.mark.parametrize("value, words", [(2, r"is 2\.0;"), (-1, r"is -1\.0;"), (0.5, r"is 0\.5;"),
                                          (np.nan, "is nan;")])
def test_mask_entries_other_than_0_and_1_are_refused(value: float, words: str,
                                                     learned: dict[str, Any]) -> None:
    """Cast to bool, 2, -1, 0.5 and NaN each made an illegal action legal, and the agents played it
    (the heuristic and greedy chose action 2 or 55, outside the real mask)."""
    obs, mask = _position()
    odd = mask.astype(np.float64)
    odd[1, np.flatnonzero(~mask[1])[0]] = value
    for name, agent in _agents(learned).items():
        text = _refused(words, agent.act, obs, odd, np.random.default_rng(0))
        assert "legal_action_mask row 1" in text, name


def test_a_mask_of_strings_is_refused(learned: dict[str, Any]) -> None:
    """np.asarray(['False', ...], bool) is all True: every action was read as legal."""
    obs, mask = _position()
    for agent in _agents(learned).values():
        _refused("legal_action_mask of dtype <U5", agent.act, obs, mask.astype(str), np.random.default_rng(0))


def test_masks_of_0_and_1_in_any_numeric_type_play_as_the_bool_mask(learned: dict[str, Any]) -> None:
    """The twin of the refusals above: int, uint8, float and object 0/1 masks are the same mask."""
    obs, mask = _position()
    for name, agent in _agents(learned).items():
        want = agent.act(obs, mask, np.random.default_rng(3))
        for same in (mask.astype(np.int64), mask.astype(np.uint8), mask.astype(np.float32),
                     mask.astype(object), mask.tolist()):
            assert np.array_equal(agent.act(obs, same, np.random.default_rng(3)), want), name


def test_a_missing_mask_is_refused_by_the_learned_policy(learned: dict[str, Any]) -> None:
    """legal_action_mask=None broadcast as 'nothing legal' and the policy answered action 0 for
    every row."""
    obs, _ = _position()
    for agent in learned.values():
        _refused(r"legal_action_mask of shape", agent.act, obs, None, np.random.default_rng(0))


def test_rows_without_a_legal_action_get_minus_one_from_every_agent(learned: dict[str, Any]) -> None:
    """Search and the learned policy answered 0 (an illegal action) where the rule agents say -1."""
    obs, mask = _position()
    mask[2] = False
    for name, agent in {**_agents(learned), "random": RandomAgent()}.items():
        actions = agent.act(obs, mask, np.random.default_rng(0))
        assert actions[2] == -1, name
        assert _legal(actions, mask), name  # the twin: every other row plays
        empty = agent.act(obs[:0], mask[:0], np.random.default_rng(0))
        assert empty.shape == (0,) and empty.dtype == np.int64, name


@pytest.mark.parametrize("name", ["random", SMALL_SEARCH, "sampled:zoo:classic_2p"])
def test_agents_that_draw_need_an_rng_that_draws_one_uniform_per_row(name: str) -> None:
    """Search and the sampled policy raised AttributeError ("'NoneType' object has no attribute
    'random'") for rng=None or an int seed, and IndexError or a broadcast error for an rng
    whose random(B) gives another number of values; the random agent's kernel read past a short
    draw (garbage actions, no error)."""
    if name.startswith("sampled"):
        pytest.importorskip("torch")
    agent = make_agent(name, "classic_2p")
    obs, mask = _position()

    class Short:
        def random(self, size: int) -> np.ndarray:
            return np.full(3, 0.5)

    class Outside:
        def random(self, size: int) -> np.ndarray:
            return np.full(size, 5.0)

    for rng, words in ((None, "needs rng, a numpy Generator .* got NoneType"), (7, "got int"),
                       (Short(), r"shape \(3,\); expected one uniform per row, shape \(6,\)"),
                       (Outside(), r"gave 5.0, not a uniform in \[0, 1\)")):
        _refused(words, agent.act, obs, mask, rng)
    # the twin: a Generator, a RandomState and the numpy module all draw; a seed repeats the play
    for rng in (np.random.default_rng(1), np.random.RandomState(1), np.random):
        assert _legal(agent.act(obs, mask, rng), mask)
    first = agent.act(obs, mask, np.random.default_rng(11))
    assert np.array_equal(first, agent.act(obs, mask, np.random.default_rng(11)))


def test_search_names_the_row_whose_observation_is_no_live_hand() -> None:
    """An observation within the bounds but impossible (every card counted twice) raised the world
    sampler's WorldError without naming the agent or the row."""
    obs, mask = _position()
    bad = obs.copy()
    bad[3, :] = 1.0
    agent = make_agent(SMALL_SEARCH, "classic_2p")
    text = _refused("search: act: observation row 3", agent.act, bad, mask, np.random.default_rng(0))
    assert "deck" in text or "unseen" in text
    assert _legal(agent.act(obs, mask, np.random.default_rng(0)), mask)  # the twin


@pytest.mark.parametrize("name", ["greedy", "heuristic"])
def test_read_only_and_fortran_inputs_compile_no_new_kernel(name: str) -> None:
    """A read-only mask or a Fortran-ordered batch is another numba signature: the kernel compiled
    again (about 10 s, on the hot path of evaluation) before the inputs were made C-contiguous and
    writeable."""
    from agents.greedy import greedy_kernel
    from agents.rule_based.heuristic import heuristic_kernel

    kernel = greedy_kernel if name == "greedy" else heuristic_kernel
    agent = make_agent(name, "classic_2p")
    obs, mask = _position()
    want = agent.act(obs, mask, None)
    signatures = len(kernel.signatures)
    readonly = mask.copy()
    readonly.flags.writeable = False
    assert np.array_equal(agent.act(np.asfortranarray(obs), readonly, None), want)
    assert np.array_equal(agent.act(obs, np.asfortranarray(mask), None), want)
    assert len(kernel.signatures) == signatures
