"""The lean trainer's forward pass of the policy, in one of four ``Products`` modes: ``None``, the SB3
modules as they are; ``"autocast"``, the modules under bf16 autocast (a GPU's bf16); ``"fp32"`` and
``"bf16"``, the CPU's own paths (``for_device`` picks). On the CPU the two operations torch's CPU
kernels make slow are done another way: the same function as the SB3 modules
(``extract_features -> mlp_extractor -> action_net / value_net``), module by module, so any
checkpoint's weights run through it unchanged.

* ``Tanh`` is ``2 * sigmoid(2x) - 1`` with its own backward ``g * (1 - y^2)``: torch's CPU ``tanh``
  took 1.45 ms on a (2048, 256) batch where ``sigmoid`` takes 0.26 (AMD EPYC with AVX-512); the
  two agree within 2e-7.
* With ``products="bf16"``, every ``Linear`` casts its input and weight to bf16, multiplies in bf16 (oneDNN,
  fp32 accumulation) and returns fp32 with the bias added in fp32; its backward multiplies in bf16
  the same way. This is autocast's arithmetic for the products, while the activations, the losses
  and the weights stay fp32 (CPU autocast would make every activation bf16, and elementwise ops on
  bf16 tensors are slow on the CPU). Measured on that CPU: a (2048, 256) x (256, 256) product in
  1.33 ms in bf16 against 3.43 ms in fp32 and 2.59 ms with ``set_float32_matmul_precision("medium")``.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any, Literal

import torch
from torch import nn

Products = Literal["fp32", "bf16", "autocast"] | None


def for_device(device: torch.device, precision: str) -> Products:
    """The mode for training in ``precision`` ("fp32" or "bf16") on ``device``."""
    if device.type == "cpu":
        return "fp32" if precision == "fp32" else "bf16"
    return "autocast" if precision == "bf16" else None


class _Tanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        y = torch.sigmoid(x * 2.0).mul_(2.0).sub_(1.0)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return torch.addcmul(grad, grad * y, y, value=-1.0)


class _BF16Linear(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        xb, wb = x.to(torch.bfloat16), weight.to(torch.bfloat16)
        ctx.save_for_backward(xb, wb)
        ctx.has_bias = bias is not None
        y = (xb @ wb.t()).float()
        return y if bias is None else y.add_(bias)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        xb, wb = ctx.saved_tensors
        gb = grad.to(torch.bfloat16)
        grad_x = (gb @ wb).float() if ctx.needs_input_grad[0] else None
        grad_w = (gb.t() @ xb).float() if ctx.needs_input_grad[1] else None
        grad_b = grad.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
        return grad_x, grad_w, grad_b


def tanh(x: torch.Tensor) -> torch.Tensor:
    """``torch.tanh`` within 2e-7, fast on the CPU, differentiable."""
    return _Tanh.apply(x)


def _context(obs: torch.Tensor, products: Products) -> AbstractContextManager[Any]:
    if products == "autocast":
        return torch.autocast(obs.device.type, dtype=torch.bfloat16)
    return nullcontext()


def run(module: nn.Module, x: torch.Tensor, products: Products) -> torch.Tensor:
    """``module(x)``: as is without CPU products (``None``, ``"autocast"``), else a Linear, a Tanh or
    a Sequential of them computed as the module docstring says (any other module is called as is)."""
    if products is None or products == "autocast":
        return module(x)
    if isinstance(module, nn.Sequential):
        for part in module:
            x = run(part, x, products)
        return x
    if isinstance(module, nn.Linear):
        if products == "bf16":
            return _BF16Linear.apply(x, module.weight, module.bias)
        return nn.functional.linear(x, module.weight, module.bias)
    if isinstance(module, nn.Tanh):
        return tanh(x)
    return module(x)


def actor_logits(policy: Any, obs: torch.Tensor, products: Products) -> torch.Tensor:
    """The actor head's fp32 logits, unmasked."""
    with _context(obs, products):
        latent = run(policy.mlp_extractor.policy_net, policy.extract_features(obs), products)
        return run(policy.action_net, latent, products).float()


def values(policy: Any, obs: torch.Tensor, products: Products) -> torch.Tensor:
    """The critic's fp32 values, shape (B,)."""
    with _context(obs, products):
        latent = run(policy.mlp_extractor.value_net, policy.extract_features(obs), products)
        return run(policy.value_net, latent, products).float().flatten()


def heads(policy: Any, obs: torch.Tensor, products: Products) -> tuple[torch.Tensor, torch.Tensor]:
    """Both heads at once: fp32 logits (B, A) and values (B,), with one feature extraction."""
    with _context(obs, products):
        features = policy.extract_features(obs)
        pi = run(policy.mlp_extractor.policy_net, features, products)
        vf = run(policy.mlp_extractor.value_net, features, products)
        logits = run(policy.action_net, pi, products).float()
        return logits, run(policy.value_net, vf, products).float().flatten()
