"""Canasta as an RLlib ``MultiAgentEnv`` (new API stack), and the PPO config that trains on it.

The env translates the PettingZoo AEC env ``canasta_v0`` (so the rules, observations and rewards are
those of every other adapter) into RLlib's turn-based multi-agent form: each step observes only the
agent to move; at the end of a hand (or game) every agent gets its last observation and reward and
``terminateds["__all__"]`` is set (``truncateds["__all__"]`` at the engine's step cap). A side's
seats share its reward. Each agent's observation is ``{"action_mask": float32 (A,), "observations":
float32 (D,)}``, the keys RLlib's action-masking RLModule reads; the mask is all zero in the final
observations, where nobody is to move.

``side_policies`` maps seats to one policy per side (partners share one) or to one shared policy
(self-play); ``ppo_config`` is the documented configuration of ``examples/rllib_ppo.py``
(docs/rllib.md). Only this module imports Ray (the ``rllib`` extra).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from canasta_env.engine import NUM_ACTIONS
from canasta_env.engine.core import check_action, check_seed
from canasta_env.envs.learner import check_real
from canasta_env.envs.pettingzoo_env import raw_env
from canasta_env.messages import check_choice, missing_extra, short_repr
from canasta_env.rules import RuleSet, load_rules

try:
    from ray.rllib.env.multi_agent_env import MultiAgentEnv
    from ray.tune.registry import register_env as _register_env
except ModuleNotFoundError as exc:
    raise ModuleNotFoundError(f"canasta_env.envs.rllib_env: {missing_extra(exc, 'rllib')}",
                              name=exc.name) from None

ENV_NAME = "canasta_multi_agent"  # the name ``register_env`` gives the env in Ray's registry
SHARED_POLICY = "shared"
CONFIG_KEYS = ("rules", "seed", "episode", "reward_mode", "reward_scale", "illegal_action",
               "illegal_reward")
ILLEGAL_POLICIES = ("terminate", "raise")
FN = "CanastaMultiAgentEnv"

Obs = dict[str, npt.NDArray[np.float32]]
AgentDict = dict[str, Any]  # RLlib's MultiAgentDict, keyed by the agent ids above
StepResult = tuple[AgentDict, AgentDict, AgentDict, AgentDict, AgentDict]


class CanastaMultiAgentEnv(MultiAgentEnv):
    """Canasta for ``num_players`` agents ``player_0 ..`` (the agent ids of ``canasta_v0``).

    ``config`` (RLlib's ``env_config``): ``rules`` (preset name, YAML path or ``RuleSet``; default
    ``classic_2p``), ``seed`` (the first reset without a seed plays ``canasta_v0``'s deals of this
    seed, mixed with the env runner's worker and vector index when those are non-zero, so runners
    play different deals; default: fresh deals), ``episode``, ``reward_mode``, ``reward_scale`` as
    for ``canasta_v0``, and ``illegal_action``: ``"terminate"`` (default: an illegal action ends the
    episode with ``illegal_reward``, default -1, for the offender and 0 for the others, as
    ``canasta_v0.env()`` does; RLlib's env checker plays unmasked random actions) or ``"raise"``
    (``IllegalActionError``).
    """

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        super().__init__()
        config = {} if config is None else config
        if not isinstance(config, dict):
            raise ValueError(f"{FN}: config must be a dict, got {short_repr(config)}")
        unknown = sorted(map(str, set(config) - set(CONFIG_KEYS)))
        if unknown:
            raise ValueError(f"{FN}: unknown config keys {unknown}; known: {list(CONFIG_KEYS)}")
        options = {k: config[k] for k in ("episode", "reward_mode", "reward_scale") if k in config}
        self._aec = raw_env(config.get("rules", "classic_2p"), **options)
        self._illegal_action = config.get("illegal_action", "terminate")
        check_choice(self._illegal_action, "illegal_action", ILLEGAL_POLICIES, FN)
        self._illegal_reward = check_real(config.get("illegal_reward", -1.0), "config 'illegal_reward'", FN)
        self._done = True  # until the first reset
        self.rules: RuleSet = self._aec.rules
        self._seed = _runner_seed(config.get("seed"), getattr(config, "worker_index", 0),
                                  getattr(config, "vector_index", 0))
        self._ids: list[str] = list(self._aec.possible_agents)
        self.possible_agents = list(self._ids)
        self.agents = list(self._ids)
        inner = self._aec.observation_space(self._ids[0])
        obs_space = spaces.Dict({
            "action_mask": spaces.Box(0.0, 1.0, (NUM_ACTIONS,), dtype=np.float32),
            "observations": inner["observation"],  # type: ignore[index]
        })
        self.observation_spaces = {a: obs_space for a in self._ids}
        self.action_spaces = {a: spaces.Discrete(NUM_ACTIONS) for a in self._ids}

    def reset(self, *, seed: int | None = None,  # type: ignore[override]
              options: dict[str, Any] | None = None) -> tuple[AgentDict, AgentDict]:
        """A new deal; ``seed`` and ``options`` as for ``canasta_v0`` (``{"deal": ...}``)."""
        first = seed is None and self._seed is not None
        self._aec.reset(seed=self._seed if first else seed, options=options)
        if first:  # spent only once a reset succeeded with it
            self._seed = None
        self._done = False
        agent = self._aec.agent_selection
        return {agent: self._observe(agent)}, {}

    def step(self, action_dict: AgentDict) -> StepResult:  # type: ignore[override]
        """Play the action of the agent to move (the one agent the last step observed)."""
        if self._done:
            raise ValueError(f"{FN} step: the episode is over; call reset() first")
        agent = self._aec.agent_selection
        if not isinstance(action_dict, dict):
            raise ValueError(f"{FN} step: expected a dict {{agent id: action}}, got "
                             f"{short_repr(action_dict)}")
        if set(action_dict) != {agent}:
            raise ValueError(f"{FN} step: expected an action for {agent!r} only (the agent to move), "
                             f"got actions for {sorted(map(str, action_dict))}")
        action = check_action(action_dict[agent], f"{FN} step")
        if self._illegal_action == "terminate" and not self._legal(agent, action):
            self._done = True
            return self._final({agent: self._illegal_reward}, True, False)
        self._aec.step(action)
        rewards = {a: float(r) for a, r in self._aec.rewards.items() if r != 0.0 or a == agent}
        terminated, truncated = self._aec.terminations[agent], self._aec.truncations[agent]
        if terminated or truncated:
            self._done = True
            return self._final(rewards, terminated, truncated)
        following = self._aec.agent_selection
        return ({following: self._observe(following)}, rewards, {"__all__": False},
                {"__all__": False}, {})

    def _legal(self, agent: str, action: int) -> bool:
        mask = self._aec.infos[agent]["action_mask"]
        return 0 <= action < NUM_ACTIONS and bool(mask[action])

    def _final(self, rewards: AgentDict, terminated: bool, truncated: bool) -> StepResult:
        """The episode's last step: every agent observed (nobody to move), done."""
        agents = self._ids
        return ({a: self._observe(a, final=True) for a in agents}, rewards,
                {**dict.fromkeys(agents, terminated), "__all__": terminated},
                {**dict.fromkeys(agents, truncated), "__all__": truncated}, {})

    def _observe(self, agent: str, final: bool = False) -> Obs:
        obs = self._aec.observe(agent)
        mask = np.zeros(NUM_ACTIONS, np.float32) if final else obs["action_mask"].astype(np.float32)
        return {"action_mask": mask, "observations": obs["observation"]}

    def render(self) -> str | None:  # type: ignore[override]
        """The view of the agent to move, as text."""
        self._aec.render_mode = "ansi"
        return self._aec.render()

    def close(self) -> None:
        self._aec.close()


def _runner_seed(seed: Any, worker_index: int, vector_index: int) -> int | None:
    """The env's first-reset seed: ``seed`` itself for the first env of the local runner (so it
    plays ``canasta_v0``'s deals of that seed), otherwise mixed with the runner's indices."""
    if seed is None:
        return None
    seed = check_seed(seed, FN, "config 'seed'")
    if not worker_index and not vector_index:
        return seed
    mixed = np.random.SeedSequence([seed, int(worker_index), int(vector_index)])
    return int(mixed.generate_state(1, np.uint64)[0] >> np.uint64(1))


def side_policies(rules: Any, *, shared: bool = False) -> dict[str, str]:
    """Agent id -> policy id: ``side_K`` for the seats of side K (seat i plays for side i % sides,
    so partners share a policy), or ``shared`` for every seat with ``shared=True`` (self-play)."""
    rules = rules.resolved() if isinstance(rules, RuleSet) else load_rules(rules)
    sides = rules.num_sides
    return {f"player_{i}": SHARED_POLICY if shared else f"side_{i % sides}"
            for i in range(rules.num_players)}


def policy_mapping(rules: Any, *, shared: bool = False) -> Callable[..., str]:
    """``policy_mapping_fn`` for ``AlgorithmConfig.multi_agent`` from ``side_policies``."""
    mapping = side_policies(rules, shared=shared)

    def policy_mapping_fn(agent_id: str, episode: Any = None, **kwargs: Any) -> str:
        return mapping[agent_id]

    return policy_mapping_fn


def play_greedy(algo: Any, hands: int = 2, seed: int = 0) -> int:
    """Play ``hands`` hands of the algorithm's env with each agent's module choosing its most likely
    action (``forward_inference``); raises ``IllegalActionError`` on an illegal move. The number of
    moves played."""
    import torch

    env_config = {**algo.config.env_config, "illegal_action": "raise"}
    env = CanastaMultiAgentEnv(env_config)
    mapping_fn = algo.config.policy_mapping_fn
    modules = {a: algo.get_module(mapping_fn(a, None)) for a in env.possible_agents}
    moves = 0
    for hand in range(hands):
        obs, _ = env.reset(seed=seed) if hand == 0 else env.reset()
        done = False
        while not done:
            (agent, o), = obs.items()
            batch = {"obs": {k: torch.from_numpy(v)[None] for k, v in o.items()}}
            with torch.no_grad():
                logits = modules[agent].forward_inference(batch)["action_dist_inputs"][0]
            obs, _, terminateds, truncateds, _ = env.step({agent: int(logits.argmax())})
            moves += 1
            done = terminateds["__all__"] or truncateds["__all__"]
    return moves


def register_env() -> str:
    """Register the env in Ray's registry (every worker of the cluster sees it); its name."""
    _register_env(ENV_NAME, CanastaMultiAgentEnv)
    return ENV_NAME


def ppo_config(rules: Any = "classic_2p", *, shared: bool = False, seed: int | None = None,
               hidden: tuple[int, ...] = (256, 256), num_env_runners: int = 2,
               train_batch_size: int = 4000, minibatch_size: int = 256, num_epochs: int = 10,
               lr: float = 3e-4) -> Any:
    """PPO on the new API stack: one ``MaskedPPOTorchRLModule`` (RLlib's default actor-critic MLP of
    ``hidden`` layers, with the logits of illegal actions set to the float minimum, so sampling and
    greedy play are legal) per policy of ``side_policies``; every policy trains."""
    try:
        from ray.rllib.algorithms.ppo import PPOConfig
        from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
        from ray.rllib.core.rl_module.rl_module import RLModuleSpec

        from canasta_env.envs.rllib_module import MaskedPPOTorchRLModule
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(f"ppo_config: {missing_extra(exc, 'rllib')}", name=exc.name) from None

    mapping = side_policies(rules, shared=shared)
    policies = sorted(set(mapping.values()))
    env_config: dict[str, Any] = {"rules": rules, "seed": seed}
    model = {"fcnet_hiddens": list(hidden), "fcnet_activation": "relu"}
    return (
        PPOConfig()
        .api_stack(enable_rl_module_and_learner=True, enable_env_runner_and_connector_v2=True)
        .environment(register_env(), env_config=env_config)
        .env_runners(num_env_runners=num_env_runners, num_envs_per_env_runner=1)
        .multi_agent(policies=set(policies), policy_mapping_fn=policy_mapping(rules, shared=shared),
                     policies_to_train=policies)
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={
            p: RLModuleSpec(module_class=MaskedPPOTorchRLModule, model_config=model)
            for p in policies}))
        .training(train_batch_size_per_learner=train_batch_size, minibatch_size=minibatch_size,
                  num_epochs=num_epochs, lr=lr, gamma=1.0, lambda_=0.95)
    )


__all__ = ["ENV_NAME", "SHARED_POLICY", "CanastaMultiAgentEnv", "play_greedy", "policy_mapping",
           "ppo_config", "register_env", "side_policies"]
