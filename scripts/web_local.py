"""What the web table's scripts and browser tests share: a free localhost port and how the system
Chromium is launched headless on a machine with no outside network."""

from __future__ import annotations

import socket

CHROMIUM = "/usr/bin/chromium"
# without the background-networking flags Chromium keeps trying hosts this machine cannot reach
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    """A localhost port no one listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
