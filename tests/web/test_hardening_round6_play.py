"""Hardening, round six, of the play surfaces: ``canasta serve``'s options, saved games and record
files of the web table. Each hostile case has a twin showing the valid neighbouring input works.

* ``--host ''`` bound every interface (printed ``http://:PORT/``) and ``--record-dir ''`` filled the
  working folder, both in silence; a record dir that cannot be made was a bare ``[Errno 20]``.
* An agent name longer than 200 characters (a rule-space exploiter's every field, as
  docs/training.md shows, is 367) was served, but its games were never restored (410) and its
  records never replayed (422): the saved log and the records label seats by that name.
* A saved game missing ``hands``, ``show_policy`` or ``log`` was refused as ``'hands'``, a seat that
  is not a name as ``unhashable type: 'list'``; ``hands_recorded`` past the hands its actions finish
  was accepted, and the hands after it were never recorded.
* An empty record file "has hands 0--1".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_web_hostile_requests import refused

# a rule-space exploiter's name as docs/training.md shows it (367 characters)
LONG_AGENT = ("heuristic:wild_take_pile=57.71,threat_hand=17.23,late_stock=6.52,card_estimate=35.76,"
              "b3_pile=78.9,freeze_pile=99.99,pair_take_pile=17.52,go_out_margin=2413.98,"
              "layoff_take_pile=39.5,keep_cards=1,danger_weight=0.02,freeze_cost=266.64,pair_keep=70.2,"
              "hold_open=1,open_take_discount=2.34,wild_keep=3,wild_min_meld=4,hold_new=5.23,"
              "go_out_extra=1,fish=8.21,value_weight=1.72")


def _serve(argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
           ) -> tuple[int, str]:
    """``canasta serve ARGV``'s status and stderr; a server that would start fails the test
    instead of serving until it is stopped."""
    import train.web.server
    from train.cli.main import main

    def serve(*args: Any) -> None:
        raise AssertionError(f"canasta serve {argv} started serving")

    monkeypatch.setattr(train.web.server, "serve", serve)
    code = main(["serve", "--port", "0", "--opponent", "random", *argv])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("argv, words", [(["--host", ""], "--host ''"), (["--host", " "], "--host ' '"),
                                         (["--record-dir", ""], "--record-dir ''")])
def test_serve_refuses_an_empty_host_or_record_dir(argv: list[str], words: str, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    code, err = _serve(["--record-dir", str(tmp_path / "games-here"), *argv], capsys, monkeypatch)
    assert code == 2 and err.startswith(f"canasta serve: error: {words}: "), err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "games").exists()


def test_a_named_host_and_record_dir_are_taken(tmp_path: Path) -> None:
    from train.cli.serve import check_host, make_record_dir

    for host in ("127.0.0.1", "0.0.0.0", "::1", "localhost"):
        check_host(host)
    folder = tmp_path / "a" / "b"
    assert make_record_dir(str(folder)) == folder and folder.is_dir()
    assert make_record_dir(".") == Path(".")


def test_a_record_dir_that_cannot_be_made_names_the_option(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "file").write_text("x")
    code, err = _serve(["--record-dir", str(tmp_path / "file" / "games")], capsys, monkeypatch)
    assert code == 2 and err.startswith(f"canasta serve: error: --record-dir {tmp_path}/file/games: cannot "
                                        "be made: "), err
    assert "Errno" not in err and len(err.strip().splitlines()) == 1


def _play_out(client: Any) -> dict[str, Any]:
    view = client.post("/api/games", json={"seed": 3}).json()
    while not view["game_over"]:
        move = {"seat": 0, "action": view["legal"][0]["id"], "version": view["version"]}
        view = client.post(f"/api/games/{view['id']}/actions", json=move).json()
    return view


def test_a_long_agent_names_games_restore_and_its_records_replay(make_client: Any) -> None:
    view = _play_out(make_client(opponents=(LONG_AGENT,), hands=1))
    again = make_client(opponents=(LONG_AGENT,), hands=1)  # a restart: the game is read back
    restored = again.get(f"/api/games/{view['id']}")
    assert restored.status_code == 200, restored.text[:300]
    assert restored.json()["log"] == view["log"] and any(e["who"] == LONG_AGENT for e in view["log"])
    hands = again.get(f"/api/records/{view['id']}.jsonl")
    assert hands.status_code == 200 and hands.json()["hands"][0]["seats"] == ["human", LONG_AGENT]
    assert again.get(f"/api/records/{view['id']}.jsonl/hands/0").json()["matches"] is True


def test_an_agent_name_too_long_to_restore_is_refused_before_serving(tmp_path: Path) -> None:
    from canasta_env.rules import load_rules
    from train.web.game import AgentPool
    from train.web.schema import MAX_NAME
    from train.web.store import GameStore

    name = "heuristic:keep_cards=" + "0" * MAX_NAME + "1"
    with pytest.raises(ValueError, match=rf"^agent name .* has {len(name)} characters; the web table "
                                         rf"labels seats with names of at most {MAX_NAME}$"):
        GameStore(AgentPool(load_rules("classic_2p")), tmp_path, opponents=[name], partner=None)


@pytest.fixture
def saved(make_client: Any, tmp_path: Path) -> dict[str, Any]:
    """A game two hands long, three moves in: its saved file, its view, and a restart that asks."""
    client = make_client(opponents=("random",), hands=2)
    view = client.post("/api/games", json={"seed": 3}).json()
    for _ in range(3):
        move = {"seat": 0, "action": view["legal"][-1]["id"], "version": view["version"]}
        view = client.post(f"/api/games/{view['id']}/actions", json=move).json()
    path = tmp_path / "games" / f"{view['id']}.json"

    def ask(change: Any = None) -> Any:
        data = json.loads(path.read_text())
        if change is not None:
            change(data)
        path.write_text(json.dumps(data))
        return make_client(opponents=("random",), hands=2).get(f"/api/games/{view['id']}")

    return {"view": view, "path": path, "good": path.read_bytes(), "ask": ask}


@pytest.mark.parametrize("change, words", [
    (lambda d: d.pop("hands"), "missing key(s) hands"),
    (lambda d: d.pop("show_policy"), "missing key(s) show_policy"),
    (lambda d: (d.pop("log"), d.pop("hands")), "missing key(s) hands, log"),
    (lambda d: d["seats"].__setitem__(1, ["random"]), "agent ['random'] is not one this server plays"),
    (lambda d: d["seats"].__setitem__(1, {"random": 1}), "agent {'random': 1} is not one this server plays"),
    (lambda d: d.update(hands_recorded=1), "'hands_recorded' 1 counts more hands than its actions finish"),
])
def test_a_saved_game_missing_a_key_or_naming_no_agent_is_410_naming_it(saved: dict[str, Any], change: Any,
                                                                       words: str) -> None:
    error = refused(saved["ask"](change), 410)
    assert error.startswith(f"game {saved['view']['id']} cannot be restored: {words}"), error
    saved["path"].write_bytes(saved["good"])
    assert saved["ask"]().json() == saved["view"]  # the good file still restores


def test_a_saved_game_without_its_optional_keys_restores(saved: dict[str, Any]) -> None:
    """``rng``, ``over`` and ``agent_error`` may be absent (a file of an older server)."""
    r = saved["ask"](lambda d: (d.pop("rng"), d.pop("over")))
    assert r.status_code == 200 and r.json()["version"] == saved["view"]["version"]


def test_an_empty_record_file_says_it_has_no_hands(make_client: Any, tmp_path: Path) -> None:
    client = make_client(opponents=("random",), hands=1)
    (tmp_path / "empty.jsonl").write_text("")
    error = refused(client.get("/api/records/empty.jsonl/hands/0"), 404)
    assert error == "empty.jsonl has no hands, no hand '0'", error
    view = _play_out(client)
    error = refused(client.get(f"/api/records/{view['id']}.jsonl/hands/1"), 404)
    assert error == f"{view['id']}.jsonl has hands 0-0, no hand '1'", error


def test_a_saved_game_from_before_observe_discards_restores(saved: dict[str, Any]) -> None:
    """A file of a server older than the option lacks its key (which does not change play): it
    restored as 'played under other rules'; a rule that differs still does not restore."""
    r = saved["ask"](lambda d: d["rules"].pop("observe_discards"))
    assert r.status_code == 200 and r.json()["version"] == saved["view"]["version"]
    error = refused(saved["ask"](lambda d: d["rules"].update(jokers=6)), 410)
    assert "the game was played under other rules than this server's classic_2p" in error, error
