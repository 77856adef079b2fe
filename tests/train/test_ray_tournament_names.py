"""Tournaments on the shared Ray cluster given agents that fail (round seven): a failing agent is
named in the local run's one line, not in Ray's traceback; one that cannot be pickled is named."""

from __future__ import annotations

import threading
from typing import Any

import pytest

import train.evaluation.tournament as tournament
from tests.failing_bots import Boom

pytestmark = pytest.mark.xdist_group("ray")  # the Ray tests share one cluster (conftest.py)


@pytest.fixture
def ray_here(cluster: str) -> Any:
    """The shared cluster, to which ``tests.failing_bots`` is sent by value (its workers need not
    import tests/)."""
    import ray

    import tests.failing_bots

    ray.cloudpickle.register_pickle_by_value(tests.failing_bots)
    return ray


class _Locked(Boom):
    """Plays, but holds a lock: it cannot be pickled for a Ray worker."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()


def test_on_a_ray_cluster_a_failing_agent_is_its_one_line_not_rays_traceback(ray_here: Any) -> None:
    entrants = [("boomer", Boom("boom")), "random"]
    with pytest.raises(ValueError) as on_ray:
        tournament.run("classic_2p", entrants, 2, plots=False, resamples=20, on_ray="local")
    assert str(on_ray.value) == "agent 'boomer': act() raised RuntimeError: boom from agent"
    played = tournament.run("classic_2p", [("fine", Boom()), "random"], 2, plots=False, resamples=20,
                            on_ray="local")  # the twin
    assert [r["entrant"] for r in played.rating_rows] == ["fine", "random"]


def test_on_a_ray_cluster_an_agent_that_does_not_pickle_is_named(ray_here: Any) -> None:
    want = r"^--ray: agent 'locked' cannot be sent to the Ray workers \(it does not pickle: TypeError: .*lock"
    with pytest.raises(ValueError, match=want + r".*\); play it without --ray$"):
        tournament.run("classic_2p", [("locked", _Locked()), "random"], 2, plots=False, resamples=20,
                       on_ray="local")
    played = tournament.run("classic_2p", [("locked", _Locked()), "random"], 2, plots=False, resamples=20)
    assert played.rating_rows[0]["entrant"] == "locked"  # the twin: without --ray it plays
