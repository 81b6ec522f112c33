"""popops: sort and sortKeyValue (Sort.hpp), sorting on the tiles.

Every line along the sorted dimension is an independent row, sorted by one vertex on
the tile that holds most of it (the rest of the row is exchanged there and back). The
sort is a stable merge sort, ascending, with NaN after every number (numpy's order);
its scratch rows are variables on the same tile. All rows sort in one compute set.
"""

from __future__ import annotations

import numpy as np

from poplar_py import Graph, Tensor
from poplar_py import program as prog_
from poplar_py.checks.arguments import checked_int

from ..poputil import PoplibsError, sequenceArgument, templateVertex, tensorArgument
from ._common import check_writeable, element_tiles, majority_tiles, rows_last

__all__ = ["sort", "sortInPlace", "sortKeyValue", "sortKeyValueInPlace"]


def _check(graph: Graph, t: Tensor, dim: int, prog: prog_.Sequence, what: str) -> int:
    """``dim`` of ``t`` (a tensor of ``graph``), after checking ``prog`` is a Sequence."""
    t, _ = tensorArgument(graph, t, what), sequenceArgument(prog, what)
    if not 0 <= checked_int(dim, f"{what}: dim") < t.rank():
        raise PoplibsError(f"{what}: dim {dim} is out of range for tensor '{t.name}' of shape {t.shape()}")
    return int(dim)


def _row_tiles(graph: Graph, rows: Tensor) -> np.ndarray:
    """The tile that sorts each row of a 2-D view: the one holding most of the row."""
    r, n = rows.shape()
    return majority_tiles(element_tiles(graph, rows).reshape(r, n), graph.getTarget().getNumTiles())


def _scratch(graph: Graph, type_, shape: list[int], tiles: np.ndarray, name: str) -> Tensor:
    """A scratch variable whose row i lives on ``tiles[i]``."""
    t = graph.addVariable(type_, shape, name)
    for i, tile in enumerate(tiles.tolist()):
        graph.setTileMapping(t[i], tile)
    return t


def sortInPlace(graph: Graph, t: Tensor, dim: int, prog: prog_.Sequence, debugName: str = "") -> None:
    """Sort ``t`` along ``dim``, ascending, in place: one ``Sort`` vertex per row, on the
    tile holding most of the row. ``t`` must be writeable in parallel."""
    name = debugName or "sortInPlace"
    dim = _check(graph, t, dim, prog, name)
    check_writeable(t, name)
    rows = rows_last(t, dim)
    if rows.dim(1) <= 1 or rows.dim(0) == 0:
        return
    tiles = _row_tiles(graph, rows)
    scratch = _scratch(graph, t.elementType(), rows.shape(), tiles, f"{name}/scratch")
    cs = graph.addComputeSet(name)
    vertex = templateVertex("popops::Sort", t.elementType())
    for i, tile in enumerate(tiles.tolist()):
        v = graph.addVertex(cs, vertex, {"data": rows[i], "scratch": scratch[i]})
        graph.setTileMapping(v, tile)
    prog.add(prog_.Execute(cs))


def sort(graph: Graph, t: Tensor, dim: int, prog: prog_.Sequence, debugName: str = "") -> Tensor:
    """A sorted copy of ``t`` (ascending along ``dim``), mapped like ``t``."""
    name = debugName or "sort"
    _check(graph, t, dim, prog, name)
    out = graph.clone(t, f"{name}/out")
    prog.add(prog_.Copy(t, out))
    sortInPlace(graph, out, dim, prog, name)
    return out


def sortKeyValueInPlace(graph: Graph, keys: Tensor, values: Tensor, dim: int, prog: prog_.Sequence,
                        debugName: str = "") -> None:
    """Sort ``keys`` along ``dim`` in place and permute ``values`` (same shape) with them;
    equal keys keep their values' order. One vertex per row, on the keys' tile."""
    name = debugName or "sortKeyValueInPlace"
    dim = _check(graph, keys, dim, prog, name)
    values = tensorArgument(graph, values, f"{name}: values")
    if keys.shape() != values.shape():
        raise PoplibsError(f"{name}: keys '{keys.name}' {keys.shape()} and values '{values.name}' "
                           f"{values.shape()} differ in shape")
    check_writeable(keys, name)
    check_writeable(values, name)
    if keys.intersectsWith(values):
        raise PoplibsError(f"{name}: keys '{keys.name}' and values '{values.name}' overlap")
    krows, vrows = rows_last(keys, dim), rows_last(values, dim)
    if krows.dim(1) <= 1 or krows.dim(0) == 0:
        return
    tiles = _row_tiles(graph, krows)
    skeys = _scratch(graph, keys.elementType(), krows.shape(), tiles, f"{name}/scratchKeys")
    svals = _scratch(graph, values.elementType(), vrows.shape(), tiles, f"{name}/scratchValues")
    cs = graph.addComputeSet(name)
    vertex = templateVertex("popops::SortKeyValue", keys.elementType(), values.elementType())
    for i, tile in enumerate(tiles.tolist()):
        v = graph.addVertex(cs, vertex, {"keys": krows[i], "values": vrows[i],
                                         "scratchKeys": skeys[i], "scratchValues": svals[i]})
        graph.setTileMapping(v, tile)
    prog.add(prog_.Execute(cs))


def sortKeyValue(graph: Graph, keys: Tensor, values: Tensor, dim: int, prog: prog_.Sequence,
                 debugName: str = "") -> Tensor:
    """``values`` reordered as sorting ``keys`` along ``dim`` would (a new tensor, mapped
    like ``values``); ``keys`` is left unchanged."""
    name = debugName or "sortKeyValue"
    _check(graph, keys, dim, prog, name)
    values = tensorArgument(graph, values, f"{name}: values")
    if keys.shape() != values.shape():
        raise PoplibsError(f"{name}: keys '{keys.name}' {keys.shape()} and values '{values.name}' "
                           f"{values.shape()} differ in shape")
    kcopy = graph.clone(keys, f"{name}/keys")
    out = graph.clone(values, f"{name}/out")
    prog.add(prog_.Copy(keys, kcopy))
    prog.add(prog_.Copy(values, out))
    sortKeyValueInPlace(graph, kcopy, out, dim, prog, name)
    return out

