"""Vectorisable float32 ``exp``, ``log`` and ``tanh`` written in LLVM IR (used with fast_math).

libm's ``expf``/``logf``/``tanhf`` are opaque calls, so a loop calling them is not vectorised (LLVM
scalarises ``llvm.exp.v8f32`` into 8 calls). These functions are straight-line IR: range reduction,
a cephes polynomial and exponent-bit arithmetic, with special cases (inf, 0, NaN, negative, subnormal)
chosen by ``select``, so the loop vectoriser widens them. Measured against the correctly rounded
result on 2.4M samples: exp <= 2 ulp, log and tanh <= 1 ulp (tests/codelet/test_codelet_math.py).

Each function is an ``internal alwaysinline`` definition added to the module once. Its instructions
carry no fast-math flags: reassociation would break the hi/lo splits of the range reductions.
"""

from __future__ import annotations

from collections.abc import Callable

import llvmlite.ir as ir

I32 = ir.IntType(32)
FLOAT = ir.FloatType()
FAST_FUNCTIONS = frozenset({"exp", "log", "tanh"})
_LN2_HI, _LN2_LO = 0.693359375, -2.12194440e-4  # Cody-Waite split of ln 2 (cephes)


def declare(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
    """The function ``name`` of ``module`` (an intrinsic or libm symbol), declared on first use."""
    if name in module.globals:
        return module.globals[name]
    return ir.Function(module, ir.FunctionType(ret, args), name=name)


def _f(v: float) -> ir.Constant:
    return ir.Constant(FLOAT, v)


def _horner(b: ir.IRBuilder, x: ir.Value, coefficients: tuple[float, ...]) -> ir.Value:
    p: ir.Value = _f(coefficients[0])
    for c in coefficients[1:]:
        p = b.fadd(b.fmul(p, x), _f(c))
    return p


def fast_call(builder: ir.IRBuilder, name: str, x: ir.Value) -> ir.Value:
    """Emit ``name(x)`` for a float32 x; ``name`` is in FAST_FUNCTIONS."""
    return builder.call(_define(builder.module, name), [x])


def _define(module: ir.Module, name: str) -> ir.Function:
    symbol = f"__poplar_{name}f"
    if symbol in module.globals:
        return module.globals[symbol]
    fn = ir.Function(module, ir.FunctionType(FLOAT, [FLOAT]), name=symbol)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    b = ir.IRBuilder(fn.append_basic_block())
    bodies: dict[str, Callable[[ir.Module, ir.IRBuilder, ir.Value], ir.Value]] = {
        "exp": _exp,
        "log": _log,
        "tanh": _tanh,
    }
    b.ret(bodies[name](module, b, fn.args[0]))
    return fn


def _exp(module: ir.Module, b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Cody-Waite reduction x = n ln2 + r, cephes polynomial for e**r, times 2**n from exponent bits."""
    xc = b.select(b.fcmp_ordered("<", x, _f(-104.0)), _f(-104.0), x)
    xc = b.select(b.fcmp_ordered(">", xc, _f(89.0)), _f(89.0), xc)
    rint = declare(module, "llvm.rint.f32", FLOAT, [FLOAT])
    n = b.call(rint, [b.fmul(xc, _f(1.44269504088896341))])
    r = b.fsub(xc, b.fmul(n, _f(_LN2_HI)))
    r = b.fsub(r, b.fmul(n, _f(_LN2_LO)))
    p = _horner(
        b,
        r,
        (
            1.9875691500e-4,
            1.3981999507e-3,
            8.3334519073e-3,
            4.1665795894e-2,
            1.6666665459e-1,
            5.0000001201e-1,
        ),
    )
    y = b.fadd(b.fadd(b.fmul(p, b.fmul(r, r)), r), _f(1.0))
    ni = b.fptosi(n, I32)  # n is in [-150, 129] here (NaN is handled by the final select)
    n1 = b.ashr(ni, I32(1))
    scale = [b.bitcast(b.shl(b.add(k, I32(127)), I32(23)), FLOAT) for k in (n1, b.sub(ni, n1))]
    result = b.fmul(b.fmul(y, scale[0]), scale[1])  # two factors: 2**n may be subnormal or 2**128
    return b.select(b.fcmp_unordered("uno", x, x), x, result)


def _log(module: ir.Module, b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """x = m 2**e with m in [sqrt(1/2), sqrt(2)); log(x) = log1p(m - 1) (cephes polynomial) + e ln2."""
    subnormal = b.fcmp_ordered("<", x, _f(1.17549435e-38))  # also true for 0 and negatives: fixed below
    xs = b.select(subnormal, b.fmul(x, _f(8388608.0)), x)  # times 2**23: a normal number
    bits = b.bitcast(xs, I32)
    e = b.sub(b.lshr(bits, I32(23)), b.select(subnormal, I32(126 + 23), I32(126)))
    m = b.bitcast(b.or_(b.and_(bits, I32(0x007FFFFF)), I32(0x3F000000)), FLOAT)  # in [0.5, 1)
    low = b.fcmp_ordered("<", m, _f(0.707106781186547524))
    ef = b.sitofp(b.sub(e, b.zext(low, I32)), FLOAT)
    t = b.fsub(b.select(low, b.fadd(m, m), m), _f(1.0))  # exact
    z = b.fmul(t, t)
    p = _horner(
        b,
        t,
        (
            7.0376836292e-2,
            -1.1514610310e-1,
            1.1676998740e-1,
            -1.2420140846e-1,
            1.4249322787e-1,
            -1.6668057665e-1,
            2.0000714765e-1,
            -2.4999993993e-1,
            3.3333331174e-1,
        ),
    )
    y = b.fmul(b.fmul(p, t), z)
    y = b.fadd(y, b.fmul(ef, _f(_LN2_LO)))
    y = b.fsub(y, b.fmul(z, _f(0.5)))
    result = b.fadd(b.fadd(t, y), b.fmul(ef, _f(_LN2_HI)))
    result = b.select(b.fcmp_ordered("==", x, _f(float("inf"))), x, result)
    result = b.select(b.fcmp_ordered("==", x, _f(0.0)), _f(float("-inf")), result)
    # negative or NaN: NaN (x itself when it is already a NaN)
    return b.select(
        b.fcmp_unordered("<", x, _f(0.0)),
        b.select(b.fcmp_unordered("uno", x, x), x, _f(float("nan"))),
        result,
    )


def _tanh(module: ir.Module, b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """cephes, on |x| and then with x's sign (so -0.0 stays -0.0): an odd polynomial below 0.625,
    else 1 - 2 / (e**(2|x|) + 1)."""
    ax = b.call(declare(module, "llvm.fabs.f32", FLOAT, [FLOAT]), [x])
    z = b.fmul(ax, ax)
    p = _horner(
        b, z, (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1, -3.33332819422e-1)
    )
    small = b.fadd(b.fmul(b.fmul(p, z), ax), ax)  # NaN stays NaN
    e2 = b.call(_define(module, "exp"), [b.fadd(ax, ax)])  # inf for large |x|: the result is then 1
    large = b.fsub(_f(1.0), b.fdiv(_f(2.0), b.fadd(e2, _f(1.0))))
    copysign = declare(module, "llvm.copysign.f32", FLOAT, [FLOAT, FLOAT])
    return b.call(copysign, [b.select(b.fcmp_ordered(">=", ax, _f(0.625)), large, small), x])
