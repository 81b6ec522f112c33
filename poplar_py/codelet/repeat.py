"""Repeat loops: the counted loops a worker runs with the IPU's ``rpt`` instruction.

``rpt`` repeats a run of instruction bundles a number of times it holds in a 12-bit count, with no
instruction of its own per turn, so such a loop's control costs 1 cycle once instead of its step
and branch (``brnzdec``) every turn. A compiler can use it when the count is known to fit (here: a
loop over a ``range`` of constants, at most :data:`RPT_MAX_COUNT` turns) and the body has no
branches. The C++ codelets' counted loops follow the same rule (``cxx/loops.py``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

import llvmlite.ir as ir

#: the most turns ``rpt`` counts (its count field is 12 bits)
RPT_MAX_COUNT = 4095

#: statements and expressions that branch (or may), so a body holding one cannot repeat
_BRANCHING = (ast.If, ast.For, ast.While, ast.Break, ast.Continue, ast.Return, ast.Assert, ast.IfExp,
              ast.BoolOp, ast.Try, ast.With, ast.Match)


def repeatable(node: ast.For, bounds: tuple[ir.Value, ir.Value, ir.Value],
               is_helper: Callable[[ast.Call], bool]) -> bool:
    """Whether a ``for ... in range`` loop with these (lowered) bounds runs as a repeat loop: its
    turns a constant count of at most :data:`RPT_MAX_COUNT` and its body free of branches."""
    if not all(isinstance(b, ir.Constant) for b in bounds):
        return False
    start, stop, step = (int(b.constant) for b in bounds)  # type: ignore[union-attr]
    return step != 0 and len(range(start, stop, step)) <= RPT_MAX_COUNT and branch_free(node.body, is_helper)


def branch_free(body: list[ast.stmt], is_helper: Callable[[ast.Call], bool]) -> bool:
    """Whether statements run without branching: no control flow, chained comparisons or calls
    of helpers (whose bodies may branch)."""
    for n in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(n, _BRANCHING) or (isinstance(n, ast.Compare) and len(n.ops) > 1):
            return False
        if isinstance(n, ast.Call) and is_helper(n):
            return False
    return True
