"""PettingZoo-style versioned module: ``from canasta_env import canasta_v0; canasta_v0.env()``."""

from canasta_env.envs.pettingzoo_env import env, raw_env

__all__ = ["env", "raw_env"]
