"""The game row is declared once (``layout.ROW_BLOCKS``): ``pack_params`` computes the offsets from
it, ``State`` its views, and the kernels reach a block through the layout accessors and name every
card kind, meld slot and canasta kind. These checks keep literal row offsets and card numbers out of
the kernels, and a planted violation shows that each check can fail."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from canasta_env.engine import layout
from canasta_env.engine.cards import NUM_KINDS, NUM_SLOTS
from canasta_env.rules import load_rules, preset_names

ENGINE = Path(__file__).resolve().parents[1] / "canasta_env" / "engine"
# the declarations themselves: the row (layout), the card names (cards), the computed action
# layout (actions), and the hash constants of the RNG
DECLARATIONS = {"layout.py", "cards.py", "actions.py", "rng.py", "__init__.py"}
ROW_NAMES = {"row", "work"}  # a game row and a kernel's working copy of one
CARD_NUMBERS = set(range(11, 17))  # kinds (15), slots (13), rank slots (11), ... have names


def _kernels(tree: ast.Module) -> list[ast.FunctionDef]:
    return [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
            and any("njit" in ast.unparse(d) for d in f.decorator_list)]


def _literals(node: ast.AST) -> list[int]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and type(n.value) is int]


def violations(source: str, where: str) -> list[str]:
    """What a kernel module does against the row declaration, one line per finding."""
    found = []
    for fn in _kernels(ast.parse(source)):
        for node in ast.walk(fn):
            line = f"{where}:{getattr(node, 'lineno', fn.lineno)}"
            if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
                    and node.value.id in ROW_NAMES):
                bad = [v for v in _literals(node.slice) if v not in (0, 1)]
                if bad:
                    found.append(f"{line}: literal offset {bad[0]} in {ast.unparse(node)}")
            if isinstance(node, ast.Constant) and type(node.value) is int and node.value in CARD_NUMBERS:
                found.append(f"{line}: card or slot number {node.value} (name it from cards.py)")
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
                sides = (node.left, node.right)
                if (any(ast.unparse(o).startswith("prm[O_") for o in sides)
                        and any(isinstance(o, ast.BinOp) and isinstance(o.op, ast.Mult) for o in sides)):
                    found.append(f"{line}: block stride computed by hand in {ast.unparse(node)} "
                                 "(use the layout accessors)")
    return found


def test_no_literal_row_offsets_or_card_numbers_in_kernels() -> None:
    found = []
    for path in sorted(ENGINE.glob("*.py")):
        if path.name not in DECLARATIONS:
            found += violations(path.read_text(), path.name)
    assert not found, "\n".join(found)


@pytest.mark.parametrize("kernel", [
    "row[prm[O_HANDS] + p * 15 + k] += 1",
    "x = row[base + 12]",
    "for k in range(15):\n        pass",
    "h = prm[O_MNAT] + owner * NUM_SLOTS",
])
def test_the_check_finds_a_planted_violation(kernel: str) -> None:
    source = f"@njit(cache=True)\ndef f(row, prm, p, k, base, owner):\n    {kernel}\n"
    assert violations(source, "planted.py")
    assert not violations(source.replace("@njit(cache=True)\n", ""), "plain.py")  # only kernels


@pytest.mark.parametrize("preset", preset_names())
def test_offsets_follow_the_declaration(preset: str) -> None:
    """Blocks follow each other in ``ROW_BLOCKS`` order with their declared sizes, the row ends at
    ``P_WIDTH``, and the accessors land on the rows of their block."""
    r = load_rules(preset)
    prm = layout.pack_params(r)
    n, owners = int(prm[layout.P_NPLAYERS]), int(prm[layout.P_NOWNERS])
    per = {"players": n, "owners": owners, "sides": int(prm[layout.P_NSIDES]), "one": 1, "discarding": 0}
    assert layout.block_rows(prm) == per
    pos = layout.HEADER
    for key, rows, width in layout.ROW_BLOCKS:
        assert prm[key] == pos
        pos += per[rows] * (r.deck_size if width == "deck" else int(width))
    assert prm[layout.P_WIDTH] == pos
    last = n - 1
    assert layout.hand_at(prm, last) == prm[layout.O_HANDS] + last * NUM_KINDS
    assert layout.hand_at(prm, n) == prm[layout.O_KNOWN]  # one past the last hand: the next block
    assert layout.twos_at(prm, owners) == prm[layout.O_NEW]
    assert layout.slot_of(1, 2) == NUM_SLOTS + 2
    assert np.unique([prm[k] for k, _, _ in layout.ROW_BLOCKS]).size == len(layout.ROW_BLOCKS)
