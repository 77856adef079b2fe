"""``TrainArgs``: the options of a training run, declared once (a YAML file in ``configs/train/``
is one, serialised; each field is also a ``canasta train`` flag), and their checks by name, type
and range.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agents.checkpoint import MAX_LAYERS, MAX_UNITS
from canasta_env.envs.learner import REWARD_MODES
from canasta_env.messages import short_repr
from train.common.options import AGENT_HELP, defaults, flag_name, opt


@dataclass
class TrainArgs:
    """A training run (a YAML file in ``configs/train/`` is one, serialised)."""

    rules: str = opt("classic_2p", "rules preset name or rules YAML file")
    opponent: str = opt("random", f"agent playing the other side: {AGENT_HELP}")
    total_timesteps: int = opt(200_000, "learner steps to train (forced decisions are skipped, not counted)")
    num_envs: int = opt(256, "envs stepped together in one engine batch")
    n_steps: int = opt(32, "rollout length per env between updates")
    batch_size: int = opt(2048, "minibatch size of the PPO update")
    n_epochs: int = opt(4, "passes over each rollout per update")
    learning_rate: float = opt(3e-4, "Adam learning rate")
    gamma: float = opt(0.995, "discount factor")
    gae_lambda: float = opt(0.95, "GAE lambda")
    ent_coef: float = opt(0.01, "entropy bonus coefficient")
    clip_range: float = opt(0.2, "PPO clipping range")
    net_arch: list[int] = opt(help="hidden layer sizes of the policy and value networks",
                              factory=lambda: [256, 256])
    seed: int = opt(0, "run seed: deals, initial weights, sampling")
    run_dir: str | None = opt(None, "folder for checkpoints, TensorBoard events and config.json "
                              "(default: a new runs/<config>-<date>-<time>)")
    checkpoint_every: int = opt(50_000, "learner steps between checkpoints")
    eval_every: int = opt(50_000, "learner steps between evaluations")
    eval_deals: int = opt(200, "fixed duplicate deals per evaluation (each played in every seating)")
    eval_seed: int = opt(2027, "evaluation deals are DealId(eval_seed, i, 0), unless eval_deal_set is set")
    eval_deal_set: str | None = opt(None, "evaluate on a fixed deal set: v1 or a .npz path")
    eval_records: bool = opt(False, "append every evaluation hand to RUN_DIR/eval_records.jsonl")
    eval_opponents: list[str] = opt(help="agents each evaluation plays against", factory=lambda: ["random"])
    torch_threads: int = opt(1, "torch threads (measured: 2 threads make small-network PPO ~40x slower)")
    progress: bool = opt(True, "show a progress bar (the start, evaluation and summary lines print anyway)")
    snapshot_every: int = opt(100_000, "selfplay/league: learner steps between snapshots joining the pool")
    pool_size: int = opt(10, "selfplay/league: past snapshots kept in the pool")
    latest_ratio: float = opt(0.5, "selfplay/league: share of episodes against the latest policy")
    league: list[str] = opt(help="selfplay/league: agents that stay in the pool for good "
                            "(default: none; canasta league: heuristic greedy)", factory=list)
    pfsp: bool = opt(False, "selfplay/league: draw pool members by prioritized fictitious self-play "
                     "(the learner's recent results), not uniformly (default: false; canasta league: "
                     "true)")
    exploiter_every: int = opt(0, "league: learner steps of the main agent between exploiter rounds; each "
                               "round trains a main exploiter against the frozen main agent, and it "
                               "joins the league for good (0: no exploiters; "
                               "train.learning.exploiter_league)")
    exploiter_steps: int = opt(1_000_000, "league with exploiter_every: learner steps of each exploiter")
    exploiter_init: str = opt("main", "league with exploiter_every: an exploiter starts from the main "
                              "agent's weights of the round (main) or afresh (fresh)")
    league_exploiters: bool = opt(False, "league with exploiter_every: each round also trains a league "
                                  "exploiter, against the whole league and the main agent (PFSP)")
    exploiter_family: str = opt("ppo", "league with exploiter_every: ppo (exploiters trained by PPO, "
                                "exploiter_steps each) or heuristic (each round, the rule-space exploiter's "
                                "CMA-ES search for the heuristic profile that beats the main agent most; "
                                "that profile joins the league)")
    exploiter_budget: int = opt(200, "exploiter_family heuristic: profiles each search plays")
    exploiter_also: list[str] = opt(help="exploiter_family heuristic: agents each search's profile must "
                                    "beat as well (its lowest win rate over the main agent and these is "
                                    "maximised), so the league gains strong all-round rule players rather "
                                    "than counters of the main agent alone", factory=list)
    exploiter_deals: int = opt(100, "exploiter_family heuristic: deals each profile plays against the main "
                               "agent, in every seating (new deals each round, from the run's seed)")
    imitate: str | None = opt(None, "an agent whose choices the policy clones before PPO "
                              "(train.learning.imitation)")
    imitate_steps: int = opt(1_000_000, "with imitate: teacher decisions to clone")
    imitate_epochs: int = opt(10, "with imitate: passes over them")
    imitate_opponent: str | None = opt(None, "with imitate: the agent the teacher plays against, or "
                                       "'league': the league's members, the envs shared out evenly "
                                       "(default: the run's opponent; under selfplay/league the teacher)")
    imitate_workers: int = opt(1, "with imitate: processes playing the teacher's games (the same "
                               "decisions whatever the number)")
    ray: str | None = opt(None, "algo ppo: collect rollouts on Ray actors: local (a Ray started here; "
                          "also --ray alone), auto or HOST:PORT of a running cluster (the ray extra); none: "
                          "collect here (to resume a Ray run without Ray)",
                          const="local", metavar="ADDRESS")
    num_workers: int = opt(2, "with ray: rollout workers (Ray actors), each stepping its share of num_envs")
    init_from: str | None = opt(None, "a checkpoint, run directory or zoo:NAME whose policy weights start "
                                "the run (not its optimizer or counters)")
    algo: str = opt("ppo", "ppo (the lean trainer), mmd (the lean trainer with the magnet term: "
                    "equilibrium-seeking self-play) or maskable_ppo (sb3-contrib); docs/training.md")
    magnet_coef: float = opt(0.0, "algo ppo/mmd: weight alpha of KL(policy || magnet) in the loss "
                             "(train.learning.mmd; 0: no magnet; algo mmd needs it above 0)")
    magnet_every: int = opt(10, "with magnet_coef: updates (rollouts) between moves of the magnet")
    magnet_step: float = opt(1.0, "with magnet_coef: how far the magnet moves toward the policy, in "
                             "(0, 1] (1: a copy)")
    device: str = opt("auto", "auto, cpu or cuda (auto: cuda when torch sees a GPU)")
    precision: str = opt("auto", "algo ppo: fp32, bf16 or auto (bf16 where the CPU or GPU runs it fast)")
    overlap: bool = opt(True, "algo ppo: collect the next rollout while the learner updates")
    max_grad_norm: float = opt(0.5, "gradient clipping norm")
    vf_coef: float = opt(0.5, "value loss coefficient")
    reward_mode: str = opt("margin", "margin (the side's scaled hand-score margin) or win_loss "
                           "(+1/0/-1 per hand: trains for the win rate, not the points)")
    engine_threads: int = opt(1, "algo ppo: threads the engine splits the envs' batch over; more than 1 "
                              "pays on machines with cores to spare beside the learner")
    update_threads: int = opt(0, "algo ppo: threads that share each minibatch's gradient, one torch "
                              "thread each (the same weights whatever the timing); 0: the CPU's cores "
                              "up to 2, 1 on CUDA")


def read_options(config: str | None, overrides: dict[str, Any], where: str | None = None) -> dict[str, Any]:
    """The training options a YAML file and the flags give (flags win), checked by name and type
    (the file's own values too, even those a flag overrides); errors name ``where``, else the file
    (``<flags>`` for the command line)."""
    from train.common.config_file import read_mapping

    data: dict[str, Any] = read_mapping(config, "training options") if config else {}
    if config:  # every value of the file, also those a flag overrides: a wrong one is a mistake
        _check_types(data, where or config)
    data.update({k: v for k, v in overrides.items() if v is not None})
    _check_types(data, where or config or "<flags>")
    return data


def load_args(config: str | None, overrides: dict[str, Any], source: str | None = None) -> TrainArgs:
    """``TrainArgs`` from a YAML file and flag overrides, every value checked (``ValueError``
    naming the file or ``source``)."""
    where = source or config or "<flags>"
    data = read_options(config, overrides, where)
    if data.get("ray") == "none":  # e.g. resuming a Ray run on a machine without Ray
        data["ray"] = None
    args = TrainArgs(**data)
    _check_ranges(args, where)
    return args


def check_args(args: TrainArgs, where: str = "training options") -> None:
    """Check a ``TrainArgs`` built in code (not by ``load_args``) by type and range, as a config file
    is: ``train()`` calls it before anything is written (``ValueError`` naming ``where``)."""
    _check_types(dataclasses.asdict(args), where)
    _check_ranges(args, where)


def _check_types(data: dict[str, Any], where: str) -> None:
    known = {f.name for f in dataclasses.fields(TrainArgs)}
    unknown = sorted(str(k) for k in set(data) - known)
    if unknown:
        raise ValueError(f"{where}: unknown training option(s) {short_repr(unknown)}; "
                         f"known: {', '.join(sorted(known))}")
    for f in dataclasses.fields(TrainArgs):
        if f.name in data and not _fits(data[f.name], str(f.type)):
            raise ValueError(f"{where}: training option {f.name!r} = {short_repr(data[f.name])} "
                             f"is not of type {f.type}{_number_hint(data[f.name], str(f.type))}")


def _number_hint(value: Any, kind: str) -> str:
    """Why a number-like string is text: YAML 1.1 reads 3e-4 (no dot, no exponent sign) as a string."""
    if "float" not in kind or not isinstance(value, str):
        return ""
    try:
        number = float(value)
    except ValueError:
        return ""
    if not math.isfinite(number):
        return " (YAML reads it as text; as a number it is beyond a float's range)"
    if number == 0 and any(c in "123456789" for c in value.lower().partition("e")[0]):
        return " (YAML reads it as text; as a number it is too close to 0 for a float: it would be 0.0)"
    mantissa, _, exponent = repr(number).partition("e")
    spelled = mantissa if "." in mantissa else f"{mantissa}.0"
    if exponent:
        spelled += "e" + (exponent if exponent[0] in "+-" else f"+{exponent}")
    if spelled == value.strip():  # a number in quotes
        return f" (it is text in quotes; write {spelled} without them)"
    return f" (YAML reads {value} as text; write {spelled})"


MAX_ENVS = 1 << 20  # num_envs: envs of one engine batch (canasta exploit's --num-envs too)
MAX_INTERVAL = 10**12  # learner steps: total_timesteps and the intervals between checkpoints, evaluations...

# field -> (low, high): inclusive bounds every run must respect (seed: numpy's and sb3's global seeding
# takes 32 bits; the engine's deal addresses take 64, so eval_seed may be larger)
_RANGES: dict[str, tuple[float, float]] = {
    "total_timesteps": (0, MAX_INTERVAL), "num_envs": (1, MAX_ENVS), "n_steps": (1, 1 << 20),
    "batch_size": (1, 1 << 24), "n_epochs": (1, 10_000), "learning_rate": (0.0, 10.0),
    "gamma": (0.0, 1.0), "gae_lambda": (0.0, 1.0), "ent_coef": (0.0, 100.0), "clip_range": (0.0, 10.0),
    "seed": (0, 2**32 - 1), "checkpoint_every": (1, MAX_INTERVAL), "eval_every": (1, MAX_INTERVAL),
    "eval_deals": (1, 10**7), "eval_seed": (0, 2**63 - 1), "torch_threads": (1, 1024),
    "snapshot_every": (1, MAX_INTERVAL), "pool_size": (1, 10_000), "latest_ratio": (0.0, 1.0),
    "max_grad_norm": (0.0, 10**6), "vf_coef": (0.0, 100.0), "imitate_steps": (1, 10**9),
    "imitate_epochs": (1, 10_000), "imitate_workers": (1, 256), "num_workers": (1, 4096),
    "engine_threads": (1, 1024), "update_threads": (0, 1024), "exploiter_every": (0, 10**12),
    "exploiter_steps": (1, 10**12), "magnet_coef": (0.0, 100.0), "magnet_every": (1, 10**9),
    "exploiter_budget": (3, 10**6), "exploiter_deals": (1, 10**5),
}


# field -> allowed values
_CHOICES: dict[str, tuple[str, ...]] = {
    "algo": ("ppo", "mmd", "maskable_ppo"), "device": ("auto", "cpu", "cuda"),
    "precision": ("auto", "fp32", "bf16"), "reward_mode": REWARD_MODES, "exploiter_init": ("main", "fresh"),
    "exploiter_family": ("ppo", "heuristic"),
}


def _check_ranges(args: TrainArgs, where: str) -> None:
    for name, (low, high) in _RANGES.items():
        value = getattr(args, name)
        if isinstance(value, float) and not math.isfinite(value) or not low <= value <= high:
            raise ValueError(f"{where}: training option {name!r} = {short_repr(value)} is outside "
                             f"[{low}, {high}]")
    if args.learning_rate <= 0 or args.clip_range <= 0 or args.gamma <= 0:
        raise ValueError(f"{where}: learning_rate, clip_range and gamma must be positive")
    if not 1 <= len(args.net_arch) <= MAX_LAYERS or not all(1 <= u <= MAX_UNITS for u in args.net_arch):
        raise ValueError(f"{where}: net_arch = {short_repr(args.net_arch)}: want 1 to {MAX_LAYERS} layers "
                         f"of 1 to {MAX_UNITS} units")
    if not args.eval_opponents:
        raise ValueError(f"{where}: training option 'eval_opponents' is empty; name an agent")
    for f in dataclasses.fields(TrainArgs):  # '' is not None: init_from '' would be the working directory
        value = getattr(args, f.name)
        if str(f.type) == "str | None" and value == "":
            raise ValueError(f"{where}: training option {f.name!r} is empty; name a value, or leave it out")
        if any("\x00" in v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str)):
            raise ValueError(f"{where}: training option {f.name!r} = {short_repr(value)} holds a NUL "
                             "character, which no name or path may")
    for name, allowed in _CHOICES.items():
        if getattr(args, name) not in allowed:
            raise ValueError(f"{where}: training option {name!r} = {short_repr(getattr(args, name))} "
                             f"is not one of {', '.join(allowed)}")
    if args.magnet_step <= 0 or args.magnet_step > 1 or not math.isfinite(args.magnet_step):
        raise ValueError(f"{where}: training option 'magnet_step' = {short_repr(args.magnet_step)} is "
                         "outside (0, 1]")
    if args.max_grad_norm <= 0:
        raise ValueError(f"{where}: max_grad_norm must be positive")
    if args.algo == "maskable_ppo" and args.precision == "bf16":
        raise ValueError(f"{where}: precision 'bf16' needs algo 'ppo' (maskable_ppo trains in fp32)")
    rollout = args.num_envs * args.n_steps
    if args.algo == "maskable_ppo" and (args.batch_size == 1 or rollout % args.batch_size == 1):
        raise ValueError(f"{where}: batch_size = {args.batch_size} leaves a minibatch of one row of the "
                         f"{rollout}-step rollout (num_envs x n_steps), whose advantage maskable_ppo "
                         "normalises to NaN; choose another batch_size or algo 'ppo'")
    if args.algo == "maskable_ppo" and args.magnet_coef > 0:
        raise ValueError(f"{where}: magnet_coef needs the lean trainer (algo ppo or mmd), not maskable_ppo")
    if args.algo == "mmd" and args.magnet_coef <= 0:
        raise ValueError(f"{where}: algo 'mmd' needs magnet_coef above 0 (the weight of its magnet term)")


def _exploiters(family: str | None) -> Callable[[TrainArgs, bool], bool]:
    """Whether a league trains exploiters (of ``family``, or of either) in its rounds."""
    return lambda a, _: a.exploiter_every > 0 and family in (None, a.exploiter_family)


_MAGNET = ("magnet_coef above 0", lambda a, _: a.magnet_coef > 0, ("magnet_coef",))
_IMITATE = ("an agent to imitate", lambda a, _: a.imitate is not None, ("imitate",))
_POOL = ("a pool of opponents", lambda _, pool: pool, ())
_PPO_ROUNDS = ("exploiter_every above 0 with exploiter_family ppo", _exploiters("ppo"),
               ("exploiter_every", "exploiter_family"))
_RULE_ROUNDS = ("exploiter_every above 0 with exploiter_family heuristic", _exploiters("heuristic"),
                ("exploiter_every", "exploiter_family"))

# option -> (what it needs to have any effect, whether a run has that, the options that decide it);
# paces such as snapshot_every are left out: one list of flags may pace all three commands
_TAKES_EFFECT: dict[str, tuple[str, Callable[[TrainArgs, bool], bool], tuple[str, ...]]] = {
    "magnet_every": _MAGNET, "magnet_step": _MAGNET,
    "imitate_steps": _IMITATE, "imitate_epochs": _IMITATE, "imitate_opponent": _IMITATE,
    "imitate_workers": _IMITATE,
    "num_workers": ("ray", lambda a, _: a.ray is not None, ("ray",)),
    "pool_size": _POOL, "latest_ratio": _POOL, "pfsp": _POOL,
    "exploiter_family": ("exploiter_every above 0", _exploiters(None), ("exploiter_every",)),
    "exploiter_steps": _PPO_ROUNDS, "exploiter_init": _PPO_ROUNDS,
    "exploiter_budget": _RULE_ROUNDS, "exploiter_deals": _RULE_ROUNDS,
}


def without_effect(args: TrainArgs, *, pool: bool) -> list[str]:
    """The options ``args`` ignore, whatever their values (``_TAKES_EFFECT``; ``pool`` as for
    ``check_given``): ``exploiter_budget`` of a league whose exploiters are PPO learners."""
    return [name for name, (_, applies, _) in _TAKES_EFFECT.items() if not applies(args, pool)]


def check_given(args: TrainArgs, config: str | None, from_file: set[str], from_flags: set[str], *,
                pool: bool) -> None:
    """Refuse an option given (in the file ``config`` or as a flag) a value other than its default
    where the run ignores it: ``magnet_every`` with ``magnet_coef`` 0 trained plain PPO in silence,
    ``--pool-size`` under ``canasta train`` (no pool; ``pool``: selfplay or league) was dropped.

    Passed: a default (a run's options written out whole, as ``scripts/continue_config.py`` does), a
    file's settings that a flag switches off (``--magnet-coef 0``), and a resume's stored options,
    which are not given (a run stored before this check still resumes)."""
    declared = defaults(TrainArgs)
    for name in without_effect(args, pool=pool):
        needs, _, deciders = _TAKES_EFFECT[name]
        value = getattr(args, name)
        if name not in from_file | from_flags or value == declared[name]:
            continue
        if name not in from_flags and any(d in from_flags for d in deciders):
            continue
        shown = str(value).lower() if isinstance(value, bool) else short_repr(value)
        where = f"{flag_name(name)} {shown}" if name in from_flags else \
            f"{config}: training option {name!r} = {shown}"
        now = ", ".join(f"{d} is {short_repr(getattr(args, d))}" if getattr(args, d) is not None
                        else f"{d} is not set" for d in deciders)
        way = f"set {' and '.join(deciders)}" if deciders else "use canasta selfplay or canasta league"
        raise ValueError(f"{where} has no effect without {needs}{f' ({now})' if now else ''}: "
                         f"{way}, or leave {name} out")


def _fits(value: Any, kind: str) -> bool:
    if kind.endswith(" | None"):
        return value is None or _fits(value, kind[: -len(" | None")])
    if kind.startswith("list"):
        element = int if "int" in kind else str
        return isinstance(value, list) and all(isinstance(v, element) and not isinstance(v, bool)
                                               for v in value)
    expected = {"int": (int,), "float": (int, float), "bool": (bool,), "str": (str,)}[kind]
    return isinstance(value, expected) and (kind == "bool" or not isinstance(value, bool))


IMITATE_LEAGUE = "league"  # imitate_opponent: the teacher plays the league's members


def lean(args: TrainArgs) -> bool:
    """Whether ``args`` train with the lean trainer (``train.learning.lean_ppo``): algo ppo or mmd."""
    return args.algo in ("ppo", "mmd")
