"""Where an element-wise operation's work goes: each tile's part of a tensor, split between workers.

Every tile takes the intervals of the (flattened) tensor mapped to it, in memory order (as
``getSortedContiguousRegions`` sorts them), and shares them between its worker contexts as
``splitRegionsBetweenWorkers`` does: partitions of the same number of elements, a multiple of the
grain (the last one shorter), filled in order, cutting intervals where a partition ends. A
partition's elements become one row of the list fields of that tile's one MultiVertex, or several
where they are not contiguous in memory (pieces of different variables) and the tile holds few such
pieces: a row is then used in place, not gathered into an exchange buffer. Row ``r`` is processed by
worker ``r mod workers`` (one row each unless the tile's data is in pieces). Computed with numpy
over the mapping's intervals: no Python work per interval or per element.
"""

from __future__ import annotations

import numpy as np

from poplar_py import Graph, Tensor
from poplar_py.builder.bulk_vertices import Rows
from poplar_py.regions.arrays import exclusive_cumsum, expand_ranges
from poplar_py.regions.runs import Runs

__all__ = ["workerRows"]


def _ceil_div(a: np.ndarray, b: int | np.ndarray) -> np.ndarray:
    return -(-a // b)


def workerRows(graph: Graph, t: Tensor, grain: int) -> tuple[np.ndarray, Rows]:
    """The tiles holding elements of ``t`` (in increasing order) and, per tile, its intervals of
    flattened ``t`` split into at most ``getNumWorkerContexts()`` partitions, a partition's
    pieces contiguous in memory as one row."""
    workers = graph.getTarget().getNumWorkerContexts()
    runs = t.runs()
    starts = runs.starts()
    begin, end, tile = _pieces(graph, t, starts)
    var, at, strided = _elements(runs, starts, begin, end)
    order = np.lexsort((at, var, tile))  # by tile, each tile's pieces in memory order
    begin, end, tile, var, strided = (a[order] for a in (begin, end, tile, var, strided))
    length = end - begin
    tiles, first = np.unique(tile, return_index=True)
    per_tile = np.add.reduceat(length, first) if tile.size else np.zeros(0, np.int64)
    grain = max(int(grain), 1)
    grains = _ceil_div(per_tile, grain)
    budget = _ceil_div(grains, workers) * grain  # elements per partition
    which = np.repeat(np.arange(tiles.size), np.diff(np.append(first, tile.size)))
    start = exclusive_cumsum(length)
    start -= start[first][which]  # each interval's first position in its tile's elements
    step = budget[which]
    p0, p1 = start // step, (start + length - 1) // step
    owner, part = expand_ranges(p0, p1 - p0 + 1)  # the partitions each interval reaches
    lo = np.maximum(start[owner], part * step[owner])
    hi = np.minimum(start[owner] + length[owner], (part + 1) * step[owner])
    shift = begin[owner] - start[owner]
    # a new row where a tile's partition starts, or where another variable's elements start on a
    # tile whose data is in few pieces (a tile holds each variable's elements back to back, in
    # order; in more pieces, rows of a piece each would cost more state and loop overhead than
    # gathering a partition into an exchange buffer)
    breaks = np.ones(begin.size, dtype=np.int64)
    breaks[1:] = var[1:] != var[:-1]
    breaks[strided] = workers + 1  # element by element
    cut = (breaks > 0) & (np.bincount(which, weights=breaks, minlength=tiles.size) <= workers)[which]
    fresh = np.ones(owner.size, dtype=bool)
    fresh[1:] = (which[owner[1:]] != which[owner[:-1]]) | (part[1:] != part[:-1]) | cut[owner[1:]]
    row = np.cumsum(fresh) - 1
    rows_per_tile = np.bincount(which[owner[fresh]], minlength=tiles.size)
    return tiles, Rows(rows_per_tile, lo + shift, hi + shift, row)


def _pieces(graph: Graph, t: Tensor, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The tile intervals of flattened ``t`` (``getTileMapping``'s) cut where a run of its
    variables' elements starts (``starts``): ``(begin, end, tile)``."""
    begin, end, tile = graph.tile_intervals(t)
    cuts = np.union1d(begin, starts)
    which = np.searchsorted(begin, cuts, side="right") - 1
    ends = np.minimum(np.append(cuts[1:], t.numElements()), end[which])
    return cuts, ends, tile[which]


def _elements(runs: Runs, starts: np.ndarray, begin: np.ndarray, end: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per piece ``[begin[k], end[k])`` of a flattened tensor's ``runs`` (starting at flat
    ``starts``; one run each): its variable, the offset of its first element there, and whether
    its elements are strided (not consecutive)."""
    run = np.searchsorted(starts, begin, side="right") - 1
    at = runs.offset[run] + (begin - starts[run]) * runs.stride[run]
    return runs.var[run], at, (runs.stride[run] != 1) & (end - begin > 1)
