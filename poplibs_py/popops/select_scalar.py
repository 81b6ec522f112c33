"""popops: selectScalarFromRows (SelectScalarFromRows.hpp) and updateScalarInRows
(UpdateScalarInRows.hpp): one element of each row of a 2-D tensor, at a run-time index.

Each row goes to the tile holding most of it; that tile's rows are shared between its
workers, one ``SelectScalarFromRows`` or ``UpdateScalarInRows`` vertex per worker, which
reads the rows' indices (and any part of a row held elsewhere) through the exchange.
``MASKED_LABEL_CODE`` masks a row (select gives 0, update skips it); any other index outside
the row gives NaN (select) or a row of NaN (update), as in PopLibs.
"""

from __future__ import annotations

from poplar_py import FLOAT, HALF, UNSIGNED_INT, Graph, Interval, Tensor, concat
from poplar_py import program as prog_

from ..poputil import PoplibsError, templateVertex, tensorArgument
from ._common import check_writeable, element_tiles, majority_tiles, runs, worker_partitions

__all__ = ["selectScalarFromRows", "updateScalarInRows"]


def _check(graph: Graph, params: Tensor, indices: Tensor, name: str) -> None:
    tensorArgument(graph, params, f"{name}: params")
    tensorArgument(graph, indices, f"{name}: indices")
    if params.rank() != 2:
        raise PoplibsError(f"{name}: params '{params.name}' must be 2-D, has shape {params.shape()}")
    if params.elementType() not in (FLOAT, HALF):
        raise PoplibsError(f"{name}: params '{params.name}' must be FLOAT or HALF, "
                           f"not {params.elementType()}")
    if indices.elementType() != UNSIGNED_INT:
        raise PoplibsError(f"{name}: indices '{indices.name}' must be UNSIGNED_INT, "
                           f"not {indices.elementType()}")
    if indices.shape() != [params.dim(0)]:
        raise PoplibsError(f"{name}: indices '{indices.name}' must have shape [{params.dim(0)}] (one per row "
                           f"of params '{params.name}'), not {indices.shape()}")


def _rows_by_tile(graph: Graph, params: Tensor) -> dict[int, list[Interval]]:
    """Per tile, the runs of rows it works on (the tile holding most of each row)."""
    rows, cols = params.shape()
    tiles = element_tiles(graph, params).reshape(rows, cols)
    by_tile: dict[int, list[Interval]] = {}
    for tile, b, e in runs(majority_tiles(tiles, graph.getTarget().getNumTiles())):
        by_tile.setdefault(tile, []).append(Interval(b, e))
    return by_tile


def _add_vertices(graph: Graph, vertex: str, params: Tensor, indices: Tensor, out: Tensor | None,
                  prog: prog_.Sequence, name: str) -> None:
    by_tile = _rows_by_tile(graph, params)
    cs = graph.addComputeSet(name)
    for tile, part in worker_partitions(graph.getTarget(), by_tile):
        rows = [r for iv in part for r in range(iv.begin(), iv.end())]
        fields = {"params": [params[r] for r in rows], "indices": _pieces(indices, part)}
        if out is not None:
            fields["out"] = _pieces(out, part)
            for iv in part:
                graph.setTileMapping(out.slice(iv.begin(), iv.end()), tile)
        graph.setTileMapping(graph.addVertex(cs, vertex, fields), tile)
    prog.add(prog_.Execute(cs))


def _pieces(t: Tensor, part: list[Interval]) -> Tensor:
    """The elements of the 1-D ``t`` in the intervals of ``part``, in order."""
    pieces = [t.slice(iv.begin(), iv.end()) for iv in part]
    return pieces[0] if len(pieces) == 1 else concat(pieces)


def selectScalarFromRows(graph: Graph, params: Tensor, indices: Tensor, prog: prog_.Sequence,
                         debugContext: str = "") -> Tensor:
    """A new 1-D tensor: element i is ``params[i][indices[i]]`` (0 for MASKED_LABEL_CODE, NaN
    for another index outside the row). ``params`` is 2-D FLOAT or HALF, ``indices`` 1-D
    UNSIGNED_INT with one index per row; one compute set, each row's element picked on the
    tile holding most of the row, where the result element is mapped."""
    name = debugContext or "selectScalarFromRows"
    _check(graph, params, indices, name)
    out = graph.addVariable(params.elementType(), [params.dim(0)], name)
    if params.numElements() == 0:
        if out.numElements():  # rows of width 0: every index is out of range
            raise PoplibsError(f"{name}: params '{params.name}' has rows of width 0")
        return out
    _add_vertices(graph, templateVertex("popops::SelectScalarFromRows", params.elementType()),
                  params, indices, out, prog, name)
    return out


def updateScalarInRows(graph: Graph, params: Tensor, indices: Tensor, prog: prog_.Sequence,
                       debugContext: str = "") -> None:
    """``params[r][indices[r]] -= 1`` for each row r, in place, on the tile holding most of the
    row; MASKED_LABEL_CODE leaves the row alone and another index outside the row sets the
    whole row to NaN. ``params`` (2-D FLOAT or HALF) must be writeable in parallel."""
    name = debugContext or "updateScalarInRows"
    _check(graph, params, indices, name)
    check_writeable(params, name)
    if params.numElements() == 0:
        return
    _add_vertices(graph, templateVertex("popops::UpdateScalarInRows", params.elementType()),
                  params, indices, None, prog, name)
