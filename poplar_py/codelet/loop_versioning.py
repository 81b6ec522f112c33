"""Loop versioning for checked kernels: one guard before a counted loop instead of a check per access.

A bounds check in a loop body is a branch out of the loop, which stops LLVM's vectoriser. For an
innermost ``for i in range(start, stop[, step])`` loop with a constant step, :func:`plan_loop`
finds the accesses ``v[e]`` whose index ``e`` is affine in ``i``: built from ``i``, integer
constants, ``len(...)`` and 64-bit integer locals that the loop body does not assign, with
``+``, ``-``, unary ``-`` and ``*`` (at most one factor depending on ``i``), where ``v`` is a
vector field or a local vector that the body does not assign. A local assigned once, at the top
level of the body, from such an expression (``base = k * n + j``) stands for that expression in
the statements after its assignment.

The codegen (``KernelBuilder._For``) then emits the guard of :func:`emit_guard`: the loop runs no
iteration, or every planned index lies in ``[0, len)`` at the first and at the last iteration
(an affine index is monotone in ``i``, so every iteration's index lies between the two). The guard
is computed in i128, so nothing overflows; the body's own i64 arithmetic wraps, i.e. it is exact
modulo 2**64, so an index whose exact value lies in ``[0, len)`` is also what the body computes.
When the guard holds, a copy of the loop runs with those accesses unchecked (the fast path);
otherwise the original checked loop runs, so an error record is exactly that of a checked build.
Both copies are lowered by the same code with the same cycle accounting, and the guard itself is
free, so the cycle count does not depend on the path taken. Straight-line code gets the same
treatment (:func:`plan_region`), and a loop with the straight-line code after it share one guard
when :func:`hoistable` allows. When the guarded code is :func:`certain` to fail with the guard,
the checked copy keeps its loops rolled (the codegen's cold path stays small: an error is all it
can end in, and a failing vertex's cycles are never read).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

import llvmlite.ir as ir

from .type_rules import CType, ScalarType, VectorType

I128 = ir.IntType(128)
I64 = ir.IntType(64)


@dataclass(frozen=True)
class LoopPlan:
    """The accesses of one loop that the guard covers."""

    var: str  # the loop variable
    step: int
    accesses: tuple[ast.Subscript, ...]
    subs: dict[str, ast.expr]  # locals that stand for an affine expression of the loop variable
    #: accesses to a row of a vector list: id(access) -> (the list, the row's index)
    rows: dict[int, tuple[ast.expr, ast.expr]] = field(default_factory=dict)

    @property
    def ids(self) -> frozenset[int]:
        return frozenset(id(a) for a in self.accesses)


def assigned_names(stmts: list[ast.stmt]) -> dict[str, int]:
    """Local name -> how many times the statements (at any depth) assign it."""
    counts: dict[str, int] = {}

    def add(t: ast.expr) -> None:
        if isinstance(t, ast.Name):
            counts[t.id] = counts.get(t.id, 0) + 1
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                add(e)

    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    add(t)
            elif isinstance(n, (ast.AugAssign, ast.AnnAssign, ast.For, ast.NamedExpr)):
                add(n.target)
    return counts


def step_constant(node: ast.For) -> int | None:
    """The step of ``range(...)`` when it is an integer literal (or a negated one)."""
    assert isinstance(node.iter, ast.Call)
    args = node.iter.args
    if len(args) < 3:
        return 1
    s = args[2]
    sign = 1
    if isinstance(s, ast.UnaryOp) and isinstance(s.op, (ast.USub, ast.UAdd)):
        sign = -1 if isinstance(s.op, ast.USub) else 1
        s = s.operand
    if isinstance(s, ast.Constant) and type(s.value) is int and s.value != 0:
        return sign * s.value
    return None


def _is_i64(t: CType | None) -> bool:
    return isinstance(t, ScalarType) and t.kind == "i" and t.bits == 64


class _Analysis:
    def __init__(self, var: str, body: list[ast.stmt], type_of: Callable[[ast.AST], CType | None],
                 local_types: dict[str, CType], fields: dict[str, object]) -> None:
        self.var = var  # "" for a straight-line region
        self.type_of, self.local_types, self.fields = type_of, local_types, fields
        self.assigned = assigned_names(body)
        self.subs: dict[str, tuple[int, ast.expr]] = {}
        for pos, s in enumerate(body):
            if (
                isinstance(s, ast.Assign)
                and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Name)
                and self.assigned.get(s.targets[0].id) == 1
                and _is_i64(local_types.get(s.targets[0].id))
            ):
                self.subs[s.targets[0].id] = (pos, s.value)
        # locals assigned rows of a vector list (row = out[i]), only at the top level of the body
        self.aliases: dict[str, list[tuple[int, ast.Subscript]]] = {}
        for pos, s in enumerate(body):
            if (
                isinstance(s, ast.Assign)
                and isinstance(s.targets[0], ast.Name)
                and isinstance(s.value, ast.Subscript)
                and self.invariant_vector(s.value.value)
            ):
                self.aliases.setdefault(s.targets[0].id, []).append((pos, s.value))
        self.aliases = {k: v for k, v in self.aliases.items() if self.assigned.get(k) == len(v)}

    def typed_i64(self, e: ast.expr) -> bool:
        try:
            return _is_i64(self.type_of(e))
        except KeyError:
            return False

    def invariant_vector(self, e: ast.expr) -> bool:
        if isinstance(e, ast.Name):
            return e.id not in self.assigned and isinstance(self.local_types.get(e.id), VectorType)
        return (
            isinstance(e, ast.Attribute)
            and isinstance(e.value, ast.Name)
            and e.value.id == "self"
            and isinstance(self.fields.get(e.attr), tuple)  # a vector field: (data, length)
        )

    def row(self, e: ast.expr, pos: int) -> tuple[ast.expr, ast.expr] | None:
        """(list, index) when ``e``, used at statement ``pos``, is a row of an invariant vector
        list whose index does not depend on the loop variable: ``out[i]``, or a local assigned
        it earlier in the body."""
        if isinstance(e, ast.Name):
            before = [a for a in self.aliases.get(e.id, ()) if a[0] < pos]
            if not before:
                return None
            pos, e = before[-1]
        if not (isinstance(e, ast.Subscript) and self.invariant_vector(e.value)):
            return None
        t = self.type_of(e.value)
        if not (isinstance(t, VectorType) and t.is_list) or self.degree(e.slice, pos) != 0:
            return None
        return e.value, e.slice

    def degree(self, e: ast.expr, pos: int) -> int | None:
        """0 (invariant) or 1 (affine in the loop variable) for an index usable at statement ``pos``."""
        if isinstance(e, ast.Call):  # len() of an invariant vector is an int whatever its type
            f = e.func
            ok = isinstance(f, ast.Name) and f.id == "len" and len(e.args) == 1 and not e.keywords
            return 0 if ok and self.invariant_vector(e.args[0]) and self.typed_i64(e) else None
        if isinstance(e, ast.Name):
            if e.id == self.var and self.var:
                return 1
            sub = self.subs.get(e.id)
            if sub is not None:
                return self.degree(sub[1], sub[0]) if sub[0] < pos else None
            t = self.type_of(e)
            if e.id in self.assigned or not isinstance(t, ScalarType) or t.kind not in "iu":
                return None
            # an int local (or global constant) the loop does not assign: converting it to i64
            # (where it is used, and in the guard) is the same operation on the same value
            return 0
        if not self.typed_i64(e):  # arithmetic in i64 only: narrower types wrap differently
            return None
        if isinstance(e, ast.Constant):
            return 0 if type(e.value) is int else None
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            return self.degree(e.operand, pos)
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub, ast.Mult)):
            a, b = self.degree(e.left, pos), self.degree(e.right, pos)
            if a is None or b is None:
                return None
            d = a + b if isinstance(e.op, ast.Mult) else max(a, b)
            return d if d <= 1 else None
        return None


def _constant_index(an: _Analysis, n: ast.Subscript) -> bool:
    """A constant index of a local array, in bounds: never checked, nothing to guard."""
    t, i = an.type_of(n.value), an.type_of(n.slice)
    return (isinstance(t, VectorType) and t.size is not None and isinstance(i, ScalarType)
            and isinstance(i.value, int) and 0 <= i.value < t.size)


def _accesses(an: _Analysis, body: list[ast.stmt], skip: frozenset[int]
              ) -> tuple[list[ast.Subscript], dict[int, tuple[ast.expr, ast.expr]]]:
    """The accesses the guard can cover, and which of them index a row of a vector list."""
    found: list[ast.Subscript] = []
    rows: dict[int, tuple[ast.expr, ast.expr]] = {}
    for pos, s in enumerate(body):
        for n in ast.walk(s):
            if not isinstance(n, ast.Subscript) or id(n) in skip or an.type_of(n) is None \
                    or _constant_index(an, n) or an.degree(n.slice, pos) is None:
                continue  # (untyped: in a branch that is not compiled)
            if an.invariant_vector(n.value):
                found.append(n)
                continue
            row = an.row(n.value, pos)
            if row is not None:
                found.append(n)
                rows[id(n)] = row
    return found, rows


def plan_loop(node: ast.For, type_of: Callable[[ast.AST], CType | None], local_types: dict[str, CType],
              fields: dict[str, object]) -> LoopPlan | None:
    """The plan for an innermost range loop with a constant step, or None if nothing is covered."""
    step = step_constant(node)
    if step is None or not isinstance(node.target, ast.Name) or node.orelse:
        return None
    if any(isinstance(n, (ast.For, ast.While)) for s in node.body for n in ast.walk(s)):
        return None  # only innermost loops: versioning nests would double the code per level
    an = _Analysis(node.target.id, node.body, type_of, local_types, fields)
    if an.var in an.assigned:
        return None
    accesses, rows = _accesses(an, node.body, frozenset())
    if not accesses:
        return None
    return LoopPlan(an.var, step, tuple(accesses), {k: v[1] for k, v in an.subs.items()}, rows)


def plan_region(stmts: list[ast.stmt], type_of: Callable[[ast.AST], CType | None],
                local_types: dict[str, CType], fields: dict[str, object], skip: frozenset[int]
                ) -> LoopPlan | None:
    """The plan for a run of simple statements (the caller makes sure they hold no control flow
    and no helper call) with at least two coverable accesses not in ``skip``, else None."""
    an = _Analysis("", stmts, type_of, local_types, fields)
    accesses, rows = _accesses(an, stmts, skip)
    if len(accesses) < 2:
        return None
    return LoopPlan("", 0, tuple(accesses), {k: v[1] for k, v in an.subs.items()}, rows)


def hoistable(loop: ast.For, region: LoopPlan) -> bool:
    """Whether the guard of ``region`` (straight-line code right after ``loop``) reads nothing the
    loop assigns, so that it can be evaluated before the loop: one guard then covers both, and the
    loop's results reach the region's accesses in one unchecked copy (what LLVM's SLP vectoriser
    needs to keep a register tile's sums in vectors up to their stores)."""
    assert isinstance(loop.target, ast.Name)
    assigned = set(assigned_names(loop.body)) | {loop.target.id}
    read = [*(a.value for a in region.accesses), *(a.slice for a in region.accesses),
            *(e for row in region.rows.values() for e in row), *region.subs.values()]
    return not any(isinstance(n, ast.Name) and n.id in assigned for e in read for n in ast.walk(e))


def certain(stmts: list[ast.stmt], is_helper: Callable[[ast.Call], bool]) -> bool:
    """Whether ``stmts`` (a flattened loop body, or straight-line code) run every statement each
    time, in order: no branch, early exit, short-circuit or helper call. A guard over them then
    fails only when an access will fail (the loop runs, and an index at its first or last
    iteration is out of bounds), so its checked copy only has to find which, and need not count
    the cycles of a vertex that completes. (The exception: index arithmetic that wraps past 2**63
    back into bounds; the vertex then completes with the same results, its cycles counted rolled.)"""
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, (ast.If, ast.While, ast.For, ast.IfExp, ast.BoolOp, ast.Break, ast.Continue,
                              ast.Return, ast.Assert)):
                return False
            if (isinstance(n, ast.Compare) and len(n.ops) > 1) or (isinstance(n, ast.Call) and is_helper(n)):
                return False
    return True


def _extremes(plan: LoopPlan) -> list[ast.Subscript]:
    """The accesses the guard must check: of those into one container at one index plus different
    constants (``b[base + 0]`` ... ``b[base + 15]``, unrolled), the lowest and the highest."""
    groups: dict[tuple[str, str], list[tuple[int, ast.Subscript]]] = {}
    for access in plan.accesses:
        index, offset = access.slice, 0
        if isinstance(index, ast.BinOp) and isinstance(index.op, (ast.Add, ast.Sub)) \
                and isinstance(index.right, ast.Constant) and type(index.right.value) is int:
            index, offset = index.left, index.right.value * (1 if isinstance(index.op, ast.Add) else -1)
        row = plan.rows.get(id(access))
        container = ast.dump(access.value) if row is None else ast.dump(ast.Tuple(list(row)))
        groups.setdefault((container, ast.dump(index)), []).append((offset, access))
    out = []
    for members in groups.values():
        members.sort(key=lambda m: m[0])
        out.extend({id(m[1]): m[1] for m in (members[0], members[-1])}.values())
    return out


def range_turns(b: ir.IRBuilder, start: ir.Value, stop: ir.Value, step: ir.Value) -> ir.Value:
    """The turns ``range(start, stop, step)`` has (i64), as Python counts them at either end of
    the 64-bit range; none for a zero step (unchecked, such a loop runs no turn: checked, it fails
    before). ``|stop - start| - 1`` wraps in i64 but is exact as an unsigned number when the loop
    runs (an i64 division: an i128 one would call a runtime library function the JIT does not
    link)."""
    if isinstance(step, ir.Constant):
        if step.constant == 0:
            return I64(0)
        up = step.constant > 0
        runs = b.icmp_signed("<" if up else ">", start, stop)
        span = b.sub(stop, start) if up else b.sub(start, stop)
        magnitude: ir.Value = I64(step.constant if step.constant == -2**63 else abs(step.constant))
    else:
        rising, falling = b.icmp_signed(">", step, I64(0)), b.icmp_signed("<", step, I64(0))
        runs = b.select(rising, b.icmp_signed("<", start, stop),
                        b.and_(falling, b.icmp_signed(">", start, stop)))
        span = b.select(rising, b.sub(stop, start), b.sub(start, stop))
        magnitude = b.select(rising, step, b.select(falling, b.neg(step), I64(1)))  # never 0
    return b.select(runs, b.add(b.udiv(b.sub(span, I64(1)), magnitude), I64(1)), I64(0))


def loop_points(
    b: ir.IRBuilder, step: int, start: ir.Value, stop: ir.Value
) -> tuple[ir.Value, list[ir.Value]]:
    """Whether a range loop runs, and its first and last value of the loop variable (in i128)."""
    turns = range_turns(b, start, stop, I64(step))
    start128 = b.sext(start, I128)
    # the last value of the loop variable (garbage when the loop does not run; then unused)
    last = b.add(start128, b.mul(b.zext(b.sub(turns, I64(1)), I128), I128(step)))
    return b.icmp_unsigned("!=", turns, I64(0)), [start128, last]


def emit_guard(
    b: ir.IRBuilder,
    plan: LoopPlan,
    points: list[ir.Value],
    leaf: Callable[[ast.expr], ir.Value],
    size_of: Callable[[ast.expr], ir.Value],
    row_size: Callable[[ast.expr, ir.Value], tuple[ir.Value, ir.Value]],
) -> ir.Value:
    """i1: every planned index is in bounds with the loop variable at each of ``points`` (i128).
    ``leaf`` gives the i64 value of an invariant name or len() (no cycles counted), ``size_of``
    the length of an accessed vector, ``row_size(list, index)`` whether an i128 index of a vector
    list is in bounds and then the length of that row (i128)."""

    def value(e: ast.expr, i: ir.Value) -> ir.Value:
        if isinstance(e, ast.Name) and plan.var and e.id == plan.var:
            return i
        if isinstance(e, ast.Name) and e.id in plan.subs:
            return value(plan.subs[e.id], i)
        if isinstance(e, ast.Constant):
            return I128(e.value)
        if isinstance(e, ast.UnaryOp):
            v = value(e.operand, i)
            return b.neg(v) if isinstance(e.op, ast.USub) else v
        if isinstance(e, ast.BinOp):
            x, y = value(e.left, i), value(e.right, i)
            op = {ast.Add: b.add, ast.Sub: b.sub, ast.Mult: b.mul}[type(e.op)]
            return op(x, y)
        return b.sext(leaf(e), I128)

    ok = ir.Constant(ir.IntType(1), 1)
    for access in _extremes(plan):
        row = plan.rows.get(id(access))
        if row is None:
            size = b.sext(size_of(access.value), I128)
        else:  # the row's index does not depend on the loop variable
            row_ok, size = row_size(row[0], value(row[1], points[0]))
            ok = b.and_(ok, row_ok)
        for i in points:
            ok = b.and_(ok, b.icmp_unsigned("<", value(access.slice, i), size))
    return ok
