"""An independent legal-move oracle for Canasta (classic, Regal, Railroad, Pennies), from docs/rules.md.

It shares no rules code with the engine: it reads a ``State``'s public arrays, builds its own small
Python model of the mover's turn and, for every candidate action, applies the action to the model
and asks "can the turn still be finished legally?" (C19a) by an exhaustive search over the turn's
final meld configurations. The engine decides the same question analytically; the two are compared
in ``tests/engine/test_oracle.py``.

The search (``_Turn.can_finish``) knows three ways a turn ends:

* **going out** (C28): every card but at most one (discarded) is melded. The oracle enumerates the
  card left over (none, or one kind in hand); the naturals and black threes melded are then fixed,
  and a small exact DP spreads the wild cards over the melds (C13 bounds per meld, every wild
  placed) maximising the side's canastas (C28: canastas completed this turn count). The black-three
  meld is 0 or >= 3 cards (C11). The minimum (C16, C17) is needed after a pile take by an unopened
  side, and after a stock draw only with ``concealed_requires_minimum`` (C30).
* **discarding** (C19): at least two cards stay in hand when melding ends; no black-three meld
  (C11); if the side had not opened when the turn began and has melded this turn, the turn's value
  must reach the minimum: a DP over ranks (Pareto fronts of cards melded and value, per wild
  count) finds the most value that can be melded while keeping two cards.
* **the final_meld phase** (C31a): ``END_HAND`` with at least one card kept; the minimum as for a
  discard.

Value toward the minimum uses the credit rule of C17: of each kind only ``credit[k]`` more cards
count (the cards held before a pile take, less those already used), plus the value already melded
this turn.

Modelled: the classic option set and Regal's (G1-G5: melds owned by the player, G2, read from the
player's own meld row), with ``max_black_three_meld`` (C11: 3 or 4 black threes, also at 5-6 player
tables with six of them).

Railroad and Pennies (R1-R8, P1-P6: ``max_meld_size: 7`` with ``canasta_kinds: four``) are modelled
by ``_Cap``, a second turn model (see "Capped melds" below); ``legal_action_names`` refuses other
option sets it does not model (the partner question under a meld cap).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

# The one engine import: the index of the header field counting this turn's meld actions (a pile
# take is not one); C29 allows the question only before any. No State property exposes it.
from canasta_env.engine.layout import F_TURN_MELDS

# ---- cards (docs/rules.md C1-C3), written out here rather than imported from the engine -------------
JK, TWO, R3, B3 = 0, 1, 2, 3
KINDS = ("JK", "2", "R3", "B3", "4", "5", "6", "7", "8", "9", "T", "J", "Q", "K", "A")
VALUE = (50, 20, 0, 5, 5, 5, 5, 5, 10, 10, 10, 10, 10, 10, 20)  # C3 (red threes: bonus only)
RANKS = tuple(range(4, 15))  # natural kinds 4..A; meld slot s holds kind s + 4
SLOTS = KINDS[4:] + ("W", "B3")
B3_SLOT = 12

# phases and turn-flag bits of the State (docs: State properties)
PH_DRAW, PH_MELD, PH_ANSWER, PH_FINAL, PH_OVER = 0, 1, 2, 3, 4
FL_DREW, FL_TOOK, FL_ASKED, FL_YES, FL_NO = 1, 2, 4, 8, 16

NEG = -(10**9)


@dataclass
class _Opts:
    num_players: int
    partnerships: bool
    own_melds: bool  # G2: each player plays only to their own melds
    min_nat: int
    max_wilds: int
    wle: bool
    go_req: int  # C28 canastas needed (classic); unused under a meld cap (every kind, R8/P6)
    ask: bool
    conc_min: bool
    take_needs_open: bool
    forbid_single: bool
    exhausted: str
    table: tuple[tuple[int | None, int], ...]
    b3_max: int = 4  # C11 / R3: most black threes in the going-out meld
    cap: bool = False  # R2, P2: melds close at seven, four canasta kinds
    take_wild: bool = True  # C22 natural + wild pile take (R6: not in Railroad)
    go_discard: bool = False  # R8: going out ends with a discard
    seven_rule: bool = False  # R5, P4
    pickup: str = "none"  # R4 after_turn, P3 immediate

    @classmethod
    def of(cls, rules: Any) -> _Opts:
        r = rules.resolved()
        cap = r.max_meld_size is not None
        unsupported = {
            "max_meld_size": cap and (r.max_meld_size != 7 or r.canasta_kinds != "four"),
            "canasta_kinds": not cap and r.canasta_kinds != "classic",
            "reserve_size": not cap and r.reserve_size != 0,
            "seven_discard_rule": not cap and r.seven_discard_rule != "none",
            "go_out_needs_discard": not cap and r.go_out_needs_discard,
            "allow_wild_on_natural_canasta": not r.allow_wild_on_natural_canasta,
            "ask_partner": cap and r.ask_partner,
        }
        bad = [k for k, v in unsupported.items() if v]
        if bad:
            raise NotImplementedError(f"oracle does not model these options: {bad}")
        # last_card_red3 changes no legal set: under end_immediately the final-meld phase never arises
        b3_max = r.max_black_three_meld if r.max_black_three_meld is not None else 10**6
        return cls(r.num_players, bool(r.partnerships), r.meld_ownership == "player", r.min_naturals,
                   r.max_wilds, r.wild_le_naturals, 0 if cap else int(r.go_out_requires),
                   r.ask_partner, r.concealed_requires_minimum, r.pile_take_requires_opened_side,
                   r.forbid_single_card_pile_take, r.exhausted_stock_take,
                   tuple(r.initial_meld_table), b3_max, cap, r.pile_take_with_wild,
                   r.go_out_needs_discard, r.seven_discard_rule != "none", r.reserve_pickup)

    def minimum(self, score: int) -> int:
        """C16: the last table row whose lower bound the score reaches."""
        need = self.table[0][1]
        for lower, m in self.table:
            if lower is None or score >= lower:
                need = m
        return need

    def wild_cap(self, naturals: int) -> int:
        """C13: most wilds a meld with this many naturals may hold."""
        return min(self.max_wilds, naturals) if self.wle else self.max_wilds


@dataclass
class _Turn:
    """The mover's turn as the oracle sees it: hand, the side's melds and the turn accumulators."""

    o: _Opts
    hand: list[int]  # 15 counts
    nat: list[int]  # 11 rank slots: naturals in the side's meld (0: no meld)
    wild: list[int]  # 11 rank slots: wilds in the side's meld
    b3: int  # black threes in the side's black-three meld (made this turn)
    needs_min: bool  # side had not opened when the turn began
    minimum: int
    tv: int  # value melded this turn toward the minimum
    credit: list[int]  # per kind: how many more melded cards count toward the minimum
    drew: bool = False
    took: bool = False
    yes: bool = False
    no: bool = False

    def copy(self) -> _Turn:
        return _Turn(self.o, self.hand[:], self.nat[:], self.wild[:], self.b3, self.needs_min,
                     self.minimum, self.tv, self.credit[:], self.drew, self.took, self.yes,
                     self.no)

    # ---- applying plays ----------------------------------------------------------------------
    def meld_from_hand(self, kind: int, count: int) -> bool:
        """Move ``count`` cards of ``kind`` from hand to the table bookkeeping (value, credit);
        False when the hand lacks them. The caller puts them into a meld."""
        if count <= 0:
            return True
        if self.hand[kind] < count:
            return False
        self.hand[kind] -= count
        counted = min(count, self.credit[kind])
        self.tv += VALUE[kind] * counted
        self.credit[kind] -= counted
        return True

    def meld_valid(self, slot: int) -> bool:
        n, w = self.nat[slot], self.wild[slot]
        if n + w == 0:
            return True
        return n >= self.o.min_nat and n + w >= 3 and w <= self.o.wild_cap(n)

    # ---- end-of-turn searches ----------------------------------------------------------------
    def side_has_meld(self) -> bool:
        return self.b3 > 0 or any(self.nat) or any(self.wild)

    def can_finish(self, final_phase: bool = False) -> bool:
        if final_phase:
            return self.can_end_final()
        return (not self.no and self.can_go_out()) or (not self.yes and self.can_discard())

    def min_met_now(self) -> bool:
        """The minimum condition of a turn ending now without going out."""
        return not self.needs_min or not self.side_has_meld() or self.tv >= self.minimum

    def _min_met_keeping(self, keep: int) -> bool:
        """Minimum condition of a turn that ends without going out, keeping ``keep`` cards."""
        if self.min_met_now():
            return True
        budget = sum(self.hand) - keep
        return budget > 0 and self.tv + self.max_value(budget) >= self.minimum

    def can_discard(self) -> bool:
        """C19: end the turn with a discard, at least two cards kept before it."""
        return sum(self.hand) >= 2 and self.b3 == 0 and self._min_met_keeping(2)

    def can_end_final(self) -> bool:
        """C31a: stop melding with at least one card kept; no black-three meld, minimum holds."""
        return sum(self.hand) >= 1 and self.b3 == 0 and self._min_met_keeping(1)

    def can_go_out(self) -> bool:
        """C28: all cards but at most one melded (C11, C13, C16/C17/C30 as the docstring says)."""
        o, hand = self.o, self.hand
        # a natural rank with one card in hand and no meld can only be the card left over
        singles = [k for k in RANKS if hand[k] == 1 and self.nat[k - 4] == 0]
        if len(singles) > 1:
            return False
        leftovers: list[int | None] = [None] + [k for k in range(15) if hand[k] > 0]
        if singles:
            leftovers = [singles[0]]
        need_min = self.needs_min and (self.took or o.conc_min)
        for x in leftovers:
            melded = hand[:]
            if x is not None:
                melded[x] -= 1
            b3 = self.b3 + melded[B3]
            if 0 < b3 < 3 or b3 > o.b3_max:  # C11
                continue
            if need_min:
                value = self.tv + sum(VALUE[k] * min(melded[k], self.credit[k]) for k in range(15))
                if value < self.minimum:
                    continue
            groups = []  # (size without new wilds, fewest wilds to add, most wilds to add)
            ok = True
            for s in range(11):
                n_final = self.nat[s] + melded[s + 4]
                w0 = self.wild[s]
                if n_final + w0 == 0:
                    continue
                if n_final < o.min_nat:
                    ok = False
                    break
                size = n_final + w0
                lo = max(0, 3 - size)
                hi = o.wild_cap(n_final) - w0
                if hi < lo:
                    ok = False
                    break
                groups.append((size, lo, hi))
            if not ok:
                continue
            wilds = melded[JK] + melded[TWO]
            # exact DP: wilds used so far -> most canastas
            best = {0: 0}
            for size, lo, hi in groups:
                nxt: dict[int, int] = {}
                for used, can in best.items():
                    for w in range(lo, hi + 1):
                        u = used + w
                        if u > wilds:
                            break
                        c = can + (size + w >= 7)
                        if nxt.get(u, -1) < c:
                            nxt[u] = c
                best = nxt
                if not best:
                    break
            if best.get(wilds, -1) >= o.go_req:
                return True
        return False

    def max_value(self, budget: int) -> int:
        """Most value (C16 with C17 credit) the hand can still meld in valid melds using at most
        ``budget`` cards, without black threes (they are melded only when going out)."""
        o, hand, credit = self.o, self.hand, self.credit
        # the best w wilds to meld are the w most valuable (credited jokers, credited twos, rest)
        wild_values = []
        for kind in (JK, TWO):
            counted = min(hand[kind], credit[kind])
            wild_values += [VALUE[kind]] * counted + [0] * (hand[kind] - counted)
        wild_values.sort(reverse=True)
        total_wilds = len(wild_values)
        prefix = [0]
        for v in wild_values:
            prefix.append(prefix[-1] + v)
        # fronts[w] = Pareto list of (cards melded, natural value) using w wilds
        fronts: dict[int, list[tuple[int, int]]] = {0: [(0, 0)]}
        for s in range(11):
            k = s + 4
            a, n0, w0 = hand[k], self.nat[s], self.wild[s]
            options = []  # (naturals, wilds, value)
            if n0 + w0 > 0:
                for n in range(a + 1):
                    val = VALUE[k] * min(n, credit[k])
                    for w in range(0, o.wild_cap(n0 + n) - w0 + 1):
                        options.append((n, w, val))
            else:
                if a < o.min_nat:
                    continue
                for n in range(o.min_nat, a + 1):
                    val = VALUE[k] * min(n, credit[k])
                    for w in range(max(0, 3 - n), o.wild_cap(n) + 1):
                        options.append((n, w, val))
            if total_wilds == 0:
                options = [t for t in options if t[1] == 0]
            if not options:
                continue
            if n0 + w0 == 0:
                options.append((0, 0, 0))
            nxt: dict[int, list[tuple[int, int]]] = {}
            for used, front in fronts.items():
                for n, w, val in options:
                    u = used + w
                    if u > total_wilds:
                        continue
                    for cards, v in front:
                        c = cards + n + w
                        if c > budget:
                            continue
                        nxt.setdefault(u, []).append((c, v + val))
            fronts = {u: _pareto(lst) for u, lst in nxt.items()}
        best = NEG
        for used, front in fronts.items():
            best = max(best, front[-1][1] + prefix[used])
        return best


def _pareto(items: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Keep (cards, value) pairs not beaten by fewer-or-equal cards with more-or-equal value;
    sorted by cards, values strictly increasing."""
    items.sort(key=lambda t: (t[0], -t[1]))
    out: list[tuple[int, int]] = []
    for c, v in items:
        if not out or v > out[-1][1]:
            out.append((c, v))
    return out


# ---- reading a state --------------------------------------------------------------------------


def _owner(state: Any, o: _Opts, player: int) -> int:
    """Row of the meld arrays the player plays to: the side's (C14) or their own (G2)."""
    return player if o.own_melds else player % state.num_sides


def _turn_of(state: Any, b: int, o: _Opts, player: int) -> _Turn:
    side = player % state.num_sides
    owner = _owner(state, o, player)
    flags = int(state.turn_flags[b])
    return _Turn(
        o=o,
        hand=[int(x) for x in state.hands[b, player]],
        nat=[int(x) for x in state.meld_naturals[b, owner, :11]],
        wild=[int(state.meld_jokers[b, owner, s]) + int(state.meld_twos[b, owner, s]) for s in range(11)],
        b3=int(state.meld_naturals[b, owner, B3_SLOT]),
        needs_min=bool(state.needs_minimum[b]),
        minimum=o.minimum(int(state.scores[b, side])),
        tv=int(state.turn_value[b]),
        credit=[int(x) for x in state.credit[b]],
        drew=bool(flags & FL_DREW),
        took=bool(flags & FL_TOOK),
        yes=bool(flags & FL_YES),
        no=bool(flags & FL_NO),
    )


def _meld_actions(t: _Turn, final_phase: bool) -> set[str]:
    """Meld and add actions legal for turn ``t`` (meld or final_meld phase)."""
    out: set[str] = set()

    def try_play(name: str, slot: int, cards: list[tuple[int, int]], wild_add: int = 0) -> None:
        u = t.copy()
        for kind, count in cards:
            if not u.meld_from_hand(kind, count):
                return
        if slot == B3_SLOT:
            u.b3 += sum(c for _, c in cards)
        else:
            u.nat[slot] += sum(c for k, c in cards if k not in (JK, TWO))
            u.wild[slot] += wild_add
            if not u.meld_valid(slot):
                return
        if final_phase and sum(u.hand) < 1:
            return  # C31a: never the last card
        if u.can_finish(final_phase):
            out.add(name)

    for s in range(11):
        k = s + 4
        name = SLOTS[s]
        if t.nat[s] + t.wild[s] == 0:
            try_play(f"MELD_NNN_{name}", s, [(k, 3)])
            try_play(f"MELD_NNJ_{name}", s, [(k, 2), (JK, 1)], 1)
            try_play(f"MELD_NN2_{name}", s, [(k, 2), (TWO, 1)], 1)
        else:
            try_play(f"ADD_NATURAL_{name}", s, [(k, 1)])
            try_play(f"ADD_JOKER_{name}", s, [(JK, 1)], 1)
            try_play(f"ADD_TWO_{name}", s, [(TWO, 1)], 1)
    if t.b3 == 0:
        try_play("MELD_NNN_B3", B3_SLOT, [(B3, 3)])
    elif t.b3 < t.o.b3_max:  # C11: at most max_black_three_meld
        try_play("ADD_NATURAL_B3", B3_SLOT, [(B3, 1)])
    return out


def _take_gate(state: Any, b: int, o: _Opts, player: int
               ) -> tuple[int, list[int], list[int], bool, bool] | None:
    """The pile-take preconditions shared by every rule set (C20, C21, C23 option, C25): ``None``
    when no take is possible, else (top card, hand, the rest of the pile as counts without red
    threes (C8: laid down, not replaced), side opened, pile frozen against the player)."""
    pile = [int(x) for x in state.pile(b)]
    if not pile or pile[-1] in (JK, TWO, R3, B3):  # C21
        return None
    hand = [int(x) for x in state.hands[b, player]]
    opened = bool(state.opened[b, player % state.num_sides])
    if o.take_needs_open and not opened:  # C23 option
        return None
    if o.forbid_single and sum(hand) == 1 and len(pile) == 1:  # C25
        return None
    rest = [0] * 15
    for c in pile[:-1]:
        if c != R3:
            rest[c] += 1
    return pile[-1], hand, rest, opened, bool(state.pile_frozen[b]) or not opened  # C20


def _take_actions(state: Any, b: int, o: _Opts, player: int) -> set[str]:
    """Legal pile takes (C20-C25, C17, C19a) for the player to move in the draw phase."""
    side = player % state.num_sides
    owner = _owner(state, o, player)
    gate = _take_gate(state, b, o, player)
    if gate is None:
        return set()
    top, hand, rest, opened, frozen = gate
    s = top - 4
    base = _Turn(
        o=o, hand=hand, nat=[int(x) for x in state.meld_naturals[b, owner, :11]],
        wild=[int(state.meld_jokers[b, owner, i]) + int(state.meld_twos[b, owner, i]) for i in range(11)],
        b3=int(state.meld_naturals[b, owner, B3_SLOT]), needs_min=not opened,
        minimum=o.minimum(int(state.scores[b, side])), tv=0, credit=hand[:], took=True)
    has_meld = base.nat[s] + base.wild[s] > 0
    shapes = [("TAKE_PILE_PAIR", [(top, 2)], 0)]  # C22/C23: frozen or not, new or joining
    if not frozen:
        if not has_meld:
            shapes.append(("TAKE_PILE_NAT_JOKER", [(top, 1), (JK, 1)], 1))
            shapes.append(("TAKE_PILE_NAT_TWO", [(top, 1), (TWO, 1)], 1))
        else:
            shapes.append(("TAKE_PILE_LAYOFF", [], 0))
    out: set[str] = set()
    for name, cards, wild_add in shapes:
        u = base.copy()
        u.tv = VALUE[top]  # the top card counts (C17)
        if not all(u.meld_from_hand(k, c) for k, c in cards):
            continue
        u.nat[s] += 1 + sum(c for k, c in cards if k not in (JK, TWO))
        u.wild[s] += wild_add
        if not u.meld_valid(s):
            continue
        u.hand = [u.hand[k] + rest[k] for k in range(15)]  # credit stays: pile cards never count
        if u.can_finish():
            out.add(name)
    return out


# ---- Capped melds: Railroad (R1-R8) and Pennies from Heaven (P1-P6) -----------------------------
#
# A meld closes when it reaches seven cards (R2, P2): it leaves the table's open melds and becomes a
# canasta of one of four kinds; the next cards of its rank start a new meld. ``_closings`` lists, by
# explicit enumeration of how a slot's cards split between the open meld and the melds that follow
# it, which sets of canasta kinds a slot can close. ``_Cap`` is the mover's turn; its two end
# searches are:
#
# * ``out_with`` / ``can_go_out`` (C28, R8, P6): every card but the final discard melded (in Railroad
#   the discard is compulsory; never a seven under the seven rule); the kitty or foot must be in the
#   hand (R4, P3); black threes 3..max (C11, R3); the owner then holds every canasta kind: a
#   depth-first search over the slots, spending the wilds one slot at a time.
# * ``can_end`` (C19, C27a, C31a, R5, P3, P4): the turn ends without going out. Every partial melding
#   of the hand is searched (slot by slot: naturals and wilds melded, cards kept, whether a kept card
#   may be discarded, canastas closed) for one whose value meets the minimum and whose end is legal:
#   at least two cards kept and, while sevens may not be discarded, one of them not a seven (unless
#   this turn's own sevens canasta lifts the rule, R5/P4); or the C27a end (the hand held only sevens
#   as melding began: keep one); or, under ``immediate`` (P3), any play that closes a canasta while
#   the foot is face down (the foot arrives and supplies cards to keep). Value toward the minimum
#   counts the cards melded from the hand (the foot's never count, P3/C17); melds made after the
#   foot's arrival that join hand cards with foot cards are not searched.
#   A partial melding is valid if some order of its plays is: sevens that close the mover's sevens
#   canasta go first, a close that brings the foot last, so no meld leaves only sevens (R5, P4).
#
# Each candidate action is applied to the model first: a play that closes a canasta brings the foot
# (P3) or shows the kitty (R4) on the real cards, and a meld that leaves only sevens while none may
# be discarded is refused outright (R5, P4; not in the final_meld phase, which has no discard).

SEVEN = 7  # the kind (and natural rank) of sevens
SEVEN_SLOT = SEVEN - 4
W_SLOT = 11  # wild-only melds
CAP = 7  # R2, P2
NATURAL, MIXED, WILD, SEVENS = 1, 2, 4, 8  # canasta kinds as bits (closed_canastas columns 0-3)
EVERY_KIND = NATURAL | MIXED | WILD | SEVENS
RES_DOWN, RES_SHOWN, RES_IN = 0, 1, 2  # State.reserve_state
FL_SEVENS_ONLY = 128  # the hand held only sevens when melding began (C27a)


def _one_meld_ok(slot: int, n: int, w: int, min_nat: int, max_wilds: int, wle: bool) -> bool:
    """C13 / R2 / P2 for one meld of ``slot`` holding ``n`` naturals and ``w`` wilds."""
    if slot == W_SLOT:
        return n == 0 and w >= 3
    if n < min_nat or n + w < 3:
        return False
    if slot == SEVEN_SLOT:
        return w == 0  # sevens are never mixed
    return w <= (min(max_wilds, n) if wle else max_wilds)


@cache
def _closings(slot: int, n0: int, w0: int, a: int, b: int, min_nat: int, max_wilds: int,
              wle: bool) -> frozenset[int]:
    """Sets of canasta kinds (bit masks) that melding ``a`` naturals and ``b`` wilds into ``slot``
    can close, when its open meld holds ``n0`` naturals and ``w0`` wilds (both 0: none). Lists every
    split: x naturals and y wilds join the open meld; below seven cards it stays open and must take
    every remaining card (one open meld per rank, R2); at seven it closes and the rest start new
    melds of the slot, one after the other. Empty when no split leaves only valid melds.

    Every valid final set is reachable by legal actions: a new meld starts as three valid cards
    and naturals join before wilds."""
    out: set[int] = set()
    for x in range(a + 1):
        for y in range(b + 1):
            n, w = n0 + x, w0 + y
            if n + w > CAP:
                break
            if n + w == 0:
                if a == 0 and b == 0:
                    out.add(0)
                continue
            if not _one_meld_ok(slot, n, w, min_nat, max_wilds, wle):
                continue
            if n + w < CAP:
                if x == a and y == b:
                    out.add(0)
                continue
            kind = WILD if slot == W_SLOT else SEVENS if slot == SEVEN_SLOT else (
                NATURAL if w == 0 else MIXED)
            for later in _closings(slot, 0, 0, a - x, b - y, min_nat, max_wilds, wle):
                out.add(kind | later)
    return frozenset(out)


@dataclass
class _Cap:
    """The mover's turn under a meld cap: hand, the owner's open melds and canastas, the kitty or
    foot, the seven rule's state and the turn accumulators."""

    o: _Opts
    hand: list[int]  # 15 counts
    nat: list[int]  # 11 rank slots: naturals of the owner's open meld
    wild: list[int]  # 12 slots (ranks, then the wild-only meld): wilds of the open meld
    b3: int  # black threes melded this turn (C11)
    kinds: int  # canasta kinds the owner has closed (bits)
    closed: int  # the owner's closed canastas
    side_sevens: bool  # the mover's side holds a sevens canasta (R5, P4)
    rest_sevens: bool  # every other side holds one
    reserve: int  # RES_DOWN / RES_SHOWN / RES_IN
    foot: list[int]  # the face-down kitty or foot
    needs_min: bool  # side had not opened when the turn began
    minimum: int
    tv: int  # value melded this turn toward the minimum
    credit: list[int]  # per kind: how many more melded cards count toward the minimum
    took: bool
    sevens_only: bool  # TF_SEVENS_ONLY

    def copy(self) -> _Cap:
        return _Cap(self.o, self.hand[:], self.nat[:], self.wild[:], self.b3, self.kinds,
                    self.closed, self.side_sevens, self.rest_sevens, self.reserve, self.foot[:],
                    self.needs_min, self.minimum, self.tv, self.credit[:], self.took,
                    self.sevens_only)

    def _closings(self, slot: int, n0: int, w0: int, a: int, b: int) -> frozenset[int]:
        o = self.o
        canon = slot if slot in (SEVEN_SLOT, W_SLOT) else 0  # every other rank melds alike
        return _closings(canon, n0, w0, a, b, o.min_nat, o.max_wilds, o.wle)

    # ---- facts --------------------------------------------------------------------------------
    def blocked(self) -> bool:
        """R5, P4: no seven may be discarded until every side holds a sevens canasta."""
        return self.o.seven_rule and not (self.side_sevens and self.rest_sevens)

    def has_meld(self) -> bool:
        return self.closed > 0 or self.b3 > 0 or any(self.nat) or any(self.wild)

    def min_met_now(self) -> bool:
        return not self.needs_min or not self.has_meld() or self.tv >= self.minimum

    def only_sevens(self) -> bool:
        total = sum(self.hand)
        return total > 0 and self.hand[SEVEN] == total

    # ---- plays --------------------------------------------------------------------------------
    def use(self, kind: int, count: int) -> bool:
        """Cards leave the hand for the table, counted toward the minimum while credit lasts."""
        if self.hand[kind] < count:
            return False
        self.hand[kind] -= count
        counted = min(count, self.credit[kind])
        self.tv += VALUE[kind] * counted
        self.credit[kind] -= counted
        return True

    def put(self, slot: int, naturals: int, wilds: int) -> int:
        """Cards (already out of the hand) join the owner's open meld of ``slot``; at seven it
        closes (R2). Returns the kind closed (0: none), or -1 if the meld would be invalid."""
        if slot == B3_SLOT:
            self.b3 += naturals
            return 0 if self.b3 <= self.o.b3_max else -1
        n = (self.nat[slot] if slot < 11 else 0) + naturals
        w = self.wild[slot] + wilds
        o = self.o
        if n + w > CAP or not _one_meld_ok(slot, n, w, o.min_nat, o.max_wilds, o.wle):
            return -1
        if n + w < CAP:
            if slot < 11:
                self.nat[slot] = n
            self.wild[slot] = w
            return 0
        kind = WILD if slot == W_SLOT else SEVENS if slot == SEVEN_SLOT else (
            NATURAL if w == 0 else MIXED)
        if slot < 11:
            self.nat[slot] = 0
        self.wild[slot] = 0
        self.kinds |= kind
        self.closed += 1
        self.side_sevens |= kind == SEVENS
        return kind

    def pickup(self, kind: int) -> None:
        """After a play of the mover closed a canasta of ``kind``: the foot joins the hand at once
        (P3; its cards never count toward the minimum, and C27a's "only sevens as melding began"
        is judged again), or a red, wild or sevens canasta shows the kitty (R4)."""
        if kind <= 0 or self.reserve != RES_DOWN:
            return
        if self.o.pickup == "immediate":
            for k in range(15):
                self.credit[k] = min(self.credit[k], self.hand[k])
                if k != R3:  # C8: red threes in it are laid down
                    self.hand[k] += self.foot[k]
            self.foot = [0] * 15
            self.reserve = RES_IN
            self.sevens_only = self.only_sevens()
        elif kind != MIXED:
            self.reserve = RES_SHOWN

    # ---- end-of-turn searches -----------------------------------------------------------------
    def can_finish(self, final_phase: bool = False) -> bool:
        if final_phase:
            return self.can_end(final_phase=True)
        return self.can_end() or self.can_go_out()

    def can_go_out(self) -> bool:
        return any(self.out_with(x) for x in [None] + [k for k in range(15) if self.hand[k]])

    def out_with(self, discard: int | None) -> bool:
        """Going out by melding every card but ``discard`` (None: every card), then discarding it."""
        o = self.o
        if self.reserve != RES_IN:  # R4, P3: never while the kitty or foot is not in the hand
            return False
        if discard is None and o.go_discard:  # R8: a final discard
            return False
        if discard == SEVEN and o.seven_rule:  # R5, P4: never a seven
            return False
        melded = self.hand[:]
        if discard is not None:
            melded[discard] -= 1
        if melded[B3] and not 3 <= self.b3 + melded[B3] <= o.b3_max:  # C11, R3
            return False
        if self.needs_min and (self.took or o.conc_min):  # C16/C17, C23, C30
            value = self.tv + sum(VALUE[k] * min(melded[k], self.credit[k]) for k in range(15))
            if value < self.minimum:
                return False
        return self._every_kind(melded)

    def _every_kind(self, melded: list[int]) -> bool:
        """Whether ``melded`` (naturals and wilds) can all join valid melds so that the owner then
        holds a canasta of every kind (R8, P6): depth-first over the slots, wilds left, kinds."""
        need = EVERY_KIND & ~self.kinds
        wilds = melded[JK] + melded[TWO]
        choices: list[list[tuple[int, int]]] = []  # per slot: (wilds used, kinds closed)
        for s in range(11):
            a = melded[s + 4]
            if a == 0 and self.nat[s] == 0:
                continue
            opts = {(w, m & need) for w in range(wilds + 1)
                    for m in self._closings(s, self.nat[s], self.wild[s], a, w)}
            if not opts:
                return False
            choices.append(sorted(opts))
        choices.append(sorted({(w, m & need) for w in range(wilds + 1)
                               for m in self._closings(W_SLOT, 0, self.wild[W_SLOT], 0, w)}))
        seen: set[tuple[int, int, int]] = set()

        def search(i: int, left: int, got: int) -> bool:
            if i == len(choices):
                return left == 0 and got == need
            if (i, left, got) in seen:
                return False
            seen.add((i, left, got))
            return any(search(i + 1, left - w, got | m) for w, m in choices[i] if w <= left)

        return search(0, wilds, 0)

    def can_end(self, final_phase: bool = False) -> bool:
        """The turn ends without going out (see the section comment): a discard keeping two cards,
        the C31a end (``final_phase``) keeping one, the C27a end, or a close that brings the foot."""
        if self.b3 > 0:  # C11: black threes only in a turn that goes out
            return False
        hand = self.hand
        blocked = not final_phase and self.blocked()
        c27a = blocked and self.sevens_only and self.only_sevens()
        foot = self.o.pickup == "immediate" and self.reserve == RES_DOWN
        lift = blocked and self.rest_sevens  # a sevens canasta of the mover would lift the rule
        relevant = EVERY_KIND if foot else SEVENS if lift else 0

        def end_ok(kept: int, other: bool, closed: int) -> bool:
            if foot and closed:
                return True
            if final_phase:
                return kept >= 1
            still = blocked and not (lift and closed & SEVENS)
            if c27a:
                return kept >= (1 if still else 2)
            return kept >= 2 and (other or not still)

        total = sum(hand)
        other0 = total > hand[SEVEN]
        if self.min_met_now() and end_ok(min(total, 2), other0, 0):
            return True  # meld nothing more
        need = self.minimum - self.tv if self.needs_min else NEG
        wilds = hand[JK] + hand[TWO]
        # partial meldings, slot by slot: (wilds used, kept (2 = two or more), a kept card other
        # than a seven, kinds closed that matter) -> most natural value credited
        states = {(0, min(hand[B3], 2), hand[B3] > 0, 0): 0}
        for s in range(11):
            k = s + 4
            c, n0, w0 = hand[k], self.nat[s], self.wild[s]
            if c == 0 and n0 == 0:
                continue
            opts: dict[tuple[int, int, bool, int], int] = {}
            for a in range(c + 1):
                val = VALUE[k] * min(a, self.credit[k])
                kept, other = min(c - a, 2), c - a > 0 and k != SEVEN
                for w in range(wilds + 1):
                    for m in self._closings(s, n0, w0, a, w):
                        key = (w, kept, other, m & relevant)
                        if opts.get(key, NEG) < val:
                            opts[key] = val
            nxt: dict[tuple[int, int, bool, int], int] = {}
            for (used, kept0, oth0, cl0), v0 in states.items():
                for (w, kept, other, m), val in opts.items():
                    if used + w > wilds:
                        continue
                    key = (used + w, min(2, kept0 + kept), oth0 or other, cl0 | m)
                    if nxt.get(key, NEG) < v0 + val:
                        nxt[key] = v0 + val
            states = nxt
        cj = min(hand[JK], self.credit[JK])
        ct = min(hand[TWO], self.credit[TWO])
        for (used, kept, other, cl), v in states.items():
            for w in range(wilds - used + 1):
                for m in self._closings(W_SLOT, 0, self.wild[W_SLOT], 0, w):
                    u = used + w
                    wild_value = VALUE[JK] * min(u, cj) + VALUE[TWO] * min(max(0, u - cj), ct)
                    if v + wild_value < need:
                        continue
                    left = wilds - u
                    if end_ok(min(2, kept + left), other or left > 0, cl | (m & relevant)):
                        return True
        return False


def _cap_of(state: Any, b: int, o: _Opts, player: int) -> _Cap:
    sides, owners = state.num_sides, state.num_owners
    side = player % sides
    owner = _owner(state, o, player)

    def has_sevens(sd: int) -> bool:
        return any(int(state.closed_canastas[b, ow, 3]) > 0 for ow in range(sd, owners, sides))

    flags = int(state.turn_flags[b])
    kinds = sum(1 << i for i in range(4) if int(state.closed_canastas[b, owner, i]) > 0)
    return _Cap(
        o=o,
        hand=[int(x) for x in state.hands[b, player]],
        nat=[int(x) for x in state.meld_naturals[b, owner, :11]],
        wild=[int(state.meld_jokers[b, owner, s]) + int(state.meld_twos[b, owner, s])
              for s in range(12)],
        b3=int(state.meld_naturals[b, owner, B3_SLOT]),
        kinds=kinds,
        closed=int(state.closed_canastas[b, owner].sum()),
        side_sevens=has_sevens(side),
        rest_sevens=all(has_sevens(sd) for sd in range(sides) if sd != side),
        reserve=int(state.reserve_state[b, player]),
        foot=[int(x) for x in state.reserves[b, player]],
        needs_min=bool(state.needs_minimum[b]),
        minimum=o.minimum(int(state.scores[b, side])),
        tv=int(state.turn_value[b]),
        credit=[int(x) for x in state.credit[b]],
        took=bool(flags & FL_TOOK),
        sevens_only=bool(flags & FL_SEVENS_ONLY),
    )


def _cap_meld_actions(t: _Cap, final_phase: bool) -> set[str]:
    """Meld and add actions legal for a capped turn ``t`` (meld or final_meld phase)."""
    out: set[str] = set()

    def try_play(name: str, slot: int, cards: list[tuple[int, int]]) -> None:
        u = t.copy()
        for kind, count in cards:
            if not u.use(kind, count):
                return
        wilds = sum(c for k, c in cards if k in (JK, TWO))
        closed = u.put(slot, sum(c for _, c in cards) - wilds, wilds)
        if closed < 0:
            return
        u.pickup(closed)
        if final_phase:
            ok = u.can_end(final_phase=True)
        elif sum(u.hand) == 0:
            ok = u.can_go_out()
        elif u.blocked() and u.only_sevens() and not u.sevens_only:
            ok = False  # R5, P4: no meld that leaves only sevens while none may be discarded
        else:
            ok = u.can_finish()
        if ok:
            out.add(name)

    for s in range(11):
        k = s + 4
        name = SLOTS[s]
        if t.nat[s] == 0:
            try_play(f"MELD_NNN_{name}", s, [(k, 3)])
            try_play(f"MELD_NNJ_{name}", s, [(k, 2), (JK, 1)])
            try_play(f"MELD_NN2_{name}", s, [(k, 2), (TWO, 1)])
        else:
            try_play(f"ADD_NATURAL_{name}", s, [(k, 1)])
            try_play(f"ADD_JOKER_{name}", s, [(JK, 1)])
            try_play(f"ADD_TWO_{name}", s, [(TWO, 1)])
    if t.wild[W_SLOT] == 0:
        for j in range(4):
            try_play(f"MELD_WILD_{j}J{3 - j}T", W_SLOT, [(JK, j), (TWO, 3 - j)])
    else:
        try_play("ADD_JOKER_W", W_SLOT, [(JK, 1)])
        try_play("ADD_TWO_W", W_SLOT, [(TWO, 1)])
    if not final_phase:  # C11, R3: black threes in a going-out turn only
        if t.b3 == 0:
            try_play("MELD_NNN_B3", B3_SLOT, [(B3, 3)])
        else:
            try_play("ADD_NATURAL_B3", B3_SLOT, [(B3, 1)])
    return out


def _cap_take_actions(state: Any, b: int, o: _Opts, player: int) -> set[str]:
    """Legal pile takes under a meld cap (C20-C25, R2, R6, C17, P3, C19a)."""
    gate = _take_gate(state, b, o, player)
    if gate is None:
        return set()
    top, hand, rest, opened, frozen = gate
    base = _cap_of(state, b, o, player)
    base.needs_min, base.tv, base.credit, base.took = not opened, 0, hand[:], True
    s = top - 4
    shapes = [("TAKE_PILE_PAIR", [(top, 2)])]  # C22/C23, R6: frozen or not, new or joining
    if not frozen and base.nat[s] == 0 and o.take_wild:  # R6: not in Railroad
        shapes += [("TAKE_PILE_NAT_JOKER", [(top, 1), (JK, 1)]),
                   ("TAKE_PILE_NAT_TWO", [(top, 1), (TWO, 1)])]
    if not frozen and base.nat[s] > 0:  # the open meld of the rank (a closed one does not count)
        shapes.append(("TAKE_PILE_LAYOFF", []))
    out: set[str] = set()
    for name, cards in shapes:
        u = base.copy()
        u.tv = VALUE[top]  # the top card counts (C17)
        if not all(u.use(k, c) for k, c in cards):
            continue
        wilds = sum(c for k, c in cards if k in (JK, TWO))
        closed = u.put(s, 1 + sum(c for _, c in cards) - wilds, wilds)  # R2: never past seven
        if closed < 0:
            continue
        u.hand = [u.hand[k] + rest[k] for k in range(15)]  # credit stays: pile cards never count
        u.sevens_only = u.only_sevens()
        u.pickup(closed)
        if u.can_finish():
            out.add(name)
    return out


def _cap_legal(state: Any, b: int, o: _Opts, phase: int, player: int) -> set[str]:
    """``legal_action_names`` under a meld cap (Railroad, Pennies)."""
    out: set[str] = set()
    if phase == PH_DRAW:
        takes = _cap_take_actions(state, b, o, player)
        out |= takes
        if int(state.stock_size[b]) > 0:
            out.add("DRAW_STOCK")
        else:  # C31b
            forced = (o.exhausted == "forced_if_layoff" and "TAKE_PILE_LAYOFF" in takes) or (
                o.exhausted == "forced_if_legal" and bool(takes))
            if not forced:
                out.add("END_HAND")
        return out
    t = _cap_of(state, b, o, player)
    if phase == PH_FINAL:  # C31a: meld keeping a card, then END_HAND
        out |= _cap_meld_actions(t, final_phase=True)
        if sum(t.hand) >= 1 and t.b3 == 0 and t.min_met_now():
            out.add("END_HAND")
        return out
    out |= _cap_meld_actions(t, final_phase=False)
    size = sum(t.hand)
    for k in range(15):
        if t.hand[k] == 0:
            continue
        if size >= 2:  # R5, P4: no seven while a side lacks a sevens canasta
            ok = t.b3 == 0 and t.min_met_now() and not (k == SEVEN and t.blocked())
        else:  # discarding the last card goes out
            ok = t.out_with(k)
        if ok:
            out.add(f"DISCARD_{KINDS[k]}")
    if t.sevens_only and t.blocked() and t.only_sevens() and t.min_met_now():
        out.add("END_HAND")  # C27a: only sevens as melding began, none may be discarded
    return out


def legal_action_names(state: Any, b: int = 0) -> set[str]:
    """Names of the legal actions of row ``b``, computed from the rules (see module docstring)."""
    o = _Opts.of(state.rules)
    phase = int(state.phase[b])
    player = int(state.current_player[b])
    out: set[str] = set()
    if phase == PH_OVER:
        return out
    if o.cap:
        return _cap_legal(state, b, o, phase, player)
    if phase == PH_DRAW:
        takes = _take_actions(state, b, o, player)
        out |= takes
        if int(state.stock_size[b]) > 0:
            out.add("DRAW_STOCK")
        else:  # C31b
            forced = (o.exhausted == "forced_if_layoff" and "TAKE_PILE_LAYOFF" in takes) or (
                o.exhausted == "forced_if_legal" and bool(takes))
            if not forced:
                out.add("END_HAND")
        return out
    if phase == PH_ANSWER:  # C29: the partner answers for the asker's turn
        t = _turn_of(state, b, o, int(state.asker[b]))
        if t.can_go_out():
            out.add("ANSWER_YES")
        if t.can_discard():
            out.add("ANSWER_NO")
        return out
    t = _turn_of(state, b, o, player)
    if phase == PH_FINAL:  # C31a: meld keeping a card, then END_HAND
        out |= _meld_actions(t, final_phase=True)
        if sum(t.hand) >= 1 and t.b3 == 0 and t.min_met_now():
            out.add("END_HAND")
        return out
    # meld phase
    out |= _meld_actions(t, final_phase=False)
    size = sum(t.hand)
    for k in range(15):
        if t.hand[k] == 0:
            continue
        if size >= 2:
            ok = not t.yes and t.b3 == 0 and t.min_met_now()
        else:  # discarding the last card goes out
            u = t.copy()
            u.hand[k] -= 1
            ok = not t.no and u.can_go_out()
        if ok:
            out.add(f"DISCARD_{KINDS[k]}")
    flags = int(state.turn_flags[b])
    if (o.ask and o.partnerships and not flags & FL_ASKED and int(state.data[b, F_TURN_MELDS]) == 0
            and size >= 2 and t.can_go_out()):
        out.add("ASK_PARTNER")
    return out
