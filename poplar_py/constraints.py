"""Poplar's vertex memory constraints (``poplar::constraint``): ``@poplar.constraint("elem(*a) !=
elem(*b)")`` on a vertex class.

A Poplar codelet states that two of its fields live in different memory elements, so that the
tile can load from both in one cycle: ``class [[poplar::constraint("elem(*a) != elem(*b)")]] V``.
The Python form decorates the class; the constraints are kept in ``V.memoryConstraints``. poplar-py
models a tile's memory as one element (its cycle model counts the loads a kernel issues, not the
banks they hit), so a constraint changes neither the layout nor the cycles: it is checked (each
side names a field of the class) and recorded, so ported codelets keep it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from .errors import CodeletCompileError, InvalidArgumentError

__all__ = ["constraint"]

V = TypeVar("V", bound=type)
_SIDE = r"\s*elem\(\s*\*\s*(\w+)\s*\)\s*"
_FORM = re.compile(rf"^{_SIDE}!={_SIDE}$")


def constraint(expression: str) -> Callable[[V], V]:
    """A class decorator recording the memory constraint ``expression``, of the form
    ``"elem(*a) != elem(*b)"`` where ``a`` and ``b`` are fields of the vertex."""
    if not isinstance(expression, str):
        raise InvalidArgumentError(f"constraint: expected a string, got {type(expression).__name__}")
    match = _FORM.match(expression)
    if match is None:
        raise InvalidArgumentError(f"constraint: '{expression}' is not of the form \"elem(*a) != elem(*b)\"")

    def mark(cls: V) -> V:
        fields = getattr(cls, "fields", None)
        if not isinstance(fields, dict):
            raise InvalidArgumentError(f"constraint: {cls!r:.60} is not a vertex class")
        for name in match.groups():
            if name not in fields:
                raise CodeletCompileError(f"constraint '{expression}' on {cls.__name__}: "
                                          f"{cls.__name__} has no field '{name}'")
        cls.memoryConstraints = (*getattr(cls, "memoryConstraints", ()), expression)
        return cls
    return mark
