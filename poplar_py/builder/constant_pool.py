"""One-element constants given as plain numbers, converted in bulk.

A program may add tens of thousands of one-element constants (``addConstant(FLOAT, [], x)``,
or fields connected to a number, ``{"a": 7}``). Each is still a variable of its own, but its
value waits here as the Python number it is, and all of one element type are converted by
one numpy cast when the graph is frozen, instead of an array (and a cast) apiece.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..checks.arguments import cast_values
from ..types import Type

_INT64 = (-(1 << 63), 1 << 63)  # Python ints numpy holds exactly as int64


def takes(value: Any) -> bool:
    """Whether ``value`` is a plain number the pool converts as numpy would convert it alone."""
    kind = type(value)
    return kind is float or kind is bool or (kind is int and _INT64[0] <= value < _INT64[1])


class ConstantPool:
    """Pending one-element constants: per element type and kind of number, their variables and
    values, in order."""

    def __init__(self) -> None:
        self._pending: dict[tuple[Type, type], tuple[list[int], list[Any]]] = {}

    def add(self, var: int, type_: Type, value: Any) -> None:
        """Variable ``var`` holds ``value`` (one that :func:`takes`)."""
        variables, values = self._pending.setdefault((type_, type(value)), ([], []))
        variables.append(var)
        values.append(value)

    def flush(self, into: dict[int, np.ndarray]) -> None:
        """Convert every pending value to its element type: ``into[var]``, one element each."""
        for (type_, _), (variables, values) in self._pending.items():
            converted = cast_values(np.asarray(values), type_.dtype).reshape(-1, 1)
            into.update(zip(variables, converted))
        self._pending.clear()
