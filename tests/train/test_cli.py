"""The ``canasta`` command: fast help, no torch, smoke runs of ``bench`` and ``demo``, and the options
of every subcommand declared one way (help, defaults shown once, underscored aliases, examples)."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from train.cli.main import COMMANDS
from train.common.options import add_options, opt

REPO = Path(__file__).resolve().parents[2]
REQUIRED_KEYS = ("batch", "decisions_per_s", "hands_per_s", "decisions_per_hand")


def _canasta() -> list[str]:
    """The installed console script next to this interpreter, else ``python -m train.cli.main``."""
    script = Path(sys.executable).with_name("canasta")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "train.cli"]


def _run(args: list[str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    # Generous timeout: on a cold numba cache the first engine call compiles for tens of seconds.
    return subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=timeout)


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return _run([sys.executable, "-c", code])


def test_help_is_fast_and_lists_only_implemented_commands() -> None:
    start = time.perf_counter()
    proc = _run([*_canasta(), "--help"], timeout=60)
    elapsed = time.perf_counter() - start
    assert proc.returncode == 0, proc.stderr
    assert elapsed < 3.0, f"canasta --help took {elapsed:.2f} s"  # docs/training.md: < 1 s; slack for CI
    for name in COMMANDS:
        assert name in proc.stdout
    for future in set(("train", "selfplay", "tournament", "play", "replay")) - set(COMMANDS):
        assert not re.search(rf"^\s+{future}\s", proc.stdout, re.MULTILINE), future


def test_help_imports_nothing_heavy() -> None:
    code = (
        "import sys, contextlib, io\n"
        "import train.cli.main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        train.cli.main.main(['--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(sorted(m for m in ('torch', 'numba', 'numpy', 'canasta_env.engine') if m in sys.modules))\n"
    )
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_bench_and_demo_never_import_torch() -> None:
    code = (
        "import sys, contextlib, io\n"
        "import train.cli.main, train.bench.engine\n"
        "assert 'torch' not in sys.modules, 'import'\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    train.cli.main.main(['bench', '--rules', 'classic_2p', '--batch', '2', '--seconds', '0.05',\n"
        "                    '--observe', '--json'])\n"
        "    train.cli.main.main(['demo', '--rules', 'classic_2p'])\n"
        "print('torch' in sys.modules)\n"
    )
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_bench_json_lines() -> None:
    proc = _run([*_canasta(), "bench", "--rules", "classic_2p", "--batch", "1", "8",
                 "--seconds", "0.3", "--json"])
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert [r["batch"] for r in rows] == [1, 8]
    for r in rows:
        assert r["rules"] == "classic_2p"
        for key in REQUIRED_KEYS:
            assert isinstance(r[key], (int, float)) and r[key] > 0, (key, r)
        assert r["compile_s"] > 0
        assert r["decisions_per_hand"] == pytest.approx(r["decisions_per_s"] / r["hands_per_s"],
                                                        rel=1e-3)


def test_bench_decisions_per_hand_does_not_depend_on_batch() -> None:
    # Rows dealt together end their hands in lockstep unless the warm-up desynchronises them; then a
    # short window at a large batch miscounts hands (25 % off at batch 4096 before the stagger). At
    # batch 1 the window holds only a hundred-odd hands, whose mean length varies by ~5 %.
    proc = _run([*_canasta(), "bench", "--rules", "classic_2p", "--batch", "1", "512",
                 "--seconds", "0.8", "--json"])
    assert proc.returncode == 0, proc.stderr
    single, large = (json.loads(line)["decisions_per_hand"] for line in proc.stdout.splitlines())
    assert large == pytest.approx(single, rel=0.15)


def test_bench_table_with_observe() -> None:
    proc = _run([*_canasta(), "bench", "--rules", "classic_3p", "--batch", "4", "--seconds", "0.05",
                 "--observe"])
    assert proc.returncode == 0, proc.stderr
    for text in ("classic_3p", "decisions/s", "+obs", "compile_s"):
        assert text in proc.stdout


def test_bench_rejects_unknown_rules() -> None:
    proc = _run([*_canasta(), "bench", "--rules", "no_such_preset", "--json"])
    assert proc.returncode != 0
    assert "no_such_preset" in proc.stderr


def test_demo_prints_a_final_score() -> None:
    proc = _run([*_canasta(), "demo"])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) <= 45
    assert any(line.startswith("=== hand over after") for line in lines)
    for part in ("melds", "canastas", "red_threes", "going_out", "hand total"):
        assert part in proc.stdout
    assert sum(line.startswith("side 0 (P0 P2)") for line in lines) == 1  # the score row


def test_no_command_prints_help() -> None:
    proc = _run([*_canasta()], timeout=60)
    assert proc.returncode == 2
    assert "bench" in proc.stdout


def _subparser(name: str) -> argparse.ArgumentParser:
    from train.cli.main import build_parser

    parser = build_parser([name])
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


def _shown(sub: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in sub._actions if a.help != argparse.SUPPRESS]


def _required(sub: argparse.ArgumentParser) -> list[str]:
    """Arguments with valid values for the required options and positionals of ``sub``."""
    argv: list[str] = []
    for a in _shown(sub):
        if a.required:
            value = str(next(iter(a.choices))) if a.choices else "x"
            argv += [a.option_strings[0], value] if a.option_strings else [value]
    return argv


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_flag_has_help_hyphens_and_the_help_shows_an_example(name: str) -> None:
    sub = _subparser(name)
    shown = _shown(sub)
    assert all(a.help for a in shown), [a.option_strings for a in shown if not a.help]
    assert not [o for a in shown for o in a.option_strings if "_" in o]
    assert "example:\n  canasta " + name in sub.format_help()


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_flag_that_takes_a_value_states_its_default_once(name: str) -> None:
    sub = _subparser(name)
    for a in _shown(sub):
        says = len(re.findall(r"\bdefault\b", str(a.help), re.IGNORECASE))
        takes_value = bool(a.option_strings) and a.nargs != 0 and not a.required
        assert says == 1 if takes_value else says <= 1, (a.option_strings, a.help)
    assert "['" not in sub.format_help()  # a list default is shown as the flag takes it, not as a repr


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_hyphenated_flag_also_parses_under_its_underscored_spelling(name: str) -> None:
    sub = _subparser(name)
    base = _required(sub)
    for a in _shown(sub):
        for flag in (f for f in a.option_strings if "-" in f[2:]):
            old = "--" + flag[2:].replace("-", "_")
            other = [c for c in a.choices or () if c != a.default]  # a value that is not the default
            value = [] if a.nargs == 0 else [str(other[0]) if a.choices else "1"]
            new_ns, old_ns = sub.parse_args([*base, flag, *value]), sub.parse_args([*base, old, *value])
            assert vars(new_ns) == vars(old_ns), (flag, old)
            assert getattr(new_ns, a.dest) != a.default, flag
            assert old not in sub.format_help()  # the alias works but is not advertised


@pytest.mark.parametrize("name", ["play", "tournament"])
@pytest.mark.parametrize("flag", ["--partners", "--partner"])
def test_the_partner_agent_is_one_flag_under_both_spellings(name: str, flag: str) -> None:
    sub = _subparser(name)
    assert sub.parse_args([*_required(sub), flag, "greedy"]).partners == "greedy"
    assert "--partners AGENT" in sub.format_help() and not re.search(r"--partner\b", sub.format_help())


def test_training_flags_show_defaults_and_accept_the_old_underscored_spelling() -> None:
    sub = _subparser("train")
    text = sub.format_help()
    assert "--total-timesteps" in text and "(default: 200000)" in text
    assert "--total_timesteps" not in text  # the alias works but is not advertised
    new = sub.parse_args(["--total-timesteps", "7", "--run-dir", "x", "--ray"])
    old = sub.parse_args(["--total_timesteps", "7", "--run_dir", "x", "--strict_resume"])
    assert new.total_timesteps == old.total_timesteps == 7 and new.run_dir == old.run_dir == "x"
    assert new.ray == "local" and old.ray is None and old.strict_resume and not new.strict_resume


@dataclass
class _Declared:
    out_dir: str = opt(help="required, under either spelling")
    mode: str = opt("fast", "how (default: the fast way, said in words)", choices=("fast", "slow"))


def test_a_required_option_is_satisfied_by_its_alias_and_a_default_said_in_words_is_not_repeated(
        capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="t")
    add_options(parser, _Declared)
    assert parser.parse_args(["--out_dir", "a"]).out_dir == parser.parse_args(["--out-dir", "a"]).out_dir
    with pytest.raises(SystemExit):
        parser.parse_args([])
    assert "--out-dir is required" in capsys.readouterr().err
    assert "(default: fast)" not in parser.format_help() and "{fast,slow}" in parser.format_help()


def test_a_run_without_run_dir_gets_a_new_folder_each_time(tmp_path: Path) -> None:
    from train.common.run_dir import new_run_dir

    first = new_run_dir("configs/train/quickstart.yaml", tmp_path)
    first.mkdir()
    second = new_run_dir("configs/train/quickstart.yaml", tmp_path)
    assert first.name.startswith("quickstart-")
    assert second != first and second.parent == tmp_path


def test_a_cold_kernel_cache_is_announced_before_the_compile(tmp_path: Path) -> None:
    """On an empty cache a command says in one line that it compiles (and where it caches) before
    the compile, then a progress line (one per finished job without a terminal); a warm cache says
    nothing."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["CANASTA_CACHE_DIR"] = str(tmp_path)
    proc = subprocess.Popen([*_canasta(), "demo"], cwd=REPO, env=env, stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True)
    try:
        first = proc.stderr.readline()  # type: ignore[union-attr]
        second = proc.stderr.readline()  # type: ignore[union-attr]
    finally:
        proc.kill()
        proc.wait()
    assert "canasta demo: first run of this engine version: compiling its kernels once" in first
    assert str(tmp_path) in first
    assert second.startswith("canasta demo: compiling the engine's kernels")
    warm = _run([*_canasta(), "demo"])
    assert warm.returncode == 0 and "compiling" not in warm.stderr
