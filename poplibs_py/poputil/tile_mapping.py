"""Linear tile mappings, with PopLibs' algorithm (lib/poputil/TileMapping.cpp, splitRegions).

The flattened tensor is cut into grains (the target's vector width, so vectors are
never split) and the grains into at most one partition per tile, each at least
``minElementsPerTile`` elements (128 bytes by default, to keep exchange cheap);
partition k goes to tile k.
"""

from __future__ import annotations

import numpy as np

from poplar_py import Graph, Interval, Tensor
from poplar_py.arguments import checked_int, checked_shape

from .errors import tensorArgument


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def calcLinearTileMapping(graph: Graph, t: Tensor | list[int], minElementsPerTile: int | None = None,
                          grainSize: int | None = None) -> list[list[Interval]]:
    """Per tile, the intervals of the flattened tensor that a linear mapping puts there.

    ``calcLinearTileMapping(graph, t)`` uses the type's vector width as the grain and
    128 bytes as the minimum per tile; pass a shape with explicit values otherwise.
    """
    begin, end = linear_partitions(graph, t, minElementsPerTile, grainSize)
    mapping: list[list[Interval]] = [[] for _ in range(graph.getTarget().getNumTiles())]
    for k, (b, e) in enumerate(zip(begin.tolist(), end.tolist())):
        mapping[k].append(Interval(b, e))
    return mapping


def linear_partitions(graph: Graph, t: Tensor | list[int], minElementsPerTile: int | None,
                       grainSize: int | None) -> tuple[np.ndarray, np.ndarray]:
    """The intervals ``[begin[k], end[k])`` of partition k (for tile k) of a linear mapping (none
    empty: each partition holds at least one grain)."""
    target = graph.getTarget()
    for value, what in ((minElementsPerTile, "minElementsPerTile"), (grainSize, "grainSize")):
        if value is not None:
            checked_int(value, f"calcLinearTileMapping: {what}")
    if isinstance(t, Tensor):
        n = t.numElements()
        if grainSize is None:
            grainSize = target.getVectorWidth(t.elementType())
        if minElementsPerTile is None:
            size = target.getTypeSize(t.elementType())
            minElementsPerTile = _ceil_div(128, size)
    else:
        n = int(np.prod(checked_shape(t, "calcLinearTileMapping"), dtype=np.int64))
    grain = max(int(grainSize or 1), 1)
    min_elems = int(minElementsPerTile or 0)
    num_grains = _ceil_div(n, grain)
    if num_grains == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    grains_per_partition = _ceil_div(num_grains, target.getNumTiles())
    min_grains = _ceil_div(min_elems, grain)
    if min_grains:
        grains_per_partition = max(grains_per_partition,
                                   _ceil_div(num_grains, max(1, num_grains // min_grains)))
    partitions = _ceil_div(num_grains, grains_per_partition)
    k = np.arange(partitions + 1, dtype=np.int64)
    bounds = np.minimum(k * num_grains // partitions * grain, n)
    return bounds[:-1], bounds[1:]


def mapTensorLinearly(graph: Graph, t: Tensor, minElementsPerTile: int | None = None,
                      grainSize: int | None = None) -> None:
    """Spread ``t`` evenly over the tiles, low elements on low tiles (PopLibs' algorithm)."""
    tensorArgument(graph, t, "mapTensorLinearly")
    begin, end = linear_partitions(graph, t, minElementsPerTile, grainSize)
    graph.map_intervals(t, begin, end, np.arange(begin.size))
