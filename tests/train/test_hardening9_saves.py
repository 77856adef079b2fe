"""Cross-play's save, all or none in fact (``train.common.outputs.replace_files``): a replace that
fails after others leaves every earlier run's file as it was (it left the files replaced before it
new and the rest old), and one with no earlier files leaves none; each case has a twin where every
replace succeeds."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from train.evaluation.crossplay import OUTPUT_NAMES, CrossplayResult, crossplay


@pytest.fixture(scope="module")
def results() -> tuple[CrossplayResult, CrossplayResult]:
    """Two results whose four files all differ: a real cross-play and the same, its wins flipped."""
    old = crossplay("classic_4p", ["random", "greedy"], ["random"], deals=2, seed=1, resamples=50)
    new = dataclasses.replace(old, opponents=["greedy"], deal_wins=1 - old.deal_wins,
                              cells=[{**c, "win_rate": 1 - c["win_rate"]} for c in old.cells])
    return old, new


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _fail_replacing(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """``os.replace`` of a temporary file onto ``name`` fails as a full or read-only disk would."""
    real = os.replace

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        if Path(dst).name == name and Path(src).name.endswith(".tmp"):
            raise OSError(28, "No space left on device")
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)


@pytest.mark.parametrize("name", OUTPUT_NAMES)
def test_a_failed_replace_leaves_the_earlier_run_s_files(name: str, results: tuple[CrossplayResult, ...],
                                                       tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    old, new = results
    old.save(tmp_path)
    before = _files(tmp_path)
    _fail_replacing(monkeypatch, name)
    with pytest.raises(OSError, match="No space left"):
        new.save(tmp_path)
    assert _files(tmp_path) == before  # every file the old one, and no temporary or kept file left


def test_every_replace_succeeding_writes_the_new_run_s_files(results: tuple[CrossplayResult, ...],
                                                            tmp_path: Path) -> None:  # the twin
    old, new = results
    old.save(tmp_path)
    before = _files(tmp_path)
    written = new.save(tmp_path)
    after = _files(tmp_path)
    assert [p.name for p in written] == list(OUTPUT_NAMES) and sorted(after) == sorted(OUTPUT_NAMES)
    assert all(after[n] != before[n] for n in OUTPUT_NAMES)
    assert json.loads(after["crossplay.json"])["opponents"] == ["greedy"]


@pytest.mark.parametrize("name", OUTPUT_NAMES)
def test_a_failed_replace_into_an_empty_folder_leaves_it_empty(name: str,
                                                               results: tuple[CrossplayResult, ...],
                                                               tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    _fail_replacing(monkeypatch, name)
    with pytest.raises(OSError, match="No space left"):
        results[1].save(tmp_path)
    assert _files(tmp_path) == {}


def test_a_failed_replace_keeps_the_folder_s_other_files(results: tuple[CrossplayResult, ...], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "notes.txt").write_text("mine\n")
    results[0].save(tmp_path, plots=False)
    before = _files(tmp_path)
    _fail_replacing(monkeypatch, "crossplay.png")
    with pytest.raises(OSError):
        results[1].save(tmp_path)
    assert _files(tmp_path) == before
    monkeypatch.undo()
    results[1].save(tmp_path)  # the twin: all four written, the other file untouched
    assert sorted(_files(tmp_path)) == sorted([*OUTPUT_NAMES, "notes.txt"])
    assert (tmp_path / "notes.txt").read_text() == "mine\n"


def test_a_link_at_an_output_is_put_back_as_a_link(results: tuple[CrossplayResult, ...], tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "elsewhere.csv"
    target.write_text("kept\n")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "crossplay.csv").symlink_to(target)
    _fail_replacing(monkeypatch, "crossplay.json")
    with pytest.raises(OSError):
        results[1].save(tmp_path / "out")
    assert (tmp_path / "out" / "crossplay.csv").is_symlink() and target.read_text() == "kept\n"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["crossplay.csv"]
    monkeypatch.undo()
    results[1].save(tmp_path / "out")  # the twin: the link is replaced, its target never written
    assert not (tmp_path / "out" / "crossplay.csv").is_symlink() and target.read_text() == "kept\n"


def test_a_save_without_plots_removes_an_earlier_heatmap(results: tuple[CrossplayResult, ...],
                                                         tmp_path: Path) -> None:
    results[0].save(tmp_path)
    written = results[1].save(tmp_path, plots=False)
    assert sorted(_files(tmp_path)) == sorted(p.name for p in written) == sorted(OUTPUT_NAMES[:3])


def test_a_save_with_plots_replaces_the_heatmap(results: tuple[CrossplayResult, ...],
                                                tmp_path: Path) -> None:  # the twin
    results[0].save(tmp_path, plots=False)
    results[1].save(tmp_path)
    assert sorted(_files(tmp_path)) == sorted(OUTPUT_NAMES)
