"""The agent protocol and the uniform random policy (so adapters need nothing above the engine),
and the seam through which env adapters build agents by name without importing the layer above.

An agent maps a batch of observations and legal-action masks to one action per row:
``act(observations, legal_action_mask, rng) -> int64 (B,)``, -1 for a row without a legal action.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
from numba import njit

from canasta_env.engine.actions import NUM_ACTIONS
from canasta_env.engine.core import check_actions
from canasta_env.engine.rng import GOLDEN, M1, mix64_array
from canasta_env.messages import one_line


class Agent(Protocol):
    """Batched agent: sees only observations and masks, never the engine state.

    An agent may set ``needs_observations = False`` (the random agent does) so that env loops can
    skip encoding observations for it. Env loops pass a ``RowRandom`` whose ``rows`` attribute
    names the env rows being acted for, and call an agent's optional
    ``new_episode(rows, uniforms)`` when those envs start an episode (a pool of opponents uses
    both to keep one member per episode).
    """

    def act(self, observations: npt.NDArray[np.float32], legal_action_mask: npt.NDArray[np.bool_],
            rng: np.random.Generator) -> npt.NDArray[np.int64]: ...


AGENT_FACTORY_GROUP = "canasta_rl.agent_factory"  # entry points: name -> module:callable
_factory: Callable[..., Any] | None = None


def set_agent_factory(factory: Callable[..., Any] | None) -> None:
    """Install the function that builds an agent from its name and the rules (``agents.make_agent``
    installs itself on import; ``None`` clears it)."""
    global _factory
    _factory = factory


def agent_by_name(name: str, rules: Any) -> Any:
    """The agent ``name`` names for ``rules``, built by the installed factory, else by the one a
    package declares under the entry-point group ``canasta_rl.agent_factory`` (this package's own
    ``agents`` declares ``agents:make_agent``). The env adapters call this for opponents given by
    name, so the engine's layer never imports the agents' layer."""
    if _factory is None:
        from importlib.metadata import entry_points

        found = sorted(entry_points(group=AGENT_FACTORY_GROUP), key=lambda e: e.name)
        if not found:
            raise ValueError(f"agent {name!r} given by name, but no agent factory is installed: import "
                             "agents (pip install canasta-rl) or pass an agent object")
        set_agent_factory(found[0].load())
    assert _factory is not None
    return _factory(name, rules)


@njit(cache=True)
def legal_counts(mask, rows):
    """Number of legal actions of each listed row."""
    out = np.zeros(rows.shape[0], np.int64)
    for i in range(rows.shape[0]):
        for a in range(mask.shape[1]):
            out[i] += mask[rows[i], a]
    return out


@njit(cache=True, inline="always")
def pick_in_range(row_mask, lo, hi, u):
    """The legal action at position floor(u * number legal) among ``row_mask[lo:hi]``'s legal
    actions; -1 if there is none."""
    n = 0
    for a in range(lo, hi):
        n += row_mask[a]
    if n == 0:
        return -1
    target = min(int(u * n), n - 1)
    for a in range(lo, hi):
        if row_mask[a]:
            if target == 0:
                return a
            target -= 1
    return -1


@njit(cache=True)
def pick_legal(mask, u):
    """Row b: the legal action at position floor(u[b] * number legal) among its legal actions;
    -1 for a row with none."""
    out = np.empty(mask.shape[0], np.int64)
    for b in range(mask.shape[0]):
        out[b] = pick_in_range(mask[b], 0, mask.shape[1], u[b])
    return out


def check_mask(legal_action_mask: npt.ArrayLike, rows: int | None, who: str) -> npt.NDArray[np.bool_]:
    """``legal_action_mask`` as a C-contiguous ``(B, NUM_ACTIONS)`` bool array, ``B == rows`` when
    given (the observations' rows); a ``ValueError`` naming ``who`` otherwise. The agents' kernels
    index the mask by the observations' rows and the action layout, so a mismatch would read
    outside it."""
    mask = np.ascontiguousarray(legal_action_mask, dtype=np.bool_)
    if mask.ndim != 2 or mask.shape[1] != NUM_ACTIONS or (rows is not None and mask.shape[0] != rows):
        want = f"({rows if rows is not None else 'B'}, {NUM_ACTIONS})"
        raise ValueError(f"{who}: legal_action_mask of shape {mask.shape}; expected {want} (one row "
                         "per observation, one column per action)")
    return mask


def check_legal_mask(legal_action_mask: Any, rows: int | None, who: str) -> npt.NDArray[np.bool_]:
    """``legal_action_mask`` as a C-contiguous, writeable ``(rows, NUM_ACTIONS)`` bool array (any
    number of rows for ``rows=None``), or a one-line ``ValueError`` starting with ``who``: another
    shape (``check_mask``), or entries that are neither booleans nor the numbers 0 and 1 (strings,
    2, -1, 0.5, NaN: read as booleans, each would make an illegal action legal). Every agent's
    ``act`` checks its mask with it, the random agent's too."""
    m = legal_action_mask
    if (type(m) is np.ndarray and m.dtype == np.bool_ and m.ndim == 2 and rows in (None, m.shape[0])
            and m.shape[1] == NUM_ACTIONS and m.flags.c_contiguous and m.flags.writeable):
        return m  # the usual mask, as the engine gives it
    raw = legal_action_mask if isinstance(legal_action_mask, np.ndarray) else None
    if raw is None:
        try:
            raw = np.asarray(legal_action_mask)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{who}: legal_action_mask is not an array ({one_line(exc, 120)})") from None
    mask = check_mask(raw if raw.dtype.kind in "biuf" else np.zeros(raw.shape, np.bool_), rows, who)
    if raw.dtype != np.bool_:
        if raw.dtype.kind == "O":  # Python booleans or numbers, one object each
            try:
                raw = raw.astype(np.float64)
            except (TypeError, ValueError):
                raw = None
        if raw is None or raw.dtype.kind not in "biuf":
            shown = "object" if raw is None else raw.dtype
            raise ValueError(f"{who}: legal_action_mask of dtype {shown}; expected booleans (or the "
                             "numbers 0 and 1)")
        mask = np.ascontiguousarray(raw, dtype=np.bool_)
        odd = (raw != 0) & (raw != 1)
        if odd.any():
            row, col = (int(i) for i in np.argwhere(odd)[0])
            raise ValueError(f"{who}: legal_action_mask row {row}, action {col} is {raw[row, col]}; "
                             "expected booleans (or the numbers 0 and 1)")
    return mask if mask.flags.writeable else mask.copy()


def checked_act(agent: Agent, name: str, obs: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_],
                rng: Any) -> npt.NDArray[np.int64]:
    """``agent.act`` for a batch of decisions, checked: one integer per decision, or a one-line
    ``ValueError`` naming the agent (``name``) for anything else, an exception from ``act`` included."""
    try:
        got = agent.act(obs, mask, rng)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # any agent's code, the user's included (sys.exit too): one line
        raise ValueError(f"agent {name}: act() raised {type(exc).__name__}: {one_line(exc)}") from exc
    return check_actions(got, mask.shape[0], f"agent {name}: act()")


def checked_legal_act(agent: Agent, name: str, obs: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_],
                      rng: Any) -> npt.NDArray[np.int64]:
    """``checked_act`` where every row of ``mask`` has a legal action, and each action must be one of
    them: a ``ValueError`` naming the agent, the action and the row otherwise. For the loops that
    step the engine without its own check (a search's rollouts, a pool's members), where an
    illegal action failed later, elsewhere, or not at all."""
    acts = checked_act(agent, name, obs, mask, rng)
    fits = (acts >= 0) & (acts < mask.shape[1])
    legal = fits.copy()
    legal[fits] = mask[np.flatnonzero(fits), acts[fits]]
    if not legal.all():
        row = int(np.flatnonzero(~legal)[0])
        raise ValueError(f"agent {name}: act() chose action {int(acts[row])} for row {row}, which is not "
                         "legal there")
    return acts


def uniforms(rng: Any, rows: int, who: str) -> npt.NDArray[np.float64]:
    """One uniform in [0, 1) per row, drawn with ``rng.random(rows)`` (a numpy ``Generator``,
    ``RandomState`` or ``RowRandom``), or a one-line ``ValueError`` starting with ``who``. A
    ``Generator``'s or ``RowRandom``'s draws are taken as they come (they cannot be otherwise)."""
    if not callable(getattr(rng, "random", None)):
        raise ValueError(f"{who} needs rng, a numpy Generator (or RowRandom), got {type(rng).__name__}")
    drawn = rng.random(rows)
    if type(rng) is np.random.Generator or isinstance(rng, RowRandom):
        return drawn  # type: ignore[no-any-return]
    try:
        u = np.asarray(drawn, dtype=np.float64)
    except (TypeError, ValueError):
        u = np.full(1, np.nan)
    if u.shape != (rows,):
        raise ValueError(f"{who}: rng.random({rows}) gave shape {u.shape}; expected one uniform per row, "
                         f"shape ({rows},)")
    inside = (u >= 0.0) & (u < 1.0)  # False for NaN
    if not inside.all():
        raise ValueError(f"{who}: rng.random({rows}) gave {u[~inside][0]}, not a uniform in [0, 1)")
    return u


class RandomAgent:
    """Uniform over legal actions: one uniform draw per row from ``rng``."""

    name = "random"
    needs_observations = False  # callers may pass an empty (B, 0) array

    def act(self, observations: npt.NDArray[np.float32], legal_action_mask: npt.NDArray[np.bool_],
            rng: np.random.Generator) -> npt.NDArray[np.int64]:
        mask = check_legal_mask(legal_action_mask, None, "random: act")
        return pick_legal(mask, uniforms(rng, mask.shape[0], "random: act"))  # (it reads u[b])


def random_act(observations: npt.NDArray[np.float32], legal_action_mask: npt.NDArray[np.bool_],
               rng: np.random.Generator) -> npt.NDArray[np.int64]:
    """Functional form of ``RandomAgent().act``."""
    return RandomAgent().act(observations, legal_action_mask, rng)


def stream_keys(seeds: npt.ArrayLike, indices: npt.ArrayLike, salt: int) -> npt.NDArray[np.uint64]:
    """Keys of per-row streams for episode ``indices`` of env ``seeds`` (one stream per purpose
    ``salt``), so a row's randomness depends only on its own seed and episode."""
    s = np.asarray(seeds, dtype=np.uint64)
    i = np.asarray(indices, dtype=np.uint64)
    with np.errstate(over="ignore"):
        k = mix64_array(s + GOLDEN)
        k = mix64_array(k ^ (i * M1 + GOLDEN))
        return mix64_array(k ^ (np.uint64(salt) + GOLDEN))


class RowRandom:
    """One counter-based uniform stream per row, usable where agents expect ``rng.random(B)``.

    Row i's draws depend only on its key and how many draws it has made, so a row of a vectorized
    env draws exactly what the same env alone draws (docs/engine.md: per-row streams keyed like deals).
    ``subset(rows)`` gives a view that draws for, and advances, only those rows.
    """

    def __init__(self, keys: npt.NDArray[np.uint64], counters: npt.NDArray[np.uint64] | None = None,
                 rows: npt.NDArray[np.int64] | None = None) -> None:
        self.keys = keys
        self.counters = np.zeros_like(keys) if counters is None else counters
        self.rows = np.arange(keys.shape[0]) if rows is None else rows

    def rekey(self, rows: npt.NDArray[np.int64], keys: npt.NDArray[np.uint64]) -> None:
        """Start fresh streams for ``rows`` (a new episode)."""
        self.keys[rows] = keys
        self.counters[rows] = 0

    def subset(self, rows: npt.ArrayLike) -> RowRandom:
        """A view over ``rows`` (indices into this view)."""
        return RowRandom(self.keys, self.counters, self.rows[np.asarray(rows, dtype=np.int64)])

    def random(self, size: int | None = None) -> npt.NDArray[np.float64]:
        """One uniform in [0, 1) per row of the view (``size`` must be the view's length)."""
        n = self.rows.shape[0]
        if size is not None and int(np.prod(size)) != n:
            raise ValueError(f"RowRandom draws one number per row ({n} rows), asked for {size}")
        with np.errstate(over="ignore"):
            self.counters[self.rows] += np.uint64(1)
            x = mix64_array(self.keys[self.rows] + self.counters[self.rows] * GOLDEN)
        return (x >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)
