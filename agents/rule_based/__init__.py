"""Rule-based players: the random baseline, the heuristic player and its style population."""
