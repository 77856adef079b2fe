"""canasta-rl: a fast vectorized Canasta engine for reinforcement learning.

Importing the package registers the Gymnasium id ``Canasta-v0`` (so
``gymnasium.make("canasta_env:Canasta-v0")`` works without importing first); ``env()`` and
``raw_env()`` are the PettingZoo AEC env ``canasta_v0``.
"""

from __future__ import annotations

from typing import Any

import gymnasium

from canasta_env.rules import RulesError, RuleSet, load_rules, preset_names

__version__ = "0.1.0"

if "Canasta-v0" not in gymnasium.registry:
    gymnasium.register(
        id="Canasta-v0",
        entry_point="canasta_env.envs.gym_env:CanastaEnv",
        vector_entry_point="canasta_env.envs.gym_env:make_vector",
        max_episode_steps=None,
    )


def env(rules: Any = "classic_4p", **options: Any) -> Any:
    """PettingZoo AEC env with the standard wrappers (an illegal move ends the game, -1)."""
    from canasta_env.envs.pettingzoo_env import env as _env

    return _env(rules, **options)


def raw_env(rules: Any = "classic_4p", **options: Any) -> Any:
    """PettingZoo AEC env without wrappers (an illegal move raises ``IllegalActionError``)."""
    from canasta_env.envs.pettingzoo_env import raw_env as _raw_env

    return _raw_env(rules, **options)


__all__ = ["RuleSet", "RulesError", "env", "load_rules", "preset_names", "raw_env"]
