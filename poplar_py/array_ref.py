"""Poplar's argument views ``ArrayRef`` and ``StringRef`` (poplar/ArrayRef.hpp, StringRef.hpp).

C++ passes a list of values as an ``ArrayRef`` and a name as a ``StringRef``, views that convert
from vectors, arrays and strings. In Python every list or tuple, and every string, is taken where
Poplar takes those, so the two classes only build such values for code ported word for word:
``ArrayRef([1, 2])`` is a tuple (the view's elements, fixed), ``StringRef("x")`` a string.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .errors import InvalidArgumentError

__all__ = ["ArrayRef", "StringRef"]


class ArrayRef(tuple):
    """The elements of a sequence (or the one value given), as a tuple."""

    def __new__(cls, values: Iterable[Any] | Any = ()) -> ArrayRef:
        if isinstance(values, (str, bytes)):
            raise InvalidArgumentError(f"ArrayRef: expected a sequence of values, "
                                       f"got a string {values!r:.40}")
        try:
            return super().__new__(cls, values)
        except TypeError:
            return super().__new__(cls, (values,))  # ArrayRef(x) of one value, as C++'s

    def size(self) -> int:
        return len(self)

    def empty(self) -> bool:
        return not self

    def front(self) -> Any:
        return self[0]

    def back(self) -> Any:
        return self[-1]


class StringRef(str):
    """A string (Poplar's ``StringRef``), with C++'s ``size`` and ``empty``."""

    def __new__(cls, value: Any = "") -> StringRef:
        if not isinstance(value, str):
            raise InvalidArgumentError(f"StringRef: expected a string, "
                                       f"got {type(value).__name__} {value!r:.40}")
        return super().__new__(cls, value)

    def size(self) -> int:
        return len(self)

    def empty(self) -> bool:
        return not self
