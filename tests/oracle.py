"""An independent legal-move oracle for classic Canasta, written from RULES.md and docs/engine.md.

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
player's own meld row); no meld cap, kitty or foot, no seven rule: ``legal_action_names`` refuses
those rule sets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# The one engine import: the index of the header field counting this turn's meld actions (a pile
# take is not one); C29 allows the question only before any. No State property exposes it.
from canasta_env.engine.layout import F_TURN_MELDS

# ---- cards (RULES.md C1-C3), written out here rather than imported from the engine -------------
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
    go_req: int
    ask: bool
    conc_min: bool
    take_needs_open: bool
    forbid_single: bool
    exhausted: str
    table: tuple[tuple[int | None, int], ...]

    @classmethod
    def of(cls, rules: Any) -> _Opts:
        r = rules.resolved()
        unsupported = {
            "max_meld_size": r.max_meld_size is not None,
            "reserve_size": r.reserve_size != 0,
            "seven_discard_rule": r.seven_discard_rule != "none",
            "go_out_needs_discard": r.go_out_needs_discard,
            "allow_wild_on_natural_canasta": not r.allow_wild_on_natural_canasta,
        }
        bad = [k for k, v in unsupported.items() if v]
        if bad:
            raise NotImplementedError(f"oracle models classic options only; not: {bad}")
        # last_card_red3 changes no legal set: under end_immediately the final-meld phase never arises
        return cls(r.num_players, bool(r.partnerships), r.meld_ownership == "player", r.min_naturals,
                   r.max_wilds, r.wild_le_naturals, int(r.go_out_requires), r.ask_partner,
                   r.concealed_requires_minimum, r.pile_take_requires_opened_side,
                   r.forbid_single_card_pile_take, r.exhausted_stock_take,
                   tuple(r.initial_meld_table))

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
            if 0 < b3 < 3:
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
    else:
        try_play("ADD_NATURAL_B3", B3_SLOT, [(B3, 1)])
    return out


def _take_actions(state: Any, b: int, o: _Opts, player: int) -> set[str]:
    """Legal pile takes (C20-C25, C17, C19a) for the player to move in the draw phase."""
    side = player % state.num_sides
    owner = _owner(state, o, player)
    pile = [int(x) for x in state.pile(b)]
    if not pile:
        return set()
    top = pile[-1]
    if top in (JK, TWO, R3, B3):  # C21
        return set()
    hand = [int(x) for x in state.hands[b, player]]
    opened = bool(state.opened[b, side])
    if o.take_needs_open and not opened:  # C23 option
        return set()
    if o.forbid_single and sum(hand) == 1 and len(pile) == 1:  # C25
        return set()
    frozen = bool(state.pile_frozen[b]) or not opened  # C20
    s = top - 4
    base = _Turn(
        o=o, hand=hand, nat=[int(x) for x in state.meld_naturals[b, owner, :11]],
        wild=[int(state.meld_jokers[b, owner, i]) + int(state.meld_twos[b, owner, i]) for i in range(11)],
        b3=int(state.meld_naturals[b, owner, B3_SLOT]), needs_min=not opened,
        minimum=o.minimum(int(state.scores[b, side])), tv=0, credit=hand[:], took=True)
    has_meld = base.nat[s] + base.wild[s] > 0
    rest = [0] * 15
    for c in pile[:-1]:
        if c != R3:  # C8: red threes in a taken pile are laid down, not replaced
            rest[c] += 1
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


def legal_action_names(state: Any, b: int = 0) -> set[str]:
    """Names of the legal actions of row ``b``, computed from the rules (see module docstring)."""
    o = _Opts.of(state.rules)
    phase = int(state.phase[b])
    player = int(state.current_player[b])
    out: set[str] = set()
    if phase == PH_OVER:
        return out
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
