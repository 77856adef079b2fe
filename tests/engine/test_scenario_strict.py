"""scenario() builds only tables the game reaches (issue #45): each refused table with its one-line
error and a legal twin, reached states rebuilt unchanged through describe(), and the module under
NUMBA_DISABLE_JIT=1.

Rebuilt rows are compared on every field that defines the position: every card where it lies (the
stock in order), melds and closed canastas with their kinds, kitties or feet and their state, red
threes, scores, opened sides, melded seats, the mover, dealer, phase, the draw/take flags, turn
value, new slots, the pile's freeze and the game status. Excluded, because they are play's memory
and no scenario argument sets them: the deal address (seed, row, index), hand and decision
counters, the last hand's score and parts, the cards others know came from the pile, each seat's
discards this hand, the turn's
meld-action count, ask and answer bookkeeping, the other turn flags (melded before this turn,
added to an old meld, new canasta, sevens only when melding began) and ``needs_min``/``minimum``
after the draw (set at the turn's start); the credit toward the minimum is compared as "every card"
or the counts. At the start of a turn (draw phase) none of these affect play, so there the rebuilt
legal-action mask must equal the reached one too.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from canasta_env.engine import init, reset_rows, step
from canasta_env.engine import layout as L
from canasta_env.engine.deal import CREDIT_ALL
from canasta_env.engine.integrity import REPORT_SIZE
from canasta_env.engine.legality import find_illegal
from canasta_env.rules import load_rules
from canasta_env.scenario import ScenarioError, describe, scenario
from canasta_env.testing import keyed_actions

TWO = ["5 6 7", "Q Q 9"]
FOUR = ["5 6 7", "Q Q 9", "4 4 6", "8 8 9"]
CANASTAS = ["K K K K K K K", "A A A A A A A"]
KITTY = "4 5 6 8 9 T J Q K A 4"

# (preset, refused description, its one-line error, the legal twin)
CASES = [
    ("classic_2p", dict(hands=TWO, melds={0: ["K K K", "5 5 2 2 JK"]}),
     "melds[0][1] '5 5 2 2 JK': more wild cards (3) than natural cards (2) (C13)",
     dict(hands=TWO, melds={0: ["K K K", "5 5 5 2 JK"]})),
    ("regal_2p", dict(hands=TWO, melds={0: ["5 5 2 2 JK JK"]}),
     "melds[0][0] '5 5 2 2 JK JK': 4 wild cards, a meld holds at most 3 (C13)",
     dict(hands=TWO, melds={0: ["5 5 2 2 JK"]})),  # G4: two naturals may carry three wilds
    ("railroad_2p", dict(hands=TWO, melds={0: ["K K K K K K K K"]}),
     "melds[0][0] 'K K K K K K K K': 8 cards in an open meld, which closes as a canasta at 7 (R2, P2)",
     dict(hands=TWO, melds={0: ["K K K K K K"]}, closed={0: ["K K K K K K 2"]})),
    ("classic_2p", dict(hands=TWO, melds={0: ["K K K K K K K K"]}, opened=[False, False]),
     "opened[0]: side 0 has melds but has not opened (C16)",
     dict(hands=TWO, melds={0: ["K K K K K K K K"]})),
    ("classic_2p", dict(hands=TWO, melds={0: ["JK JK 2"]}),
     "melds[0][0] 'JK JK 2': a meld of wild cards only needs the four canasta kinds (C13, R2)",
     dict(hands=TWO, melds={0: ["K JK 2 K"]})),
    ("railroad_2p", dict(hands=TWO, melds={0: ["7 7 7 JK"]}),
     "melds[0][0] '7 7 7 JK': 1 wild cards with sevens, sevens take no wild cards (R2, P2)",
     dict(hands=TWO, melds={0: ["7 7 7 7", "JK JK 2"]})),
    # black threes: melded only in the mover's going-out turn (C11) ...
    ("classic_2p", dict(hands=["5", "Q Q 9"], melds={0: [*CANASTAS, "B3 B3 B3"]}),
     "melds[0][2] 'B3 B3 B3': black threes are melded only by the mover in the meld phase of the turn "
     "they go out in (C11)",
     dict(hands=["5", "Q Q 9"], melds={0: [*CANASTAS, "B3 B3 B3"]}, phase="meld", new_slots=[12])),
    # ... and only while going out stays possible: without two canastas no move is left (C19a)
    ("classic_2p", dict(hands=["5", "Q Q 9"], melds={0: ["K K K", "B3 B3 B3"]}, phase="meld",
                        new_slots=[12]),
     "turn 0 in phase 'meld': the player to move has no legal action (C19a)",
     dict(hands=["5 5", "Q Q 9"], melds={0: ["K K K"]}, phase="meld")),
    # a slot started this turn holds a meld of the mover's side (slot 9 is the kings')
    ("classic_2p", dict(hands=TWO, melds={1: ["K K K"]}, phase="meld", new_slots=[9]),
     "new_slots: slot 9 holds no meld of the mover's side",
     dict(hands=TWO, melds={0: ["K K K"]}, phase="meld", new_slots=[9])),
    ("regal_4p", dict(hands=FOUR, melds={0: ["P2: K K K"]}, phase="meld", new_slots=[9]),
     "new_slots: slot 9 holds no meld of the mover's seat",
     dict(hands=FOUR, melds={0: ["P0: K K K"]}, phase="meld", new_slots=[9])),
    ("classic_2p", dict(hands=["", "Q Q 9"]),
     "hands[0]: an empty hand in a live game: a player keeps a card unless going out (C19)",
     dict(hands=["5", "Q Q 9"])),
    ("classic_2p", dict(hands=TWO, pile="4 JK 5", pile_frozen=False),
     "pile_frozen: the pile holds a wild card or red three but is not frozen (C5, C20)",
     dict(hands=TWO, pile="4 JK 5")),
    ("railroad_2p", dict(hands=TWO, reserves={1: "4 5"}),
     "reserves[1]: 2 cards in the kitty or foot, the rules deal 11 (R1, P1)",
     dict(hands=TWO, reserves={1: KITTY})),
    ("railroad_2p", dict(hands=TWO, reserves={1: KITTY}, reserve_shown=[1]),
     "reserve_shown [1]: only the mover's kitty is shown, after its canasta this turn (R4)",
     dict(hands=TWO, reserves={1: KITTY})),
    ("classic_2p", dict(hands=["R3 5 6", "Q Q 9"]),
     "hands[0]: red threes are never held (C8); use red_threes", dict(hands=TWO, red_threes={0: 1})),
    ("classic_2p", dict(hands=TWO, closed={0: ["K K K K K K K"]}),
     "closed[0][0] 'K K K K K K K': a closed canasta is seven cards of a rank or of wilds, under a meld "
     "cap (R2)", dict(hands=TWO, melds={0: ["K K K K K K K"]})),
    # melds are keyed by side in every preset; G2 names the owning seat with a prefix
    ("classic_4p", dict(hands=FOUR, melds={2: ["K K K"]}),
     "melds key = 2 is not a side in [0, 2) (melds are keyed by side, seat % num_sides)",
     dict(hands=FOUR, melds={0: ["K K K"]})),
    ("classic_4p", dict(hands=FOUR, melds={0: ["P2: K K K"]}),
     "melds[0][0] 'P2: K K K': sides own melds in these rules (C14); drop 'P2'",
     dict(hands=FOUR, melds={0: ["K K K"]})),
    ("regal_4p", dict(hands=FOUR, melds={0: ["P1: K K K"]}),
     "melds[0][0] 'P1: K K K': 'P1' is not a seat of side 0 (seats [0, 2], G2)",
     dict(hands=FOUR, melds={1: ["P1: K K K"]})),
]


@pytest.mark.parametrize(("preset", "bad", "message", "good"), CASES, ids=[c[2][:40] for c in CASES])
def test_unreachable_table_refused_and_its_twin_built(preset: str, bad: dict, message: str,
                                                      good: dict) -> None:
    with pytest.raises(ScenarioError) as info:
        scenario(preset, **bad)
    assert str(info.value) == message
    state = scenario(preset, **good)
    assert state.legal_action_mask[0].any()


def test_seat_owned_melds_land_with_their_seat() -> None:
    """G2: ``P2:`` puts the meld on seat 2's melds, no prefix on the side's first seat."""
    state = scenario("regal_4p", hands=FOUR, melds={0: ["P2: K K K", "Q Q Q"], 1: ["P3: 9 9 9"]})
    assert state.meld_naturals[0, 2, 13 - 4] == 3
    assert state.meld_naturals[0, 0, 12 - 4] == 3
    assert state.meld_naturals[0, 3, 9 - 4] == 3
    assert state.has_melded[0].tolist() == [1, 0, 1, 1]


# ---- reached states rebuilt through describe() ----------------------------------------------------

PRESETS = ["classic_2p", "classic_4p", "regal_4p", "railroad_2p", "pennies_4p"]
STATES = 2000  # per preset: 10,000 in all
BATCH, EVERY = 200, 7  # rows played together; a state sampled from each row every EVERY decisions
_IGNORED = [L.F_HAND_NO, L.F_STEPS, L.F_TRUNC, L.F_SEED_LO, L.F_SEED_HI, L.F_DEAL_ROW, L.F_DEAL_INDEX,
            L.F_TURN_MELDS, L.F_ASKER, L.F_CONCEALED, L.F_HAND_END, L.F_PLAY_CLOSED, L.F_TURN_FLAGS]


def _ignored_columns(prm: np.ndarray) -> np.ndarray:
    """Row positions the comparison skips (see the module docstring); the flags and credit are
    compared apart."""
    cols = list(_IGNORED)
    for key in (L.O_KNOWN, L.O_HSCORE, L.O_PARTS, L.O_CREDIT, L.O_DISCARDS):
        rows, width = L.BLOCK_SHAPE[key]
        size = L.block_rows(prm)[rows] * width
        cols.extend(range(int(prm[key]), int(prm[key]) + size))
    return np.array(cols)


def _credit(row: np.ndarray, prm: np.ndarray) -> list[int] | None:
    credit = row[prm[L.O_CREDIT]: prm[L.O_CREDIT] + 15]
    return None if credit.min() >= CREDIT_ALL // 2 else credit.tolist()


def _rebuilt_differs(state, b: int, skip: np.ndarray) -> str:
    """'' when row ``b`` comes back unchanged through describe() and scenario(), else what differs."""
    rebuilt = scenario(**describe(state, b))
    prm, want, got = state.params, state.data[b].copy(), rebuilt.data[0].copy()
    if want[L.F_PHASE] != L.PH_DRAW:
        skip = np.concatenate([skip, [L.F_NEEDS_MIN, L.F_MINIMUM]])
    flags = L.TF_DREW | L.TF_TOOK
    if (want[L.F_TURN_FLAGS] & flags) != (got[L.F_TURN_FLAGS] & flags) \
            or _credit(want, prm) != _credit(got, prm):
        return "turn flags or credit"
    want[skip], got[skip] = 0, 0
    for key, length in ((L.O_STOCK, L.F_STOCK_LEN), (L.O_PILE, L.F_PILE_LEN)):  # past the top: stale
        for row in (want, got):
            row[prm[key] + row[length]: prm[key] + prm[L.P_DECK]] = 0
    if (want != got).any():
        return f"row positions {np.flatnonzero(want != got).tolist()}"
    if want[L.F_PHASE] == L.PH_DRAW and (state.legal_action_mask[b] != rebuilt.legal_action_mask[0]).any():
        return "legal-action mask at the turn's start"
    return ""


@pytest.mark.parametrize("preset", PRESETS)
def test_reached_states_pass_the_checks_and_rebuild_unchanged(preset: str) -> None:
    """Random legal play (uniform and meld-eager rows, seeded): every live row passes the legality
    checks after every decision, and sampled rows rebuild unchanged through describe()."""
    state = init(preset, BATCH, 45)
    rows, report = np.arange(BATCH, dtype=np.int64), np.zeros(REPORT_SIZE, dtype=np.int64)
    skip = _ignored_columns(state.params)
    eager = np.arange(BATCH) % 2 == 1
    sampled, decision, failures = 0, 0, []
    while sampled < STATES:
        plain = keyed_actions(state.data, state.legal_action_mask, 45, False)
        keen = keyed_actions(state.data, state.legal_action_mask, 45, True)
        result = step(state, np.where(eager, keen, plain))
        decision += 1
        bad = find_illegal(state.data, state.params, state.params, state.legal_action_mask, rows, report)
        assert bad == -1, f"{preset}: reached row {bad} ({state.deal_id(int(bad))}) fails {report.tolist()}"
        for b in range(decision % EVERY, BATCH, EVERY):
            if sampled < STATES and state.data[b, L.F_STATUS] == L.ST_LIVE \
                    and state.data[b, L.F_PHASE] in (L.PH_DRAW, L.PH_MELD, L.PH_FINAL_MELD):
                sampled += 1
                diff = _rebuilt_differs(state, b, skip)
                if diff:
                    failures.append(f"{state.deal_id(b)} decision {decision}: {diff}")
        done = np.flatnonzero(result.terminated | result.truncated)
        if done.size:
            reset_rows(state, done)
    assert not failures, f"{len(failures)} of {sampled} rebuilt rows differ, first: {failures[:3]}"


def test_scenario_without_jit() -> None:
    """NUMBA_DISABLE_JIT=1: the builder, its checks and describe() run as plain Python."""
    code = ("from canasta_env.scenario import scenario, describe, ScenarioError\n"
            "s = scenario('railroad_2p', hands=['5 6 7', 'Q Q 9'], melds={0: ['7 7 7 7']})\n"
            "assert (scenario(**describe(s)).data == s.data).all()\n"
            "try:\n    scenario('classic_2p', hands=['5 6 7', 'Q Q 9'], melds={0: ['5 5 2 2 JK']})\n"
            "except ScenarioError as e:\n    print(e)\n")
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "melds[0][0] '5 5 2 2 JK': more wild cards (3) than natural cards (2) (C13)"


# ---- hostile arguments: one ScenarioError naming the argument, before any kernel runs -------------

H2 = ["5 5 5 K K 7", "Q Q 9"]
# (preset, bad arguments, the one-line error)
BAD_ARGS = [
    ("classic_2p", dict(turn=1.0), "turn = 1.0 is not a seat in [0, 2)"),
    ("classic_2p", dict(turn="0"), "turn = '0' is not a seat in [0, 2)"),
    ("classic_2p", dict(turn=True), "turn = True is not a seat in [0, 2)"),
    ("classic_2p", dict(dealer=5), "dealer = 5 is not a seat in [0, 2)"),
    ("classic_2p", dict(dealer=-1), "dealer = -1 is not a seat in [0, 2)"),
    ("classic_2p", dict(red_threes={-1: 2}), "red_threes seat = -1 is not a seat in [0, 2)"),
    ("classic_2p", dict(red_threes={5: 2}), "red_threes seat = 5 is not a seat in [0, 2)"),
    ("classic_2p", dict(has_melded=[-1]), "has_melded = -1 is not a seat in [0, 2)"),
    ("classic_2p", dict(has_melded=[9]), "has_melded = 9 is not a seat in [0, 2)"),
    ("railroad_2p", dict(reserves={-1: "4 5"}), "reserves seat = -1 is not a seat in [0, 2)"),
    ("railroad_2p", dict(reserves={7: "4"}), "reserves seat = 7 is not a seat in [0, 2)"),
    ("railroad_2p", dict(reserve_shown=[9]), "reserve_shown = 9 is not a seat in [0, 2)"),
    ("railroad_2p", dict(reserve_shown=[0]),
     "reserve_shown: seat 0 has no kitty or foot described in reserves (R4)"),
    ("classic_2p", dict(new_slots=[20], phase="meld"), "new_slots = 20 is not a meld slot in [0, 13)"),
    ("classic_2p", dict(new_slots=[99], phase="meld"), "new_slots = 99 is not a meld slot in [0, 13)"),
    ("classic_2p", dict(new_slots=[-1], phase="meld"), "new_slots = -1 is not a meld slot in [0, 13)"),
    ("classic_2p", dict(new_slots=[1.5], phase="meld"), "new_slots = 1.5 is not a meld slot in [0, 13)"),
    ("classic_2p", dict(new_slots="1", phase="meld"),
     "new_slots: expected a list of meld slots, got str '1'"),
    ("classic_2p", dict(new_slots=[1]), "new_slots: the mover starts no meld before drawing (phase 'draw')"),
    ("classic_2p", dict(turn_value="12"), "turn_value = '12' is not an int in [0, 100001)"),
    ("classic_2p", dict(turn_value=12.5), "turn_value = 12.5 is not an int in [0, 100001)"),
    ("classic_2p", dict(turn_value=2**40), "turn_value = 1099511627776 is not an int in [0, 100001)"),
    ("classic_2p", dict(scores=[0.7, 1500.9]), "scores[0] = 0.7 is not an int in [-9999999, 10000000)"),
    ("classic_2p", dict(scores=5), "scores: expected a list of 2 ints, one per side, got int 5"),
    ("classic_2p", dict(scores=["a", "b"]), "scores[0] = 'a' is not an int in [-9999999, 10000000)"),
    ("classic_2p", dict(scores=[0, 1, 2]),
     "scores: expected a list of 2 ints, one per side, got 3 items [0, 1, 2]"),
    ("classic_2p", dict(scores=[2**40, 0]),
     "scores[0] = 1099511627776 is not an int in [-9999999, 10000000)"),
    ("classic_2p", dict(red_threes={0: 1.5}), "red_threes[0] = 1.5 is not a count in [0, 5)"),
    ("classic_2p", dict(pile_frozen=5), "pile_frozen = 5 is not a bool (True or False)"),
    ("classic_2p", dict(took_pile=1, phase="meld"), "took_pile = 1 is not a bool (True or False)"),
    ("classic_2p", dict(opened="yes"), "opened: expected a list of 2 bools, one per side, got str 'yes'"),
    ("classic_2p", dict(opened=[1, 0]), "opened[0] = 1 is not a bool (True or False)"),
    ("classic_2p", dict(phase=None), "phase must be draw, meld or final_meld, got None"),
    ("classic_2p", dict(hands={"0": "5 5"}), "hands seat = '0' is not a seat in [0, 2)"),
    ("classic_2p", dict(hands=[[5, 5, 5], "Q"]),
     "hands[0] = [5, 5, 5] is not a card string such as '5 5 K JK'"),
    ("classic_2p", dict(hands=[None, "Q"]), "hands[0] = None is not a card string such as '5 5 K JK'"),
    ("classic_2p", dict(hands=None), "hands: expected a list of card strings, one per seat, or a mapping "
     "seat -> card string, got NoneType None"),
    ("classic_2p", dict(hands="5 5 5"), "hands: expected a list of card strings, one per seat, or a mapping "
     "seat -> card string, got str '5 5 5'"),
    ("classic_2p", dict(pile=None), "pile = None is not a card string such as '5 5 K JK'"),
    ("classic_2p", dict(credit=5, phase="meld"), "credit = 5 is not a card string such as '5 5 K JK'"),
    ("classic_2p", dict(melds=["K K K"]),
     "melds: expected a mapping side -> list of meld strings, e.g. {0: ['K K K']}, got list ['K K K']"),
    ("classic_2p", dict(melds={0: "K K K"}), "melds[0]: expected a list of meld strings, got str 'K K K'"),
    ("classic_2p", dict(melds={"0": ["K K K"]}),
     "melds key = '0' is not a side in [0, 2) (melds are keyed by side, seat % num_sides)"),
    ("classic_2p", dict(red_threes=[1, 1]), "red_threes: expected a mapping seat -> count, got list [1, 1]"),
]


@pytest.mark.parametrize(("preset", "bad", "message"), BAD_ARGS, ids=[c[2][:40] for c in BAD_ARGS])
def test_bad_argument_refused_naming_it(preset: str, bad: dict, message: str) -> None:
    with pytest.raises(ScenarioError) as info:
        scenario(preset, **{"hands": H2, **bad})
    assert str(info.value) == message


def test_rules_go_through_load_rules() -> None:
    """A dict of options is read like load_rules reads it; what it cannot read it refuses."""
    options = load_rules("classic_2p").to_dict()
    assert (scenario(options, hands=H2).data == scenario("classic_2p", hands=H2).data).all()
    with pytest.raises(ValueError, match="rules must be a preset name"):
        scenario(None, hands=H2)  # type: ignore[arg-type]


@pytest.mark.parametrize("turn", [2**31 - 1, 2**31, 10**12, 10**6, -1])
def test_out_of_range_turn_refused_before_the_kernel(turn: int) -> None:
    """A turn out of [0, players) used to reach start_turn and write out of the row (a segfault for
    2**31 - 1): run in a child so that a crash fails the test instead of the session."""
    code = ("from canasta_env.scenario import scenario, ScenarioError\n"
            f"try:\n    scenario('classic_2p', hands={H2!r}, turn={turn})\n"
            "except ScenarioError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == f"turn = {turn} is not a seat in [0, 2)"
