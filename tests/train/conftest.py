"""One local Ray cluster (2 CPUs) for every test that needs one: the Ray modules share the xdist
group ``ray``, so they run in one worker, which starts the cluster once."""

from __future__ import annotations

from collections.abc import Iterator

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
