"""Agent names and checkpoints, hostile inputs of round five: nested ``sampled:`` prefixes, a run's
``latest`` file that is a FIFO or endless, optimizer.pt tensors that claim more memory than the file
holds (views of repeated values) or hold NaN, float64 weights beyond float32's range, and result
counts in state.json that fit no float. Each refusal has its twin that still works.

``meta.json`` carries the other files' hashes, so a tampered file is re-hashed, as an attacker would.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")
safetensors_torch = pytest.importorskip("safetensors.torch")

from agents import checkpoint as ck  # noqa: E402
from agents import make_agent  # noqa: E402
from agents.checkpoint import CheckpointError, load_checkpoint  # noqa: E402
from agents.learned.pool import PoolAgent  # noqa: E402
from canasta_env.engine import init, observe  # noqa: E402
from canasta_env.rules import load_rules  # noqa: E402
from tests.tiny_checkpoint import rewrite_file  # noqa: E402
from train.cli.main import main as cli_main  # noqa: E402

RULES = "classic_2p"
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _edit_optimizer(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    state = torch.load(path / "optimizer.pt", weights_only=True)
    change(state)
    buffer = io.BytesIO()
    torch.save(state, buffer)
    rewrite_file(path, "optimizer.pt", buffer.getvalue())


def _plays(path: Path, name: str | None = None) -> None:
    agent = make_agent(name or str(path), RULES)
    state = init(RULES, 4, 0)
    acts = agent.act(observe(state, state.current_player), state.legal_action_mask,
                     np.random.default_rng(0))
    assert state.legal_action_mask[np.arange(4), acts].all()


# --- sampled: nested ---------------------------------------------------------------------------

def test_nested_sampled_prefixes_are_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    # before: each prefix nested a make_agent call, so 1,500 of them ended in a RecursionError
    # traceback in every command (a path-like tail let each level through)
    name = "sampled:" * 1500 + "runs/x"
    with pytest.raises(ValueError, match=r"'sampled:' takes a learned policy .*, not 'sampled:"):
        make_agent(name, RULES)
    with pytest.raises(ValueError, match=r"'sampled:' takes a learned policy"):
        make_agent("sampled:sampled:runs/x", RULES)
    assert cli_main(["gauntlet", name, "--deals", "1", "--opponents", "random"]) == 2
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and err.count("\n") == 1 and "takes a learned policy" in err, err


def test_one_sampled_prefix_still_plays_a_checkpoint(saved: Path) -> None:  # the twin
    _plays(saved, "sampled:" + str(saved))
    assert make_agent("sampled:" + str(saved), RULES).deterministic is False


# --- the run's latest file ---------------------------------------------------------------------

def _load_within(target: Path, seconds: float = 30.0) -> Any:
    """load_checkpoint(target) in a thread that may block for ever (old code on a FIFO)."""
    done: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: done.update(ckpt=load_checkpoint(target)), daemon=True)
    thread.start()
    thread.join(seconds)
    assert "ckpt" in done, f"load_checkpoint({target}) did not return within {seconds} s"
    return done["ckpt"]


@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
def test_a_latest_file_that_never_ends_is_passed_over(saved: Path, kind: str) -> None:
    # before: the FIFO blocked the load for ever; a link to /dev/zero was read until the memory ran out
    run = saved.parent
    if kind == "fifo":
        os.mkfifo(run / "latest")
    else:
        if not os.path.exists("/dev/zero"):
            pytest.skip("no /dev/zero")
        os.symlink("/dev/zero", run / "latest")
    assert _load_within(run).name == saved.name
    assert ck.latest_name(run) is None


def test_a_latest_file_naming_a_checkpoint_is_still_followed(saved: Path) -> None:  # the twin
    run = saved.parent
    older = Path(shutil.copytree(saved, run / "ckpt_000000032"))
    (run / "latest").write_text(older.name + "\n")
    assert ck.latest_name(run) == older.name
    assert _load_within(run).name == older.name


# --- optimizer.pt ------------------------------------------------------------------------------

def _first(state: dict[str, Any]) -> dict[str, Any]:
    """The optimizer state of the first parameter it holds one for."""
    return state["state"][next(iter(state["state"]))]


def _expanded(state: dict[str, Any]) -> None:  # one stored value, 10**10 elements (80 GB as float64)
    _first(state)["exp_avg"] = torch.zeros(1, dtype=torch.float64).expand(10**5, 10**5)


def _shared(state: dict[str, Any]) -> None:  # one tensor referenced 20,000 times
    first = _first(state)["exp_avg"]
    state["state"][next(iter(state["state"]))] = {f"k{i}": first for i in range(20_000)}


def _cyclic(state: dict[str, Any]) -> None:
    loop: list[Any] = []
    loop.append(loop)
    state["param_groups"][0]["extra"] = loop


def _nan(state: dict[str, Any]) -> None:
    _first(state)["exp_avg_sq"].view(-1)[0] = float("nan")


@pytest.mark.parametrize(("change", "match"), [
    (_expanded, r"its tensors hold more than the file's [\d,]+ bytes"),
    (_shared, r"its tensors hold more than the file's [\d,]+ bytes"),
    (_cyclic, r"more than 1,000,000 entries"),
    (_nan, r"holds NaN or infinite values"),
])
def test_optimizer_state_beyond_its_file_or_not_finite_is_refused(saved: Path, change: Any,
                                                                  match: str) -> None:
    # before: all four loaded; a resume's optimizer.load_state_dict then cast each reference to the
    # parameter's dtype, a copy of its own (80 GB from a file of a few KB), or spread NaN into the
    # weights at the first update
    _edit_optimizer(saved, change)
    with pytest.raises(CheckpointError, match=r"optimizer.pt: " + match) as err:
        load_checkpoint(saved)
    assert "\n" not in str(err.value) and len(str(err.value)) < 300
    _plays(saved)  # playing never parses optimizer.pt


def test_a_real_optimizer_state_still_loads(saved: Path) -> None:  # the twin
    def same(state: dict[str, Any]) -> None:
        _first(state)["exp_avg"] = _first(state)["exp_avg"] * 2.0  # a tensor of its own
    _edit_optimizer(saved, same)
    ckpt = load_checkpoint(saved)
    assert ckpt.optimizer_state is not None and _first(ckpt.optimizer_state)["exp_avg"].shape[0] == 8


# --- file sizes beyond the described network ---------------------------------------------------

@pytest.mark.parametrize("name", ["policy.safetensors", "optimizer.pt"])
def test_a_file_larger_than_its_network_can_fill_is_refused_before_reading(saved: Path, name: str) -> None:
    # before: a sparse file of zeros (no disk used) re-hashed in meta.json was read whole, twice its
    # size in memory (3 GB: 6.6 GB resident, up to 8 GB allowed); an optimizer.pt of zeros even played
    size = 16 << 20  # the [8, 8] network's files hold less than 50 KB
    rewrite_file(saved, name, bytes(size))
    with pytest.raises(CheckpointError, match=rf"meta.json: files\['{name}'\] records 16,777,216 bytes, "
                                              r"more than the [\d,]+ the network it describes can fill"):
        make_agent(str(saved), RULES)


# --- float64 weights ---------------------------------------------------------------------------

def _weights_to_float64(path: Path, key: str, value: float) -> None:
    weights = {k: v.double() for k, v in safetensors_torch.load_file(path / "policy.safetensors").items()}
    weights[key].view(-1)[0] = value
    rewrite_file(path, "policy.safetensors", safetensors_torch.save(weights))


@pytest.mark.parametrize("key", ["action_net.weight", "value_net.weight"])
def test_float64_weights_beyond_float32_are_refused(saved: Path, key: str) -> None:
    # before: 1e300 is finite, so it loaded, and became infinity in the float32 network
    _weights_to_float64(saved, key, 1e300)
    with pytest.raises(CheckpointError, match=rf"policy.safetensors: '{key}' holds weights beyond "
                                              "float32's range") as err:
        make_agent(str(saved), RULES)
    assert "\n" not in str(err.value)


def test_float64_weights_within_float32_still_load(saved: Path) -> None:  # the twin
    _weights_to_float64(saved, "value_net.weight", 3e38)
    _plays(saved)


# --- the league's results in state.json ----------------------------------------------------------

def _pool() -> PoolAgent:
    return PoolAgent(make_agent("random", RULES), num_envs=2, league={"greedy": make_agent("greedy", RULES)})


def test_result_counts_that_fit_no_float_are_left_at_zero() -> None:
    # before: np.isfinite(10**400) raised TypeError: a resume's traceback
    pool = _pool()
    pool.load_state({"latest": [10**400, 0, 0], "greedy": [True, 1, 1]})
    assert not pool.results.any()


def test_stored_result_counts_are_still_restored() -> None:  # the twin
    pool = _pool()
    pool.load_state({"latest": [3, 0.5, 1], "greedy": [0, 0, 2]})
    assert pool.results.tolist() == [[3.0, 0.5, 1.0], [0.0, 0.0, 2.0]]


# --- search: memory of a large batch -------------------------------------------------------------

def _searched_batches(monkeypatch: pytest.MonkeyPatch, limit: int) -> tuple[list[int], np.ndarray]:
    """The engine rows of each rollout batch, and the actions, of one act() over 24 games that all
    have a choice to make (k=8 worlds x n=2 candidates each), with ``MAX_WORLD_ROWS = limit``."""
    from agents import search
    from canasta_env.engine import step

    monkeypatch.setattr(search, "MAX_WORLD_ROWS", limit, raising=False)
    state = init(RULES, 24, 5)
    step(state, make_agent("heuristic", RULES).act(observe(state, state.current_player),
                                                   state.legal_action_mask, np.random.default_rng(0)))
    assert (state.legal_action_mask.sum(axis=1) > 1).all()
    agent = make_agent("search:k=8,n=2,depth=2", RULES)
    sizes: list[int] = []
    rollout = agent._rollout
    monkeypatch.setattr(agent, "_rollout", lambda st: sizes.append(st.num_games) or rollout(st))
    acts = agent.act(observe(state, state.current_player), state.legal_action_mask, np.random.default_rng(1))
    return sizes, acts


def test_a_large_batch_is_searched_in_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    # before: every row's candidates x worlds were one engine batch, so memory grew with the batch:
    # a 100-deal match at k=1024 held 2.7 GB, 26 MB more per deal (a 1,000-deal gauntlet: ~26 GB)
    sizes, _ = _searched_batches(monkeypatch, 64)
    assert len(sizes) == 6 and max(sizes) <= 64, sizes  # 4 rows x 2 candidates x 8 worlds a part


def test_searching_in_parts_chooses_the_same_actions(monkeypatch: pytest.MonkeyPatch) -> None:  # twin
    whole, together = _searched_batches(monkeypatch, 1 << 16)
    assert whole == [24 * 2 * 8]
    assert np.array_equal(_searched_batches(monkeypatch, 64)[1], together)


# --- keyword options of make_agent -----------------------------------------------------------------

@pytest.mark.parametrize(("name", "kwargs", "match"), [
    ("search", {"k": "16"}, r"^search: k = '16' is not an integer$"),
    ("search", {"k": 16.5}, r"^search: k = 16.5 is not an integer$"),
    ("search", {"seed": True}, r"^search: seed = True is not an integer$"),
    ("search", {"guard": "1"}, r"^search: guard = '1' is not a number$"),
    ("search", {"checkpoint": 5}, r"^search: checkpoint = 5 is not a path$"),
    ("search:k=4", {"n": "x"}, r"^search: n = 'x' is not an integer$"),
    ("search", {"kk": 4}, r"^agent 'search': unknown option 'kk'; options: k, n, depth, "),
    ("heuristic", {"config": 5}, r"^heuristic agent: config = 5 is not a HeuristicConfig$"),
    ("heuristic", {"style": 5}, r"^heuristic style 5 is not a string; "),
    ("greedy", {"style": "eager"}, r"^agent 'greedy': unknown option 'style'; options: none$"),
    ("zoo:classic_2p", {"deterministic": "no"},
     r"^agent 'policy': deterministic = 'no' is not True or False$"),
    ("policy", {"checkpoint": 5}, r"^agent 'policy': checkpoint = 5 is not a path$"),
])
def test_keyword_options_of_a_wrong_type_are_refused_in_one_line(name: str, kwargs: dict[str, Any],
                                                                   match: str) -> None:
    # before: k="16" and guard="1" raised TypeError from a comparison, k=16.5 and seed=True were
    # truncated to 16 and 1 in silence, checkpoint=5 and config=5 raised TypeError deep inside, an
    # unknown keyword a TypeError, and deterministic="no" (truthy) played the argmax in silence
    with pytest.raises(ValueError, match=match):
        make_agent(name, RULES, **kwargs)


def test_keyword_options_of_the_right_type_still_work(saved: Path) -> None:  # the twin
    search = make_agent("search", RULES, k=np.int64(4), n=2, depth=4, guard=1, min_gain=0, seed=3)
    assert (search.k, search.n, search.depth, search.guard) == (4, 2, 4, 1.0)
    assert make_agent("search:k=4", RULES, n=2, checkpoint=saved).policy.name == "policy:" + saved.name
    assert make_agent("heuristic", RULES, style="eager").name == "heuristic:eager"
    assert make_agent("zoo:classic_2p", RULES, deterministic=False).deterministic is False
    _plays(saved, "search:k=2,n=2,depth=2")


# --- the network's described widths against the expected layout -----------------------------------

def _widen(path: Path) -> None:
    """meta.json describes an observation input of 10**6 (its layout record unchanged), and its policy
    file grows to what that network could fill (16 MB of zeros, re-hashed)."""
    meta = json.loads((path / "meta.json").read_text())
    meta["policy"]["observation_space"]["shape"] = [10**6]
    (path / "meta.json").write_text(json.dumps(meta))
    rewrite_file(path, "policy.safetensors", bytes(16 << 20))


def test_a_network_wider_than_the_layout_is_refused_before_its_weights_are_read(
        saved: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # before: the file-size bound of a 10**6-wide network is gigabytes, and the width was compared
    # with the table's only after every file was read and hashed
    from agents.checkpoint import read

    _widen(saved)
    monkeypatch.setattr(read, "_verify", lambda *a, **k: pytest.fail("a file was read"))
    with pytest.raises(CheckpointError, match=r"meta.json: policy layout mismatch: obs_dim: its network "
                                              r"1000000, expected \d+$"):
        make_agent(str(saved), RULES)


def test_a_network_as_wide_as_the_layout_still_loads(saved: Path) -> None:  # the twin
    from agents.checkpoint import current_layout

    ckpt = load_checkpoint(saved, rules=RULES, expect_layout=current_layout(RULES))
    assert ckpt.meta["policy"]["observation_space"]["shape"] == [current_layout(RULES)["obs_dim"]]
    _widen(saved)  # without an expected layout nothing is compared before the weights
    with pytest.raises(CheckpointError, match="policy.safetensors"):
        load_checkpoint(saved)


# --- a folder named like an agent --------------------------------------------------------------------

@pytest.mark.parametrize(("name", "plays"), [("heuristic:eager", "heuristic:eager"),
                                              ("search:k=2,n=2,depth=2", "search")])
def test_an_agent_name_means_the_agent_whatever_folder_is_so_named(
        saved: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, plays: str) -> None:
    # before: a checkpoint folder of the working directory named like the agent was played instead
    monkeypatch.chdir(tmp_path)
    shutil.copytree(saved, tmp_path / name)
    assert make_agent(name, RULES).name == plays


def test_a_folder_named_like_an_agent_is_still_played_by_its_path(
        saved: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # the twin
    monkeypatch.chdir(tmp_path)
    shutil.copytree(saved, tmp_path / "heuristic:eager")
    assert make_agent("./heuristic:eager", RULES).name == "policy:heuristic:eager"
    assert make_agent("sampled:./heuristic:eager", RULES).deterministic is False
    _plays(saved, "./heuristic:eager")


@pytest.mark.parametrize(("name", "option"), [
    ("zoo:classic_2p", {"checkpoint": "agents/zoo/classic_2p"}),
    ("sampled:zoo:classic_2p", {"deterministic": True}),
    ("heuristic:eager", {"style": "hoarder"}),
    ("heuristic:eager", {"config": None}),
])
def test_a_keyword_that_repeats_what_the_name_gives_is_refused(name: str, option: dict) -> None:
    key = next(iter(option))  # before: a TypeError (a keyword given twice), or sampled: overrode it
    with pytest.raises(ValueError, match=rf"the name gives its {key}; do not pass {key}= too"):
        make_agent(name, "classic_2p", **option)


def test_keywords_the_name_does_not_give_still_pass() -> None:
    assert make_agent("zoo:classic_2p", "classic_2p", deterministic=False) is not None
    assert make_agent("heuristic", "classic_2p", style="eager") is not None


@pytest.mark.parametrize("change", [{"keep_cards": -5}, {"danger_weight": float("nan")},
                                    {"wild_keep": 10**6}])
def test_a_config_outside_the_field_ranges_is_refused(change: dict) -> None:
    import dataclasses

    from agents.rule_based.heuristic_config import HeuristicConfig

    config = dataclasses.replace(HeuristicConfig.for_rules(load_rules("classic_2p")), **change)
    with pytest.raises(ValueError, match=rf"heuristic agent: config {next(iter(change))} = .* is outside"):
        make_agent("heuristic", "classic_2p", config=config)  # heuristic:FIELD=VALUE refused it already


def test_a_config_inside_the_field_ranges_still_plays() -> None:
    from agents.rule_based.heuristic_config import HeuristicConfig

    config = HeuristicConfig.for_rules(load_rules("classic_2p"))
    assert make_agent("heuristic", "classic_2p", config=config).config == config
