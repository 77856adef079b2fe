"""A learned policy (sb3-contrib's MaskablePPO network) behind the batched agent protocol."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from agents._obs import check_legal_mask, check_observations
from canasta_env.policy import uniforms

MASKED_LOGIT = -1e8  # an illegal action's logit (sb3-contrib's MaskableCategorical uses the same)


def masked_logits(policy: Any, observations: Any, legal: Any) -> Any:
    """fp32 action logits of a ``MaskableActorCriticPolicy``'s actor head (features, actor MLP,
    action layer; SB3's distribution objects skipped), illegal actions at ``MASKED_LOGIT``. Torch
    tensors in and out: the one forward that acting and the ONNX export share. The features are the
    actor's, as in SB3's ``get_distribution`` (a policy with ``share_features_extractor=False``
    gives a pair from ``extract_features``)."""
    from stable_baselines3.common.policies import BasePolicy

    features = BasePolicy.extract_features(policy, observations, policy.pi_features_extractor)
    latent = policy.mlp_extractor.forward_actor(features)
    return policy.action_net(latent).float().masked_fill(~legal, MASKED_LOGIT)


class PolicyAgent:
    """Acts with a ``MaskableActorCriticPolicy``: the most probable legal action
    (``deterministic=True``) or a sample drawn with one uniform per row from ``rng``."""

    name = "policy"

    def __init__(self, policy: Any, deterministic: bool = True) -> None:
        self.policy = policy
        self.deterministic = deterministic
        self.table = "this policy"  # how input errors name the table (the rules' name when loaded)

    def action_probabilities(self, observations: npt.NDArray[np.float32],
                             legal_action_mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.float32]:
        """``(B, A)`` probability of each action under the policy, zero where illegal (for
        ``canasta play --show-policy`` and analysis)."""
        return self._probabilities(*self._inputs(observations, legal_action_mask, "action_probabilities"))

    def act(self, observations: npt.NDArray[np.float32], legal_action_mask: npt.NDArray[np.bool_],
            rng: Any) -> npt.NDArray[np.int64]:
        obs, mask = self._inputs(observations, legal_action_mask, "act")
        u = None if self.deterministic else uniforms(rng, mask.shape[0], f"{self.name}: act")
        probs = self._probabilities(obs, mask)
        if u is None:
            picked = probs.argmax(axis=1)
        else:
            cdf = np.cumsum(probs, axis=1)
            picked = (cdf <= u[:, None] * cdf[:, -1:]).sum(axis=1)
            picked = np.minimum(picked, mask.shape[1] - 1)
            bad = ~mask[np.arange(mask.shape[0]), picked]
            picked[bad] = probs[bad].argmax(axis=1)
        picked[~mask.any(axis=1)] = -1  # no legal action: -1, as every agent (argmax said 0)
        return picked.astype(np.int64)

    def _inputs(self, observations: Any, legal_action_mask: Any, what: str
                ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_]]:
        """The checked observations and mask (``agents._obs``): within the bounds of the policy's
        observation space, read at each call (trainers swap ``policy`` for fresh weights)."""
        who = f"{self.name}: {what}"
        space = getattr(self.policy, "observation_space", None)
        low, high = getattr(space, "low", None), getattr(space, "high", None)
        if not (isinstance(low, np.ndarray) and isinstance(high, np.ndarray) and low.ndim == 1
                and low.shape == high.shape):
            low = high = None  # a policy without a Box space: finite numbers of any width
        obs = check_observations(observations, who, low, high, self.table)
        return obs, check_legal_mask(legal_action_mask, obs.shape[0], who)

    def _probabilities(self, obs: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_]
                       ) -> npt.NDArray[np.float32]:
        import torch

        device = self.policy.device
        with torch.inference_mode():  # (SB3's distribution objects cost 4x the forward itself)
            logits = masked_logits(self.policy, torch.as_tensor(obs, device=device),
                                   torch.as_tensor(mask, device=device))
            probs = torch.softmax(logits, dim=1).cpu().numpy()
        if not np.isfinite(probs).all():  # argmax would pick the first legal action in silence
            raise ValueError(f"{self.name}: the network's output is NaN or infinite (weights too large "
                             "for these observations, or a diverged run)")
        return np.where(mask, probs, 0.0)


def load_policy_agent(checkpoint: str, rules: Any, deterministic: bool = True) -> PolicyAgent:
    """A ``PolicyAgent`` from a checkpoint (or a run directory: its latest checkpoint), refusing a
    checkpoint made for other rules or another observation/action layout."""
    import gymnasium as gym

    from agents.checkpoint import current_layout, load_checkpoint, policy_from_checkpoint
    from canasta_env.engine import NUM_ACTIONS
    from canasta_env.engine.layout import pack_params
    from canasta_env.engine.observation import bounds
    from canasta_env.rules import RuleSet, load_rules

    rules = rules.resolved() if isinstance(rules, RuleSet) else load_rules(rules)
    ckpt = load_checkpoint(checkpoint, rules=rules, expect_layout=current_layout(rules),
                           load_optimizer=False)
    low, high = bounds(pack_params(rules))
    policy = policy_from_checkpoint(ckpt, gym.spaces.Box(low, high, dtype=np.float32),
                                    gym.spaces.Discrete(NUM_ACTIONS), optimizer=False)
    agent = PolicyAgent(policy, deterministic=deterministic)
    agent.name = f"policy:{ckpt.path.name}"
    agent.table = rules.name
    return agent
