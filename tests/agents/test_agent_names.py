"""Agent names are checked where they are parsed: every option of ``search:...`` has a type and a
range, names nest at most two deep, and gauntlet, tournament and exploit give the same one-line
error as ``make_agent`` before any game is played or any file written."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents import make_agent
from agents.search import MAX_WORK, check_search_options
from canasta_env.rules import load_rules
from train.cli.main import main as cli_main

BAD_SEARCH = {
    "search:k=999999999": "k = 999999999 is outside",
    "search:k=0": "k = 0 is outside",
    "search:n=0": "n = 0 is outside",
    "search:n=100000": "n = 100000 is outside",
    "search:depth=-1": "depth = -1 is outside",
    "search:depth=100000": "depth = 100000 is outside",
    "search:seed=1234567890123456789012345678901": "seed = ",
    "search:seed=-5": "seed = -5 is outside",
    "search:guard=1e300": "guard = ",
    "search:guard=nan": "is not finite",
    "search:min_gain=inf": "is not finite",
    "search:k=1024,n=64,depth=1000": "rollout steps per decision exceed",
    "search:k=abc": "is not an integer",
    "search:rollout=search:rollout=zoo:classic_2p": "cannot roll out with a search",
    "search:rollout=search": "cannot roll out with a search",
    "search:rollout= search:k=2": "cannot roll out with a search",
    "search:bogus=1": "unknown option",
    "search:k=2,k=3": "given twice",
    "search:k": "is not OPTION=VALUE",
    # depth 0 plays to the end of the hand: counted as the rules' step cap, not as one step
    "search:k=1024,n=64,depth=0": "depth 0 (to the end of the hand: up to 4,000 steps)",
    # a search under its module:attribute name is still a search
    "search:rollout=agents.search:SearchAgent": "cannot roll out with a search",
    "search:rollout=heuristic:bogus,checkpoint=agents/zoo/classic_2p": "both name the rollout policy",
    "search:rollout=os:system,checkpoint=agents/zoo/classic_2p": "both name the rollout policy",
    "search:checkpoint=agents/zoo/classic_2p,rollout=heuristic": "both name the rollout policy",
    "search:rollout=os:system": "standard-library module",
    "search:rollout=heuristic:bogus": "'bogus' (first) is not a profile",
    "search:phases=+": "phases names no phase",
    "search:phases=++": "phases names no phase",
    "search:phases=draw+": "phases has an empty entry",
}


@pytest.mark.parametrize(("name", "words"), sorted(BAD_SEARCH.items()))
def test_a_bad_search_name_is_refused_in_one_line(name: str, words: str) -> None:
    with pytest.raises(ValueError) as info:
        make_agent(name, "classic_2p")
    assert words in str(info.value) and "\n" not in str(info.value)


def test_search_names_within_range_build() -> None:
    assert make_agent("search:k=4,n=2,depth=10,seed=9223372036854775807", "classic_2p").k == 4
    check_search_options({"k": 32, "n": 4, "depth": 60})  # a partnership default: well inside
    with pytest.raises(ValueError):
        check_search_options({"k": MAX_WORK + 1, "n": 1, "depth": 1})


def test_direct_keyword_options_get_the_same_checks() -> None:
    with pytest.raises(ValueError, match="k = 5000 is outside"):
        make_agent("search", "classic_2p", k=5000)
    with pytest.raises(ValueError, match="both name the rollout policy"):
        make_agent("search", "classic_2p", rollout="greedy", checkpoint="agents/zoo/classic_2p")
    with pytest.raises(ValueError, match="cannot roll out with a search"):
        make_agent("search", "classic_2p", k=2, n=2, depth=4, rollout="agents.search:SearchAgent")
    with pytest.raises(ValueError, match="phases names no phase"):
        make_agent("search", "classic_2p", phases="")


def test_depth_zero_counts_the_rules_step_cap() -> None:
    """``depth=0`` (to the end of the hand) costs up to ``max_steps_per_hand`` steps per rollout."""
    assert make_agent("search:depth=0", "classic_2p").depth == 0  # 16 x 4 x 4,000: inside
    check_search_options({"k": 2, "n": 2, "depth": 0}, max_steps=100_000)
    with pytest.raises(ValueError, match="up to 200,000 steps"):
        check_search_options({"k": 2, "n": 2, "depth": 0}, max_steps=200_000)
    with pytest.raises(ValueError, match="rollout steps per decision exceed"):
        make_agent("search", load_rules("classic_2p", max_steps_per_hand=200_000), k=2, n=2, depth=0)


@pytest.mark.parametrize("command", [
    ["gauntlet", "search:k=999999999", "--deals", "4"],
    ["gauntlet", "heuristic", "--opponents", "search:rollout=search:rollout=zoo:classic_2p", "--deals", "4"],
    ["tournament", "--agents", "random", "search:seed=99999999999999999999999999", "--hands", "4"],
    ["exploit", "search:depth=-3", "--budget", "64"],
])
def test_commands_refuse_a_bad_name_before_any_work(command: list[str], tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli_main(command) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"canasta {command[0]}: error: search options") and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == [], "nothing written before the name was checked"


@pytest.mark.parametrize(("family", "budget"), [("ppo", "100000000000000000000"), ("ppo", "0"),
                                                ("heuristic", "0"), ("heuristic", "1000000")])
def test_exploit_budget_outside_its_range_is_refused_before_any_work(
        family: str, budget: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli_main(["exploit", "random", "--family", family, "--budget", budget]) == 2
    err = capsys.readouterr().err
    assert "--budget" in err and "is outside" in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []
