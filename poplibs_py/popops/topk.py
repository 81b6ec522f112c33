"""popops: topK, topKWithPermutation, topKKeyValue and createTopKInput (TopK.hpp).

Every row (the innermost dim) is reduced to its top ``k`` on the tiles in stages. A stage
cuts each row into chunks of about a tile's share of the whole tensor (and at least
``GROUP * k`` elements); one vertex per chunk, on the tile holding most of the chunk, keeps
the best ``k`` of its chunk in a heap held by its outputs (no row-sized scratch) and writes
them sorted. The chunks' winners, in chunk order, are the next stage's rows, each at most
``2 / GROUP`` of the last; the stage whose rows fit one chunk writes the result, one vertex
per row, in the requested order. Rows that fit one chunk from the start take one stage.

Order: NaN counts as larger than every number. Elements with equal keys are chosen and
written in index order, whatever the ``sortOrder`` (so every result is stable): candidates
keep their row order from stage to stage, and each vertex breaks ties by position.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from poplar_py import FLOAT, HALF, INT, UNSIGNED_INT, Graph, Tensor, Type
from poplar_py import program as prog_
from poplar_py.arguments import checked_shape, is_int

from ..poputil import PoplibsArgumentError, PoplibsError, sequenceArgument, templateVertex, tensorArgument
from ._common import element_tiles, majority_tiles

__all__ = ["SortOrder", "TopKParams", "createTopKInput", "topK", "topKKeyValue", "topKWithPermutation"]

#: the least chunk a first-stage vertex takes: shorter rows are reduced by one vertex each
MIN_CHUNK = 64
#: the key and value types PopLibs' topK takes
TYPES = (FLOAT, HALF, INT, UNSIGNED_INT)


class SortOrder(enum.Enum):
    NONE = 0
    ASCENDING = 1
    DESCENDING = 2


@dataclass
class TopKParams:
    """``k`` elements, the largest or the smallest, in ``sortOrder`` (NONE gives them
    largest-first for ``largest``, smallest-first otherwise). Results are always stable
    (``stableSort`` or not): equal elements are chosen and written in index order."""

    k: int
    largest: bool = True
    sortOrder: SortOrder = SortOrder.NONE
    stableSort: bool = False


def _check_params(params: TopKParams, n: int, what: str, name: str) -> int:
    """``params.k``, after checking ``params`` against rows of length ``n`` of ``what``."""
    if not isinstance(params, TopKParams):
        raise PoplibsArgumentError(f"{name}: params must be a TopKParams, got {type(params).__name__}")
    if not isinstance(params.sortOrder, SortOrder):
        raise PoplibsArgumentError(f"{name}: params.sortOrder must be a SortOrder, "
                                   f"got {params.sortOrder!r:.40}")
    if not is_int(params.k) or params.k < 0:
        raise PoplibsArgumentError(f"{name}: params.k must be an integer of at least 0, got {params.k!r:.40}")
    k = int(params.k)
    if k > n:
        raise PoplibsError(f"{name}: params.k = {k} is larger than the innermost dim ({n}) of {what}")
    return k


def _check_tensor(graph: Graph, t: Tensor, name: str, what: str) -> Tensor:
    t = tensorArgument(graph, t, f"{name}: {what}")
    if t.rank() < 1:
        raise PoplibsError(f"{name}: {what} '{t.name}' must have at least one dimension, "
                           f"has shape {t.shape()}")
    if t.elementType() not in TYPES:
        raise PoplibsError(f"{name}: {what} '{t.name}' is {t.elementType()}; topK takes FLOAT, HALF, INT "
                           "or UNSIGNED_INT")
    return t


def _chunk_length(rows: int, n: int, num_tiles: int) -> int:
    """The first stage's chunk length for ``rows`` rows of ``n``: a tile's share of the elements,
    at least MIN_CHUNK."""
    return max(-(-rows * n // num_tiles), MIN_CHUNK)


def _bounds(n: int, chunk: int) -> list[tuple[int, int]]:
    """A row of ``n`` cut into equal chunks (lengths differing by at most 1) of at most ``chunk``."""
    q = -(-n // chunk)
    return [(j * n // q, (j + 1) * n // q) for j in range(q)]


@dataclass
class _Sorted:
    """One sorted result per row, from one piece of the rows: keys and values ``[rows, length]``
    (values: the keys' indices in the row, for topKWithPermutation), and the tile of each row's."""

    keys: Tensor
    values: Tensor
    tiles: np.ndarray


def _outputs(graph: Graph, types: list[tuple[str, Type]], rows: int, lengths: list[int], tiles: np.ndarray,
             name: str) -> tuple[list[Tensor], list[tuple[int, int]]]:
    """A stage's outputs: a variable ``[rows, sum(lengths)]`` per ``(name, type)`` of ``types``, and
    the columns ``(begin, end)`` of each of the stage's results; result j of row r on
    ``tiles[r, j]``."""
    starts = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    width = int(starts[-1])
    outs = [graph.addVariable(type_, [rows, width], f"{name}/{what}") for what, type_ in types]
    begin = (np.arange(rows)[:, None] * width + starts[:-1]).ravel()
    for t in outs:
        graph.map_intervals(t.flatten(), begin, begin + np.tile(lengths, rows), tiles.ravel())
    return outs, list(zip(starts[:-1].tolist(), starts[1:].tolist()))


def _first_stage(graph: Graph, prog: prog_.Sequence, keys: Tensor, values: Tensor | None, k: int,
                 largest: bool, reverse: bool, name: str) -> list[_Sorted]:
    """Each chunk of each row of the 2-D ``keys`` to its best ``k``, sorted, with their values (their
    indices if ``values`` is None), by a vertex on the tile holding most of the chunk. A row that
    is one chunk comes out in the final order (``reverse``)."""
    rows, n = keys.shape()
    num_tiles = graph.getTarget().getNumTiles()
    bounds = _bounds(n, min(n, _chunk_length(rows, n, num_tiles)))
    element = element_tiles(graph, keys).reshape(rows, n)
    tiles = np.stack([majority_tiles(element[:, lo:hi], num_tiles) for lo, hi in bounds], axis=1)
    types = [("keys", keys.elementType())]
    if values is None:
        vertex = templateVertex("popops::TopK", keys.elementType())
        types.append(("indices", UNSIGNED_INT))
    else:
        vertex = templateVertex("popops::TopKKeyValue", keys.elementType(), values.elementType())
        types += [("values", values.elementType()), ("positions", UNSIGNED_INT)]
    outs, columns = _outputs(graph, types, rows, [min(k, hi - lo) for lo, hi in bounds], tiles,
                             f"{name}/stage0")
    cs = graph.addComputeSet(f"{name}/stage0")
    for r in range(rows):
        for j, (lo, hi) in enumerate(bounds):
            out = [t[r].slice(*columns[j]) for t in outs]
            if values is None:
                fields = {"inp": keys[r].slice(lo, hi), "outValues": out[0], "outIndices": out[1]}
            else:
                fields = {"keys": keys[r].slice(lo, hi), "values": values[r].slice(lo, hi), "outKeys": out[0],
                          "outValues": out[1], "positions": out[2]}
            v = graph.addVertex(cs, vertex, fields)
            if values is None:
                graph.setInitialValue(v["offset"], lo)
            graph.setInitialValue(v["largest"], largest)
            graph.setInitialValue(v["reverse"], reverse and len(bounds) == 1)
            graph.setTileMapping(v, int(tiles[r, j]))
    prog.add(prog_.Execute(cs))
    return [_Sorted(outs[0][:, b:e], outs[1][:, b:e], tiles[:, j]) for j, (b, e) in enumerate(columns)]


def _merge_stage(graph: Graph, prog: prog_.Sequence, results: list[_Sorted], k: int, largest: bool,
                 reverse: bool, name: str) -> list[_Sorted]:
    """Neighbouring results merged in pairs into the best ``k`` of each pair, on the first's tile (the
    last result passes through when their number is odd); one result left is in the final order."""
    pairs = list(zip(results[0::2], results[1::2]))
    rows = results[0].keys.dim(0)
    types = [("keys", results[0].keys.elementType()), ("values", results[0].values.elementType())]
    lengths = [min(k, a.keys.dim(1) + b.keys.dim(1)) for a, b in pairs]
    tiles = np.stack([a.tiles for a, _ in pairs], axis=1)
    (keys, values), columns = _outputs(graph, types, rows, lengths, tiles, name)
    cs = graph.addComputeSet(name)
    vertex = templateVertex("popops::TopKMerge", *(t for _, t in types))
    for r in range(rows):
        for (a, b), column in zip(pairs, columns):
            v = graph.addVertex(cs, vertex, {"aKeys": a.keys[r], "aValues": a.values[r], "bKeys": b.keys[r],
                                             "bValues": b.values[r], "outKeys": keys[r].slice(*column),
                                             "outValues": values[r].slice(*column)})
            graph.setInitialValue(v["largest"], largest)
            graph.setInitialValue(v["reverse"], reverse and len(results) == 2)
            graph.setTileMapping(v, int(a.tiles[r]))
    prog.add(prog_.Execute(cs))
    merged = [_Sorted(keys[:, b:e], values[:, b:e], a.tiles) for (a, _), (b, e) in zip(pairs, columns)]
    return merged + results[len(pairs) * 2:]


def _top_k(graph: Graph, prog: prog_.Sequence, keys: Tensor, values: Tensor | None, params: TopKParams,
           name: str) -> tuple[Tensor, Tensor]:
    """``(keys, values)`` of the top k of each row of ``keys``' innermost dim (values None: their
    indices), shaped as ``keys`` with that dim k."""
    n = keys.dim(keys.rank() - 1)
    k = _check_params(params, n, f"tensor '{keys.name}'", name)
    rows = keys.numElements() // n if n else 0
    out_shape = [*keys.shape()[:-1], k]
    value_type = UNSIGNED_INT if values is None else values.elementType()
    if k == 0 or rows == 0:
        return (graph.addVariable(keys.elementType(), out_shape, f"{name}/keys"),
                graph.addVariable(value_type, out_shape, f"{name}/values"))
    natural = SortOrder.DESCENDING if params.largest else SortOrder.ASCENDING
    reverse = params.sortOrder not in (SortOrder.NONE, natural)
    largest = bool(params.largest)
    results = _first_stage(graph, prog, keys.reshape([rows, n]),
                           None if values is None else values.reshape([rows, n]), k, largest, reverse, name)
    stage = 1
    while len(results) > 1:
        results = _merge_stage(graph, prog, results, k, largest, reverse, f"{name}/stage{stage}")
        stage += 1
    return results[0].keys.reshape(out_shape), results[0].values.reshape(out_shape)


def topKWithPermutation(graph: Graph, prog: prog_.Sequence, t: Tensor, params: TopKParams,
                        debugContext: str = "") -> tuple[Tensor, Tensor]:
    """The top ``params.k`` of each row of ``t``'s innermost dim, and their indices.

    Returns ``(values, indices)``, shaped as ``t`` with the last dim ``k`` (indices are
    UNSIGNED_INT). Long rows are reduced in stages spread over the tiles holding them
    (see the module's notes); the results live on the tile of each row's last stage.
    NaN counts as larger than every number; equal elements come in index order.
    """
    name = debugContext or "topKWithPermutation"
    sequenceArgument(prog, name)
    t = _check_tensor(graph, t, name, "tensor")
    return _top_k(graph, prog, t, None, params, name)


def topK(graph: Graph, prog: prog_.Sequence, t: Tensor, params: TopKParams, debugContext: str = "") -> Tensor:
    """The top ``params.k`` values of each row of ``t``'s innermost dim (see topKWithPermutation)."""
    return topKWithPermutation(graph, prog, t, params, debugContext or "topK")[0]


def topKKeyValue(graph: Graph, prog: prog_.Sequence, keys: Tensor, values: Tensor, params: TopKParams,
                 debugContext: str = "") -> tuple[Tensor, Tensor]:
    """The top ``params.k`` of each row of ``keys``' innermost dim, and the elements of
    ``values`` (same shape) at their positions.

    Returns ``(keys, values)``, both shaped as the inputs with the last dim ``k``; the stages
    carry the values along with their keys (see topKWithPermutation).
    """
    name = debugContext or "topKKeyValue"
    sequenceArgument(prog, name)
    keys = _check_tensor(graph, keys, name, "keys")
    values = _check_tensor(graph, values, name, "values")
    if keys.shape() != values.shape():
        raise PoplibsError(f"{name}: keys '{keys.name}' {keys.shape()} and values '{values.name}' "
                           f"{values.shape()} differ in shape")
    return _top_k(graph, prog, keys, values, params, name)


def createTopKInput(graph: Graph, type: Type, shape: list[int], params: TopKParams,  # noqa: A002
                    debugContext: str = "") -> Tensor:
    """A new variable of ``shape`` laid out for topK with ``params``: each chunk of the first
    stage (a whole row if rows are short) on its own tile, the chunks spread evenly over the
    tiles in row order, so the first stage reads no element from another tile."""
    name = debugContext or "createTopKInput"
    if type not in TYPES:
        raise PoplibsError(f"{name}: type {type} is not one topK takes (FLOAT, HALF, INT or UNSIGNED_INT)")
    shape = list(checked_shape(shape, name))
    if not shape:
        raise PoplibsError(f"{name}: shape {shape} must have at least one dimension")
    n = shape[-1]
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    _check_params(params, n, f"shape {shape}", name)
    t = graph.addVariable(type, shape, name)
    if rows == 0 or n == 0:
        return t
    num_tiles = graph.getTarget().getNumTiles()
    bounds = np.array(_bounds(n, min(n, _chunk_length(rows, n, num_tiles))), dtype=np.int64)
    first = np.arange(rows)[:, None] * n
    begin, end = (first + bounds[:, 0]).ravel(), (first + bounds[:, 1]).ravel()
    graph.map_intervals(t.flatten(), begin, end, np.arange(begin.size) * num_tiles // begin.size)
    return t
