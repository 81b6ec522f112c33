"""popops: pad (Pad.hpp), a padded view of a tensor.

Padding is a view: nothing runs on the tiles. Constant padding concatenates constant
tensors (or broadcast views of a one-element tensor) with ``t``; EDGE and REFLECT padding
repeat or mirror elements of ``t`` itself (the view aliases them, as numpy's ``pad`` modes
``edge`` and ``reflect``). Negative padding truncates. Dimensions are padded in order, so
the corners of later dimensions take their values from the already padded tensor.

The constants of constant padding go to tile 0 (``padding.MappingMethod.ZERO``, the
default), to the tile of the element of ``t`` at the edge they continue
(``padding.MappingMethod.EDGE``), or are left unmapped (``NONE``).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

import numpy as np

from poplar_py import Graph, Tensor, concat

from ..poputil import PoplibsError, broadcastToMatch, tensorArgument

__all__ = ["pad", "padding"]


class padding:  # noqa: N801 - PopLibs' namespace popops::padding
    """PopLibs' ``popops::padding``: the padding types and how constant padding is mapped."""

    class Type(enum.Enum):
        """Padding that repeats the edge element (EDGE) or mirrors the elements next to it
        (REFLECT, the edge itself not repeated), as numpy's ``edge`` and ``reflect``."""

        EDGE = "edge"
        REFLECT = "reflect"

    class MappingMethod(enum.Enum):
        """Where the constants of constant padding are mapped."""

        NONE = "none"
        ZERO = "zero"
        EDGE = "edge"


def _amounts(t: Tensor, values: Sequence[int], what: str, name: str) -> list[int]:
    try:
        amounts = [int(v) for v in values]
    except TypeError as e:
        raise PoplibsError(f"{name}: {what} must be a list of integers, got {values!r:.40}") from e
    if len(amounts) != t.rank():
        raise PoplibsError(f"{name}: {what} {amounts} needs one entry per dimension of tensor "
                           f"'{t.name}' of shape {t.shape()}")
    return amounts


def _constant_slab(graph: Graph, t: Tensor, dim: int, amount: int, value, mapping, edge: Tensor,
                   name: str) -> Tensor:
    """``amount`` slices of ``value`` along ``dim`` (a constant, or a broadcast view of a tensor)."""
    shape = t.shape()
    shape[dim] = amount
    if isinstance(value, Tensor):
        return broadcastToMatch(value.reshape([]), shape)
    slab = graph.addConstant(t.elementType(), shape, value, name)
    if slab.numElements() == 0 or mapping is padding.MappingMethod.NONE:
        return slab
    if mapping is padding.MappingMethod.EDGE:
        edge_mapping = graph.getTileMapping(edge, False)
        if sum(iv.size() for ivs in edge_mapping for iv in ivs) == edge.numElements():
            rows = slab.dimShuffle([dim] + [d for d in range(t.rank()) if d != dim])
            rows = rows.reshape([amount, edge.numElements()])
            for r in range(amount):  # each slice continues the edge: map it like the edge
                graph.setTileMapping(rows[r], edge_mapping)
            return slab
    graph.setTileMapping(slab, 0)
    return slab


def _edge(t: Tensor, dim: int, first: bool) -> Tensor:
    """The edge slice of ``dim`` (at the start or the end), flattened in the slab's row order."""
    n = t.dim(dim)
    s = t.slice(0, 1, dim) if first else t.slice(n - 1, n, dim)
    return s.dimShuffle([dim] + [d for d in range(t.rank()) if d != dim]).flatten()


def _pad_dim(graph: Graph | None, t: Tensor, lower: int, upper: int, dim: int, value, mapping,
             name: str) -> Tensor:
    n = t.dim(dim)
    if lower < 0 or upper < 0:  # truncation
        b, e = max(-lower, 0), n - max(-upper, 0)
        if b > e:
            raise PoplibsError(f"{name}: padding ({lower}, {upper}) of dim {dim} truncates more than the "
                               f"{n} elements of tensor '{t.name}'")
        t = t.slice(b, e, dim)
        lower, upper, n = max(lower, 0), max(upper, 0), e - b
    if lower == 0 and upper == 0:
        return t
    if isinstance(value, padding.Type):
        if n == 0:
            raise PoplibsError(f"{name}: cannot {value.name} pad dim {dim} of tensor '{t.name}': it is empty")
        if value is padding.Type.EDGE:
            low = t.slice(0, 1, dim).broadcast(lower, dim) if lower else None
            high = t.slice(n - 1, n, dim).broadcast(upper, dim) if upper else None
        else:
            if max(lower, upper) >= n:
                raise PoplibsError(f"{name}: REFLECT padding ({lower}, {upper}) of dim {dim} needs fewer "
                                   f"than {n} elements (the size of that dim of tensor '{t.name}')")
            low = t.slice(1, lower + 1, dim).reverse(dim) if lower else None
            high = t.slice(n - 1 - upper, n - 1, dim).reverse(dim) if upper else None
    else:
        low = high = None
        if lower:
            low = _constant_slab(graph, t, dim, lower, value, mapping, _edge(t, dim, True),
                                 f"{name}/lower{dim}")
        if upper:
            high = _constant_slab(graph, t, dim, upper, value, mapping, _edge(t, dim, False),
                                  f"{name}/upper{dim}")
    pieces = [p for p in (low, t, high) if p is not None]
    return concat(pieces, dim)


def pad(graph, t, paddingLower, paddingUpper=None, *args, debugContext: str = "", **kwargs) -> Tensor:
    """``t`` padded by ``paddingLower[d]`` elements before and ``paddingUpper[d]`` after each dim d.

    Forms, as PopLibs':

    - ``pad(graph, t, paddingLower, paddingUpper, val=0, mappingMethod=ZERO)``: constant padding;
      ``val`` is a number (constants of t's type) or a one-element tensor of t's type (a
      broadcast view of it). ``val`` may also be a ``padding.Type``.
    - ``pad(graph, t, lower, upper, dim, val=0, mappingMethod=ZERO)``: one dimension.
    - ``pad(t, paddingLower, paddingUpper, padding.Type.EDGE | REFLECT)``: no graph needed.

    Negative amounts truncate. The result is a view (see the module docstring).
    """
    name = debugContext or "pad"
    if isinstance(graph, Tensor):  # pad(t, lower, upper, type)
        graph, t, paddingLower, paddingUpper, args = None, graph, t, paddingLower, (paddingUpper, *args)
        if paddingUpper is None or len(args) != 1 or not isinstance(args[0], padding.Type):
            raise PoplibsError(f"{name}: pad(t, paddingLower, paddingUpper, type) needs a padding.Type "
                               "(constant padding needs the graph)")
    if not isinstance(t, Tensor):
        raise PoplibsError(f"{name}: the tensor to pad must be a Tensor, got {type(t).__name__}")
    if graph is not None:
        tensorArgument(graph, t, name)
    if isinstance(paddingLower, (int, np.integer)):  # one dimension
        if not args:
            raise PoplibsError(f"{name}: pad(graph, t, lower, upper, dim, ...) needs the dim")
        dim, args = int(args[0]), args[1:]
        if not 0 <= dim < t.rank():
            raise PoplibsError(f"{name}: dim {dim} is out of range for tensor '{t.name}' "
                               f"of shape {t.shape()}")
        lower, upper = [0] * t.rank(), [0] * t.rank()
        lower[dim], upper[dim] = int(paddingLower), int(paddingUpper)
    else:
        lower = _amounts(t, paddingLower, "paddingLower", name)
        upper = _amounts(t, paddingUpper, "paddingUpper", name)
    value = kwargs.pop("val", args[0] if args else 0)
    mapping = kwargs.pop("mappingMethod", args[1] if len(args) > 1 else padding.MappingMethod.ZERO)
    if kwargs or len(args) > 2:
        raise PoplibsError(f"{name}: unexpected arguments {list(kwargs) or list(args[2:])}")
    if not isinstance(mapping, padding.MappingMethod):
        raise PoplibsError(f"{name}: mappingMethod must be a padding.MappingMethod, got {mapping!r:.40}")
    if isinstance(value, Tensor):
        tensorArgument(graph, value, f"{name}: padding value")
        if value.numElements() != 1 or value.elementType() != t.elementType():
            raise PoplibsError(f"{name}: padding value tensor '{value.name}' must have one element of "
                               f"{t.elementType()}, has shape {value.shape()} of {value.elementType()}")
    elif not isinstance(value, padding.Type) and (
            isinstance(value, (str, bytes)) or not isinstance(value, (bool, int, float, np.number))):
        raise PoplibsError(f"{name}: the padding value must be a number, a tensor or a padding.Type, "
                           f"got {value!r:.40}")
    for d in range(t.rank()):
        t = _pad_dim(graph, t, lower[d], upper[d], d, value, mapping, name)
    return t
