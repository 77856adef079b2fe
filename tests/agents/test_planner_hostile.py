"""The planner (``agents.rule_based.planner``) and its rule search (``canasta exploit --family planner``)
given what a hostile or careless user may pass: names, ``act`` inputs, the weights' whole search box on
every preset, a run without numba's compiler and the command's options. Each refusal has a twin: the
valid neighbour still works."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agents import agent_key, make_agent
from agents.match import play_match
from agents.rule_based.planner import FIELD_RANGES, FIELDS, PROFILES, planner_config
from canasta_env.rules import preset_names
from tests.agents.test_act_inputs_hostile import _position

SAFETY = list(FIELDS).index("safety")


def _one_line(words: str, call: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    """The one-line ValueError of ``call(*args, **kwargs)``, holding ``words``."""
    with pytest.raises(ValueError) as info:
        call(*args, **kwargs)
    text = str(info.value)
    assert words in text and "\n" not in text, text
    return text


# ---- names --------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", ["racer,safety=1,safety=2", "safety=1, safety = 1",
                                  "banker,risk=1,safety=2,risk=2"])
def test_a_field_given_twice_is_refused(spec: str) -> None:
    """The last value was played in silence (and ``agent_key`` took the name for that agent), where
    ``heuristic:`` refuses a field given twice."""
    field = spec.split(",")[-1].partition("=")[0].strip()
    _one_line(f"planner: {field} is given twice", make_agent, f"planner:{spec}", "classic_2p")
    assert agent_key(f"planner:{spec}", "classic_2p") == f"planner:{spec}"  # its own key, to be refused


def test_twin_a_profile_s_field_changed_once_and_other_fields_are_read() -> None:
    racer = planner_config("racer")
    assert planner_config("racer,safety=2")[SAFETY] == 2 and planner_config("racer,hand_weight=7")[3] == 7
    assert (planner_config("racer, safety = 2, risk = 1.5") != racer).sum() == 2
    assert agent_key("planner:racer,safety=1", "classic_2p") == agent_key("planner: racer", "classic_2p")


def test_planner_config_refuses_a_spec_that_is_not_a_string() -> None:
    """``planner_config(None)`` was an AttributeError ('NoneType' object has no attribute 'split')."""
    for spec in (None, 3, b"racer", ["racer"]):
        _one_line("is not a string", planner_config, spec)
    assert np.array_equal(planner_config(""), planner_config("balanced"))  # the twin


@pytest.mark.parametrize("spec, words", [
    (",", "unknown profile ''"), ("racer,", "'' is not FIELD=VALUE"), ("racer,,safety=1", "'' is not FIELD"),
    ("racer=1", "'racer=1' is not FIELD=VALUE"), ("safety=1,racer", "'racer' is not FIELD=VALUE"),
    ("safety=1e309", "is outside [0, 5]"), ("safety=" + "9" * 5000, "is outside [0, 5]"),
    ("safety==1", "'=1' is not a number"), ("RACER", "unknown profile 'RACER'"),
])
def test_malformed_names_are_one_line(spec: str, words: str) -> None:
    text = _one_line(words, make_agent, f"planner:{spec}", "classic_2p")
    assert len(text) < 400


def test_twin_spellings_of_a_number_and_empty_specs_build_the_planner() -> None:
    assert np.array_equal(make_agent("planner:", "classic_2p").cfg, planner_config("balanced"))
    assert planner_config("safety=-0")[SAFETY] == 0 and planner_config("safety= +2 ")[SAFETY] == 2
    for style in (1, None, b"racer"):
        _one_line("is not a string", make_agent, "planner", "classic_2p", style=style)
    assert make_agent("planner", "classic_2p", style="racer").name == "planner:racer"


# ---- act ----------------------------------------------------------------------------------------
def test_act_refuses_what_every_agent_refuses_in_one_line() -> None:
    obs, mask = _position()
    agent = make_agent("planner:racer", "classic_2p")
    nan = obs.copy()
    nan[2, 7] = np.nan
    odd = mask.astype(np.float64)
    odd[1, np.flatnonzero(~mask[1])[0]] = 2
    for bad_obs, bad_mask, words in (
            (nan, mask, "row 2, column 7 (hand) is nan"), (obs.T.copy(), mask, "got (183, 6)"),
            (obs[0], mask[:1], "got (183,)"), (_position("classic_4p")[0], mask, "got (6, 219)"),
            (obs, odd, "legal_action_mask row 1"), (obs, mask.astype(str), "dtype <U5"),
            (obs, mask[:3], "legal_action_mask of shape (3, 106)"),
            (obs, None, "legal_action_mask of shape")):
        assert _one_line(words, agent.act, bad_obs, bad_mask, None).startswith("planner:racer: act")
    # the twin: float64, Fortran order, 0/1 masks play as the checked batch; no legal action is -1
    want = agent.act(obs, mask, None)
    for good, good_mask in ((obs.astype(np.float64), mask.astype(np.uint8)), (np.asfortranarray(obs), mask)):
        assert np.array_equal(agent.act(good, good_mask, np.random.default_rng(0)), want)
    mask[2] = False
    actions = agent.act(obs, mask, None)
    assert actions[2] == -1 and mask[[0, 1, 3, 4, 5], actions[[0, 1, 3, 4, 5]]].all()
    assert agent.act(obs[:0], mask[:0], None).shape == (0,)


# ---- play ---------------------------------------------------------------------------------------
CORNERS = ["planner:" + ",".join(f"{f}={r[i]:g}" for f, r in FIELD_RANGES.items()) for i in (0, 1)]


@pytest.mark.parametrize("preset", preset_names())
def test_the_corners_of_the_search_box_play_every_preset_legally_to_the_end(preset: str) -> None:
    """The rule search (``--family planner``) plays any weights inside ``FIELD_RANGES``: its corners
    and every profile finish their hands (nothing truncated) and repeat their play."""
    for a, b in ((CORNERS[0], CORNERS[1]), (CORNERS[1], CORNERS[1]), (CORNERS[0], "random")):
        first = play_match(preset, make_agent(a, preset), make_agent(b, preset), 8, seed=2)
        again = play_match(preset, make_agent(a, preset), make_agent(b, preset), 8, seed=2)
        assert first.truncated == 0 and np.array_equal(first.margins, again.margins), (a, b)
    for profile in PROFILES:
        assert play_match(preset, make_agent(f"planner:{profile}", preset), make_agent("planner", preset), 4,
                          seed=5).truncated == 0, profile


def test_it_plays_without_numba_s_compiler_as_with_it(tmp_path: Path) -> None:
    script = ("from agents import make_agent\nfrom agents.match import play_match\n"
              "r = play_match('classic_2p', make_agent('planner:racer', 'classic_2p'), "
              "make_agent('planner:banker', 'classic_2p'), 1, seed=5)\n"
              "print(r.truncated, r.margins.tolist())\n")
    outs = []
    for jit in ("1", "0"):
        env = {**os.environ, "NUMBA_DISABLE_JIT": jit}
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                              env=env, cwd=Path(__file__).parents[2])
        assert proc.returncode == 0, proc.stderr[-2000:]
        outs.append(proc.stdout.strip())
    assert outs[0] == outs[1] and outs[0].startswith("0 ")


# ---- canasta exploit --family planner ---------------------------------------------------------
def test_the_rule_search_refuses_an_unknown_family_in_one_line() -> None:
    """``exploit_rules(family='nosuch')`` was a KeyError ('nosuch'), after the agent was built."""
    pytest.importorskip("cma")
    from train.evaluation.rule_exploit import exploit_rules

    for family in ("nosuch", "ppo", None, ["planner"]):
        _one_line("is not one of heuristic, planner", exploit_rules, "nosuch", "classic_2p", 3, 2,
                  fresh_deals=2, family=family)
    report = exploit_rules("greedy", "classic_2p", 3, 2, fresh_deals=2, family="planner")  # the twin
    assert make_agent(report["spec"], "classic_2p").cfg.shape == (len(FIELDS),)


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    from train.cli.main import main

    capsys.readouterr()
    try:
        status = main(["exploit", *args])
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return status, out, err


def test_a_budget_too_small_for_the_planner_search_names_the_planner(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The message named 'the default heuristic' for --family planner."""
    pytest.importorskip("cma")
    base = ["greedy", "--family", "planner", "--deals", "2", "--fresh-deals", "2", "--no-progress"]
    status, _, err = _cli(capsys, *base, "--budget", "2", "--run-dir", str(tmp_path / "a"))
    assert status == 2 and err.count("\n") == 1 and "the default planner and a generation" in err, err
    status, out, err = _cli(capsys, *base, "--budget", "3", "--run-dir", str(tmp_path / "b"))
    assert status == 0, err
    spec = out.split("after 3 evaluations")[1].split(": ", 1)[1].splitlines()[0]
    assert agent_key(spec, "classic_2p")[0] == "planner"  # the printed name builds a planner


@pytest.mark.parametrize("also", [["planner:balanced"], ["planner: "], ["planner:safety=1"]])
def test_also_naming_the_exploited_planner_by_another_spelling_is_refused(
        also: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("cma")
    status, _, err = _cli(capsys, "planner", "--family", "planner", "--budget", "3", "--deals", "2",
                          "--also", *also, "--run-dir", str(tmp_path / "x"))
    assert status == 2 and err.count("\n") == 1 and "the agent being exploited" in err, err
    status, _, err = _cli(capsys, "planner", "--family", "planner", "--budget", "3", "--deals", "2",
                          "--fresh-deals", "2", "--also", "planner:racer", "--no-progress", "--run-dir",
                          str(tmp_path / "y"))
    assert status == 0, err  # the twin: another profile is an agent to beat as well
