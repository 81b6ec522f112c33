"""Where an element-wise operation's work goes: each tile's part of a tensor, split between workers.

Every tile takes the intervals of the (flattened) tensor mapped to it and shares them between its
worker contexts as ``splitRegionsBetweenWorkers`` does: partitions of the same number of elements,
a multiple of the grain (the last one shorter), filled in order, cutting intervals where a
partition ends. Partition ``w`` of a tile becomes row ``w`` of the list fields of that tile's one
MultiVertex, whose worker ``w`` processes it. Computed with numpy over the mapping's intervals:
no Python work per interval or per element.
"""

from __future__ import annotations

import numpy as np

from poplar_py import Graph, Tensor
from poplar_py.builder.bulk_vertices import Rows
from poplar_py.regions.arrays import exclusive_cumsum, expand_ranges

__all__ = ["workerRows"]


def _ceil_div(a: np.ndarray, b: int | np.ndarray) -> np.ndarray:
    return -(-a // b)


def workerRows(graph: Graph, t: Tensor, grain: int) -> tuple[np.ndarray, Rows]:
    """The tiles holding elements of ``t`` (in increasing order) and, per tile, its intervals of
    flattened ``t`` split into at most ``getNumWorkerContexts()`` partitions, as rows."""
    workers = graph.getTarget().getNumWorkerContexts()
    begin, end, tile = graph.tile_intervals(t)
    order = np.argsort(tile, kind="stable")  # by tile, each tile's intervals in flat order
    begin, end, tile = begin[order], end[order], tile[order]
    length = end - begin
    tiles, first = np.unique(tile, return_index=True)
    per_tile = np.add.reduceat(length, first) if tile.size else np.zeros(0, np.int64)
    grain = max(int(grain), 1)
    grains = _ceil_div(per_tile, grain)
    budget = _ceil_div(grains, workers) * grain  # elements per partition
    parts = _ceil_div(per_tile, np.maximum(budget, 1))
    which = np.repeat(np.arange(tiles.size), np.diff(np.append(first, tile.size)))
    start = exclusive_cumsum(length)
    start -= start[first][which]  # each interval's first position in its tile's elements
    step = budget[which]
    p0, p1 = start // step, (start + length - 1) // step
    owner, part = expand_ranges(p0, p1 - p0 + 1)  # the partitions each interval reaches
    lo = np.maximum(start[owner], part * step[owner])
    hi = np.minimum(start[owner] + length[owner], (part + 1) * step[owner])
    shift = begin[owner] - start[owner]
    row = exclusive_cumsum(parts)[which[owner]] + part
    return tiles, Rows(parts, lo + shift, hi + shift, row)
