"""Agents from outside the package, by the names the CLI takes: ``module:attribute`` (a factory,
a class or an agent object in the user's code), an entry point of ``canasta_rl.agents``, agent
objects as tournament partners, and agents by name in the Gym and SB3 envs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest

from agents import make_agent
from canasta_env.envs.sb3_env import CanastaVecEnv

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))
import tiny_bots  # noqa: E402


@pytest.mark.parametrize("name", ["tiny_bots:make_bot", "tiny_bots:make_bot_without_rules",
                                  "tiny_bots:FirstLegal", "tiny_bots:INSTANCE"])
def test_module_attribute_names_a_factory_class_or_agent(name: str) -> None:
    agent = make_agent(name, "classic_2p")
    mask = np.zeros((3, 10), dtype=bool)
    mask[:, [4, 7]] = True
    assert isinstance(agent, tiny_bots.FirstLegal)
    assert agent.act(np.zeros((3, 1), np.float32), mask, None).tolist() == [4, 4, 4]


@pytest.mark.parametrize(("name", "says"), [
    ("tiny_bots:nope", "has no attribute 'nope'"), ("no_such_module_xyz:f", "cannot import module"),
    ("tiny_bots:NOT_AN_AGENT", "neither an agent nor a factory"),
    ("tiny_bots:broken", "RuntimeError: bot exploded"),
    ("os:system", "standard-library module"), ("subprocess:getoutput", "standard-library module"),
    ("nonesuch", "unknown agent")])
def test_bad_outside_names_fail_in_one_line(name: str, says: str) -> None:
    with pytest.raises(ValueError, match=says) as err:
        make_agent(name, "classic_2p")
    assert "\n" not in str(err.value)


def _cli(*args: str, pythonpath: list[Path]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(str(p) for p in [*pythonpath, Path.cwd()]))
    return subprocess.run([sys.executable, "-m", "train.cli", *args], capture_output=True, text=True,
                          timeout=300, env=env)


def test_tournament_takes_a_module_attribute_and_an_entry_point_agent(tmp_path: Path) -> None:
    dist = tmp_path / "tiny_bots_plugin-0.1.dist-info"  # what pip leaves for an installed plugin
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: tiny-bots-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[canasta_rl.agents]\nfirst_legal = tiny_bots:make_bot\n")
    out = tmp_path / "t"
    proc = _cli("tournament", "--rules", "classic_4p", "--agents", "tiny_bots:make_bot", "first_legal",
                "heuristic", "--hands", "8", "--duplicate", "--out", str(out), "--no-plots",
                pythonpath=[tmp_path, TESTS])
    assert proc.returncode == 0, proc.stderr[-2000:]
    ratings = (out / "ratings.csv").read_text()
    assert "tiny_bots:make_bot" in ratings and "first_legal" in ratings
    # negative twin: without the plugin on the path the name is unknown, in one line
    proc = _cli("tournament", "--rules", "classic_4p", "--agents", "first_legal", "heuristic",
                "--hands", "8", pythonpath=[TESTS])
    assert proc.returncode == 2 and "unknown agent 'first_legal'" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_tournament_partners_may_be_an_agent_object() -> None:
    from train.evaluation.tournament import run

    result = run("classic_4p", ["heuristic", "greedy"], hands=8, duplicate=True,
                 partners=tiny_bots.FirstLegal(), plots=False)
    assert "partner:python:FirstLegal" in result.labels
    with pytest.raises(ValueError, match="partners must be an agent name or an agent object"):
        run("classic_4p", ["heuristic", "greedy"], hands=8, partners=3.5, plots=False)


def test_envs_take_opponents_by_name() -> None:
    env = gymnasium.make("canasta_env:Canasta-v0", opponent="heuristic")
    env.reset(seed=0)
    assert type(env.unwrapped._core.config.opponent).__name__ == "HeuristicAgent"  # type: ignore[attr-defined]
    venv = CanastaVecEnv(4, "classic_4p", opponent="tiny_bots:make_bot", partners="greedy")
    venv.reset()
    assert isinstance(venv.venv.core.config.opponent, tiny_bots.FirstLegal)
    with pytest.raises(ValueError, match="unknown agent"):
        gymnasium.make("canasta_env:Canasta-v0", opponent="nonesuch")
    with pytest.raises(ValueError, match="opponent must be an agent name or an object with act"):
        CanastaVecEnv(4, "classic_2p", opponent=42)


class _Raises:
    def act(self, obs: Any, mask: Any, rng: Any) -> Any:
        raise RuntimeError("boom\non two lines")


class _Returns:
    def __init__(self, make: Any) -> None:
        self.make = make

    def act(self, obs: Any, mask: Any, rng: Any) -> Any:
        return self.make(mask)


@pytest.mark.parametrize(("bot", "says"), [
    (_Raises(), "act() raised RuntimeError: boom on two lines"),
    (_Returns(lambda m: None), "actions must be a 1-D sequence of integers, got None"),
    (_Returns(lambda m: np.zeros(0, dtype=np.int64)), "expected"),
    (_Returns(lambda m: m.argmax(axis=1) + 0.5), "must hold integers"),  # never truncated to a move
    (_Returns(lambda m: np.full(m.shape[0], 99999)), "(seat 1): row 0: action 99999 (out of range)")])
def test_an_agent_that_fails_in_play_is_named_in_one_line(bot: Any, says: str) -> None:
    from agents.match import play_match

    with pytest.raises(ValueError) as err:
        play_match("classic_2p", make_agent("heuristic", "classic_2p"), bot, 2, labels=("heuristic", "mine"))
    msg = str(err.value)
    assert msg.startswith("agent 'mine'") and says in msg and "\n" not in msg, msg


@pytest.mark.parametrize("deals", ["0", "-3", "99999999999999999999"])
def test_agents_match_refuses_a_deal_count_out_of_bounds(
        deals: str, capsys: pytest.CaptureFixture[str]) -> None:
    from agents.match import main

    with pytest.raises(SystemExit) as code:
        main(["classic_2p", "heuristic", "greedy", "--deals", deals])
    err = capsys.readouterr().err
    assert code.value.code == 2 and f"--deals {deals}: want 1 to 10,000,000 deals" in err
