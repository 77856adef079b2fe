"""The style population: named profiles of the heuristic player that play visibly different games.

A profile is a set of ``HeuristicConfig`` fields changed from the rules' defaults
(``HeuristicConfig.for_rules``). Agents are named ``heuristic:PROFILE``, optionally followed by
fields, ``heuristic:pile_fighter,freeze_pile=6``, or fields alone, ``heuristic:go_out_margin=-1000``;
``make_agent("heuristic", rules, style="eager")`` is the same. docs/agents.md describes each
profile's play and its measured statistics.

Profiles marked ``held_out`` are never trained against (``TRAINING_STYLES`` leaves them out): they
exist to measure how an agent does against a style it has never met.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from agents.rule_based.heuristic_config import FIELD_RANGES, GO_OUT_NEVER, HeuristicConfig
from canasta_env.messages import short_repr
from canasta_env.rules import RuleSet

NEVER = GO_OUT_NEVER  # a go-out margin no lead reaches
PILE_NEVER = FIELD_RANGES["pair_take_pile"].high  # a pile size no pile reaches


@dataclass(frozen=True)
class Style:
    """One profile: what it plays like, the config fields it changes, and the pile thresholds it
    uses with a two-card draw (2 players) or a one-card draw (3-4 players)."""

    summary: str
    fields: dict[str, float]
    two_card: dict[str, float] = dataclasses.field(default_factory=dict)
    one_card: dict[str, float] = dataclasses.field(default_factory=dict)
    held_out: bool = False


# Pile thresholds better than the defaults with a two-card draw (measured: 0.54-0.55 against the
# heuristic on their own); the profiles take them unless they say otherwise.
PATIENT_PILE = {"pair_take_pile": 5.0, "wild_take_pile": 6.0}

STYLES: dict[str, Style] = {
    "eager": Style("opens at once and goes out at the first chance unless 300 points behind: holds no "
                   "cards back, discards with half the usual care",
                   {"go_out_margin": -300.0, "keep_cards": 0.0, "danger_weight": 0.5}, PATIENT_PILE),
    "hoarder": Style("holds cards back (melds only while five stay in hand) and goes out only when an "
                     "opponent is about to, or the stock is nearly gone",
                     {"go_out_margin": NEVER, "keep_cards": 5.0, "late_stock": 3.0, "threat_hand": 1.0},
                     PATIENT_PILE),
    "pile_fighter": Style("fights for the pile: takes a pile of three with a pair (two with a one-card "
                          "draw), keeps pairs to take it with, and freezes a pile of six with a wild",
                          {"freeze_pile": 6.0, "freeze_cost": 100.0, "pair_keep": 100.0},
                          {"pair_take_pile": 3.0, "wild_take_pile": 4.0, "layoff_take_pile": 4.0},
                          {"pair_take_pile": 2.0, "wild_take_pile": 2.0}),
    "builder": Style("builds canastas first: keeps three cards back and goes out only 400 points ahead",
                     {"go_out_margin": 400.0, "keep_cards": 3.0}, PATIENT_PILE, held_out=True),
    "defensive": Style("discards to deny: four times the danger weight, black threes first, freezes a pile "
                       "of six, and goes out early when an opponent nears the end",
                       {"danger_weight": 4.0, "b3_pile": 0.0, "freeze_pile": 6.0, "freeze_cost": 60.0,
                        "threat_hand": 6.0, "late_stock": 12.0}, PATIENT_PILE, held_out=True),
    "pile_hoarder": Style("opens only by taking the pile: holds its hand unopened (no meld from it after a "
                          "stock draw) until a pair takes a pile of three (two with a one-card draw), and "
                          "keeps its pairs for it",
                          {"hold_open": 1.0, "open_take_discount": 2.0, "pair_keep": 100.0},
                          PATIENT_PILE, {"open_take_discount": 2.0}),
    "freezer": Style("saves wild cards: keeps two in hand (melded only once going out is allowed or an "
                     "opponent is about to go out) and discards one to freeze a pile of four",
                     {"wild_keep": 2.0, "freeze_pile": 4.0, "freeze_cost": 40.0}, PATIENT_PILE),
    "dumper": Style("melds early and dumps: lays down everything it can (wilds too, onto any meld), "
                    "discards its high cards first and goes out at the first chance",
                    {"keep_cards": 0.0, "wild_free": 1.0, "wild_min_meld": 3.0, "value_weight": -1.5,
                     "go_out_margin": -1000.0}, PATIENT_PILE),
    "concealed": Style("plays to go out concealed: melds nothing until its hand can go out in one turn "
                       "(or the stock runs low), takes only a big pile, goes out at once",
                       {"hold_open": 1.0, "go_out_margin": -1000.0, "late_stock": 12.0},
                       {"pair_take_pile": 12.0, "layoff_take_pile": 12.0},
                       {"pair_take_pile": 8.0, "wild_take_pile": PILE_NEVER}, held_out=True),
    "fisher": Style("fishes with its discards: throws one of three of a kind so that the pair left takes "
                    "the pile when an opponent follows with that rank; keeps pairs",
                    {"fish": 150.0, "pair_keep": 80.0, "danger_weight": 0.7}, PATIENT_PILE, held_out=True),
    "slow_builder": Style("keeps a large hand: starts a new meld only while six cards stay in hand and "
                          "goes out only with a canasta more than the rules ask",
                          {"hold_new": 4.0, "go_out_extra": 1.0}, PATIENT_PILE, held_out=True),
    "rusher": Style("fights for the pile and races out: takes it whenever a pair allows, holds nothing "
                    "back, goes out at the first chance unless 300 points behind",
                    {"go_out_margin": -300.0, "keep_cards": 0.0, "danger_weight": 0.7},
                    {"pair_take_pile": 4.0, "wild_take_pile": 6.0},
                    {"pair_take_pile": 2.0, "wild_take_pile": 3.0}, held_out=True),
    # found by the rule-space exploiter (canasta exploit --family heuristic) against a self-play agent,
    # its fields rounded (docs/strength.md)
    "ambusher": Style("waits concealed, then races: melds nothing from its hand until it can go out in one "
                      "turn, takes only a pile of 18 with a pair, keeps three wilds and its pairs; once an "
                      "opponent has the canastas going out needs, it melds everything and goes out at the "
                      "first chance; discards with no thought for what the pile gives away",
                      {"hold_open": 1.0, "open_take_discount": 2.3, "wild_keep": 3.0, "wild_min_meld": 4.0,
                       "go_out_margin": 2400.0, "go_out_extra": 1.0, "threat_hand": 17.0, "late_stock": 6.5,
                       "card_estimate": 36.0, "keep_cards": 1.0, "hold_new": 5.0, "pair_keep": 70.0,
                       "danger_weight": 0.0, "value_weight": 1.7, "fish": 8.0, "b3_pile": 79.0,
                       "freeze_pile": 100.0, "freeze_cost": 270.0},
                      {"pair_take_pile": 17.5, "wild_take_pile": 58.0, "layoff_take_pile": 40.0},
                      held_out=True),
    # found by the rule-space exploiter asked for a profile that beats the plain heuristic, the eager
    # profile and zoo:classic_2p at once (canasta exploit --also), fields rounded (docs/strength.md)
    "stalker": Style("a strong all-round player: holds its hand unopened until it takes the pile (a pile "
                     "of 18 with a pair), keeps four wilds in hand until it may go out, discards with "
                     "eight times the usual care and baits with one of three; goes out once it has a "
                     "canasta more than going out needs, or at once when an opponent nears the end",
                     {"hold_open": 1.0, "open_take_discount": 1.0, "wild_keep": 4.0, "wild_min_meld": 5.0,
                      "go_out_margin": -1400.0, "go_out_extra": 1.0, "dump_canastas": 2.0,
                      "threat_hand": 7.0, "late_stock": 2.0, "card_estimate": 26.0, "keep_cards": 3.0,
                      "hold_new": 5.5, "pair_keep": 40.0, "danger_weight": 8.0, "value_weight": 2.8,
                      "fish": 80.0, "b3_pile": 30.0, "freeze_pile": 31.0, "freeze_cost": 350.0},
                     {"pair_take_pile": 18.0, "wild_take_pile": 55.0, "layoff_take_pile": 41.0},
                     held_out=True),
}

TRAINING_STYLES: tuple[str, ...] = tuple(name for name, s in STYLES.items() if not s.held_out)
HELD_OUT_STYLES: tuple[str, ...] = tuple(name for name, s in STYLES.items() if s.held_out)
FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(HeuristicConfig))


def style_agent_names(held_out: bool | None = None) -> list[str]:
    """``heuristic`` and ``heuristic:PROFILE`` for every profile (only the held-out ones with
    ``held_out=True``; ``heuristic`` and the training ones with ``False``)."""
    names = [] if held_out else ["heuristic"]
    return names + [f"heuristic:{name}" for name, s in STYLES.items()
                    if held_out is None or s.held_out == held_out]


def style_config(spec: str, rules: RuleSet) -> HeuristicConfig:
    """The config that ``spec`` names: ``PROFILE``, ``PROFILE,FIELD=VALUE,...`` or ``FIELD=VALUE,...``
    over the rules' defaults. Errors name the part of ``spec`` that is wrong."""
    if not isinstance(spec, str) or not spec.strip():
        what = "is empty" if isinstance(spec, str) else "is not a string"
        raise ValueError(f"heuristic style {short_repr(spec)} {what}; name a profile "
                         f"({', '.join(STYLES)}) or FIELD=VALUE pairs")
    changes: dict[str, float] = {}
    given: set[str] = set()  # FIELD=VALUE fields: each once (they may override the profile's)
    for i, part in enumerate(p.strip() for p in spec.split(",")):
        if "=" not in part:
            if i > 0 or part not in STYLES:
                where, what = ("first", "is not a profile") if i == 0 else (
                    f"part {i + 1}", "is a profile, but only the first part may name one" if part in STYLES
                    else "is not FIELD=VALUE (only the first part may name a profile)")
                raise ValueError(f"heuristic style {short_repr(spec)}: {short_repr(part)} ({where}) {what}; "
                                 f"profiles: {', '.join(STYLES)} (first), then FIELD=VALUE")
            style = STYLES[part]
            two_card = (rules.resolved().draw_count or 1) >= 2
            changes.update(style.fields, **(style.two_card if two_card else style.one_card))
            continue
        key, _, text = (x.strip() for x in part.partition("="))
        if key not in FIELDS:
            raise ValueError(f"heuristic style {short_repr(spec)}: unknown field {short_repr(key)}; "
                             f"fields: {', '.join(FIELDS)}")
        if key in given:
            raise ValueError(f"heuristic style {short_repr(spec)}: {key} is given twice")
        given.add(key)
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise ValueError(f"heuristic style {short_repr(spec)}: {key} = {short_repr(text)} is not a "
                             "finite number")
        if not FIELD_RANGES[key].contains(value):
            raise ValueError(f"heuristic style {short_repr(spec)}: {key} = {short_repr(text)} is outside "
                             f"its range {FIELD_RANGES[key]}")
        changes[key] = value
    return dataclasses.replace(HeuristicConfig.for_rules(rules), **changes)
