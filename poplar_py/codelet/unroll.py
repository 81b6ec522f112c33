"""Unrolling: ``range`` loops whose bounds are known when compiling become copies of their body.

A loop unrolls when its bounds are known (literals, template constants, what the typing pass
folded from them), it runs at most ``UNROLL_TRIPS`` times, the copies stay under
``UNROLL_NODES`` AST nodes, and its body neither assigns the loop variable nor leaves the loop
(``break``, ``continue``), and the loop variable is a plain int (not declared with a type that
converts). Each copy reads the loop variable as a constant, so local arrays
indexed by it become registers and its indices become constants that loop versioning
(:mod:`~poplar_py.codelet.loop_versioning`) sees through. The copies are typed like the body they copy.

Cycles stay those of the loop: :class:`CycleMark` statements count its control (a repeat loop's
1 before the copies, else each turn's step and test and the last test: ``codelet/repeat.py``) and
keep each copy's count apart, as each turn of the loop is; the loop variable is assigned its last
value at the end, as Python leaves it.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable

from .inference import FunctionTypes, is_range
from .repeat import branch_free
from .type_rules import PY_INT, CType, ScalarType, fold, known

UNROLL_TRIPS = 64
UNROLL_NODES = 4096


class CycleMark(ast.stmt):
    """A statement that only counts cycles (the control of an unrolled loop), apart from the
    statements before and after it."""

    _fields = ("cycles",)

    def __init__(self, cycles: int, lineno: int) -> None:
        super().__init__()
        self.cycles, self.lineno, self.col_offset = cycles, lineno, 0


def unrolled_range(node: ast.For, types: FunctionTypes, type_of: Callable[[ast.AST], CType | None]
                   ) -> range | None:
    """The values of a loop that unrolls, or None (``type_of``: an expression's type, if known)."""
    if not (is_range(node) and isinstance(node.target, ast.Name)) or node.orelse:
        return None
    if types.locals.get(node.target.id) != PY_INT:  # a declared type converts every value
        return None
    assert isinstance(node.iter, ast.Call)
    bounds = []
    for a in node.iter.args:
        t = type_of(a)
        if not (isinstance(t, ScalarType) and t.is_int and t.value is not None):
            return None
        bounds.append(int(t.value))
    if bounds[2:] == [0]:  # a zero step (a copy's constant): the loop fails when it runs
        return None
    trips = range(*bounds)
    size = sum(1 for s in node.body for _ in ast.walk(s))
    if len(trips) > UNROLL_TRIPS or len(trips) * size > UNROLL_NODES or _leaves_or_assigns(node):
        return None
    return trips


def _leaves_or_assigns(node: ast.For) -> bool:
    """Whether the body breaks out of or continues this loop, or assigns its variable."""
    var = node.target.id  # type: ignore[attr-defined]
    todo = list(node.body)
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.Break, ast.Continue)):
            return True
        if isinstance(n, ast.Name) and n.id == var and isinstance(n.ctx, ast.Store):
            return True
        if isinstance(n, (ast.For, ast.While)):  # their break and continue are their own
            todo.extend(n2 for n2 in ast.walk(n) if isinstance(n2, ast.Name))
            continue
        todo.extend(ast.iter_child_nodes(n))
    return False


class Unroller:
    """Expands the loops that unroll in statement lists of typed functions. The copies, and
    their types, live as long as the unroller: the typing pass's tables are not touched."""

    def __init__(self) -> None:
        self._done: dict[tuple[int, int], list[ast.stmt]] = {}
        self._keep: list[object] = []  # the originals: their ids key _done
        self.exprs: dict[int, CType] = {}  # the types of the copies' expressions
        self.compares: dict[int, list[ScalarType]] = {}
        self.calls: dict[int, FunctionTypes] = {}

    def type(self, node: ast.AST, types: FunctionTypes) -> CType:
        """The type of an expression of ``types``'s function, or of a copy of one."""
        t = self.exprs.get(id(node))
        return types.exprs[id(node)] if t is None else t

    def expand(self, stmts: list[ast.stmt], types: FunctionTypes) -> list[ast.stmt]:
        """``stmts`` with every loop that unrolls replaced by its copies, also inside ``if``."""
        key = (id(stmts), id(types))
        done = self._done.get(key)
        if done is None:
            done = []
            for s in stmts:
                done.extend(self._statement(s, types))
            self._done[key] = done
            self._keep.append(stmts)
        return done

    def _statement(self, s: ast.stmt, types: FunctionTypes) -> list[ast.stmt]:
        if isinstance(s, ast.If):
            body, orelse = self.expand(s.body, types), self.expand(s.orelse, types)
            if body == s.body and orelse == s.orelse:
                return [s]
            new = copy.copy(s)
            new.body, new.orelse = body, orelse
            return [new]
        if not isinstance(s, ast.For):
            return [s]
        trips = unrolled_range(s, types, lambda e: self.exprs.get(id(e), types.exprs.get(id(e))))
        if trips is None:
            return [s]
        var = s.target.id  # type: ignore[attr-defined]
        repeats = branch_free(s.body, lambda c: id(c) in types.calls or id(c) in self.calls)
        out: list[ast.stmt] = [CycleMark(1, s.lineno)] if repeats else []
        for value in trips:
            out.append(CycleMark(0 if repeats else 2, s.lineno))
            for b in s.body:
                out.extend(self._statement(self._copy(b, types, var, value), types))
        out.append(CycleMark(0 if repeats else 1, s.lineno))
        if trips:  # the variable keeps its last value, as in Python
            last = ast.Assign([copy.copy(s.target)], ast.Name(var, ast.Load()), lineno=s.lineno)
            out.append(self._copy(last, types, var, trips[-1]))
        return out

    def _copy(self, node: ast.stmt, types: FunctionTypes, var: str, value: int) -> ast.stmt:
        """A copy of ``node`` reading ``var`` as the constant ``value``, typed like the original."""
        new = copy.deepcopy(node)
        for old, fresh in zip(ast.walk(node), ast.walk(new)):
            for mine, theirs in ((self.exprs, types.exprs), (self.compares, types.compares),
                                 (self.calls, types.calls)):
                k = id(old)
                if k in mine or k in theirs:
                    mine[id(fresh)] = mine[k] if k in mine else theirs[k]  # type: ignore[index]
        constant = known(PY_INT, value)
        for n in ast.walk(new):
            for name, child in ast.iter_fields(n):
                if isinstance(child, ast.Name) and child.id == var and isinstance(child.ctx, ast.Load):
                    setattr(n, name, self._constant(child, value, constant))
                elif isinstance(child, list):
                    child[:] = [self._constant(c, value, constant) if isinstance(c, ast.Name) and c.id == var
                                and isinstance(c.ctx, ast.Load) else c for c in child]
        ast.fix_missing_locations(new)
        self._fold(new)
        return new

    def _constant(self, name: ast.Name, value: int, t: ScalarType) -> ast.Constant:
        c = ast.copy_location(ast.Constant(value), name)
        self.exprs[id(c)] = t
        return c

    def _fold(self, tree: ast.AST) -> None:
        """Give the integer arithmetic that now has constant operands its known value (indices of
        local arrays: loop versioning skips what is known to be in bounds)."""
        for n in reversed(list(ast.walk(tree))):  # operands before the operations using them
            if isinstance(n, ast.BinOp):
                t, a, b = (self.exprs.get(id(x)) for x in (n, n.left, n.right))
                if isinstance(t, ScalarType) and t == PY_INT and isinstance(a, ScalarType) \
                        and isinstance(b, ScalarType):
                    value = fold(type(n.op), a, b)
                    if value is not None:
                        self.exprs[id(n)] = known(t, value)
