"""Randomized engine checks that ship with the package, for any rules preset or YAML.

``check_random_play`` plays many hands with a random or a meld-eager random agent and checks after
every decision: card conservation, a legal action in every live state, hands ending without the
step cap, and every hand's score equal to its parts as an independent scorer recomputes them from
the final state. ``check_batch_independence`` replays rows of a large batch alone and compares the
trajectories; ``check_expansion`` applies every legal action of sampled states to clones.
``RuleCoverage`` counts how often each rule path fired.

The agents here are keyed by the deal address and decision count (not by the batch), so a row
plays the same whatever else the batch holds.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from numba import njit

from canasta_env.engine import State, clone, init, init_from_deals, reset_rows, step
from canasta_env.engine.actions import DISCARD, NUM_ACTIONS, TAKE_PILE_PAIR
from canasta_env.engine.cards import CARD_VALUES, JOKER, KIND_NAMES, NUM_KINDS, RED_THREE, SLOT_KIND, TWO
from canasta_env.engine.core import DealId
from canasta_env.engine.layout import (
    EVENT_NAMES,
    F_DEAL_INDEX,
    F_DEAL_ROW,
    F_HAND_NO,
    F_SEED_HI,
    F_SEED_LO,
    F_STEPS,
    O_PILE,
    O_STOCK,
    deck_counts,
)
from canasta_env.engine.rng import deal_key, mix64
from canasta_env.policy import pick_in_range
from canasta_env.rules import RuleSet, load_rules

AGENTS = ("random", "eager")


class CheckError(AssertionError):
    """A randomized check found a broken invariant."""


@njit(cache=True)
def keyed_actions(data, mask, salt, eager):
    """One action per row from a stream keyed by the row's DealId, hand and decision count.

    ``eager`` prefers (with probability 0.8) pile takes and melds when any is legal, so minimums,
    canastas and going out happen often.
    """
    out = np.full(data.shape[0], -1, np.int64)
    for b in range(data.shape[0]):
        row = data[b]
        key = deal_key(row[F_SEED_LO], row[F_SEED_HI], row[F_DEAL_ROW], row[F_DEAL_INDEX],
                       row[F_HAND_NO] * 100003 + row[F_STEPS])
        x = mix64(key ^ np.uint64(salt))
        u = (x >> np.uint64(11)) * (1.0 / 9007199254740992.0)
        y = mix64(x)
        v = (y >> np.uint64(11)) * (1.0 / 9007199254740992.0)
        lo, hi = 0, NUM_ACTIONS
        if eager and v < 0.8:
            for a in range(TAKE_PILE_PAIR, DISCARD):
                if mask[b, a]:
                    lo, hi = TAKE_PILE_PAIR, DISCARD
                    break
        out[b] = pick_in_range(mask[b], lo, hi, u)
    return out


def card_counts(state: State) -> npt.NDArray[np.int64]:
    """(B, 15) every card of each kind wherever it is: hands, kitties and feet, open melds, closed
    canastas, red threes, pile, stock."""
    b = state.num_games
    counts = state.hands.sum(axis=1).astype(np.int64)
    nat = state.meld_naturals.sum(axis=1)
    for slot, kind in enumerate(SLOT_KIND):
        if kind >= 0:
            counts[:, kind] += nat[:, slot]
    counts[:, JOKER] += state.meld_jokers.sum(axis=(1, 2))
    counts[:, TWO] += state.meld_twos.sum(axis=(1, 2))
    counts[:, RED_THREE] += state.red_threes.sum(axis=1)
    counts += state.reserves.sum(axis=1)
    cj, ct = state.closed_jokers.sum(axis=1), state.closed_twos.sum(axis=1)  # (B, 13)
    closed_cards = 7 * state.closed_slots.sum(axis=1) - cj - ct
    counts[:, 4:15] += closed_cards[:, :11]
    counts[:, JOKER] += cj.sum(axis=1)
    counts[:, TWO] += ct.sum(axis=1)
    deck = int(state.rules.deck_size)
    for key, length in ((O_PILE, state.pile_size), (O_STOCK, state.stock_size)):
        start = int(state.params[key])
        cards = state.data[:, start: start + deck]
        valid = np.arange(deck)[None, :] < length[:, None]
        flat = (np.arange(b)[:, None] * NUM_KINDS + cards)[valid]
        counts += np.bincount(flat, minlength=b * NUM_KINDS).reshape(b, NUM_KINDS)
    return counts


def check_conservation(state: State) -> None:
    """Every row holds exactly the deck (C1)."""
    counts = card_counts(state)
    bad = np.flatnonzero((counts != deck_counts(state.params)[None, :]).any(axis=1))
    if bad.size:
        b = int(bad[0])
        raise CheckError(f"card conservation broken in row {b} ({state.deal_id(b)}): "
                         f"{counts[b].tolist()} != {deck_counts(state.params).tolist()}")


def independent_score(state: State, b: int) -> npt.NDArray[np.int64]:
    """(sides, 5) score parts of row b's finished hand, recomputed from the table (C10, C32)."""
    r = state.rules
    sides, n, owners = state.num_sides, state.num_players, state.num_owners
    parts = np.zeros((sides, 5), dtype=np.int64)
    red_total = 2 * r.packs
    for s in range(sides):
        melds = canastas = sevens = 0
        bonus = (r.natural_canasta_bonus, r.mixed_canasta_bonus, r.wild_canasta_bonus,
                 r.sevens_canasta_bonus)
        for o in range(s, owners, sides):  # the side's melds, or each of its players' (G2)
            nat, jok, two = (state.meld_naturals[b, o], state.meld_jokers[b, o], state.meld_twos[b, o])
            kinds = state.closed_canastas[b, o]  # closed under a meld cap (R2, P2)
            melds += int(kinds.sum())
            canastas += int(kinds.sum())
            sevens += int(kinds[3])
            parts[s, 1] += int(kinds @ np.array(bonus))
            for slot in range(12):
                k, cj, ct = (int(state.closed_slots[b, o, slot]), int(state.closed_jokers[b, o, slot]),
                             int(state.closed_twos[b, o, slot]))
                natural_value = CARD_VALUES[int(SLOT_KIND[slot])] if slot < 11 else 0
                parts[s, 0] += (7 * k - cj - ct) * natural_value + cj * 50 + ct * 20
            for slot in range(13):
                if nat[slot] + jok[slot] + two[slot] == 0:
                    continue
                melds += 1
                kind = int(SLOT_KIND[slot])
                parts[s, 0] += nat[slot] * CARD_VALUES[kind] + jok[slot] * 50 + two[slot] * 20
                if slot < 11 and nat[slot] + jok[slot] + two[slot] >= 7:
                    canastas += 1
                    wild = jok[slot] + two[slot] > 0
                    parts[s, 1] += r.mixed_canasta_bonus if wild else r.natural_canasta_bonus
        seats = [p for p in range(n) if p % sides == s]
        reds = int(sum(state.red_threes[b, p] for p in seats))
        if reds:
            value = r.red3_all_bonus if (reds == red_total and r.red3_all_bonus) else reds * r.red3_bonus
            if r.red3_negative_if == "player_no_meld":  # each player's threes judged alone (G5)
                minus = sum(int(state.red_threes[b, p]) for p in seats if not state.has_melded[b, p])
                parts[s, 2] = value - 2 * (value * minus // reds)
            else:
                negative = {"no_meld": melds == 0, "no_canasta": canastas == 0, "never": False,
                            "no_sevens_canasta": sevens == 0}[r.red3_negative_if]
                parts[s, 2] = -value if negative else value
        out = int(state.went_out[b])
        if out >= 0 and out % sides == s:
            parts[s, 3] = r.concealed_bonus if state.concealed[b] else r.go_out_bonus
        parts[s, 4] = -sum(int((state.hands[b, p] + state.reserves[b, p]) @ CARD_VALUES)
                           for p in seats)
    return parts


def check_score(state: State, b: int) -> None:
    """Row b's hand score equals its parts and the independent scorer's (C32)."""
    expected = independent_score(state, b)
    got = state.score_parts[b]
    if not np.array_equal(expected, got) or not np.array_equal(got.sum(axis=1), state.hand_scores[b]):
        raise CheckError(f"row {b} ({state.deal_id(b)}): score parts {got.tolist()} / totals "
                         f"{state.hand_scores[b].tolist()} != independent {expected.tolist()}")


@dataclass
class RuleCoverage:
    """How often each rule path (layout.EVENT_NAMES) fired."""

    counts: Counter[str] = field(default_factory=Counter)

    def add(self, events: npt.NDArray[np.int32]) -> None:
        for i, name in enumerate(EVENT_NAMES):
            hits = int(np.count_nonzero(events & (1 << i)))
            if hits:
                self.counts[name] += hits

    def missing(self, paths: list[str], at_least: int = 20) -> list[str]:
        """Paths that fired fewer than ``at_least`` times."""
        return [p for p in paths if self.counts[p] < at_least]


@dataclass
class PlayReport:
    hands: int
    decisions: int
    max_decisions_per_hand: int
    coverage: RuleCoverage
    outcomes: Counter[str]


def check_random_play(rules: RuleSet | str, hands: int, agent: str = "random", *, batch: int = 256,
                      seed: int = 0, check_every: int = 1) -> PlayReport:
    """Play ``hands`` hands with auto-reset and check the invariants after every decision.

    Raises ``CheckError`` on the first broken invariant.
    """
    if agent not in AGENTS:
        raise ValueError(f"agent must be one of {AGENTS}, got {agent!r}")
    rules = load_rules(rules) if isinstance(rules, str) else rules
    state = init(rules, batch, seed)
    coverage = RuleCoverage()
    outcomes: Counter[str] = Counter()
    done_hands = decisions = longest = 0
    salt = 0x5EED + seed
    step_no = 0
    while done_hands < hands:
        live = state.legal_action_mask.any(axis=1)
        if not live.all():
            raise CheckError(f"rows {np.flatnonzero(~live)[:5].tolist()} live without legal actions")
        actions = keyed_actions(state.data, state.legal_action_mask, salt, agent == "eager")
        result = step(state, actions)
        if result.illegal.any():
            raise CheckError("the sampler chose an action the mask allowed but step rejected")
        decisions += int(live.sum())
        coverage.add(result.events)
        step_no += 1
        if step_no % check_every == 0:
            check_conservation(state)
        if result.truncated.any():
            b = int(np.flatnonzero(result.truncated)[0])
            raise CheckError(f"row {b} ({state.deal_id(b)}) hit the step cap")
        finished = np.flatnonzero(result.terminated)
        for row in finished.tolist():
            check_score(state, row)
            longest = max(longest, int(state.data[row, F_STEPS]))
            outcomes["went_out" if state.went_out[row] >= 0 else "no_go_out"] += 1
        done_hands += finished.size
        if finished.size:
            coverage.add(reset_rows(state, finished))
    return PlayReport(done_hands, decisions, longest, coverage, outcomes)


def play_trajectories(state: State, rows: npt.NDArray[np.int64], games: int, salt: int,
                      eager: bool) -> dict[int, list[tuple[DealId, list[int], list[int]]]]:
    """Play until each listed row finished ``games`` games; per row: (DealId, actions, scores)."""
    out: dict[int, list] = {int(r): [] for r in rows}
    current: dict[int, list[int]] = {int(r): [] for r in rows}
    while min(len(v) for v in out.values()) < games:
        actions = keyed_actions(state.data, state.legal_action_mask, salt, eager)
        for r in rows:
            if state.legal_action_mask[r].any():
                current[int(r)].append(int(actions[r]))
        result = step(state, actions)
        finished = np.flatnonzero(result.terminated | result.truncated)
        for b in finished:
            if int(b) in out:
                out[int(b)].append((state.deal_id(int(b)), current[int(b)],
                                    state.hand_scores[b].tolist()))
                current[int(b)] = []
        if finished.size:
            reset_rows(state, finished)
    return out


def check_batch_independence(rules: RuleSet | str, *, batch: int = 1024, rows: int = 64,
                             games: int = 3, seed: int = 7, eager: bool = True) -> None:
    """Rows of a large batch play exactly as the same DealIds played in a batch of one."""
    rules = load_rules(rules) if isinstance(rules, str) else rules
    big = init(rules, batch, seed)
    picked = np.linspace(0, batch - 1, rows).astype(np.int64)
    trajectories = play_trajectories(big, picked, games, 99, eager)
    for r, games_played in trajectories.items():
        for deal, actions, scores in games_played[:games]:
            alone = init_from_deals(rules, [deal])
            replay = play_trajectories(alone, np.array([0]), 1, 99, eager)[0][0]
            if replay[1] != actions or replay[2] != scores:
                raise CheckError(f"row {r} deal {deal}: batch trajectory differs from batch of one")


def check_expansion(rules: RuleSet | str, states: int, *, batch: int = 128, seed: int = 3) -> int:
    """Apply every legal action of ``states`` sampled live states to clones: each must step,
    conserve cards and leave a legal action or a finished hand. Returns actions expanded."""
    rules = load_rules(rules) if isinstance(rules, str) else rules
    state = init(rules, batch, seed)
    seen = expanded = 0
    step_no = 0
    while seen < states:
        step_no += 1
        mask = state.legal_action_mask
        if step_no % 3 == 0:
            rows = np.flatnonzero(mask.any(axis=1))
            legal = np.argwhere(mask[rows])
            trial = clone(state, rows[legal[:, 0]])
            result = step(trial, legal[:, 1])
            if result.illegal.any():
                raise CheckError("a legal action was rejected by step")
            check_conservation(trial)
            live_after = ~(result.terminated | result.truncated)
            if not trial.legal_action_mask[live_after].any(axis=1).all():
                raise CheckError("an expanded action left a live state with no legal action")
            seen += rows.size
            expanded += len(legal)
        actions = keyed_actions(state.data, mask, 1234, step_no % 2 == 0)
        result = step(state, actions)
        finished = np.flatnonzero(result.terminated | result.truncated)
        if finished.size:
            reset_rows(state, finished)
    return expanded



def golden_playthrough(rules: RuleSet | str, seed: int = 2026) -> str:
    """One seeded hand written out action by action with the number of legal actions at each
    decision, the explicit deal first, the scores last: a readable record that drifts when rules
    change (OpenSpiel-style playthrough)."""
    from canasta_env.engine import ACTION_NAMES, explicit_deal
    from canasta_env.engine.render import render

    rules = load_rules(rules) if isinstance(rules, str) else rules
    deal = DealId(seed, 0, 0)
    order, dealer = explicit_deal(rules, deal)
    state = init_from_deals(rules, [deal])
    lines = [f"# {rules.name} {tuple(deal)}", f"dealer {dealer}",
             "deck (bottom..top) " + " ".join(KIND_NAMES[int(k)] for k in order), "",
             render(state, 0), ""]
    n = 0
    while not (state.terminated[0] or state.truncated[0]):
        mask = state.legal_action_mask
        action = int(keyed_actions(state.data, mask, 42, True)[0])
        lines.append(f"{n:4d} P{int(state.current_player[0])} legal {int(mask[0].sum()):3d} "
                     f"{ACTION_NAMES[action]}")
        step(state, [action])
        n += 1
    lines += ["", render(state, 0), "",
              "score parts " + str(state.score_parts[0].tolist()),
              "hand scores " + str(state.hand_scores[0].tolist())]
    return "\n".join(lines) + "\n"


def perft(rules: RuleSet | str, deal: DealId, depth: int) -> list[int]:
    """Number of legal action sequences of length 1..depth from a deal's first decision (chess
    perft style); a finished hand ends its sequence."""
    rules = load_rules(rules) if isinstance(rules, str) else rules
    frontier = init_from_deals(rules, [deal])
    counts = []
    for _ in range(depth):
        legal = np.argwhere(frontier.legal_action_mask)
        counts.append(len(legal))
        if not len(legal):
            break
        frontier = clone(frontier, legal[:, 0])
        result = step(frontier, legal[:, 1])
        live = np.flatnonzero(~(result.terminated | result.truncated))
        frontier = clone(frontier, live)
    return counts


def resample_hidden(state: State, player: int, rng: np.random.Generator) -> State:
    """A copy of a batch-of-one state with everything ``player`` cannot see redealt: the stock and
    the unknown part of every other hand are shuffled together and dealt back in the same sizes,
    so hand sizes, known cards, melds, the pile and all public counts are unchanged. Face-down
    kitties and feet, which nobody has seen, join the shuffle too."""
    if state.num_games != 1:
        raise ValueError("resample_hidden takes a batch of one game")
    out = clone(state)
    hands, known = out.hands[0], out.known[0]
    others = [p for p in range(out.num_players) if p != player]
    unknown = {p: hands[p] - known[p] for p in others}
    stock = out.stock(0)
    reserves = out.reserves[0]
    pool = np.concatenate([np.repeat(np.arange(NUM_KINDS), unknown[p]) for p in others]
                          + [np.repeat(np.arange(NUM_KINDS), reserves[p]) for p in range(out.num_players)]
                          + [stock.astype(np.int64)])
    rng.shuffle(pool)
    pos = 0
    for p in others:
        size = int(unknown[p].sum())
        hands[p] = known[p] + np.bincount(pool[pos: pos + size], minlength=NUM_KINDS)
        pos += size
    for p in range(out.num_players):
        size = int(reserves[p].sum())
        reserves[p] = np.bincount(pool[pos: pos + size], minlength=NUM_KINDS)
        pos += size
    stock[:] = pool[pos:]
    out.refresh_mask()
    return out


def rotate_seats(state: State, k: int) -> State:
    """A copy of the state with every seat p moved to seat p + k (whole sides in partnerships:
    ``k`` must keep partners together, which any k does when sides alternate)."""
    out = clone(state)
    n, sides, owners = state.num_players, state.num_sides, state.num_owners
    seat_perm = [(p - k) % n for p in range(n)]  # new seat q holds old seat q - k
    side_perm = [(s - k) % sides for s in range(sides)]
    owner_perm = [(o - k) % owners for o in range(owners)]
    for name in ("hands", "known"):
        getattr(out, name)[:] = getattr(state, name)[:, seat_perm]
    for name in ("red_threes", "has_melded", "reserves", "reserve_state"):
        getattr(out, name)[:] = getattr(state, name)[:, seat_perm]
    for name in ("meld_naturals", "meld_jokers", "meld_twos", "closed_canastas", "closed_slots",
                 "closed_jokers", "closed_twos"):
        getattr(out, name)[:] = getattr(state, name)[:, owner_perm]
    for name in ("opened", "scores", "hand_scores", "score_parts"):
        getattr(out, name)[:] = getattr(state, name)[:, side_perm]
    for field_view in (out.current_player, out.dealer):
        field_view[:] = (field_view + k) % n
    asker = out.asker
    asker[:] = np.where(asker >= 0, (asker + k) % n, asker)
    went = out.went_out
    went[:] = np.where(went >= 0, (went + k) % n, went)
    out.refresh_mask()
    return out
