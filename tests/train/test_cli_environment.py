"""The ``canasta`` command's top level and the environment it runs in: ``--version`` everywhere, a
misspelled command, numba's settings and cache folder, Ctrl-C, a closed pipe, a deleted working folder."""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from train.cli import main as cli
from train.cli.main import COMMANDS, main
from train.common.outputs import check_output_file
from train.common.warmup import check_cache_dir, check_numba_environment

REPO = Path(__file__).resolve().parents[2]


def _canasta() -> list[str]:
    script = Path(sys.executable).with_name("canasta")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "train.cli"]


def _exit_status(args: list[str]) -> int:
    try:
        return main(args)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_answers_version(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit_status([command, "--version"]) == 0  # was "unrecognized arguments", status 2
    assert capsys.readouterr().out.startswith("canasta-rl ")


def test_top_level_version_still_answers(capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit_status(["--version"]) == 0
    assert capsys.readouterr().out.startswith("canasta-rl ")


def test_a_misspelled_command_gets_a_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit_status(["--debug", "tournamnet", "--hands", "2"]) == 2
    err = capsys.readouterr().err
    assert "unknown command 'tournamnet': did you mean tournament?" in err
    assert _exit_status(["zzz"]) == 2
    assert "one of: bench, demo" in capsys.readouterr().err


def test_a_known_command_and_top_level_help_are_not_taken_for_misspellings(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit_status(["-h", "bech"]) == 0
    assert _exit_status(["demo", "--help"]) == 0
    assert "unknown command" not in capsys.readouterr().err


@pytest.mark.parametrize("name, value", [("NUMBA_NUM_THREADS", "0"), ("NUMBA_NUM_THREADS", "abc"),
                                         ("NUMBA_NUM_THREADS", "-1"), ("NUMBA_DISABLE_JIT", "true")])
def test_a_malformed_numba_setting_is_one_line(name: str, value: str, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(name, value)
    assert main(["demo"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{name}={value!r}" in err


@pytest.mark.parametrize("name, value", [("NUMBA_NUM_THREADS", "2"), ("NUMBA_NUM_THREADS", ""),
                                         ("NUMBA_DISABLE_JIT", "1"), ("NUMBA_DISABLE_JIT", "")])
def test_a_valid_or_empty_numba_setting_passes(name: str, value: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(name, value)
    check_numba_environment()
    assert os.environ.get(name) == (value or None)  # an empty one counts as unset


def test_a_bad_thread_count_gives_no_traceback_even_for_help() -> None:
    env = {**os.environ, "NUMBA_NUM_THREADS": "0"}
    proc = subprocess.run([*_canasta(), "train", "--help"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr  # was numba's ValueError, status 1
    assert "NUMBA_NUM_THREADS='0'" in proc.stderr


def test_an_unusable_cache_folder_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """numba skipped it quietly and every run compiled the kernels again, announced as a first run."""
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    for folder in (blocker, blocker / "deeper"):
        monkeypatch.setenv("NUMBA_CACHE_DIR", str(folder))
        with pytest.raises(ValueError, match="not usable"):
            check_cache_dir()


def test_a_missing_deep_cache_folder_is_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "a" / "b" / "c"
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(folder))
    check_cache_dir()
    assert folder.is_dir()


def _first_stderr_line(args: list[str], env: dict[str, str], within: float) -> str:
    proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stderr, selectors.EVENT_READ)  # type: ignore[arg-type]
            return proc.stderr.readline() if sel.select(within) else ""  # type: ignore[union-attr]
    finally:
        proc.kill()
        proc.wait()


def test_bench_on_a_cold_cache_says_it_compiles(tmp_path: Path) -> None:
    """bench times the compile itself, so it was silent for minutes when piped."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    args = [*_canasta(), "bench", "--rules", "classic_2p", "--batch", "2", "--seconds", "1"]
    line = _first_stderr_line(args, env, within=30)
    assert "canasta bench: first run of this engine version: compiling its kernels" in line
    assert str(tmp_path) in line


def test_bench_on_a_warm_cache_says_nothing_of_compiling(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--rules", "classic_2p", "--batch", "2", "--seconds", "0.2", "--json"]) == 0
    assert "compiling" not in capsys.readouterr().err


def _raising(exc: BaseException) -> Callable[..., object]:
    def run(*args: object) -> object:
        raise exc

    return run


def test_ctrl_c_while_the_command_loads_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cli, "build_parser", _raising(KeyboardInterrupt()))
    assert main(["gauntlet", "heuristic"]) == 130  # was a traceback through the imports
    assert capsys.readouterr().err == "canasta gauntlet: interrupted\n"


def test_ctrl_c_while_the_command_runs_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import train.cli.demo

    monkeypatch.setattr(train.cli.demo, "run", _raising(KeyboardInterrupt()))
    assert main(["demo"]) == 130
    assert capsys.readouterr().err.endswith("canasta demo: interrupted\n")


class _ClosedPipe:
    """A stdout whose reader has gone: every write fails as a pipe closed by ``| head`` does."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        pass

    def fileno(self) -> int:
        return self.fd

    def isatty(self) -> bool:
        return False


def test_a_closed_pipe_ends_quietly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    fd = os.open(tmp_path / "stdout", os.O_WRONLY | os.O_CREAT)
    try:
        monkeypatch.setattr(sys, "stdout", _ClosedPipe(fd))
        status = main(["demo"])
    finally:
        os.close(fd)
    assert status == 141  # was "canasta demo: error: [Errno 32] Broken pipe", status 2
    assert "Broken pipe" not in capsys.readouterr().err


def test_an_open_pipe_gets_the_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    assert "=== hand over after" in capsys.readouterr().out


def test_a_relative_output_in_a_deleted_working_folder_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    with pytest.raises(ValueError, match="working folder was deleted"):  # was: failed after the work
        check_output_file("out.json", "--json")
    assert check_output_file(tmp_path / "out.json", "--json") == tmp_path / "out.json"
