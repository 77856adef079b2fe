"""Learned players: a policy network behind the agent protocol, the self-play pool of past policies,
and the model zoo of shipped checkpoints."""
