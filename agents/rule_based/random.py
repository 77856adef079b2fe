"""The uniform random agent (defined in ``canasta_env.policy`` so the adapters need nothing above the
engine); re-exported here so every agent lives under ``agents``."""

from canasta_env.policy import RandomAgent, random_act

__all__ = ["RandomAgent", "random_act"]
