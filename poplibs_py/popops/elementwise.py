# ruff: noqa: N816  (module-level functions keep PopLibs' camelCase names: addInPlace ...)
"""popops element-wise operations (PopLibs' ElementWise.hpp), each one ``map`` of a one-node expression.

Every operation has three forms, all running on the tiles that hold the output:

* ``op(graph, a[, b[, c]], prog, debugName="", options=None)`` returns a new tensor, laid out
  like the best-spread input (``createOutputForElementWiseOp``);
* ``opInPlace(graph, a[, b[, c]], prog)`` writes the result into ``a`` (parallel-writeable, and of
  the result's type);
* ``opWithOutput(graph, a[, b[, c]], out, prog)`` writes into ``out``.

The debug name and the options (PopLibs' map options, checked) follow ``prog``, positionally as
in C++ or by keyword.

Operands broadcast numpy-style. A Python number operand becomes a 0-D constant on tile 0 (of the
type of the other operands) broadcast to the shape. Tensor operands must have the same element
type, else ``PoplibsError``; comparisons and logical ops return BOOL. ``prog`` may be a
``ComputeSet`` instead of a ``Sequence`` (see ``expr_map``). Semantics are PopLibs' codelets':
integer ``div`` truncates toward zero, integer ``rem`` has the dividend's sign, float ``rem`` is
``fmod``, ``round`` rounds half away from zero, ``nearbyint`` half to even, ``shiftRight`` is
logical and ``shiftRightSignExtend`` arithmetic, ``signum`` is ``(0 < x) - (x < 0)``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from poplar_py import BOOL, ComputeSet, Graph, Tensor, Type
from poplar_py import program as prog_
from poplar_py.debug import debug_name

from ..poputil import PoplibsArgumentError, PoplibsError, checkOptions, tensorArgument, trailingArguments
from . import expr as pe
from .expr_map import (
    MAP_OPTIONS,
    ProgOrCs,
    createOutputForElementWiseOp,
    map,  # noqa: A004
    mapInPlace,
    mapWithOutput,
)

Operand = Tensor | bool | int | float

_U, _B, _T = pe.UnaryOpType, pe.BinaryOpType, pe.TernaryOpType
_OpType = pe.UnaryOpType | pe.BinaryOpType | pe.TernaryOpType


def _tensors(graph: Graph, op: _OpType, operands: list[Operand]) -> list[Tensor]:
    """The operands as tensors: numbers become 0-D constants on tile 0 of the operands' type
    (BOOL for Select's condition)."""
    values = operands[:2] if op is _T.SELECT else operands
    typed = [t.elementType() for t in values if isinstance(t, Tensor)]
    if not typed:
        raise PoplibsError(f"{op.name}: at least one operand must be a tensor")
    out = []
    for k, a in enumerate(operands):
        if isinstance(a, Tensor):
            out.append(tensorArgument(graph, a, f"{op.name}: operand {k}"))
            continue
        if not isinstance(a, (bool, int, float)):
            raise PoplibsError(f"{op.name}: operand {k} must be a tensor or a number, got {a!r}")
        type_: Type = BOOL if op is _T.SELECT and k == 2 else typed[0]
        const = graph.addConstant(type_, [], a, f"{op.name.lower()}.const")
        graph.setTileMapping(const, 0)
        out.append(const)
    return out


def _forms(op: _OpType, name: str, arity: int, what: str, in_place: bool = True) -> tuple[Callable, ...]:
    """The op, opInPlace and opWithOutput functions of one element-wise operation."""
    node = {1: pe.UnaryOp, 2: pe.BinaryOp, 3: pe.TernaryOp}[arity]
    e = node(op, *(pe.PlaceHolder(i + 1) for i in range(arity)))

    def op_(graph: Graph, *args: Operand | ProgOrCs | str, debugName: str = "",
            options: dict | None = None) -> Tensor:
        operands, prog, debugName, options = _split(name, arity, args, debugName, options)
        return map(graph, e, _tensors(graph, op, operands), prog, debugName or name, options)

    def op_in_place(graph: Graph, *args: Operand | ProgOrCs | str, debugName: str = "",
                    options: dict | None = None) -> None:
        operands, prog, debugName, options = _split(name + "InPlace", arity, args, debugName, options)
        if not isinstance(operands[0], Tensor):
            raise PoplibsError(f"{name}InPlace: the first operand must be a tensor")
        mapInPlace(graph, e, _tensors(graph, op, operands), prog, debugName or name, options)

    def op_with_output(graph: Graph, *args: Operand | ProgOrCs | str, debugName: str = "",
                       options: dict | None = None) -> None:
        operands, prog, debugName, options = _split(name + "WithOutput", arity + 1, args, debugName, options)
        *operands, out = operands
        mapWithOutput(graph, e, _tensors(graph, op, operands), out, prog, debugName or name, options)

    fns = [(op_, name, "prog", f"A new tensor ``{what}``."),
           (op_with_output, name + "WithOutput", "out prog", f"Write ``{what}`` into ``out``.")]
    if in_place:
        fns.insert(1, (op_in_place, name + "InPlace", "prog", f"Write ``{what}`` into ``a``."))
    for fn, fn_name, tail, doc in fns:
        params = ["graph", *"abc"[:arity], *tail.split()]
        fn.__name__ = fn.__qualname__ = fn_name
        fn.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter(p, inspect.Parameter.POSITIONAL_ONLY) for p in params]
            + [inspect.Parameter("debugName", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=""),
               inspect.Parameter("options", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)])
        fn.__doc__ = (f"``{fn_name}({', '.join(params)}, debugName='', options=None)``: {doc} Computed "
                      "element-wise (numpy broadcasting) on the tiles that hold the result.")
    return tuple(fn for fn, *_ in fns)


def _split(name: str, count: int, args: tuple, debugName: str,
           options: dict | None) -> tuple[list, ProgOrCs, str, dict | None]:
    """(operands, prog, debugName, options) from ``*args``: ``count`` operands, prog, then PopLibs'
    trailing debugContext and options, positionally or by keyword."""
    progs = [i for i, a in enumerate(args) if isinstance(a, (prog_.Sequence, ComputeSet))]
    if len(args) < count + 1 or (progs and progs[0] != count):
        raise PoplibsArgumentError(f"{name} takes {count} operand(s) and prog after graph (then optionally "
                                   f"debugContext and options), got {len(args)} argument(s)")
    debugName, options = trailingArguments(name, args[count + 1:], {"debugContext": debugName,
                                                                     "options": options})
    checkOptions(options, MAP_OPTIONS, name)
    return list(args[:count]), args[count], debug_name(debugName, f"{name}: debugContext"), options


# ---- unary ------------------------------------------------------------------------------------
neg, negInPlace, negWithOutput = _forms(_U.NEGATE, "neg", 1, "-a")
abs, absInPlace, absWithOutput = _forms(_U.ABSOLUTE, "abs", 1, "|a|")  # noqa: A001
exp, expInPlace, expWithOutput = _forms(_U.EXPONENT, "exp", 1, "exp(a)")
exp2, exp2InPlace, exp2WithOutput = _forms(_U.EXPONENT2, "exp2", 1, "2**a")
expm1, expm1InPlace, expm1WithOutput = _forms(_U.EXPONENT_MINUS_ONE, "expm1", 1, "exp(a) - 1")
log, logInPlace, logWithOutput = _forms(_U.LOGARITHM, "log", 1, "log(a)")
log1p, log1pInPlace, log1pWithOutput = _forms(_U.LOGARITHM_ONE_PLUS, "log1p", 1, "log(1 + a)")
sqrt, sqrtInPlace, sqrtWithOutput = _forms(_U.SQRT, "sqrt", 1, "sqrt(a)")
rsqrt, rsqrtInPlace, rsqrtWithOutput = _forms(_U.RSQRT, "rsqrt", 1, "1 / sqrt(a)")
cbrt, cbrtInPlace, cbrtWithOutput = _forms(_U.CBRT, "cbrt", 1, "cbrt(a)")
square, squareInPlace, squareWithOutput = _forms(_U.SQUARE, "square", 1, "a * a")
inv, invInPlace, invWithOutput = _forms(_U.INVERSE, "inv", 1, "1 / a")
sin, sinInPlace, sinWithOutput = _forms(_U.SIN, "sin", 1, "sin(a)")
cos, cosInPlace, cosWithOutput = _forms(_U.COS, "cos", 1, "cos(a)")
tan, tanInPlace, tanWithOutput = _forms(_U.TAN, "tan", 1, "tan(a)")
asin, asinInPlace, asinWithOutput = _forms(_U.ASIN, "asin", 1, "asin(a)")
tanh, tanhInPlace, tanhWithOutput = _forms(_U.TANH, "tanh", 1, "tanh(a)")
sigmoid, sigmoidInPlace, sigmoidWithOutput = _forms(_U.SIGMOID, "sigmoid", 1, "1 / (1 + exp(-a))")
erf, erfInPlace, erfWithOutput = _forms(_U.ERF, "erf", 1, "erf(a)")
geluErf, geluErfInPlace, geluErfWithOutput = _forms(_U.GELU_ERF, "geluErf", 1, "a(1 + erf(a/sqrt2))/2")
ceil, ceilInPlace, ceilWithOutput = _forms(_U.CEIL, "ceil", 1, "ceil(a)")
floor, floorInPlace, floorWithOutput = _forms(_U.FLOOR, "floor", 1, "floor(a)")
round, roundInPlace, roundWithOutput = _forms(_U.ROUND, "round", 1, "a rounded half away from 0")  # noqa: A001
nearbyint, nearbyintInPlace, nearbyintWithOutput = _forms(_U.NEARBY_INT, "nearbyint", 1, "a rounded to even")
trunc, truncInPlace, truncWithOutput = _forms(_U.TRUNC, "trunc", 1, "trunc(a)")
signum, signumInPlace, signumWithOutput = _forms(_U.SIGNUM, "signum", 1, "(0 < a) - (a < 0)")
logicalNot, logicalNotInPlace, logicalNotWithOutput = _forms(_U.LOGICAL_NOT, "logicalNot", 1, "!a")
bitwiseNot, bitwiseNotInPlace, bitwiseNotWithOutput = _forms(_U.BITWISE_NOT, "bitwiseNot", 1, "~a")
popcount, popcountInPlace, popcountWithOutput = _forms(_U.POPCOUNT, "popcount", 1, "number of set bits of a")
isFinite, isFiniteWithOutput = _forms(_U.IS_FINITE, "isFinite", 1, "a is finite (BOOL)", in_place=False)

# ---- binary -----------------------------------------------------------------------------------
add, addInPlace, addWithOutput = _forms(_B.ADD, "add", 2, "a + b")
sub, subInPlace, subWithOutput = _forms(_B.SUBTRACT, "sub", 2, "a - b")
mul, mulInPlace, mulWithOutput = _forms(_B.MULTIPLY, "mul", 2, "a * b")
div, divInPlace, divWithOutput = _forms(_B.DIVIDE, "div", 2, "a / b (integers: truncated toward zero)")
rem, remInPlace, remWithOutput = _forms(_B.REMAINDER, "rem", 2, "a % b (C sign rules; floats: fmod)")
pow, powInPlace, powWithOutput = _forms(_B.POWER, "pow", 2, "a ** b")  # noqa: A001
max, maxInPlace, maxWithOutput = _forms(_B.MAXIMUM, "max", 2, "max(a, b)")  # noqa: A001
min, minInPlace, minWithOutput = _forms(_B.MINIMUM, "min", 2, "min(a, b)")  # noqa: A001
atan2, atan2InPlace, atan2WithOutput = _forms(_B.ATAN2, "atan2", 2, "atan2(a, b)")
eq, eqInPlace, eqWithOutput = _forms(_B.EQUAL, "eq", 2, "a == b (BOOL)")
neq, neqInPlace, neqWithOutput = _forms(_B.NOT_EQUAL, "neq", 2, "a != b (BOOL)")
gt, gtInPlace, gtWithOutput = _forms(_B.GREATER_THAN, "gt", 2, "a > b (BOOL)")
gteq, gteqInPlace, gteqWithOutput = _forms(_B.GREATER_THAN_EQUAL, "gteq", 2, "a >= b (BOOL)")
lt, ltInPlace, ltWithOutput = _forms(_B.LESS_THAN, "lt", 2, "a < b (BOOL)")
lteq, lteqInPlace, lteqWithOutput = _forms(_B.LESS_THAN_EQUAL, "lteq", 2, "a <= b (BOOL)")
logicalAnd, logicalAndInPlace, logicalAndWithOutput = _forms(_B.LOGICAL_AND, "logicalAnd", 2, "a && b")
logicalOr, logicalOrInPlace, logicalOrWithOutput = _forms(_B.LOGICAL_OR, "logicalOr", 2, "a || b")
bitwiseAnd, bitwiseAndInPlace, bitwiseAndWithOutput = _forms(_B.BITWISE_AND, "bitwiseAnd", 2, "a & b")
bitwiseOr, bitwiseOrInPlace, bitwiseOrWithOutput = _forms(_B.BITWISE_OR, "bitwiseOr", 2, "a | b")
bitwiseXor, bitwiseXorInPlace, bitwiseXorWithOutput = _forms(_B.BITWISE_XOR, "bitwiseXor", 2, "a ^ b")
bitwiseXnor, bitwiseXnorInPlace, bitwiseXnorWithOutput = _forms(_B.BITWISE_XNOR, "bitwiseXnor", 2, "~(a ^ b)")
shiftLeft, shiftLeftInPlace, shiftLeftWithOutput = _forms(_B.SHIFT_LEFT, "shiftLeft", 2, "a << b")
shiftRight, shiftRightInPlace, shiftRightWithOutput = _forms(
    _B.SHIFT_RIGHT, "shiftRight", 2, "a >> b (logical)")
shiftRightSignExtend, shiftRightSignExtendInPlace, shiftRightSignExtendWithOutput = _forms(
    _B.SHIFT_RIGHT_SIGN_EXTEND, "shiftRightSignExtend", 2, "a >> b (arithmetic)")
varianceToInvStdDev, varianceToInvStdDevInPlace, varianceToInvStdDevWithOutput = _forms(
    _B.VARIANCE_TO_INV_STD_DEV, "varianceToInvStdDev", 2, "1 / sqrt(a + b), b = epsilon")
invStdDevToVariance, invStdDevToVarianceInPlace, invStdDevToVarianceWithOutput = _forms(
    _B.INV_STD_DEV_TO_VARIANCE, "invStdDevToVariance", 2, "1 / a**2 - b, b = epsilon")

# ---- ternary ----------------------------------------------------------------------------------
select, selectInPlace, selectWithOutput = _forms(_T.SELECT, "select", 3, "c ? a : b (c BOOL)")
clamp, clampInPlace, clampWithOutput = _forms(_T.CLAMP, "clamp", 3, "min(max(a, b), c)")

__all__ = ["createOutputForElementWiseOp", "map", "mapInPlace", "mapWithOutput"] + [
    name for name, value in list(globals().items())
    if callable(value) and getattr(value, "__module__", "") == __name__ and not name.startswith("_")]
