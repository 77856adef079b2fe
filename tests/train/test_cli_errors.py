"""Every ``canasta`` subcommand over a corpus of bad inputs: each answers with one line
``canasta CMD: error: ...`` and exit status 2, quickly, never a traceback; ``--debug`` shows it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from train.cli.main import main as cli_main

BILLION_LAUGHS = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 9))


@pytest.fixture(scope="module")
def bad(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Paths of bad input files, by name."""
    d = tmp_path_factory.mktemp("bad")
    files = {
        "billion.yaml": BILLION_LAUGHS.encode(),
        "utf16.yaml": "num_players: 2\n".encode("utf-16"),
        "latin1.yaml": "name: caf\xe9\n".encode("latin-1"),
        "list.yaml": b"- 1\n- 2\n",
        "dup.yaml": b"rules: classic_2p\nrules: classic_4p\n",
        "deep.yaml": b"a: " + b"[" * 200 + b"]" * 200 + b"\n",
        "badtype.yaml": b"num_envs: many\n",
        "unknown.yaml": b"num_envz: 3\n",
        "run_dir_list.yaml": b"run_dir: [a]\n",  # TRAIN's --run_dir overrides it
        "progress_maybe.yaml": b"progress: maybe\n",  # TRAIN's --progress overrides it
        "garbage.jsonl": b"\x00\xff\xfe not json\n",
        "notobject.jsonl": b"[1, 2, 3]\n",
        "hugeint.jsonl": b'{"format": "canasta-record", "hand_number": ' + b"9" * 5000 + b"}\n",
        "ladder.json": b"{not json",
        "shape_ladder.json": b'{"format": "canasta-ladder", "ratings": {"a": 1}, "tournaments": []}',
        "a_file": b"x",
    }
    for name, data in files.items():
        (d / name).write_bytes(data)
    (d / "a_dir").mkdir()
    os.mkfifo(d / "fifo.yaml")  # opening it would wait for a writer forever
    os.symlink(d / "loop_b", d / "loop_a")
    os.symlink(d / "loop_a", d / "loop_b")
    extra = ["a_dir", "fifo.yaml", "loop_a"]
    return {name: str(d / name) for name in [*files, *extra]} | {"missing": str(d / "missing.yaml")}


def _rules_cases(cmd: list[str], flag: str) -> list[list[str]]:
    return [[*cmd, flag, v] for v in ("{billion.yaml}", "{utf16.yaml}", "{latin1.yaml}", "{list.yaml}",
                                      "{deep.yaml}", "{a_dir}", "{missing}", "no_such_preset", "",
                                      "{fifo.yaml}", "{loop_a}")]


TRAIN = ["--total_timesteps", "64", "--run_dir", "{tmp}/run", "--progress", "false"]
CASES: list[list[str]] = [
    *_rules_cases(["bench", "--seconds", "0.1"], "--rules"),
    ["bench", "--batch", "0"], ["bench", "--batch", "-3"], ["bench", "--batch", "100000000000"],
    ["bench", "--seconds", "-1"], ["bench", "--seconds", "nan"], ["bench", "--stagger", "-1"],
    ["bench", "--stagger", "10001"],
    ["bench", "--api", "aec", "--batch", "2"], ["bench", "--api", "gym", "--observe"],
    *_rules_cases(["demo"], "--rules"),
    ["demo", "--seed", "-1"],
    *_rules_cases(["train", *TRAIN], "--rules"),
    *[["train", *TRAIN, "--config", f"{{{f}}}"]
      for f in ("billion.yaml", "utf16.yaml", "list.yaml", "dup.yaml", "deep.yaml", "badtype.yaml",
                "unknown.yaml", "run_dir_list.yaml", "progress_maybe.yaml", "a_dir", "missing")],
    ["train", *TRAIN, "--num_envs", "0"], ["train", *TRAIN, "--num_envs", "10000000000"],
    ["train", *TRAIN, "--batch_size", "0"], ["train", *TRAIN, "--learning_rate", "nan"],
    ["train", *TRAIN, "--learning_rate", "-1"], ["train", *TRAIN, "--gamma", "2"],
    ["train", *TRAIN, "--net_arch", "0"], ["train", *TRAIN, "--net_arch", "100000", "100000"],
    ["train", *TRAIN, "--total_timesteps", "-5"], ["train", *TRAIN, "--seed", "-1"],
    ["train", *TRAIN, "--opponent", "nonesuch"], ["train", *TRAIN, "--opponent", "{a_dir}"],
    ["train", *TRAIN, "--imitate", "heuristic", "--imitate-steps", "1000000000"],
    ["train", *TRAIN, "--imitate", "heuristic", "--imitate-workers", "200"],
    ["train", *TRAIN, "--imitate", "heuristic", "--imitate-opponent", "nonesuch"],
    ["train", *TRAIN, "--imitate", "heuristic", "--imitate-opponent", "league"],
    ["train", *TRAIN, "--imitate", "search:k=0"], ["train", *TRAIN, "--opponent", "search:width=2"],
    ["train", *TRAIN, "--init-from", "{a_dir}"], ["train", *TRAIN, "--init-from", "zoo:nonesuch"],
    ["train", *TRAIN, "--eval_opponents", "nonesuch"], ["train", *TRAIN, "--eval_deal_set", "nonesuch"],
    ["train", *TRAIN[:2], "--run_dir", "{a_file}"],
    ["train", *TRAIN[:2], "--run_dir", "{tmp}/none", "--resume"],
    ["train", *TRAIN, "--config", "{fifo.yaml}"], ["train", *TRAIN, "--eval_deal_set", "{fifo.yaml}"],
    ["selfplay", *TRAIN, "--pool_size", "0"], ["selfplay", *TRAIN, "--latest_ratio", "1.5"],
    ["selfplay", *TRAIN, "--config", "{billion.yaml}"],
    *_rules_cases(["play", "--hands", "1"], "--rules"),
    ["play", "--opponent", "nonesuch"], ["play", "--hands", "0"], ["play", "--human", "9"],
    ["play", "--human", "-1"], ["play", "--opponent", "{a_dir}"], ["play", "--partner", "nonesuch"],
    ["play", "--record", "{a_dir}", "--hands", "1"],
    ["replay", "{missing}"], ["replay", "{a_dir}"], ["replay", "{garbage.jsonl}"],
    ["replay", "{fifo.yaml}"], ["replay", "{loop_a}"],
    ["replay", "{notobject.jsonl}"], ["replay", "{hugeint.jsonl}"], ["replay", "{billion.yaml}"],
    *_rules_cases(["tournament", "--agents", "random", "greedy", "--hands", "2"], "--rules"),
    ["tournament", "--agents", "random", "nonesuch"], ["tournament", "--agents", "random", "search:k=x"],
    ["tournament", "--agents", "random", "{a_dir}"],
    ["tournament", "--agents", "random", "greedy", "--hands", "0"],
    ["tournament", "--agents", "random", "greedy", "--hands", "-4"],
    ["tournament", "--agents", "random", "greedy", "--hands", "1000000000000"],
    ["tournament", "--agents", "random", "greedy", "--resamples", "0"],
    ["tournament", "--agents", "random", "greedy", "--seed", "-1"],
    ["tournament", "--agents", "random", "greedy", "--deal-set", "nonesuch"],
    ["tournament", "--agents", "random", "greedy", "--deal-set", "{garbage.jsonl}"],
    ["tournament", "--agents", "random", "greedy", "--hands", "2", "--out", "{a_file}"],
    ["tournament", "--agents", "random", "greedy", "--hands", "2", "--ladder", "{ladder.json}"],
    ["tournament", "--agents", "random", "greedy", "--hands", "2", "--ladder", "{a_dir}"],
    ["tournament", "--agents", "random", "greedy", "--hands", "2", "--ladder", "{shape_ladder.json}"],
    ["tournament", "--agents", "random", "greedy", "--vs", "nonesuch"],
    ["tournament", "--agents", "random", "greedy", "--hands", "2", "--out", ""],
    ["tournament", "--agents", "random", "greedy", "--hands", "2", "--ladder", ""],
    ["tournament", "--agents", "random", "greedy", "--hands", "2", "--ladder", "{loop_a}"],
    ["tournament", "--agents", "random", "greedy", "--hands", "2", "--deal-set", "{fifo.yaml}"],
    ["tournament", "--config", "{fifo.yaml}"],
    ["tournament", "--agents", "random", "greedy", "--partners", "heuristic"],
    *[["tournament", "--config", f"{{{f}}}"] for f in ("billion.yaml", "utf16.yaml", "list.yaml", "dup.yaml",
                                                     "a_dir", "missing")],
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: " ".join(c)[:70])
def test_bad_input_gives_one_line_and_status_2(case: list[str], bad: dict[str, str], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    names = {"tmp": str(tmp_path), **bad}
    argv = [re.sub(r"\{([^}]+)\}", lambda m: names[m.group(1)], a) for a in case]
    start = time.monotonic()
    try:
        status = cli_main(argv)  # a traceback here is an exception that fails the test
    except SystemExit as exc:  # argparse's own errors: usage, then the error line
        status = exc.code
    elapsed = time.monotonic() - start
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 2, (status, out[-500:], err[-500:])
    assert lines and lines[-1].startswith(f"canasta {argv[0]}: error: "), err[-1000:]
    assert "Traceback" not in out + err
    assert elapsed < 5, f"took {elapsed:.1f} s"


def test_debug_shows_the_traceback(bad: dict[str, str]) -> None:
    cmd = [sys.executable, "-m", "train.cli", "demo", "--rules", bad["billion.yaml"]]
    quiet = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    loud = subprocess.run([*cmd, "--debug"], capture_output=True, text=True, timeout=120)
    assert quiet.returncode == 2 and "Traceback" not in quiet.stderr
    assert loud.returncode != 0 and "Traceback" in loud.stderr and "RulesError" in loud.stderr


def test_an_empty_out_is_refused_not_read_as_the_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    base = ["tournament", "--agents", "random", "greedy", "--hands", "2", "--no-plots"]
    assert cli_main([*base, "--out", ""]) == 2
    assert "canasta tournament: error: --out must not be empty" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing written in the working directory
    assert cli_main([*base, "--out", "named"]) == 0  # the twin: a named folder is used
    assert (tmp_path / "named" / "hands.csv").is_file()


def test_a_ladder_that_is_a_symlink_loop_is_refused_and_left_alone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    loop = tmp_path / "ladder.json"
    os.symlink(tmp_path / "other", loop)
    os.symlink(loop, tmp_path / "other")
    argv = ["tournament", "--agents", "random", "greedy", "--hands", "2", "--no-plots"]
    assert cli_main([*argv, "--ladder", str(loop)]) == 2
    assert "symbolic link loop" in capsys.readouterr().err
    assert loop.is_symlink()  # not replaced by a fresh ladder file


def test_bench_flag_conflicts_are_one_line_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["bench", "--api", "aec", "--batch", "2"]) == 2
    assert capsys.readouterr().err.strip() == ("canasta bench: error: --api aec is one game (batch 1); "
                                               "--batch applies to --api engine and vec")


@pytest.mark.parametrize("text, flag, value", [
    ("run_dir: [a]\n", "run_dir", "runs/x"), ("progress: maybe\n", "progress", False),
    ("num_envs: many\n", "num_envs", 8),
])
def test_a_bad_value_in_the_config_is_refused_even_when_a_flag_overrides_it(
        tmp_path: Path, text: str, flag: str, value: object) -> None:
    from train.learning.config import load_args, read_options

    config = tmp_path / "train.yaml"
    config.write_text(text)
    for call in (lambda: read_options(str(config), {flag: value}),
                 lambda: load_args(str(config), {flag: value})):
        with pytest.raises(ValueError, match=rf"^{re.escape(str(config))}: training option '{flag}'"):
            call()
    config.write_text(f"{flag}: {value!r}\n".replace("False", "false"))  # the twin: a good value
    assert read_options(str(config), {flag: value})[flag] == value


@pytest.mark.parametrize(("argv", "says"), [
    (["play", "--seed", "-1"], "--seed -1: seeds are integers"),
    (["bench", "--seed", "-1", "--seconds", "0.1"], "--seed -1: seeds are integers"),
    (["bench", "--batch", "100000000000", "--seconds", "0.1"], "--batch 100000000000: want 1 to"),
    (["bench", "--threads", "9999", "--seconds", "0.1"], "--threads 9999: this machine runs at most")])
def test_errors_name_the_flag_not_the_function_behind_it(
        argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(argv) == 2
    assert says in capsys.readouterr().err
