"""The house's size rules, checked on the source (docs/architecture.md): no module under train/ over
400 lines, no function over 80 lines (the numba kernels aside: one kernel is one compiled unit), and no
public function with more than 8 parameters that are not keyword-only (numba kernels take no
keyword-only parameters, so they are aside here too)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("canasta_env", "agents", "train")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80
MAX_POSITIONAL = 8


def _functions(path: Path) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _is_kernel(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any("jit" in ast.unparse(d) for d in fn.decorator_list)


def _sources() -> list[Path]:
    return [p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))]


def long_modules(paths: list[Path]) -> list[str]:
    return [f"{p.relative_to(ROOT)}: {n} lines" for p in paths
            if (n := p.read_text(encoding="utf-8").count("\n")) > MAX_MODULE_LINES]


def long_functions(paths: list[Path]) -> list[str]:
    return [f"{p.relative_to(ROOT)}:{fn.lineno} {fn.name}: {fn.end_lineno - fn.lineno + 1} lines"
            for p in paths for fn in _functions(p)
            if not _is_kernel(fn) and fn.end_lineno - fn.lineno + 1 > MAX_FUNCTION_LINES]


def wide_functions(paths: list[Path]) -> list[str]:
    found = []
    for p in paths:
        for fn in _functions(p):
            positional = [a for a in fn.args.posonlyargs + fn.args.args if a.arg not in ("self", "cls")]
            if not fn.name.startswith("_") and not _is_kernel(fn) and len(positional) > MAX_POSITIONAL:
                found.append(f"{p.relative_to(ROOT)}:{fn.lineno} {fn.name}: {len(positional)} positional")
    return found


def test_no_train_module_over_400_lines() -> None:
    assert long_modules(sorted((ROOT / "train").rglob("*.py"))) == []


def test_no_function_over_80_lines() -> None:
    assert long_functions(_sources()) == []


def test_no_public_function_with_more_than_8_positional_parameters() -> None:
    assert wide_functions(_sources()) == []


def test_the_checks_find_what_they_look_for(tmp_path: Path) -> None:
    """Negative twins: a long module, a long function and a wide one are each reported."""
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
        params = ", ".join(f"a{i}" for i in range(MAX_POSITIONAL + 1))
        src = tmp_path / "m.py"
        src.write_text(f"def long():\n{body}\n\n\ndef wide({params}):\n    pass\n" + "#\n" * 400)
        assert long_modules([src]) and long_functions([src]) and wide_functions([src])
        src.write_text(f"def fine(a, *, {params}):\n    pass\n")
        assert not long_modules([src]) and not long_functions([src]) and not wide_functions([src])
    finally:
        ROOT = saved
