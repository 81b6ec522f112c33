"""Helpers shared by the popops slicing, sorting and encoding modules.

Where work runs: work on a 2-D view (rows or columns of a tensor) goes to the tile that
holds most of each row; vertices there read the rest through the exchange the compiler
plans. Also the dims/sizes checks and the options of the slicing functions.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from poplar_py import Graph, Interval, Target, Tensor

from ..poputil import PoplibsError, splitRegionsBetweenWorkers

#: the options PopLibs' slicing functions know (DynamicSlice.hpp, also taken by gather and
#: scatter): planning choices, checked here, that change nothing in this implementation
SLICE_OPTIONS = frozenset({"planConstraints", "usedForSlice", "usedForUpdate", "operationForUpdate",
                           "partialType", "availableMemoryProportion", "indicesDistribution",
                           "indicesAreSorted", "internal.alwaysIncludeBaseRearrangementCost",
                           "validateIndices", "remapOutOfBoundIndices", "paddingIndexUsed"})


def element_tiles(graph: Graph, t: Tensor) -> np.ndarray:
    """The tile of every element of ``t`` (flattened), from its tile mapping (which must be
    complete, as ``getTileMapping`` requires)."""
    begin, end, tile = graph.tile_intervals(t)
    tiles = np.zeros(t.numElements() + 1, dtype=np.int64)
    np.add.at(tiles, begin, tile)  # each interval's tile from its first element on: a running sum
    np.add.at(tiles, end, -tile)
    return np.cumsum(tiles[:-1])


def majority_tiles(tiles: np.ndarray, num_tiles: int) -> np.ndarray:
    """For each row of a 2-D array of tile numbers, the tile holding most of that row.

    Rows whose best tiles tie (a row spread evenly) are shared out among the tied tiles
    in contiguous runs, so such work is balanced instead of piling onto the lowest tile.
    """
    rows, length = tiles.shape
    if rows == 0 or length == 0:
        return np.zeros(rows, dtype=np.int64)
    keys, counts = np.unique((np.arange(rows)[:, None] * num_tiles + tiles).ravel(), return_counts=True)
    row_of, tile_of = keys // num_tiles, keys % num_tiles
    best = np.zeros(rows, dtype=np.int64)
    np.maximum.at(best, row_of, counts)
    tied = counts == best[row_of]
    # the tied tiles of each row, as a tuple (keys are sorted by row, then tile)
    starts = np.searchsorted(row_of[tied], np.arange(rows + 1))
    tied_tiles = tile_of[tied]
    result = tied_tiles[starts[:-1]].copy()
    signatures = [tuple(tied_tiles[starts[r]:starts[r + 1]].tolist()) for r in range(rows)]
    r = 0
    while r < rows:
        end = r
        while end < rows and signatures[end] == signatures[r]:
            end += 1
        choice = signatures[r]
        if len(choice) > 1:
            n = end - r
            result[r:end] = [choice[j * len(choice) // n] for j in range(n)]
        r = end
    return result


def runs(values: np.ndarray) -> Iterator[tuple[int, int, int]]:
    """``(value, begin, end)`` for each run of equal consecutive values."""
    n = len(values)
    if n == 0:
        return
    starts = np.concatenate(([0], np.flatnonzero(np.diff(values) != 0) + 1))
    ends = np.append(starts[1:], n)
    yield from zip(values[starts].tolist(), starts.tolist(), ends.tolist())


def worker_partitions(target: Target, columns_by_tile: dict[int, list[Interval]]
                      ) -> Iterator[tuple[int, list[Interval]]]:
    """``(tile, intervals)`` per worker: each tile's column intervals split between its workers."""
    for tile, intervals in columns_by_tile.items():
        for part in splitRegionsBetweenWorkers(target, intervals, 1):
            yield tile, part


def columns_by_tile(graph: Graph, t2d: Tensor) -> tuple[np.ndarray, dict[int, list[Interval]]]:
    """For a 2-D view, the tile that works on each column (the one holding most of it) and,
    per tile, the runs of columns it works on."""
    rows, cols = t2d.shape()
    tiles = element_tiles(graph, t2d).reshape(rows, cols)
    col_tiles = majority_tiles(tiles.T, graph.getTarget().getNumTiles())
    by_tile: dict[int, list[Interval]] = {}
    for tile, b, e in runs(col_tiles):
        by_tile.setdefault(tile, []).append(Interval(b, e))
    return col_tiles, by_tile


def map_columns(graph: Graph, t2d: Tensor, by_tile: dict[int, list[Interval]]) -> None:
    """Map the columns of a new 2-D view to the tiles that will write them."""
    for tile, intervals in by_tile.items():
        for iv in intervals:
            graph.setTileMapping(t2d.slice(iv.begin(), iv.end(), 1), tile)


def to_2d(t: Tensor, dim: int) -> Tensor:
    """``t`` as ``[t.dim(dim), rest]``: dimension ``dim`` first, the others flattened in order."""
    others = [d for d in range(t.rank()) if d != dim]
    rest = int(np.prod([t.dim(d) for d in others], dtype=np.int64))
    return t.dimShuffle([dim] + others).reshape([t.dim(dim), rest])


def rows_last(t: Tensor, dim: int) -> Tensor:
    """``t`` as ``[rest, t.dim(dim)]``: one row per line along ``dim``."""
    others = [d for d in range(t.rank()) if d != dim]
    rest = int(np.prod([t.dim(d) for d in others], dtype=np.int64))
    return t.dimShuffle(others + [dim]).reshape([rest, t.dim(dim)])


def check_slice_args(t: Tensor, dims: Sequence[int], sizes: Sequence[int],
                     what: str) -> tuple[list[int], list[int]]:
    """``dims`` and ``sizes`` as lists, checked against ``t`` (the slicing functions' common checks)."""
    dims, sizes = [int(d) for d in dims], [int(s) for s in sizes]
    if len(dims) != len(sizes):
        raise PoplibsError(f"{what}: dims {dims} and sizes {sizes} differ in length")
    if len(set(dims)) != len(dims):
        raise PoplibsError(f"{what}: dims {dims} repeat a dimension")
    for d, s in zip(dims, sizes):
        if not 0 <= d < t.rank():
            raise PoplibsError(f"{what}: dim {d} is out of range for tensor '{t.name}' of shape {t.shape()}")
        if not 0 <= s <= t.dim(d):
            raise PoplibsError(f"{what}: size {s} of dim {d} is larger than the dimension "
                               f"({t.dim(d)}) of tensor '{t.name}'")
    return dims, sizes


def check_update(t: Tensor, s: Tensor, expected: list[int], what: str) -> None:
    """``s`` may be written into ``t``: it has shape ``expected`` and t's type; t is writeable."""
    if s.shape() != expected:
        raise PoplibsError(f"{what}: update tensor '{s.name}' has shape {s.shape()}, expected {expected}")
    if s.elementType() != t.elementType():
        raise PoplibsError(f"{what}: update tensor '{s.name}' is {s.elementType()}, "
                           f"tensor '{t.name}' is {t.elementType()}")
    check_writeable(t, what)


def check_writeable(t: Tensor, what: str) -> None:
    """PopLibs' check before writing ``t`` from several vertices at once."""
    if not t.isParallelWriteable():
        raise PoplibsError(f"{what}: Trying to update tensor '{t.name}' that cannot be written in parallel")
