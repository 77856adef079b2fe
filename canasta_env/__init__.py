"""canasta-rl: a fast vectorized Canasta engine for reinforcement learning."""

from canasta_env.rules import RulesError, RuleSet, load_rules, preset_names

__all__ = ["RuleSet", "RulesError", "load_rules", "preset_names"]
__version__ = "0.1.0"
