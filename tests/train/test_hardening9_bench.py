"""``canasta bench``: a batch too large for the memory left is refused in one line naming ``--batch``
and the bound, before any measurement (it was the engine's message, naming neither, and only when that
batch's turn came); a warm-up of ``--batch`` x ``--stagger`` that would run for hours untimed is
refused; an address-space limit (``ulimit -v``) counts as memory. Each with its valid neighbour."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from canasta_env.engine import core
from train.bench import engine
from train.cli import bench

Cli = Callable[..., tuple[int, str]]
GIB = 2**30


def _per_game(rules: str, api: str = "engine") -> int:
    from canasta_env.engine.core import batch_bytes
    from canasta_env.engine.layout import pack_params
    from canasta_env.envs.learner import vector_env_bytes
    from canasta_env.envs.sb3_env import INFO_BYTES
    from canasta_env.rules import load_rules

    if api == "vec":
        return vector_env_bytes(load_rules(rules), "hand", 1) + INFO_BYTES + engine.VEC_LOOP_BYTES
    return batch_bytes(pack_params(load_rules(rules), "hand"), 1, engine.LOOP_BYTES)


@pytest.fixture
def measured(monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """The batch lists ``run_bench`` and ``run_env_bench`` were called with (nothing measured)."""
    calls: list[list[int]] = []

    def record(*args: object, **kwargs: object) -> list[object]:
        calls.append(list(args[1] if isinstance(args[0], list) else args[2]))  # type: ignore[call-overload]
        return []

    monkeypatch.setattr(bench, "run_bench", record)
    monkeypatch.setattr(bench, "run_env_bench", record)
    return calls


@pytest.mark.parametrize("api", ["engine", "vec"])
def test_a_batch_past_the_memory_left_names_batch_and_the_bound_before_measuring(
        cli_here: Cli, monkeypatch: pytest.MonkeyPatch, measured: list[list[int]], api: str) -> None:
    monkeypatch.setattr(core, "available_memory", lambda: GIB)
    most = GIB // _per_game("classic_2p", api)
    status, err = cli_here("bench", "--api", api, "--batch", "1", str(most + 1), "--rules", "classic_2p",
                           "--stagger", "0", "--json")
    assert status == 2 and err.count("\n") == 1, err
    assert err.startswith(f"canasta bench: error: --batch {most + 1}: at most {most:,} classic_2p "), err
    assert "use a smaller --batch" in err and measured == []  # batch 1 was not measured first
    status, err = cli_here("bench", "--api", api, "--batch", "1", str(most), "--rules", "classic_2p",
                           "--stagger", "0", "--json")
    assert status == 0 and measured == [[1, most]], err


def test_the_bound_is_the_tightest_rule_set_and_unknown_memory_refuses_nothing(
        cli_here: Cli, monkeypatch: pytest.MonkeyPatch, measured: list[list[int]]) -> None:
    monkeypatch.setattr(core, "available_memory", lambda: GIB)
    widest = max(("classic_2p", "railroad_4p"), key=_per_game)
    most = GIB // _per_game(widest)
    status, err = cli_here("bench", "--batch", str(most + 1), "--rules", "classic_2p", "railroad_4p",
                           "--stagger", "0", "--json")
    assert status == 2 and f"at most {most:,} {widest} games" in err, err
    monkeypatch.setattr(core, "available_memory", lambda: None)
    status, err = cli_here("bench", "--batch", str(most + 1), "--rules", "classic_2p", "railroad_4p",
                           "--stagger", "0", "--json")
    assert status == 0 and measured == [[most + 1]], err


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads /proc/self/status")
def test_available_memory_counts_an_address_space_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    import resource

    mapped = next(int(line.split()[1]) * 1024 for line in Path("/proc/self/status").read_text().splitlines()
                  if line.startswith("VmSize:"))
    monkeypatch.setattr(resource, "getrlimit", lambda what: (mapped + GIB, resource.RLIM_INFINITY))
    left = core.available_memory()
    assert left is not None and 0 < left <= GIB
    monkeypatch.setattr(resource, "getrlimit", lambda what: (resource.RLIM_INFINITY,) * 2)
    unlimited = core.available_memory()
    monkeypatch.setattr(core, "_address_space_left", lambda: None)
    avail = core.available_memory()
    assert unlimited is not None and avail is not None and abs(unlimited - avail) < 256 * 2**20


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads /proc/self/status")
def test_under_ulimit_v_a_large_batch_is_refused_with_its_bound() -> None:
    """Under ``ulimit -v`` the engine's estimate (physical memory) passed, the allocation failed, and
    the line named no bound."""
    code = ("import resource, sys\n"
            "resource.setrlimit(resource.RLIMIT_AS, (6 * 2**30, resource.getrlimit(resource.RLIMIT_AS)[1]))\n"
            "from train.cli.main import main\n"
            "sys.exit(main(['bench', '--rules', 'classic_2p', '--stagger', '0', '--seconds', '0.05',"
            " '--json', '--batch', sys.argv[1]]))\n")
    proc = subprocess.run([sys.executable, "-c", code, "4000000"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "canasta bench: error: --batch 4000000: at most " in proc.stderr, proc.stderr
    proc = subprocess.run([sys.executable, "-c", code, "2"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and '"batch": 2' in proc.stdout, proc.stderr


@pytest.mark.parametrize("api, fits, too_many", [("engine", 2**21, 2**21 + 1), ("vec", 2_000_000, 2_100_000)])
def test_a_warm_up_of_hours_is_refused_naming_batch_and_stagger(
        cli_here: Cli, monkeypatch: pytest.MonkeyPatch, measured: list[list[int]],
        api: str, fits: int, too_many: int) -> None:
    """``--batch 16777216`` at the default ``--stagger 512``: about 8.6e9 untimed decisions (hours)
    before the first timed step, with nothing printed under ``--json``."""
    monkeypatch.setattr(core, "available_memory", lambda: None)
    status, err = cli_here("bench", "--api", api, "--batch", str(too_many), "--rules", "classic_2p", "--json")
    assert status == 2 and err.count("\n") == 1, err
    assert f"--batch {too_many} x --stagger 512:" in err and "lower --stagger or --batch" in err, err
    assert measured == []
    status, err = cli_here("bench", "--api", api, "--batch", str(fits), "--rules", "classic_2p", "--json")
    assert status == 0 and measured == [[fits]], err
    status, err = cli_here("bench", "--api", api, "--batch", str(too_many), "--stagger", "0", "--rules",
                           "classic_2p", "--json")
    assert status == 0 and measured[-1] == [too_many], err


def test_a_vec_seed_whose_envs_pass_2_64_names_seed_before_measuring(
        cli_here: Cli, measured: list[list[int]]) -> None:
    """Env i plays seed ``--seed + i``: the line came from ``CanastaVecEnv.seed``, after the smaller
    batches had been measured."""
    top = 2**64 - 4
    status, err = cli_here("bench", "--api", "vec", "--batch", "1", "4", "--seed", str(top + 1), "--rules",
                           "classic_2p", "--json")
    assert status == 2 and err.count("\n") == 1 and measured == [], err
    assert f"--seed {top + 1}: env i of --batch 4" in err and f"at most {top}" in err, err
    status, err = cli_here("bench", "--api", "vec", "--batch", "1", "4", "--seed", str(top), "--rules",
                           "classic_2p", "--json")
    assert status == 0 and measured == [[1, 4]], err


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads /proc/self/status")
def test_under_ulimit_v_the_engine_refuses_a_batch_before_allocating_it() -> None:
    """The library's own check: a ``MemoryError`` from numpy, not the one-line refusal, under a limit."""
    code = ("import resource, sys\n"
            "resource.setrlimit(resource.RLIMIT_AS, (6 * 2**30, resource.getrlimit(resource.RLIMIT_AS)[1]))\n"
            "from canasta_env.engine import init\n"
            "try:\n"
            "    init('classic_2p', int(sys.argv[1]))\n"
            "except ValueError as e:\n"
            "    sys.exit(str(e))\n")

    def run(batch: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", code, batch], capture_output=True, text=True,
                              timeout=300)

    proc = run("4000000")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("init: a batch of 4,000,000 classic_2p games needs"), proc.stderr
    assert run("2").returncode == 0
