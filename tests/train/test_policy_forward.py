"""``train.learning.policy_forward`` computes the same function as the SB3 policy's modules, and its
gradients."""

from __future__ import annotations

import pytest
import torch

from train.learning import policy_forward


def _policy() -> torch.nn.Module:
    from gymnasium import spaces
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    torch.manual_seed(0)
    obs = spaces.Box(-1.0, 1.0, (12,))
    return MaskableActorCriticPolicy(obs, spaces.Discrete(7), lambda _: 3e-4, net_arch=[32, 32])


def _reference(policy: torch.nn.Module, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    pi, vf = policy.mlp_extractor(policy.extract_features(obs))
    return policy.action_net(pi), policy.value_net(vf).flatten()


def test_tanh_matches_torch_and_its_gradient() -> None:
    x = torch.linspace(-30, 30, 2001, requires_grad=True)
    y = policy_forward.tanh(x)
    assert torch.allclose(y, torch.tanh(x), atol=3e-7)
    (grad,) = torch.autograd.grad(y.sum(), x)
    assert torch.allclose(grad, 1 - torch.tanh(x.detach()) ** 2, atol=1e-6)


@pytest.mark.parametrize(("products", "tol"), [("fp32", 1e-5), ("bf16", 5e-2)])
def test_heads_and_gradients_match_the_modules(products: policy_forward.Products, tol: float) -> None:
    policy = _policy()
    obs = torch.rand(64, 12, generator=torch.Generator().manual_seed(1))
    logits, values = policy_forward.heads(policy, obs, products)
    ref_logits, ref_values = _reference(policy, obs)
    assert logits.dtype == values.dtype == torch.float32
    assert torch.allclose(logits, ref_logits, atol=tol) and torch.allclose(values, ref_values, atol=tol)
    assert torch.allclose(policy_forward.actor_logits(policy, obs, products), ref_logits, atol=tol)
    assert torch.allclose(policy_forward.values(policy, obs, products), ref_values, atol=tol)
    params = list(policy.parameters())
    ours = torch.autograd.grad((logits.square().sum() + values.square().sum()), params)
    ref = torch.autograd.grad((ref_logits.square().sum() + ref_values.square().sum()), params)
    for a, b in zip(ours, ref, strict=True):
        assert torch.allclose(a, b, atol=tol * max(1.0, float(b.abs().max())))


def test_a_changed_weight_changes_the_output() -> None:
    policy = _policy()
    obs = torch.rand(8, 12)
    before = policy_forward.actor_logits(policy, obs, "fp32")
    with torch.no_grad():
        policy.action_net.weight[0, 0] += 1.0
    assert not torch.allclose(policy_forward.actor_logits(policy, obs, "fp32"), before)


def test_without_products_it_is_the_modules() -> None:
    policy = _policy()
    obs = torch.rand(8, 12)
    logits, values = policy_forward.heads(policy, obs, None)
    ref_logits, ref_values = _reference(policy, obs)
    assert torch.equal(logits, ref_logits) and torch.equal(values, ref_values)


def test_each_device_and_precision_has_its_mode_and_autocast_runs_the_modules() -> None:
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert [policy_forward.for_device(d, p) for d in (cpu, cuda) for p in ("fp32", "bf16")] == [
        "fp32", "bf16", None, "autocast"]
    policy = _policy()
    obs = torch.rand(8, 12)
    logits, values = policy_forward.heads(policy, obs, "autocast")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ref_logits, ref_values = _reference(policy, obs)
    assert logits.dtype == torch.float32
    assert torch.equal(logits, ref_logits.float()) and torch.equal(values, ref_values.float())
