"""The model zoo: every shipped checkpoint loads by name for its preset and plays legal moves only
(``play_match`` raises on an illegal action); unknown names and other tables are refused."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")

from agents import make_agent  # noqa: E402
from agents.checkpoint import CheckpointError  # noqa: E402
from agents.learned.zoo import zoo_names, zoo_path  # noqa: E402
from agents.match import play_match  # noqa: E402


def test_the_zoo_ships_classic_2p_and_4p_and_railroad_2p() -> None:
    assert {"zoo:classic_2p", "zoo:classic_4p", "zoo:railroad_2p"} <= set(zoo_names())


@pytest.mark.parametrize("name", zoo_names())
def test_each_entry_loads_and_plays_legally(name: str) -> None:
    preset = name.removeprefix("zoo:")
    agent = make_agent(name, preset)
    result = play_match(preset, agent, make_agent("random", preset), 4, seed=3)
    assert 0.0 <= result.summary(resamples=10)["win_rate"] <= 1.0


def test_unknown_entry_names_the_shipped_ones() -> None:
    with pytest.raises(ValueError, match="shipped: .*zoo:classic_2p"):
        zoo_path("zoo:classic_9p")
    with pytest.raises(ValueError, match="unknown zoo agent"):
        make_agent("zoo:../../etc", "classic_2p")


def test_an_entry_refuses_another_table() -> None:
    with pytest.raises(CheckpointError):
        make_agent("zoo:classic_2p", "classic_4p")
    with pytest.raises(CheckpointError):  # the same player count, other rules
        make_agent("zoo:railroad_2p", "classic_2p")


def test_sampled_plays_legal_moves_drawn_from_the_policy_reproducibly() -> None:
    import numpy as np

    sampled = make_agent("sampled:zoo:classic_2p", "classic_2p")
    heuristic = make_agent("heuristic", "classic_2p")
    first = play_match("classic_2p", sampled, heuristic, 6, seed=3, rng_seed=1)  # raises on an illegal move
    again = play_match("classic_2p", sampled, heuristic, 6, seed=3, rng_seed=1)
    assert np.array_equal(first.margins, again.margins) and first.decisions == again.decisions
    argmax = make_agent("zoo:classic_2p", "classic_2p")
    argmax_play = play_match("classic_2p", argmax, heuristic, 6, seed=3, rng_seed=1)
    assert not np.array_equal(first.margins, argmax_play.margins)  # the draws change the play


@pytest.mark.parametrize("name", ["sampled:heuristic", "sampled:", "sampled:sampled:zoo:classic_2p",
                                  "sampled:zoo:nothing"])
def test_sampled_takes_only_a_learned_policy(name: str) -> None:
    with pytest.raises(ValueError) as info:
        make_agent(name, "classic_2p")
    assert "\n" not in str(info.value)
