"""The engine's legal-action mask equals the independent oracle (tests/oracle.py).

Two sources of states, ``CANASTA_ORACLE_STATES`` (default 1000) of each per preset or variant:

* **played**: random games played by the engine itself, half with uniform random legal actions,
  half with a "meld-eager" policy that prefers takes, melds and additions (probability 0.8) so that
  minimums and going out come up often. A live state is compared with probability 0.01, or 0.3
  when it is near a corner of the rules (``_edge``), so that samples spread over whole hands.
* **built**: random states described with ``canasta_env.scenario``: concentrated hands, melds of
  every size, unopened sides in the middle of their turn, taken piles with partial credit, an empty
  stock, the final_meld and answer phases, asked turns. These reach corners random play almost
  never does (a concealed go-out below the minimum, a one-card hand facing a one-card pile, ...).
  A built state may be unreachable in play (the engine then offers no action at all); the two must
  agree there too, but a mismatch on such a state is a weaker finding and the message says so.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from canasta_env.engine import ACTION_NAMES, action_index, init, reset_rows, step, step_one
from canasta_env.engine.cards import kinds_per_pack
from canasta_env.engine.core import State
from canasta_env.engine.layout import F_TURN_MELDS
from canasta_env.engine.render import render
from canasta_env.rules import RuleSet, load_rules
from canasta_env.scenario import scenario
from tests.oracle import legal_action_names

STATES = int(os.environ.get("CANASTA_ORACLE_STATES", "1000"))
BATCH = 64
SAMPLE_P = 0.01  # chance that an ordinary live state is compared
SAMPLE_P_EDGE = 0.3  # chance for a state near a corner of the rules (``_edge``)

VARIANTS = {
    "classic_2p": lambda: load_rules("classic_2p"),
    "classic_3p": lambda: load_rules("classic_3p"),
    "classic_4p": lambda: load_rules("classic_4p"),
    "ask_partner": lambda: load_rules("classic_4p", ask_partner=True),
    "forced_if_legal": lambda: load_rules("classic_2p", exhausted_stock_take="forced_if_legal"),
    "regal_2p": lambda: load_rules("regal_2p"),
    "regal_3p": lambda: load_rules("regal_3p"),
    "regal_4p": lambda: load_rules("regal_4p"),
    # 5-6 players (R1, P1 groundwork): three packs, each for themselves or two teams of three
    "five_players": lambda: load_rules({"name": "five", "num_players": 5, "packs": 3, "jokers": 6}),
    "six_teams": lambda: load_rules({"name": "six_teams", "num_players": 6, "partnerships": True,
                                     "packs": 3, "jokers": 6}),
}

_EAGER = np.array([n.startswith(("TAKE_PILE", "MELD_", "ADD_")) for n in ACTION_NAMES])


def _check(state: State, b: int, coverage: Counter[str], where: str, extra: str = "") -> None:
    engine = {ACTION_NAMES[a] for a in state.legal_actions(b)}
    oracle = legal_action_names(state, b)
    if engine != oracle:
        note = " (no legal action: the state is unreachable in play)" if not engine else ""
        pytest.fail(f"oracle != engine mask, {where}{note}\n{render(state, b)}\n"
                    f"only engine: {sorted(engine - oracle)}\n"
                    f"only oracle: {sorted(oracle - engine)}{extra}")
    coverage[f"phase{int(state.phase[b])}"] += 1
    for name in engine:
        coverage[name.rsplit("_", 1)[0] if name.startswith(("MELD", "ADD", "DISCARD")) else name] += 1
    if not engine:
        coverage["dead_end"] += 1
    if int(state.phase[b]) == 0 and int(state.stock_size[b]) == 0 and "END_HAND" not in engine:
        coverage["forced_take"] += 1


# ---- played states ---------------------------------------------------------------------------


def _choose(mask: np.ndarray, rng: np.random.Generator, eager: bool) -> np.ndarray:
    keys = np.where(mask, rng.random(mask.shape), -1.0)
    if eager:
        pref = mask & _EAGER
        use = pref.any(axis=1) & (rng.random(mask.shape[0]) < 0.8)
        keys[use] = np.where(pref[use], keys[use] + 1.0, keys[use])
    return keys.argmax(axis=1)


def _edge(state: State, b: int) -> bool:
    """States where the rules' corners live, read from the state (not from the mask)."""
    phase = int(state.phase[b])
    if phase not in (0, 1):
        return True  # answer, final_meld
    p = int(state.current_player[b])
    hand = state.hands[b, p]
    if phase == 0:
        pile = state.pile(b)
        return int(state.stock_size[b]) == 0 or (len(pile) > 0 and hand[int(pile[-1])] > 0)
    owner = p % state.num_owners
    return bool(hand.sum() <= 4 or int(state.turn_flags[b]) & 2
                or (state.needs_minimum[b] and state.meld_naturals[b, owner].any()))


def sample_states(rules: RuleSet, n: int, eager: bool, seed: int
                  ) -> Iterator[tuple[State, int, list[str]]]:
    """Yield (state, row, actions of this hand so far) for ``n`` sampled live states."""
    rng = np.random.default_rng(seed)
    state = init(rules, BATCH, seed=seed)
    history: list[list[str]] = [[] for _ in range(BATCH)]
    done = 0
    while done < n:
        live = ~(state.terminated | state.truncated)
        chance = np.array([SAMPLE_P_EDGE if live[b] and _edge(state, b) else SAMPLE_P
                           for b in range(BATCH)])
        for b in np.flatnonzero(live & (rng.random(BATCH) < chance)):
            yield state, int(b), history[b]
            done += 1
            if done >= n:
                return
        actions = _choose(state.legal_action_mask, rng, eager)
        for row, act in enumerate(actions):
            history[row].append(ACTION_NAMES[act])
        step(state, actions)
        ended = np.flatnonzero(state.terminated | state.truncated)
        if ended.size:
            reset_rows(state, ended)
            for done_row in ended.tolist():
                history[done_row] = []


def compare_played(rules: RuleSet, n: int, seed: int) -> Counter[str]:
    """Compare oracle and mask on ``n`` played states; returns coverage counts."""
    coverage: Counter[str] = Counter()
    for eager in (False, True):
        for state, b, hist in sample_states(rules, n // 2 if eager else n - n // 2, eager, seed):
            deal = tuple(state.deal_id(b))
            _check(state, b, coverage,
                   f"{rules.name}, deal {deal} (replay: init_from_deals(rules, [DealId{deal}]) "
                   f"then the actions below; eager={eager})",
                   f"\nactions this hand ({len(hist)}): {' '.join(hist)}")
    return coverage


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_mask_matches_oracle_on_played_states(variant: str) -> None:
    coverage = compare_played(VARIANTS[variant](), STATES, seed=101)
    if STATES >= 1000 and variant == "ask_partner":
        assert coverage["ASK_PARTNER"] > 0, coverage


# ---- built states ----------------------------------------------------------------------------

KIND_TOKENS = ("JK", "2", "R3", "B3", "4", "5", "6", "7", "8", "9", "T", "J", "Q", "K", "A")
VALUES = (50, 20, 0, 5, 5, 5, 5, 5, 10, 10, 10, 10, 10, 10, 20)


def _cards(counts: dict[int, int]) -> str:
    return " ".join(" ".join([KIND_TOKENS[k]] * c) for k, c in sorted(counts.items()) if c)


def random_scenario(rules: RuleSet, rng: np.random.Generator) -> State:
    """A random mid-hand state for seat ``mover`` (see the module docstring)."""
    n, sides = rules.num_players, rules.num_sides
    avail = [int(c) for c in kinds_per_pack(rules.jokers, rules.packs)]  # cards not placed yet
    avail[2] = 0  # red threes: none in play

    def take(k: int, c: int) -> int:
        c = max(0, min(c, avail[k]))
        avail[k] -= c
        return c

    mover = int(rng.integers(n))
    side = mover % sides
    owners = n if rules.meld_ownership == "player" else sides  # G2: melds per player
    own = mover % owners
    phase = str(rng.choice(["draw", "meld", "final_meld"], p=[0.4, 0.5, 0.1]))
    scores = [int(rng.choice([-50, 0, 1000, 1500, 3000])) for _ in range(sides)]
    # melds; an unopened mover's side has none, or (mid-turn) those it made this turn
    mover_open = bool(rng.random() < 0.5)
    melds: dict[int, list[str]] = {}
    meld_ranks: dict[int, list[int]] = {}
    meld_value = 0
    for s in range(owners):
        if s % sides == side and not mover_open and (s != own or phase == "draw" or rng.random() < 0.5):
            continue
        if s != own and rng.random() < 0.4:
            continue
        for rank in rng.choice(np.arange(4, 15), size=int(rng.integers(1, 5)), replace=False):
            r = int(rank)
            nat = take(r, int(rng.choice([2, 3, 3, 4, 5, 6, 7, 8])))
            w = int(rng.integers(0, min(3, nat) + 1)) if rng.random() < 0.5 else 0
            w = max(w, 3 - nat)
            jk = take(0, int(rng.integers(0, w + 1)))
            tw = take(1, w - jk)
            if nat < 2 or nat + jk + tw < 3:
                avail[r] += nat
                avail[0] += jk
                avail[1] += tw
                continue
            melds.setdefault(s, []).append(_cards({r: nat, 0: jk, 1: tw}))
            meld_ranks.setdefault(s, []).append(r)
            if s == own:
                meld_value += nat * VALUES[r] + 50 * jk + 20 * tw
    side_has = [any(o in melds for o in range(s, owners, sides)) for s in range(sides)]
    opened = [side_has[s] and (s != side or mover_open) for s in range(sides)]
    # the mover's hand: a few focus ranks, wilds, black threes; sometimes just one or two cards
    hand: dict[int, int] = {}
    for r in rng.choice(np.arange(4, 15), size=int(rng.integers(1, 5)), replace=False):
        hand[int(r)] = take(int(r), int(rng.choice([1, 1, 2, 2, 3, 3, 4, 5, 7])))
    for k, chance in ((0, 0.3), (1, 0.4), (3, 0.25)):
        if rng.random() < chance:
            hand[k] = take(k, int(rng.integers(1, 4)))
    if rng.random() < 0.15:
        keep = sorted(hand)[: int(rng.integers(1, 3))]
        for k in list(hand):
            if k not in keep:
                avail[k] += hand.pop(k)
            elif hand[k] > 1:
                avail[k] += hand[k] - 1
                hand[k] = 1
    for k in range(4, 15):
        if sum(hand.values()) == 0:
            hand[k] = take(k, 1)
    empty_stock = phase == "final_meld" or rng.random() < 0.4  # the rest goes under the pile
    hands = {mover: _cards(hand)}
    for q in range(n):
        if q != mover:
            others = rng.choice(np.arange(4, 15), size=int(rng.integers(1, 4)), replace=False)
            held = {int(k): take(int(k), 1) for k in others}
            if empty_stock and rng.random() < 0.7 and q == (mover + 1) % n:
                held.update({0: take(0, 99), 1: take(1, 99)})  # often no wild left for the pile
            hands[q] = _cards(held)
    # the pile: its top is usually a natural the mover holds or melds
    pile: list[int] = []
    for _ in range(int(rng.integers(0, 6)) if rng.random() < 0.8 else 0):
        k = int(rng.choice([1, 3, 4, 8, 10, 12, 14]))
        if take(k, 1):
            pile.append(k)
    if rng.random() < 0.85:
        cands = [k for k in hand if k >= 4] or [4]
        if rng.random() < 0.5 and meld_ranks.get(own):
            cands = meld_ranks[own]
        k = int(rng.choice(cands))
        if take(k, 1):
            pile.append(k)
    elif rng.random() < 0.5 and take(3, 1):
        pile.append(3)
    kwargs: dict[str, Any] = {}
    if phase == "meld":
        kwargs["took_pile"] = took = bool(rng.random() < 0.4)
        if took:  # cards held before the take (C17), a random part of the hand
            kwargs["credit"] = _cards({k: int(rng.integers(0, c + 1)) for k, c in hand.items()})
    if phase == "draw":
        tv = 0
    elif not opened[side]:
        tv = meld_value - (int(rng.integers(0, 4)) * 10 if kwargs.get("took_pile") else 0)
    else:
        tv = int(rng.integers(0, 20)) * 5
    mid_turn = phase != "draw" and not opened[side] and bool(meld_ranks.get(own))
    state = scenario(
        rules, hands, melds=melds, pile=" ".join(KIND_TOKENS[k] for k in pile),
        pile_frozen=bool(rng.random() < 0.15) or None,
        rest="pile" if empty_stock else "stock",
        scores=scores, opened=opened, turn=mover, phase=phase, turn_value=max(0, tv),
        new_slots=[r - 4 for r in meld_ranks[own]] if mid_turn else (), **kwargs)
    if mid_turn:
        # meld actions this turn; a take's own meld is not one (C29 asks after the take)
        state.data[0, F_TURN_MELDS] = len(meld_ranks[own]) - bool(kwargs.get("took_pile"))
        state.refresh_mask()
    if rules.ask_partner and rng.random() < 0.7:  # C29: ask, then maybe answer
        for name in ("ASK_PARTNER", rng.choice(["", "ANSWER_YES", "ANSWER_NO"])):
            if name and state.legal_action_mask[0, action_index(name)]:
                step_one(state, action_index(name))
    return state


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_mask_matches_oracle_on_built_states(variant: str) -> None:
    rules = VARIANTS[variant]()
    rng = np.random.default_rng(404)
    coverage: Counter[str] = Counter()
    for i in range(STATES):
        _check(random_scenario(rules, rng), 0, coverage, f"built state {i} of {variant}")
    if STATES >= 1000:
        wanted = ["phase0", "phase1", "phase3", "DRAW_STOCK", "END_HAND", "TAKE_PILE_PAIR",
                  "TAKE_PILE_LAYOFF", "TAKE_PILE_NAT_JOKER", "MELD_NNN", "ADD_JOKER", "DISCARD",
                  "forced_take"]
        if variant == "ask_partner":
            wanted += ["phase2", "ASK_PARTNER", "ANSWER_YES", "ANSWER_NO"]
        missing = [w for w in wanted if coverage[w] == 0]
        assert not missing, f"built states never reached {missing}: {dict(coverage)}"
