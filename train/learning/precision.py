"""Where and how precisely the lean PPO computes: the device (``resolve_device``), fp32 or bf16
(``resolve_precision``, ``fast_bf16``; behaviour cloning's CPU bf16 is ``bf16_matmuls``) and the
threads of a sharded update (``resolve_update_threads``). Each choice is a property of the machine,
never a timing, so a run's choices are reproducible. Apart from the PPO loop (``lean_ppo``), which
only reads them, and which behaviour cloning's warm start does not need for its bf16.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def bf16_matmuls(enabled: bool) -> Iterator[None]:
    """Behaviour cloning's CPU bf16 (the trainer's is ``policy_forward``): fp32 tensors whose matrix
    products oneDNN computes in bf16
    (``torch.set_float32_matmul_precision("medium")``), restored on exit. Autocast instead casts
    every activation to bf16, and elementwise ops on bf16 tensors are slow on the CPU (a (2048, 256)
    Tanh 4-5x slower than in fp32): measured on one AMX core, a PPO update of 8,192 steps took 0.58 s
    under autocast, 0.48 s this way and 0.79 s in fp32."""
    before = torch.get_float32_matmul_precision()
    if enabled:
        torch.set_float32_matmul_precision("medium")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


def resolve_device(name: str) -> torch.device:
    """``auto``: CUDA when torch sees a GPU, else the CPU; ``cuda`` without a GPU is refused."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("training option device = 'cuda', but torch sees no CUDA GPU "
                         "(torch.cuda.is_available() is false); use device 'cpu' or 'auto'")
    return torch.device(name)


def fast_bf16(device: torch.device) -> bool:
    """Whether bf16 matrix products are fast on ``device``: a CUDA GPU with bf16 support, or a CPU
    with AMX tiles or AVX-512 BF16. Measured on an AVX2-only CPU (AMD EPYC, 2 cores): a [256, 256]
    minibatch step takes 29 ms in fp32 and 374 ms under bf16 autocast, so elsewhere bf16 is off."""
    if device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    cpu = torch.cpu
    return bool(getattr(cpu, "_is_amx_tile_supported", lambda: False)()
                or getattr(cpu, "_is_avx512_bf16_supported", lambda: False)())


def resolve_update_threads(n: int, device: torch.device) -> int:
    """``update_threads``; 0 (auto) is 1 on a GPU and the CPU's cores up to 2 on the CPU. Two
    shard threads nearly halve a minibatch's gradient on an idle 2-core machine
    (``scripts/bench_update.py``: [256, 256] MLP, minibatch 2048, 56 ms on one thread, 33 ms on
    two), and while the collector runs the three threads share the two cores without spinning,
    unlike a second torch (OpenMP) thread."""
    if n:
        return n
    return 1 if device.type == "cuda" else min(2, os.cpu_count() or 1)


def resolve_precision(name: str, device: torch.device) -> str:
    """``fp32`` or ``bf16``: ``auto`` is bf16 where ``fast_bf16`` says so (a property of the machine,
    not a timing, so the choice is reproducible)."""
    if name == "auto":
        return "bf16" if fast_bf16(device) else "fp32"
    return name
