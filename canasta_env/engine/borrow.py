"""Array views that skip numba's reference counting, for the kernels' per-row hot paths.

Every array a numba function slices, or hands to a function it does not inline, has its reference
count raised and lowered with an atomic instruction. The legality solver makes so many such calls per
row that those atomics were 40% of a random-play step (``perf`` on a 2-core AMD EPYC). A view made
by ``borrowed`` carries no owner, so the counting on it and on every slice of it is a null test.
It is safe only while the array it views stays alive, so an entry kernel borrows from its own
arguments (kept alive by its caller) or, inside a loop that uses the owner again, at the call site;
a borrowed view is never returned or stored.
"""

from __future__ import annotations

from typing import Any

from numba.core import cgutils, config, types
from numba.extending import intrinsic


@intrinsic
def _borrowed(typingctx: Any, arr: Any) -> Any:
    if not isinstance(arr, types.Array):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        src = context.make_array(arr)(context, builder, value=args[0])
        view = context.make_array(arr)(context, builder)
        for field in ("nitems", "itemsize", "data", "shape", "strides"):
            setattr(view, field, getattr(src, field))
        view.meminfo = cgutils.get_null_value(view.meminfo.type)
        view.parent = cgutils.get_null_value(view.parent.type)
        return view._getvalue()

    return arr(arr), codegen


def _identity(arr: Any) -> Any:
    return arr


# NUMBA_DISABLE_JIT runs the kernels as Python, where a view is just the array
borrowed = _identity if config.DISABLE_JIT else _borrowed  # type: ignore[attr-defined]
