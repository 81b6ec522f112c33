"""Lockstep lanes: one compute body run for several vertices at once, SIMD across vertices.

In strict IEEE mode a vertex's sums are chains of dependent adds (their order is the
semantics), so one vertex at a time is latency-bound. Vertices of one class are independent,
though: the kernel runs ``LANES`` of them in lockstep, as ISPC and GPUs do, each lane doing
exactly the operations its vertex does alone, so its results (and cycles) are bit-identical,
while LLVM's SLP vectoriser packs the lanes' identical operations into vector instructions.

Lanes share their control flow, so a class runs in lockstep only when :func:`lockstep_ok`
proves that every branch, loop bound and vector index depends on *shape* values alone:
constants, template constants, state scalars and the lengths of vector fields, and what is
computed from them. At run time a group of consecutive vertices goes in lockstep when those
values agree (their records' sizes and state scalars are equal); any other vertex runs alone.

The codegen lowers the same statements with a :class:`LaneBuilder`: every instruction whose
operands hold :class:`Lanes` is emitted once per lane, and a branch reads lane 0 (the lanes
agree, by the proof above).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

import llvmlite.ir as ir

from ..vertex import Direction, FieldKind
from .inference import FunctionTypes, TypedCodelet, is_range
from .short_vec import short_vector_call
from .type_rules import PolicyType, ScalarType, ShortVecType, VectorType

#: two chains hide most of an add's latency; more lanes read more short streams at once than
#: the memory system serves well (measured on tutorial 7: 2 lanes 1.5x faster, 4 none, 8 slower)
LANES = 2

# IRBuilder methods that steer control flow (their condition is read from lane 0) or that
# only place the builder.
_CONTROL = frozenset({"cbranch", "if_then", "if_else", "ret"})
_PLAIN = frozenset({"branch", "position_at_end", "position_at_start", "position_before", "position_after",
                    "append_basic_block", "goto_block", "goto_entry_block", "ret_void", "unreachable"})


class Lanes:
    """One value per lane."""

    __slots__ = ("values",)

    def __init__(self, values: list[Any]) -> None:
        self.values = values

    @property
    def type(self) -> ir.Type:
        return self.values[0].type

    def set_metadata(self, name: str, node: Any) -> None:
        for v in self.values:
            v.set_metadata(name, node)


def first_lane(x: Any) -> Any:
    """Lane 0 of lanes, or the value itself."""
    return x.values[0] if isinstance(x, Lanes) else x


def _lane(x: Any, k: int) -> Any:
    if isinstance(x, Lanes):
        return x.values[k]
    if isinstance(x, list):
        return [_lane(y, k) for y in x]
    return x


def _has_lanes(x: Any) -> bool:
    return isinstance(x, Lanes) or (isinstance(x, list) and any(_has_lanes(y) for y in x))


class LaneBuilder:
    """An ``ir.IRBuilder`` whose instructions act on every lane of :class:`Lanes` operands."""

    def __init__(self, builder: ir.IRBuilder, lanes: int) -> None:
        self._b, self._lanes = builder, lanes

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._b, name)
        if not callable(attr) or name in _PLAIN:
            return attr
        if name in _CONTROL:
            return lambda *args, **kwargs: attr(*[_lane(a, 0) for a in args], **kwargs)
        if name == "alloca":  # every lane its own slot
            return lambda *args, **kwargs: Lanes([attr(*args, **kwargs) for _ in range(self._lanes)])

        def each(*args: Any, **kwargs: Any) -> Any:
            if not any(_has_lanes(a) for a in args):
                return attr(*args, **kwargs)
            return Lanes([attr(*[_lane(a, k) for a in args], **kwargs) for k in range(self._lanes)])

        return each


def lane_states(b: ir.IRBuilder, states: ir.Value, struct: ir.Type, lanes: int) -> Lanes:
    """The state records of the ``lanes`` consecutive vertices from ``states``."""
    return Lanes([b.gep(states, [ir.Constant(ir.IntType(64), k)], inbounds=True, source_etype=struct)
                  for k in range(lanes)])


def signature_columns(typed: TypedCodelet) -> list[str]:
    """The record columns lanes must agree on: vector lengths and state scalars."""
    out = []
    for name, spec in typed.parsed.fields.items():
        if spec.kind is not FieldKind.SCALAR:
            out.append(f"{name}.size")
        elif spec.direction is Direction.STATE and name not in typed.written:
            out.append(name)
    return out


def lockstep_ok(typed: TypedCodelet) -> bool:
    """Whether every branch, loop bound and vector index of ``compute`` (and of the helpers it
    calls) depends on shape values only, so that lanes whose shapes agree never diverge. A codelet
    that writes its vertex state runs alone: that state is data once the vertices have run."""
    if typed.parsed.is_multi or typed.written or typed.parsed.prints:  # prints: one vertex at a time
        return False
    try:
        _Shape(typed, typed.compute, {}).check()
    except _DivergentError:
        return False
    return True


class _DivergentError(Exception):
    """Some control flow may differ between lanes."""


class _Shape:
    """Which values of one function (a specialisation) are the same in every lane."""

    def __init__(self, typed: TypedCodelet, types: FunctionTypes, params: dict[str, bool]) -> None:
        self.typed, self.types = typed, types
        self.fields = typed.parsed.fields
        self.uniform: dict[str, bool] = dict(params)  # locals (and vectors: their length)
        self.returns = True

    def check(self) -> bool:
        """Check the body (a fixpoint over the locals' uniformity); whether what it returns is."""
        for _ in range(20):
            before = dict(self.uniform)
            self.returns = True
            self.block(self.types.fn.node.body)
            if self.uniform == before:
                return self.returns
        raise _DivergentError

    def local(self, name: str, uniform: bool) -> None:
        self.uniform[name] = self.uniform.get(name, True) and uniform

    def block(self, stmts: list[ast.stmt]) -> None:
        for s in stmts:
            self.statement(s)

    def statement(self, s: ast.stmt) -> None:
        if isinstance(s, (ast.Pass, ast.Break, ast.Continue)):
            return
        if isinstance(s, ast.Expr):
            self.value(s.value)
        elif isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            self.assign(s)
        elif isinstance(s, (ast.If, ast.While)):
            test = self.types.exprs.get(id(s.test))
            if isinstance(s, ast.If) and isinstance(test, ScalarType) and test.value is not None:
                self.block(s.body if test.value else s.orelse)  # only this side is compiled
                return
            self.control(s.test)
            self.block(s.body)
            self.block(s.orelse)
        elif isinstance(s, ast.For):
            self.loop(s)
        elif isinstance(s, ast.Assert):
            self.control(s.test)
        elif isinstance(s, ast.Return):
            plain = s.value is None or (isinstance(s.value, ast.Constant) and s.value.value in (None, True))
            if not plain:
                assert s.value is not None
                self.returns = self.value(s.value) and self.returns
                if self.types is self.typed.compute and not self.returns:
                    raise _DivergentError  # compute returning a value that may differ: a per-lane failure
        else:
            raise _DivergentError

    def assign(self, s: ast.Assign | ast.AnnAssign | ast.AugAssign) -> None:
        targets = s.targets if isinstance(s, ast.Assign) else [s.target]
        value = s.value
        assert value is not None
        pairs: Iterator[tuple[ast.expr, ast.expr]]
        if isinstance(targets[0], ast.Tuple) and isinstance(value, ast.Tuple):
            pairs = zip(targets[0].elts, value.elts)
        else:
            pairs = iter([(targets[0], value)])
        for target, v in pairs:
            uniform = self.value(v)
            if isinstance(s, ast.AugAssign):
                uniform = uniform and self.value(target)
            if isinstance(target, ast.Name):
                self.local(target.id, uniform)
            elif isinstance(target, ast.Subscript):
                self.index(target)

    def loop(self, s: ast.For) -> None:
        assert isinstance(s.target, ast.Name)
        if is_range(s):
            assert isinstance(s.iter, ast.Call)
            for a in s.iter.args:
                self.control(a)
            self.local(s.target.id, True)
        else:
            self.length(s.iter)
            self.local(s.target.id, False)  # an element: data
        self.block(s.body)

    def control(self, e: ast.expr) -> None:
        """A value that steers control flow: every lane must have the same."""
        if not self.value(e):
            raise _DivergentError

    def length(self, e: ast.expr) -> None:
        """A vector whose length steers control flow (a loop over it, or a bounds check)."""
        t = self.types.exprs.get(id(e))
        if isinstance(t, VectorType) and t.size is not None:
            return  # a local array: known when compiling
        if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "self":
            return  # a vector or list field: its length is in the signature (its rows' are not)
        if isinstance(e, ast.Name) and self.uniform.get(e.id, False):
            return  # a vector local or parameter known to hold a field (or a local array)
        raise _DivergentError

    def index(self, e: ast.Subscript) -> None:
        """An element access: bounds-checked against the container's length."""
        self.length(e.value)
        self.control(e.slice)

    def value(self, e: ast.expr) -> bool:
        """Whether ``e`` is the same in every lane (checking what inside it steers control)."""
        t = self.types.exprs.get(id(e))
        if t is None:
            return True  # not compiled (a branch on a constant)
        if (isinstance(t, ScalarType) and t.value is not None) or isinstance(t, PolicyType):
            return True
        if isinstance(e, ast.Constant):
            return True
        if isinstance(e, ast.Name):
            if e.id in self.types.fn.local_names:
                return self.uniform.get(e.id, True)
            return True  # a global constant
        if isinstance(e, ast.Attribute):
            if isinstance(e.value, ast.Name) and e.value.id == "self" and e.attr in self.fields:
                spec = self.fields[e.attr]
                if spec.kind is FieldKind.SCALAR:
                    return spec.direction is Direction.STATE
                return True  # a vector field (the value is its length, for this analysis)
            return True  # math constants, template constants, policies' constants
        if isinstance(e, ast.Subscript):
            if isinstance(self.types.exprs.get(id(e.value)), ShortVecType):
                return self.value(e.value)  # an element of a short vector (a constant index)
            self.index(e)
            return False  # an element (or a row of a list, whose length may differ): data
        if isinstance(e, (ast.BinOp, ast.UnaryOp)):
            parts = [self.value(c) for c in ast.iter_child_nodes(e) if isinstance(c, ast.expr)]  # check all
            return all(parts)
        if isinstance(e, ast.Compare):
            parts = [self.value(e.left)] + [self.value(c) for c in e.comparators]
            if len(e.ops) > 1 and not all(parts[1:-1]):
                raise _DivergentError  # a chain stops at the first False: a branch
            return all(parts)
        if isinstance(e, (ast.BoolOp, ast.IfExp)):
            tests = e.values[:-1] if isinstance(e, ast.BoolOp) else [e.test]
            test = self.types.exprs.get(id(tests[0])) if isinstance(e, ast.IfExp) else None
            if isinstance(test, ScalarType) and test.value is not None:
                assert isinstance(e, ast.IfExp)
                return self.value(e.body if test.value else e.orelse)
            for c in tests:
                self.control(c)  # lowered as branches
            rest = e.values[-1:] if isinstance(e, ast.BoolOp) else [e.body, e.orelse]
            parts = [self.value(c) for c in rest]  # check all
            return all(parts)
        if isinstance(e, ast.Call):
            return self.call(e)
        raise _DivergentError

    def call(self, e: ast.Call) -> bool:
        callee = self.types.calls.get(id(e))
        args = [self.value(a) for a in e.args if id(a) in self.types.exprs]
        if callee is not None:
            params = dict(zip(callee.fn.arg_names, args))
            return _Shape(self.typed, callee, params).check()
        vector = short_vector_call(e, self.types.fn)
        if vector is not None and vector[1] != "make":  # a load or store: bounds-checked
            self.length(e.args[0])
            self.control(e.args[1])
            return False
        f = e.func
        if isinstance(f, ast.Name) and f.id == "len":
            self.length(e.args[0])
            return True
        if isinstance(f, ast.Name) and f.id == "LocalArray":
            return True
        return all(args)
