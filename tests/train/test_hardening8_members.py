"""Training opponents, league members and the small commands, round eight: an imitation teacher that
fails in play, the run's own folder (or what ``--overwrite`` deletes) named as an agent or start, a
league member spelt as one of the pool's own names, ``canasta demo --seed`` out of range and
``canasta import`` naming a flag it has not. Each hostile case is refused in one line (the folder
left as it was); its twin shows the valid neighbouring input still works.

One tiny self-play run (two checkpoints, each a snapshot of the pool) is shared by the module; each
test works on a copy.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from agents.checkpoint import latest_checkpoint, load_checkpoint
from tests.failing_bots import Boom
from tests.one_line import one_error
from tests.tiny_runs import TINY, copy_run, folder_digest
from train.cli.main import main as cli_main

TINY_RUN = [*TINY, "--eval-every", "256"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("shared") / "run"
    assert cli_main(["selfplay", *TINY_RUN, "--run-dir", str(run), "--total-timesteps", "256"]) == 0
    assert latest_checkpoint(run).name == "ckpt_000000256"  # type: ignore[union-attr]
    return run


@pytest.fixture
def run(trained: Path, tmp_path: Path) -> Path:
    return copy_run(trained, tmp_path)


def _selfplay(run: Path, steps: int, *extra: str) -> int:
    return cli_main(["selfplay", *TINY_RUN, "--run-dir", str(run), "--total-timesteps", str(steps), *extra])


@pytest.mark.parametrize(("mode", "message"), [
    ("illegal", "for row 0, which is not legal there"),  # cloned as targets
    ("oor", "act() chose action 1000000 for row 0"),  # IndexError from the cross-entropy
    ("float", "act(): actions must hold integers"),  # truncated into moves in silence
    ("none", "act(): actions must be a 1-D sequence of integers, got None"),  # int(None) TypeError
    ("boom", "act() raised RuntimeError: boom from agent"),  # a traceback naming no agent
])
def test_an_imitation_teacher_failing_is_one_line_naming_it(mode: str, message: str) -> None:
    from canasta_env.rules import load_rules
    from train.learning import imitation

    rules = load_rules("classic_2p")
    with pytest.raises(ValueError) as info:
        imitation.collect(rules, Boom(mode, after=2), "random", 4, 40, seed=1, gamma=0.99,
                          teacher_name="my_bots:teacher")
    text = str(info.value)
    assert "agent 'my_bots:teacher' (imitate teacher): " in text and message in text and "\n" not in text
    # the twin: a teacher playing legal integers is cloned
    demos = imitation.collect(rules, Boom("ok"), "random", 4, 800, seed=1, gamma=0.99)
    assert len(demos) > 0


def _refused_untouched(run: Path, capsys: pytest.CaptureFixture[str], words: str, steps: int,
                       *flags: str) -> None:
    """``selfplay`` with ``flags`` (``{run}`` filled in) refused in one line saying ``words``, the run
    folder as it was."""
    before = folder_digest(run)
    capsys.readouterr()
    assert _selfplay(run, steps, *(f.format(run=run) for f in flags)) == 2
    assert words in one_error(capsys, "selfplay")
    assert folder_digest(run) == before


@pytest.mark.parametrize("flags", [
    ["--league", "heuristic", "{run}/"],  # the learner itself, frozen at each start
    ["--league", "sampled:{run}"],
    ["--eval-opponents", "random", "search:k=2,n=2,rollout={run}"],
])
def test_the_run_s_own_folder_is_no_agent_of_the_run(run: Path, flags: list[str],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    # was: accepted, another agent under the same name after every resume
    _refused_untouched(run, capsys, "this run's own folder", 384, "--resume", *flags)
    # the twin: one of its checkpoints, which a resume never changes, is a fixed member
    assert _selfplay(run, 384, "--resume", "--league", "heuristic", str(run / "ckpt_000000128")) == 0
    assert load_checkpoint(run / "ckpt_000000384").state["league_results"].keys() >= {
        str(run / "ckpt_000000128"), "ckpt_000000128"}


@pytest.mark.parametrize("flags", [
    ["--league", "heuristic", "{run}/ckpt_000000256"],
    ["--init-from", "{run}/ckpt_000000256"],
    ["--init-from", "{run}"],
])
def test_overwrite_refuses_a_member_or_start_it_would_delete(run: Path, flags: list[str],
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    # was: loaded, deleted, then named by config.json: every resume failed ("no such checkpoint")
    _refused_untouched(run, capsys, "names what --overwrite deletes", 128, "--overwrite", *flags)
    # the twin: a copy in a folder of the run that --overwrite keeps
    shutil.copytree(run / "ckpt_000000256", run / "keep" / "ckpt_000000256")
    kept = str(run / "keep" / "ckpt_000000256")
    assert _selfplay(run, 128, "--overwrite", "--league", "heuristic", kept, "--init-from", kept) == 0
    assert _selfplay(run, 256, "--resume") == 0


@pytest.mark.parametrize("name", ["latest", "ckpt_000000128"])
def test_a_league_member_spelt_as_a_pool_name_is_refused(trained: Path, tmp_path: Path, name: str,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    from agents.learned.pool import PoolAgent

    shutil.copytree(trained / "ckpt_000000128", tmp_path / name)
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    # was: its results and league logs merged with the pool's own member of that name
    assert _selfplay(tmp_path / "r", 256, "--league", name) == 2
    assert "the pool's name for one of its own members" in one_error(capsys, "selfplay")
    with pytest.raises(ValueError, match="the pool names its own members so"):
        PoolAgent(Boom(), 2, league={name: Boom()})
    # the twin: the same folder spelt as another path
    assert _selfplay(tmp_path / "r", 256, "--league", f"./{name}") == 0
    results = load_checkpoint(tmp_path / "r" / "ckpt_000000256").state["league_results"]
    assert list(results) == ["latest", f"./{name}", "ckpt_000000128", "ckpt_000000256"]


def test_demo_refuses_a_seed_out_of_range_before_printing(capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert cli_main(["demo", "--rules", "classic_2p", "--seed", "-1"]) == 2
    out = capsys.readouterr()
    # was: the hand's title on stdout, then the engine's error naming init, not --seed
    assert out.out == "" and out.err == "canasta demo: error: --seed -1: seeds are integers in [0, 2**64)\n"
    assert cli_main(["demo", "--rules", "classic_2p", "--seed", str(2**64 - 1)]) == 0  # the twin
    assert capsys.readouterr().out.startswith("One hand of classic_2p")


def test_import_names_its_own_argument_for_a_folder_it_cannot_use(
        trained: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "m.zip"
    assert cli_main(["export", str(trained), str(model), "--format", "sb3"]) == 0
    capsys.readouterr()
    target = tmp_path / "other" / "ckpt_000000128"
    shutil.copytree(trained / "ckpt_000000128", target)
    assert cli_main(["import", str(model), str(target), "--rules", "classic_2p", "--trust"]) == 2
    line = one_error(capsys, "import")
    assert "a checkpoint, not a run directory; choose another RUN_DIR" in line and "--run-dir" not in line
    # the twin: a new folder
    assert cli_main(["import", str(model), str(tmp_path / "new"), "--rules", "classic_2p", "--trust"]) == 0
    assert json.loads((tmp_path / "new" / "config.json").read_text())["rules"] == "classic_2p"


def test_an_exploiter_league_in_the_working_folder_names_its_main_agent_as_a_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--run-dir .``: the main agent was the bare ``ckpt_N``, the pool's own name for a snapshot,
    so the league exploiter's league was refused after the first round."""
    import train.learning.exploiter_league as exploiter_league
    from agents.learned.pool import clashing_name

    seen: list[str] = []

    def exploiters(args: Any, main: str, run: Path, done: int, stop: Any) -> list[str]:
        seen.append(main)
        return []

    monkeypatch.setattr(exploiter_league, "_ppo_exploiters", exploiters)
    monkeypatch.chdir(tmp_path)
    assert cli_main(["league", *TINY_RUN, "--run-dir", ".", "--total-timesteps", "256",
                     "--exploiter-every", "128"]) == 0
    assert seen and all(main.startswith("./ckpt_") and not clashing_name(main) for main in seen), seen
