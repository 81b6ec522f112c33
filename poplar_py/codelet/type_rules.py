"""Codelet types: scalar and vector types, numpy promotion, conversions, ``math`` result types.

The typing pass (:mod:`~poplar_py.codelet.inference`) applies these rules to every expression.

Semantics (the compiled kernels and the interpreter agree on these):

* Values are numpy scalars. Field elements have their field's type: FLOAT f32, HALF f16, INT i32,
  UNSIGNED_INT u32, SHORT/USHORT 16-bit, CHAR/UCHAR 8-bit, BOOL (i8 in memory, i1 in registers),
  LONGLONG 64-bit.
* Python ints and floats are *weak* (NEP 50): a literal, ``len()``, a ``range`` index, ``int()``,
  ``float()`` and every ``math.*`` result is a Python int (stored as i64) or float (stored as f64)
  that takes the type of the other operand: ``x * 0.5`` with x f32 is f32, ``i + 1`` with i i32 is
  i32. Binary operators otherwise follow numpy 2 promotion *exactly*: the result type of an operator
  is found by applying it to numpy sample values (int32+uint32 -> int64, float32+int32 -> float64,
  int/int -> float64, half+float -> float).
* A local variable has one type: the join of every value assigned to it, where join(a, b) is the
  type of ``a + b`` (so ``s = 0.0; s += f32`` makes ``s`` f32, as numpy would after the first
  addition). ``x: float = ...`` and ``x: int = ...`` declare a weak Python float/int; an
  annotation with a poplar type (``x: HALF = 0``) fixes the type and every assignment converts.
  Bools never join with numbers, and arithmetic on bools is rejected (numpy and Python disagree).
* Integers wrap on overflow. ``//`` floors and ``%`` takes the sign of the divisor; ``x // 0`` and
  ``x % 0`` are 0 and ``MIN // -1`` wraps, as in numpy. Float ``//`` and ``%`` follow numpy's
  ``divmod`` (== Python's), and float division by zero gives inf/nan. Shifts by a negative amount
  or by at least the bit width give 0 (``<<``, unsigned ``>>``) or the sign fill (signed ``>>``),
  as numpy does. Integer ``**`` needs a non-negative constant exponent; float ``**`` is C ``pow``.
* Conversions: to a float type rounds to nearest; float -> int (``int()``, ``math.floor``, stores to
  integer fields) truncates, saturates at the type's range and maps NaN to 0; int -> int wraps;
  anything -> bool is ``!= 0`` (NaN is True).
* Comparisons are IEEE (``!=`` is true for NaN); ``min``/``max`` are Python's: the first argument
  wins unless a later one compares strictly less/greater, so NaN position matters as in Python.
* ``math.*`` follows C++'s overloads (and numba): when *every* argument is a float32 or half value,
  the single-precision libm function runs (``expf``, ``powf``...; half is widened to float32) and
  the result is a float32 (strong, not weak); otherwise, with any Python float or int, float64 or
  integer argument, the double function runs and the result is a Python float. ``floor``/``ceil``/
  ``trunc`` always return a Python int (as in Python 3; the saturating float -> int conversion
  below), ``isnan``/``isinf``/``isfinite`` a bool. Results are IEEE instead of Python's exceptions
  (``math.log(0.0)`` is -inf, ``math.log(x, 1.0)`` is +-inf or NaN); ``math.log(x, base)`` is
  ``log(x) / log(base)`` in the precision above. With ``fast_math``, float32 ``exp``, ``log`` and
  ``tanh`` are vectorisable polynomials (<= 2 ulp, see codelet/fastmath.py) and the libm calls may
  be approximated by LLVM (``afn``).
* Vector indices must be in ``[0, len)``: negative indices are out of bounds (no wrap-around).
* ``assert cond`` (or ``assert cond, "message"``) fails the vertex like ``return False`` when
  ``cond`` is false, with its own error code; asserts are always checked (the ``checked`` option
  is about bounds checks only).

Known differences in interpreter mode (plain CPython on numpy scalars): Python ints there are
unbounded and raise on ``// 0`` (Python floats on ``/ 0.0``); a Python int out of range for a numpy
type raises there but wraps here; ``a if c else b``, ``and``/``or`` and ``min``/``max`` of mixed
types have the joined static type here, while Python keeps the type of the chosen operand; and
a local keeps one static type while Python may hold a Python float before its first float32 value;
under ``python -O`` CPython drops ``assert`` statements, so the interpreter does not check them.
"""

from __future__ import annotations

import ast
import functools
import operator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..types import Type

#: the error record a kernel fills for the first failing vertex
ERR_DTYPE = np.dtype(
    [
        ("vertex", "<i8"),
        ("code", "<i8"),
        ("field", "<i8"),
        ("index", "<i8"),
        ("size", "<i8"),
        ("line", "<i8"),
    ],
    align=True,
)
ERR_RETURNED_FALSE = 1  # compute returned False (field = index = size = -1)
ERR_OUT_OF_BOUNDS = 2  # field = index in cls.fields, index, size = the vector's length, line
ERR_ASSERTION = 3  # an assert statement failed (field = index = size = -1)
ERR_RANGE_STEP = 6  # range() with a zero step (field = -1, index = size = 0, line; 4, 5: C++ kernels')
ERR_CYCLE_BUDGET = 7  # past the cycle budget (field = -1, index = cycles counted, size = the budget, line)
ERR_INTERRUPTED = 8  # stopped by Ctrl-C (as ERR_CYCLE_BUDGET)
#: one row of the table a VECTOR_LIST field points at
VECTOR_LIST_ENTRY_DTYPE = np.dtype([("ptr", "<u8"), ("size", "<i8")], align=True)
#: set in a list entry's ``ptr``: the row is in an exchange buffer, found at the buffers' offset
#: (replicas that run alone share one set of buffers), not at the replica's
BUFFER_ENTRY = 1 << 63


@dataclass(frozen=True)
class ScalarType:
    """A number in a register: kind 'f' float, 'i' signed, 'u' unsigned, 'b' bool; weak = Python int/float.

    ``value`` is the number itself when it is known when the codelet is compiled (literals,
    template constants and what is computed from them); types compare equal whatever it is.
    """

    kind: str
    bits: int
    weak: bool = False
    value: Any = field(default=None, compare=False)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(np.bool_) if self.kind == "b" else np.dtype(f"{self.kind}{self.bits // 8}")

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        return self.kind in "iu"

    def __str__(self) -> str:
        if self.weak:
            return "Python int" if self.kind == "i" else "Python float"
        return str(self.dtype)


@dataclass(frozen=True)
class VectorType:
    """A view of a vector (or, with is_list, of a list of vectors) field."""

    elem: ScalarType
    writable: bool
    field: int  # index of the field in cls.fields (or, after them, of a local array) in error records
    is_list: bool = False
    size: int | None = None  # a local array's length, known when compiling

    def row(self) -> VectorType:
        return VectorType(self.elem, self.writable, self.field)

    def __str__(self) -> str:
        if self.size is not None:
            return f"local array of {self.size} {self.elem}"
        return f"{'list of vectors' if self.is_list else 'vector'} of {self.elem}"


@dataclass(frozen=True)
class ShortVecType:
    """A short vector value (``float2``, ``half4``: :mod:`poplar_py.short_vectors`) in a register."""

    name: str
    elem: ScalarType
    width: int

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class PolicyType:
    """An operation policy (a :class:`~poplar_py.templates.Policy` class) held by a name."""

    cls: type

    def __str__(self) -> str:
        return f"policy {self.cls.__name__}"


class NoneValue:
    """The type of a call to a helper function that returns nothing."""

    def __str__(self) -> str:
        return "None"


NONE = NoneValue()
CType = ScalarType | VectorType | ShortVecType | PolicyType | NoneValue
BOOL = ScalarType("b", 1)
PY_INT = ScalarType("i", 64, weak=True)
PY_FLOAT = ScalarType("f", 64, weak=True)
F32, F64 = ScalarType("f", 32), ScalarType("f", 64)


def known(t: ScalarType, value: Any) -> ScalarType:
    """``t`` with its value known at compile time."""
    return replace(t, value=value)


def forget(t: CType) -> CType:
    """``t`` without a known value."""
    return replace(t, value=None) if isinstance(t, ScalarType) and t.value is not None else t


def scalar_of(t: Type | np.dtype) -> ScalarType:
    """The register type of a poplar element type or numpy dtype."""
    dt = t.dtype if isinstance(t, Type) else np.dtype(t)
    return BOOL if dt.kind == "b" else ScalarType(dt.kind, dt.itemsize * 8)


def type_of_value(v: Any) -> ScalarType:
    """The type of a Python or numpy scalar value."""
    if isinstance(v, (bool, np.bool_)):
        return BOOL
    if type(v) is int:
        return PY_INT
    if type(v) is float:
        return PY_FLOAT
    return scalar_of(np.asarray(v).dtype)


def constant_type(v: Any) -> ScalarType:
    """The type of a constant, with its value."""
    return known(type_of_value(v), v)


def fold(op: type, a: ScalarType, b: ScalarType) -> Any:
    """The value of ``a <op> b`` when both are known Python ints (or bools for ``& | ^``), else
    None: the 64-bit wrapping arithmetic of weak ints, with ``x // 0 == x % 0 == 0``."""
    if a.value is None or b.value is None or not (a.weak and b.weak and a.kind == b.kind == "i"):
        return None
    x, y = int(a.value), int(b.value)
    if op in (ast.FloorDiv, ast.Mod) and y == 0:
        return 0
    if op is ast.Pow and not 0 <= y <= 64:
        return None
    if op in (ast.LShift, ast.RShift) and not 0 <= y < 64:
        return None
    if op is ast.Div:
        return None
    return wrap64(BINOPS[op](x, y))


def wrap64(n: int) -> int:
    n &= (1 << 64) - 1
    return n - (1 << 64) if n >> 63 else n


def _sample(t: ScalarType) -> Any:
    if t.weak:
        return 1 if t.kind == "i" else 1.0
    return t.dtype.type(1)


BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
}
OP_SYMBOLS = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
}
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)


@functools.cache
def binop_type(op: type, a: ScalarType, b: ScalarType) -> ScalarType:
    """Result type of ``a <op> b`` by numpy 2 rules. Raises TypeError for unsupported operands."""
    if op in _ARITHMETIC and BOOL in (a, b):
        raise TypeError(
            f"arithmetic on bool values is not supported; convert with int() ({a} {OP_SYMBOLS[op]} {b})"
        )
    try:
        with np.errstate(all="ignore"):
            return type_of_value(BINOPS[op](_sample(a), _sample(b)))
    except TypeError:
        raise TypeError(f"operator '{OP_SYMBOLS[op]}' is not supported for {a} and {b}") from None


def join(a: CType, b: CType) -> CType:
    """The single type of a variable that holds values of types a and b (known only when both
    are the same known value). Raises TypeError."""
    if a == b:
        if isinstance(a, ScalarType) and isinstance(b, ScalarType) and a.value != b.value:
            return forget(a)
        return a
    if isinstance(a, ScalarType) and isinstance(b, ScalarType) and (a.kind == "b") == (b.kind == "b"):
        return type_of_value(_sample(a) + _sample(b))
    raise TypeError(f"a value cannot be both {a} and {b}")


def compare_type(a: ScalarType, b: ScalarType) -> ScalarType:
    """The type both operands of a comparison are converted to."""
    if a == b:
        return a
    with np.errstate(all="ignore"):
        return type_of_value(_sample(a) + _sample(b))


def math_precision(types: list[ScalarType]) -> ScalarType:
    """The type a ``math`` function computes in: float32 when every argument is a float32 or half
    value (C++'s float overloads, numba's float32 signatures), else float64 (as C++ treats an int)."""
    return F32 if all(t.is_float and not t.weak and t.bits <= 32 for t in types) else F64


def math_result(name: str, types: list[ScalarType]) -> ScalarType:
    """The type of ``math.<name>(*args)`` for arguments of ``types``."""
    if name in ("floor", "ceil", "trunc"):
        return PY_INT
    if name in ("isnan", "isinf", "isfinite"):
        return BOOL
    return F32 if math_precision(types) == F32 else PY_FLOAT


def cast_value(v: Any, dtype: np.dtype) -> np.generic:
    """Convert a scalar to ``dtype`` by the codelet rules: round to nearest for floats, truncate and
    saturate (NaN -> 0) for float -> int, wrap for int -> int, ``!= 0`` for bool."""
    if dtype.kind == "b":
        return np.bool_(v != 0)
    if dtype.kind == "f":
        with np.errstate(over="ignore"):  # too large for the type: inf, as IEEE rounding says
            return dtype.type(v)
    info = np.iinfo(dtype)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        n = 0 if f != f else info.max if f >= info.max + 1 else info.min if f <= info.min - 1 else int(f)
    else:
        n = int(v) & (2**info.bits - 1)
        if info.min < 0 and n > info.max:
            n -= 2**info.bits
    return dtype.type(n)
