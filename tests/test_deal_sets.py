"""Fixed evaluation deal sets: shipped files, content checks and clear refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest

from canasta_env.deal_sets import load_deal_set, make_deal_set, save_deal_set, shipped_deal_sets
from canasta_env.engine import DealId, explicit_deal, init, init_from_deals
from canasta_env.rules import load_rules, preset_names


def test_shipped_sets_cover_every_preset():
    assert {"classic_2p-v1", "classic_3p-v1", "classic_4p-v1"} <= set(shipped_deal_sets())
    for preset in ("classic_2p", "classic_3p", "classic_4p"):
        by_version = load_deal_set("v1", preset)
        by_name = load_deal_set(f"{preset}-v1", preset)
        assert len(by_version) == 10_000 and by_version.sha256 == by_name.sha256
        assert by_version.reference(12) == f"{preset}-v1#12"
    for preset in preset_names():  # Regal uses the classic set of its deck and table size
        rules = load_rules(preset)
        own = preset.startswith(("railroad", "pennies"))
        expected = f"{preset}-v1" if own else f"classic_{rules.num_players}p-v1"
        deal_set = load_deal_set("v1", rules)
        assert deal_set.name == expected
        assert len(deal_set) == (2_000 if own else 10_000)


def test_a_set_replays_the_deals_it_was_made_from(tmp_path):
    made = make_deal_set("classic_4p", 5, seed=99)
    path = tmp_path / "mine.npz"
    save_deal_set(made, path)
    loaded = load_deal_set(path, "classic_4p")
    assert loaded.sha256 == made.sha256 and len(loaded) == 5
    from_set = init_from_deals("classic_4p", loaded.deals(range(5)))
    from_ids = init("classic_4p", 5, 99)
    assert np.array_equal(from_set.hands, from_ids.hands)
    assert all(np.array_equal(from_set.stock(b), from_ids.stock(b)) for b in range(5))
    assert np.array_equal(loaded.orders[3], explicit_deal("classic_4p", DealId(99, 3, 0)).order)


def test_refusals_name_the_problem(tmp_path):
    with pytest.raises(ValueError, match="no deal set 'v9'.*shipped sets"):
        load_deal_set("v9", "classic_2p")
    with pytest.raises(ValueError, match="deals of 108 cards|not a permutation|dealer"):
        # the 2p and 4p decks are both 108 cards: a 2p set dealt by seat 3 is refused for 2p
        made = make_deal_set("classic_4p", 50, seed=1)
        save_deal_set(made, tmp_path / "four.npz")
        load_deal_set(tmp_path / "four.npz", "classic_2p")
    good = make_deal_set("classic_2p", 3, seed=2)
    save_deal_set(good, tmp_path / "good.npz")
    with np.load(tmp_path / "good.npz") as data:
        orders, dealers, meta = data["orders"].copy(), data["dealers"], str(data["meta"])
    orders[0, :2] = orders[0, 1::-1] if orders[0, 0] != orders[0, 1] else orders[0, [0, 2]]
    np.savez_compressed(tmp_path / "edited.npz", orders=orders, dealers=dealers, meta=np.array(meta))
    with pytest.raises(ValueError, match="does not match its sha256"):
        load_deal_set(tmp_path / "edited.npz", "classic_2p")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="junk.npz: not a readable deal set"):
        load_deal_set(tmp_path / "junk.npz", "classic_2p")
    bad_meta = dict(json.loads(meta), format="other")
    np.savez_compressed(tmp_path / "fmt.npz", orders=orders, dealers=dealers,
                        meta=np.array(json.dumps(bad_meta)))
    with pytest.raises(ValueError, match="format 'other'"):
        load_deal_set(tmp_path / "fmt.npz", "classic_2p")
