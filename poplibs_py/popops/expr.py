"""popops expressions (PopLibs' ``popops::expr``): trees that ``popops.map`` fuses into one codelet.

Leaves are placeholders ``_1 .. _20`` (1-based positions in the tensor list given to ``map``),
constants ``Const(x)`` (which take the type of their sibling operand) and ``Cast(e, type)``.
Nodes are ``UnaryOp``, ``BinaryOp`` and ``TernaryOp`` with an op-type enum, or the named classes
(``Exp(_1)``, ``Add(_1, _2)``, ``Select(a, b, cond)`` ...). Python operators build nodes:
``_1 * _2 + Exp(_1)``; ``and``/``or``/``not`` cannot be overloaded, so use ``And``, ``Or`` and
``Not``. Comparison operators build ``Equal``/``Lt``/... nodes, so an expression has no truth
value; ``deepEquals`` compares two trees.

Type rules (PopLibs' ElementWiseInternal): a placeholder has its tensor's type, a constant the type
of the other operand, both operands of a node must have the same type (else ``PoplibsError``),
relational and logical nodes give BOOL, ``Select``'s condition must be BOOL, ``Cast`` fixes the
type. ``inferType(e, types)`` applies them.
"""

from __future__ import annotations

import copy
import enum
from typing import IO, ClassVar, TypeVar, Union

import numpy as np

from poplar_py import BOOL, FLOAT, HALF, Type
from poplar_py.types import ALL_TYPES, asType

from ..poputil import PoplibsArgumentError, PoplibsError

__all__ = [
    "Abs", "Add", "And", "Any", "Asin", "Atan2", "BinaryOp", "BinaryOpType", "BitwiseAnd", "BitwiseNot",
    "BitwiseOr", "BitwiseXnor", "BitwiseXor", "Cast", "Cbrt", "Ceil", "Clamp", "Const", "ConstHalf",
    "Cos", "CountLeadingZeros", "Divide", "Equal", "Erf", "Exp", "Exp2", "Expm1", "Expr", "Floor",
    "GeluErf", "Gt", "Gte", "Inv", "InvStdDevToVariance", "IsFinite", "IsInf", "IsNaN", "Log", "Log1p",
    "Lt", "Lte", "Max", "Min", "Mul", "NearbyInt", "Neg", "Not", "NotEqual", "Or", "PlaceHolder",
    "Popcount", "Pow", "Relu", "Rem", "Round", "Rsqrt", "Select", "Shl", "Shr", "ShrSE", "Sigmoid",
    "Signum", "Sin", "Sqrt", "Square", "Sub", "Tan", "Tanh", "TernaryOp", "TernaryOpType", "Trunc",
    "UnaryOp", "UnaryOpType", "VarianceToInvStdDev", "allowedTypes", "inferType", "operandType",
    "resultType", "deepEquals",
    *[f"_{i}" for i in range(1, 21)],
]


class UnaryOpType(enum.Enum):
    ABSOLUTE = enum.auto()
    ASIN = enum.auto()
    BITWISE_NOT = enum.auto()
    CBRT = enum.auto()
    CEIL = enum.auto()
    COS = enum.auto()
    COUNT_LEADING_ZEROS = enum.auto()
    ERF = enum.auto()
    EXPONENT = enum.auto()
    EXPONENT_MINUS_ONE = enum.auto()
    EXPONENT2 = enum.auto()
    FLOOR = enum.auto()
    GELU_ERF = enum.auto()
    INVERSE = enum.auto()
    IS_FINITE = enum.auto()
    IS_INF = enum.auto()
    IS_NAN = enum.auto()
    LOGARITHM = enum.auto()
    LOGARITHM_ONE_PLUS = enum.auto()
    LOGICAL_NOT = enum.auto()
    NEGATE = enum.auto()
    NEARBY_INT = enum.auto()
    POPCOUNT = enum.auto()
    RELU = enum.auto()
    SIGNUM = enum.auto()
    SIN = enum.auto()
    TAN = enum.auto()
    TANH = enum.auto()
    ROUND = enum.auto()
    SQRT = enum.auto()
    SQUARE = enum.auto()
    SIGMOID = enum.auto()
    RSQRT = enum.auto()
    TRUNC = enum.auto()


class BinaryOpType(enum.Enum):
    ADD = enum.auto()
    ATAN2 = enum.auto()
    BITWISE_AND = enum.auto()
    BITWISE_OR = enum.auto()
    BITWISE_XOR = enum.auto()
    BITWISE_XNOR = enum.auto()
    DIVIDE = enum.auto()
    EQUAL = enum.auto()
    GREATER_THAN_EQUAL = enum.auto()
    GREATER_THAN = enum.auto()
    INV_STD_DEV_TO_VARIANCE = enum.auto()
    LESS_THAN_EQUAL = enum.auto()
    LOGICAL_AND = enum.auto()
    LOGICAL_OR = enum.auto()
    LESS_THAN = enum.auto()
    MAXIMUM = enum.auto()
    MINIMUM = enum.auto()
    MULTIPLY = enum.auto()
    NOT_EQUAL = enum.auto()
    POWER = enum.auto()
    REMAINDER = enum.auto()
    SHIFT_LEFT = enum.auto()
    SHIFT_RIGHT = enum.auto()
    SHIFT_RIGHT_SIGN_EXTEND = enum.auto()
    SUBTRACT = enum.auto()
    VARIANCE_TO_INV_STD_DEV = enum.auto()


class TernaryOpType(enum.Enum):
    CLAMP = enum.auto()
    SELECT = enum.auto()


# ---- which operand types each op accepts ------------------------------------------------------
FLOATS = frozenset({FLOAT, HALF})
INTS = frozenset(t for t in ALL_TYPES if t.is_integral and t != BOOL)
SIGNED_INTS = frozenset(t for t in INTS if t.signed)
NUMBERS = FLOATS | INTS
_U, _B = UnaryOpType, BinaryOpType
_UNARY_TYPES: dict[UnaryOpType, frozenset[Type]] = {
    **dict.fromkeys((_U.ABSOLUTE, _U.NEGATE, _U.SQUARE, _U.SIGNUM, _U.RELU), NUMBERS),
    **dict.fromkeys((_U.BITWISE_NOT, _U.POPCOUNT, _U.COUNT_LEADING_ZEROS), INTS),
    _U.LOGICAL_NOT: frozenset({BOOL}),
}
_BINARY_TYPES: dict[BinaryOpType, frozenset[Type]] = {
    **dict.fromkeys((_B.ADD, _B.SUBTRACT, _B.MULTIPLY, _B.DIVIDE, _B.REMAINDER, _B.POWER, _B.MAXIMUM,
                     _B.MINIMUM), NUMBERS),
    **dict.fromkeys((_B.EQUAL, _B.NOT_EQUAL, _B.LESS_THAN, _B.LESS_THAN_EQUAL, _B.GREATER_THAN,
                     _B.GREATER_THAN_EQUAL), NUMBERS | {BOOL}),
    **dict.fromkeys((_B.LOGICAL_AND, _B.LOGICAL_OR), frozenset({BOOL})),
    **dict.fromkeys((_B.BITWISE_AND, _B.BITWISE_OR, _B.BITWISE_XOR), INTS | {BOOL}),
    **dict.fromkeys((_B.BITWISE_XNOR, _B.SHIFT_LEFT, _B.SHIFT_RIGHT), INTS),
    _B.SHIFT_RIGHT_SIGN_EXTEND: SIGNED_INTS,
}
#: relational and logical ops: their result is BOOL whatever the operand type
BOOL_RESULT = frozenset({_U.IS_FINITE, _U.IS_INF, _U.IS_NAN, _U.LOGICAL_NOT, _B.EQUAL, _B.NOT_EQUAL,
                         _B.LESS_THAN, _B.LESS_THAN_EQUAL, _B.GREATER_THAN, _B.GREATER_THAN_EQUAL,
                         _B.LOGICAL_AND, _B.LOGICAL_OR})


def allowedTypes(op: UnaryOpType | BinaryOpType | TernaryOpType) -> frozenset[Type]:
    """The operand types ``op`` accepts (float math by default, as in PopLibs' codelets)."""
    if isinstance(op, TernaryOpType):
        return NUMBERS | {BOOL}
    table: dict = _UNARY_TYPES if isinstance(op, UnaryOpType) else _BINARY_TYPES
    return table.get(op, FLOATS)


# ---- the tree ---------------------------------------------------------------------------------
ExprLike = Union["Expr", bool, int, float, np.generic]


def _short_name(t: Type) -> str:
    """PopLibs' short spelling of a type in expression names (``uint``, ``ushort``, ``long_long``)."""
    return {"unsigned int": "uint", "unsigned short": "ushort"}.get(t.name, t.name).replace(" ", "_")


def deepEquals(a: Expr, b: Expr) -> bool:
    """Whether two expressions are the same tree (PopLibs' free ``deepEquals``)."""
    return as_expr(a).deepEquals(b)


def as_expr(x: ExprLike) -> Expr:
    """The expression for ``x``: itself, or a Const for a Python or numpy scalar."""
    if isinstance(x, Expr):
        return x
    if isinstance(x, (bool, int, float, np.generic)):
        return Const(x)
    raise PoplibsArgumentError(f"cannot use {type(x).__name__} {x!r:.40} in a popops expression")


class Expr:
    """Base class of expression nodes; Python operators build new nodes."""

    children: tuple[Expr, ...] = ()

    def deepEquals(self, other: object) -> bool:
        """Whether ``other`` is the same tree (same node kinds, ops, constants and types)."""
        # Exp(_1) equals UnaryOp(UnaryOpType.EXPONENT, _1): keys name the node kind, not the class
        return (isinstance(other, Expr) and self._key() == other._key()
                and all(a.deepEquals(b) for a, b in zip(self.children, other.children)))

    def _key(self) -> tuple:
        return ()

    # ---- PopLibs' introspection: isA, getAs, clone, name, print --------------------------------
    @classmethod
    def _kind(cls) -> type[Expr]:
        """The class PopLibs identifies nodes by (``Exp`` is a ``UnaryOp``, ``Add`` a ``BinaryOp``)."""
        return cls

    def isA(self, cls: type[Expr]) -> bool:
        """Whether this node is a ``cls`` as PopLibs' ``isA<T>()`` tells: by node kind (Const,
        Cast, PlaceHolder, UnaryOp, BinaryOp, TernaryOp; ``Exp(_1).isA(UnaryOp)``)."""
        if not (isinstance(cls, type) and issubclass(cls, Expr)):
            raise PoplibsArgumentError(f"isA: expected an expression class, got {cls!r:.40}")
        return self._kind() is cls._kind()

    def getAs(self, cls: type[Expr]) -> Expr | None:
        """This node if it :meth:`isA` ``cls``, else None (PopLibs' ``getAs<T>()``)."""
        return self if self.isA(cls) else None

    def clone(self) -> Expr:
        """A copy of the whole tree."""
        return copy.deepcopy(self)

    def name(self, inputs: list) -> str:
        """PopLibs' name of the expression for the tensors ``inputs`` (their element types fill
        the placeholders): the name PopLibs gives the codelet it generates for it."""
        raise NotImplementedError

    def print(self, out: IO[str] | None = None, indent: int = 0, prettyPrint: bool = True) -> str:
        """Write the tree as PopLibs prints it (``Add(\n  PlaceHolder(1),\n  Const(2))``) to
        ``out`` if given; returns the text."""
        text = self._text(indent, prettyPrint)
        if out is not None:
            out.write(text)
        return text

    def _text(self, indent: int, pretty: bool) -> str:
        raise NotImplementedError

    def _node(self, indent: int, pretty: bool, opener: str, children: tuple[Expr, ...]) -> str:
        """``opener`` (``Add(``) then each child's text (on its own line, indented by 2 more, when
        pretty), then ``)``."""
        lead, newline = (" " * indent, "\n") if pretty else ("", "")
        inner = f",{newline}".join(c._text(indent + 2, pretty) for c in children)
        return f"{lead}{opener}{newline}{inner})"

    def __bool__(self) -> bool:
        raise TypeError("a popops expression has no truth value; use And/Or/Not to combine conditions")

    __hash__ = object.__hash__  # == builds an Equal node, so identity hashing is kept explicitly

    def __add__(self, o: ExprLike) -> Expr: return Add(self, o)
    def __radd__(self, o: ExprLike) -> Expr: return Add(o, self)
    def __sub__(self, o: ExprLike) -> Expr: return Sub(self, o)
    def __rsub__(self, o: ExprLike) -> Expr: return Sub(o, self)
    def __mul__(self, o: ExprLike) -> Expr: return Mul(self, o)
    def __rmul__(self, o: ExprLike) -> Expr: return Mul(o, self)
    def __truediv__(self, o: ExprLike) -> Expr: return Divide(self, o)
    def __rtruediv__(self, o: ExprLike) -> Expr: return Divide(o, self)
    def __mod__(self, o: ExprLike) -> Expr: return Rem(self, o)
    def __rmod__(self, o: ExprLike) -> Expr: return Rem(o, self)
    def __pow__(self, o: ExprLike) -> Expr: return Pow(self, o)
    def __rpow__(self, o: ExprLike) -> Expr: return Pow(o, self)
    def __and__(self, o: ExprLike) -> Expr: return BitwiseAnd(self, o)
    def __rand__(self, o: ExprLike) -> Expr: return BitwiseAnd(o, self)
    def __or__(self, o: ExprLike) -> Expr: return BitwiseOr(self, o)
    def __ror__(self, o: ExprLike) -> Expr: return BitwiseOr(o, self)
    def __xor__(self, o: ExprLike) -> Expr: return BitwiseXor(self, o)
    def __rxor__(self, o: ExprLike) -> Expr: return BitwiseXor(o, self)
    def __lshift__(self, o: ExprLike) -> Expr: return Shl(self, o)
    def __rlshift__(self, o: ExprLike) -> Expr: return Shl(o, self)
    def __rshift__(self, o: ExprLike) -> Expr: return Shr(self, o)
    def __rrshift__(self, o: ExprLike) -> Expr: return Shr(o, self)
    def __eq__(self, o: ExprLike) -> Expr: return Equal(self, o)  # type: ignore[override]
    def __ne__(self, o: ExprLike) -> Expr: return NotEqual(self, o)  # type: ignore[override]
    def __lt__(self, o: ExprLike) -> Expr: return Lt(self, o)
    def __le__(self, o: ExprLike) -> Expr: return Lte(self, o)
    def __gt__(self, o: ExprLike) -> Expr: return Gt(self, o)
    def __ge__(self, o: ExprLike) -> Expr: return Gte(self, o)
    def __neg__(self) -> Expr: return Neg(self)
    def __invert__(self) -> Expr: return BitwiseNot(self)


Any = Expr  # PopLibs' expr::Any: anything usable as an expression


class PlaceHolder(Expr):
    """``_i``: the i-th tensor (1-based) of the list given to ``map``."""

    def __init__(self, index: int) -> None:
        if not index >= 1:
            raise PoplibsError(f"placeholder index {index} must be at least 1")
        self.index = index

    def _key(self) -> tuple:
        return ("placeholder", self.index)

    def getIndex(self) -> int:
        return self.index

    def name(self, inputs: list) -> str:
        if not 1 <= self.index <= len(inputs):
            raise PoplibsArgumentError(f"name: placeholder _{self.index} has no tensor among the "
                                       f"{len(inputs)} inputs")
        return f"{_short_name(inputs[self.index - 1].elementType())}_{self.index}_"

    def _text(self, indent: int, pretty: bool) -> str:
        return f"{' ' * indent if pretty else ''}PlaceHolder({self.index})"

    def __repr__(self) -> str:
        return f"_{self.index}"


class Const(Expr):
    """A constant; without an explicit type it takes the type of its sibling operand."""

    def __init__(self, value: bool | int | float | np.generic, type: Type | object | None = None) -> None:  # noqa: A002
        if not isinstance(value, (bool, int, float, np.generic)):
            raise PoplibsError(f"Const needs a number, got {value!r}")
        self.value = value.item() if isinstance(value, np.generic) else value
        self.type = asType(type) if type is not None else None

    def _key(self) -> tuple:
        v = self.value
        return ("const", type(v), "nan" if v != v else v, self.type)

    def getType(self) -> Type:
        """The constant's type: the one given, else that of its Python value (FLOAT, INT, BOOL)."""
        return self.type if self.type is not None else asType(type(self.value))

    def getData(self) -> np.ndarray:
        """The constant's value as one element of its type."""
        return np.array([self.value], dtype=self.getType().dtype)

    def getDataAsDouble(self) -> float:
        return float(self.getData()[0])

    def getDataForUnsignedIntegral(self) -> int:
        if self.getType().is_float:
            raise PoplibsError(f"getDataForUnsignedIntegral: Const({self.value!r}) is {self.getType()}")
        return int(self.getData()[0]) % 2**64

    def printValue(self) -> str:
        """The value as PopLibs prints it: ``2``, ``true``-less ``1`` for bools, ``0.5f`` for floats."""
        t = self.getType()
        if not t.is_float:
            return str(int(self.value))
        text = f"{float(np.float32(self.value)):.9g}"
        return text if t == HALF else text + ("f" if "." in text or "e" in text else ".f")

    def name(self, inputs: list) -> str:
        return self.printValue().replace(".", "z").replace("-", "m").replace("+", "p")

    def _text(self, indent: int, pretty: bool) -> str:
        return f"{' ' * indent if pretty else ''}Const({self.printValue()})"

    def __repr__(self) -> str:
        return f"Const({self.value!r}{'' if self.type is None else f', {self.type!r}'})"


def ConstHalf(value: float) -> Const:
    """A HALF constant (PopLibs' ``ConstHalf`` / ``1.0_half``)."""
    return Const(value, HALF)


class Cast(Expr):
    """``e`` converted to ``type`` (float -> integer truncates, anything -> bool is ``!= 0``)."""

    def __init__(self, e: ExprLike, type: Type | object) -> None:  # noqa: A002
        self.children = (as_expr(e),)
        self.type = asType(type)

    def _key(self) -> tuple:
        return ("cast", self.type)

    def getLHS(self) -> Expr:
        return self.children[0]

    def getRHSType(self) -> Type:
        return self.type

    def name(self, inputs: list) -> str:
        return f"Cast_{self.children[0].name(inputs)}_{_short_name(self.type)}"

    def _text(self, indent: int, pretty: bool) -> str:
        return self._node(indent, pretty, f"Cast({self.type},", self.children)

    def __repr__(self) -> str:
        return f"Cast({self.children[0]!r}, {self.type!r})"


class UnaryOp(Expr):
    """``UnaryOp(op, a)``; the named subclasses (``Exp``, ``Neg`` ...) fix ``op``: ``Exp(a)``."""

    OP: ClassVar[enum.Enum | None] = None
    _ENUM: ClassVar[type[enum.Enum]] = UnaryOpType
    _ARITY: ClassVar[int] = 1

    def __init__(self, *args: enum.Enum | ExprLike) -> None:
        op, rest = (self.OP, args) if self.OP is not None else (args[0], args[1:])
        if not isinstance(op, self._ENUM) or len(rest) != self._ARITY:
            need = f"a {self._ENUM.__name__} and " if self.OP is None else ""
            raise TypeError(f"{type(self).__name__} takes {need}{self._ARITY} operand(s), got {args!r}")
        self.op: UnaryOpType | BinaryOpType | TernaryOpType = op  # type: ignore[assignment]
        self.children = tuple(as_expr(a) for a in rest)  # type: ignore[arg-type]

    def _key(self) -> tuple:
        return ("op", self.op)

    @classmethod
    def _kind(cls) -> type[Expr]:
        return {UnaryOpType: UnaryOp, BinaryOpType: BinaryOp, TernaryOpType: TernaryOp}[cls._ENUM]

    def getOpType(self) -> UnaryOpType | BinaryOpType | TernaryOpType:
        return self.op

    def getArg(self) -> Expr:
        return self.children[0]

    def getLHS(self) -> Expr:
        return self.children[0]

    def getRHS(self) -> Expr:
        return self.children[1]

    def getArg0(self) -> Expr:
        return self.children[0]

    def getArg1(self) -> Expr:
        return self.children[1]

    def getArg2(self) -> Expr:
        return self.children[2]

    def name(self, inputs: list) -> str:
        return f"{self.op.name}u_{'_'.join(c.name(inputs) for c in self.children)}_d"

    def _text(self, indent: int, pretty: bool) -> str:
        return self._node(indent, pretty, f"{_NAMES.get(self.op, self.op.name)}(", self.children)

    def __repr__(self) -> str:
        return f"{_NAMES.get(self.op, self.op.name)}({', '.join(map(repr, self.children))})"


class BinaryOp(UnaryOp):
    """``BinaryOp(op, a, b)``; the named subclasses (``Add``, ``Lt`` ...) fix ``op``."""

    _ENUM = BinaryOpType
    _ARITY = 2


class TernaryOp(UnaryOp):
    """``TernaryOp(op, a, b, c)``: ``Select(a, b, cond)`` (cond ? a : b) or ``Clamp(x, lo, hi)``."""

    _ENUM = TernaryOpType
    _ARITY = 3


_NAMES: dict[UnaryOpType | BinaryOpType | TernaryOpType, str] = {}
_T = TypeVar("_T", bound=UnaryOp)


def _named(base: type[_T], name: str, op: UnaryOpType | BinaryOpType | TernaryOpType) -> type[_T]:
    """A subclass of ``base`` with ``op`` fixed: ``Exp(_1)`` is ``UnaryOp(UnaryOpType.EXPONENT, _1)``."""
    _NAMES[op] = name
    return type(name, (base,), {"OP": op, "__module__": __name__, "__qualname__": name,
                                "__doc__": f"``{name}(...)``: a {op.name} node."})


# ---- named nodes (PopLibs' expr::Exp, expr::Add ...) ------------------------------------------
Abs = _named(UnaryOp, "Abs", UnaryOpType.ABSOLUTE)
Asin = _named(UnaryOp, "Asin", UnaryOpType.ASIN)
BitwiseNot = _named(UnaryOp, "BitwiseNot", UnaryOpType.BITWISE_NOT)
Cbrt = _named(UnaryOp, "Cbrt", UnaryOpType.CBRT)
Ceil = _named(UnaryOp, "Ceil", UnaryOpType.CEIL)
Cos = _named(UnaryOp, "Cos", UnaryOpType.COS)
Erf = _named(UnaryOp, "Erf", UnaryOpType.ERF)
Exp = _named(UnaryOp, "Exp", UnaryOpType.EXPONENT)
Expm1 = _named(UnaryOp, "Expm1", UnaryOpType.EXPONENT_MINUS_ONE)
Exp2 = _named(UnaryOp, "Exp2", UnaryOpType.EXPONENT2)
Floor = _named(UnaryOp, "Floor", UnaryOpType.FLOOR)
GeluErf = _named(UnaryOp, "GeluErf", UnaryOpType.GELU_ERF)
Inv = _named(UnaryOp, "Inv", UnaryOpType.INVERSE)
IsFinite = _named(UnaryOp, "IsFinite", UnaryOpType.IS_FINITE)
IsInf = _named(UnaryOp, "IsInf", UnaryOpType.IS_INF)
IsNaN = _named(UnaryOp, "IsNaN", UnaryOpType.IS_NAN)
Log = _named(UnaryOp, "Log", UnaryOpType.LOGARITHM)
Log1p = _named(UnaryOp, "Log1p", UnaryOpType.LOGARITHM_ONE_PLUS)
Not = _named(UnaryOp, "Not", UnaryOpType.LOGICAL_NOT)
Neg = _named(UnaryOp, "Neg", UnaryOpType.NEGATE)
NearbyInt = _named(UnaryOp, "NearbyInt", UnaryOpType.NEARBY_INT)
Signum = _named(UnaryOp, "Signum", UnaryOpType.SIGNUM)
Sin = _named(UnaryOp, "Sin", UnaryOpType.SIN)
Tan = _named(UnaryOp, "Tan", UnaryOpType.TAN)
Tanh = _named(UnaryOp, "Tanh", UnaryOpType.TANH)
Round = _named(UnaryOp, "Round", UnaryOpType.ROUND)
Sqrt = _named(UnaryOp, "Sqrt", UnaryOpType.SQRT)
Square = _named(UnaryOp, "Square", UnaryOpType.SQUARE)
Sigmoid = _named(UnaryOp, "Sigmoid", UnaryOpType.SIGMOID)
Rsqrt = _named(UnaryOp, "Rsqrt", UnaryOpType.RSQRT)
Trunc = _named(UnaryOp, "Trunc", UnaryOpType.TRUNC)
Popcount = _named(UnaryOp, "Popcount", UnaryOpType.POPCOUNT)
CountLeadingZeros = _named(UnaryOp, "CountLeadingZeros", UnaryOpType.COUNT_LEADING_ZEROS)
Relu = _named(UnaryOp, "Relu", UnaryOpType.RELU)
Add = _named(BinaryOp, "Add", BinaryOpType.ADD)
Atan2 = _named(BinaryOp, "Atan2", BinaryOpType.ATAN2)
BitwiseAnd = _named(BinaryOp, "BitwiseAnd", BinaryOpType.BITWISE_AND)
BitwiseOr = _named(BinaryOp, "BitwiseOr", BinaryOpType.BITWISE_OR)
BitwiseXor = _named(BinaryOp, "BitwiseXor", BinaryOpType.BITWISE_XOR)
BitwiseXnor = _named(BinaryOp, "BitwiseXnor", BinaryOpType.BITWISE_XNOR)
Divide = _named(BinaryOp, "Divide", BinaryOpType.DIVIDE)
Equal = _named(BinaryOp, "Equal", BinaryOpType.EQUAL)
Gte = _named(BinaryOp, "Gte", BinaryOpType.GREATER_THAN_EQUAL)
Gt = _named(BinaryOp, "Gt", BinaryOpType.GREATER_THAN)
InvStdDevToVariance = _named(BinaryOp, "InvStdDevToVariance", BinaryOpType.INV_STD_DEV_TO_VARIANCE)
Lte = _named(BinaryOp, "Lte", BinaryOpType.LESS_THAN_EQUAL)
And = _named(BinaryOp, "And", BinaryOpType.LOGICAL_AND)
Or = _named(BinaryOp, "Or", BinaryOpType.LOGICAL_OR)
Lt = _named(BinaryOp, "Lt", BinaryOpType.LESS_THAN)
Max = _named(BinaryOp, "Max", BinaryOpType.MAXIMUM)
Min = _named(BinaryOp, "Min", BinaryOpType.MINIMUM)
Mul = _named(BinaryOp, "Mul", BinaryOpType.MULTIPLY)
NotEqual = _named(BinaryOp, "NotEqual", BinaryOpType.NOT_EQUAL)
Pow = _named(BinaryOp, "Pow", BinaryOpType.POWER)
Rem = _named(BinaryOp, "Rem", BinaryOpType.REMAINDER)
Shl = _named(BinaryOp, "Shl", BinaryOpType.SHIFT_LEFT)
Shr = _named(BinaryOp, "Shr", BinaryOpType.SHIFT_RIGHT)
ShrSE = _named(BinaryOp, "ShrSE", BinaryOpType.SHIFT_RIGHT_SIGN_EXTEND)
Sub = _named(BinaryOp, "Sub", BinaryOpType.SUBTRACT)
VarianceToInvStdDev = _named(BinaryOp, "VarianceToInvStdDev", BinaryOpType.VARIANCE_TO_INV_STD_DEV)
Select = _named(TernaryOp, "Select", TernaryOpType.SELECT)  # Select(a, b, cond): cond ? a : b
Clamp = _named(TernaryOp, "Clamp", TernaryOpType.CLAMP)  # Clamp(x, lo, hi): min(max(x, lo), hi)

_1, _2, _3, _4, _5, _6, _7, _8, _9, _10 = (PlaceHolder(i) for i in range(1, 11))
_11, _12, _13, _14, _15, _16, _17, _18, _19, _20 = (PlaceHolder(i) for i in range(11, 21))


# ---- type inference ---------------------------------------------------------------------------
def inferType(e: ExprLike, types: list[Type]) -> Type:
    """The element type of ``e`` when placeholder ``_i`` has type ``types[i-1]`` (PoplibsError if the
    operand types disagree, an op does not support them, or a constant's type cannot be inferred)."""
    t = resultType(as_expr(e), types, None)
    if t is None:
        raise PoplibsError(f"cannot infer the type of {e!r}: it has no placeholder to take a type from")
    return t


def resultType(e: Expr, types: list[Type], hint: Type | None) -> Type | None:
    """The type of node ``e``; ``hint`` is the type a constant leaf takes (None: still unknown)."""
    if isinstance(e, PlaceHolder):
        if e.index > len(types):
            raise PoplibsError(f"placeholder {e!r} refers to input {e.index}, but only {len(types)} given")
        return types[e.index - 1]
    if isinstance(e, Const):
        return e.type or hint
    if isinstance(e, Cast):
        resultType(e.children[0], types, e.type)  # checks the operand
        return e.type
    assert isinstance(e, UnaryOp)
    t = operandType(e, types, None if e.op in BOOL_RESULT else hint)
    if t is None:
        return None
    return BOOL if e.op in BOOL_RESULT else t


def operandType(e: UnaryOp, types: list[Type], hint: Type | None) -> Type | None:
    """The common type of the value operands of ``e`` (not Select's condition), checked against the
    op; constants take it. None when every operand is an untyped constant and there is no hint."""
    values = e.children[:2] if e.op is TernaryOpType.SELECT else e.children
    if e.op in (BinaryOpType.LOGICAL_AND, BinaryOpType.LOGICAL_OR, UnaryOpType.LOGICAL_NOT):
        hint = BOOL
    found = [resultType(c, types, None) for c in values]
    known = {t for t in found if t is not None}
    if len(known) > 1:
        raise PoplibsError(f"operand types of {e!r} do not match: {', '.join(sorted(map(str, known)))}")
    t = known.pop() if known else hint
    if t is None:
        return None
    for c, ct in zip(values, found):
        if ct is None:
            resultType(c, types, t)  # a constant sub-tree: check it with the type it takes
    if t not in allowedTypes(e.op):
        raise PoplibsError(f"{_NAMES[e.op]} ({e.op.name}) does not support operands of type {t}: {e!r}")
    if e.op is TernaryOpType.SELECT and resultType(e.children[2], types, BOOL) != BOOL:
        raise PoplibsError(f"the condition of {e!r} must be of type bool")
    return t
