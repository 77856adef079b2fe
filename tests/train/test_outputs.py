"""Output files are checked before the work that fills them (train.common.outputs)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from train.cli.main import main as cli_main
from train.common.outputs import check_output_file


def test_a_gauntlet_json_in_a_missing_folder_is_refused_before_any_game(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "missing" / "x.json"
    assert cli_main(["gauntlet", "random", "--deals", "2", "--json", str(target)]) == 2
    err = capsys.readouterr().err
    assert "--json" in err and "no folder" in err and err.count("\n") == 1
    assert not target.parent.exists()


@pytest.mark.parametrize("make", ["folder", "missing-parent", "empty"])
def test_bad_output_files_are_named(make: str, tmp_path: Path) -> None:
    path = {"folder": tmp_path, "missing-parent": tmp_path / "no" / "f.json", "empty": ""}[make]
    with pytest.raises(ValueError, match="--out"):
        check_output_file(path, "--out")


def test_a_writable_file_passes(tmp_path: Path) -> None:
    assert check_output_file(tmp_path / "f.json", "--out") == tmp_path / "f.json"
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(ValueError, match="not writable"):
            check_output_file(locked / "f.json", "--out")
