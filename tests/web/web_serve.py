"""Helpers of the web tests that start ``canasta serve`` and watch files (a module of its own, not
conftest: a test module's ``from conftest import`` finds whichever conftest came first on the path)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from scripts.web_local import free_port

REPO = Path(__file__).resolve().parents[2]
WEB_TESTS = Path(__file__).resolve().parent


def files_of(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``folder`` with its bytes and modification time (links as their target)."""
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else b"", p.lstat().st_mtime_ns)
            for p in sorted(folder.rglob("*"))}


Served = tuple[str, Path, Path]  # base URL, record dir, log file


def start_serve(folder: Path, procs: list[Any], *options: str, env: dict[str, str] | None = None) -> Served:
    """``canasta serve *options`` in a subprocess on a free port with its record dir and log in
    ``folder`` (tests/web on its path, so ``--opponent web_drill:SlowAgent`` works), once it
    answers; the process and its log are added to ``procs`` for ``stop_all``."""
    port = free_port()
    record_dir = folder / f"records{len(procs) or ''}"
    log_path = folder / f"serve{len(procs)}.log"
    cmd = [sys.executable, "-m", "train.cli", "serve", "--rules", "classic_2p", "--hands", "1",
           "--port", str(port), "--record-dir", str(record_dir), *options]
    if "--opponent" not in options:
        cmd += ["--opponent", "heuristic"]
    log = open(log_path, "w+")  # noqa: SIM115 - read back on failure, closed by stop_all
    path = os.pathsep.join([str(WEB_TESTS), str(REPO), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": path, **(env or {})}
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=env)
    procs.append((proc, log))
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120  # a cold numba cache compiles first (CI warms it before)
    while True:
        try:
            if httpx.get(f"{url}/api/config", timeout=2).status_code == 200:
                return url, record_dir, log_path
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            log.seek(0)
            raise AssertionError(f"canasta serve did not start:\n{log.read()}")
        time.sleep(0.2)


def stop_all(procs: list[Any]) -> None:
    """Stop the servers ``start_serve`` started."""
    for proc, log in procs:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
