"""Scalar operations under a tile's floating-point control word, for the floating-point kernels.

A kernel compiled with ``KernelOptions.fp`` takes each vertex's control word and its worker's
generator address (:data:`fp_rules.FP_ENV_DTYPE`) and lowers arithmetic and explicit conversions
with :class:`FpScalarOps`: the rules of :mod:`codelet.fp_rules` (which the interpreter runs), in
LLVM IR. Stochastic rounding branches on the word's ``ESR`` bit, so the generator is drawn from
only when it is set; a raised exception fills the error record (``ERR_FP_EXCEPTION``, the kind
in ``field``, the statement's line) and returns. The engine runs these kernels only for vertex
classes some of whose tiles have a non-zero word: the plain kernels never test it.
"""

from __future__ import annotations

from typing import Protocol

import llvmlite.ir as ir

from .fastmath import declare
from .fp_rules import (
    CHECKS,
    DIV0,
    DIVISIONS,
    ERR_FP_EXCEPTION,
    ESR,
    EXACT_IN_F64,
    INV,
    KIND_DIV0,
    KIND_INVALID,
    KIND_OVERFLOW,
    NANOO,
    OFLO,
    TWO_POW_M32,
)
from .ops import DOUBLE, FLOAT, HALF, I1, I32, I64, MathLib, ScalarOps
from .source import FunctionSource
from .type_rules import F32, ScalarType
from .typed_locals import declared_locals

I8 = ir.IntType(8)
_ERR = ir.LiteralStructType([I64] * 6)  # the error record: vertex, code, field, index, size, line


class Failing(Protocol):
    """What a failing operation needs of the kernel being built."""

    err: ir.Value  # the error record
    counter: ir.Value  # the cycle counter slot
    cyc_out: ir.Value  # where the cycles go on return


class FpScalarOps(ScalarOps):
    """:class:`ScalarOps` under the control word ``ctl`` (i64) with the generator state at
    ``rng`` (two i64), for the control bits ``features`` (ESR, CHECKS: fp_rules.kernel_features;
    the others read as off); ``line`` is the line of the statement being lowered."""

    def __init__(self, builder: ir.IRBuilder, flags: tuple[str, ...], ctl: ir.Value, rng: ir.Value,
                 kernel: Failing, features: int) -> None:
        super().__init__(builder, flags)
        self.ctl, self.rng, self.kernel, self.features = ctl, rng, kernel, features
        self.line = -1
        self._declared: dict[int, frozenset[str]] = {}

    # the control word --------------------------------------------------------------------------
    def _on(self, bit: int) -> ir.Value:
        if not bit & self.features:
            return ir.Constant(I1, 0)
        return self.b.icmp_unsigned("!=", self.b.and_(self.ctl, I64(bit)), I64(0))

    def _draw(self) -> ir.Value:
        """xoroshiro128+'s next output's top 32 bits (as fp_rules.next_random), as an i64."""
        b = self.b
        p0 = self.rng
        p1 = b.gep(p0, [I64(8)], source_etype=I8)
        s0, s1 = b.load(p0, typ=I64), b.load(p1, typ=I64)
        t = b.xor(s0, s1)
        b.store(b.xor(b.xor(self._rotl(s0, 24), t), b.shl(t, I64(16))), p0)
        b.store(self._rotl(t, 37), p1)
        return b.lshr(b.add(s0, s1), I64(32))

    def _rotl(self, x: ir.Value, k: int) -> ir.Value:
        return self.b.or_(self.b.shl(x, I64(k)), self.b.lshr(x, I64(64 - k)))

    def _f64(self, name: str, *xs: ir.Value) -> ir.Value:
        fn = declare(self.b.module, f"llvm.{name}.f64", DOUBLE, [DOUBLE] * len(xs))
        return self.b.call(fn, list(xs))

    def _stochastic(self, x: ir.Value) -> ir.Value:
        """The double ``x`` rounded to half stochastically (fp_rules.round_half_stochastic)."""
        b = self.b
        bits = b.bitcast(x, I64)
        exponent = b.sub(b.and_(b.lshr(bits, I64(52)), I64(0x7FF)), I64(1023))
        q = b.sub(b.select(b.icmp_signed(">", exponent, I64(-14)), exponent, I64(-14)), I64(10))
        ulp = b.bitcast(b.shl(b.add(q, I64(1023)), I64(52)), DOUBLE)
        inverse = b.bitcast(b.shl(b.sub(I64(1023), q), I64(52)), DOUBLE)
        a = self._f64("fabs", x)
        t = b.fmul(a, inverse)
        n = self._f64("floor", t)
        u = b.fmul(b.uitofp(self._draw(), DOUBLE), ir.Constant(DOUBLE, TWO_POW_M32))
        n = b.select(b.fcmp_ordered("<", u, b.fsub(t, n)), b.fadd(n, ir.Constant(DOUBLE, 1.0)), n)
        magnitude = b.select(b.fcmp_ordered(">=", a, ir.Constant(DOUBLE, 65536.0)),
                             ir.Constant(DOUBLE, float("inf")), b.fmul(n, ulp))
        r = b.select(b.fcmp_unordered("uno", x, x), x, self._f64("copysign", magnitude, x))
        return b.fptrunc(b.fptrunc(r, FLOAT), HALF)  # exact: no compiler-rt helper

    def _rounded(self, nearest: ir.Value, exact: ir.Value) -> ir.Value:
        """``nearest`` (the half rounded to nearest), or ``exact`` (a double) rounded
        stochastically when the word's ESR bit is set."""
        b = self.b
        if not self.features & ESR:
            return nearest
        with b.if_else(self._on(ESR)) as (stochastic, plain):
            with stochastic:
                sr = self._stochastic(exact)
                sr_block = b.block
            with plain:
                plain_block = b.block
        phi = b.phi(HALF)
        phi.add_incoming(sr, sr_block)
        phi.add_incoming(nearest, plain_block)
        return phi

    # exceptions ---------------------------------------------------------------------------------
    def _float(self, v: ir.Value, t: ScalarType) -> ir.Value:
        """A float value as float32 or double (for the tests; half widens exactly)."""
        if not t.is_float:
            return ir.Constant(FLOAT, 0.0)  # an integer is finite and not NaN
        return self.b.fpext(v, FLOAT) if t.bits == 16 else v

    def _fabs(self, x: ir.Value) -> ir.Value:
        fabs = declare(self.b.module, f"llvm.fabs.{'f32' if x.type == FLOAT else 'f64'}", x.type, [x.type])
        return self.b.call(fabs, [x])

    def _finite(self, x: ir.Value) -> ir.Value:
        return self.b.fcmp_ordered("<", self._fabs(x), ir.Constant(x.type, float("inf")))

    def _checked(self, r: ir.Value, half: bool, nan_in: ir.Value, finite_in: ir.Value,
                 by_zero: ir.Value, div0: ir.Value) -> ir.Value:
        """``r`` under the word's NANOO bit, after raising the exceptions the word enables
        (fp_rules.FpRun._checked): ``nan_in`` a NaN operand, ``finite_in`` every operand finite,
        ``by_zero`` a division by zero, ``div0`` one of a finite non-zero value."""
        b = self.b
        if not self.features & CHECKS:
            return r
        wide = b.fpext(r, FLOAT) if half else r
        infinite = b.fcmp_ordered("==", self._fabs(wide), ir.Constant(wide.type, float("inf")))
        overflow = b.and_(b.and_(infinite, finite_in), b.not_(by_zero))
        if half:
            nan = ir.Constant(HALF, float("nan"))
            r = b.select(b.and_(overflow, self._on(NANOO)), nan, r)
        nan_out = b.and_(b.fcmp_unordered("uno", r, r), b.not_(overflow))
        invalid = b.and_(self._on(INV), b.or_(nan_in, nan_out))
        divide = b.and_(self._on(DIV0), div0)
        oflo = b.and_(overflow, self._on(OFLO))
        nan_overflow = b.and_(overflow, b.and_(self._on(NANOO), self._on(INV))) if half \
            else ir.Constant(I1, 0)
        raised = b.or_(b.or_(invalid, divide), b.or_(oflo, nan_overflow))
        otherwise = b.select(oflo, I64(KIND_OVERFLOW), I64(KIND_INVALID))
        kind = b.select(invalid, I64(KIND_INVALID), b.select(divide, I64(KIND_DIV0), otherwise))
        with b.if_then(raised, likely=False):
            self._fail(kind)
        return r

    def _fail(self, kind: ir.Value) -> None:
        b, k = self.b, self.kernel
        for index, v in ((2, kind), (3, I64(-1)), (4, I64(-1)), (5, I64(self.line))):
            b.store(v, b.gep(k.err, [I32(0), I32(index)], source_etype=_ERR))
        b.store(b.load(k.counter, typ=I64), k.cyc_out)
        b.ret(I64(ERR_FP_EXCEPTION))

    # operations ---------------------------------------------------------------------------------
    def binop(self, kind: str, a: ir.Value, c: ir.Value, t: ScalarType, math: MathLib) -> ir.Value:
        r = super().binop(kind, a, c, t, math)
        if not t.is_float or t.bits == 64 or kind not in EXACT_IN_F64 | {"FloorDiv", "Mod", "Pow"}:
            return r
        b = self.b
        half = t.bits == 16
        if half:
            if kind in EXACT_IN_F64:
                x, y = b.fpext(a, DOUBLE), b.fpext(c, DOUBLE)
                exact = {"Add": b.fadd, "Sub": b.fsub, "Mult": b.fmul, "Div": b.fdiv}[kind](x, y)
            else:
                exact = b.fpext(super().binop(kind, b.fpext(a, FLOAT), b.fpext(c, FLOAT), F32, math), DOUBLE)
            r = self._rounded(r, exact)
        x, y = self._float(a, t), self._float(c, t)
        nan_in = b.fcmp_unordered("uno", x, y)
        no = ir.Constant(I1, 0)
        by_zero = b.fcmp_ordered("==", y, ir.Constant(y.type, 0.0)) if kind in DIVISIONS else no
        finite_x = self._finite(x)
        nonzero = b.fcmp_ordered("!=", x, ir.Constant(x.type, 0.0))
        return self._checked(r, half, nan_in, b.and_(finite_x, self._finite(y)), by_zero,
                             b.and_(by_zero, b.and_(finite_x, nonzero)))

    def narrow(self, v: ir.Value, src: ScalarType, dst: ScalarType) -> ir.Value:
        plain = self.convert(v, src, dst)
        if not dst.is_float or dst.bits == 64 or src.kind == "b" or (src.is_float and src.bits <= dst.bits) \
                or (dst.bits == 32 and not src.is_float):  # exact (or no float result): nothing to check
            return plain
        b = self.b
        half = dst.bits == 16
        r = plain
        if half:
            if src.is_float:
                exact = v if src.bits == 64 else b.fpext(v, DOUBLE)
            else:
                exact = (b.sitofp if src.kind == "i" else b.uitofp)(v, DOUBLE)
            r = self._rounded(plain, exact)
        x = self._float(v, src)
        no = ir.Constant(I1, 0)
        return self._checked(r, half, b.fcmp_unordered("uno", x, x), self._finite(x), no, no)

    def store_local(self, v: ir.Value, src: ScalarType, dst: ScalarType, fn: FunctionSource, name: str
                    ) -> ir.Value:
        declared = self._declared.get(id(fn))
        if declared is None:
            declared = self._declared[id(fn)] = frozenset(declared_locals(fn))
        return self.narrow(v, src, dst) if name in declared else self.convert(v, src, dst)
