"""One local Ray cluster (2 CPUs) for every test that needs one: the Ray modules share the xdist
group ``ray``, so they run in one worker, which starts the cluster once."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest


@pytest.fixture(scope="session")
def cluster() -> Iterator[str]:
    """The running cluster's address, for subprocesses to join."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="warning")
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


@pytest.fixture
def cli_here(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str]]:
    """``cli_here(*args)``: a ``canasta`` command run in this process (``train.cli.main``, what
    the ``canasta`` script calls; a subprocess spends seconds importing torch first): its exit
    status and what it wrote to stderr."""
    from train.cli.main import main

    def run(*args: str) -> tuple[int, str]:
        capsys.readouterr()
        try:
            status = main(list(args))
        except SystemExit as exc:  # argparse's own errors
            status = exc.code if isinstance(exc.code, int) else 1
        return status, capsys.readouterr().err

    return run
