"""Floating-point control in codelets: stochastic rounding and exceptions, as the interpreter
runs them (the native kernels' :mod:`codelet.fp_ops` emits the same rules in LLVM IR).

A vertex runs with its tile's control word (``csr_functions``: ``INV``, ``DIV0``, ``OFLO``,
``ESR``, ``NANOO``) and its worker's hardware generator (xoroshiro128+, two uint64 in tile
memory: ``poplar_py/random_seed.py``). With a zero word nothing changes. Otherwise:

* Stochastic rounding (``ESR``) applies to every half result of ``+ - * / // % **`` and to
  explicit conversions to half: ``HALF(x)``, stores into half fields, vector elements and locals
  declared ``HALF``. Python ints and floats that take a half operand's type are converted to
  nearest, as numpy does. The exact result ``x`` (a float64: exact for ``+ - *`` of halves; the
  float64 quotient for ``/``; the float32 result for ``// % **``, which compute in float32) rounds
  to the half below or above its magnitude: above when ``r / 2**32 < frac``, where ``frac`` is
  the fraction of a half ulp by which ``|x|`` exceeds the half below and ``r`` the top 32 bits
  of the worker generator's next output (one draw per rounding). ``|x| >= 65536`` (and
  ``x = 65520..65535`` rounded up) is infinity.
* Exceptions, for half and float results (float64, which the IPU computes in software, and
  integers never raise): *invalid* (``INV``) for a NaN operand or a NaN result, *divide by
  zero* (``DIV0``) for a finite non-zero value ``/`` or ``//`` zero, *overflow* (``OFLO``) for
  an infinite result of finite operands (other than by a division by zero). A conversion to
  half (or to float, from float64) raises for a NaN value (invalid) or one too large (overflow).
* ``NANOO``: a half result that overflows is NaN instead of infinity, and an invalid
  operation (raising when ``INV`` is on, unless ``OFLO`` raises first).

Comparisons, ``math`` functions, conversions to integers and short vector types (``half4``...)
are neither rounded stochastically nor checked; C++ codelets ignore the word.
"""

from __future__ import annotations

import ast
import copy
import math
import operator
from typing import Any

import numpy as np

from .type_rules import cast_value

INV, DIV0, OFLO, ESR, NANOO = 1, 2, 4, 8, 16
#: error code of a vertex stopped by a floating-point exception (``field``: the kind)
ERR_FP_EXCEPTION = 4
KIND_INVALID, KIND_DIV0, KIND_OVERFLOW = 0, 1, 2
KINDS = {KIND_INVALID: "invalid operation (inv)", KIND_DIV0: "division by zero (div0)",
         KIND_OVERFLOW: "overflow (oflo)"}
#: per vertex, what the floating-point kernels take: the tile's control word and the address of
#: the worker's generator state (worker 0's for a MultiVertex)
FP_ENV_DTYPE = np.dtype([("ctl", "<u8"), ("rng", "<u8")])
RNG_BYTES = 16  # one worker's generator state
TWO_POW_M32 = 2.0**-32
CHECKS = INV | DIV0 | OFLO | NANOO
_HALF, _FLOAT = np.dtype(np.float16), np.dtype(np.float32)
_MASK = (1 << 64) - 1
_OPS = {"Add": operator.add, "Sub": operator.sub, "Mult": operator.mul, "Div": operator.truediv,
        "FloorDiv": operator.floordiv, "Mod": operator.mod, "Pow": operator.pow}
EXACT_IN_F64 = frozenset({"Add", "Sub", "Mult", "Div"})  # computed in float64 for rounding
DIVISIONS = frozenset({"Div", "FloorDiv"})


class FpTrapError(Exception):
    """A floating-point exception in interpreted codelet code (``kind``: a KIND_*)."""

    def __init__(self, kind: int) -> None:
        super().__init__(KINDS[kind])
        self.kind = kind


def describe(kind: int) -> str:
    return KINDS.get(kind, f"kind {kind}")


def kernel_features(words: np.ndarray) -> int:
    """The control bits a floating-point kernel for vertices with control ``words`` handles: ESR
    (rounding) and CHECKS (all four others), each if some word has one of them; a kernel tests
    only those bits, so one without ESR never computes a stochastic rounding (0: none)."""
    union = int(np.bitwise_or.reduce(words, initial=0))
    return (ESR if union & ESR else 0) | (CHECKS if union & CHECKS else 0)


def next_random(state: np.ndarray) -> int:
    """xoroshiro128+ (24, 16, 37): the next output of the generator ``state`` (two uint64,
    advanced in place)."""
    s0, s1 = int(state[0]), int(state[1])
    t = s0 ^ s1
    state[0] = (((s0 << 24) | (s0 >> 40)) ^ t ^ (t << 16)) & _MASK
    state[1] = ((t << 37) | (t >> 27)) & _MASK
    return (s0 + s1) & _MASK


def round_half_stochastic(x: float, r: int) -> np.float16:
    """``x`` (a float64) rounded to half stochastically with the 32 random bits ``r``."""
    if x != x:
        return np.float16(x)
    a = abs(x)
    if a >= 65536.0:
        magnitude = math.inf
    else:
        exponent = (int(np.float64(a).view(np.uint64)) >> 52) - 1023
        q = max(exponent, -14) - 10  # the half ulp at a is 2**q
        t = math.ldexp(a, -q)
        n = math.floor(t)
        if r * TWO_POW_M32 < t - n:
            n += 1
        magnitude = math.ldexp(float(n), q)
    return np.float16(math.copysign(magnitude, x))


def _nan(x: Any) -> bool:
    return isinstance(x, (float, np.floating)) and x != x


def _finite(x: Any) -> bool:
    return not isinstance(x, (float, np.floating)) or math.isfinite(x)


class FpRun:
    """The control word and generator of the vertex (worker) being interpreted: the rules above
    for its arithmetic (:meth:`binop`) and conversions (:meth:`narrow`)."""

    def __init__(self) -> None:
        self.ctl = 0
        self.rng: np.ndarray | None = None  # two uint64 in tile memory

    def enter(self, ctl: int, rng: np.ndarray | None) -> None:
        self.ctl, self.rng = ctl, rng

    def _draw(self) -> int:
        assert self.rng is not None, "stochastic rounding without generator state"
        return next_random(self.rng) >> 32

    def binop(self, op: str, a: Any, b: Any) -> Any:
        """``a <op> b`` (op an ast operator name) under the control word."""
        r = _OPS[op](a, b)
        if not self.ctl or not isinstance(r, (np.float16, np.float32)):
            return r
        dt = r.dtype
        x, y = cast_value(a, dt), cast_value(b, dt)  # the operands as the kernel holds them
        half = dt == _HALF
        if half and self.ctl & ESR:
            exact = _OPS[op](np.float64(x), np.float64(y)) if op in EXACT_IN_F64 \
                else np.float64(_OPS[op](np.float32(x), np.float32(y)))
            r = round_half_stochastic(float(exact), self._draw())
        by_zero = op in DIVISIONS and y == 0
        overflow = not math.isfinite(r) and not _nan(r) and _finite(x) and _finite(y) and not by_zero
        return self._checked(r, half, _nan(x) or _nan(y), overflow,
                             by_zero and _finite(x) and x != 0)

    def narrow(self, value: Any, dtype: np.dtype) -> np.generic:
        """An explicit conversion of ``value`` to ``dtype`` under the control word."""
        plain = cast_value(value, dtype)
        if not self.ctl or dtype not in (_HALF, _FLOAT) or isinstance(value, (bool, np.bool_)) \
                or (isinstance(value, np.generic) and value.dtype.itemsize <= dtype.itemsize
                    and value.dtype.kind == "f"):
            return plain
        half = dtype == _HALF
        if not half and not isinstance(value, (float, np.floating)):
            return plain  # an integer always fits a float
        r = plain
        if half and self.ctl & ESR:
            r = round_half_stochastic(float(np.float64(value)), self._draw())
        overflow = not math.isfinite(r) and not _nan(r) and _finite(value)
        return self._checked(r, half, _nan(value), overflow, False)

    def _checked(self, r: Any, half: bool, nan_in: bool, overflow: bool, div0: bool) -> Any:
        ctl = self.ctl
        if half and overflow and ctl & NANOO:
            r = np.float16(np.nan)
        if ctl & INV and (nan_in or (_nan(r) and not overflow)):
            raise FpTrapError(KIND_INVALID)
        if ctl & DIV0 and div0:
            raise FpTrapError(KIND_DIV0)
        if overflow:
            if ctl & OFLO:
                raise FpTrapError(KIND_OVERFLOW)
            if half and ctl & NANOO and ctl & INV:
                raise FpTrapError(KIND_INVALID)
        return r


FP_GLOBAL = "__poplar_fp__"  # the name the rewritten code calls the FpRun by


class FpRewrite(ast.NodeTransformer):
    """The interpreter's copy of a function under a control word: ``a + b`` (and the other
    operators above) becomes ``__poplar_fp__.binop("Add", a, b)``, ``t += v`` becomes ``t =
    __poplar_fp__.binop("Add", t, v)`` (a subscript or attribute target is evaluated twice),
    each call placed at its statement's line, as the kernels report it."""

    def __init__(self) -> None:
        self.line: ast.stmt | None = None

    def visit(self, node: ast.AST) -> Any:
        if isinstance(node, ast.stmt):
            outer, self.line = self.line, node
            try:
                return super().visit(node)
            finally:
                self.line = outer
        return super().visit(node)

    def _call(self, op: ast.operator, left: ast.expr, right: ast.expr) -> ast.expr:
        call = ast.Call(ast.Attribute(ast.Name(FP_GLOBAL, ast.Load()), "binop", ast.Load()),
                        [ast.Constant(type(op).__name__), left, right], [])
        return ast.copy_location(call, self.line if self.line is not None else left)

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        self.generic_visit(node)
        if type(node.op).__name__ not in _OPS:
            return node
        return self._call(node.op, node.left, node.right)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.stmt:
        self.generic_visit(node)
        if type(node.op).__name__ not in _OPS:
            return node
        load = copy.deepcopy(node.target)
        for n in ast.walk(load):
            if isinstance(n, (ast.Name, ast.Subscript, ast.Attribute)) and isinstance(n.ctx, ast.Store):
                n.ctx = ast.Load()
        return ast.copy_location(ast.Assign([node.target], self._call(node.op, load, node.value)), node)
