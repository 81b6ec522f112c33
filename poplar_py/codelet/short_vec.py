"""Short vector values in codelets (``float2``, ``half4``...: :mod:`poplar_py.short_vectors`):
their typing rules and their lowering to LLVM vector registers.

Typing: a constructor ``float2(a, b)`` / ``float2(a)`` takes numbers (not bools); ``v[k]`` needs a
constant ``k`` in ``[0, width)``; ``+ - *`` (``/`` for float vectors) combine two vectors of the
same type, or a vector and a number (converted to the element type); ``T.load(v, i)`` and
``T.store(v, i, x)`` need a vector (field, row, local array) of exactly the element type.

Cycles (the model of :mod:`poplar_py.codelet.codegen`): one per construction, vector operation, load and
store, as one IPU instruction each (``f32v2add``, ``f16v4mul``, ``ld64``...); an element read is a
register (free).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

import llvmlite.ir as ir

from ..short_vectors import ShortVector
from .ops import ScalarOps
from .source import FunctionSource
from .type_rules import BOOL, OP_SYMBOLS, CType, ScalarType, ShortVecType, VectorType, scalar_of

I32, I64 = ir.IntType(32), ir.IntType(64)
_ARITHMETIC = {ast.Add: ("fadd", "add"), ast.Sub: ("fsub", "sub"), ast.Mult: ("fmul", "mul"),
               ast.Div: ("fdiv", None)}


def vector_type(vector: ShortVector) -> ShortVecType:
    return ShortVecType(vector.name, scalar_of(vector.element), vector.width)


def short_vector_call(node: ast.Call, fn: FunctionSource) -> tuple[ShortVector, str] | None:
    """For a call ``float2(...)``, ``float2.load(...)`` or ``float2.store(...)``: the type and
    ``"make"``, ``"load"`` or ``"store"``; None for any other call."""
    f = node.func
    name, what = (f.value, f.attr) if isinstance(f, ast.Attribute) else (f, "make")
    if not isinstance(name, ast.Name) or name.id in fn.local_names:
        return None
    r = fn.globals_used.get(name.id)
    return (r.value, what) if r is not None and r.kind == "short_vector" else None


def binop_vector_type(op: type, a: CType, b: CType) -> ShortVecType:
    """The type of ``a <op> b`` when either is a short vector. Raises TypeError."""
    symbol = OP_SYMBOLS[op]
    vector = a if isinstance(a, ShortVecType) else b
    assert isinstance(vector, ShortVecType)
    other = b if vector is a else a
    if op not in _ARITHMETIC or (op is ast.Div and not vector.elem.is_float):
        raise TypeError(f"operator '{symbol}' is not supported for {vector} (only + - *"
                        f"{' /' if vector.elem.is_float else ''})")
    if isinstance(other, ShortVecType) and other != vector:
        raise TypeError(f"operator '{symbol}' needs two {vector} or a {vector} and a number, "
                        f"not {a} and {b}")
    if isinstance(other, ScalarType) and other == BOOL:
        raise TypeError(f"arithmetic on bool values is not supported; convert with int() ({a} {symbol} {b})")
    if not isinstance(other, (ShortVecType, ScalarType)):
        raise TypeError(f"operator '{symbol}' needs a {vector} or a number with a {vector}, not a {other}")
    return vector


def register(t: ShortVecType) -> ir.VectorType:
    """The LLVM type of a short vector in registers (and in memory)."""
    return ir.VectorType(ScalarOps.reg_type(t.elem), t.width)


class ShortVectorLowering:
    """Lowers short vector expressions; mixed into the codegen's expression lowering, whose
    builder, conversions, cycle counts and bounds checks it uses."""

    b: ir.IRBuilder
    ops: ScalarOps
    flags: tuple[str, ...]
    checked: bool
    pending: int
    _issue: Callable[..., None]  # (type, cycles): counts an operation
    _check: Callable[..., None]  # (ok, field, index, size, line): a bounds check

    def splat(self, value: ir.Value, vt: ScalarType, t: ShortVecType) -> ir.Value:
        """A number converted to the element type, in every element."""
        element = self.ops.convert(value, vt, t.elem)
        return self.pack([element] * t.width, t)

    def pack(self, elements: list[ir.Value], t: ShortVecType) -> ir.Value:
        v = ir.Constant(register(t), None)
        for k, element in enumerate(elements):
            v = self.b.insert_element(v, element, I32(k))
        return v

    def make_vector(self, args: list[ir.Value], types: list[CType], t: ShortVecType) -> ir.Value:
        """``float2(a, b)`` or ``float2(a)``."""
        self.pending += 1
        converted = [self.ops.convert(a, at, t.elem) for a, at in zip(args, types)]  # type: ignore[arg-type]
        return self.pack(converted * t.width if len(converted) == 1 else converted, t)

    def element(self, vector: ir.Value, index: int) -> ir.Value:
        return self.b.extract_element(vector, I32(index))

    def vector_binop(self, op: ast.operator, a: ir.Value, at: CType, b: ir.Value, bt: CType,
                     rt: ShortVecType) -> ir.Value:
        """Element-wise ``a <op> b``, a number operand repeated in every element."""
        x = a if isinstance(at, ShortVecType) else self.splat(a, at, rt)  # type: ignore[arg-type]
        y = b if isinstance(bt, ShortVecType) else self.splat(b, bt, rt)  # type: ignore[arg-type]
        self._issue(rt.elem)
        floating, integer = _ARITHMETIC[type(op)]
        if rt.elem.is_float:
            return getattr(self.b, floating)(x, y, flags=self.flags)
        assert integer is not None
        return getattr(self.b, integer)(x, y)

    def vector_neg(self, v: ir.Value, t: ShortVecType) -> ir.Value:
        self._issue(t.elem)
        return self.b.fneg(v, flags=self.flags) if t.elem.is_float else self.b.neg(v)

    def vector_address(self, data: ir.Value, size: ir.Value, index: ir.Value, vt: VectorType, width: int,
                       line: int) -> ir.Value:
        """Where vector ``index`` of a vector of elements (data, size) starts: every element of it
        must be in bounds (else the error names the last element's index)."""
        if self.checked:
            whole = self.b.udiv(size, I64(width))
            last = self.b.add(self.b.mul(index, I64(width)), I64(width - 1))
            self._check(self.b.icmp_unsigned("<", index, whole), vt.field, last, size, line)
        first = self.b.mul(index, I64(width))
        return self.b.gep(data, [first], inbounds=True, source_etype=ScalarOps.reg_type(vt.elem))

    def vector_load(self, address: ir.Value, t: ShortVecType) -> ir.Value:
        self.pending += 1
        return self.b.load(address, typ=register(t), align=t.elem.bits // 8)

    def vector_store(self, value: ir.Value, address: ir.Value, t: ShortVecType) -> None:
        self.pending += 1
        self.b.store(value, address, align=t.elem.bits // 8)
