"""Tournaments and the ladder given hostile or mistaken input, round seven: each case is refused in
one line (before any game where it can be), names what failed as the user spelt it, or no longer
loses work in silence; its twin shows that the valid neighbouring input still works."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import train.evaluation.ray_units as ray_units
import train.evaluation.tournament as tournament
from tests.failing_bots import Boom
from tests.one_line import one_error
from train.cli.main import main as cli_main
from train.common import folder_lock
from train.evaluation.ladder import lock_path, rate_on_ladder, read_ladder, update_ladder

ROOT = Path(__file__).resolve().parents[2]
TOURNAMENT = ["tournament", "--agents", "random", "greedy", "--hands", "2", "--no-plots", "--resamples", "20"]


def _no_game(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_game(*args: object, **kwargs: object) -> None:
        raise AssertionError("a game was played")

    monkeypatch.setattr(tournament, "play_unit", no_game)


def _row(entrant: str, mu: float = 25.0, games: int = 1) -> dict[str, Any]:
    return {"entrant": entrant, "mu": mu, "sigma": 8.0, "ordinal": mu - 24.0, "games": games}


# ---- --ray: a failing agent was named "#i (Class)", and in a page of Ray's traceback ------------------

def _ray_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--ray`` with each unit played by the Ray task's own function, here (no cluster)."""
    def units(shared: tuple[Any, ...], pending: list[Any], address: str) -> Any:
        for m, d in pending:
            yield ray_units._unit_task(shared, m, d, None)

    monkeypatch.setattr(ray_units, "play_units", units)
    monkeypatch.setattr(ray_units, "connect", lambda address: None)


@pytest.mark.parametrize("mode", ["boom", "float"])
def test_a_ray_unit_names_a_failing_agent_as_the_local_run_does(mode: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    _ray_in_this_process(monkeypatch)
    entrants = [("boomer", Boom(mode)), "random"]
    with pytest.raises(ValueError) as local:
        tournament.run("classic_2p", entrants, 2, plots=False, resamples=20)
    with pytest.raises(ValueError) as on_ray:
        tournament.run("classic_2p", entrants, 2, plots=False, resamples=20, on_ray="local")
    assert str(on_ray.value) == str(local.value)
    assert str(on_ray.value).startswith("agent 'boomer': ") and "Boom" not in str(on_ray.value)


def test_a_ray_unit_of_agents_that_play_gives_the_local_results(monkeypatch: pytest.MonkeyPatch) -> None:
    local = tournament.run("classic_2p", [("ok", Boom()), "random"], 4, plots=False, resamples=20)
    _ray_in_this_process(monkeypatch)
    on_ray = tournament.run("classic_2p", [("ok", Boom()), "random"], 4, plots=False, resamples=20,
                            on_ray="local")
    assert on_ray.to_json() == local.to_json()


# ---- --ray host:port whose port is no port: Ray retried for minutes ----------------------------------

@pytest.mark.parametrize("port", ["-1", "abc", "99999", "0", "\uff16\uff13\uff17\uff19"])
def test_a_ray_address_whose_port_is_no_port_is_refused_at_once(port: str) -> None:
    with pytest.raises(ValueError, match=rf"^--ray localhost:{port}: port '{port}' is not a port number"):
        ray_units._probe(f"localhost:{port}")
    with pytest.raises(ValueError, match=r"port '-1' is not a port number"):
        ray_units._probe("ray://localhost:-1")


@pytest.mark.parametrize("family, host", [(socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "[::1]")])
def test_a_ray_address_with_a_listener_passes_the_probe(family: socket.AddressFamily, host: str) -> None:
    try:
        server = socket.socket(family)
        server.bind((host.strip("[]"), 0))
    except OSError:
        pytest.skip(f"no {host} here")
    with server:
        server.listen()
        port = server.getsockname()[1]
        ray_units._probe(f"{host}:{port}")  # [::1] was looked up with its brackets: never reachable
        ray_units._probe("auto")
    with pytest.raises(ValueError, match="no Ray cluster reachable there"):
        ray_units._probe(f"{host}:{port}")


# ---- two tournaments ending at once on one ladder: one's update was lost ------------------------------

RACER = """
import sys
from pathlib import Path
from train.evaluation.ladder import rate_on_ladder
path, who, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
def rate(prior):
    games = prior.get("shared", {}).get("games", 0)
    return [{"entrant": "shared", "mu": 25.0, "sigma": 8.0, "ordinal": 1.0, "games": games + 1},
            {"entrant": who, "mu": 25.0, "sigma": 8.0, "ordinal": 1.0, "games": 1}]
for i in range(n):
    rate_on_ladder(path, f"{who}-{i}", ["shared", who], rate)
"""


def test_two_processes_updating_one_ladder_lose_no_update(tmp_path: Path) -> None:
    ladder, n = tmp_path / "ladder.json", 40
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    racers = [subprocess.Popen([sys.executable, "-c", RACER, str(ladder), who, str(n)], env=env, cwd=ROOT)
              for who in ("a", "b")]
    assert [p.wait(timeout=300) for p in racers] == [0, 0]
    data = read_ladder(ladder)
    assert len(data["tournaments"]) == 2 * n  # each read-modify-write counted
    assert data["ratings"]["shared"]["games"] == 2 * n  # each rated from the other's last write
    assert lock_path(ladder).is_file()


def test_threads_updating_one_ladder_lose_no_update(tmp_path: Path) -> None:
    ladder, n = tmp_path / "ladder.json", 30

    def work(who: str) -> None:
        for i in range(n):
            update_ladder(ladder, f"{who}-{i}", [_row(f"{who}-{i}")])

    threads = [threading.Thread(target=work, args=(who,)) for who in "abc"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    data = read_ladder(ladder)
    assert len(data["tournaments"]) == len(data["ratings"]) == 3 * n
    update_ladder(ladder, "a-0", [_row("a-0", mu=30.0)])  # the twin: a counted tournament stays as it was
    assert read_ladder(ladder)["ratings"]["a-0"]["mu"] == 25.0


def test_a_waiting_update_says_whom_it_waits_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    ladder = tmp_path / "ladder.json"
    monkeypatch.setattr(folder_lock, "WAIT_NOTICE_S", -1.0)  # the notice comes with the first failed try
    held, release = threading.Event(), threading.Event()

    def sleep(seconds: float) -> None:  # the waiter's first pause, after its notice: let the holder go
        release.set()
        time.sleep(seconds)

    monkeypatch.setattr(folder_lock, "time", SimpleNamespace(monotonic=time.monotonic, sleep=sleep))

    def holder() -> None:
        with folder_lock.waiting_lock(lock_path(ladder), f"ladder {ladder}"):
            held.set()
            release.wait(30)

    t = threading.Thread(target=holder)
    t.start()
    held.wait(30)
    update_ladder(ladder, "t", [_row("x")])
    t.join()
    assert f"waiting for ladder {ladder}: its lock {lock_path(ladder)} is held by PID {os.getpid()}" \
        in capsys.readouterr().err
    assert read_ladder(ladder)["tournaments"] == ["t"]


# ---- the ladder's lock file, and a ladder at --out's own lock ----------------------------------------

@pytest.mark.parametrize("kind", ["folder", "pipe", "link"])
def test_a_ladder_whose_lock_file_is_not_a_file_is_refused_before_any_game(
        kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    ladder = tmp_path / "ladder.json"
    lock = lock_path(ladder)
    if kind == "folder":
        lock.mkdir()
    elif kind == "pipe":
        os.mkfifo(lock)
    else:
        lock.symlink_to(tmp_path / "elsewhere")
    _no_game(monkeypatch)
    assert cli_main([*TOURNAMENT, "--ladder", str(ladder)]) == 2
    assert f"ladder {ladder}: its lock file {lock} is not a regular file" in one_error(capsys, "tournament")
    assert not ladder.exists() and not (tmp_path / "elsewhere").exists()
    with pytest.raises(ValueError, match="lock file of ladder"):  # the library refuses it too
        update_ladder(ladder, "t", [_row("x")])


def test_a_lock_file_left_by_an_earlier_tournament_does_not_block(tmp_path: Path) -> None:  # the twin
    ladder = tmp_path / "ladder.json"
    lock_path(ladder).write_text("12345\n")
    assert cli_main([*TOURNAMENT, "--ladder", str(ladder)]) == 0
    assert set(read_ladder(ladder)["ratings"]) == {"random", "greedy"}


def test_a_ladder_named_as_the_out_folders_lock_is_refused_before_any_game(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # the lock file got the tournament's PID, so the ladder was refused after every game
    out = tmp_path / "t"
    _no_game(monkeypatch)
    assert cli_main([*TOURNAMENT, "--out", str(out), "--ladder", str(out / ".lock")]) == 2
    assert "a file the tournament writes in --out" in one_error(capsys, "tournament")
    monkeypatch.undo()
    assert cli_main([*TOURNAMENT, "--out", str(out), "--ladder", str(out / "lock.json")]) == 0  # the twin
    assert set(read_ladder(out / "lock.json")["ratings"]) == {"random", "greedy"}


# ---- ladder contents: a key given twice, ratings stored past the bounds the next read checks ----------

def _ladder_text(ratings: str) -> str:
    return ('{"format": "canasta-ladder", "model": "PlackettLuce", "tournaments": [], '
            f'"ratings": {ratings}}}')


def test_a_ladder_with_a_key_given_twice_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    one = '"random": {"mu": 30, "sigma": 5, "ordinal": 15, "games": 10}'
    other = '"random": {"mu": 20, "sigma": 5, "ordinal": 5, "games": 10}'
    ladder = tmp_path / "ladder.json"
    ladder.write_text(_ladder_text(f"{{{one}, {other}}}"))  # json kept the last in silence
    _no_game(monkeypatch)
    assert cli_main([*TOURNAMENT, "--ladder", str(ladder)]) == 2
    assert f"ladder {ladder}: not valid JSON (duplicate key 'random')" in one_error(capsys, "tournament")
    ladder.write_text(_ladder_text(f"{{{one}}}"))  # the twin
    assert read_ladder(ladder)["ratings"]["random"]["mu"] == 30


def test_a_rating_past_the_ladders_bounds_is_not_stored(tmp_path: Path) -> None:
    # from mu -1000 (the bound) a loss rates -1000.0006: written, and every later read refused the file
    ladder = tmp_path / "ladder.json"
    update_ladder(ladder, "first", [_row("low", mu=-999.0)])
    before = ladder.read_bytes()
    with pytest.raises(ValueError, match=r"^ladder .*: this tournament rates ratings\['low'\]\['mu'\] = "
                                         r"-1000.0006, outside the ladder's bounds .*; not stored"):
        rate_on_ladder(ladder, "second", ["low"], lambda prior: [_row("low", mu=-1000.0006)])
    assert ladder.read_bytes() == before
    rate_on_ladder(ladder, "second", ["low"], lambda prior: [_row("low", mu=-1000.0)])  # the twin
    assert read_ladder(ladder)["ratings"]["low"]["mu"] == -1000.0
