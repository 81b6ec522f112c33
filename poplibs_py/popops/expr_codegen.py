"""Turn a popops expression into the Python source of one codelet, and load it as a vertex class.

``map`` fuses a whole expression into a single generated ``MultiVertex``, one per tile: each
input is a field (``in1 .. in20``; a ``VectorList`` whose row ``w`` is worker ``w``'s part, or a
scalar field when the input is one element broadcast to every output element), the result is
``out`` (``InOut`` for ``mapInPlace``, where ``_1`` reads ``out`` itself), and worker ``w`` runs
one loop over row ``w`` whose body is the expression as Python code. The source is registered in
``linecache`` under a pseudo-filename so that the codelet compiler reads it through ``inspect``
like any codelet file; the vertex is named ``popops::map::<hash>`` with a hash of the source, so
the kernel disk cache hits across runs.

Generated code follows the codelet language (numpy semantics, weak Python literals). Where PopLibs
defines C semantics (integer ``/`` truncates toward zero, ``%`` takes the dividend's sign, ``>>`` on
signed integers is logical for SHIFT_RIGHT) small helper functions implement them. ``Cast`` and
the math functions yield weak Python numbers (``float(x)``, ``int(x)``, ``math.exp(x)``), which take
the type of the operand they meet and are converted when stored: the interpreter mode cannot
convert a value to a fixed type mid-expression, so this is the form both modes agree on.
"""

from __future__ import annotations

import hashlib
import linecache
import math
import sys
import types
from collections.abc import Callable

import numpy as np

from poplar_py import BOOL, Type, Vertex

from .expr import (
    BinaryOpType,
    Cast,
    Const,
    Expr,
    PlaceHolder,
    TernaryOpType,
    UnaryOp,
    UnaryOpType,
    operandType,
    resultType,
)

__all__ = ["mapVertexClass"]

_U, _B, _T = UnaryOpType, BinaryOpType, TernaryOpType

#: the helper functions generated code may call, each emitted only when used; {B} is the bit width
#: of the operand type. They are specialised per argument types by the codelet compiler.
_HELPER_SOURCE = """
def _square(x):
    return x * x


def _fmax(a, b):
    return a if a != a or a > b else b


def _fmin(a, b):
    return a if a != a or a < b else b


def _signum(x):
    return 1 if x > 0 else (-1 if x < 0 else 0)


def _cbrt(x):
    return math.copysign(math.pow(math.fabs(x), 1.0 / 3.0), x)


def _gelu(x):
    return 0.5 * x * (1.0 + math.erf(x * 0.7071067811865476))


def _isd_to_var(x, eps):
    return 1.0 / (x * x) - eps


def _floor(x):
    # math.floor gives an integer: only values not yet integral in float32 (|x| < 2**23) go
    # through it; copysign keeps -0.0 and the sign of a zero result (ceil(-0.5) is -0.0)
    if math.fabs(x) < 8388608.0:
        return math.copysign(math.floor(x), x)
    return x


def _ceil(x):
    if math.fabs(x) < 8388608.0:
        return math.copysign(math.ceil(x), x)
    return x


def _trunc(x):
    if math.fabs(x) < 8388608.0:
        return math.copysign(math.trunc(x), x)
    return x


def _round(x):
    # half away from zero (std::round)
    if math.fabs(x) < 8388608.0:
        return math.copysign(math.floor(math.fabs(x) + 0.5), x)
    return x


def _nearbyint(x):
    # half to even (std::nearbyint in the default rounding mode)
    if math.fabs(x) < 8388608.0:
        r = math.floor(x)
        d = x - r
        if d > 0.5 or (d == 0.5 and r % 2 != 0):
            r = r + 1
        return math.copysign(r, x)
    return x


def _idiv(a, b):
    # C division truncates toward zero; numpy's // floors
    q = a // b
    if q < 0 and q * b != a:
        q = q + 1
    return q


def _irem(a, b):
    # C remainder has the sign of the dividend; numpy's % has the divisor's
    r = a % b
    if r != 0 and (a < 0) != (b < 0):
        r = r - b
    return r


def _ipow(x, n):
    # exact integer power; a negative exponent gives what C's (int)pow(x, n) gives
    if n < 0:
        if x == 1:
            return x
        if x == -1:
            return x if n % 2 != 0 else -x
        return x - x
    r = x - x + 1
    while n > 0:
        if n % 2 != 0:
            r = r * x
        n = n // 2
        if n > 0:
            x = x * x
    return r


def _shr{B}(x, n):
    # logical right shift of a signed value: shift, then clear the copies of the sign bit
    if n <= 0:
        return x
    if n >= {B}:
        return x - x
    return (x >> n) & ~(-1 << ({B} - n))


def _popcount{B}(x):
    c = x - x
    for k in range({B}):
        c = c + ((x >> k) & 1)
    return c


def _clz{B}(x):
    c = x - x
    for k in range({B} - 1, -1, -1):
        if (x >> k) & 1 != 0:
            return c
        c = c + 1
    return c
"""
_HELPERS = {block[4:block.index("(")]: block + "\n" for block in _HELPER_SOURCE.strip().split("\n\n\n")}

_MATH = {_U.EXPONENT: "exp", _U.EXPONENT2: "exp2", _U.EXPONENT_MINUS_ONE: "expm1", _U.LOGARITHM: "log",
         _U.LOGARITHM_ONE_PLUS: "log1p", _U.SQRT: "sqrt", _U.SIN: "sin", _U.COS: "cos", _U.TAN: "tan",
         _U.TANH: "tanh", _U.ASIN: "asin", _U.ERF: "erf", _U.IS_FINITE: "isfinite", _U.IS_INF: "isinf",
         _U.IS_NAN: "isnan", _B.ATAN2: "atan2"}
_FLOAT_HELPERS = {_U.CEIL: "_ceil", _U.FLOOR: "_floor", _U.TRUNC: "_trunc", _U.ROUND: "_round",
                  _U.NEARBY_INT: "_nearbyint", _U.CBRT: "_cbrt", _U.GELU_ERF: "_gelu", _U.SQUARE: "_square",
                  _U.SIGNUM: "_signum", _B.INV_STD_DEV_TO_VARIANCE: "_isd_to_var"}
_INFIX = {_B.ADD: "+", _B.SUBTRACT: "-", _B.MULTIPLY: "*", _B.EQUAL: "==", _B.NOT_EQUAL: "!=",
          _B.LESS_THAN: "<", _B.LESS_THAN_EQUAL: "<=", _B.GREATER_THAN: ">", _B.GREATER_THAN_EQUAL: ">=",
          _B.LOGICAL_AND: "and", _B.LOGICAL_OR: "or", _B.SHIFT_LEFT: "<<", _B.SHIFT_RIGHT_SIGN_EXTEND: ">>"}


class _Generator:
    """Builds the code of one expression, collecting the helper functions it calls."""

    def __init__(self, types: list[Type]) -> None:
        self.types = types
        self.helpers: dict[str, str] = {}

    def call(self, helper: str, t: Type, *args: str) -> str:
        name = helper.replace("{B}", str(8 * t.size))
        self.helpers[name] = _HELPERS[helper].replace("{B}", str(8 * t.size))
        return f"{name}({', '.join(args)})"

    def code(self, e: Expr, hint: Type | None) -> str:
        """Python code for the value of ``e``; ``hint`` is the type a constant leaf takes."""
        if isinstance(e, PlaceHolder):
            return f"x{e.index}"
        if isinstance(e, Const):
            return _literal(e.value, e.type or hint)
        if isinstance(e, Cast):
            return self.cast(e)
        assert isinstance(e, UnaryOp)
        t = operandType(e, self.types, hint)
        assert t is not None  # inferType has checked the whole tree
        hints = [t, t, BOOL if e.op is _T.SELECT else t]
        args = [self.code(c, h) for c, h in zip(e.children, hints)]
        return _OPS[type(e.op)](self, e.op, t, *args)

    def cast(self, e: Cast) -> str:
        src = resultType(e.children[0], self.types, e.type)
        a = self.code(e.children[0], e.type)
        if src == e.type:
            return a
        if e.type == BOOL:
            return f"({a} != 0)"
        if src == BOOL:
            a = f"(1 if {a} else 0)"
        # A local annotated with the target type converts strongly (rounds, wraps, saturates)
        # in both codelet modes; a bare float()/int() would stay a weak Python number.
        name = "_cast_" + str(e.type).replace(" ", "_")
        self.helpers[name] = f"def {name}(x):\n    r: {e.type!r} = x\n    return r\n"
        return f"{name}({a})"

    def unary(self, op: UnaryOpType, t: Type, a: str) -> str:
        if op in _MATH:
            return f"math.{_MATH[op]}({a})"
        if op in _FLOAT_HELPERS:
            return self.call(_FLOAT_HELPERS[op], t, a)
        simple: dict[UnaryOpType, str] = {
            _U.ABSOLUTE: a if t.is_integral and not t.signed else f"abs({a})",
            _U.NEGATE: f"(-{a})", _U.BITWISE_NOT: f"(~{a})", _U.LOGICAL_NOT: f"(not {a})",
            _U.RELU: f"max({a}, 0)", _U.INVERSE: f"(1.0 / {a})", _U.RSQRT: f"(1.0 / math.sqrt({a}))",
            _U.SIGMOID: f"(1.0 / (1.0 + math.exp(-{a})))",
        }
        if op in simple:
            return simple[op]
        return self.call("_popcount{B}" if op is _U.POPCOUNT else "_clz{B}", t, a)

    def binary(self, op: BinaryOpType, t: Type, a: str, b: str) -> str:
        if op in _MATH:
            return f"math.{_MATH[op]}({a}, {b})"
        if op in _FLOAT_HELPERS:
            return self.call(_FLOAT_HELPERS[op], t, a, b)
        if t.is_float and op in (_B.MAXIMUM, _B.MINIMUM):  # NaN in either gives NaN, as numpy's
            return self.call("_fmax" if op is _B.MAXIMUM else "_fmin", t, a, b)
        if t == BOOL and op in (_B.BITWISE_AND, _B.BITWISE_OR, _B.BITWISE_XOR):
            op = {_B.BITWISE_AND: _B.LOGICAL_AND, _B.BITWISE_OR: _B.LOGICAL_OR}.get(op, _B.NOT_EQUAL)
        if op in _INFIX:
            return f"({a} {_INFIX[op]} {b})"
        signed_int = t.is_integral and t.signed
        if op is _B.DIVIDE and not t.is_float:
            return self.call("_idiv", t, a, b) if signed_int else f"({a} // {b})"
        if op is _B.REMAINDER:
            if t.is_float:
                return f"math.fmod({a}, {b})"
            return self.call("_irem", t, a, b) if signed_int else f"({a} % {b})"
        if op is _B.POWER:
            return f"math.pow({a}, {b})" if t.is_float else self.call("_ipow", t, a, b)
        if op is _B.SHIFT_RIGHT:
            return self.call("_shr{B}", t, a, b) if signed_int else f"({a} >> {b})"
        return {_B.DIVIDE: f"({a} / {b})", _B.MAXIMUM: f"max({a}, {b})", _B.MINIMUM: f"min({a}, {b})",
                _B.BITWISE_AND: f"({a} & {b})", _B.BITWISE_OR: f"({a} | {b})", _B.BITWISE_XOR: f"({a} ^ {b})",
                _B.BITWISE_XNOR: f"(~({a} ^ {b}))",
                _B.VARIANCE_TO_INV_STD_DEV: f"(1.0 / math.sqrt({a} + {b}))"}[op]

    def ternary(self, op: TernaryOpType, t: Type, a: str, b: str, c: str) -> str:
        return f"({a} if {c} else {b})" if op is _T.SELECT else f"min(max({a}, {b}), {c})"


_OPS: dict[type, Callable[..., str]] = {UnaryOpType: _Generator.unary, BinaryOpType: _Generator.binary,
                                        TernaryOpType: _Generator.ternary}


def _literal(value: bool | int | float, t: Type | None) -> str:
    """A constant converted to type ``t`` on the host, as Python source (a weak literal)."""
    assert t is not None
    if t == BOOL:
        return repr(bool(value))
    if t.is_integral:
        n = int(value)  # floats truncate, as a C++ constant converted to the type would
        return f"({int(np.array(n & (2 ** (8 * t.size) - 1), dtype=np.uint64).astype(t.dtype))})"
    v = float(t.dtype.type(value))
    if math.isnan(v):
        return "math.nan"
    return ("-" if v < 0 else "") + "math.inf" if math.isinf(v) else f"({v!r})"


_classes: dict[str, type[Vertex]] = {}


def mapVertexClass(e: Expr, types: list[Type], scalars: frozenset[int], inPlace: bool, outType: Type,
                   kind: str = "") -> type[Vertex]:
    """The generated vertex class computing ``e`` element by element (built once per source text).

    ``types[i-1]`` is the type of placeholder ``_i``; indices in ``scalars`` are single elements
    broadcast to every output element (scalar fields); with ``inPlace`` ``_1`` is ``out`` itself.
    ``kind`` (the PopLibs vertex its cycles are estimated as) is part of the source, so vertices
    costed differently are different vertex types.
    """
    gen = _Generator(types)
    body = gen.code(e, None)
    used = sorted({n.index for n in _walk(e) if isinstance(n, PlaceHolder)} - ({1} if inPlace else set()))
    fields, loads, per_element = [], ["            out = self.out[r]"], []
    for i in used:
        elem = repr(types[i - 1])
        if i in scalars:
            fields.append(f"    in{i}: Input[{elem}]")
            loads.insert(0, f"            x{i} = self.in{i}")
        else:
            fields.append(f"    in{i}: Input[VectorList[{elem}]]")
            loads.append(f"            in{i} = self.in{i}[r]")
            per_element.append(f"                x{i} = in{i}[i]")
    fields.append(f"    out: {'InOut' if inPlace else 'Output'}[VectorList[{outType!r}]]")
    if inPlace:
        per_element.insert(0, "                x1 = out[i]")
    source = "\n".join([
        f'"""popops::map::@HASH@: {e!r} with inputs ({", ".join(map(str, types))}) -> {outType}'
        f'{f" (as {kind})" if kind else ""}."""',
        "import math  # noqa: F401", "", "import poplar_py as poplar",
        "from poplar_py import InOut, Input, MultiVertex, Output, VectorList  # noqa: F401", "",
        *(f"\n{h}" for _, h in sorted(gen.helpers.items())), "",
        "class MapVertex(MultiVertex):", '    vertexName = "popops::map::@HASH@"', *fields, "",
        "    def compute(self, workerId):",
        "        for r in range(workerId, len(self.out), self.numWorkers()):", *loads,
        "            for i in range(len(out)):", *per_element,
        f"                out[i] = {body}", "        return True", ""])
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    cls = _classes.get(digest)
    if cls is None:
        cls = _classes[digest] = _load(source.replace("@HASH@", digest), digest)
    return cls


def _load(source: str, digest: str) -> type[Vertex]:
    """Execute generated source as a module whose source ``inspect`` can find (via linecache)."""
    filename = f"<popops::map::{digest}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    module = types.ModuleType(f"popops_map_{digest}")
    module.__file__ = filename
    sys.modules[module.__name__] = module
    exec(compile(source, filename, "exec"), module.__dict__)
    return module.MapVertex


def _walk(e: Expr):
    yield e
    for c in e.children:
        yield from _walk(c)
