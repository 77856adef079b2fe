"""Behaviour cloning before PPO (``train.learning.imitation``): the demonstrations are the teacher's own
choices with the returns its episodes earned, and cloning makes the policy choose like the teacher."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agents import make_agent
from agents.learned.policy import PolicyAgent
from canasta_env.rules import load_rules
from train.common.stop_request import StoppedBeforeCheckpoint
from train.learning import imitation, lean_ppo
from train.learning.config import TrainArgs


def test_demonstrations_hold_the_teachers_legal_choices_and_discounted_returns() -> None:
    rules = load_rules("classic_2p")
    teacher = make_agent("greedy", rules)
    demos = imitation.collect(rules, teacher, make_agent("random", rules), 8, 800, seed=3, gamma=1.0)
    assert 0 < len(demos) <= 800
    assert demos.masks[torch.arange(len(demos)), demos.actions].all()  # every action was legal
    again = teacher.act(demos.obs.numpy(), demos.masks.numpy(), np.random.default_rng(0))
    assert np.array_equal(again, demos.actions.numpy())  # greedy is deterministic: its own choices
    # with gamma 1 and the reward at the hand's end, a return is the final margin: never 0 for a
    # hand that scored, and shared by the decisions of one hand
    assert (demos.returns != 0).float().mean() > 0.9
    assert len(torch.unique(demos.returns)) < len(demos) / 5


@pytest.mark.usefixtures("one_torch_thread")
def test_cloning_makes_the_policy_choose_like_the_teacher() -> None:
    rules = load_rules("classic_2p")
    teacher = make_agent("heuristic", rules)
    args = TrainArgs(num_envs=32, n_steps=8, net_arch=[64, 64], seed=0)
    model = lean_ppo.LeanPPO(args, rules, make_agent("random", rules), device=torch.device("cpu"),
                             precision="fp32")
    demos = imitation.collect(rules, teacher, make_agent("random", rules), 64, 20_000, seed=1, gamma=0.99)
    held_out = imitation.collect(rules, teacher, make_agent("random", rules), 64, 3_000, seed=2, gamma=0.99)

    def agreement() -> float:
        picks = PolicyAgent(model.policy).act(held_out.obs.numpy(), held_out.masks.numpy(), None)
        return float((picks == held_out.actions.numpy()).mean())

    before = agreement()
    stats = imitation.clone(model.policy, demos, epochs=6, batch_size=512, seed=0)
    after = agreement()
    assert before < 0.4  # an untrained network rarely picks what the heuristic picks
    assert after > 0.65 and stats["accuracy"] > 0.65, (before, after, stats)


def test_worker_processes_collect_the_same_decisions_in_the_same_order() -> None:
    rules = load_rules("classic_4p")
    one = imitation.collect(rules, "heuristic", "random", 6, 600, seed=5, gamma=0.99)
    three = imitation.collect(rules, "heuristic", "random", 6, 600, seed=5, gamma=0.99, workers=3)
    assert len(one) > 0
    for field in ("obs", "masks", "actions", "returns"):
        assert torch.equal(getattr(one, field), getattr(three, field)), field


def test_a_stop_request_ends_collection_and_cloning() -> None:
    rules = load_rules("classic_2p")
    with pytest.raises(StoppedBeforeCheckpoint):
        imitation.collect(rules, "greedy", "random", 4, 400, seed=1, gamma=0.99, should_stop=lambda: True)
    with pytest.raises(StoppedBeforeCheckpoint):
        imitation.collect(rules, "greedy", "random", 4, 400, seed=1, gamma=0.99, workers=2,
                          should_stop=lambda: True)
    demos = imitation.collect(rules, "greedy", "random", 4, 40, seed=1, gamma=0.99)
    model = lean_ppo.LeanPPO(TrainArgs(num_envs=4, n_steps=4, net_arch=[16]), rules,
                             make_agent("random", rules), device=torch.device("cpu"), precision="fp32")
    with pytest.raises(StoppedBeforeCheckpoint):
        imitation.clone(model.policy, demos, epochs=2, batch_size=8, seed=0, should_stop=lambda: True)


def test_the_teacher_can_play_several_opponents_sharing_the_envs() -> None:
    """With a list of opponents each takes an even share of the envs: the same decisions in
    processes or not, the same as one opponent when the list repeats it, others when it does not."""
    rules = load_rules("classic_2p")
    mixed = imitation.collect(rules, "greedy", ["random", "heuristic"], 6, 300, seed=7, gamma=0.99)
    apart = imitation.collect(rules, "greedy", ["random", "heuristic"], 6, 300, seed=7, gamma=0.99, workers=2)
    for field in ("obs", "masks", "actions", "returns"):
        assert torch.equal(getattr(mixed, field), getattr(apart, field)), field
    alone = imitation.collect(rules, "greedy", "random", 6, 300, seed=7, gamma=0.99)
    twice = imitation.collect(rules, "greedy", ["random", "random"], 6, 300, seed=7, gamma=0.99)
    assert torch.equal(alone.obs, twice.obs) and torch.equal(alone.actions, twice.actions)
    assert len(alone) != len(mixed) or not torch.equal(alone.obs, mixed.obs)
