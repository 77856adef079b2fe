"""The rule set: one frozen description of a Canasta variant, and its YAML loader.

Every option of docs/rules.md "Options" is a field whose default is classic Canasta; a preset in
``canasta_env/presets/*.yaml`` holds only its differences. Variants are data, never subclasses.
Fields left ``None`` are derived from the table size (``hand_size``, ``draw_count``,
``go_out_requires``, ``partnerships``); ``resolved()`` fills them in.

The engine receives a resolved ``RuleSet`` and never imports PyYAML; this module is the only place
that reads rules files.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from importlib import resources
from pathlib import Path
from typing import Any

from canasta_env.messages import short_repr
from canasta_env.safe_yaml import load_yaml_mapping, parse_yaml_mapping

CHOICES: dict[str, tuple[str, ...]] = {
    "upcard_policy": ("cover_and_freeze", "keep"),
    "red3_negative_if": ("no_meld", "no_canasta", "player_no_meld", "no_sevens_canasta", "never"),
    "meld_ownership": ("side", "player"),
    "reserve_pickup": ("none", "after_turn", "immediate"),
    "last_card_red3": ("may_meld_no_discard", "end_immediately"),
    "exhausted_stock_take": ("forced_if_layoff", "forced_if_legal", "optional"),
    "seven_discard_rule": ("none", "until_all_players", "until_each_side"),
    "canasta_kinds": ("classic", "four"),
    "tie_rule": ("extra_hand", "draw"),
}

# Values the engine implements today; the loader refuses the others with a clear message instead of
# playing a different game silently (the variants issue lifts these).
SUPPORTED: dict[str, tuple[Any, ...]] = {
    "allow_wild_on_natural_canasta": (True,),
    "min_naturals": (2,),
}

DEFAULT_MELD_TABLE: tuple[tuple[int | None, int], ...] = (
    (None, 15), (0, 50), (1500, 90), (3000, 120)
)
MAX_TABLE_ROWS = 8  # the engine's parameter vector holds 8 rows (layout.P_MTAB_LO)
TABLE_LOWER_RANGE = (-1_000_000, 1_000_000)  # game scores stay within +-target_score's bound
TABLE_MINIMUM_RANGE = (0, 100_000)
MAX_NAME_CHARS = 100
MAX_DEPTH = 3  # a rules file nests mapping > initial_meld_table > row, no deeper
_PRESET_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")


def _default_hand_size(num_players: int) -> int:
    """C4: 15 cards each to 2 players, 13 to 3, 11 to 4; 13 at 5 or 6 (R1, P1)."""
    return {2: 15, 3: 13, 4: 11}.get(num_players, 13)


class RulesError(ValueError):
    """A rules option or file is invalid; the message names the key and the source."""


@dataclass(frozen=True)
class RuleSet:
    """A Canasta variant. Defaults are classic Canasta as docs/rules.md specifies it.

    Each field names the rule id it serves; see docs/rules.md "Options" for the option table.
    """

    name: str = "classic"
    num_players: int = 4  # C4
    partnerships: bool | None = None  # C0, P1: two teams, seats alternating; None -> only at 4 players
    packs: int = 2  # C1
    jokers: int = 4  # C1
    hand_size: int | None = None  # C4: None -> 15 / 13 / 11 for 2 / 3 / 4 players
    reserve_size: int = 0  # R1, P1 (kitty / foot), dealt face down after the hands
    reserve_pickup: str = "none"  # R4 (after_turn), P3 (immediate)
    draw_count: int | None = None  # C7: None -> 2 with 2 players, else 1
    upcard_policy: str = "cover_and_freeze"  # C5
    red3_negative_if: str = "no_meld"  # C10
    red3_bonus: int = 100  # C10
    red3_all_bonus: int = 800  # C10: 0 means no all-threes bonus
    min_naturals: int = 2  # C13
    max_wilds: int = 3  # C13
    wild_le_naturals: bool = True  # C13
    allow_wild_on_natural_canasta: bool = True  # C15
    meld_ownership: str = "side"  # C14, G2
    max_meld_size: int | None = None  # R2, P2: 7 closes a meld at canasta size
    canasta_kinds: str = "classic"  # C15 natural and mixed; R2, P2 "four": + wild and sevens melds
    natural_canasta_bonus: int = 500  # C15 (Railroad's red canasta)
    mixed_canasta_bonus: int = 300  # C15 (Railroad's black canasta)
    wild_canasta_bonus: int = 1000  # R2, P2
    sevens_canasta_bonus: int = 1500  # R2, P2
    pile_take_with_wild: bool = True  # C22: natural + wild takes an unfrozen pile; R6 false
    max_black_three_meld: int | None = 4  # C11: 3 or 4 black threes; R3 null (any number)
    initial_meld_table: tuple[tuple[int | None, int], ...] = DEFAULT_MELD_TABLE  # C16
    go_out_requires: int | str | None = None  # C28: canastas needed, or "each_kind" (R8, P6);
    # None -> 2 with 2 players, else 1
    go_out_needs_discard: bool = False  # C28, R8
    go_out_bonus: int = 100  # C32
    concealed_bonus: int = 200  # C30
    ask_partner: bool = False  # C29
    concealed_requires_minimum: bool = False  # C30
    pile_take_requires_opened_side: bool = False  # C23
    forbid_single_card_pile_take: bool = True  # C25
    last_card_red3: str = "may_meld_no_discard"  # C31
    exhausted_stock_take: str = "forced_if_layoff"  # C31
    seven_discard_rule: str = "none"  # R5, P4
    target_score: int = 5000  # C33
    tie_rule: str = "extra_hand"  # C33
    max_hands: int = 100  # C33 guard, reported as truncation
    max_steps_per_hand: int = 4000  # C31 guard, reported as truncation
    observe_discards: bool = False  # not a rule: each seat's discards this hand join the observation

    def __post_init__(self) -> None:
        _validate(self, "<RuleSet>")

    @property
    def num_sides(self) -> int:
        """Number of scoring sides (partnerships or single players)."""
        return 2 if self.resolved().partnerships else self.num_players

    @property
    def deck_size(self) -> int:
        """Cards in play: 52 per pack plus jokers."""
        return 52 * self.packs + self.jokers

    def resolved(self) -> RuleSet:
        """Return a copy with every table-size default filled in."""
        n = self.num_players
        updates: dict[str, Any] = {}
        if self.partnerships is None:
            updates["partnerships"] = n == 4
        if self.hand_size is None:
            updates["hand_size"] = _default_hand_size(n)
        if self.draw_count is None:
            updates["draw_count"] = 2 if n == 2 else 1
        if self.go_out_requires is None:
            updates["go_out_requires"] = 2 if n == 2 else 1
        return dataclasses.replace(self, **updates) if updates else self

    def minimum_for(self, score: int) -> int:
        """Initial-meld minimum (C16) for a side whose cumulative score is ``score``."""
        need = self.initial_meld_table[0][1]
        for lower, minimum in self.initial_meld_table:
            if lower is None or score >= lower:
                need = minimum
        return need

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (for checkpoints and records); round-trips through ``from_dict``."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["initial_meld_table"] = [list(row) for row in self.initial_meld_table]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "<dict>") -> RuleSet:
        """Build a rule set from plain data, refusing unknown keys and bad values."""
        if not isinstance(data, dict):
            raise RulesError(
                f"{source}: expected a mapping of rule options, got {type(data).__name__}"
            )
        known = {f.name for f in fields(cls)}
        unknown = sorted(map(short_repr, set(data) - known))  # keys need not be strings
        if unknown:
            shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
            raise RulesError(
                f"{source}: unknown rule option(s) {shown}; known options: {', '.join(sorted(known))}"
            )
        kwargs = dict(data)
        if "initial_meld_table" in kwargs:
            kwargs["initial_meld_table"] = _parse_table(kwargs["initial_meld_table"], source)
        try:
            return cls(**kwargs)
        except RulesError as exc:
            raise RulesError(str(exc).replace("<RuleSet>", source, 1)) from None


def _is_int(value: Any, lo: int, hi: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi


def _parse_table(value: Any, source: str) -> tuple[tuple[int | None, int], ...]:
    """The rows of an ``initial_meld_table`` as a tuple of pairs, each bound within the range the
    engine's int32 parameters hold; ``RulesError`` naming the bad row otherwise."""
    if not isinstance(value, (list, tuple)) or not 0 < len(value) <= MAX_TABLE_ROWS:
        raise RulesError(f"{source}: 'initial_meld_table' must be a list of 1 to {MAX_TABLE_ROWS} "
                         f"rows [lower, minimum], got {short_repr(value)}")
    rows = []
    for row in value:
        if not isinstance(row, (list, tuple)) or len(row) != 2:
            raise RulesError(f"{source}: 'initial_meld_table' row {short_repr(row)} is not "
                             "[lower, minimum]")
        lower, minimum = row
        if lower is not None and not _is_int(lower, *TABLE_LOWER_RANGE):
            raise RulesError(f"{source}: 'initial_meld_table' lower bound {short_repr(lower)} is not "
                             f"null or an integer in {list(TABLE_LOWER_RANGE)}")
        if not _is_int(minimum, *TABLE_MINIMUM_RANGE):
            raise RulesError(f"{source}: 'initial_meld_table' minimum {short_repr(minimum)} is not "
                             f"an integer in {list(TABLE_MINIMUM_RANGE)}")
        rows.append((lower, minimum))
    return tuple(rows)


def _check(cond: bool, source: str, key: str, value: Any, what: str) -> None:
    if not cond:
        raise RulesError(f"{source}: option {key!r} = {short_repr(value)} is invalid: {what}")


_INT_RANGES: dict[str, tuple[int, int]] = {
    "num_players": (2, 6),
    "packs": (1, 12),
    "jokers": (0, 24),
    "reserve_size": (0, 20),
    "red3_bonus": (0, 10_000),
    "red3_all_bonus": (0, 10_000),
    "min_naturals": (1, 3),
    "max_wilds": (1, 7),  # 0: an opening hand can reach a dead end with no legal move
    "natural_canasta_bonus": (0, 10_000),
    "mixed_canasta_bonus": (0, 10_000),
    "wild_canasta_bonus": (0, 10_000),
    "sevens_canasta_bonus": (0, 10_000),
    "go_out_bonus": (0, 10_000),
    "concealed_bonus": (0, 10_000),
    "target_score": (1, 1_000_000),
    "max_hands": (1, 10_000),
    "max_steps_per_hand": (100, 1_000_000),
}
_OPTIONAL_INT_RANGES: dict[str, tuple[int, int]] = {
    "hand_size": (1, 20),
    "draw_count": (1, 2),
    "max_meld_size": (7, 7),
    "max_black_three_meld": (3, 48),
}
_BOOLS = (
    "wild_le_naturals", "allow_wild_on_natural_canasta", "go_out_needs_discard", "ask_partner",
    "concealed_requires_minimum", "pile_take_requires_opened_side", "forbid_single_card_pile_take",
    "pile_take_with_wild", "observe_discards",
)


def _validate(r: RuleSet, source: str) -> None:
    for key, (lo, hi) in _INT_RANGES.items():
        v = getattr(r, key)
        _check(_is_int(v, lo, hi), source, key, v, f"expected an integer in [{lo}, {hi}]")
    for key, (lo, hi) in _OPTIONAL_INT_RANGES.items():
        v = getattr(r, key)
        _check(v is None or _is_int(v, lo, hi), source, key, v,
               f"expected null or an integer in [{lo}, {hi}]")
    for key in _BOOLS:
        v = getattr(r, key)
        _check(isinstance(v, bool), source, key, v, "expected true or false")
    _check(r.partnerships is None or isinstance(r.partnerships, bool), source, "partnerships",
           r.partnerships, "expected null, true or false")
    _check(isinstance(r.name, str) and 0 < len(r.name) <= MAX_NAME_CHARS and r.name.isprintable(),
           source, "name", r.name, f"expected a non-empty printable string of at most "
           f"{MAX_NAME_CHARS} characters")
    for key, choices in CHOICES.items():
        v = getattr(r, key)  # a string first: ``array in choices`` raises, naming no option
        _check(isinstance(v, str) and v in choices, source, key, v, f"expected one of {', '.join(choices)}")
    for key, supported in SUPPORTED.items():
        v = getattr(r, key)
        _check(v in supported, source, key, v,
               f"not implemented yet; supported: {', '.join(map(str, supported))}")
    go = r.go_out_requires
    _check(go is None or isinstance(go, str) and go == "each_kind" or _is_int(go, 0, 4), source,
           "go_out_requires", go,
           "expected null, an integer in [0, 4] or each_kind")
    four = r.canasta_kinds == "four"
    _check(four == (r.max_meld_size is not None), source, "canasta_kinds", r.canasta_kinds,
           "the four canasta kinds (R2, P2) come with max_meld_size: 7, and only with it")
    _check(four == (go == "each_kind"), source, "go_out_requires", go,
           "each_kind goes with canasta_kinds: four, and four kinds need each_kind")
    _check(r.reserve_size == 0 or four, source, "reserve_size", r.reserve_size,
           "a kitty or foot (R4, P3) joins the hand when a canasta closes: it needs canasta_kinds: four")
    _check(r.reserve_pickup == "none" or r.reserve_size > 0, source, "reserve_pickup",
           r.reserve_pickup, "a pickup rule needs reserve_size > 0")
    _check(r.reserve_size == 0 or r.reserve_pickup != "none", source, "reserve_size",
           r.reserve_size, "a reserve needs reserve_pickup: after_turn or immediate")
    _check(r.seven_discard_rule == "none" or four, source, "seven_discard_rule",
           r.seven_discard_rule, "the seven rule (R5, P4) needs canasta_kinds: four")
    _check(r.red3_negative_if != "no_sevens_canasta" or four, source, "red3_negative_if",
           r.red3_negative_if, "no_sevens_canasta needs canasta_kinds: four")
    if r.partnerships:
        _check(r.num_players in (4, 6), source, "partnerships", r.partnerships,
               "partnerships are two teams of 2 or 3 players: 4 or 6 players")
    if r.ask_partner:
        _check(r.num_players == 4 and r.partnerships is not False, source,
               "ask_partner", r.ask_partner, "asking the partner needs a 4-player partnership game")
    table = r.initial_meld_table
    _check(isinstance(table, tuple), source, "initial_meld_table", table,
           "expected a tuple of (lower, minimum) rows")
    _check(table == _parse_table(table, source), source, "initial_meld_table", table,
           "expected a tuple of (lower, minimum) tuples")
    _check(table[0][0] is None, source,
           "initial_meld_table", table, "the first row's lower bound must be null (minus infinity)")
    lowers = [lo for lo, _ in table[1:]]
    ints = [x for x in lowers if isinstance(x, int)]
    rising = all(a < b for a, b in zip(ints, ints[1:], strict=False))
    _check(len(ints) == len(lowers) and rising, source, "initial_meld_table", table,
           "lower bounds must be increasing integers (a row whose bound repeats the one before is "
           "never used)")
    hand = r.hand_size if r.hand_size is not None else _default_hand_size(r.num_players)
    _check(hand * r.num_players + r.reserve_size * r.num_players < 52 * r.packs + r.jokers - 10,
           source, "hand_size", r.hand_size, "the deal does not leave a stock")


def preset_names() -> list[str]:
    """Names of the rule presets shipped with the package."""
    files = resources.files("canasta_env") / "presets"
    return sorted(p.name[:-5] for p in files.iterdir() if p.name.endswith(".yaml"))


LATER_OPTIONS: dict[str, Any] = {"observe_discards": False}
"""Options added after files that hold a rules dict (records, saved web games, tournament settings)
were first written, with the value such a file was played under when it lacks the key."""


def with_later_options(written: Any, current: Mapping[str, Any]) -> Any:
    """``written``, a rules dict read from a file to compare with ``current``, with each of
    ``LATER_OPTIONS`` that ``current`` has and it lacks (a file older than the option stays readable:
    none of them changes play); anything else unchanged."""
    if not isinstance(written, dict):
        return written
    return {**{k: v for k, v in LATER_OPTIONS.items() if k in current and k not in written}, **written}


def without_later_defaults(rules: Mapping[str, Any]) -> dict[str, Any]:
    """``rules`` without each of ``LATER_OPTIONS`` at the value files older than it were played under:
    the inverse of ``with_later_options``, for an id that must not change when an option is added."""
    return {k: v for k, v in rules.items() if not (k in LATER_OPTIONS and v == LATER_OPTIONS[k])}


def load_rules(spec: str | Path | RuleSet | dict[str, Any], **overrides: Any) -> RuleSet:
    """Resolve a rule set from a preset name, a YAML file, a dict or a ``RuleSet``.

    ``overrides`` replace single options (validated like file keys). Unknown keys, bad values and
    unreadable files (see ``canasta_env.safe_yaml``) raise ``RulesError`` naming the key and the
    file.
    """
    if isinstance(spec, RuleSet):
        base, source = spec.to_dict(), f"<RuleSet {spec.name}>"
    elif isinstance(spec, dict):
        base, source = dict(spec), "<dict>"
    elif isinstance(spec, (str, Path)):
        base, source = _read_yaml(spec)
    else:
        raise RulesError(f"rules must be a preset name, a YAML file, a dict or a RuleSet, got "
                         f"{type(spec).__name__} {short_repr(spec)}")
    if isinstance(spec, RuleSet):
        _check_table_change(base, overrides, source)
    base.update(overrides)
    if overrides:
        source += f" with overrides {sorted(overrides)}"
    return RuleSet.from_dict(base, source).resolved()


TABLE_SIZE_DEFAULTS = ("partnerships", "hand_size", "draw_count", "go_out_requires")  # see resolved()


def _check_table_change(base: dict[str, Any], overrides: dict[str, Any], source: str) -> None:
    """Refuse a ``num_players`` override on a loaded ``RuleSet``, whose table-size options are filled
    in: it would keep the old table's hand size, draws and partnerships in silence, where the same
    preset loaded by name fills in the new table's (options a file or dict gives stay as given)."""
    if "num_players" not in overrides or overrides["num_players"] == base.get("num_players"):
        return
    kept = [k for k in TABLE_SIZE_DEFAULTS if base.get(k) is not None and k not in overrides]
    if kept:
        raise RulesError(f"{source}: num_players {short_repr(overrides['num_players'])} would keep "
                         f"{', '.join(kept)} of its {short_repr(base.get('num_players'))}-player table; "
                         "load the preset or file by name with num_players, or give those options too")


def _is_file_spec(spec: str | Path) -> bool:
    """Whether ``spec`` names a file rather than a preset: a Path, a ``.yaml``/``.yml`` name, a
    name with a directory part, or anything that exists on disk."""
    if isinstance(spec, Path) or spec.endswith((".yaml", ".yml")) or "/" in spec or "\\" in spec:
        return True
    try:
        return Path(spec).exists()
    except (OSError, ValueError):  # a name too long for the OS, a NUL byte
        return False


def _read_yaml(spec: str | Path) -> tuple[dict[str, Any], str]:
    """The options of a rules file or a shipped preset, and the name messages give them."""
    if isinstance(spec, str) and not spec.strip():
        raise RulesError(f"empty rules name {spec!r}; give a preset ({', '.join(preset_names())}) "
                         "or a YAML file")
    if _is_file_spec(spec):
        return load_yaml_mapping(spec, "rule options", error=RulesError, string_keys=False,
                                 max_depth=MAX_DEPTH), str(spec)
    name = str(spec)
    res = resources.files("canasta_env") / "presets" / f"{name}.yaml"
    if not _PRESET_NAME.fullmatch(name) or not res.is_file():
        raise RulesError(f"unknown rules preset {short_repr(name)} (and no such file); presets: "
                         f"{', '.join(preset_names())}")
    source = f"preset {name} ({name}.yaml)"
    return parse_yaml_mapping(res.read_bytes(), source, "rule options", error=RulesError,
                              string_keys=False, max_depth=MAX_DEPTH), source
