"""Who sits where at a table a person plays, the terminal table and the web table alike.

Both tables seat their people and agents by one rule, so it is written once here: which agent name
plays each seat (``seat_specs``), the agents built once per name (``AgentPool``), the seats
themselves (``build_seats``), which agent advises a human (``adviser``) and what an agent would
play, with a learned policy's probabilities, for the hint panel and the move log (``top_choices``).
Every agent's move is checked (``agent_move``): an agent that raises, returns no integer action
(``None``, floats such as 3.7, a wrong count) or an illegal one is an ``AgentError``, one line
naming the agent and its seat.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from canasta_env.messages import one_line, printable, short_repr


class AgentError(ValueError):
    """An agent failed at the table: ``act`` raised, gave no integer action, or an illegal one.
    The message is one line, ``agent 'NAME' (seat N): ...``."""


@dataclass
class Seat:
    """Who plays a seat: an agent, or a human when ``agent`` is None. ``spec`` is the agent name
    the seat was built from (None for a human)."""

    label: str
    agent: Any = None
    spec: str | None = None


class AgentPool:
    """Agents built once per name and shared by every seat and game (a learned policy loads torch
    once)."""

    def __init__(self, rules: Any) -> None:
        self.rules = rules
        self._made: dict[str, Any] = {}

    def get(self, spec: str) -> Any:
        """The agent named ``spec`` (``agents.make_agent``); ``ValueError`` for an unknown name."""
        if spec not in self._made:
            from agents import make_agent

            self._made[spec] = make_agent(spec, self.rules)
        return self._made[spec]


def is_learned(agent: Any) -> bool:
    """Whether ``agent`` gives the probabilities of its moves (a learned policy)."""
    return hasattr(agent, "action_probabilities")


def check_partners(partners: str | None) -> None:
    """Refuse an empty ``--partners``: it read as no option, so the first opponent sat beside the
    human in silence (an unset variable, ``--partners "$AGENT"``)."""
    if partners is not None and not partners.strip():
        raise ValueError(f"--partners {partners!r}: name an agent (leave the option out for the first "
                         "opponent's agent)")


def seat_specs(rules: Any, humans: Sequence[int], opponents: Sequence[str], partner: str | None
               ) -> list[str | None]:
    """The agent name of each seat, None for a human: in partnership games a human's partners play
    ``partner`` (default: the first opponent), the other seats take ``opponents`` in turn."""
    check_partners(partner)
    n, sides = rules.num_players, rules.num_sides
    bad = [h for h in humans if not 0 <= h < n]
    if bad:
        raise ValueError(f"--human: seat(s) {bad} out of range for {n} players (0-{n - 1})")
    if not opponents:
        raise ValueError("name at least one opponent agent")
    specs: list[str | None] = []
    turn = 0
    for p in range(n):
        if p in humans:
            specs.append(None)
        elif rules.partnerships and any(h % sides == p % sides for h in humans):
            specs.append(partner or opponents[0])
        else:
            specs.append(opponents[turn % len(opponents)])
            turn += 1
    if len(opponents) > max(turn, 1):  # an agent named but never seated: a typo, most likely
        raise ValueError(f"--opponent: {len(opponents)} agents named ({' '.join(opponents)}) for the "
                         f"{turn} opponent seat(s) of {rules.name}; name at most {max(turn, 1)}")
    return specs


def seats_from_specs(specs: Sequence[str | None], pool: AgentPool, *, name_paths: bool = True) -> list[Seat]:
    """The seats of ``specs`` (None: a human), each agent from ``pool``. With ``name_paths`` a seat
    whose name is a path (a checkpoint) is labelled by its agent's name; without, by the name as
    given (the web table's saved games and records name their seats that way)."""
    seats = []
    for spec in specs:
        if spec is None:
            seats.append(Seat("human"))
            continue
        agent = pool.get(spec)
        label = getattr(agent, "name", spec) if name_paths and Path(spec).exists() else spec
        seats.append(Seat(label, agent, spec))
    return seats


def build_seats(rules: Any, humans: Sequence[int], opponent: str | Sequence[str], partner: str | None, *,
                pool: AgentPool | None = None, name_paths: bool = True) -> list[Seat]:
    """Seat list: humans where asked, the partner agent beside a human in partnership games, the
    opponent agent (or agents, in turn) elsewhere, one agent object per name (from ``pool``, a new
    one by default). ``name_paths``: see ``seats_from_specs``."""
    opponents = [opponent] if isinstance(opponent, str) else list(opponent)
    specs = seat_specs(rules, humans, opponents, partner)
    return seats_from_specs(specs, pool if pool is not None else AgentPool(rules), name_paths=name_paths)


def adviser(seats: Sequence[Seat], *, learned_only: bool = False) -> Seat | None:
    """The seat whose agent advises a human: the first learned policy, else (unless
    ``learned_only``) the first agent; None if there is none."""
    agents = [s for s in seats if s.agent is not None]
    learned = [s for s in agents if is_learned(s.agent)]
    found = learned or ([] if learned_only else agents)
    return found[0] if found else None


def agent_move(agent: Any, label: str, seat: int | None, observations: np.ndarray, mask: np.ndarray,
               rng: Any) -> int:
    """``agent``'s move on a batch of one, checked as ``agents.match`` checks a match's moves: one
    integer action (3.7 is refused, not played as 3) that ``mask`` allows. The agent gets a copy of
    ``mask``, so changing it cannot make its move legal. ``AgentError`` (one line naming ``label``
    and ``seat``) for an agent that raises, returns anything else or an illegal action."""
    from canasta_env.engine import ACTION_NAMES, NUM_ACTIONS
    from canasta_env.policy import checked_act

    who = short_repr(label) + ("" if seat is None else f" (seat {seat})")
    try:
        action = int(checked_act(agent, who, observations, mask.copy(), rng)[0])
    except ValueError as exc:
        raise AgentError(printable(one_line(exc), 800)) from exc  # no terminal escapes, no surrogates
    if not (0 <= action < NUM_ACTIONS and mask[0, action]):
        name = ACTION_NAMES[action] if 0 <= action < NUM_ACTIONS else "out of range"
        legal = ", ".join(ACTION_NAMES[a] for a in np.flatnonzero(mask[0]))
        raise AgentError(f"agent {who}: act() chose action {short_repr(action)} ({name}), which is not "
                         f"legal now; legal: {legal}")
    return action


def top_moves(agent: Any, observations: np.ndarray, mask: np.ndarray, k: int = 3,
              label: str = "adviser") -> list[tuple[int, float]]:
    """The ``k`` most probable legal moves of a learned policy with their probabilities;
    ``AgentError`` naming ``label`` when ``action_probabilities`` raises (``sys.exit`` too) or gives
    other than probabilities (NaN, which JSON has not, or above 1)."""
    try:
        probs = np.asarray(agent.action_probabilities(observations, mask))[0]
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        raise AgentError(f"agent {short_repr(label)}: action_probabilities() raised {type(exc).__name__}: "
                         f"{printable(one_line(exc), 400)}") from None
    order = np.argsort(-probs, kind="stable")[:k]
    choices = [(int(a), float(probs[a])) for a in order if mask[0, a]]
    bad = [p for _, p in choices if not 0 <= p <= 1]
    if bad:
        raise AgentError(f"agent {short_repr(label)}: action_probabilities() gave {short_repr(bad[0])}, "
                         "not a probability in [0, 1]")
    return choices


def top_choices(agent: Any, observations: np.ndarray, mask: np.ndarray, rng: np.random.Generator, *,
                pick: int | None = None, k: int = 3, label: str = "adviser"
                ) -> list[tuple[int, float | None]]:
    """What ``agent`` would play: a learned policy's ``top_moves``; for any other agent its one
    pick without a probability (``pick`` when it has chosen already, else what it plays now,
    checked by ``agent_move``: ``AgentError`` naming ``label``)."""
    if is_learned(agent):
        choices: list[tuple[int, float | None]] = [(a, p) for a, p in top_moves(agent, observations, mask, k,
                                                                                  label)]
        return choices
    if pick is None:
        pick = agent_move(agent, label, None, observations, mask, rng)
    return [(pick, None)]
