"""Applying one legal action to one game row: draw, take, meld, discard, go out, end the hand.

Each ``apply_*`` function mutates the row and returns event bits (``layout.EV_*``). Legality is
the mask's job (``mask.py``); these functions assume it.
"""

from __future__ import annotations

from numba import njit

from canasta_env.engine import actions as A
from canasta_env.engine import cards as C
from canasta_env.engine import layout as L
from canasta_env.engine.capped import sevens_blocked
from canasta_env.engine.deal import deal_next, pop_stock, push_pile, start_turn
from canasta_env.engine.melds import owner_has_meld, owner_of, side_of
from canasta_env.engine.score import finish_episode, game_decision, hand_rewards, score_hand

TAKE_PAIR, TAKE_NAT_JOKER, TAKE_NAT_TWO, TAKE_LAYOFF = 0, 1, 2, 3


@njit(cache=True)
def end_hand(row, prm, how, rewards, order_buf):
    """Score the hand; then end the episode or deal the game's next hand (C32, C33)."""
    events = score_hand(row, prm)
    hand_rewards(row, prm, rewards)
    row[L.F_HAND_END] = how
    if game_decision(row, prm):
        finish_episode(row)
        if prm[L.P_EPISODE_GAME]:
            events |= L.EV_GAME_END
    else:
        events |= deal_next(row, prm, order_buf, False)
    return events


@njit(cache=True)
def close_turn(row, prm):
    """The mover's side has opened once it has melds at the end of a turn (C16, C18)."""
    side = side_of(prm, row[L.F_CUR])
    # an unopened side's melds are all the mover's, made this turn (G2: the mover's own)
    if owner_has_meld(row, prm, owner_of(prm, row[L.F_CUR])) and row[prm[L.O_OPENED] + side] == 0:
        row[prm[L.O_OPENED] + side] = 1
        return L.EV_OPENED
    return 0


@njit(cache=True)
def next_turn(row, prm):
    """Pass the turn to the left (C4)."""
    start_turn(row, prm, (row[L.F_CUR] + 1) % prm[L.P_NPLAYERS])


@njit(cache=True)
def go_out(row, prm, rewards, order_buf):
    """The mover has no cards left: record whether it was concealed (C30) and end the hand."""
    p = row[L.F_CUR]
    flags = row[L.F_TURN_FLAGS]
    concealed = 0
    if not (flags & (L.TF_MELDED_BEFORE | L.TF_ADDED_OLD)):
        owner = owner_of(prm, p)
        for s in range(C.NUM_RANK_SLOTS):
            size = (row[L.naturals_at(prm, owner) + s] + row[L.jokers_at(prm, owner) + s]
                    + row[L.twos_at(prm, owner) + s])
            if row[prm[L.O_NEW] + s] and size >= C.CANASTA_SIZE:
                concealed = 1
        if flags & L.TF_NEW_CANASTA:
            concealed = 1
    row[L.F_WENT_OUT] = p
    row[L.F_CONCEALED] = concealed
    events = L.EV_WENT_OUT | (L.EV_CONCEALED if concealed else 0) | close_turn(row, prm)
    if prm[L.P_CAP]:
        events |= L.EV_ALL_KINDS_OUT
    return events | end_hand(row, prm, L.HE_WENT_OUT, rewards, order_buf)


@njit(cache=True, inline="always")
def apply_draw(row, prm, rewards, order_buf):
    """Draw ``draw_count`` cards one at a time, red threes laid down and replaced (C7, C8, C31a)."""
    p = row[L.F_CUR]
    hand = L.hand_at(prm, p)
    events = 0
    need = prm[L.P_DRAW]
    last_red3 = False
    while need > 0 and row[L.F_STOCK_LEN] > 0:
        card = pop_stock(row, prm)
        if card == C.RED_THREE:
            row[prm[L.O_RED3] + p] += 1
            events |= L.EV_RED3_DRAWN
            last_red3 = True
            continue
        last_red3 = False
        row[hand + card] += 1
        need -= 1
    row[L.F_TURN_FLAGS] |= L.TF_DREW
    row[L.F_PHASE] = L.PH_MELD
    mark_sevens_only(row, prm)
    if last_red3 and row[L.F_STOCK_LEN] == 0:
        events |= L.EV_LAST_RED3
        if prm[L.P_LAST_RED3] == 1:
            events |= end_hand(row, prm, L.HE_LAST_RED3, rewards, order_buf)
        else:
            row[L.F_PHASE] = L.PH_FINAL_MELD
    return events


@njit(cache=True)
def mark_sevens_only(row, prm):
    """Note whether the mover's hand is only sevens as melding begins (R5, C27a)."""
    base = L.hand_at(prm, row[L.F_CUR])
    total = L.cards_in(row, base)
    if total > 0 and row[base + C.SEVEN] == total:
        row[L.F_TURN_FLAGS] |= L.TF_SEVENS_ONLY
    else:
        row[L.F_TURN_FLAGS] &= ~L.TF_SEVENS_ONLY


@njit(cache=True)
def join_reserve(row, prm, p):
    """The player's kitty or foot joins their hand; red threes in it are laid down, not replaced
    (C8). Its cards do not count toward this turn's minimum (like the pile's, C17)."""
    hand = L.hand_at(prm, p)
    res = L.reserve_at(prm, p)
    for k in range(C.NUM_KINDS):
        c = prm[L.O_CREDIT] + k
        row[c] = min(row[c], row[hand + k])
        if k == C.RED_THREE:
            row[prm[L.O_RED3] + p] += row[res + k]
        else:
            row[hand + k] += row[res + k]
        row[res + k] = 0
    row[prm[L.O_RESSTATE] + p] = L.RES_IN_HAND
    return L.EV_RESERVE_PICKUP


@njit(cache=True)
def reserve_trigger(row, prm):
    """After a play: a canasta it closed shows the kitty (R4: red, wild or sevens) or brings the
    foot at once (P3)."""
    closed = row[L.F_PLAY_CLOSED]
    row[L.F_PLAY_CLOSED] = 0
    p = row[L.F_CUR]
    if closed == 0 or row[prm[L.O_RESSTATE] + p] != L.RES_DOWN:
        return 0
    if prm[L.P_RES_PICKUP] == L.PICKUP_IMMEDIATE:
        events = join_reserve(row, prm, p)
        mark_sevens_only(row, prm)
        return events
    if closed & ~(1 << L.K_MIXED):
        row[prm[L.O_RESSTATE] + p] = L.RES_SHOWN
    return 0


@njit(cache=True)
def _close_meld(row, prm, owner, slot):
    """Move the seven-card meld of ``slot`` to the owner's closed canastas (R2); returns events."""
    base = L.slot_of(owner, slot)
    j, t = row[prm[L.O_MJOK] + base], row[prm[L.O_MTWO] + base]
    if slot == C.WILD_SLOT:
        kind, events = L.K_WILD, L.EV_WILD_CANASTA
    elif slot + C.FOUR == C.SEVEN:
        kind, events = L.K_SEVENS, L.EV_SEVENS_CANASTA
    else:
        kind, events = (L.K_NATURAL if j + t == 0 else L.K_MIXED), 0
    row[L.canasta_kinds_at(prm, owner) + kind] += 1
    row[prm[L.O_CLOSED] + base] += 1
    row[prm[L.O_CJOK] + base] += j
    row[prm[L.O_CTWO] + base] += t
    row[prm[L.O_MNAT] + base] = 0
    row[prm[L.O_MJOK] + base] = 0
    row[prm[L.O_MTWO] + base] = 0
    row[L.F_PLAY_CLOSED] |= 1 << kind
    if row[prm[L.O_NEW] + slot]:
        row[L.F_TURN_FLAGS] |= L.TF_NEW_CANASTA
    return events


@njit(cache=True)
def _forget(row, prm, p, kind):
    """A card of ``kind`` left the hand: others may no longer know the player holds it."""
    i = L.known_at(prm, p) + kind
    if row[i] > 0:
        row[i] -= 1


@njit(cache=True)
def _use_from_hand(row, prm, p, kind):
    """Move one card from the mover's hand to the table, crediting the minimum (C16, C17)."""
    row[L.hand_at(prm, p) + kind] -= 1
    c = prm[L.O_CREDIT] + kind
    if row[c] > 0:
        row[c] -= 1
        row[L.F_TURN_VALUE] += C.CARD_VALUES[kind]
    _forget(row, prm, p, kind)


@njit(cache=True, inline="always")
def _add_to_slot(row, prm, owner, slot, naturals, jokers, twos):
    """Put cards on a meld slot; returns event bits (canasta reached, pre-turn meld touched)."""
    base = L.slot_of(owner, slot)
    before = row[prm[L.O_MNAT] + base] + row[prm[L.O_MJOK] + base] + row[prm[L.O_MTWO] + base]
    if before == 0:
        row[prm[L.O_NEW] + slot] = 1
    elif not row[prm[L.O_NEW] + slot]:
        row[L.F_TURN_FLAGS] |= L.TF_ADDED_OLD
    row[prm[L.O_MNAT] + base] += naturals
    row[prm[L.O_MJOK] + base] += jokers
    row[prm[L.O_MTWO] + base] += twos
    after = before + naturals + jokers + twos
    if prm[L.P_CAP] and slot != C.BLACK_THREE_SLOT and after >= prm[L.P_CAP]:
        return L.EV_CANASTA | _close_meld(row, prm, owner, slot)
    return L.EV_CANASTA if (slot < C.WILD_SLOT and before < C.CANASTA_SIZE <= after) else 0


@njit(cache=True)
def apply_take(row, prm, how):
    """Take the discard pile (C22-C24): meld the top card, then the rest joins the hand."""
    p = row[L.F_CUR]
    owner = owner_of(prm, p)
    hand = L.hand_at(prm, p)
    events = L.EV_PILE_TAKE
    if row[L.F_PILE_FROZEN]:
        events |= L.EV_FROZEN_TAKE
    if row[L.F_NEEDS_MIN]:
        events |= L.EV_OPEN_BY_TAKE
    row[L.F_PILE_LEN] -= 1
    top = row[prm[L.O_PILE] + row[L.F_PILE_LEN]]
    row[L.F_TURN_VALUE] += C.CARD_VALUES[top]
    slot = top - C.FOUR
    if how == TAKE_PAIR:
        _use_from_hand(row, prm, p, top)
        _use_from_hand(row, prm, p, top)
        events |= _add_to_slot(row, prm, owner, slot, 3, 0, 0)
    elif how == TAKE_NAT_JOKER:
        _use_from_hand(row, prm, p, top)
        _use_from_hand(row, prm, p, C.JOKER)
        events |= _add_to_slot(row, prm, owner, slot, 2, 1, 0)
    elif how == TAKE_NAT_TWO:
        _use_from_hand(row, prm, p, top)
        _use_from_hand(row, prm, p, C.TWO)
        events |= _add_to_slot(row, prm, owner, slot, 2, 0, 1)
    else:
        events |= L.EV_LAYOFF_TAKE | _add_to_slot(row, prm, owner, slot, 1, 0, 0)
    row[prm[L.O_MELDED] + p] = 1
    for k in range(C.NUM_KINDS):
        row[prm[L.O_CREDIT] + k] = row[hand + k]
    for i in range(row[L.F_PILE_LEN]):
        card = row[prm[L.O_PILE] + i]
        if card == C.RED_THREE:
            row[prm[L.O_RED3] + p] += 1
        else:
            row[hand + card] += 1
            row[L.known_at(prm, p) + card] += 1
    row[L.F_PILE_LEN] = 0
    row[L.F_PILE_FROZEN] = 0
    row[L.F_TURN_FLAGS] |= L.TF_TOOK
    row[L.F_PHASE] = L.PH_MELD
    if row[L.F_NEEDS_MIN] and row[L.F_TURN_VALUE] >= row[L.F_MINIMUM]:
        events |= L.EV_OPENED
    mark_sevens_only(row, prm)
    return events | reserve_trigger(row, prm)


@njit(cache=True)
def meld_cards(action):
    """(slot, naturals, jokers, twos) that a meld action moves from hand to table."""
    if action >= A.MELD_WILD:
        j = action - A.MELD_WILD
        return C.WILD_SLOT, 0, j, 3 - j
    if action < A.MELD_NNJ:
        return action - A.MELD_NNN, 3, 0, 0
    if action < A.MELD_NN2:
        return action - A.MELD_NNJ, 2, 1, 0
    if action < A.ADD_NATURAL:
        return action - A.MELD_NN2, 2, 0, 1
    if action < A.ADD_JOKER:
        return action - A.ADD_NATURAL, 1, 0, 0
    if action < A.ADD_TWO:
        return action - A.ADD_JOKER, 0, 1, 0
    return action - A.ADD_TWO, 0, 0, 1


@njit(cache=True)
def place_meld(row, prm, action):
    """Move the cards of a meld action from the mover's hand to the table (no turn end)."""
    p = row[L.F_CUR]
    slot, naturals, jokers, twos = meld_cards(action)
    kind = slot + C.FOUR if slot < C.WILD_SLOT else C.BLACK_THREE
    for _ in range(naturals):
        _use_from_hand(row, prm, p, kind)
    for _ in range(jokers):
        _use_from_hand(row, prm, p, C.JOKER)
    for _ in range(twos):
        _use_from_hand(row, prm, p, C.TWO)
    row[prm[L.O_MELDED] + p] = 1
    row[L.F_TURN_MELDS] += 1
    events = _add_to_slot(row, prm, owner_of(prm, p), slot, naturals, jokers, twos)
    events |= reserve_trigger(row, prm)
    return events | (L.EV_BLACK3_MELD if slot == C.BLACK_THREE_SLOT and naturals == 3 else 0)


@njit(cache=True)
def hand_size(row, prm, p):
    """Cards in player ``p``'s hand."""
    return L.cards_in(row, L.hand_at(prm, p))


@njit(cache=True, inline="always")
def apply_meld(row, prm, action, rewards, order_buf):
    """A meld action; melding the last card goes out (C28)."""
    was_short = row[L.F_NEEDS_MIN] and row[L.F_TURN_VALUE] < row[L.F_MINIMUM]
    events = place_meld(row, prm, action)
    if was_short and row[L.F_TURN_VALUE] >= row[L.F_MINIMUM]:
        events |= L.EV_OPENED
    if hand_size(row, prm, row[L.F_CUR]) == 0:
        events |= go_out(row, prm, rewards, order_buf)
    return events


@njit(cache=True, inline="always")
def apply_discard(row, prm, kind, rewards, order_buf):
    """Discard a card (C27): the turn ends, or the hand if it was the last card (C28)."""
    p = row[L.F_CUR]
    row[L.hand_at(prm, p) + kind] -= 1
    if prm[L.P_OBS_DISCARDS]:
        row[L.discards_at(prm, p) + kind] += 1
    _forget(row, prm, p, kind)
    push_pile(row, prm, kind)
    events = 0
    if kind == C.JOKER or kind == C.TWO:
        row[L.F_PILE_FROZEN] = 1
    elif kind == C.BLACK_THREE:
        events |= L.EV_STOP_CARD
    if hand_size(row, prm, p) == 0:
        return events | go_out(row, prm, rewards, order_buf)
    if row[L.hand_at(prm, p) + C.SEVEN] > 0 and sevens_blocked(row, prm):
        events |= L.EV_SEVENS_HELD
    if row[prm[L.O_RESSTATE] + p] == L.RES_SHOWN:  # the kitty joins after the discard (R4)
        events |= join_reserve(row, prm, p)
    events |= close_turn(row, prm)
    next_turn(row, prm)
    return events


@njit(cache=True, inline="always")
def apply_action(row, prm, action, rewards, order_buf):
    """Apply one legal action to a live row; returns event bits."""
    if action == A.DRAW_STOCK:
        return apply_draw(row, prm, rewards, order_buf)
    if action == A.END_HAND:
        if row[L.F_PHASE] == L.PH_DRAW:
            return L.EV_STOCK_OUT_END | end_hand(row, prm, L.HE_STOCK_OUT, rewards, order_buf)
        if row[L.F_PHASE] == L.PH_MELD:  # only sevens, none may be discarded (C27a)
            return L.EV_NO_DISCARD_END | close_turn(row, prm) | end_hand(
                row, prm, L.HE_NO_DISCARD, rewards, order_buf)
        return close_turn(row, prm) | end_hand(row, prm, L.HE_LAST_RED3, rewards, order_buf)
    if action <= A.TAKE_PILE_LAYOFF:
        events = apply_take(row, prm, action - A.TAKE_PILE_PAIR)
        if hand_size(row, prm, row[L.F_CUR]) == 0:  # the take melded the last cards: going out
            events |= go_out(row, prm, rewards, order_buf)
        return events
    if action < A.DISCARD:
        return apply_meld(row, prm, action, rewards, order_buf)
    if A.DISCARD <= action < A.ASK_PARTNER:
        return apply_discard(row, prm, action - A.DISCARD, rewards, order_buf)
    if action == A.ASK_PARTNER:
        row[L.F_TURN_FLAGS] |= L.TF_ASKED
        row[L.F_ASKER] = row[L.F_CUR]
        row[L.F_CUR] = (row[L.F_CUR] + 2) % prm[L.P_NPLAYERS]
        row[L.F_PHASE] = L.PH_ANSWER
        return L.EV_ASK
    if action == A.ANSWER_YES or action == A.ANSWER_NO:
        row[L.F_TURN_FLAGS] |= L.TF_YES if action == A.ANSWER_YES else L.TF_NO
        row[L.F_CUR] = row[L.F_ASKER]
        row[L.F_PHASE] = L.PH_MELD
        return 0
    return 0


_UNUSED = (L.PH_DRAW, L.EV_STOP_CARD)
