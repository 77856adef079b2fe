"""A deal set made for another table is refused, by path or shipped name: the 2- and 4-player
classic decks are both 108 cards, so the deck check alone let a 2-player set be played at four
(seats 2 and 3 never dealt). Sets for the same table (Regal on the classic set) still load. A set
whose metadata counts other than the deals it holds is refused too."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from canasta_env.deal_sets import DealSet, _digest, load_deal_set, make_deal_set, save_deal_set
from train.cli.main import main as cli_main


def test_a_two_player_set_is_refused_at_a_four_player_table(tmp_path: Path) -> None:
    path = tmp_path / "two.npz"
    save_deal_set(make_deal_set("classic_2p", 3, seed=0), path)
    with pytest.raises(ValueError, match=rf"^deal set {path} was made for classic_2p \(2 players, 2 packs, "
                                         r"4 jokers\), not 'classic_4p' \(4 players"):
        load_deal_set(path, "classic_4p")  # before: loaded, every deal dealt by seat 0 or 1
    with pytest.raises(ValueError, match="made for classic_2p"):
        load_deal_set("classic_2p-v1", "classic_4p")  # the shipped set by name, likewise


def test_a_four_player_set_dealt_by_seats_0_and_1_is_refused_for_two(tmp_path: Path) -> None:
    made = make_deal_set("classic_4p", 40, seed=3)
    keep = np.flatnonzero(made.dealers < 2)[:3]  # deals that pass the dealer check at two seats
    orders, dealers = made.orders[keep], made.dealers[keep]
    path = tmp_path / "four.npz"
    save_deal_set(DealSet(made.name, made.preset, made.version, orders, dealers,
                          _digest(orders, dealers)), path)
    with pytest.raises(ValueError, match="made for classic_4p .* not 'classic_2p'"):
        load_deal_set(path, "classic_2p")  # before: loaded


def test_a_set_relabelled_for_another_preset_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "relabelled.npz"
    save_deal_set(make_deal_set("classic_2p", 2, seed=1), path)
    with np.load(path) as data:
        orders, dealers, meta = data["orders"], data["dealers"], json.loads(str(data["meta"]))
    np.savez_compressed(path, orders=orders, dealers=dealers,
                        meta=np.array(json.dumps({**meta, "preset": "classic_4p"})))
    with pytest.raises(ValueError, match="made for classic_4p"):
        load_deal_set(path, "classic_2p")


def test_sets_for_the_same_table_still_load(tmp_path: Path) -> None:  # the twins
    path = tmp_path / "two.npz"
    save_deal_set(make_deal_set("classic_2p", 3, seed=0), path)
    assert len(load_deal_set(path, "classic_2p")) == 3
    assert load_deal_set(path, "regal_2p").preset == "classic_2p"  # same deck, same seats
    assert load_deal_set("classic_4p-v1", "classic_4p").name == "classic_4p-v1"
    custom = {"name": "my_house", "num_players": 2}  # a set for a rules file: deck and dealers only
    mine = tmp_path / "mine.npz"
    save_deal_set(make_deal_set(custom, 2, seed=5), mine)
    assert load_deal_set(mine, custom).preset == "my_house"


def test_canasta_gauntlet_with_a_set_for_another_table_is_one_line(
        capsys: pytest.CaptureFixture[str]) -> None:
    status = cli_main(["gauntlet", "random", "--rules", "classic_4p", "--deal-set", "classic_2p-v1",
                       "--deals", "1", "--opponents", "random"])
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 2 and "Traceback" not in out + err and len(lines) == 1, err
    assert lines[0].startswith("canasta gauntlet: error: ") and "made for classic_2p" in lines[0]


@pytest.mark.parametrize("count", [5, 0, "2", 2.0, True, None, [2]])
def test_metadata_that_miscounts_its_deals_is_refused(tmp_path: Path, count: object) -> None:
    path = tmp_path / "miscounted.npz"
    save_deal_set(make_deal_set("classic_2p", 2, seed=1), path)
    with np.load(path) as data:
        orders, dealers, meta = data["orders"], data["dealers"], json.loads(str(data["meta"]))
    meta["count"] = count
    np.savez_compressed(path, orders=orders, dealers=dealers, meta=np.array(json.dumps(meta)))
    with pytest.raises(ValueError, match=rf"^deal set {path}: count .* in its metadata, but it holds 2 "
                                         r"deals$"):
        load_deal_set(path, "classic_2p")  # before: loaded, the count in its metadata never read


def test_metadata_that_counts_its_deals_or_leaves_the_count_out_loads(tmp_path: Path) -> None:  # the twin
    path = tmp_path / "counted.npz"
    save_deal_set(make_deal_set("classic_2p", 2, seed=1), path)
    with np.load(path) as data:
        orders, dealers, meta = data["orders"], data["dealers"], json.loads(str(data["meta"]))
    assert meta["count"] == 2
    assert len(load_deal_set(path, "classic_2p")) == 2
    del meta["count"]  # a set written by hand may leave it out
    np.savez_compressed(path, orders=orders, dealers=dealers, meta=np.array(json.dumps(meta)))
    assert len(load_deal_set(path, "classic_2p")) == 2
