"""The cap on the disk the server fills: saved games, their hand records and uploads together.

Before each write the store asks ``DiskQuota.room`` for the bytes it is about to write. Over the
cap, the oldest finished games (the saved file and the game's hand records) and uploads are removed
first, then unfinished games no one has touched for ``stale_seconds``; a game in play is never
removed. If that frees too little the write is refused with a 503 (the record dir is full). Files
the server did not write (a record copied into the dir by hand, even one named like a game's
records but without the game's saved file) are neither counted nor removed.

Usage is counted by a scan of the folder, then kept as an estimate (each write adds its size) and
counted again only when the estimate passes the cap, so a move does not stat every file.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from train.web.errors import GameError
from train.web.files import regular_files, remove
from train.web.limits import MIB

GAME_FILE = re.compile(r"([0-9a-f]{16})\.json")
RECORD_FILE = re.compile(r"([0-9a-f]{16})\.jsonl")
UPLOAD_FILE = re.compile(r"upload-[0-9a-f]{16}\.jsonl")
LOW_WATER = 0.8  # removing frees down to this share of the cap, so it is not needed at every write

# what the store says of a game id: "live" (in play: kept), "finished" or "unfinished"
GameStatus = Callable[[str], str]


@dataclass
class Item:
    """What can be removed as one: a game (its saved file and records) or an upload."""

    key: str
    kind: str  # "game" or "upload"
    modified: float
    paths: list[Path] = field(default_factory=list)
    size: int = 0


class DiskQuota:
    """Keeps the server's files in the record dir under ``cap`` bytes (see the module docstring)."""

    def __init__(self, record_dir: Path, cap: int, status: GameStatus, *, stale_seconds: float) -> None:
        self.record_dir, self.games_dir = record_dir, record_dir / "games"
        self.cap, self.status, self.stale_seconds = cap, status, stale_seconds
        self._lock = threading.Lock()
        self._estimate: int | None = None
        self.removed = 0  # games and uploads removed so far (for the soak's report)

    def items(self) -> list[Item]:
        """The server's files grouped as removable items."""
        found: dict[str, Item] = {}
        kinds = ((self.games_dir, ".json", GAME_FILE, "game"),
                 (self.record_dir, ".jsonl", RECORD_FILE, "game"),
                 (self.record_dir, ".jsonl", UPLOAD_FILE, "upload"))
        for folder, suffix, pattern, kind in kinds:
            for path, st in regular_files(folder, suffix):
                match = pattern.fullmatch(path.name)
                if not match:
                    continue
                key = match.group(1) if kind == "game" else path.name
                item = found.setdefault(key, Item(key, kind, st.st_mtime))
                item.paths.append(path)
                item.size += st.st_size
                item.modified = max(item.modified, st.st_mtime)
        # a record named like a game's without the game's saved file is not known to be the
        # server's (a record copied here by hand): neither counted nor removed
        return [item for item in found.values()
                if item.kind == "upload" or any(p.parent == self.games_dir for p in item.paths)]

    def usage(self) -> int:
        """Bytes of the server's files in the record dir now (a scan)."""
        return sum(item.size for item in self.items())

    def room(self, need: int) -> None:
        """Make room for ``need`` more bytes, removing old items if the cap demands it;
        ``GameError`` 503 when even that leaves too little."""
        with self._lock:
            if self._estimate is not None and self._estimate + need <= self.cap:
                self._estimate += need
                return
            items = self.items()
            used = sum(item.size for item in items)
            if used + need > self.cap:
                used = self._prune(items, used, need)
            if used + need > self.cap:
                self._estimate = None
                raise GameError(503, f"the record dir is full: its games and uploads hold "
                                     f"{used / MIB:.1f} MiB of the {self.cap / MIB:.1f} MiB allowed, and "
                                     "every game left is in play; finish or remove some")
            self._estimate = used + need

    def _prune(self, items: list[Item], used: int, need: int) -> int:
        """Remove items, oldest first (finished games and uploads, then stale unfinished games),
        until ``used + need`` is under the low-water mark; returns the bytes still used."""
        target = self.cap * LOW_WATER
        now = time.time()
        for stale in (False, True):
            for item in sorted(items, key=lambda i: i.modified):
                if used + need <= target:
                    return used
                if item.paths and self._removable(item, stale, now):
                    used -= sum(remove(p) for p in item.paths)
                    item.paths = []
                    self.removed += 1
        return used

    def _removable(self, item: Item, stale: bool, now: float) -> bool:
        if item.kind == "upload":
            return not stale
        status = self.status(item.key)
        if status == "finished":
            return not stale
        return stale and status == "unfinished" and now - item.modified > self.stale_seconds
