"""Thin env adapters over the engine: Gymnasium (``Canasta-v0``), PettingZoo AEC, the SB3 vector env
and RLlib; ``learner`` is the one-learner loop the single-agent ones share."""
