"""``algo: ppo`` (``train.learning.lean_ppo``): a short run leaves a checkpoint every loader reads, a
seeded run
is a pure function of its seed with overlapped collection, a SIGKILLed run resumes, the options are
checked, and (with a GPU) it trains on CUDA."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")

from agents import make_agent  # noqa: E402
from agents.checkpoint import POLICY_FILE, latest_checkpoint, list_checkpoints, load_checkpoint  # noqa: E402
from train.cli.main import main as cli_main  # noqa: E402
from train.learning import config, trainer  # noqa: E402

TINY = dict(rules="classic_2p", num_envs=16, n_steps=8, batch_size=64, n_epochs=2, checkpoint_every=128,
            eval_every=10**9, eval_deals=4, progress=False, algo="ppo", device="cpu")


def _train(run: Path, steps: int = 384, **extra: object) -> Path:
    args = config.load_args(None, {**TINY, "run_dir": str(run), "total_timesteps": steps, **extra})
    return trainer.train(args)


def _sha(run: Path) -> str:
    latest = latest_checkpoint(run)
    assert latest is not None
    return hashlib.sha256((latest / POLICY_FILE).read_bytes()).hexdigest()


def test_short_run_leaves_a_checkpoint_that_plays(tmp_path: Path) -> None:
    run = _train(tmp_path / "run", eval_every=256)
    names = [p.name for p in list_checkpoints(run)]
    assert names == ["ckpt_000000128", "ckpt_000000256", "ckpt_000000384"]
    ckpt = load_checkpoint(run, rules="classic_2p")
    assert ckpt.state["num_timesteps"] == 384 and ckpt.state["n_updates"] == 3 * 2
    assert ckpt.meta["policy"]["class"].endswith("MaskableActorCriticPolicy")
    header = (run / "tb" / "progress.csv").read_text().splitlines()[0].split(",")
    for tag in ("canasta/steps_per_s", "eval_random/mean_margin", "eval_random/win_rate",
                "time/total_timesteps", "train/loss"):
        assert tag in header
    agent = make_agent(str(run), "classic_2p")
    from agents.match import play_match

    summary = play_match("classic_2p", agent, make_agent("random", "classic_2p"), 2, seed=5).summary()
    assert 0.0 <= summary["win_rate"] <= 1.0


def test_same_format_as_maskable_ppo(tmp_path: Path) -> None:
    """The lean trainer's checkpoint describes the same network as MaskablePPO's, so every
    loader built for one reads the other."""
    lean = load_checkpoint(_train(tmp_path / "lean", 128), rules="classic_2p")
    sb3 = load_checkpoint(_train(tmp_path / "sb3", 128, algo="maskable_ppo"), rules="classic_2p")
    assert lean.meta["policy"] == sb3.meta["policy"]
    assert {k: tuple(v.shape) for k, v in lean.policy_state.items()} == {
        k: tuple(v.shape) for k, v in sb3.policy_state.items()}


def test_overlapped_run_is_a_function_of_its_seed(tmp_path: Path) -> None:
    first = _sha(_train(tmp_path / "a", overlap=True))
    assert first == _sha(_train(tmp_path / "b", overlap=True))
    assert first != _sha(_train(tmp_path / "c", overlap=True, seed=1))
    # the lag matters: without overlap the same seed trains other weights
    assert first != _sha(_train(tmp_path / "d", overlap=False))


def test_engine_threads_train_the_same_weights(tmp_path: Path) -> None:
    """``engine_threads`` splits the envs' batch over threads (two chunks of 128 rows here) and
    changes nothing the learner sees."""
    big = dict(num_envs=256, n_steps=2, checkpoint_every=512)
    assert _sha(_train(tmp_path / "a", 1024, **big)) == _sha(_train(tmp_path / "b", 1024, **big,
                                                                   engine_threads=2))
    with pytest.raises(ValueError, match="engine_threads = 1000 exceeds the"):
        trainer.train(config.load_args(None, {**TINY, "run_dir": str(tmp_path / "c"),
                                              "engine_threads": 1000}))


def test_selfplay_pool_with_lean_trainer(tmp_path: Path) -> None:
    args = config.load_args(None, {**TINY, "run_dir": str(tmp_path / "sp"), "total_timesteps": 384,
                                "snapshot_every": 128})
    run = trainer.train(args, selfplay=True)
    pool = load_checkpoint(run).state["opponent_pool"]
    assert pool and all((run / name).is_dir() for name in pool)


@pytest.mark.parametrize("kill", ["rollout@20", "update@7"])
def test_sigkill_resumes(kill: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The run is killed in a subprocess; the resume, which needs no process of its own, runs here
    (``train.cli.main``, what the ``canasta`` script calls; a subprocess spends about 5 s of CPU
    importing torch and loading the kernels first)."""
    run = tmp_path / "run"
    flags = [f"--{k}={v}" for k, v in TINY.items()]
    command = ["train", *flags, "--run_dir", str(run), "--total_timesteps", "768"]
    env = {**os.environ, "CANASTA_TEST_KILL_AT": kill}
    killed = subprocess.run([sys.executable, "-m", "train.cli", *command], capture_output=True,
                            text=True, timeout=300, env=env)
    assert killed.returncode in (-9, 137), (killed.returncode, killed.stderr[-2000:])
    before = latest_checkpoint(run)
    assert before is not None, "the run died before its first checkpoint"
    counter = json.loads((before / "state.json").read_text())["num_timesteps"]
    assert not os.environ.get("CANASTA_TEST_KILL_AT")
    capsys.readouterr()
    status = cli_main([*command, "--resume"])
    assert status == 0, capsys.readouterr().err[-2000:]
    after = [json.loads((p / "state.json").read_text())["num_timesteps"] for p in list_checkpoints(run)]
    assert after == sorted(after) and after[-1] >= 768 > counter


def test_resume_continues_weights_and_counters(tmp_path: Path) -> None:
    run = _train(tmp_path / "run", 256)
    ckpt = load_checkpoint(run)
    stored = config.load_args(None, {**TINY, "run_dir": str(run)})
    resumed = config.load_args(None, {**dataclasses.asdict(stored),
                                   "total_timesteps": 384})
    trainer.train(resumed, resume=True)
    final = load_checkpoint(run)
    assert final.state["num_timesteps"] == 384 and final.state["n_updates"] == ckpt.state["n_updates"] + 2
    assert any(not torch.equal(final.policy_state[k], ckpt.policy_state[k]) for k in ckpt.policy_state)


@pytest.mark.parametrize("field, value, words", [
    ("algo", "a2c", "algo"), ("device", "tpu", "device"), ("precision", "fp16", "precision"),
    ("max_grad_norm", 0.0, "max_grad_norm"), ("vf_coef", -1.0, "vf_coef"),
    ("reward_mode", "points", "reward_mode"), ("update_threads", -1, "update_threads")])
def test_bad_options_are_refused_in_one_line(field: str, value: object, words: str) -> None:
    with pytest.raises(ValueError) as info:
        config.load_args(None, {field: value})
    assert words in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("mode, ends", [("win_loss", {-1.0, 1.0}), ("margin", None)])
def test_reward_mode_sets_what_a_hand_is_worth(mode: str, ends: set[float] | None) -> None:
    """``reward_mode: win_loss`` trains on +1/0/-1 per hand; the default on the scaled margin."""
    from train.learning.lean_ppo import LeanPPO, Rollout

    args = config.load_args(None, {**TINY, "num_envs": 64, "n_steps": 64, "reward_mode": mode})
    model = LeanPPO(args, args.rules, make_agent("random", args.rules))
    model.collect(Rollout.empty(args.n_steps, args.num_envs, model.obs_dim, model.num_actions,
                                model.device), torch.Generator().manual_seed(0))
    finals = set(model.margins)
    assert len(model.margins) > 10, "too few hands ended to tell"
    if ends is None:
        assert len(finals) > 3 and all(abs(r) < 10 for r in finals)
    else:
        assert finals <= ends | {0.0} and finals & ends


def test_bf16_with_maskable_ppo_is_refused() -> None:
    with pytest.raises(ValueError, match="bf16"):
        config.load_args(None, {"algo": "maskable_ppo", "precision": "bf16"})


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without a GPU")
def test_cuda_without_gpu_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no CUDA GPU"):
        _train(tmp_path / "run", device="cuda")
    assert not (tmp_path / "run" / "config.json").exists()


def test_auto_precision_follows_the_hardware() -> None:
    from train.learning.lean_ppo import fast_bf16, resolve_precision

    cpu = torch.device("cpu")
    assert resolve_precision("auto", cpu) == ("bf16" if fast_bf16(cpu) else "fp32")
    assert resolve_precision("fp32", cpu) == "fp32"


def test_sharded_gradients_are_the_minibatch_gradient() -> None:
    """``update_threads``: the shards' gradients, summed in shard order, are the one-thread gradient
    up to rounding, and the same bits whether the shards run on threads or one after another."""
    from train.learning.lean_ppo import LeanPPO

    def grads(model: LeanPPO, threaded: bool) -> tuple[list[torch.Tensor], torch.Tensor]:
        gen = torch.Generator().manual_seed(5)
        n = 300
        masks = torch.rand(n, model.num_actions, generator=gen) < 0.3
        masks[:, 0] = True
        actions = torch.multinomial(masks.float(), 1, generator=gen).squeeze(1)
        rows = (torch.rand(n, model.obs_dim, generator=gen), masks, actions,
                -torch.rand(n, generator=gen), torch.randn(n, generator=gen), torch.randn(n, generator=gen))
        if threaded:
            with model.shard_threads():
                assert model._update_pool is not None
                stats = model.gradients(*rows)
        else:
            stats = model.gradients(*rows)
        return [p.grad.clone() for p in model.policy.parameters()], stats

    def model(threads: int) -> LeanPPO:
        torch.manual_seed(0)
        args = config.TrainArgs(num_envs=2, n_steps=2, net_arch=[32], algo="ppo", device="cpu",
                             precision="fp32", update_threads=threads)
        return LeanPPO(args, "classic_2p", make_agent("random", "classic_2p"))

    whole, whole_stats = grads(model(1), False)
    threaded, threaded_stats = grads(model(3), True)
    inline, inline_stats = grads(model(3), False)
    assert all(torch.equal(a, b) for a, b in zip(threaded, inline, strict=True))
    assert torch.equal(threaded_stats, inline_stats)
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(whole, threaded, strict=True))
    assert torch.allclose(whole_stats, threaded_stats, atol=1e-6)
    # the shards really were summed, not the whole minibatch taken at once
    assert any(not torch.equal(a, b) for a, b in zip(whole, threaded, strict=True))


def test_sampling_follows_the_policy_and_never_picks_a_masked_action(monkeypatch: pytest.MonkeyPatch) -> None:
    """Gumbel-max draws match the probabilities, and even a uniform draw of exactly 0 (Gumbel noise
    of -inf without the floor) cannot hand a row with one legal action a masked one."""
    from agents.learned.policy import MASKED_LOGIT
    from train.learning.lean_ppo import sample

    probs = torch.tensor([0.5, 0.3, 0.15, 0.05, 0.0])
    logp = torch.log_softmax(torch.log(probs).masked_fill(probs == 0, MASKED_LOGIT), dim=0)
    draws = sample(logp.expand(200_000, -1).contiguous(), torch.Generator().manual_seed(3))
    freq = torch.bincount(draws, minlength=5).double() / draws.numel()
    assert torch.allclose(freq, probs.double(), atol=0.005)
    assert freq[4] == 0
    one_legal = torch.log_softmax(torch.full((4, 5), MASKED_LOGIT).index_fill_(1, torch.tensor([2]), 0.0), 1)
    monkeypatch.setattr(torch, "rand", lambda shape, **kw: torch.zeros(shape))
    assert sample(one_legal, torch.Generator()).tolist() == [2, 2, 2, 2]


def test_gae_matches_a_hand_computation() -> None:
    """One env, three steps, an episode end after step 1: GAE by hand with constant values."""
    from train.learning.lean_ppo import LeanPPO, Rollout

    args = config.TrainArgs(num_envs=1, n_steps=3, gamma=0.5, gae_lambda=0.5, algo="ppo", device="cpu",
                         precision="fp32")
    model = LeanPPO(args, "classic_2p", make_agent("random", "classic_2p"))
    with torch.no_grad():  # V(s) = 1 everywhere
        for p in model.policy.value_net.parameters():
            p.zero_()
        model.policy.value_net.bias.fill_(1.0)
    buf = Rollout.empty(3, 1, model.obs_dim, model.num_actions, torch.device("cpu"))
    buf.rewards[:, 0] = torch.tensor([1.0, 2.0, 0.0])
    buf.dones[:, 0] = torch.tensor([0.0, 1.0, 0.0])
    buf.last_obs = torch.zeros(1, model.obs_dim)
    adv, ret, _ = model.advantages(buf)
    d2 = 0.0 + 0.5 * 1 - 1  # -0.5
    d1 = 2.0 - 1  # episode ends: no bootstrap
    d0 = 1.0 + 0.5 * 1 - 1
    expected = [d0 + 0.25 * d1, d1, d2]
    assert np.allclose(adv[:, 0].numpy(), expected)
    assert np.allclose(ret[:, 0].numpy(), np.array(expected) + 1)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_trains_on_cuda(tmp_path: Path) -> None:
    run = _train(tmp_path / "run", device="cuda")
    assert load_checkpoint(run).state["num_timesteps"] == 384
    assert make_agent(str(run), "classic_2p").policy.device.type == "cpu"


def test_mmd_adds_the_magnet_kl_to_the_loss_and_moves_the_magnet() -> None:
    """algo mmd: the loss is PPO's plus magnet_coef * KL(policy || magnet), zero while the policy is
    the magnet and positive once it moved away; the magnet follows the policy every magnet_every
    updates."""
    import torch

    from train.learning.lean_ppo import STAT_NAMES, LeanPPO

    torch.manual_seed(0)
    args = config.load_args(None, {**TINY, "algo": "mmd", "magnet_coef": 0.5, "magnet_every": 2,
                                   "precision": "fp32", "net_arch": [32]})
    model = LeanPPO(args, "classic_2p", make_agent("random", "classic_2p"))
    assert model.magnet is not None
    gen = torch.Generator().manual_seed(1)
    n = 64
    masks = torch.rand(n, model.num_actions, generator=gen) < 0.3
    masks[:, 0] = True
    rows = (torch.rand(n, model.obs_dim, generator=gen), masks, torch.zeros(n, dtype=torch.int64),
            -torch.rand(n, generator=gen), torch.randn(n, generator=gen), torch.randn(n, generator=gen))
    kl = STAT_NAMES.index("magnet_kl")
    _, stats = model.minibatch_loss(*rows, n)
    assert float(stats[kl]) == pytest.approx(0.0, abs=1e-6)
    with torch.no_grad():
        for p in model.policy.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=gen))
    loss, stats = model.minibatch_loss(*rows, n)
    assert float(stats[kl]) > 1e-3
    given = model.magnet.log_probs(rows[0], masks, model._products)  # as update() passes them
    assert torch.equal(model.minibatch_loss(*rows, n, given)[0], loss)
    magnet = model.magnet
    model.magnet = None
    plain, _ = model.minibatch_loss(*rows, n)
    assert float((loss - plain).detach()) == pytest.approx(0.5 * float(stats[kl]), rel=1e-4)
    model.magnet = magnet
    assert not magnet.update(model.policy) and magnet.update(model.policy)  # every 2nd update
    _, stats = model.minibatch_loss(*rows, n)
    assert float(stats[kl]) == pytest.approx(0.0, abs=1e-6)


def test_mmd_selfplay_run_is_seeded_and_logs_the_magnet(tmp_path: Path) -> None:
    extra = {"algo": "mmd", "magnet_coef": 0.05, "magnet_every": 1, "snapshot_every": 128}

    def run(name: str) -> Path:
        args = config.load_args(None, {**TINY, "run_dir": str(tmp_path / name), "total_timesteps": 256,
                                       **extra})
        return trainer.train(args, selfplay=True)

    first, second = run("a"), run("b")
    assert _sha(first) == _sha(second)
    progress = (first / "tb" / "progress.csv").read_text()
    assert "train/magnet_kl" in progress.splitlines()[0]


@pytest.mark.parametrize(("extra", "words"), [({"algo": "mmd"}, "needs magnet_coef above 0"),
                                              ({"algo": "maskable_ppo", "magnet_coef": 0.1}, "lean trainer"),
                                              ({"magnet_step": 0.0}, "magnet_step"),
                                              ({"magnet_coef": -1.0}, "magnet_coef")])
def test_bad_magnet_options_are_refused_in_one_line(extra: dict[str, object], words: str) -> None:
    with pytest.raises(ValueError) as info:
        config.load_args(None, {**TINY, **extra})
    assert words in str(info.value) and "\n" not in str(info.value)
