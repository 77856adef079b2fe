"""A non-editable install works outside the repository: presets resolve from package data, and the
wheel installed with no extras into a fresh virtual environment runs what the base install promises."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# What the sdist/wheel build reads: pyproject.toml, the readme/license it names, the packages.
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "canasta_env", "agents", "train")


def _setuptools_can_build() -> bool:
    """True when this interpreter's setuptools meets pyproject's build requirement (>= 77)."""
    try:
        major = int(metadata.version("setuptools").split(".")[0])
    except (metadata.PackageNotFoundError, ValueError):
        return False
    return major >= 77


def _source_copy(tmp_path: Path) -> Path:
    """What the build reads, copied so the in-tree build (build/, *.egg-info) never touches the
    working tree."""
    src = tmp_path / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc", "*.egg-info")
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=ignore)
        elif path.is_file():
            shutil.copy2(path, src / name)
    return src


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}


def test_non_editable_install_outside_repo(tmp_path: Path) -> None:
    src = _source_copy(tmp_path)
    target = tmp_path / "site"
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-compile", "--quiet",
           "--disable-pip-version-check", "--target", str(target)]
    if _setuptools_can_build():
        # Fast path: build with the venv's setuptools instead of fetching one into an isolated env.
        cmd.append("--no-build-isolation")
    cmd.append(str(src))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"pip install failed:\n{proc.stdout}\n{proc.stderr}"

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = _clean_env()
    env["PYTHONPATH"] = str(target)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    code = (
        "import canasta_env\n"
        "from canasta_env.rules import load_rules\n"
        "print(load_rules('classic_4p').num_players)\n"
        "print(canasta_env.__file__)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.strip().splitlines()
    assert lines[0] == "4"
    imported_from = Path(lines[-1]).resolve()
    assert imported_from.is_relative_to(target.resolve()), imported_from
    assert not imported_from.is_relative_to(REPO)

    installed = target / "canasta_env"
    shipped = {p.name for p in (installed / "presets").glob("*.yaml")}
    assert {"classic_2p.yaml", "classic_3p.yaml", "classic_4p.yaml", "regal_4p.yaml"} <= shipped
    deal_sets = {p.name for p in (installed / "deal_sets").glob("*.npz")}
    assert {"classic_2p-v1.npz", "classic_3p-v1.npz", "classic_4p-v1.npz"} <= deal_sets
    assert (installed / "py.typed").is_file()
    assert (target / "bin" / "canasta").is_file()  # the console script entry point
    web = {p.name for p in (target / "train" / "web" / "static").iterdir()}  # canasta serve's page
    assert {"index.html", "replay.html", "table.css", "cards.js", "render.js", "table.js", "replay.js"} <= web


def test_wheel_without_extras_in_a_fresh_venv(tmp_path: Path) -> None:
    """The README's base install (``pip install canasta-rl``): the env, the benchmark and
    ``canasta play`` work; a command that needs an extra says which in one line."""
    src = _source_copy(tmp_path)
    dist = tmp_path / "dist"
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--disable-pip-version-check",
             "-w", str(dist), str(src)]
    if _setuptools_can_build():
        build.insert(4, "--no-build-isolation")
    proc = subprocess.run(build, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"wheel build failed:\n{proc.stdout}\n{proc.stderr}"
    (wheel,) = dist.glob("canasta_rl-*.whl")

    # The venv gets no pip of its own (ensurepip took longer than the install): this interpreter's
    # pip installs into it (--python), resolving the wheel's base dependencies as a plain
    # `pip install` there would; --no-compile skips byte-compiling numpy, numba and the rest (most of
    # the install's time; Python compiles what it imports).
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py, canasta = venv / "bin" / "python", venv / "bin" / "canasta"
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--quiet",
                           "--no-compile", "--disable-pip-version-check", str(wheel)],
                          capture_output=True, text=True, timeout=600, env=_clean_env())
    assert proc.returncode == 0, f"pip install failed:\n{proc.stdout}\n{proc.stderr}"

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(args), cwd=elsewhere, env=_clean_env(), input=stdin,
                              capture_output=True, text=True, timeout=300)

    for extra_only in ("torch", "stable_baselines3", "tqdm", "pandas"):
        assert run(str(py), "-c", f"import {extra_only}").returncode != 0, f"base install has {extra_only}"

    code = ("import canasta_env\n"
            "env = canasta_env.env('classic_2p')\n"
            "env.reset(seed=0)\n"
            "print(len(env.agents), canasta_env.__file__)\n")
    proc = run(str(py), "-c", code)
    assert proc.returncode == 0, proc.stderr
    count, where = proc.stdout.split()
    assert count == "2" and Path(where).resolve().is_relative_to(venv.resolve())

    proc = run(str(canasta), "bench", "--rules", "classic_2p", "--seconds", "1", "--batch", "64")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "decisions/s" in proc.stdout

    proc = run(str(canasta), "play", "--opponent", "greedy", "--seed", "3", stdin="1\n" * 200)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "P0 you" in proc.stdout and "Traceback" not in proc.stderr

    proc = run(str(canasta), "serve", "--port", "0")  # the web extra is missing: one line that names it
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        "canasta serve: error: this needs the 'web' extra (module 'h11' is not installed): "
        'pip install "canasta-rl[web]"'], proc.stderr[-2000:]

    proc = run(str(canasta), "tournament", "--rules", "classic_2p", "--agents", "random", "greedy",
               "--hands", "4")
    if proc.returncode != 0:  # evaluation's extra is missing: one line that names it
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-2000:]
        assert "canasta-rl[eval]" in lines[0], lines[0]
