"""The variables of a graph: names, element types, shapes, and one global id space.

Every variable (or constant) is a row of a :class:`VariableTable`; its elements have
*global ids* ``bases[var] + offset``, so a set of elements of many variables can be
handled as intervals of one line. Nothing here is per element.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..types import Type


@dataclass(frozen=True)
class VariableRef:
    """Names one variable (or constant) of a graph."""

    index: int
    name: str


class _Column:
    """A numpy column that grows by doubling (appends in amortised constant time)."""

    def __init__(self, dtype: type) -> None:
        self._data = np.zeros(64, dtype=dtype)
        self._n = 0

    def append(self, value: object) -> None:
        if self._n == self._data.size:
            self._data = np.concatenate((self._data, np.zeros_like(self._data)))
        self._data[self._n] = value
        self._n += 1

    @property
    def values(self) -> np.ndarray:
        """The column so far (a view: read it, do not keep it across appends)."""
        return self._data[: self._n]


_tokens = itertools.count(1)


class VariableTable:
    """The variables of one graph, in creation order."""

    def __init__(self, capacity: int) -> None:
        """``capacity``: the target's memory in bytes, which no tensor can exceed in elements."""
        self.capacity = capacity
        self.token = next(_tokens)  # names the graph in handles (compute sets, functions)
        self.names: list[str] = []
        self.types: list[Type] = []
        self.shapes: list[tuple[int, ...]] = []
        self.sizes: list[int] = []
        self.is_constant: list[bool] = []
        self.metadata: dict[int, object] = {}  # QUARTER variable -> its QUARTER_METADATA tensor
        self._bases = _Column(np.int64)
        self._constant = _Column(np.bool_)
        self.num_elements = 0

    def add(self, name: str, type_: Type, shape: tuple[int, ...], constant: bool) -> int:
        """Register a variable; returns its index."""
        n = 1
        for d in shape:
            n *= d
        self.names.append(name)
        self.types.append(type_)
        self.shapes.append(shape)
        self.sizes.append(n)
        self._bases.append(self.num_elements)
        self._constant.append(constant)
        self.is_constant.append(constant)
        self.num_elements += n
        return len(self.names) - 1

    @property
    def num_variables(self) -> int:
        return len(self.names)

    @property
    def bases(self) -> np.ndarray:
        """First global id of each variable."""
        return self._bases.values

    @property
    def constant(self) -> np.ndarray:
        """Per variable: is it a constant?"""
        return self._constant.values

    def ref(self, var: int) -> VariableRef:
        return VariableRef(var, self.names[var])

    def var_of(self, gids: np.ndarray) -> np.ndarray:
        """The variable holding each global id."""
        return np.searchsorted(self.bases, gids, side="right") - 1
