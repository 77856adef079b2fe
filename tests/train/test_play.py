"""``canasta play`` driven by scripted input: a whole game, bad input, end of input, quitting, hot
seat and partners, the learned-policy view, and a human view that never shows hidden cards."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import train.cli.main
from canasta_env.engine import init, step
from canasta_env.policy import RandomAgent
from canasta_env.records import read_records, replay
from canasta_env.rules import load_rules, preset_names
from canasta_env.testing import resample_hidden
from train.play.seats import Seat, build_seats
from train.play.table_view import view_text
from train.play.terminal import PlaySession, parse_move

REPO = Path(__file__).resolve().parents[2]


def _play(monkeypatch, capsys, args: list[str], lines: list[str]) -> tuple[int, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(f"{x}\n" for x in lines)))
    code = train.cli.main.main(["play", *args])
    return code, capsys.readouterr().out


def test_a_whole_game_completes_and_is_recorded(monkeypatch, capsys, tmp_path: Path) -> None:
    record = tmp_path / "game.jsonl"
    code, out = _play(monkeypatch, capsys, ["--seed", "3", "--record", str(record)], ["1"] * 3000)
    assert code == 0
    assert "Final scores: side" in out and "wins" in out
    records = read_records(record)
    assert len(records) >= 2 and records[-1].game_result is not None
    assert [r.hand_number for r in records] == list(range(len(records)))
    assert max(records[-1].scores_after) >= 5000
    for r in records:
        assert r.seats == ["human", "heuristic"] and r.meta["seed"] == 3
        replay(r)
    last = out[out.index("Final scores"):]
    for side, score in enumerate(records[-1].scores_after):
        assert f"{side} (P{side}" in last and str(score) in last
    assert f"{len(records)} hand record(s) appended to {record}" in out


def test_bad_input_is_explained_and_asked_again(monkeypatch, capsys, tmp_path: Path) -> None:
    record = tmp_path / "bad.jsonl"
    lines = ["garbage", "", "0", "999", "-3", "DISCARD_7", "answer_yes", "xyz", "?", "t", "draw",
             "disc"]  # then the input ends in the middle of the turn
    code, out = _play(monkeypatch, capsys, ["--seed", "3", "--record", str(record)], lines)
    assert code == 0
    for text in ("'garbage' is not a move", "Type a move number", "There is no move number 0",
                 "There is no move number 999", "There is no move number -3",
                 "DISCARD_7 is not a legal move now", "ANSWER_YES is not a legal move now",
                 "'xyz' is not a move", "Type the number of a move", "you drew",
                 "'disc' could be several moves: DISCARD_"):
        assert text in out, text
    assert out.count("P0 you") >= 3  # the table was shown again on 't'
    assert "Game stopped (end of input) after 0 complete hand(s): scores so far" in out
    (rec,) = read_records(record)
    assert rec.end == "unfinished" and rec.actions[0] == 0  # the draw was played and saved
    replay(rec)


def test_end_of_input_mid_game_keeps_finished_hands(monkeypatch, capsys, tmp_path: Path) -> None:
    record = tmp_path / "eof.jsonl"
    code, out = _play(monkeypatch, capsys, ["--seed", "3", "--record", str(record)], ["1"] * 120)
    assert code == 0
    records = read_records(record)
    assert len(records) >= 2 and records[-1].end == "unfinished"
    assert all(r.end != "unfinished" for r in records[:-1])
    for r in records:
        replay(r)
    tail = out[out.index("Game stopped (end of input)"):]
    for side, score in enumerate(records[-1].scores_before):
        assert f"{side} (P{side}" in tail and str(score) in tail


def test_quit_and_ctrl_c_save_and_exit_cleanly(monkeypatch, capsys, tmp_path: Path) -> None:
    code, out = _play(monkeypatch, capsys, ["--seed", "1", "--hands", "1", "--record",
                                            str(tmp_path / "q.jsonl")], ["1", "q"])
    assert code == 0 and "Game stopped (quit)" in out
    assert read_records(tmp_path / "q.jsonl")[0].end == "unfinished"
    calls = []

    def read_line(prompt: str) -> str:
        calls.append(prompt)
        if len(calls) > 3:
            raise KeyboardInterrupt
        return "1"

    rules = load_rules("classic_3p")
    session = PlaySession(rules, build_seats(rules, [1], "random", None), seed=2,
                          record=tmp_path / "c.jsonl", read_line=read_line)
    assert session.play() == 130
    out = capsys.readouterr().out
    assert "Game stopped (interrupted (Ctrl-C))" in out
    replay(read_records(tmp_path / "c.jsonl")[-1])


def test_single_hand_four_players_with_partner_and_hot_seat(monkeypatch, capsys, tmp_path: Path) -> None:
    rules = load_rules("classic_4p")
    seats = build_seats(rules, [0], "heuristic", "greedy")
    assert [s.label for s in seats] == ["human", "heuristic", "greedy", "heuristic"]
    record = tmp_path / "4p.jsonl"
    code, out = _play(monkeypatch, capsys, ["--rules", "classic_4p", "--human", "0", "2", "--hands", "1",
                                            "--seed", "4", "--record", str(record)], ["1"] * 2000)
    assert code == 0
    assert "pass the keyboard to P2" in out and "Final scores: after 1 hand(s)" in out
    (rec,) = read_records(record)
    assert rec.seats == ["human", "heuristic", "human", "heuristic"] and rec.episode == "hand"
    replay(rec)


def test_bad_arguments_are_refused(monkeypatch, capsys) -> None:
    assert train.cli.main.main(["play", "--human", "2"]) == 2
    assert "out of range for 2 players" in capsys.readouterr().err
    assert train.cli.main.main(["play", "--opponent", "no_such_agent"]) == 2
    assert "unknown agent" in capsys.readouterr().err
    assert train.cli.main.main(["play", "--hands", "0"]) == 2


@pytest.mark.parametrize("seats", [["0", "0"], ["1", "0", "1"]])
def test_a_repeated_human_seat_is_refused_on_one_line(capsys, seats: list[str]) -> None:
    assert train.cli.main.main(["play", "--human", *seats, "--hands", "1"]) == 2
    captured = capsys.readouterr()
    repeated = sorted({int(x) for x in seats if seats.count(x) > 1})
    assert captured.err.strip() == (f"canasta play: error: --human: seat(s) {repeated} given more "
                                    "than once")
    assert captured.out == ""  # refused before the game starts


@pytest.mark.parametrize("text, legal, expect", [
    ("2", [0, 2, 5], 2), (" draw_stock ", [0, 2, 5], 0), ("TAKE_PILE_L", [0, 2, 5], 5),
    ("4", [0, 2, 5], None), ("TAKE", [0, 2, 5], None), ("DISCARD_K", [0, 2, 5], None),
    ("", [0], None), ("hello", [0], None),
])
def test_parse_move(text: str, legal: list[int], expect: int | None) -> None:
    action, message = parse_move(text, legal)
    assert action == expect
    assert bool(message) == (expect is None)


@pytest.mark.parametrize("preset", preset_names())
def test_human_view_never_shows_hidden_cards(preset: str) -> None:
    rules = load_rules(preset)
    rng = np.random.default_rng(0)
    agent = RandomAgent()
    labels = ["human"] + ["heuristic"] * (rules.num_players - 1)
    checked = leaks_caught = 0
    for seed in range(2):
        state = init(rules, 1, seed, episode="game")
        for k in range(300):
            if state.terminated[0] or state.truncated[0]:
                break
            if k % 23 == 5:
                for seat in range(rules.num_players):
                    seen = view_text(state, seat, labels)
                    for _ in range(2):
                        other = resample_hidden(state, seat, rng)
                        assert view_text(other, seat, labels) == seen, (seed, k, seat)
                    checked += 1
                leaks_caught += view_text(other, None, labels) != view_text(state, None, labels)
            step(state, agent.act(None, state.legal_action_mask, rng))
    assert checked > 40
    assert leaks_caught > 0  # the omniscient view does change: the check can see a leak


def test_play_with_a_rule_agent_never_imports_torch() -> None:
    code = ("import io, sys, contextlib\n"
            "sys.stdin = io.StringIO('1\\n' * 40)\n"
            "import train.cli.main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    assert train.cli.main.main(['play', '--seed', '0', '--hands', '1']) == 0\n"
            "print('torch' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_show_policy_with_a_learned_opponent(monkeypatch, capsys, tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from sb3_contrib import MaskablePPO

    from agents.checkpoint import build_meta, save_checkpoint
    from canasta_env.envs.sb3_env import CanastaVecEnv

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = MaskablePPO("MlpPolicy", CanastaVecEnv(2, "classic_2p"), seed=0, device="cpu",
                            policy_kwargs={"net_arch": [16, 16]})
        meta = build_meta(config={"algo": "ppo"}, rules="classic_2p", policy=model.policy)
        save_checkpoint(tmp_path / "run", "ckpt_000000001", policy_state=model.policy.state_dict(),
                        optimizer_state=model.policy.optimizer.state_dict(),
                        state={"num_timesteps": 0}, meta=meta)
        code, out = _play(monkeypatch, capsys, ["--opponent", str(tmp_path / "run"), "--show-policy",
                                                "--hands", "1", "--seed", "5"], ["1"] * 25)
    finally:
        torch.set_num_threads(threads)
    assert code == 0
    assert "policy:ckpt_000000001 would play:" in out  # a hint on the human's turn
    assert "[top moves: " in out  # the agent's own choices with probabilities
    probs = [float(x.split()[-1].rstrip(",]")) for line in out.splitlines() if "[top moves:" in line
             for x in line.split("[top moves: ")[1].split(", ")]
    assert probs and all(0.0 <= p <= 1.0 for p in probs)


def test_seat_labels_for_checkpoints_and_sessions(tmp_path: Path) -> None:
    rules = load_rules("classic_3p")
    seats = build_seats(rules, [2], "greedy", "random")  # no partnerships: --partner unused
    assert [s.label for s in seats] == ["greedy", "greedy", "human"]
    assert seats[0].agent is seats[1].agent
    session = PlaySession(rules, [Seat("random", RandomAgent())] * 3, seed=0, hands=2)
    assert session.play() == 0 and session.hands_done == 2


@pytest.mark.parametrize("partners", ["", "  "])
def test_an_empty_partners_is_refused_not_read_as_none(capsys, partners: str) -> None:
    assert train.cli.main.main(["play", "--rules", "classic_4p", "--partners", partners, "--hands", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "canasta play: error: --partners '" in err and "name an agent" in err, err
    seats = build_seats(load_rules("classic_4p"), [0], "heuristic", "greedy")  # the twin: a name is seated
    assert seats[2].label == "greedy"
