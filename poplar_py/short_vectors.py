"""Short vector types of codelets: Poplar's ``float2``, ``half4`` and friends.

On the IPU these are the 64-bit (and 128-bit) register vectors that one instruction adds,
multiplies or loads (``f32v2add``, ``f16v4mul``, ``ld64``). In a Python codelet::

    from poplar_py import float2

    class Axpy2(Vertex):
        x: Input[Vector[float]]
        y: InOut[Vector[float]]
        a: float

        def compute(self):
            for i in range(len(self.x) // 2):
                v = float2.load(self.x, i) * self.a + float2.load(self.y, i)
                float2.store(self.y, i, v)

* ``float2(a, b)`` builds one from ``width`` numbers, ``float2(a)`` repeats one; each converts
  to the element type by the codelet rules (as a store into a field does).
* ``v[k]``: element ``k``, a constant in ``[0, width)``; vectors are values (no ``v[k] = x``:
  build a new one).
* ``+ - *`` (and ``/`` for float vectors), unary ``-``: element-wise, between two vectors of the
  same type, or a vector and a number, which converts to the element type first (the vector's type
  wins, as C++'s vector extensions do). Integers wrap.
* ``float2.load(v, i)`` reads elements ``2i`` and ``2i + 1`` of a vector (a field, a row of a
  list, a local array) whose elements are the vector's element type, as C++'s
  ``reinterpret_cast<const float2 *>(&v[0])[i]``; ``float2.store(v, i, x)`` writes them. Both are
  bounds-checked: the whole vector must lie in ``v``.

Compiled codelets hold them in LLVM vector registers (``<2 x float>``, ``<4 x half>``); the
interpreter holds :class:`VectorValue` objects whose arithmetic follows the same rules.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .codelet.type_rules import cast_value
from .errors import InvalidArgumentError
from .types import FLOAT, HALF, INT, SHORT, UNSIGNED_INT, UNSIGNED_SHORT, Type


@dataclass(frozen=True)
class ShortVector:
    """A short vector type: ``width`` elements of ``element`` (``float2`` is 2 FLOATs)."""

    name: str
    element: Type
    width: int

    def __call__(self, *values: Any) -> VectorValue:
        """``float2(a, b)``, or ``float2(a)`` for ``(a, a)``."""
        if len(values) not in (1, self.width):
            raise InvalidArgumentError(f"{self.name}() takes 1 or {self.width} numbers, got {len(values)}")
        if isinstance(values[0], VectorValue):
            raise InvalidArgumentError(f"{self.name}() takes numbers, not a {values[0].type.name}")
        dtype = self.element.dtype
        data = np.array([cast_value(v, dtype) for v in values], dtype)
        return VectorValue(self, np.repeat(data, self.width) if len(values) == 1 else data)

    def load(self, vector: Any, index: int) -> VectorValue:
        """Elements ``width * index`` to ``width * index + width - 1`` of ``vector``."""
        first = self._first(vector, index)
        return VectorValue(self, np.array([vector[first + k] for k in range(self.width)], self.element.dtype))

    def store(self, vector: Any, index: int, value: VectorValue) -> None:
        """Write ``value`` into elements ``width * index`` on of ``vector``."""
        if not isinstance(value, VectorValue) or value.type != self:
            raise InvalidArgumentError(f"{self.name}.store needs a {self.name}, got {value!r:.40}")
        first = self._first(vector, index)
        for k in range(self.width):
            vector[first + k] = value.data[k]

    def _first(self, vector: Any, index: int) -> int:
        i = operator.index(index)
        if not 0 <= i < len(vector) // self.width:
            last = self.width * i + self.width - 1
            raise InvalidArgumentError(f"{self.name} {i} of a vector of {len(vector)} elements: element "
                                       f"{last} is out of bounds")
        return self.width * i

    def __repr__(self) -> str:
        return f"poplar.{self.name}"


class VectorValue:
    """A value of a short vector type, with the codelet rules of its arithmetic."""

    __slots__ = ("data", "type")
    __array_ufunc__ = None  # numpy scalars on the left defer to the reflected operators here

    def __init__(self, type_: ShortVector, data: np.ndarray) -> None:
        self.type, self.data = type_, data

    def __len__(self) -> int:
        return self.type.width

    def __getitem__(self, k: Any) -> np.generic:
        i = operator.index(k)
        if not 0 <= i < self.type.width:
            raise IndexError(f"{self.type.name} has elements 0 to {self.type.width - 1}, not {i}")
        return self.data[i]

    def _operand(self, other: Any) -> np.ndarray:
        if isinstance(other, VectorValue):
            if other.type != self.type:
                raise TypeError(f"{self.type.name} and {other.type.name} cannot be combined")
            return other.data
        if isinstance(other, (bool, np.bool_)) or not isinstance(other, (int, float, np.number)):
            return NotImplemented
        return np.full(self.type.width, cast_value(other, self.data.dtype))

    def _apply(self, op: Callable[[Any, Any], Any], other: Any, reflected: bool = False) -> Any:
        theirs = self._operand(other)
        if theirs is NotImplemented:
            return NotImplemented
        a, b = (theirs, self.data) if reflected else (self.data, theirs)
        with np.errstate(all="ignore"):
            return VectorValue(self.type, op(a, b).astype(self.data.dtype))

    def __add__(self, other: Any) -> Any:
        return self._apply(operator.add, other)

    def __radd__(self, other: Any) -> Any:
        return self._apply(operator.add, other, True)

    def __sub__(self, other: Any) -> Any:
        return self._apply(operator.sub, other)

    def __rsub__(self, other: Any) -> Any:
        return self._apply(operator.sub, other, True)

    def __mul__(self, other: Any) -> Any:
        return self._apply(operator.mul, other)

    def __rmul__(self, other: Any) -> Any:
        return self._apply(operator.mul, other, True)

    def __truediv__(self, other: Any) -> Any:
        return self._apply(operator.truediv, other) if self.type.element.is_float else NotImplemented

    def __rtruediv__(self, other: Any) -> Any:
        return self._apply(operator.truediv, other, True) if self.type.element.is_float else NotImplemented

    def __neg__(self) -> VectorValue:
        with np.errstate(all="ignore"):
            return VectorValue(self.type, -self.data)

    def __repr__(self) -> str:
        return f"{self.type.name}({', '.join(str(x) for x in self.data.tolist())})"


float2 = ShortVector("float2", FLOAT, 2)
float4 = ShortVector("float4", FLOAT, 4)
half2 = ShortVector("half2", HALF, 2)
half4 = ShortVector("half4", HALF, 4)
int2 = ShortVector("int2", INT, 2)
int4 = ShortVector("int4", INT, 4)
uint2 = ShortVector("uint2", UNSIGNED_INT, 2)
uint4 = ShortVector("uint4", UNSIGNED_INT, 4)
short2 = ShortVector("short2", SHORT, 2)
short4 = ShortVector("short4", SHORT, 4)
ushort2 = ShortVector("ushort2", UNSIGNED_SHORT, 2)
ushort4 = ShortVector("ushort4", UNSIGNED_SHORT, 4)

SHORT_VECTORS = (float2, float4, half2, half4, int2, int4, uint2, uint4, short2, short4, ushort2, ushort4)
