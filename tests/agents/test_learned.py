"""The learned-policy agent: legal actions only, and blind to hidden cards."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from sb3_contrib import MaskablePPO  # noqa: E402

from agents.learned.policy import PolicyAgent  # noqa: E402
from canasta_env.engine import init, observe, reset_rows, step  # noqa: E402
from canasta_env.envs.sb3_env import CanastaVecEnv  # noqa: E402
from canasta_env.policy import RowRandom, stream_keys  # noqa: E402
from canasta_env.testing import keyed_actions, resample_hidden  # noqa: E402


@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("deterministic", [True, False])
def test_policy_agent_is_legal_and_blind_to_hidden_cards(deterministic: bool) -> None:
    model = MaskablePPO("MlpPolicy", CanastaVecEnv(4, "classic_2p"), seed=0, device="cpu")
    agent = PolicyAgent(model.policy, deterministic=deterministic)
    state = init("classic_2p", 64, seed=3)
    rng = np.random.default_rng(0)
    for i in range(300):
        seats = state.current_player.astype(np.int64)
        live = np.flatnonzero(state.legal_action_mask.any(axis=1))
        keys = RowRandom(stream_keys(np.full(live.size, i, dtype=np.uint64), live, 7))
        acts = agent.act(observe(state, seats[live], rows=live), state.legal_action_mask[live], keys)
        assert state.legal_action_mask[live, acts].all()
        if i % 30 == 0:  # the same action after everything hidden is redealt
            b = int(live[0])
            one = init("classic_2p", 1)
            one.data[:] = state.data[b]
            one.refresh_mask()
            p = int(seats[b])
            other = resample_hidden(one, p, rng)
            draw = [RowRandom(stream_keys(np.array([9], dtype=np.uint64), np.array([i]), 7))
                    for _ in range(2)]
            a1 = agent.act(observe(one, [p]), one.legal_action_mask, draw[0])
            a2 = agent.act(observe(other, [p]), other.legal_action_mask, draw[1])
            assert a1[0] == a2[0]
        result = step(state, keyed_actions(state.data, state.legal_action_mask, 3, True))
        reset_rows(state, np.flatnonzero(result.terminated | result.truncated))
