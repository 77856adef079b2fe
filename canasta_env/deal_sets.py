"""Fixed evaluation deal sets: versioned files of explicit deals per preset.

A deal set stores each deal written out (deck order and dealer), not a seed, so tournaments and
training evaluations that name the same set play the same hands across runs, library versions and
numpy versions. Sets ship inside the package as ``deal_sets/{preset}-{version}.npz``; any other
``.npz`` written by ``save_deal_set`` can be named by its path.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt

from canasta_env.engine import DealId, ExplicitDeal, explicit_deal
from canasta_env.engine.cards import NUM_KINDS
from canasta_env.engine.core import check_batch_size, check_int
from canasta_env.messages import short_repr
from canasta_env.rules import RuleSet, load_rules, preset_names

FORMAT = "canasta-deal-set"
_PACKAGE_DIR = "deal_sets"


MAX_NAME_CHARS = 128  # a rule set's name (at most 100) and a version


@dataclass(frozen=True)
class DealSet:
    """Explicit deals for one preset. ``name`` is ``{preset}-{version}`` for shipped sets."""

    name: str
    preset: str
    version: str
    orders: npt.NDArray[np.int8]  # (N, deck) deck in dealing order, last element = top
    dealers: npt.NDArray[np.int8]  # (N,)
    sha256: str  # of orders and dealers: names the exact content

    def __len__(self) -> int:
        return int(self.orders.shape[0])

    def deal(self, i: int) -> ExplicitDeal:
        """Deal ``i``, an integer in ``[0, len)``: ``ValueError`` otherwise (-1 is not wrapped to
        the last deal, nor 1.5 truncated to deal 1: either would play other deals silently)."""
        i = check_int(i, "deal index", f"deal set {self.name}")
        if not 0 <= i < len(self):
            raise ValueError(f"deal set {self.name}: deal index {short_repr(i)} is out of range for "
                             f"its {len(self)} deals")
        return ExplicitDeal(self.orders[i], int(self.dealers[i]))

    def deals(self, indices: npt.ArrayLike) -> list[ExplicitDeal]:
        """The deals of ``indices`` (integers, each as ``deal`` takes it)."""
        return [self.deal(i) for i in np.asarray(indices, dtype=object).ravel()]

    def first(self, count: int, what: str = "deals") -> list[ExplicitDeal]:
        """Its first ``count`` deals; a count that is not an integer, below 1 or beyond the set
        is a ``ValueError`` that names ``what`` asked for it (a flag, an option)."""
        count = check_int(count, "count", what)
        if count < 1:
            raise ValueError(f"{what} {count} must be at least 1")
        if count > len(self):
            raise ValueError(f"{what} {count}: the deal set {short_repr(self.name)} holds fewer deals "
                             f"({len(self)})")
        return self.deals(range(count))

    def reference(self, i: int) -> str:
        """A stable name for deal ``i``: ``{set name}#{i}`` (with the content hash in results)."""
        return f"{self.name}#{i}"


def _digest(orders: npt.NDArray[np.int8], dealers: npt.NDArray[np.int8]) -> str:
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(orders, dtype=np.int8).tobytes())
    h.update(np.ascontiguousarray(dealers, dtype=np.int8).tobytes())
    return h.hexdigest()


def max_deals(rules: RuleSet) -> int:
    """The most deals a set of ``rules`` can hold and still load: its orders, a byte a card, stay
    within ``MAX_MEMBER_BYTES`` (the array's header included), beyond which ``load_deal_set``
    refuses the file (about 620,000 deals of a 108-card deck, 100,000 of the largest)."""
    return (MAX_MEMBER_BYTES - _NPY_HEADER_BYTES) // rules.deck_size


def make_deal_set(rules: RuleSet | str, count: int, seed: int, version: str = "v1") -> DealSet:
    """``count`` deals written out from ``DealId(seed, i, 0)``; ``ValueError`` at once for a
    count that is not an integer in ``[1, max_deals(rules)]`` (a larger set would take hours to
    make and could not be loaded) or a version that would not name a loadable set."""
    rules = load_rules(rules)
    count = check_batch_size(count, "make_deal_set", "count")
    if count > max_deals(rules):
        raise ValueError(f"make_deal_set: count {count:,} is more than a deal set of {rules.name} can "
                         f"hold ({max_deals(rules):,} deals of {rules.deck_size} cards; "
                         f"load_deal_set refuses a larger file)")
    name = f"{rules.name}-{version}"
    if not isinstance(version, str) or not version or len(name) > MAX_NAME_CHARS or not name.isprintable():
        raise ValueError(f"make_deal_set: version {short_repr(version)} is not a printable name that "
                         f"keeps the set's name {MAX_NAME_CHARS} characters or less")
    deals = [explicit_deal(rules, DealId(seed, i, 0)) for i in range(count)]
    orders = np.stack([d.order for d in deals]).astype(np.int8)
    dealers = np.array([d.dealer for d in deals], dtype=np.int8)
    return DealSet(name, rules.name, version, orders, dealers,
                   _digest(orders, dealers))


def save_deal_set(deal_set: DealSet, path: str | Path) -> None:
    """Write ``deal_set`` as a compressed ``.npz`` with its metadata and content hash."""
    meta = {"format": FORMAT, "name": deal_set.name, "preset": deal_set.preset,
            "version": deal_set.version, "count": len(deal_set), "sha256": deal_set.sha256}
    np.savez_compressed(path, orders=deal_set.orders, dealers=deal_set.dealers,
                        meta=np.array(json.dumps(meta)))


def shipped_deal_sets() -> list[str]:
    """Names (``{preset}-{version}``) of the deal sets shipped with the package."""
    folder = resources.files("canasta_env") / _PACKAGE_DIR
    return sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".npz"))


def load_deal_set(name_or_path: str | Path, rules: RuleSet | str) -> DealSet:
    """A deal set by path, by shipped name (``classic_2p-v1``) or by version (``v1``: the set of the
    rules' preset, or else the shipped set of that version made for the same deck and table size,
    as ``regal_2p`` uses ``classic_2p-v1``), checked against its hash and the deck of ``rules``."""
    rules = load_rules(rules)
    path = Path(name_or_path)
    try:
        exists = path.exists()
    except (OSError, ValueError):  # a name too long for the OS, a NUL byte: not a file
        exists = False
    if not exists:
        name = str(name_or_path)
        candidates = [name] if "-" in name else [f"{rules.name}-{name}"] + [
            s for s in shipped_deal_sets() if s.endswith(f"-{name}")
            and _same_table(s.rsplit("-", 1)[0], rules)]
        folder = resources.files("canasta_env") / _PACKAGE_DIR
        try:
            found = [c for c in candidates if (folder / f"{c}.npz").is_file()]
        except (OSError, ValueError):  # a name too long for the OS is no shipped set either
            found = []
        if not found:
            raise ValueError(f"no deal set {short_repr(str(name_or_path))} for {rules.name}: not a "
                             f"file, and not one of the shipped sets {shipped_deal_sets()}")
        path = Path(str(folder / f"{found[0]}.npz"))
    deal_set = _read_deal_set(path)
    _check_deck(deal_set, rules, path)
    _check_table(deal_set, rules, path)
    return deal_set


MAX_MEMBER_BYTES = 64 << 20  # a deal set of 100,000 deals is ~11 MB uncompressed
_NPY_HEADER_BYTES = 4096  # room for a member's .npy header (numpy writes 128 bytes)


def _read_deal_set(path: Path) -> DealSet:
    """The deal set stored at ``path``, or ``ValueError`` naming the file: not a regular file or
    ``.npz`` archive, a member over ``MAX_MEMBER_BYTES`` uncompressed (a zip bomb), metadata that is
    not the expected JSON object or gives a count other than the deals stored, arrays of the wrong
    kind or shape, or content that does not match its sha256. Card kinds and dealers are
    range-checked before they are narrowed to int8."""
    from canasta_env.safe_yaml import open_input

    where = f"deal set {path}"
    with open_input(path, where, ValueError) as f:
        try:
            with np.load(f, allow_pickle=False) as data:
                sizes = {i.filename: i.file_size for i in data.zip.infolist()}
                if any(n > MAX_MEMBER_BYTES for n in sizes.values()):
                    raise ValueError(f"a member is larger than {MAX_MEMBER_BYTES} bytes")
                meta = json.loads(str(data["meta"]))
                orders, dealers = np.asarray(data["orders"]), np.asarray(data["dealers"])
        # .npy: TypeError; a cut file: BadZipFile; a header claiming terabytes: MemoryError;
        # metadata JSON nested thousands deep: RecursionError
        except (OSError, ValueError, KeyError, AttributeError, TypeError, EOFError, zipfile.BadZipFile,
                MemoryError, RecursionError) as e:
            raise ValueError(f"{where}: not a readable deal set file ({short_repr(str(e), 200)})"
                             ) from None
    keys = ("format", "name", "preset", "version", "sha256")
    if not isinstance(meta, dict) or not all(isinstance(meta.get(k), str) for k in keys):
        raise ValueError(f"{where}: metadata {short_repr(meta)} is not a deal set's "
                         f"({', '.join(keys)})")
    if meta["format"] != FORMAT:
        raise ValueError(f"{where}: format {short_repr(meta['format'])}, expected {FORMAT!r}")
    for key in ("name", "preset", "version"):  # they name deals in results, tables and pages
        if not 0 < len(meta[key]) <= MAX_NAME_CHARS or not meta[key].isprintable():
            raise ValueError(f"{where}: {key} {short_repr(meta[key])} is not a printable name of 1 to "
                             f"{MAX_NAME_CHARS} characters")
    if not (orders.dtype.kind in "iu" and dealers.dtype.kind in "iu" and orders.ndim == 2
            and dealers.shape == orders.shape[:1]):
        raise ValueError(f"{where}: orders {orders.dtype}{list(orders.shape)} and dealers "
                         f"{dealers.dtype}{list(dealers.shape)} are not N deals of card kinds")
    if orders.size and (orders.min() < 0 or orders.max() >= NUM_KINDS) or dealers.size and (
            dealers.min() < 0 or dealers.max() > 127):
        raise ValueError(f"{where}: a card kind or dealer is out of range")
    count = meta.get("count", orders.shape[0])  # optional, as in sets written by hand
    if type(count) is not int or count != orders.shape[0]:
        raise ValueError(f"{where}: count {short_repr(count)} in its metadata, but it holds "
                         f"{orders.shape[0]} deals")
    orders, dealers = orders.astype(np.int8), dealers.astype(np.int8)
    if _digest(orders, dealers) != meta["sha256"]:
        raise ValueError(f"{where}: content does not match its sha256 (file corrupted or edited)")
    return DealSet(meta["name"], meta["preset"], meta["version"], orders, dealers, meta["sha256"])


def _table(rules: RuleSet) -> tuple[int, int, int]:
    return rules.num_players, rules.packs, rules.jokers


def _same_table(preset: str, rules: RuleSet) -> bool:
    """Whether the rule preset ``preset`` deals the same deck to as many players as ``rules``."""
    try:
        other = load_rules(preset)
    except ValueError:
        return False
    return _table(other) == _table(rules)


def _check_table(deal_set: DealSet, rules: RuleSet, path: Path) -> None:
    """Refuse a set made for a preset that deals another table: the deck may be the same (classic 2p
    and 4p both deal 108 cards), but its dealers cover only that table's seats, so a 2-player set
    played at 4 never lets seats 2 and 3 deal. A set made for a rules file (its preset no shipped
    preset's name) is checked by its deck and dealers only."""
    if deal_set.preset not in preset_names() or _same_table(deal_set.preset, rules):
        return
    players, packs, jokers = _table(load_rules(deal_set.preset))
    raise ValueError(f"deal set {path} was made for {deal_set.preset} ({players} players, {packs} packs, "
                     f"{jokers} jokers), not {short_repr(rules.name)} ({rules.num_players} players, "
                     f"{rules.packs} packs, {rules.jokers} jokers)")


def _check_deck(deal_set: DealSet, rules: RuleSet, path: Path) -> None:
    from canasta_env.engine.layout import deck_counts, pack_params

    expected = deck_counts(pack_params(rules, "hand"))
    orders = deal_set.orders.astype(np.int64)
    if orders.ndim != 2 or orders.shape[1] != int(np.sum(expected)):
        raise ValueError(f"deal set {path} ({deal_set.preset}): deals of {orders.shape[-1]} cards, but "
                         f"{rules.name} deals a {int(np.sum(expected))}-card deck")
    counts = np.zeros((orders.shape[0], NUM_KINDS), dtype=np.int64)
    np.add.at(counts, (np.arange(orders.shape[0])[:, None], orders), 1)
    bad = np.flatnonzero(np.any(counts != expected, axis=1))
    if bad.size:
        raise ValueError(f"deal set {path}: deal {int(bad[0])} is not a permutation of the {rules.name} deck")
    if np.any((deal_set.dealers < 0) | (deal_set.dealers >= rules.num_players)):
        raise ValueError(f"deal set {path}: a dealer is outside seats 0..{rules.num_players - 1} of "
                         f"{rules.name}")
