"""``canasta_env.envs.rllib_env``: the MultiAgentEnv passes RLlib's env checker and plays turn-based
hands (only the agent to move observed, always with a legal action), and the PPO config of
``examples/rllib_ppo.py`` trains one iteration on a 2-CPU local Ray, after which its policies'
greedy moves are legal."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import torch
from ray.rllib.env.env_context import EnvContext
from ray.rllib.utils.pre_checks.env import check_multiagent_environments

from canasta_env.engine import NUM_ACTIONS, IllegalActionError
from canasta_env.envs.pettingzoo_env import raw_env
from canasta_env.envs.rllib_env import (
    CanastaMultiAgentEnv,
    play_greedy,
    policy_mapping,
    ppo_config,
    side_policies,
)

pytestmark = [
    pytest.mark.xdist_group("ray"),  # the Ray tests share one cluster (tests/train/conftest.py)
    # RLlib registers each algorithm's env under one gymnasium id; a second build in a process warns
    pytest.mark.filterwarnings("ignore:.*Overriding environment rllib-multi-agent-env-v0"),
]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "rllib_ppo.py"
TINY = {"hidden": (32,), "num_env_runners": 0, "train_batch_size": 256, "minibatch_size": 128,
        "num_epochs": 1}


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rllib_ppo_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module




def _first_legal(obs: dict[str, Any]) -> dict[str, int]:
    (agent, o), = obs.items()
    return {agent: int(np.flatnonzero(o["action_mask"])[0])}


@pytest.mark.parametrize("rules", ["classic_2p", "classic_4p"])
def test_env_passes_rllib_env_checker(rules: str) -> None:
    check_multiagent_environments(CanastaMultiAgentEnv({"rules": rules, "seed": 1}))


@pytest.mark.parametrize("rules", ["classic_2p", "classic_4p"])
def test_random_legal_rollout_observes_only_the_agent_to_move(rules: str) -> None:
    env = CanastaMultiAgentEnv({"rules": rules, "seed": 5, "illegal_action": "raise"})
    rng = np.random.default_rng(0)
    for _ in range(3):
        obs, _ = env.reset()
        while True:
            (agent, o), = obs.items()
            assert agent == env._aec.agent_selection
            assert env.observation_spaces[agent].contains(o)
            legal = np.flatnonzero(o["action_mask"])
            assert legal.size >= 1
            obs, rewards, terminateds, truncateds, _ = env.step({agent: int(rng.choice(legal))})
            assert agent in rewards and set(rewards) <= set(env.possible_agents)
            if terminateds["__all__"] or truncateds["__all__"]:
                break
            assert len(obs) == 1
        assert set(obs) == set(env.possible_agents)
        assert all(not o["action_mask"].any() for o in obs.values())
        assert terminateds["__all__"] and all(terminateds[a] for a in env.possible_agents)
        r = [rewards.get(f"player_{i}", 0.0) for i in range(len(env.possible_agents))]
        if rules == "classic_4p":  # partners share their side's reward
            assert r[0] == r[2] and r[1] == r[3]
        assert r[0] == pytest.approx(-r[1])


def test_seeded_resets_are_reproducible_and_play_the_pettingzoo_deals() -> None:
    def hand(env: CanastaMultiAgentEnv, seed: int | None) -> list[Any]:
        obs, _ = env.reset(seed=seed)
        seen = []
        while len(obs) == 1:
            seen.append(next(iter(obs.values()))["observations"].copy())
            obs, *_ = env.step(_first_legal(obs))
        return seen

    a = hand(CanastaMultiAgentEnv({"seed": 11}), None)
    b = hand(CanastaMultiAgentEnv({"seed": 3}), 11)
    assert len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    aec = raw_env("classic_2p")
    aec.reset(seed=11)
    assert np.array_equal(aec.observe(aec.agent_selection)["observation"], a[0])
    other = CanastaMultiAgentEnv(EnvContext({"seed": 11}, worker_index=1))
    assert not np.array_equal(other.reset()[0][other._aec.agent_selection]["observations"], a[0])


def test_illegal_action_terminates_or_raises() -> None:
    env = CanastaMultiAgentEnv({"seed": 2})
    obs, _ = env.reset()
    (agent, o), = obs.items()
    illegal = int(np.flatnonzero(o["action_mask"] == 0)[0])
    obs, rewards, terminateds, _, _ = env.step({agent: illegal})
    assert terminateds["__all__"] and rewards == {agent: -1.0} and set(obs) == set(env.possible_agents)
    with pytest.raises(ValueError, match="call reset"):
        env.step({agent: 0})
    strict = CanastaMultiAgentEnv({"seed": 2, "illegal_action": "raise"})
    strict.reset()
    with pytest.raises(IllegalActionError):
        strict.step({agent: illegal})
    with pytest.raises(ValueError, match="unknown config keys"):
        CanastaMultiAgentEnv({"rule": "classic_2p"})


@pytest.mark.parametrize(("value", "says"), [("x", "got 'x' (str)"), ([1], "got [1] (list)"),
                                            (float("nan"), "got nan"), (True, "got True")])
def test_a_bad_illegal_reward_is_refused_naming_the_key(value: object, says: str) -> None:
    with pytest.raises(ValueError) as info:
        CanastaMultiAgentEnv({"illegal_reward": value})
    message = str(info.value)
    assert message.startswith("CanastaMultiAgentEnv: config 'illegal_reward' must be a finite number")
    assert says in message and "\n" not in message


def test_a_numeric_illegal_reward_is_the_offenders_reward() -> None:
    env = CanastaMultiAgentEnv({"seed": 2, "illegal_reward": np.int64(-3)})
    (agent, o), = env.reset()[0].items()
    _, rewards, terminateds, _, _ = env.step({agent: int(np.flatnonzero(o["action_mask"] == 0)[0])})
    assert terminateds["__all__"] and rewards == {agent: -3.0} and type(rewards[agent]) is float


def test_side_policies() -> None:
    assert side_policies("classic_2p") == {"player_0": "side_0", "player_1": "side_1"}
    assert side_policies("classic_4p") == {"player_0": "side_0", "player_1": "side_1",
                                           "player_2": "side_0", "player_3": "side_1"}
    assert set(side_policies("classic_3p").values()) == {"side_0", "side_1", "side_2"}
    assert set(side_policies("classic_4p", shared=True).values()) == {"shared"}
    assert policy_mapping("classic_4p")("player_3", None) == "side_1"


def test_ppo_trains_one_iteration_and_greedy_moves_are_legal(cluster: str, one_torch_thread: None) -> None:
    algo = ppo_config("classic_2p", seed=0, **TINY).build_algo()
    try:
        result = algo.train()
        assert result["num_env_steps_sampled_lifetime"] >= TINY["train_batch_size"]
        assert {"side_0", "side_1"} <= set(result["learners"])
        env = CanastaMultiAgentEnv({"seed": 99})
        rng = np.random.default_rng(1)
        observations = []
        obs, _ = env.reset()
        while len(observations) < 200:  # fresh observations of both seats, random legal play
            (agent, o), = obs.items()
            observations.append(o)
            obs, _, terminateds, *_ = env.step({agent: int(rng.choice(np.flatnonzero(o["action_mask"])))})
            if terminateds["__all__"]:
                obs, _ = env.reset()
        batch = {"obs": {k: torch.from_numpy(np.stack([o[k] for o in observations]))
                         for k in ("observations", "action_mask")}}
        masks = batch["obs"]["action_mask"].numpy().copy()
        for policy in ("side_0", "side_1"):
            with torch.no_grad():
                logits = algo.get_module(policy).forward_inference(
                    {"obs": dict(batch["obs"])})["action_dist_inputs"]
            assert logits.shape == (len(observations), NUM_ACTIONS)
            greedy = logits.argmax(dim=1).numpy()
            assert masks[np.arange(len(greedy)), greedy].all()
        assert play_greedy(algo, hands=1, seed=7) > 0
    finally:
        algo.stop()


def test_example_script_trains_and_plays_legal_moves(cluster: str, one_torch_thread: None,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    rc = _example().main(["--rules", "classic_4p", "--shared", "--iterations", "1",
                          "--num-env-runners", "0", "--train-batch-size", "256",
                          "--minibatch-size", "128", "--num-epochs", "1", "--hidden", "32",
                          "--greedy-hands", "1"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "iter 1, " in out and "shared: return" in out
    assert "greedy play: 1 hand(s)" in out and "all legal" in out


HIDE_RAY = """
import importlib.abc, runpy, sys
import canasta_env, canasta_env.envs.gym_env, canasta_env.envs.pettingzoo_env, canasta_env.envs.learner
assert not [m for m in sys.modules if m.partition(".")[0] == "ray"], "canasta_env imported ray"
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "ray":
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, Hide())
sys.argv = ["rllib_ppo.py", "--iterations", "1"]
runpy.run_path({example!r}, run_name="__main__")
"""


def test_without_ray_the_package_imports_and_the_example_names_the_extra() -> None:
    proc = subprocess.run([sys.executable, "-c", HIDE_RAY.format(example=str(EXAMPLE))],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    (line,) = [x for x in proc.stderr.splitlines() if x.strip()]
    assert 'pip install "canasta-rl[rllib]"' in line, line
