"""Agent names as a user or a fuzzer types them: the registered name ``policy`` given
bare, a checkpoint path that is a dangling link or names nothing, and a tournament config whose
``agents`` list holds other than names. Each is a one-line ``ValueError`` (exit status 2 on the
command line, no traceback) naming what is wrong; each refusal has its twin that still works."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agents import make_agent
from agents.match import main as match_main
from agents.match import play_match
from agents.rule_based.heuristic_config import FIELD_RANGES
from train.cli.main import main as cli_main

ZOO_2P = str(Path(__file__).parents[2] / "agents" / "zoo" / "classic_2p")
NEEDS_A_CHECKPOINT = "agent 'policy' needs a checkpoint"


def _refused(name: str, words: str, rules: str = "classic_2p") -> str:
    with pytest.raises(ValueError) as info:
        make_agent(name, rules)
    msg = str(info.value)
    assert words in msg and "\n" not in msg, msg
    return msg


@pytest.mark.parametrize("name", ["policy", "search:rollout=policy", "search:k=2,rollout=policy"])
def test_the_bare_name_policy_is_refused_in_one_line(name: str) -> None:
    # before: TypeError: _policy() missing 1 required keyword-only argument: 'checkpoint' (a traceback
    # from every command, though the error for an unknown name lists 'policy' among the known ones)
    _refused(name, NEEDS_A_CHECKPOINT)


def test_policy_with_its_checkpoint_still_builds() -> None:  # the twin
    pytest.importorskip("torch")
    pytest.importorskip("sb3_contrib")
    agent = make_agent("policy", "classic_2p", checkpoint=ZOO_2P)
    assert callable(agent.act)
    _refused("sampled:policy", "'sampled:' takes a learned policy")  # unchanged: never a bare name


@pytest.mark.parametrize("command", [
    ["gauntlet", "policy", "--deals", "2", "--opponents", "random"],
    ["gauntlet", "random", "--deals", "2", "--opponents", "random", "--also", "policy"],
    ["gauntlet", "random", "--deals", "2", "--opponents", "search:rollout=policy"],
    ["crossplay", "--agents", "random", "policy", "--opponents", "random", "--deals", "2"],
    ["crossplay", "--agents", "random", "greedy", "--opponents", "policy", "--deals", "2"],
    ["tournament", "--agents", "random", "policy", "--hands", "2", "--no-plots", "--out", "t"],
    ["tournament", "--rules", "classic_4p", "--agents", "random", "greedy", "--partners", "policy",
     "--hands", "2", "--no-plots", "--out", "t"],
    ["exploit", "policy", "--budget", "64"],
    ["exploit", "random", "--family", "heuristic", "--budget", "3", "--deals", "2", "--also", "policy"],
    ["play", "--opponent", "policy", "--seed", "1", "--hands", "1"],
])
def test_every_command_refuses_the_bare_policy_name_in_one_line(
        command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli_main(command) == 2
    out, err = capsys.readouterr()
    assert err.startswith(f"canasta {command[0]}: error: {NEEDS_A_CHECKPOINT}"), err
    assert err.count("\n") == 1 and "Traceback" not in out + err
    assert list(tmp_path.iterdir()) == [], "nothing written before the name was checked"


def test_agents_match_refuses_the_bare_policy_name_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        match_main(["classic_2p", "policy", "random", "--deals", "2", "--seed", "1"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"agents.match: error: {NEEDS_A_CHECKPOINT}") and err.count("\n") == 1


def test_a_dangling_link_is_called_one(tmp_path: Path) -> None:
    # before: "unknown agent '.../link'; known: random, ..." (the link was taken for no path at all)
    pytest.importorskip("torch")
    link = tmp_path / "link"
    os.symlink(tmp_path / "gone", link)
    _refused(str(link), "link: a symbolic link to nothing")
    _refused(f"sampled:{link}", "link: a symbolic link to nothing")
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    _refused(str(loop), "loop: a symbolic link to nothing")


def test_a_link_to_a_checkpoint_still_plays(tmp_path: Path) -> None:  # the twin
    pytest.importorskip("torch")
    pytest.importorskip("sb3_contrib")
    link = tmp_path / "link"
    os.symlink(ZOO_2P, link)
    for name in (str(link), f"sampled:{link}"):
        agent = make_agent(name, "classic_2p")
        result = play_match("classic_2p", agent, make_agent("random", "classic_2p"), 1)
        assert result.margins.shape == (1, 2)


@pytest.mark.parametrize("name", ["/nonexistent/checkpoint", "runs/no-such-run", "sampled:runs/no-such-run",
                                  "foo/bar:baz"])
def test_a_missing_checkpoint_path_says_so(name: str) -> None:
    # before: "unknown agent 'runs/no-such-run'; known: ..." and for sampled: "'sampled:' takes a
    # learned policy (zoo:NAME or a checkpoint or run folder), not 'runs/no-such-run'"
    shown = name.removeprefix("sampled:")
    _refused(name, f"unknown agent '{shown}': no such checkpoint or run directory")


@pytest.mark.parametrize(("name", "words"), [  # the twins: names that are no path keep their errors
    ("no-such-agent", "unknown agent 'no-such-agent'; known: random"),
    ("sampled:no-such-run", "'sampled:' takes a learned policy"),
    ("sampled:search:checkpoint=runs/x", "'sampled:' takes a learned policy"),
    ("sampled:heuristic:a/b", "'sampled:' takes a learned policy"),
    ("heuristic:a/b", "'a/b' (first) is not a profile"),
    ("zoo:a/b", "unknown zoo agent 'zoo:a/b'"),
])
def test_names_that_are_no_path_keep_their_errors(name: str, words: str) -> None:
    _refused(name, words)


def test_search_checkpoint_option_with_a_missing_path_still_says_so() -> None:  # the twin
    pytest.importorskip("torch")
    _refused("search:checkpoint=runs/no-such-run", "runs/no-such-run: no such checkpoint or run directory")


@pytest.mark.parametrize("body", ["agents: [1, random]\n", "agents: [null, random]\n",
                                  "agents: [[random], greedy]\n", "agents: [random, true]\n"])
def test_a_config_agents_list_of_non_names_is_called_that(body: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # before: "tournament option 'agents' = [1, 'random'] is not of type list" (it is a list)
    config = tmp_path / "t.yaml"
    config.write_text(body)
    assert cli_main(["tournament", "--config", str(config), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "tournament option 'agents' = " in err and "is not a list of agent names (text)" in err, err
    assert err.count("\n") == 1 and not (tmp_path / "out").exists()


def test_a_config_agents_list_of_names_still_plays(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "t.yaml"  # the twin, and a scalar of the wrong type keeps its message
    config.write_text("agents: random\n")
    assert cli_main(["tournament", "--config", str(config), "--out", str(tmp_path / "bad")]) == 2
    assert "'agents' = 'random' is not of type list" in capsys.readouterr().err
    config.write_text("agents: [random, greedy]\nhands: 2\nno_plots: true\n")
    assert cli_main(["tournament", "--config", str(config), "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "results.json").is_file()


@pytest.mark.parametrize("rules", ["classic_2p", "classic_4p"])
@pytest.mark.parametrize("end", ["low", "high"])
def test_every_heuristic_field_at_the_end_of_its_range_plays_a_hand(rules: str, end: str) -> None:
    """A name accepted at parse time plays: every field at once at the low or the high end of the
    range ``heuristic:FIELD=VALUE`` accepts."""
    spec = ",".join(f"{field}={getattr(r, end):g}" for field, r in FIELD_RANGES.items())
    agent = make_agent(f"heuristic:{spec}", rules)
    result = play_match(rules, agent, make_agent("random", rules), 1, seed=1)
    assert result.margins.shape[0] == 1
