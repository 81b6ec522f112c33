"""Scalar operations for codelet codegen: conversions, arithmetic with numpy semantics, math calls.

Everything here emits straight-line llvmlite IR for one operation on values whose codelet types
(:class:`ScalarType`) are known; the rules are documented in :mod:`poplar_py.codelet.type_rules`.
Half values are converted through float32 for everything except + - * / so that no compiler-rt helper is ever
needed, and float64 -> half goes through float32 with round-to-odd (exact, like numpy).
"""

from __future__ import annotations

import llvmlite.ir as ir

from .fastmath import FAST_FUNCTIONS, declare, fast_call
from .type_rules import F32, PY_INT, ScalarType, cast_value, math_precision

I64, I32, I1 = ir.IntType(64), ir.IntType(32), ir.IntType(1)
FLOAT, DOUBLE, HALF = ir.FloatType(), ir.DoubleType(), ir.HalfType()
_CMP = {"Eq": "==", "NotEq": "!=", "Lt": "<", "LtE": "<=", "Gt": ">", "GtE": ">="}
#: math functions that have an LLVM intrinsic; the others are libm calls (name, or name + "f").
_INTRINSICS = frozenset(
    {
        "exp",
        "exp2",
        "log",
        "log2",
        "log10",
        "sqrt",
        "sin",
        "cos",
        "pow",
        "fabs",
        "copysign",
        "floor",
        "ceil",
        "trunc",
    }
)


def _signed(n: int, bits: int) -> int:
    n &= (1 << bits) - 1
    return n - (1 << bits) if n >> (bits - 1) else n


class ScalarOps:
    """Emits conversions and operators on scalar values with one IRBuilder."""

    def __init__(self, builder: ir.IRBuilder, flags: tuple[str, ...]) -> None:
        self.b, self.flags = builder, flags

    @staticmethod
    def reg_type(t: ScalarType) -> ir.Type:
        """The LLVM type of a value of type t in a register."""
        if t.kind == "b":
            return I1
        if t.is_float:
            return {16: HALF, 32: FLOAT, 64: DOUBLE}[t.bits]
        return ir.IntType(t.bits)

    def constant(self, value: object, t: ScalarType) -> ir.Constant:
        ty = self.reg_type(t)
        if t.kind == "b":
            return ir.Constant(I1, int(bool(value)))
        v = value if t.weak else cast_value(value, t.dtype)
        return ir.Constant(ty, float(v)) if t.is_float else ir.Constant(ty, _signed(int(v), t.bits))  # type: ignore

    def convert(self, v: ir.Value, src: ScalarType, dst: ScalarType) -> ir.Value:
        """Convert by the codelet rules (see codelet/type_rules.py, cast_value); constants are folded here."""
        if src.kind == dst.kind and src.bits == dst.bits:
            return v
        if isinstance(v, ir.Constant) and isinstance(v.constant, (int, float)):
            return self.constant(cast_value(cast_value(v.constant, src.dtype), dst.dtype), dst)
        b = self.b
        if dst.kind == "b":
            return self.truth(v, src)
        if src.kind == "b":
            v, src = b.zext(v, I32), ScalarType("u", 32)
        if src.is_int and dst.is_int:
            if dst.bits < src.bits:
                return b.trunc(v, self.reg_type(dst))
            if dst.bits == src.bits:
                return v
            return (b.sext if src.kind == "i" else b.zext)(v, self.reg_type(dst))
        if src.is_int:
            target = FLOAT if dst.bits == 16 else self.reg_type(dst)
            r = (b.sitofp if src.kind == "i" else b.uitofp)(v, target)
            return b.fptrunc(r, HALF) if dst.bits == 16 else r
        if src.bits == 16:
            v, src = b.fpext(v, FLOAT), F32
            if dst.is_float and dst.bits == 32:
                return v
        if dst.is_float:
            if dst.bits > src.bits:
                return b.fpext(v, self.reg_type(dst))
            if src.bits == 64 and dst.bits == 16:
                return b.fptrunc(self._round_to_odd(v), HALF)
            return b.fptrunc(v, self.reg_type(dst))
        op = "fptosi" if dst.kind == "i" else "fptoui"  # saturating: NaN -> 0, no undefined behaviour
        fn = declare(
            self.b.module, f"llvm.{op}.sat.i{dst.bits}.f{src.bits}", self.reg_type(dst), [self.reg_type(src)]
        )
        return b.call(fn, [v])

    def narrow(self, v: ir.Value, src: ScalarType, dst: ScalarType) -> ir.Value:
        """An explicit conversion (a cast, a store into a field): :meth:`convert` (floating-point
        kernels round and check it under the control word: codelet_fp_ops)."""
        return self.convert(v, src, dst)

    def store_local(self, v: ir.Value, src: ScalarType, dst: ScalarType, fn: object, name: str) -> ir.Value:
        """A store into local ``name`` of function ``fn``: :meth:`convert` (:meth:`narrow` for a
        declared local in floating-point kernels)."""
        return self.convert(v, src, dst)

    def _round_to_odd(self, d: ir.Value) -> ir.Value:
        """double -> float rounded to odd, so that a following float -> half rounding is exact."""
        b = self.b
        t = b.fptrunc(d, FLOAT)
        back = b.fpext(t, DOUBLE)
        bits = b.bitcast(t, I32)
        fabs = declare(self.b.module, "llvm.fabs.f64", DOUBLE, [DOUBLE])
        away = b.fcmp_ordered(">", b.call(fabs, [back]), b.call(fabs, [d]))  # rounded away from zero
        toward_zero = b.select(away, b.sub(bits, I32(1)), bits)
        odd = b.select(b.fcmp_unordered("!=", back, d), b.or_(toward_zero, I32(1)), bits)
        return b.bitcast(odd, FLOAT)

    def truth(self, v: ir.Value, t: ScalarType) -> ir.Value:
        """Python truthiness: != 0 (NaN is true)."""
        if t.kind == "b":
            return v
        if t.is_float:
            return self.b.fcmp_unordered("!=", v, ir.Constant(v.type, 0.0))
        return self.b.icmp_unsigned("!=", v, ir.Constant(v.type, 0))

    def compare(self, kind: str, a: ir.Value, b: ir.Value, t: ScalarType) -> ir.Value:
        op = _CMP[kind]
        if t.is_float:  # IEEE: != is unordered (true for NaN), the others ordered
            return self.b.fcmp_unordered(op, a, b) if op == "!=" else self.b.fcmp_ordered(op, a, b)
        if t.kind == "i":
            return self.b.icmp_signed(op, a, b)
        return self.b.icmp_unsigned(op, a, b)

    def binop(self, kind: str, a: ir.Value, c: ir.Value, t: ScalarType, math: MathLib) -> ir.Value:
        """``a <kind> c`` with both operands already converted to the result type t."""
        b = self.b
        if t.is_float:
            simple = {"Add": b.fadd, "Sub": b.fsub, "Mult": b.fmul, "Div": b.fdiv}
            if kind in simple:
                return simple[kind](a, c, flags=self.flags)
            if t.bits == 16:  # numpy computes these half operations in float32 and rounds
                r = self.binop(kind, b.fpext(a, FLOAT), b.fpext(c, FLOAT), F32, math)
                return b.fptrunc(r, HALF)
            if kind == "Pow":
                return math.call_float("pow", [a, c], t)
            div, mod = self._float_divmod(a, c, math)
            return div if kind == "FloorDiv" else mod
        if kind in ("FloorDiv", "Mod"):
            return self._int_divmod(a, c, t)[0 if kind == "FloorDiv" else 1]
        if kind in ("LShift", "RShift"):
            return self._shift(kind, a, c, t)
        ops = {"Add": b.add, "Sub": b.sub, "Mult": b.mul, "BitAnd": b.and_, "BitOr": b.or_, "BitXor": b.xor}
        return ops[kind](a, c)  # no nsw/nuw: integer arithmetic wraps

    def _float_divmod(self, a: ir.Value, c: ir.Value, math: MathLib) -> tuple[ir.Value, ir.Value]:
        """numpy's npy_divmod (== CPython's float divmod), without fast-math flags."""
        b = self.b
        ty = a.type
        zero, one = ir.Constant(ty, 0.0), ir.Constant(ty, 1.0)
        mod = b.frem(a, c)
        div = b.fdiv(b.fsub(a, mod), c)
        fix = b.and_(
            b.fcmp_unordered("!=", mod, zero),
            b.xor(b.fcmp_ordered("<", c, zero), b.fcmp_ordered("<", mod, zero)),
        )
        mod2 = b.select(fix, b.fadd(mod, c), mod)
        div = b.select(fix, b.fsub(div, one), div)
        mod2 = b.select(b.fcmp_unordered("!=", mod, zero), mod2, math.float_fn("copysign", [zero, c]))
        floordiv = math.float_fn("floor", [div])
        floordiv = b.select(
            b.fcmp_ordered(">", b.fsub(div, floordiv), ir.Constant(ty, 0.5)), b.fadd(floordiv, one), floordiv
        )
        quotient = b.fdiv(a, c)
        floordiv = b.select(
            b.fcmp_unordered("!=", div, zero), floordiv, math.float_fn("copysign", [zero, quotient])
        )
        by_zero = b.fcmp_ordered("==", c, zero)
        return b.select(by_zero, quotient, floordiv), b.select(by_zero, mod, mod2)

    def _int_divmod(self, a: ir.Value, c: ir.Value, t: ScalarType) -> tuple[ir.Value, ir.Value]:
        """Floor division and modulo; x // 0 == x % 0 == 0 and MIN // -1 wraps, as numpy does:
        the truncating ones, moved down by one where the remainder's sign differs from c's."""
        q, r = self.trunc_divmod(a, c, t)
        if t.kind == "u":
            return q, r
        b = self.b
        zero, one = ir.Constant(a.type, 0), ir.Constant(a.type, 1)
        adjust = b.and_(b.icmp_unsigned("!=", r, zero), b.icmp_signed("<", b.xor(r, c), zero))
        return b.select(adjust, b.sub(q, one), q), b.select(adjust, b.add(r, c), r)

    def trunc_divmod(self, a: ir.Value, c: ir.Value, t: ScalarType) -> tuple[ir.Value, ir.Value]:
        """C's truncating ``a / c`` and ``a % c`` (cdiv, cmod); 0 for ``c == 0`` and ``MIN / -1``
        wraps, as :meth:`_int_divmod` (never a division by 0 or -1: SIGFPE)."""
        b = self.b
        ty = a.type
        zero, one = ir.Constant(ty, 0), ir.Constant(ty, 1)
        is_zero = b.icmp_unsigned("==", c, zero)
        if t.kind == "u":
            safe = b.select(is_zero, one, c)
            return b.select(is_zero, zero, b.udiv(a, safe)), b.select(is_zero, zero, b.urem(a, safe))
        minus_one = b.icmp_signed("==", c, ir.Constant(ty, -1))
        safe = b.select(b.or_(is_zero, minus_one), one, c)
        q = b.select(minus_one, b.sub(zero, a), b.sdiv(a, safe))
        r = b.select(minus_one, zero, b.srem(a, safe))
        return b.select(is_zero, zero, q), b.select(is_zero, zero, r)

    def _shift(self, kind: str, a: ir.Value, c: ir.Value, t: ScalarType) -> ir.Value:
        """numpy shifts: an amount outside [0, bits) gives 0, or the sign fill for a signed >>."""
        b = self.b
        ty = a.type
        width = ir.Constant(ty, t.bits if t.kind != "b" else 1)
        in_range = b.icmp_unsigned("<", c, width)
        amount = b.select(in_range, c, ir.Constant(ty, 0))
        zero = ir.Constant(ty, 0)
        if kind == "LShift":
            return b.select(in_range, b.shl(a, amount), zero)
        if t.kind == "i":
            fill = b.select(b.icmp_signed("<", a, zero), ir.Constant(ty, -1), zero)
            return b.select(in_range, b.ashr(a, amount), fill)
        return b.select(in_range, b.lshr(a, amount), zero)

    def int_pow(self, a: ir.Value, k: int, t: ScalarType) -> ir.Value:
        """a ** k for a constant k >= 0 by repeated squaring (wrapping)."""
        result = None
        base = a
        while k:
            if k & 1:
                result = base if result is None else self.b.mul(result, base)
            k >>= 1
            if k:
                base = self.b.mul(base, base)
        return result if result is not None else ir.Constant(a.type, 1)

    def abs(self, v: ir.Value, t: ScalarType, math: MathLib) -> ir.Value:
        if t.is_float:
            if t.bits == 16:
                return self.b.fptrunc(math.float_fn("fabs", [self.b.fpext(v, FLOAT)]), HALF)
            return math.float_fn("fabs", [v])
        if t.kind == "u":
            return v
        return self.b.select(self.b.icmp_signed("<", v, ir.Constant(v.type, 0)), self.b.neg(v), v)


class MathLib:
    """``math.*`` calls in the precision :func:`math_precision` picks; with fast_math, float32 exp, log
    and tanh use the vectorisable versions of :mod:`~poplar_py.codelet.fastmath`."""

    def __init__(self, ops: ScalarOps, fast: bool) -> None:
        self.ops, self.b, self.fast = ops, ops.b, fast

    def call(self, name: str, args: list[ir.Value], types: list[ScalarType]) -> ir.Value:
        """A Python ``math.<name>(*args)`` call; returns a value of the type :func:`math_result` gives."""
        ops, b = self.ops, self.b
        t = types[0]
        if name in ("isnan", "isinf", "isfinite"):
            if not t.is_float:
                return ir.Constant(I1, int(name == "isfinite"))
            x = ops.convert(args[0], t, F32 if t.bits == 16 else t)
            if name == "isnan":
                return b.fcmp_unordered("uno", x, x)
            inf = ir.Constant(x.type, float("inf"))
            return b.fcmp_ordered("==" if name == "isinf" else "<", self.float_fn("fabs", [x]), inf)
        if name in ("floor", "ceil", "trunc") and not t.is_float:
            return ops.convert(args[0], t, PY_INT)
        ct = math_precision(types)
        xs = [ops.convert(a, at, ct) for a, at in zip(args, types)]
        if name in ("floor", "ceil", "trunc"):
            return ops.convert(self.float_fn(name, xs), ct, PY_INT)
        if name == "log" and len(xs) == 2:  # log(x, base), as CPython computes it
            return b.fdiv(
                self.call_float("log", xs[:1], ct), self.call_float("log", xs[1:], ct), flags=ops.flags
            )
        return self.call_float(name, xs, ct)  # a float64 register is also what a Python float is

    def call_float(self, name: str, xs: list[ir.Value], t: ScalarType) -> ir.Value:
        """``name(*xs)`` with every x of float type t (float32 or float64)."""
        if name == "fmod":
            return self.b.frem(xs[0], xs[1])
        if name in FAST_FUNCTIONS and self.fast and t.bits == 32:
            return fast_call(self.b, name, xs[0])
        return self.float_fn(name, xs, self.ops.flags)

    def float_fn(self, name: str, xs: list[ir.Value], flags: tuple[str, ...] = ()) -> ir.Value:
        """The LLVM intrinsic or libm function (``expf`` for float32, ``exp`` for float64)."""
        ty = xs[0].type
        suffix = "f32" if ty == FLOAT else "f64"
        if name in _INTRINSICS:
            fn = declare(self.b.module, f"llvm.{name}.{suffix}", ty, [ty] * len(xs))
        else:
            fn = declare(self.b.module, name + ("f" if ty == FLOAT else ""), ty, [ty] * len(xs))
        return self.b.call(fn, xs, fastmath=flags)
