"""popops: dynamicSlice and dynamicUpdate (DynamicSlice.hpp), offsets read at run time.

The offset lives in a device tensor; vertices on the tiles read it when the program
runs, so one graph serves every offset. A tensor is sliced one dimension at a time:
viewed as ``[dimSize, columns]``, each column goes to the tile that holds most of it
and that tile's columns are shared between its workers (one ``DynamicSlice1D`` or
``DynamicUpdateSlice1D`` vertex per run of columns).

Semantics, as PopLibs' codelets: a window that runs past the end of a dimension wraps
round to index 0; an offset >= the dimension's size is treated as 0 (PopLibs leaves
this unspecified and remaps it to 0 with ``remapOutOfBoundIndices``), so nothing is
ever read or written out of bounds.
"""

from __future__ import annotations

from collections.abc import Sequence

from poplar_py import UNSIGNED_INT, Graph, Tensor
from poplar_py import program as prog_
from poplar_py.debug import debug_name

from ..poputil import PoplibsError, checkOptions, templateVertex
from ._common import (
    SLICE_OPTIONS,
    check_slice_args,
    check_update,
    columns_by_tile,
    map_columns,
    to_2d,
    worker_partitions,
)

# The multi-slice family is re-exported so that popops' star-import of this module finds it.
__all__ = ["dynamicSlice", "dynamicUpdate"]


def _check_offset(offset: Tensor, n: int, what: str) -> None:
    if not isinstance(offset, Tensor):
        raise PoplibsError(f"{what}: offset must be a Tensor, got {type(offset).__name__}")
    if offset.elementType() != UNSIGNED_INT:
        raise PoplibsError(f"{what}: offset tensor '{offset.name}' must be UNSIGNED_INT, "
                           f"not {offset.elementType()}")
    if offset.shape() != [n]:
        raise PoplibsError(f"{what}: offset tensor '{offset.name}' must have shape [{n}] "
                           f"(one offset per dim), not {offset.shape()}")


def _slice_one(graph: Graph, t: Tensor, offset: Tensor, dim: int, size: int, prog: prog_.Sequence,
               name: str) -> Tensor:
    """One compute set: ``t`` sliced along ``dim`` at the 0-D ``offset``, into a new tensor
    mapped with the columns on the tiles that compute them."""
    shape = t.shape()
    shape[dim] = size
    out = graph.addVariable(t.elementType(), shape, name)
    base2d, sub2d = to_2d(t, dim), to_2d(out, dim)
    if out.numElements() == 0:
        return out
    _, by_tile = columns_by_tile(graph, base2d)
    map_columns(graph, sub2d, by_tile)
    cs = graph.addComputeSet(name)
    vertex = templateVertex("popops::DynamicSlice1D", t.elementType())
    _add_vertices(graph, cs, vertex, offset, base2d, sub2d, by_tile)
    prog.add(prog_.Execute(cs))
    return out


def _update_one(graph: Graph, t: Tensor, s: Tensor, offset: Tensor, dim: int, prog: prog_.Sequence,
                name: str) -> None:
    """One compute set: ``s`` written into ``t`` along ``dim`` at the 0-D ``offset``; each
    column is updated on the tile that holds most of it in ``t``."""
    base2d, sub2d = to_2d(t, dim), to_2d(s, dim)
    if s.numElements() == 0:
        return
    _, by_tile = columns_by_tile(graph, base2d)
    cs = graph.addComputeSet(name)
    vertex = templateVertex("popops::DynamicUpdateSlice1D", t.elementType())
    _add_vertices(graph, cs, vertex, offset, base2d, sub2d, by_tile)
    prog.add(prog_.Execute(cs))


def _add_vertices(graph: Graph, cs, vertex: str, offset: Tensor, base2d: Tensor, sub2d: Tensor,
                  by_tile: dict) -> None:
    """One vertex per run of columns (each tile's runs split between its workers)."""
    for tile, part in worker_partitions(graph.getTarget(), by_tile):
        for iv in part:
            v = graph.addVertex(cs, vertex, {"offset": offset,
                                             "baseT": base2d.slice(iv.begin(), iv.end(), 1).flatten(),
                                             "subT": sub2d.slice(iv.begin(), iv.end(), 1).flatten()})
            graph.setInitialValue(v["numBaseElements"], base2d.dim(0))
            graph.setInitialValue(v["numSubElements"], sub2d.dim(0))
            graph.setTileMapping(v, tile)


def dynamicSlice(graph: Graph, t: Tensor, offset: Tensor, dims: Sequence[int], sizes: Sequence[int],
                 prog: prog_.Sequence, debugName: str = "", options: dict | None = None) -> Tensor:
    """A new tensor: ``t`` with ``dims[k]`` cut to ``sizes[k]`` elements from ``offset[k]``.

    ``offset`` is a 1-D UNSIGNED_INT device tensor with one entry per dim, read on the
    tiles when ``prog`` runs. Each dim adds one compute set; the columns of each step
    run on the tile holding most of them, and the result is mapped the same way.
    Windows wrap past the end of a dimension; an offset >= the size acts as 0.
    ``options`` (PopLibs' slice options) are checked; none changes how the slice is made.
    """
    checkOptions(options, SLICE_OPTIONS, "dynamicSlice")
    name = debug_name(debugName, "dynamicSlice: debugContext") or "dynamicSlice"
    dims, sizes = check_slice_args(t, dims, sizes, name)
    _check_offset(offset, len(dims), name)
    if not dims:
        raise PoplibsError(f"{name}: no dims to slice")
    for k, (d, s) in enumerate(zip(dims, sizes)):
        t = _slice_one(graph, t, offset[k], d, s, prog, f"{name}/d{d}")
    return t


def dynamicUpdate(graph: Graph, t: Tensor, s: Tensor, offset: Tensor, dims: Sequence[int],
                  sizes: Sequence[int], prog: prog_.Sequence, debugName: str = "",
                  options: dict | None = None) -> None:
    """Write ``s`` into ``t`` at ``offset`` (the inverse of dynamicSlice, same wrapping).

    With several dims, ``t`` is first sliced along all but the last dim (intermediate
    tensors on the tiles), ``s`` is written into the innermost slice and the slices
    are written back outwards, one compute set per step. ``t`` must be writeable in
    parallel; ``s`` must have the shape of the slice. ``options`` as dynamicSlice's.
    """
    checkOptions(options, SLICE_OPTIONS, "dynamicUpdate")
    name = debug_name(debugName, "dynamicUpdate: debugContext") or "dynamicUpdate"
    dims, sizes = check_slice_args(t, dims, sizes, name)
    _check_offset(offset, len(dims), name)
    if not dims:
        raise PoplibsError(f"{name}: no dims to update")
    expected = t.shape()
    for d, size in zip(dims, sizes):
        expected[d] = size
    check_update(t, s, expected, name)
    outer = [t]
    for k in range(len(dims) - 1):
        outer.append(_slice_one(graph, outer[-1], offset[k], dims[k], sizes[k], prog, f"{name}/slice{k}"))
    inner = s
    for k in reversed(range(len(dims))):
        _update_one(graph, outer[k], inner, offset[k], dims[k], prog, f"{name}/d{dims[k]}")
        inner = outer[k]
