"""Game records: one JSON line per played hand, replayable through the engine.

A record holds everything needed to play its hand again without the code that produced it: the
full resolved rules (``load_rules(record.rules)``), the **explicit deal** (deck order as kind names
and the dealer, docs/engine.md: numpy promises its streams only within one
build) beside its ``DealId`` when known, the game scores before the hand (they set each side's
initial-meld minimum, C16), who sat where, every action, and the outcome (hand scores, score parts,
who went out). Actions are stored as ints with their names, so a record still replays if a later
action layout renumbers them.

``BatchRecorder`` watches a batch play loop (``step(state, actions, rows)``) and emits a record for
each row whose hand ends; per step it only appends actions into a ``(B, steps)`` int16 array.

One line looks like (abridged)::

    {"format": "canasta-hand-record", "version": 1, "preset": "classic_2p", "rules": {...},
     "episode": "game", "hand_number": 2, "deal": {"order": ["K", "7", ...], "dealer": 1,
     "deal_id": [0, 0, 0]}, "scores_before": [1840, 95], "seats": ["human", "heuristic"],
     "actions": [0, 47, ...], "action_names": ["DRAW_STOCK", ...], "action_layout": "3f0c...",
     "end": "went_out", "went_out": 1, "concealed": false, "hand_scores": [-140, 1215],
     "score_parts": [[...], [...]], "scores_after": [1700, 1310], "game_result": null, "meta": {}}
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from canasta_env.engine import (
    ACTION_NAMES,
    NUM_ACTIONS,
    DealId,
    ExplicitDeal,
    IllegalActionError,
    State,
    StepResult,
    init_from_deals,
    step_one,
)
from canasta_env.engine.actions import ACTION_BY_NAME
from canasta_env.engine.cards import KIND_BY_NAME, KIND_NAMES
from canasta_env.engine.deal import shuffled_order
from canasta_env.engine.layout import (
    EPISODES,
    EV_CONCEALED,
    EV_GAME_END,
    EV_HAND_END,
    EV_NO_DISCARD_END,
    EV_STOCK_OUT_END,
    EV_WENT_OUT,
    F_DEAL_INDEX,
    F_DEAL_ROW,
    F_DEALER,
    F_GAME_RESULT,
    F_HAND_NO,
    F_SEED_HI,
    F_SEED_LO,
    F_TRUNC,
    P_EPISODE_GAME,
    PART_NAMES,
    pack_params,
)
from canasta_env.messages import one_line, short_repr
from canasta_env.rules import RulesError, RuleSet, load_rules, with_later_options
from canasta_env.safe_yaml import decode_text, open_input

FORMAT = "canasta-hand-record"
VERSION = 1
ACTION_LAYOUT = hashlib.sha256("\n".join(ACTION_NAMES).encode()).hexdigest()[:16]
# layout.HE_* -> how a hand ended; "unfinished": the record stops mid-hand (an interrupted game)
END_NAMES = {1: "went_out", 2: "stock_out", 3: "last_red3", 4: "no_discard", 5: "step_cap"}
ENDS = (*END_NAMES.values(), "unfinished")
# how a record's end reads to a player ({who}: the seat that went out)
END_TEXT = {
    "went_out": "{who} went out",
    "stock_out": "the stock ran out",
    "last_red3": "the hand ended after the last stock card (a red three)",
    "no_discard": "nobody could discard",
    "step_cap": "the step cap was hit (hand not scored)",
}


class RecordError(ValueError):
    """A record is malformed, or does not replay to what it says."""


@dataclass(eq=False)
class HandRecord:
    """One played hand. Lists are per seat (``seats``) or per side (scores). Two records are equal
    when their JSON forms are."""

    rules: dict[str, Any]  # RuleSet.to_dict() of the resolved rules
    deal: ExplicitDeal  # deck in dealing order (last = top) and dealer
    scores_before: list[int]  # game score per side before the hand (sets the C16 minimum)
    seats: list[str]  # who played each seat (agent name, "human", ...)
    actions: list[int]  # every decision of the hand, in order
    end: str  # one of ENDS
    scores_after: list[int]  # game score per side after the hand
    hand_scores: list[int] | None = None  # None when the hand was not scored (step cap, unfinished)
    score_parts: list[list[int]] | None = None  # per side, layout.PART_NAMES
    went_out: int = -1  # seat that went out, -1 none
    concealed: bool = False
    deal_id: DealId | None = None  # the deal's address, with hand_number, when known
    hand_number: int = 0  # hands played in this game before this one
    episode: str = "hand"  # the episode mode the hand was played in ("hand" or "game")
    game_result: int | None = None  # the game ended with this hand: winning side, -1 draw, -2 cut
    # short by max_hands
    meta: dict[str, Any] = field(default_factory=dict)  # free-form (tournament round, ...)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HandRecord):
            return NotImplemented
        return self.to_json(names=False) == other.to_json(names=False)

    @property
    def preset(self) -> str:
        """Name of the rules the hand was played under."""
        return str(self.rules.get("name", "?"))

    def describe(self) -> str:
        """Short identification for messages: rules, deal address and hand number."""
        where = f"deal {short_repr(tuple(self.deal_id))}" if self.deal_id is not None \
            else "explicit deal"
        return f"{short_repr(self.preset, 40)[1:-1]} {where} hand {short_repr(self.hand_number)}"

    def to_json(self, names: bool = True) -> dict[str, Any]:
        """Plain JSON data; with ``names``, the action names too (they let a record replay after
        the action layout changes)."""
        out: dict[str, Any] = {
            "format": FORMAT, "version": VERSION, "preset": self.preset, "rules": self.rules,
            "episode": self.episode, "hand_number": self.hand_number,
            "deal": {"order": [KIND_NAMES[int(k)] for k in self.deal.order],
                     "dealer": int(self.deal.dealer),
                     "deal_id": None if self.deal_id is None else [int(x) for x in self.deal_id]},
            "scores_before": self.scores_before, "seats": self.seats, "actions": self.actions,
        }
        if names:
            out["action_names"] = [ACTION_NAMES[a] for a in self.actions]
        out.update({
            "action_layout": ACTION_LAYOUT, "end": self.end, "went_out": self.went_out,
            "concealed": self.concealed, "hand_scores": self.hand_scores,
            "score_parts": self.score_parts, "scores_after": self.scores_after,
            "game_result": self.game_result, "meta": self.meta,
        })
        return out

    @classmethod
    def from_json(cls, data: Any) -> HandRecord:
        """Parse and validate one record; ``RecordError`` names the bad key."""
        return _parse(data)


# ---- parsing -----------------------------------------------------------------------------------
KEYS = frozenset({
    "format", "version", "preset", "rules", "episode", "hand_number", "deal", "scores_before",
    "seats", "actions", "action_names", "action_layout", "end", "went_out", "concealed",
    "hand_scores", "score_parts", "scores_after", "game_result", "meta",
})
DEAL_KEYS = frozenset({"order", "dealer", "deal_id"})
INT32 = (-(2**31), 2**31 - 1)  # scores live in the engine's int32 arrays
MAX_LINE_BYTES = 10 << 20  # a record of a few thousand decisions is ~100 kB


def _get(data: dict[str, Any], key: str, kind: type | tuple[type, ...], optional: bool = False) -> Any:
    if key not in data:
        if optional:
            return None
        raise RecordError(f"missing key {key!r}")
    value = data[key]
    if value is None and optional:
        return None
    if not isinstance(value, kind) or isinstance(value, bool) and kind is int:
        raise RecordError(f"key {key!r}: expected {getattr(kind, '__name__', kind)}, got "
                          f"{type(value).__name__} {short_repr(value, 40)}")
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _ints(data: dict[str, Any], key: str, optional: bool = False) -> list[int] | None:
    value = _get(data, key, list, optional)
    if value is None:
        return None
    if not all(_is_int(x) for x in value):
        raise RecordError(f"key {key!r}: expected a list of integers, got {short_repr(value)}")
    return [int(x) for x in value]


def _unknown_keys(data: dict[str, Any], known: frozenset[str], where: str) -> None:
    unknown = sorted(map(short_repr, set(data) - known))
    if unknown:
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        raise RecordError(f"{where}unknown key(s) {', '.join(unknown[:5])}{more}; known: "
                          f"{', '.join(sorted(known))}")


def _actions(data: dict[str, Any]) -> list[int]:
    actions = _ints(data, "actions") or []
    names = _get(data, "action_names", list, optional=True)
    if names is not None and len(names) != len(actions):
        raise RecordError(f"{len(names)} action names for {len(actions)} actions")
    if names is not None and not all(isinstance(n, str) for n in names):
        raise RecordError(f"key 'action_names': expected a list of strings, got {short_repr(names)}")
    layout = _get(data, "action_layout", str)
    if layout != ACTION_LAYOUT:  # written by another action layout: the names decide
        if names is None:
            raise RecordError(f"recorded with action layout {short_repr(layout)}, "
                              f"this code has {ACTION_LAYOUT!r}, and the record has no action names")
        unknown = sorted({n for n in names if n not in ACTION_BY_NAME})
        if unknown:
            raise RecordError(f"unknown action names {short_repr(unknown)} (another action layout)")
        return [ACTION_BY_NAME[n] for n in names]
    for i, a in enumerate(actions):
        if not 0 <= a < NUM_ACTIONS:
            raise RecordError(f"action #{i} = {short_repr(a)} is outside [0, {NUM_ACTIONS})")
        if names is not None and names[i] != ACTION_NAMES[a]:
            raise RecordError(f"action #{i} = {a} is {ACTION_NAMES[a]}, the record names it "
                              f"{short_repr(names[i])}")
    return actions


def _deal(data: dict[str, Any]) -> tuple[ExplicitDeal, DealId | None]:
    deal = _get(data, "deal", dict)
    _unknown_keys(deal, DEAL_KEYS, "deal: ")
    order = _get(deal, "order", list)
    bad = [c for c in order if not isinstance(c, str) or c not in KIND_BY_NAME]
    if bad:
        names = sorted({short_repr(c, 20) for c in bad})
        raise RecordError(f"deal order: unknown card names {', '.join(names[:5])}"
                          f"{' ...' if len(names) > 5 else ''}")
    dealer = _get(deal, "dealer", int)
    deal_id = _ints(deal, "deal_id", optional=True)
    if deal_id is not None and len(deal_id) != 3:
        raise RecordError("deal_id: expected [seed, row, index]")
    did = None if deal_id is None else DealId(*deal_id)
    return ExplicitDeal(np.array([KIND_BY_NAME[c] for c in order], dtype=np.int8), dealer), did


def _parse(data: Any) -> HandRecord:
    if not isinstance(data, dict):
        raise RecordError(f"expected a JSON object, got {type(data).__name__}")
    if data.get("format") != FORMAT:
        raise RecordError(f"not a hand record: format {short_repr(data.get('format'))}, expected "
                          f"{FORMAT!r}")
    version = data.get("version")
    if not _is_int(version) or version != VERSION:
        raise RecordError(f"record version {short_repr(version)} is not supported (this code reads "
                          f"version {VERSION})")
    _unknown_keys(data, KEYS, "")
    rules = _get(data, "rules", dict)
    try:
        ruleset = load_rules(rules)
    except RulesError as exc:
        raise RecordError(f"rules: {exc}") from None
    preset = _get(data, "preset", str, optional=True)
    if preset is not None and preset != str(rules.get("name", "?")):
        raise RecordError(f"key 'preset': {short_repr(preset)} is not the rules' name "
                          f"{short_repr(rules.get('name', '?'))}")
    end = _get(data, "end", str)
    deal, deal_id = _deal(data)
    parts = _get(data, "score_parts", list, optional=True)
    if parts is not None and not all(isinstance(p, list) and all(_is_int(x) for x in p)
                                     for p in parts):
        raise RecordError("key 'score_parts': expected a list of lists of integers per side")
    seats = _get(data, "seats", list)
    if not all(isinstance(x, str) for x in seats):
        raise RecordError(f"key 'seats': expected a list of strings, got {short_repr(seats)}")
    record = HandRecord(
        rules=rules, deal=deal, scores_before=_ints(data, "scores_before") or [],
        seats=seats, actions=_actions(data), end=end,
        scores_after=_ints(data, "scores_after") or [],
        hand_scores=_ints(data, "hand_scores", optional=True),
        score_parts=None if parts is None else [[int(x) for x in p] for p in parts],
        went_out=_get(data, "went_out", int), concealed=bool(_get(data, "concealed", bool)),
        deal_id=deal_id, hand_number=_get(data, "hand_number", int),
        episode=_get(data, "episode", str), game_result=_get(data, "game_result", int, optional=True),
        meta=_get(data, "meta", dict, optional=True) or {},
    )
    check_record(record, ruleset)
    if len(record.actions) > ruleset.max_steps_per_hand:
        raise RecordError(f"{len(record.actions)} actions, more than the rules' max_steps_per_hand "
                          f"{ruleset.max_steps_per_hand}")
    return record


def _in_range(key: str, value: Any, lo: int, hi: int) -> None:
    if not _is_int(value) or not lo <= value <= hi:
        raise RecordError(f"key {key!r}: {short_repr(value)} is not an integer in [{lo}, {hi}]")


def _per(key: str, values: Any, count: int, what: str) -> None:
    """``values`` is a list of ``count`` int32 integers, one per seat or side."""
    if not isinstance(values, list) or len(values) != count:
        raise RecordError(f"key {key!r}: expected {count} integers (one per {what}), got "
                          f"{short_repr(values)}")
    for x in values:
        _in_range(key, x, *INT32)


def _check_rules(written: Any, rules: RuleSet) -> None:
    """A record holds every option of the rules it was played under, resolved (what
    ``RuleSet.to_dict`` writes): an option left out would replay under this code's default, and a
    ``null`` under this code's table-size default, not necessarily the rules of the hand. Only
    ``rules.LATER_OPTIONS`` may be left out (a record older than the option)."""
    resolved = rules.to_dict()
    written = with_later_options(written, resolved)
    if written == resolved:
        return
    missing = [key for key in resolved if key not in written]
    if missing:
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise RecordError(f"rules: missing option(s) {', '.join(missing[:5])}{more}; a record holds "
                          "every rule option, so that it never replays under defaults it was not "
                          "played under")
    key = next(k for k, v in resolved.items() if written[k] != v)
    raise RecordError(f"rules: option {key!r} = {short_repr(written[key])} is not resolved (it "
                      f"would replay as {short_repr(resolved[key])}); a record holds the resolved rules")


def check_record(record: HandRecord, rules: RuleSet) -> None:
    """``RecordError`` unless the record's fields fit its rules: the rules complete and resolved,
    one seat label per player, one score per side, seats, sides, hand number and deal address in
    range, integers within the engine's int32 arrays. Whether the hand replays to what it says is
    ``replay``'s business."""
    _check_rules(record.rules, rules)
    n, sides = rules.num_players, rules.num_sides
    if not isinstance(record.seats, list) or len(record.seats) != n \
            or not all(isinstance(x, str) for x in record.seats):
        raise RecordError(f"key 'seats': expected {n} seat labels for {n} players ({rules.name}), "
                          f"got {short_repr(record.seats)}")
    for key in ("scores_before", "scores_after"):
        _per(key, getattr(record, key), sides, "side")
    if record.hand_scores is not None:
        _per("hand_scores", record.hand_scores, sides, "side")
    if record.score_parts is not None:
        if not isinstance(record.score_parts, list) or len(record.score_parts) != sides:
            raise RecordError(f"key 'score_parts': expected {sides} lists (one per side), got "
                              f"{short_repr(record.score_parts)}")
        for part in record.score_parts:
            _per("score_parts", part, len(PART_NAMES), "score part")
    _in_range("went_out", record.went_out, -1, n - 1)
    if record.game_result is not None:
        _in_range("game_result", record.game_result, -2, sides - 1)  # -2: stopped at max_hands
    _in_range("hand_number", record.hand_number, 0, rules.max_hands)
    _in_range("dealer", record.deal.dealer, 0, n - 1)
    if record.deal_id is not None:
        seed, row, index = record.deal_id
        _in_range("deal_id seed", seed, 0, 2**64 - 1)
        _in_range("deal_id row", row, 0, 2**31 - 1)
        _in_range("deal_id index", index, 0, 2**31 - 1)
    if record.end not in ENDS:
        raise RecordError(f"end {short_repr(record.end)} is not one of {', '.join(ENDS)}")
    if record.episode not in EPISODES:
        raise RecordError(f"episode {short_repr(record.episode)} is not one of {', '.join(EPISODES)}")
    if not isinstance(record.concealed, bool):
        raise RecordError(f"key 'concealed': expected true or false, got {short_repr(record.concealed)}")


# ---- files -------------------------------------------------------------------------------------
def write_records(path: str | Path, records: Iterable[HandRecord], *, names: bool = True) -> int:
    """Append records to a JSON-lines file (created if needed) and flush; returns how many. A file
    that ends mid-line (a write cut short) gets a newline first, so the new records stay readable.
    Every record is checked to read back (``record_line``) before a line is written."""
    lines = [record_line(r, names, i) for i, r in enumerate(records)]
    if lines:
        with open(path, "a", encoding="utf-8") as f:
            start = "\n" if _ends_mid_line(f.fileno(), path) else ""
            f.write(start + "".join(lines))
            f.flush()
    return len(lines)


def record_line(record: HandRecord, names: bool = True, index: int = 0) -> str:
    """The JSON line of ``record``, or ``RecordError`` naming it (``index``, its place among those
    written) when the line would not read back: a record built in code may hold what JSON cannot
    write (a numpy integer) or what the reader refuses (an action out of range, a score per side
    too many), and a line the reader refuses hides every line after it in the file."""
    try:
        for i, a in enumerate(record.actions):  # (to_json names them: -1 would name the last action)
            if not _is_int(a) or not 0 <= a < NUM_ACTIONS:
                raise RecordError(f"action #{i} = {short_repr(a)} is not a Python int in [0, {NUM_ACTIONS})")
        line = json.dumps(record.to_json(names), separators=(",", ":"))
        _parse(_load_json(line))
    except (TypeError, ValueError, IndexError, AttributeError, RecursionError) as exc:
        raise RecordError(f"record {index} ({type(record).__name__}) would not read back, so it is not "
                          f"written: {one_line(exc, 300)}") from None
    return line + "\n"


def _ends_mid_line(fd: int, path: str | Path) -> bool:
    """Whether ``path``, open for appending on ``fd``, is a regular file that is not empty and does
    not end with a newline (pipes and devices are not read)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
        return False
    with open(path, "rb") as f:
        f.seek(st.st_size - 1)
        return f.read(1) != b"\n"


def iter_records(path: str | Path) -> Iterator[HandRecord]:
    """Records of a JSON-lines file, one per non-blank line; ``RecordError`` names the file and
    line of anything malformed: not UTF-8, over ``MAX_LINE_BYTES``, not a JSON object, a duplicate
    key, numbers or nesting out of bounds, or a record that does not fit its rules (``_parse``)."""
    if Path(path).is_dir():
        raise RecordError(f"{path}: is a directory, not a record file")
    with open_input(path, str(path), RecordError) as f:  # a FIFO is refused, not waited on
        for lineno, raw in enumerate(iter(lambda: f.readline(MAX_LINE_BYTES + 1), b""), start=1):
            if len(raw) > MAX_LINE_BYTES:
                raise RecordError(f"{path}:{lineno}: line longer than {MAX_LINE_BYTES} bytes; not a "
                                  "hand record")
            try:
                line = decode_text(raw, f"{path}:{lineno}", RecordError)
            except RecordError as exc:  # decode_text names the line within ``raw``: always 1
                raise RecordError(str(exc).replace(": line 1: ", ": ", 1)) from None
            if not line.strip():
                continue
            try:
                yield _parse(_load_json(line))
            except RecordError as exc:
                raise RecordError(f"{path}:{lineno}: {exc}") from None


def _load_json(line: str) -> Any:
    """One JSON value; ``RecordError`` for bad JSON, duplicate keys, integers too long to read and
    nesting too deep for the parser."""
    try:
        return json.loads(line, object_pairs_hook=unique_keys)
    except json.JSONDecodeError as exc:
        cut = "" if line.endswith("\n") else "; the file may have been cut short"
        raise RecordError(f"not valid JSON ({exc.msg} at column {exc.colno}){cut}") from None
    except RecursionError:
        raise RecordError("not a hand record: JSON nested too deeply") from None
    except ValueError as exc:  # an integer over Python's 4300-digit conversion limit
        raise RecordError(f"not valid JSON: {' '.join(str(exc).split())[:120]}") from None


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object as a dict (``json.loads``'s ``object_pairs_hook``); ``json`` would silently
    keep the last of two equal keys. Records and checkpoints (``agents.checkpoint``) read with it."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise RecordError(f"duplicate key {short_repr(key)}")
            seen.add(key)
    return out


def read_records(path: str | Path) -> list[HandRecord]:
    """All records of a JSON-lines file (see ``iter_records``)."""
    return list(iter_records(path))


# ---- replay ------------------------------------------------------------------------------------
def start_state(record: HandRecord) -> State:
    """A batch of one at the start of the record's hand: its explicit deal, the game scores before
    it (and so each side's minimum, C16), played as a one-hand episode."""
    try:
        rules = load_rules(record.rules)
        check_record(record, rules)
        state = init_from_deals(rules, [record.deal], episode="hand")
    except ValueError as exc:
        raise RecordError(f"{record.describe()}: {exc}") from None
    state.hand_number[0] = record.hand_number
    if record.deal_id is not None:  # so views and renders show the deal's address
        _set_deal_id(state, record.deal_id)
    state.scores[0] = record.scores_before
    mover_side = int(state.current_player[0]) % state.num_sides
    state.minimum[0] = rules.minimum_for(int(record.scores_before[mover_side]))
    state.refresh_mask()
    return state


def _set_deal_id(state: State, deal_id: DealId) -> None:
    deal_id = DealId(*deal_id)
    seed = int(deal_id.seed) & (2**64 - 1)
    halves = np.array([seed & 0xFFFFFFFF, seed >> 32], dtype=np.uint32).view(np.int32)
    state.data[0, F_SEED_LO], state.data[0, F_SEED_HI] = halves
    state.data[0, F_DEAL_ROW], state.data[0, F_DEAL_INDEX] = int(deal_id.row), int(deal_id.index)


def replay_step(record: HandRecord, state: State, i: int) -> None:
    """Play the record's action ``i`` on ``state``; ``RecordError`` if it is not legal."""
    action = record.actions[i]
    if state.terminated[0] or state.truncated[0]:
        raise RecordError(f"{record.describe()}: the hand is over after {i} actions, the record "
                          f"has {len(record.actions)}")
    if isinstance(action, np.integer):  # a record built in code from an engine array
        action = int(action)
    if not _is_int(action) or not 0 <= action < NUM_ACTIONS:
        raise RecordError(f"{record.describe()}: action #{i} {short_repr(action)} (out of range) does "
                          f"not replay: actions are integers in [0, {NUM_ACTIONS})")
    try:
        step_one(state, action)
    except IllegalActionError as exc:
        raise RecordError(f"{record.describe()}: action #{i} {action} ({ACTION_NAMES[action]}) does "
                          f"not replay: {exc}") from None


def replay(record: HandRecord) -> State:
    """Play the record's actions from its deal and check its outcome; returns the final state.

    Raises:
        RecordError: an action is illegal, the hand ends early or not at all, or the end, the
            scores or who went out differ from the record.
    """
    state = start_state(record)
    for i in range(len(record.actions)):
        replay_step(record, state, i)
    check_outcome(record, state)
    return state


def check_outcome(record: HandRecord, state: State) -> None:
    """``RecordError`` unless ``state`` (after all the record's actions) ends as the record says."""
    over = bool(state.terminated[0] or state.truncated[0])
    end = END_NAMES.get(int(state.hand_end[0]), "?") if over else "unfinished"
    scores = state.scores[0].tolist()
    found: dict[str, Any] = {"end": end, "scores_after": scores, "went_out": -1, "concealed": False,
                             "hand_scores": None, "score_parts": None, "game_result": None}
    if over:
        found.update(went_out=int(state.went_out[0]), concealed=bool(state.concealed[0]))
    if over and end != "step_cap":
        found.update(hand_scores=state.hand_scores[0].tolist(), score_parts=state.score_parts[0].tolist())
        if record.episode == "game":
            found["game_result"] = _game_result(state)
    diff = [f"{k}: replayed {v!r}, recorded {getattr(record, k)!r}" for k, v in found.items()
            if v != getattr(record, k)]
    if diff:
        raise RecordError(f"{record.describe()}: replay differs from the record: {'; '.join(diff)}")


def _game_result(state: State) -> int | None:
    """How the game goes on after the replayed hand, decided by the engine's own rule (C33) on a
    copy of its row under the game-episode parameters: the winning side, -1 a draw, -2 cut short
    by ``max_hands``, None when another hand is dealt."""
    from canasta_env.engine.score import game_decision

    row = state.data[0].copy()
    row[F_GAME_RESULT], row[F_TRUNC] = -2, 0  # (the replay ran as a one-hand episode)
    return int(row[F_GAME_RESULT]) if game_decision(row, pack_params(state.rules, "game")) else None


# ---- recording a batch -------------------------------------------------------------------------
class BatchRecorder:
    """Records every hand played on the rows of a batch ``State``.

    Usage: make it right after the rows are dealt; after every ``result = step(state, actions,
    rows)`` call ``record(actions, result, rows)``, which returns the records of the hands that
    ended in that step. In ``"game"`` episodes the next hand of a game is followed on its own; after
    ``reset_rows`` / ``redeal`` call ``begin(rows)`` (with the explicit deals for ``redeal`` with
    ``ExplicitDeal``: a row's deal is otherwise recomputed from its DealId and checked); stepping a
    re-dealt row before ``begin`` raises ``RecordError`` instead of losing its hand.

    Per step the work is a few whole-batch numpy operations (actions go into a ``(B, steps)``
    int16 array); Python loops run only over rows whose hand starts or ends.
    """

    def __init__(self, state: State, seats: Sequence[str] | Sequence[Sequence[str]], *,
                 deals: Sequence[ExplicitDeal] | None = None, meta: dict[str, Any] | None = None,
                 capacity: int = 256) -> None:
        """
        Args:
            state: the batch the play loop steps (kept by reference).
            seats: a label per seat for every row, or one list of labels per row.
            deals: explicit deals of the rows, if they were dealt with ``ExplicitDeal``.
            meta: free-form data stored in every record (copied).
            capacity: initial actions per row (the array grows when a hand is longer).
        """
        self.state = state
        b, n = state.num_games, state.num_players
        self.seats: list[list[str]] = [[str(s) for s in seats] for _ in range(b)] \
            if all(isinstance(s, str) for s in seats) else [[str(x) for x in row] for row in seats]
        if len(self.seats) != b or any(len(row) != n for row in self.seats):
            raise ValueError(f"seats: expected {n} labels, or {b} rows of {n}")
        self.meta = dict(meta or {})
        self.rules_dict = state.rules.to_dict()
        self.episode = "game" if state.params[P_EPISODE_GAME] else "hand"
        self._actions = np.zeros((b, capacity), dtype=np.int16)
        self._len = np.zeros(b, dtype=np.int64)
        self._open = np.zeros(b, dtype=np.bool_)
        self._mover = np.zeros(b, dtype=np.int64)
        self._before = np.zeros((b, state.num_sides), dtype=np.int32)
        self._hand_no = np.zeros(b, dtype=np.int64)
        self._deal: list[ExplicitDeal | None] = [None] * b
        self._deal_id: list[DealId | None] = [None] * b
        self.begin(state.all_rows, deals)

    def begin(self, rows: npt.ArrayLike, deals: Sequence[ExplicitDeal] | None = None) -> None:
        """Start following the hands just dealt on ``rows`` (their explicit deals if given)."""
        idx = np.asarray(rows, dtype=np.int64).reshape(-1)
        if deals is not None and len(deals) != idx.size:
            raise ValueError(f"{len(deals)} deals for {idx.size} rows")
        st = self.state
        for i, b in enumerate(idx.tolist()):
            deal, deal_id = (deals[i], None) if deals is not None else self._derive(b)
            self._check_deal(b, deal)
            self._deal[b], self._deal_id[b] = deal, deal_id
        self._len[idx] = 0
        self._open[idx] = ~(st.terminated[idx] | st.truncated[idx])  # a finished row has no hand
        self._mover[idx] = st.current_player[idx]
        self._before[idx] = st.scores[idx]
        self._hand_no[idx] = st.hand_number[idx]

    def _derive(self, b: int) -> tuple[ExplicitDeal, DealId]:
        """The deal the engine made for row ``b``'s current hand: the shuffle of its DealId and
        hand number (what ``explicit_deal`` computes, without building a state per hand)."""
        st = self.state
        d = st.data[b]
        order = np.empty(st.rules.deck_size, dtype=np.int32)
        shuffled_order(st.params, int(d[F_SEED_LO]), int(d[F_SEED_HI]), int(d[F_DEAL_ROW]),
                       int(d[F_DEAL_INDEX]), int(d[F_HAND_NO]), order)
        return ExplicitDeal(order.astype(np.int8), int(d[F_DEALER])), st.deal_id(b)

    def _check_deal(self, b: int, deal: ExplicitDeal) -> None:
        """The stock left after the deal is the bottom of the deck order: a cheap check that the
        row was dealt from ``deal``."""
        stock = self.state.stock(b)
        order = np.asarray(deal.order)
        if order.shape[0] < stock.shape[0] or not np.array_equal(order[: stock.shape[0]], stock) \
                or int(deal.dealer) != int(self.state.dealer[b]):
            raise RecordError(f"row {b}: its cards do not come from the deal it is recorded with "
                              f"(dealt with an ExplicitDeal? pass deals= to begin())")

    def record(self, actions: npt.ArrayLike, result: StepResult,
               rows: npt.ArrayLike | None = None) -> list[HandRecord]:
        """Note the actions of one ``step(state, actions, rows)``; returns the records of the hands
        it ended. Illegal (unapplied) actions and rows not being followed are ignored."""
        st = self.state
        idx = st.all_rows if rows is None else np.asarray(rows, dtype=np.int64).reshape(-1)
        acts = np.asarray(actions, dtype=np.int64).reshape(-1)
        ok = self._open[idx] & ~result.illegal
        if not ok.all():
            self._check_closed(idx[~ok & ~result.illegal])
        r = idx[ok]
        if r.size == 0:
            return []
        pos = self._len[r]
        if int(pos.max()) >= self._actions.shape[1]:
            self._actions = np.pad(self._actions, ((0, 0), (0, self._actions.shape[1])))
        self._actions[r, pos] = acts[ok]
        self._len[r] += 1
        movers = self._mover[r]
        self._mover[r] = st.current_player[r]
        events, truncated = result.events[ok], result.truncated[ok]
        ended = np.flatnonzero(((events & EV_HAND_END) != 0) | truncated)
        if ended.size == 0:
            return []
        rows_ended = r[ended]
        outcome = zip(rows_ended.tolist(), events[ended].tolist(), movers[ended].tolist(),
                      st.scores[rows_ended].tolist(), st.hand_scores[rows_ended].tolist(),
                      st.score_parts[rows_ended].tolist(), st.game_result[rows_ended].tolist(),
                      strict=True)
        out = [self._finish(*o) for o in outcome]
        self._open[rows_ended] = False
        more = rows_ended[~(st.terminated[rows_ended] | st.truncated[rows_ended])]
        if more.size:  # "game" episodes: the next hand is already dealt
            self.begin(more)
        return out

    def _check_closed(self, rows: npt.NDArray[np.int64]) -> None:
        """A row not followed must be finished (stepping it is a no-op); a live one was re-dealt
        without ``begin``, and its hand would be lost."""
        st = self.state
        live = rows[~(st.terminated[rows] | st.truncated[rows])]
        if live.size:
            raise RecordError(f"rows {live[:8].tolist()} were dealt a new hand without "
                              "BatchRecorder.begin(rows)")

    def _finish(self, b: int, events: int, mover: int, scores: list[int], hand_scores: list[int],
                parts: list[list[int]], game_result: int) -> HandRecord:
        """The record of row ``b``'s hand, ended by a step with ``events`` made by ``mover``."""
        if not events & EV_HAND_END:
            return self._record(b, "step_cap", scores)
        went = bool(events & EV_WENT_OUT)
        end = ("went_out" if went else "stock_out" if events & EV_STOCK_OUT_END
               else "no_discard" if events & EV_NO_DISCARD_END else "last_red3")
        rec = self._record(b, end, scores)
        rec.hand_scores, rec.score_parts = hand_scores, parts
        rec.went_out = mover if went else -1
        rec.concealed = bool(events & EV_CONCEALED)
        rec.game_result = game_result if events & EV_GAME_END else None
        return rec

    def _record(self, b: int, end: str, scores: list[int]) -> HandRecord:
        deal = self._deal[b]
        assert deal is not None
        return HandRecord(
            rules=self.rules_dict, deal=deal, scores_before=self._before[b].tolist(),
            seats=list(self.seats[b]), actions=self._actions[b, : self._len[b]].tolist(), end=end,
            scores_after=scores, deal_id=self._deal_id[b], hand_number=int(self._hand_no[b]),
            episode=self.episode, meta=dict(self.meta))

    def unfinished(self, rows: npt.ArrayLike | None = None) -> list[HandRecord]:
        """Records of the hands still in progress on ``rows`` (default: all), ``end="unfinished"``:
        what an interrupted game saves. Rows with no action yet are skipped."""
        idx = self.state.all_rows if rows is None else np.asarray(rows, dtype=np.int64).reshape(-1)
        live = idx[self._open[idx] & (self._len[idx] > 0)]
        return [self._record(int(b), "unfinished", self.state.scores[b].tolist()) for b in live]

    def set_seats(self, rows: npt.ArrayLike, seats: Sequence[str]) -> None:
        """Change the seat labels of ``rows`` (e.g. a tournament reseating agents)."""
        for b in np.asarray(rows, dtype=np.int64).reshape(-1).tolist():
            self.seats[b] = [str(s) for s in seats]
