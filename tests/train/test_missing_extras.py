"""A command whose extra is not installed ends with one line naming the extra (the modules are
hidden from a subprocess by an import hook, as if the extra had never been installed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HIDE = """
import importlib.abc, sys
HIDDEN = {hidden!r}
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, Hide())
from train.cli.main import main
sys.exit(main({argv!r}))
"""


@pytest.mark.parametrize(("argv", "hidden", "extra"), [
    (["tournament", "--agents", "random", "greedy", "--hands", "2", "--ray"], ["ray"], "ray"),
    (["tournament", "--agents", "random", "greedy", "--hands", "2"], ["tqdm", "pandas", "openskill"], "eval"),
    (["train", "--rules", "classic_2p", "--total-timesteps", "64"], ["torch"], "train"),
])
def test_missing_extra_is_one_line(argv: list[str], hidden: list[str], extra: str, tmp_path: Path) -> None:
    if argv[0] == "train":
        argv = [*argv, "--run-dir", str(tmp_path / "run")]
    proc = subprocess.run([sys.executable, "-c", HIDE.format(hidden=hidden, argv=argv)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    (line,) = [x for x in proc.stderr.splitlines() if x.strip()]
    assert f'pip install "canasta-rl[{extra}]"' in line, line
