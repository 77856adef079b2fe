"""A tournament's hand log (``hands.csv``) and the ladder's lock given hostile or stuck input, round
nine: a huge or damaged log is refused in one line naming ``hands.csv:LINE`` without being read whole;
a stopped lock holder is named while waited for and given up on in one line (a dead one frees the
lock at once); each case has its twin showing the valid neighbouring input still works."""

from __future__ import annotations

import csv
import errno
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

import train.evaluation.tournament as tournament
from tests.one_line import one_error
from train.cli.main import main as cli_main
from train.common import folder_lock
from train.common.folder_lock import FolderLock, FolderLockedError, waiting_lock
from train.evaluation.hand_log import HandLog, TournamentConfig
from train.evaluation.hand_table import hand_columns

TOURNAMENT = ["tournament", "--agents", "random", "greedy", "--hands", "2", "--no-plots", "--resamples", "20"]
HOLD = ("import fcntl, os, sys, time\n"  # holds the lock file argv[1] for argv[2] seconds, its PID written
        "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "os.write(fd, f'{os.getpid()}\\n'.encode())\n"
        "print('held', flush=True)\n"
        "time.sleep(float(sys.argv[2]))\n")


# ---- hands.csv: read a line at a time, each line bounded ---------------------------------------------

def _log(tmp_path: Path) -> HandLog:
    return HandLog(tmp_path / "out", TournamentConfig({}, [], [], 0), 2, ["random", "greedy"])


def _row(n: int, label: str = "random") -> list[str]:
    return [str(n), "0", "0", "DealId(0,0,0)", f"{label}|greedy", label, *["1"] * 8, "greedy",
            *["2"] * 8, "1", "1", "138", "0"]


def _csv(rows: list[list[str]]) -> bytes:
    text = io.StringIO(newline="")
    csv.writer(text).writerows([hand_columns(2), *rows])
    return text.getvalue().encode("utf-8")


def _load(log: HandLog, content: bytes, most: int | None = None) -> tuple[list[int], list[list[str]], int]:
    """``log.load`` of a hands.csv holding ``content``: (line numbers, rows, peak bytes allocated)."""
    log.path.write_bytes(content)
    tracemalloc.start()
    try:
        numbers, rows = log.load(most)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return numbers, rows, peak


def test_a_gigantic_line_is_refused_without_reading_the_log_whole(tmp_path: Path) -> None:
    """Before: the whole file was read, decoded and split (a 50 MB line took over 200 MB), and a
    line of one long field was a ``_csv.Error`` traceback."""
    log = _log(tmp_path)
    for junk in (b"x" * (30 << 20) + b"\n", b"1," * (15 << 20)):  # one field; many fields, no newline
        with pytest.raises(ValueError, match=r"hands\.csv:3: a line longer than \d+ bytes") as e:
            tracemalloc.start()
            try:
                log.path.write_bytes(_csv([_row(0)]) + junk + _csv([_row(1)]))
                tracemalloc.reset_peak()
                log.load()
            finally:
                peak = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
        assert "\n" not in str(e.value) and len(str(e.value)) < 300
        assert peak < 4 << 20, peak
    rows = [_row(i) for i in range(3)]  # the twin: a valid log, and its torn last line dropped
    assert _load(log, _csv(rows) + b"0,0,1,\"Deal")[:2] == ([2, 3, 4], rows)


def test_a_long_label_still_fits_its_line(tmp_path: Path) -> None:  # the twin: the bound follows the labels
    label = "checkpoint:" + "r" * 40_000
    log = HandLog(tmp_path / "out", TournamentConfig({}, [], [], 0), 2, [label, "greedy"])
    rows = [_row(0, label), _row(1, label)]
    assert _load(log, _csv(rows))[:2] == ([2, 3], rows)


@pytest.mark.parametrize("line, where", [
    (b"0,0\r,0\n", "hands.csv:3: not a CSV row (new-line character seen in unquoted field)"),
    (b'0,0,"' + (b"y" * 60_000 + b"\n") * 3, "hands.csv:5: not a CSV row (field larger than field limit"),
])
def test_a_line_that_is_not_csv_is_one_line(tmp_path: Path, line: bytes, where: str) -> None:
    """Before: a carriage return inside a row, or a quoted field past csv's field size limit, was a
    ``_csv.Error`` traceback."""
    log = _log(tmp_path)
    with pytest.raises(ValueError, match=r"the hand log is damaged") as e:
        _load(log, _csv([_row(0)]) + line + _csv([_row(1)])[len(_csv([])):])
    assert where in str(e.value)
    rows = [_row(0, "ran\rdom\nx"), _row(1)]  # the twin: the same characters quoted, as csv writes them
    log = HandLog(tmp_path / "out", TournamentConfig({}, [], [], 0), 2, ["ran\rdom\nx", "greedy"])
    assert _load(log, _csv(rows))[:2] == ([4, 5], rows)  # a row's number: its last line's


def test_a_torn_last_line_cut_inside_a_character_is_dropped(tmp_path: Path) -> None:
    """Before: an interrupted append that cut a label's two-byte character refused the whole log as
    not UTF-8 text."""
    log = HandLog(tmp_path / "out", TournamentConfig({}, [], [], 0), 2, ["zufällig", "greedy"])
    rows = [_row(0, "zufällig")]
    assert _load(log, _csv(rows) + b"0,0,1,\"DealId(0,0,0)\",zuf\xc3")[:2] == ([2], rows)
    with pytest.raises(ValueError, match=r"hands\.csv: not UTF-8 text \(line 2\)"):  # the twin: a bad byte
        _load(log, _csv(rows).replace(b"\xc3", b"\xff") + _csv(rows)[len(_csv([])):])


def test_a_log_longer_than_the_tournament_is_not_read_past_it(tmp_path: Path) -> None:
    log = _log(tmp_path)
    rows = [_row(i) for i in range(5000)]
    numbers, kept, _ = _load(log, _csv(rows), most=3)
    assert (numbers, kept) == ([2, 3, 4, 5], rows[:4])  # the caller refuses row 4: a tournament has 3
    assert _load(log, _csv(rows[:3]), most=3)[:2] == ([2, 3, 4], rows[:3])  # the twin: a log that fits


def test_a_log_is_rewritten_a_row_at_a_time(tmp_path: Path) -> None:
    """Before: the kept rows were built into one string, then its bytes (twice the log's size)."""
    log = _log(tmp_path)
    rows = [_row(i) for i in range(100_000)]
    tracemalloc.start()
    try:
        log.rewrite(rows)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert log.path.read_bytes() == _csv(rows)  # the twin: the same bytes as before
    assert peak < len(_csv(rows)) // 2, (peak, len(_csv(rows)))


def test_a_huge_tournament_json_is_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: read whole, however large (300 MB of trailing blanks took 720 MB, then passed)."""
    import train.evaluation.hand_log as hand_log

    monkeypatch.setattr(hand_log, "MAX_CONFIG_BYTES", 4096)
    _log(tmp_path)
    settings = tmp_path / "out" / "tournament.json"
    text = settings.read_bytes()
    settings.write_bytes(text + b" " * 4096)
    with pytest.raises(ValueError, match=r"tournament\.json: larger than 4096 bytes, so not a tournament's"):
        _log(tmp_path)
    settings.write_bytes(text + b" " * 100)  # the twin: the same settings, within the bound
    _log(tmp_path)


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tournament") / "out"
    assert cli_main([*TOURNAMENT, "--out", str(out)]) == 0
    return out


def _no_game(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_game(*args: object, **kwargs: object) -> None:
        raise AssertionError("a game was played")

    monkeypatch.setattr(tournament, "play_unit", no_game)


def test_a_damaged_log_line_is_one_error_line_from_the_command(
        finished: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    for name in ("tournament.json", "hands.csv"):
        (out / name).write_bytes((finished / name).read_bytes())
    _no_game(monkeypatch)
    valid = (out / "hands.csv").read_bytes()
    lines = valid.split(b"\n")
    (out / "hands.csv").write_bytes(b"\n".join([lines[0], lines[1].replace(b",", b"\r,", 1), *lines[2:]]))
    assert cli_main([*TOURNAMENT, "--out", str(out)]) == 2  # before: a _csv.Error traceback
    assert f"{out / 'hands.csv'}:2: not a CSV row" in one_error(capsys, "tournament")
    (out / "hands.csv").write_bytes(valid + valid[valid.index(b"\n") + 1:] * 2000)
    assert cli_main([*TOURNAMENT, "--out", str(out)]) == 2  # its hands again and again: refused at the first
    assert f"{out / 'hands.csv'}:4: the hands of match 0 deals 0-1 begin a second time" \
        in one_error(capsys, "tournament")
    (out / "hands.csv").write_bytes(valid)
    assert cli_main([*TOURNAMENT, "--out", str(out)]) == 0  # the twin: resumed, no hand replayed


# ---- the ladder's lock: a stopped holder is named and waited for; a dead one frees it ------------

@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """Another process holding the lock file ``tmp_path/.l.lock`` (its PID written there) for 600 s."""
    lock = tmp_path / ".l.lock"
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(lock), "600"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        yield lock, proc
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)


def _fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(folder_lock, "WAIT_NOTICE_S", 0.0)


def _wait_in_thread(lock: Path) -> tuple[threading.Thread, list[object]]:
    """``waiting_lock(lock)`` in a thread (a hang cannot stop the tests): its outcome lands in the list."""
    outcome: list[object] = []

    def wait() -> None:
        try:
            with waiting_lock(lock, "ladder L"):
                outcome.append("held")
        except ValueError as e:
            outcome.append(e)

    t = threading.Thread(target=wait, daemon=True)
    t.start()
    return t, outcome


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="a stopped process is seen in /proc")
def test_a_stopped_holder_is_named_as_stopped_and_waited_for(holder: tuple[Path, subprocess.Popen[str]],
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Before: one notice that named a PID, not that it was stopped nor how to continue it. The wait
    is not given up (a tournament without --out would lose its games): the user continues or ends it."""
    lock, proc = holder
    _fast(monkeypatch)
    proc.send_signal(signal.SIGSTOP)
    t, outcome = _wait_in_thread(lock)
    time.sleep(1.5)
    assert t.is_alive() and not outcome
    err = capsys.readouterr().err
    assert (f"waiting for ladder L: its lock {lock} is held by PID {proc.pid}, which is stopped (SIGSTOP, "
            f"Ctrl-Z): continue it (kill -CONT {proc.pid}) or end it") in err
    proc.send_signal(signal.SIGCONT)  # the twin: continued, it runs and is not called stopped
    time.sleep(1.5)
    assert t.is_alive() and not outcome
    assert "which is stopped" not in capsys.readouterr().err
    proc.send_signal(signal.SIGKILL)
    t.join(timeout=30)
    assert outcome == ["held"]


def test_a_running_holder_is_named_again_while_it_holds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Before: one notice, then silence however long the wait."""
    lock = tmp_path / ".l.lock"
    _fast(monkeypatch)
    monkeypatch.setattr(folder_lock, "WAIT_REPEAT_S", 0.5)
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(lock), "2.5"], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    with waiting_lock(lock, "ladder L"):
        pass
    proc.wait(timeout=30)
    notices = [line for line in capsys.readouterr().err.splitlines() if "waiting for ladder L" in line]
    assert len(notices) >= 2 and all(f"held by PID {proc.pid} (waited" in line for line in notices), notices


def test_a_holder_whose_pid_is_not_running_is_said_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """The lock held, under the PID of no process here (one it started, or another machine's, holds
    it): waited for, and said so; a PID that is no number is not printed."""
    import fcntl

    lock = tmp_path / ".l.lock"
    _fast(monkeypatch)
    for written, said in ((b"2147483646\n", "PID 2147483646, which is not running here"),
                          (b"\x1b[2J" * 100, "PID unknown (waited")):
        lock.write_bytes(written)
        fd = os.open(lock, os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)
        t, outcome = _wait_in_thread(lock)
        time.sleep(1.0)
        assert t.is_alive() and not outcome  # never given up on: it may be at work elsewhere
        os.close(fd)
        t.join(timeout=30)
        assert outcome == ["held"]
        assert said in capsys.readouterr().err


def test_a_dead_holder_frees_the_lock_at_once(holder: tuple[Path, subprocess.Popen[str]],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    lock, proc = holder
    _fast(monkeypatch)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    start = time.monotonic()
    with waiting_lock(lock, "ladder L"):  # the kernel let it go with its process
        assert lock.read_text() == f"{os.getpid()}\n"
    assert time.monotonic() - start < 5


# ---- lock files: what a refusal reads of them, a file system without locks ---------------------------

def test_a_lock_file_of_junk_is_not_read_whole_nor_printed(tmp_path: Path) -> None:
    """Before: a refused ``FolderLock`` read the whole lock file and put it in its message."""
    lock = tmp_path / ".lock"
    lock.write_bytes(b"\x1b[2J" * (1 << 20))
    fd = os.open(lock, os.O_RDWR)
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX)  # held by something that wrote no PID
        with pytest.raises(FolderLockedError, match=r"\(PID unknown, lock ") as e:
            FolderLock(tmp_path).acquire()
        assert len(str(e.value)) < 300 and "\x1b" not in str(e.value)
        os.ftruncate(fd, 0)
        os.write(fd, b"4242\n")  # the twin: a holder's PID is named
        with pytest.raises(FolderLockedError, match=r"\(PID 4242, lock "):
            FolderLock(tmp_path).acquire()
    finally:
        os.close(fd)


def test_a_file_system_without_locks_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: ``[Errno 37] No locks available``, naming no file."""
    import fcntl

    def no_locks(fd: int, op: int) -> None:
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    FolderLock(tmp_path / "ok").acquire().release()  # the twin, first: a file system with locks
    monkeypatch.setattr(fcntl, "flock", no_locks)
    with pytest.raises(OSError, match="cannot lock it") as e:
        FolderLock(tmp_path / "run").acquire()
    assert e.value.filename == str(tmp_path / "run" / ".lock")
    with pytest.raises(OSError, match="cannot lock it") as e:
        with waiting_lock(tmp_path / ".l.lock", "ladder L"):
            pass
    assert e.value.filename == str(tmp_path / ".l.lock")


def test_settings_from_before_observe_discards_resume(finished: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """tournament.json of a version older than the option lacks its key (which does not change play):
    the resume was refused as 'a different tournament'; a rule that differs still is."""
    out = tmp_path / "out"
    out.mkdir()
    settings = json.loads((finished / "tournament.json").read_text())
    del settings["rules"]["observe_discards"]
    (out / "tournament.json").write_text(json.dumps(settings))
    (out / "hands.csv").write_bytes((finished / "hands.csv").read_bytes())
    _no_game(monkeypatch)
    assert cli_main([*TOURNAMENT, "--out", str(out)]) == 0  # resumed: every hand is in the log
    settings["rules"]["jokers"] = 6
    (out / "tournament.json").write_text(json.dumps(settings))
    assert cli_main([*TOURNAMENT, "--out", str(out)]) == 2
