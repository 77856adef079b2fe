"""A non-editable install works outside the repository: presets resolve from package data."""

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


def test_non_editable_install_outside_repo(tmp_path: Path) -> None:
    # Build from a copy so the in-tree build (build/, *.egg-info) never touches the working tree.
    src = tmp_path / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc", "*.egg-info")
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=ignore)
        elif path.is_file():
            shutil.copy2(path, src / name)

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
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
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
