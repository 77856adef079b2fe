"""RNG states in a checkpoint's ``state.json``: capture, restore, and check before restoring.

``rng_state()`` gathers Python's ``random``, numpy's global RNG, torch (CPU, and CUDA when present)
and named numpy generators as JSON-able data; ``restore_rng_state()`` sets them back, so a resumed
run draws what the uninterrupted one would have. ``_rng_problem()`` tries a stored state on throwaway
generators (a named generator's on a new bit generator of the class it names, from numpy's five),
which is how ``validate_state`` refuses an unusable one without touching a global RNG.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import numpy as np

from agents.checkpoint.format import _json_round_trip, _one_line

_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")  # numpy's, tried by name


def rng_state(generators: Mapping[str, np.random.Generator] | None = None) -> dict[str, Any]:
    """JSON-able RNG states: Python ``random``, numpy's global RNG, torch (CPU, and CUDA when
    present) and the named numpy ``generators``."""
    import torch

    version, internal, gauss = random.getstate()
    out: dict[str, Any] = {
        "python": [version, list(internal), gauss],
        "numpy": _json_round_trip(np.random.get_state(legacy=False)),
        "torch": torch.get_rng_state().tolist(),
        "generators": {k: _json_round_trip(g.bit_generator.state) for k, g in (generators or {}).items()},
    }
    if torch.cuda.is_available():
        out["torch_cuda"] = [s.tolist() for s in torch.cuda.get_rng_state_all()]
    return out


def restore_rng_state(state: Mapping[str, Any],
                      generators: Mapping[str, np.random.Generator] | None = None) -> None:
    """Set the RNGs from ``rng_state()``'s output; each named generator must be in ``state``."""
    import torch

    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    np.random.set_state(state["numpy"])
    torch.set_rng_state(torch.tensor(state["torch"], dtype=torch.uint8))
    if "torch_cuda" in state and torch.cuda.is_available():  # one state a device; fewer devices now:
        # the first ones (setting a device that is not there fails at CUDA's first use, not here)
        torch.cuda.set_rng_state_all([torch.tensor(s, dtype=torch.uint8)
                                      for s in state["torch_cuda"][:torch.cuda.device_count()]])
    stored = state.get("generators", {})
    for key, gen in (generators or {}).items():
        if key not in stored:
            raise KeyError(f"no RNG state stored for generator {key!r}")
        gen.bit_generator.state = stored[key]


def _rng_problem(rng: Any) -> str | None:
    """Why ``rng_state()`` output is unusable, tried on fresh generators; None if it is fine."""
    import torch

    if not isinstance(rng, dict) or not {"python", "numpy", "torch"} <= set(rng):
        return "want a mapping with 'python', 'numpy' and 'torch' states"
    generators = rng.get("generators", {})
    cuda = rng.get("torch_cuda", [])
    try:
        version, internal, gauss = rng["python"]
        if not (isinstance(internal, list) and all(type(i) is int for i in internal)):
            return "python: want a list of integers"
        random.Random().setstate((version, tuple(internal), gauss))
        np.random.RandomState().set_state(rng["numpy"])
        if not (isinstance(rng["torch"], list) and all(type(i) is int for i in rng["torch"])):
            return "torch: want a list of integers"
        torch.Generator().set_state(torch.tensor(rng["torch"], dtype=torch.uint8))
        if not (isinstance(cuda, list) and all(isinstance(s, list) and all(
                type(i) is int and 0 <= i <= 255 for i in s) for s in cuda)):
            return "torch_cuda: want lists of byte values"
        if not isinstance(generators, dict) or not all(
                isinstance(g, dict) and g.get("bit_generator") in _BIT_GENERATORS
                for g in generators.values()):
            return f"generators: want a mapping of bit-generator states ({', '.join(_BIT_GENERATORS)})"
        for g in generators.values():
            getattr(np.random, g["bit_generator"])().state = g
    except (TypeError, ValueError, LookupError, RuntimeError, OverflowError) as exc:
        return f"unusable ({_one_line(exc)})"
    return None
