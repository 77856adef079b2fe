"""A Ray cluster is started (or joined) only after every other option is checked: ``canasta league
--ray local --league nosuch`` started a local Ray and then refused the name, and so did a
tournament naming an unknown agent."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Cli = Callable[..., tuple[int, str]]


class Started(Exception):
    """Raised by the stand-in for starting Ray: the command got as far as the cluster."""


def _no_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    import train.evaluation.ray_units as ray_units
    import train.learning.ray_rollouts as ray_rollouts

    def start(*args: Any, **kwargs: Any) -> None:
        raise Started

    monkeypatch.setattr(ray_rollouts, "connect_for", start)
    monkeypatch.setattr(ray_units, "connect", start)


def test_training_refuses_a_bad_league_before_ray_starts(tmp_path: Path, cli_here: Cli,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    _no_ray(monkeypatch)
    status, err = cli_here("league", "--rules", "classic_2p", "--ray", "local", "--league", "nosuch",
                           "--run-dir", str(tmp_path / "run"), "--total-timesteps", "256")
    assert status == 2 and "nosuch" in err and err.count("\n") == 1  # before: Ray started first
    with pytest.raises(Started):  # the twin: with a good league the cluster is next
        cli_here("league", "--rules", "classic_2p", "--ray", "local", "--league", "greedy",
                 "--run-dir", str(tmp_path / "run"), "--total-timesteps", "256")


def test_a_tournament_refuses_an_unknown_agent_before_ray_starts(tmp_path: Path, cli_here: Cli,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _no_ray(monkeypatch)
    status, err = cli_here("tournament", "--rules", "classic_2p", "--ray", "local", "--agents", "random",
                           "nosuch", "--hands", "2")
    assert status == 2 and "nosuch" in err and err.count("\n") == 1
    with pytest.raises(Started):  # the twin
        cli_here("tournament", "--rules", "classic_2p", "--ray", "local", "--agents", "random", "greedy",
                 "--hands", "2")
