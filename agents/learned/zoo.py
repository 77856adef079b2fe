"""The model zoo: trained checkpoints that ship with the package, loadable by name.

``make_agent("zoo:classic_2p", "classic_2p")``, ``canasta tournament --agents zoo:classic_2p`` and
``canasta play --opponent zoo:classic_2p`` all play the checkpoint in ``agents/zoo/classic_2p/`` (an
ordinary checkpoint directory, verified on load like any other; the rules it was trained for must
match the table's). ``agents/zoo/README.md`` gives each entry's config, the command that trained it and
its measured strength.
"""

from __future__ import annotations

from pathlib import Path

from canasta_env.messages import short_repr

PREFIX = "zoo:"
ZOO_DIR = Path(__file__).parents[1] / "zoo"


def zoo_names() -> tuple[str, ...]:
    """The shipped entries, as ``zoo:NAME``."""
    if not ZOO_DIR.is_dir():
        return ()
    return tuple(PREFIX + p.name for p in sorted(ZOO_DIR.iterdir()) if (p / "meta.json").is_file())


def zoo_path(name: str) -> Path:
    """The checkpoint directory of ``zoo:NAME``; ``ValueError`` naming the known entries."""
    entry = name[len(PREFIX):] if name.startswith(PREFIX) else name
    known = zoo_names()
    if PREFIX + entry not in known:
        raise ValueError(f"unknown zoo agent {short_repr(name, 80)}; shipped: {', '.join(known) or 'none'}")
    return ZOO_DIR / entry
