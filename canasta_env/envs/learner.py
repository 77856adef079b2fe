"""One learner against injected agents, over a batch of engine rows: the loop that the Gymnasium
env, its VectorEnv and the SB3 VecEnv share, so the three adapters only translate.

Every row is an independent env. After each learner action the row's other seats are played by
the opponent agent (and partner seats by ``partners`` if given) until the learner is to move again
or the episode ends; with ``skip_forced``, learner decisions that have exactly one legal action
are applied too and counted. Randomness (the learner's seat, the agents' sampling) comes from
per-row streams keyed by the env's seed and episode number (``policy.RowRandom``), so row i of a
batch plays exactly what the same env alone plays.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import cast

import numpy as np
import numpy.typing as npt

from canasta_env.engine import (
    DealId,
    ExplicitDeal,
    IllegalActionError,
    State,
    init,
    redeal,
)
from canasta_env.engine.actions import ACTION_NAMES, NUM_ACTIONS
from canasta_env.engine.cards import CARD_VALUES, JOKER, SLOT_KIND, TWO
from canasta_env.engine.core import (
    _check_deal_id,
    _observe_unchecked,
    _reset_rows_unchecked,
    _step_unchecked,
    batch_bytes,
    check_batch_size,
    check_int,
    check_memory,
    short_repr,
)
from canasta_env.engine.layout import EPISODES, F_DEAL_INDEX, pack_params
from canasta_env.engine.observation import obs_dim
from canasta_env.engine.threads import check_threads
from canasta_env.messages import check_choice, one_line
from canasta_env.policy import Agent, RandomAgent, RowRandom, legal_counts, stream_keys
from canasta_env.rules import RuleSet, load_rules

SEAT_SALT, AGENT_SALT, POOL_SALT = 0x5EA7, 0xA6E7, 0x9001
REWARD_MODES = ("margin", "win_loss")
ILLEGAL_POLICIES = ("terminate", "raise")


def side_meld_values(state: State) -> npt.NDArray[np.int64]:
    """(B, sides) card value of each side's melds (the shaping potential's raw material)."""
    slot_values = np.where(SLOT_KIND >= 0, CARD_VALUES[np.maximum(SLOT_KIND, 0)], 0)
    per_owner = ((state.meld_naturals * slot_values).sum(axis=2)
                 + state.meld_jokers.sum(axis=2) * CARD_VALUES[JOKER]
                 + state.meld_twos.sum(axis=2) * CARD_VALUES[TWO]).astype(np.int64)
    sides = state.num_sides
    return per_owner.reshape(per_owner.shape[0], -1, sides).sum(axis=1)  # owner o is on side o % sides


def env_actions(actions: object, n: int, fn: str) -> npt.NDArray[np.int64]:
    """The actions given to ``n`` envs as int64: a numpy integer array or a list of Python ints of
    shape ``(n,)``; ``ValueError`` for floats (3.7 is refused, not played as 3), bools and any other
    shape (a ``(n, 1)`` array is a mistake, not ``n`` actions). Integers out of range stay: the env
    treats them as illegal."""
    try:
        arr = np.asarray(actions)
    except (ValueError, TypeError, OverflowError):
        arr = None
    if arr is not None and arr.dtype == object and arr.ndim <= 1 and all(
            isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_)) for a in arr.flat):
        # Python ints beyond 64 bits (numpy keeps them as objects): out of range like 10**6, so
        # illegal, not "not an integer"
        arr = np.array([min(max(int(a), -1), NUM_ACTIONS) for a in arr.flat],
                       dtype=np.int64).reshape(arr.shape)
    if (arr is not None and arr.ndim == 1 and arr.dtype.kind in "iu"
            and not isinstance(actions, np.ndarray)
            and any(isinstance(a, (bool, np.bool_)) for a in actions)):  # type: ignore[attr-defined]
        # a list [True, 0]: numpy makes ints of it, and True would be played as action 1
        raise ValueError(f"{fn}: actions must be integers, got {short_repr(actions)} (a bool is "
                         "not an action)")
    if arr is None or arr.dtype.kind not in "iu":
        raise ValueError(f"{fn}: actions must be integers, got {short_repr(actions)}"
                         + ("" if arr is None else f" (dtype {arr.dtype})"))
    if arr.shape != (n,):
        raise ValueError(f"{fn}: expected {n} action(s) of shape ({n},), got shape {arr.shape}")
    if arr.dtype.kind == "u":  # keep huge unsigned values out of range rather than wrapped
        arr = np.minimum(arr, NUM_ACTIONS)
    return arr.reshape(n).astype(np.int64, copy=False)


def deal_option(deal: object, fn: str) -> DealId | ExplicitDeal | None:
    """The ``deal`` reset option: ``None``, an ExplicitDeal, or a DealId whose fields are checked
    here, naming the option (a ``(seed, row, index)`` tuple, list or array of shape (3,) is taken as
    one; a 0-d array raised ``TypeError: len() of unsized object``)."""
    if deal is None or isinstance(deal, ExplicitDeal):
        return deal
    if (isinstance(deal, np.ndarray) and deal.shape == (3,)
            or isinstance(deal, (tuple, list)) and len(deal) == 3):
        return _check_deal_id(DealId(*deal), fn, "deal")
    raise ValueError(f"{fn}: option 'deal' must be a DealId (seed, row, index) or an ExplicitDeal, "
                     f"got {short_repr(deal)}")


def vector_env_bytes(rules: RuleSet, episode: str, num_envs: int) -> int:
    """Bytes ``num_envs`` learner envs need: the engine batch (its observations, the encoded
    batch, included) plus, per env, three more observation buffers (the copy handed out and the
    two bounds of the batched space), two more masks and the per-env bookkeeping."""
    params = pack_params(rules, episode)
    return batch_bytes(params, num_envs, 12 * obs_dim(params) + 2 * NUM_ACTIONS + 64)


def hand_reward(points: npt.ArrayLike, mode: str, scale: float) -> npt.NDArray[np.float64]:
    """The reward of hand-score points (a side's margin): ``margin`` mode scales them, ``win_loss``
    keeps their sign. The one reward transform of every adapter (Gym, vector, SB3, PettingZoo)."""
    p = np.asarray(points, dtype=np.float64)
    return np.sign(p) if mode == "win_loss" else p * float(scale)


def check_real(value: object, name: str, fn: str, *, positive: bool = False) -> float:
    """``value`` as a float: an int or float that is finite (and > 0 with ``positive``); else
    ``ValueError`` naming ``fn`` and ``name`` (a NaN or a string would make every reward NaN or fail
    at the first step; a negative scale would reward losing)."""
    import math

    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)) and math.isfinite(value) and (not positive or value > 0)
    if not ok:
        raise ValueError(f"{fn}: {name} must be a finite {'positive ' if positive else ''}number, got "
                         f"{short_repr(value)} ({type(value).__name__})")
    return float(value)  # type: ignore[arg-type]


def default_reward_scale(rules: RuleSet) -> float:
    """1/1000 for classic targets, 1/5000 for the 20000-point variants (docs/training.md)."""
    return 1 / 5000 if rules.target_score >= 20000 else 1 / 1000


@dataclass
class LearnerConfig:
    """Everything fixed when a learner env is constructed (docs/training.md: rules fixed at construction).

    Attributes:
        rules: the rule set (a preset name is resolved).
        opponent: agent for the other sides' seats (uniform random by default), or its name as
            ``agents.make_agent`` takes it (``"heuristic"``, a run directory, ``zoo:NAME``, ...).
        partners: agent (or name) for the learner's partner seats; ``None``: the learner plays them.
            Refused (``ValueError``) for rules without partners (``classic_2p``, ``classic_3p``...).
        learner_seat: fixed seat, or ``None`` to draw one per episode.
        illegal_action: ``"terminate"`` (episode ends with ``illegal_reward``) or ``"raise"``.
        skip_forced: apply learner decisions that have one legal action automatically.
        reward_mode: ``"margin"`` (scaled hand-score margin) or ``"win_loss"`` (+1/0/-1 per hand).
        reward_scale: points to reward; default 1/1000 (1/5000 for 20000-point targets).
        shaping: weight of the potential (own side's melded card value minus the best other
            side's, scaled); potential-based, so a hand's rewards still sum to its scaled margin.
        episode: ``"hand"`` or ``"game"`` (hands to the target).
        illegal_reward: reward of an illegal action under ``"terminate"``.
        engine_threads: threads the engine splits the batch over (``State.threads``); 1 keeps
            the other cores for a learner.
    """

    rules: RuleSet | str = "classic_2p"
    opponent: Agent | str = field(default_factory=RandomAgent)
    partners: Agent | str | None = None
    learner_seat: int | None = None
    illegal_action: str = "terminate"
    skip_forced: bool = True
    reward_mode: str = "margin"
    reward_scale: float | None = None
    shaping: float = 0.0
    episode: str = "hand"
    illegal_reward: float = -1.0
    engine_threads: int = 1

    def __post_init__(self) -> None:
        self.rules = load_rules(self.rules)
        if self.partners is not None and self.rules.num_players == self.rules.num_sides:
            raise ValueError(f"LearnerConfig: partners is set but {self.rules.name} has no partner seats "
                             f"({self.rules.num_players} players, each a side of one); leave partners=None")
        if isinstance(self.opponent, str) or isinstance(self.partners, str):
            from canasta_env.policy import agent_by_name  # the names the CLI takes

            if isinstance(self.opponent, str):
                self.opponent = agent_by_name(self.opponent, self.rules)
            if isinstance(self.partners, str):
                self.partners = agent_by_name(self.partners, self.rules)
        for role in ("opponent", "partners"):
            agent = getattr(self, role)
            if isinstance(agent, type):  # its act() unbound: a TypeError or worse at the first move
                raise ValueError(f"LearnerConfig: {role} is the class {agent.__name__}, not an agent; "
                                 f"pass an instance ({agent.__name__}())")
            if (agent is not None or role == "opponent") and not callable(getattr(agent, "act", None)):
                raise ValueError(f"{role} must be an agent name or an object with act(observations, "
                                 f"legal_action_mask, rng), got {type(agent).__name__}")
        for name, value, allowed in (("illegal_action", self.illegal_action, ILLEGAL_POLICIES),
                                     ("reward_mode", self.reward_mode, REWARD_MODES),
                                     ("episode", self.episode, EPISODES)):
            check_choice(value, name, allowed, "LearnerConfig")
        n = self.rules.num_players
        if self.learner_seat is not None:
            self.learner_seat = check_int(self.learner_seat, "learner_seat", "LearnerConfig")
        if self.learner_seat is not None and not 0 <= self.learner_seat < n:
            raise ValueError(f"learner_seat must be in [0, {n}), got {self.learner_seat}")
        if not isinstance(self.skip_forced, (bool, np.bool_)):
            raise ValueError(f"LearnerConfig: skip_forced must be True or False, got "
                             f"{short_repr(self.skip_forced)}")
        if self.reward_scale is None:
            self.reward_scale = default_reward_scale(self.rules)
        self.reward_scale = check_real(self.reward_scale, "reward_scale", "LearnerConfig", positive=True)
        self.shaping = check_real(self.shaping, "shaping", "LearnerConfig")
        self.illegal_reward = check_real(self.illegal_reward, "illegal_reward", "LearnerConfig")
        self.engine_threads = check_threads(self.engine_threads, "LearnerConfig: engine_threads")


@dataclass
class StepOut:
    """What a batch step returns, per row."""

    obs: npt.NDArray[np.float32]
    rewards: npt.NDArray[np.float64]
    terminated: npt.NDArray[np.bool_]
    truncated: npt.NDArray[np.bool_]
    forced: npt.NDArray[np.int64]
    illegal: npt.NDArray[np.bool_]


class LearnerBatch:
    """``num_envs`` learner envs on one engine batch; refused before anything is allocated when
    ``num_envs`` is not a positive integer or the batch cannot fit in memory."""

    def __init__(self, config: LearnerConfig, num_envs: int, fn: str = "LearnerBatch") -> None:
        self.config = config
        self.rules: RuleSet = config.rules  # type: ignore[assignment]
        num_envs = check_batch_size(num_envs, fn, "num_envs")
        check_memory(vector_env_bytes(self.rules, config.episode, num_envs),
                     f"{num_envs:,} {self.rules.name} envs", fn)
        self.num_envs = num_envs
        self.state: State | None = None
        self.seeds = np.zeros(num_envs, dtype=np.uint64)
        self.seat = np.zeros(num_envs, dtype=np.int64)
        self.illegal_done = np.zeros(num_envs, dtype=bool)
        self.potential = np.zeros(num_envs, dtype=np.float64)
        self.points = np.zeros(num_envs, dtype=np.float64)  # the episode's unshaped learner reward
        self.agent_rng = RowRandom(np.zeros(num_envs, dtype=np.uint64))
        self.stopped: str | None = None  # why the table stopped mid-turn (until a reset of every env)
        n, sides = self.rules.num_players, self.rules.num_sides
        self.num_players, self.num_sides = n, sides

    # ---- episodes ------------------------------------------------------------------------
    def reset(self, seeds: npt.ArrayLike, seat: int | None = None) -> None:
        """Start every env on the first deal of its seed: env i plays DealId(seeds[i], 0, 0);
        ``seat`` fixes the learner's seat for this episode only."""
        seat = self.check_seat(seat, "reset")  # before anything changes: a refused reset keeps the env
        self.seeds = np.asarray(seeds, dtype=np.uint64).reshape(self.num_envs)
        self.state = init(self.rules, self.num_envs, seed=self.seeds, episode=self.config.episode,
                          threads=self.config.engine_threads)
        self.stopped = None
        self._start(np.arange(self.num_envs), seat)

    def reset_rows(self, rows: npt.NDArray[np.int64], deal: DealId | ExplicitDeal | None = None,
                   seat: int | None = None) -> None:
        """Start the listed envs' next deals (same seed, next episode index), or the given
        ``deal``; ``seat`` fixes the learner's seat for this episode only."""
        seat = self.check_seat(seat, "reset")
        if rows.size:
            rows = rows.astype(np.int64, copy=False)
            if deal is None:
                _reset_rows_unchecked(self.require_state(), rows)
            else:
                redeal(self.require_state(), rows, [deal] * rows.size)  # type: ignore[arg-type]
            if self.stopped is not None and np.isin(np.arange(self.num_envs), rows).all():
                self.stopped = None
            self._start(rows, seat)

    def _start(self, rows: npt.NDArray[np.int64], seat: int | None = None) -> None:
        """Deal the listed envs' players up to the learner's first decision (see ``_mid_turn``)."""
        with self._mid_turn():
            self._start_rows(rows, seat)

    def _start_rows(self, rows: npt.NDArray[np.int64], seat: int | None) -> None:
        state = self.require_state()
        if seat is None:
            seat = self.config.learner_seat
        while rows.size:
            index = state.data[rows, F_DEAL_INDEX].astype(np.uint64)
            if seat is None:
                u = RowRandom(stream_keys(self.seeds[rows], index, SEAT_SALT)).random()
                self.seat[rows] = np.minimum((u * self.num_players).astype(np.int64),
                                             self.num_players - 1)
            else:
                self.seat[rows] = seat
            self.agent_rng.rekey(rows, stream_keys(self.seeds[rows], index, AGENT_SALT))
            for agent in (self.config.opponent, self.config.partners):
                new_episode = getattr(agent, "new_episode", None)
                if new_episode is not None:  # e.g. a pool picking one member per episode
                    new_episode(rows, RowRandom(stream_keys(self.seeds[rows], index, POOL_SALT)).random())
            self.illegal_done[rows] = False
            self.potential[rows] = 0.0
            self.points[rows] = 0.0
            self._advance(rows)
            # A deal whose hand ends before the learner's first decision is skipped.
            over = rows[self.done[rows]]
            if over.size:
                _reset_rows_unchecked(state, over)
            rows = over

    def check_seat(self, seat: object, fn: str) -> int | None:
        """A per-episode learner seat: ``None`` or an integer in ``[0, num_players)``; checked
        before a reset changes anything (a seat refused after the deal left the other seats
        unplayed, so the learner's next action was played for an opponent)."""
        if seat is None:
            return None
        s = check_int(seat, "option 'learner_seat'", fn)
        if not 0 <= s < self.num_players:
            raise ValueError(f"{fn}: option 'learner_seat' = {short_repr(s)} is out of range: "
                             f"seats are [0, {self.num_players}) for {self.rules.name}")
        return s

    def require_state(self) -> State:
        if self.state is None:
            raise RuntimeError("reset() must be called before step()")
        return self.state

    # ---- views -----------------------------------------------------------------------------
    @property
    def done(self) -> npt.NDArray[np.bool_]:
        state = self.require_state()
        return state.terminated | state.truncated | self.illegal_done

    def controlled(self, rows: npt.NDArray[np.int64], seats: npt.NDArray[np.int64]
                   ) -> npt.NDArray[np.bool_]:
        """Whether the learner plays ``seats`` in ``rows``."""
        mine = seats == self.seat[rows]
        if self.config.partners is None:
            mine |= (seats % self.num_sides) == (self.seat[rows] % self.num_sides)
        return mine

    def acting_seat(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The learner's seat to observe from: the seat to move if the learner plays it."""
        state = self.require_state()
        cur = state.current_player[rows].astype(np.int64)
        use = self.controlled(rows, cur) & ~self.done[rows]
        return np.where(use, cur, self.seat[rows])

    def observations(self, rows: npt.NDArray[np.int64] | None = None) -> npt.NDArray[np.float32]:
        rows = np.arange(self.num_envs) if rows is None else rows
        return _observe_unchecked(self.require_state(), self.acting_seat(rows), rows)

    def action_masks(self) -> npt.NDArray[np.bool_]:
        """(n, A) legal actions of the learner in each env (all false when an episode is over)."""
        mask = self.require_state().legal_action_mask.copy()
        mask[self.done] = False
        return mask

    # ---- stepping ----------------------------------------------------------------------------
    def step(self, actions: npt.ArrayLike, fn: str = "step") -> StepOut:
        """Apply the learner's action in every live env, then play others until it moves again.
        Integer actions only (``ValueError`` otherwise); an out-of-range one is illegal."""
        state = self.require_state()
        if self.stopped is not None:  # see _mid_turn
            raise ValueError(f"{fn}: the last step or reset stopped mid-turn ({self.stopped}); call "
                             "reset() first")
        acts = env_actions(actions, self.num_envs, fn)
        rows = np.flatnonzero(~self.done)
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        in_range = (acts[rows] >= 0) & (acts[rows] < state.num_actions)
        legal = np.zeros(rows.size, dtype=bool)
        legal[in_range] = state.legal_action_mask[rows[in_range], acts[rows[in_range]]]
        bad = rows[~legal]
        if bad.size and self.config.illegal_action == "raise":
            b = int(bad[0])
            a = int(acts[b])
            name = ACTION_NAMES[a] if 0 <= a < len(ACTION_NAMES) else "out of range"
            legal_names = ", ".join(f"{x} {ACTION_NAMES[x]}" for x in state.legal_actions(b))
            raise IllegalActionError(f"env {b}: action {a} ({name}) is not legal; legal: "
                                     f"{legal_names}")
        illegal = np.zeros(self.num_envs, dtype=bool)
        illegal[bad] = True
        self.illegal_done[bad] = True
        rewards[bad] = self.config.illegal_reward
        good = rows[legal]
        forced = np.zeros(self.num_envs, dtype=np.int64)
        with self._mid_turn():  # from the learner's move to the outcomes: the others' moves between
            if good.size:
                result = _step_unchecked(state, acts[good], good)
                rewards[good] += self._learner_reward(good, result.rewards)
            extra, forced_live = self._advance(good)
            rewards[good] += extra
            forced[good] = forced_live
            self.points[rows] += rewards[rows]
            self._report_outcomes(rows[self.done[rows] & ~self.illegal_done[rows]])
        if self.config.shaping:
            new = self._potential(rows)
            new[self.done[rows]] = 0.0
            rewards[rows] += new - self.potential[rows]
            self.potential[rows] = new
        terminated = state.terminated | self.illegal_done
        return StepOut(self.observations(), rewards, terminated.copy(),
                       state.truncated & ~terminated, forced, illegal)

    def _report_outcomes(self, ended: npt.NDArray[np.int64]) -> None:
        """Tell agents that keep score (``episode_end(rows, points)``, e.g. a league weighting its
        members by results) how the episodes of ``ended`` came out for the learner."""
        if not ended.size:
            return
        for agent in (self.config.opponent, self.config.partners):
            episode_end = getattr(agent, "episode_end", None)
            if episode_end is not None:
                episode_end(ended, self.points[ended])

    def _learner_reward(self, rows: npt.NDArray[np.int64], points: npt.NDArray[np.float32]
                        ) -> npt.NDArray[np.float64]:
        mine = points[np.arange(rows.size), self.seat[rows]]
        return hand_reward(mine, self.config.reward_mode, float(self.config.reward_scale))  # type: ignore[arg-type]

    def _potential(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        if not self.config.shaping:
            return np.zeros(rows.size)
        values = side_meld_values(self.require_state())[rows]  # (n, sides)
        mine = self.seat[rows] % self.num_sides
        own = values[np.arange(rows.size), mine]
        values[np.arange(rows.size), mine] = np.iinfo(np.int32).min
        best_other = values.max(axis=1)
        return (own - best_other) * float(self.config.reward_scale) * self.config.shaping  # type: ignore[arg-type]

    @contextmanager
    def _mid_turn(self) -> Iterator[None]:
        """Mark the batch ``stopped`` when the block raises: an injected agent (its ``act``,
        ``new_episode`` or ``episode_end``) failed or the call was interrupted while rows were between
        the learner's decisions, another seat to move, so ``step`` refuses until a reset of every
        env. Without it a caught failure let the next step play the learner's action for the
        opponent, under the opponent's mask."""
        try:
            yield
        except BaseException as exc:
            text, kind = one_line(exc, 300), type(exc).__name__  # our ValueErrors name the agent
            self.stopped = text if isinstance(exc, ValueError) or text == kind else f"{kind}: {text}"
            raise

    def _advance(self, rows: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.float64],
                                                            npt.NDArray[np.int64]]:
        """Play other seats (and forced learner decisions) until the learner must choose.

        Only rows that just moved can need another move, so the working set shrinks each round.
        """
        state = self.require_state()
        reward = np.zeros(rows.size, dtype=np.float64)
        forced = np.zeros(rows.size, dtype=np.int64)
        where = np.arange(rows.size)  # positions in ``rows`` still being advanced
        while where.size:
            act_rows = rows[where]
            live = ~self.done[act_rows]
            cur = state.current_player[act_rows].astype(np.int64)
            mine = self.controlled(act_rows, cur)
            others = live & ~mine
            auto = live & mine
            if self.config.skip_forced:
                auto &= legal_counts(state.legal_action_mask, act_rows) == 1
            else:
                auto[:] = False
            todo = np.flatnonzero(others | auto)
            if not todo.size:
                break
            acts = np.empty(todo.size, dtype=np.int64)
            is_auto = auto[todo]
            acts[is_auto] = state.legal_action_mask[act_rows[todo[is_auto]]].argmax(axis=1)
            for role, agent, pick in self._agent_groups(act_rows, cur, todo[~is_auto]):
                sub = act_rows[pick]
                obs = (_observe_unchecked(state, cur[pick], sub)
                       if getattr(agent, "needs_observations", True)
                       else np.empty((sub.size, 0), dtype=np.float32))
                acts[np.searchsorted(todo, pick)] = _injected_act(
                    role, agent, obs, state.legal_action_mask[sub], self.agent_rng.subset(sub), sub)
            result = _step_unchecked(state, acts, act_rows[todo])
            if result.illegal.any():
                i = int(np.flatnonzero(result.illegal)[0])
                role, agent = next((role, agent) for role, agent, pick in self._agent_groups(
                    act_rows, cur, todo[~is_auto]) if i in pick)
                raise IllegalActionError(f"{role} agent {type(agent).__name__} chose action {int(acts[i])} "
                                         f"in env {int(act_rows[todo[i]])}, which is not legal there")
            where = where[todo]
            reward[where] += self._learner_reward(rows[where], result.rewards)
            forced[where[is_auto]] += 1
        return reward, forced

    def _agent_groups(self, rows: npt.NDArray[np.int64], cur: npt.NDArray[np.int64],
                      pick: npt.NDArray[np.int64]) -> list[tuple[str, Agent, npt.NDArray[np.int64]]]:
        """(role, agent, positions in ``pick``) of each injected agent with rows to play."""
        if not pick.size:
            return []
        partners = cast(Agent | None, self.config.partners)  # names were resolved at construction
        opponent = cast(Agent, self.config.opponent)
        if partners is None:
            return [("opponent", opponent, pick)]
        own_side = (cur[pick] % self.num_sides) == (self.seat[rows[pick]] % self.num_sides)
        groups = [("partners", partners, pick[own_side]), ("opponent", opponent, pick[~own_side])]
        return [(role, agent, p) for role, agent, p in groups if p.size]


def _injected_act(role: str, agent: Agent, obs: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_],
                  rng: RowRandom, envs: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The ``role`` agent's action in each of ``envs``; a one-line ``ValueError`` naming the role and
    the agent's class when ``act`` raises (a training run ended in a traceback) or returns other than
    one integer action per env. Whether each action is legal, the engine's step tells (the caller
    names the agent then)."""
    who = f"{role} agent {type(agent).__name__}"
    try:
        chosen = np.asarray(agent.act(obs, mask, rng))  # type: ignore[arg-type]
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # the user's agent: one line, whatever it raised (sys.exit too)
        raise ValueError(f"{who}: act() raised {type(exc).__name__}: {one_line(exc)}") from exc
    if chosen.dtype.kind not in "iu" or chosen.shape != (envs.size,):
        raise ValueError(f"{who} returned {short_repr(chosen)} for {envs.size} rows; expected {envs.size} "
                         "integer actions")
    if chosen.size and (chosen.min() < 0 or chosen.max() >= NUM_ACTIONS):
        i = int(np.flatnonzero((chosen < 0) | (chosen >= NUM_ACTIONS))[0])
        raise IllegalActionError(f"{who} chose action {int(chosen[i])} in env {int(envs[i])}, which is not "
                                 f"an action (they are integers in [0, {NUM_ACTIONS}))")
    return chosen.astype(np.int64, copy=False)
