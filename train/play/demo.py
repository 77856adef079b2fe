"""``canasta demo``: one hand played by random agents, shown at a few moments, then its score.

A short tour for new users of what the engine holds: the omniscient table view of
``canasta_env.engine.render.render`` at the deal, halfway through and at the end of the hand, then
each side's score split into the parts of ``layout.PART_NAMES``. Never imports torch.
"""

from __future__ import annotations

from typing import Any

HAND_END_TEXT = {  # layout.HE_* -> how the hand ended
    1: "P{mover} went out",
    2: "the stock ran out",
    3: "the last stock card was a red three",
    4: "nobody could discard",
    5: "the step cap was hit (truncated)",
}


def play_hand(rules: Any, seed: int) -> tuple[list[Any], int, int, int]:
    """Play one hand with ``RandomAgent`` on a batch of one.

    Returns:
        (snapshot of the state before every decision and after the last, the seat that made the
        last decision, the last step's event bits, number of decisions).
    """
    import numpy as np

    from canasta_env.engine import clone, init, step
    from canasta_env.policy import RandomAgent

    state = init(rules, 1, seed)
    agent, rng = RandomAgent(), np.random.default_rng(seed)
    no_obs = np.empty((1, 0), np.float32)  # the random agent ignores observations
    snapshots, mover, events = [clone(state)], -1, 0
    while not (state.terminated[0] or state.truncated[0]):
        mover = int(state.current_player[0])
        result = step(state, agent.act(no_obs, state.legal_action_mask, rng))
        events = int(result.events[0])
        snapshots.append(clone(state))
    return snapshots, mover, events, len(snapshots) - 1


def score_lines(state: Any, mover: int, events: int, decisions: int) -> list[str]:
    """How the hand ended and each side's score parts, hand total and game score."""
    from canasta_env.engine.layout import EV_CONCEALED, PART_NAMES

    how = HAND_END_TEXT.get(int(state.hand_end[0]), "the hand ended").format(mover=mover)
    if events & EV_CONCEALED:
        how += " concealed"
    lines = [f"=== hand over after {decisions} decisions: {how}"]
    cols = [*PART_NAMES, "hand total", "game score"]
    width = max(len(c) for c in cols) + 1
    lines.append(" " * 16 + "".join(c.rjust(width) for c in cols))
    for side in range(state.num_sides):
        seats = " ".join(f"P{p}" for p in range(state.num_players) if p % state.num_sides == side)
        values = [*state.score_parts[0, side], state.hand_scores[0, side], state.scores[0, side]]
        lines.append(f"side {side} ({seats})".ljust(16) + "".join(str(int(v)).rjust(width)
                                                                for v in values))
    return lines
