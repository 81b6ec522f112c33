"""Where a reduction's data and results live: its inputs' tiles, the mapping of its outputs and partials.

Reductions planned together are read from one source, their matrices flattened one after
another (:class:`~poplibs_py.popops.reduce_plan.Layout`), and their outputs are mapped in bulk:
one ``tile_intervals`` and one ``map_intervals`` for all of them, whatever their number.
"""

from __future__ import annotations

import numpy as np

from poplar_py import Graph, Tensor, concat
from poplar_py.regions.arrays import expand_ranges

from ..poputil import mapTensorLinearly
from ..poputil.tile_mapping import linear_partitions
from .reduce_plan import Layout, Regions


def source_layout(graph: Graph, matrices: list[Tensor], inputs: list[Tensor]) -> tuple[Layout, Tensor]:
    """The matrices ``[outputs, reduced]`` of reductions of ``inputs`` as a ``Layout``, and its
    source: the matrices flattened by rows, then by columns those that may be read along columns
    (more than one output and element)."""
    outputs = np.array([m.dim(0) for m in matrices], np.int64)
    reduced = np.array([m.dim(1) for m in matrices], np.int64)
    by_columns = (outputs > 1) & (reduced > 1)
    parts = [m.flatten() for m in matrices]
    parts += [matrices[k].transpose().flatten() for k in np.flatnonzero(by_columns).tolist()]
    source = parts[0] if len(parts) == 1 else concat(parts)
    begin, end, tile = graph.tile_intervals(source, requireComplete=False)
    if int((end - begin).sum()) < source.numElements():  # the error naming the input
        for t in inputs:
            graph.tile_intervals(t)
    tiles = np.repeat(tile, end - begin)
    edge = np.zeros(tiles.size, dtype=bool)
    edge[source.region_starts()] = True
    edge[1:] |= tiles[1:] != tiles[:-1]
    return Layout(outputs, reduced, by_columns, tiles, edge), source


def element_tiles(graph: Graph, t: Tensor) -> np.ndarray:
    """The tile of every element of ``t`` (flattened), from its tile mapping."""
    begin, end, tile = graph.tile_intervals(t)  # in order, covering every element
    return np.repeat(tile, end - begin)


def output_tiles(graph: Graph, parts: list[Tensor], first: np.ndarray | None, new: list[bool]) -> np.ndarray:
    """The tile of each element of the flattened outputs ``parts`` (one after another), mapping
    first those that are ``new`` or not fully mapped: next to the first element of its input
    row (``first``: that element's tile, per output) when that spreads a part's outputs about
    as well as a linear mapping, else linearly."""
    sizes = np.array([p.numElements() for p in parts], np.int64)
    starts = np.cumsum(sizes) - sizes
    todo = [k for k, n in enumerate(new) if n]
    given = [k for k, n in enumerate(new) if not n]
    if given:
        begin, end, _ = graph.tile_intervals(_joined(parts, given), requireComplete=False)
        mapped = np.zeros(int(sizes[given].sum()), np.int64)
        mapped[expand_ranges(begin, end - begin)[1]] = 1
        within = np.cumsum(sizes[given]) - sizes[given]
        todo += [k for k, m, n in zip(given, np.add.reduceat(mapped, within).tolist(), sizes[given].tolist())
                 if m < n]
    near = []
    for k in sorted(todo):
        mine = None if first is None else first[starts[k]:starts[k] + sizes[k]]
        if mine is not None and (mine.size == 1
                                 or np.bincount(mine).max() <= 2 * _most_linear(graph, parts[k])):
            near.append(k)
        else:
            mapTensorLinearly(graph, parts[k])
    owner = np.full(int(sizes.sum()), -1, np.int64)
    if near:
        assert first is not None
        index = expand_ranges(starts[near], sizes[near])[1]
        map_runs(graph, _joined(parts, near), first[index])
        owner[index] = first[index]
    rest = sorted(set(range(len(parts))) - set(near))
    if rest:
        owner[expand_ranges(starts[rest], sizes[rest])[1]] = element_tiles(graph, _joined(parts, rest))
    return owner


def _joined(parts: list[Tensor], which: list[int]) -> Tensor:
    """Parts ``which`` of ``parts`` one after another."""
    return parts[which[0]] if len(which) == 1 else concat([parts[k] for k in which])


def _most_linear(graph: Graph, t: Tensor) -> int:
    """The most elements a tile gets when ``t`` is mapped linearly."""
    begin, end = linear_partitions(graph, t, None, None)
    return int((end - begin).max())


def map_runs(graph: Graph, t: Tensor, tiles: np.ndarray) -> None:
    """Map element i of the flattened ``t`` to ``tiles[i]``: one interval per run of a tile."""
    if tiles.size:
        starts = np.flatnonzero(np.concatenate(([True], tiles[1:] != tiles[:-1])))
        graph.map_intervals(t, starts, np.append(starts[1:], tiles.size), tiles[starts])


def partial_tiles(stage1: Regions) -> np.ndarray:
    """The tile of each partial: each tile's partials contiguous on that tile."""
    partial = ~stage1.final
    return np.repeat(stage1.tile[partial], stage1.width[partial])
