"""popops fill and zero: every element of a tensor set to one value, on the tiles that hold it."""

from __future__ import annotations

import numpy as np

from poplar_py import Graph, Tensor, concat

from ..poputil import PoplibsArgumentError, PoplibsError, templateVertex, tensorArgument
from .expr_map import ProgOrCs, addElementWiseVertices, computeSetFor

__all__ = ["fill", "zero"]


def _distinct_elements(graph: Graph, t: Tensor) -> Tensor:
    """A flat view holding each element of ``t`` once (a broadcast view names some elements
    several times, and two vertices must not write the same element)."""
    if not t.containsAliases():
        return t
    runs: dict[int, list[tuple[int, int]]] = {}
    for ref, iv in t.getVarRegions():
        runs.setdefault(ref.index, []).append((iv.begin(), iv.end()))
    pieces = []
    for var, intervals in runs.items():
        flat = graph.getVariable(var).flatten()
        merged: list[list[int]] = []
        for b, e in sorted(intervals):
            if merged and b <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([b, e])
        pieces += [flat.slice(b, e) for b, e in merged]
    return concat(pieces)


def fill(graph: Graph, t: Tensor, prog: ProgOrCs, value: bool | int | float, debugName: str = "") -> None:
    """Set every element of ``t`` to ``value`` (converted to t's type, as numpy's astype does).

    ``popops::Fill2d<T>`` MultiVertices, one per tile holding part of ``t``, write
    the value where the elements live. ``t`` must not contain constants; aliased elements are
    written once. ``prog`` may be a ComputeSet (the vertices join it).
    """
    t = tensorArgument(graph, t, "fill")
    if isinstance(value, (str, bytes)) or not isinstance(value, (bool, int, float, np.number)):
        raise PoplibsArgumentError(f"fill of tensor '{t.name}': the value must be a number, "
                                   f"got {value!r:.40}")
    if t.containsConstant():
        raise PoplibsError(f"fill: tensor '{t.name}' contains constants")
    cs = computeSetFor(graph, prog, debugName or "fill")
    if t.numElements():
        vertex = templateVertex("popops::Fill2d", t.elementType())
        addElementWiseVertices(graph, cs, vertex, _distinct_elements(graph, t), {}, state={"value": value})


def zero(graph: Graph, t: Tensor, prog: ProgOrCs, debugName: str = "") -> None:
    """``fill(graph, t, prog, 0)``: zero every element of ``t`` on the tiles that hold it."""
    fill(graph, t, prog, 0, debugName or "zero")
