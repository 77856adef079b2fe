"""Magnetic Mirror Descent (MMD) for a PPO-style trainer: a KL pull toward a slowly moving "magnet".

MMD (Sokota et al., ICLR 2023, "A Unified Approach to Reinforcement Learning, Quantal Response
Equilibria, and Two-Player Zero-Sum Games") adds one term to the policy loss. With ``pi`` the
policy being trained, ``rho`` the magnet (a frozen policy), ``A`` the advantage estimates and
``r = pi(a|s) / pi_old(a|s)`` the PPO ratio, the loss on a minibatch of ``B`` rows is::

    L = -1/B * sum_rows min(r * A, clip(r, 1 - eps, 1 + eps) * A)
        + alpha * 1/B * sum_rows KL(pi(.|s) || rho(.|s))

    KL(pi(.|s) || rho(.|s)) = sum_{a legal in s} pi(a|s) * (log pi(a|s) - log rho(a|s))

The KL is exact per visited state (summed over every legal action, not sampled), so its gradient
is the exact gradient of the per-state divergence. The clipped surrogate is the proximity term
(the mirror-descent step); the magnet term pulls each state's policy toward ``rho``. Against a
fixed magnet the update's fixed point is the regularised best response ``pi(a|s) ∝ rho(a|s) *
exp(Q(s, a) / alpha)``, and in a two-player zero-sum game self-play converges (last iterate, not
only on average) to the quantal response equilibrium relative to ``rho``. Moving the magnet to the
current policy every ``magnet_every`` updates turns this into a proximal-point iteration whose
fixed points are the Nash equilibria: each magnet's regularised equilibrium is closer to one.

Moving the magnet (``Magnet.update``): with ``magnet_step`` ``s`` in (0, 1] the magnet's
parameters move ``theta_rho <- (1 - s) * theta_rho + s * theta_pi`` (``s = 1``, the default: a
plain copy). For a tabular softmax policy (the logits are the parameters) this is exactly the
geometric step ``rho <- normalize(rho^(1-s) * pi^s)`` in every state, since the softmax of a convex
combination of logits is the normalised geometric mixture of the two distributions. For a network
it is parameter averaging, a cheap proxy for that mixture rather than the mixture itself; prefer
``s = 1`` there and set the pace with ``magnet_every``.

Conventions are ``train.learning.lean_ppo``'s: ``(B, A)`` logits, a ``(B, A)`` boolean legal mask,
illegal logits set to ``MASKED_LOGIT`` before ``log_softmax`` (``masked_log_probs``).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Generic, TypeVar

import torch

from agents.learned.policy import MASKED_LOGIT
from train.learning import policy_forward

__all__ = ["MMDConfig", "Magnet", "magnet_kl", "masked_log_probs"]

ModuleT = TypeVar("ModuleT", bound=torch.nn.Module)


@dataclass(frozen=True)
class MMDConfig:
    """The magnet's settings: ``magnet_coef`` alpha >= 0 weighs the KL term (0 turns MMD off: plain
    PPO); the magnet moves on every ``magnet_every``-th update (>= 1), by ``magnet_step`` in (0, 1]
    (1: becomes a copy of the policy)."""

    magnet_coef: float = 0.0
    magnet_every: int = 1
    magnet_step: float = 1.0

    def __post_init__(self) -> None:
        if not (_number(self.magnet_coef) and math.isfinite(self.magnet_coef)
                and self.magnet_coef >= 0):
            raise ValueError(f"magnet_coef must be a finite number >= 0, got {self.magnet_coef!r}")
        if isinstance(self.magnet_every, bool) or not isinstance(self.magnet_every, int) \
                or self.magnet_every < 1:
            raise ValueError(f"magnet_every must be an integer >= 1, got {self.magnet_every!r}")
        if not (_number(self.magnet_step) and 0 < self.magnet_step <= 1):
            raise ValueError(f"magnet_step must be in (0, 1], got {self.magnet_step!r}")

    @property
    def enabled(self) -> bool:
        """Whether the magnet term is on (``magnet_coef > 0``)."""
        return self.magnet_coef > 0


def _number(value: object) -> bool:
    """Whether ``value`` is an int or float, not a bool (True is not a weight of 1)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def masked_log_probs(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``(B, A)`` log-probabilities over the legal actions: illegal logits set to ``MASKED_LOGIT``,
    then ``log_softmax`` in fp32 or wider. The policy's loss (``LeanPPO.minibatch_loss``) and the
    magnet both use it."""
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32))
    return torch.log_softmax(logits.masked_fill(~mask, MASKED_LOGIT), dim=-1)


def magnet_kl(logp_all: torch.Tensor, magnet_logp_all: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per-row ``KL(pi || rho) = sum_{a legal} pi(a) * (log pi(a) - log rho(a))``, shape ``(B,)``.

    ``logp_all`` and ``magnet_logp_all`` are ``(B, A)`` log-probabilities normalised over the legal
    actions (``masked_log_probs``); ``mask`` is ``(B, A)`` bool, True where legal. Illegal entries
    are ignored whatever they hold (``MASKED_LOGIT`` leftovers, ``-inf``), and send no gradient.
    Differentiable in ``logp_all``; the magnet is a constant (pass it detached or under no_grad).
    """
    lp = logp_all.masked_fill(~mask, 0.0)
    lm = magnet_logp_all.masked_fill(~mask, 0.0)
    return (lp.exp() * (lp - lm)).masked_fill(~mask, 0.0).sum(dim=-1)


class Magnet(Generic[ModuleT]):
    """A frozen copy of a policy module (``module``: no gradients, eval mode) that follows the policy.

    The trainer computes the magnet's log-probabilities with the same forward as the policy's, on
    ``magnet.module`` under ``torch.no_grad``, and calls ``update(policy)`` after every update; on
    every ``magnet_every``-th call the magnet moves ``theta_rho <- (1 - s) theta_rho + s theta_pi``
    (``s = magnet_step``; buffers are copied). See the module docstring for what that step means
    for a tabular policy and for a network.
    """

    def __init__(self, policy: ModuleT, config: MMDConfig) -> None:
        self.config = config
        self.module: ModuleT = copy.deepcopy(policy)
        self.module.eval()
        for p in self.module.parameters():
            p.requires_grad_(False)
        self.updates = 0  # calls to ``update``
        self.moves = 0  # times the magnet moved

    def update(self, policy: torch.nn.Module) -> bool:
        """Count one policy update; move the magnet toward ``policy`` if this is a ``magnet_every``-th
        one. Returns whether it moved."""
        self.updates += 1
        if self.updates % self.config.magnet_every:
            return False
        self.move(policy)
        return True

    @torch.no_grad()
    def log_probs(self, obs: torch.Tensor, masks: torch.Tensor, products: policy_forward.Products
                  ) -> torch.Tensor:
        """The magnet's ``(B, A)`` log-probabilities (``masked_log_probs``), with the trainer's forward
        and matrix-product precision ``products``."""
        return masked_log_probs(policy_forward.actor_logits(self.module, obs, products), masks)

    @torch.no_grad()
    def move(self, policy: torch.nn.Module) -> None:
        """``theta_rho <- (1 - s) * theta_rho + s * theta_pi`` now (``s = 1``: an exact copy)."""
        s = float(self.config.magnet_step)
        for m, p in zip(self.module.parameters(), policy.parameters(), strict=True):
            if s == 1.0:
                m.copy_(p)
            else:
                m.lerp_(p.to(m.dtype), s)
        for mb, pb in zip(self.module.buffers(), policy.buffers(), strict=True):
            mb.copy_(pb)
        self.moves += 1
