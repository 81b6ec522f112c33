"""The size of a codelet's code in tile memory, modelled from its own compute body.

A tile holds one copy of each codelet instantiation its vertices use (see the memory model in
``docs/cycle_model.md``). The host's x86 object says nothing about that: it is batched over
vertices, bounds-checked and vectorised for another machine. The model instead counts the
instructions an IPU worker would execute once through the code, with the rules of the cycle
model (:mod:`poplar_py.codelet.codegen`) applied statically:

* one instruction per arithmetic, bitwise, comparison, conversion and boolean operation, per
  field read or write and per vector element access;
* one per ``if``/``while``/``assert`` test and ``return``, two per loop (test and step);
* one call per ``math`` function (libm lives once per tile with the runtime, not per codelet);
* helpers and policy functions are inlined: counted at every call site; a loop that unrolls is
  counted once per copy; only the compiled side of a branch on a constant counts;
* what is known when compiling costs nothing: constant expressions fold, and the elements of a
  local array at known indices are registers.

Each instruction takes ``BYTES_PER_INSTRUCTION`` (IPU instructions are 32 bits), plus
``ENTRY_BYTES`` per codelet for its entry, worker set-up and exit.
"""

from __future__ import annotations

import ast

from .inference import FunctionTypes, TypedCodelet
from .type_rules import CType, ScalarType, VectorType
from .unroll import Unroller

BYTES_PER_INSTRUCTION = 4
ENTRY_BYTES = 64


def code_bytes(typed: TypedCodelet) -> int:
    """Bytes of tile memory the codelet's code takes."""
    return ENTRY_BYTES + BYTES_PER_INSTRUCTION * _Counter().function(typed.compute)


class _Counter:
    def __init__(self) -> None:
        self.unroller = Unroller()

    def type(self, e: ast.AST, types: FunctionTypes) -> CType | None:
        try:
            return self.unroller.type(e, types)
        except KeyError:  # not compiled (a branch on a constant), or not a value
            return None

    def function(self, types: FunctionTypes) -> int:
        return self.statements(types.fn.node.body, types)

    def statements(self, stmts: list[ast.stmt], types: FunctionTypes) -> int:
        return sum(self.statement(s, types) for s in self.unroller.expand(stmts, types))

    def statement(self, s: ast.stmt, types: FunctionTypes) -> int:
        if isinstance(s, ast.If):
            test = self.type(s.test, types)
            if isinstance(test, ScalarType) and test.value is not None:
                return self.statements(s.body if test.value else s.orelse, types)
            return 1 + self.expression(s.test, types) + self.statements(s.body, types) \
                + self.statements(s.orelse, types)
        if isinstance(s, (ast.For, ast.While)):  # (loops that unroll are expanded already)
            head = self.expression(s.iter if isinstance(s, ast.For) else s.test, types)
            return 2 + head + self.statements(s.body, types)
        count = 1 if isinstance(s, (ast.Assert, ast.Return)) else 0
        return count + sum(self.expression(n, types) for n in ast.iter_child_nodes(s)
                           if isinstance(n, ast.expr))

    def expression(self, e: ast.expr, types: FunctionTypes) -> int:
        t = self.type(e, types)
        if t is None or (isinstance(t, ScalarType) and t.value is not None):
            return 0  # not compiled, or folded when compiling
        if isinstance(e, ast.Subscript) and _register(self.type(e.value, types), self.type(e.slice, types)):
            return 0
        callee = self.unroller.calls.get(id(e)) or types.calls.get(id(e))
        own = 0
        if callee is not None:
            own = self.function(callee)
        elif isinstance(e, ast.Call):
            own = 0 if isinstance(e.func, ast.Name) and e.func.id in ("len", "LocalArray") else 1
        elif isinstance(e, (ast.BinOp, ast.UnaryOp, ast.IfExp, ast.Subscript)):
            own = 1
        elif isinstance(e, ast.Compare):
            own = len(e.ops)
        elif isinstance(e, ast.BoolOp):
            own = len(e.values) - 1
        elif isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "self":
            own = 1
        parts = (n for n in ast.iter_child_nodes(e) if isinstance(n, ast.expr))
        return own + sum(self.expression(n, types) for n in parts)


def _register(container: CType | None, index: CType | None) -> bool:
    """An element of a local array at a known index: a register."""
    return isinstance(container, VectorType) and container.size is not None \
        and isinstance(index, ScalarType) and index.value is not None
