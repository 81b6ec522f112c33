"""popops: topK, topKWithPermutation, topKKeyValue and createTopKInput (TopK.hpp).

Every row (the innermost dim) is reduced to its top ``k`` on the tiles, in stages, as
PopLibs' bitonic top-k merges sorted sequences of k and drops the losing half:

* stage 0 cuts the rows into chunks of a worker's share of the whole tensor (at least
  MIN_CHUNK elements); each tile runs one MultiVertex whose workers take the chunks it holds
  most of in turn, keeping each chunk's best ``k`` in a heap in the outputs (no scratch the
  size of a row) and heap-sorting them;
* each later stage merges neighbouring results in pairs into the best ``k`` of the pair, on
  the tile of the first (an odd last result waits for the next stage), until one result a
  row is left: about log2(chunks a row) stages, each result at most ``k`` long.

A tile thus holds its share of the input, its results and, while merging, a pair of
results: a row of 100,000 floats with k = 50 on a 1472-tile IPU needs under 8 kB on any
tile. The final result of each row lives on one tile, so ``k`` must fit one.

Order: NaN counts as larger than every number; elements with equal keys are chosen and
written in index order, whatever the ``sortOrder`` (results are always stable): stage 0
breaks ties by index and a merge takes equal keys from the earlier result first. NONE gives
the natural order (largest first for ``largest``). The vertices' cycles are the compiled
kernels' own counts of their work (data-dependent: the heap's), as for the sort vertices.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from poplar_py import FLOAT, HALF, INT, UNSIGNED_INT, Graph, Target, Tensor, Type, concat
from poplar_py import program as prog_
from poplar_py.builder.bulk_vertices import Rows
from poplar_py.checks.arguments import checked_shape, is_int
from poplar_py.debug import debug_name
from poplar_py.types import asType

from ..poputil import PoplibsArgumentError, PoplibsError, sequenceArgument, templateVertex, tensorArgument
from ._common import element_tiles

__all__ = ["SortOrder", "TopKParams", "createTopKInput", "topK", "topKKeyValue", "topKWithPermutation"]

#: the least chunk of the first stage: rows up to this long are reduced by one vertex each
MIN_CHUNK = 16
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


def _chunk_length(rows: int, n: int, target: Target) -> int:
    """The first stage's chunk length for ``rows`` rows of ``n``: a worker's share of the
    elements, at least MIN_CHUNK."""
    workers = target.getNumTiles() * target.getNumWorkerContexts()
    return max(-(-rows * n // workers), MIN_CHUNK)


def _bounds(n: int, chunk: int) -> np.ndarray:
    """``[chunks, 2]``: a row of ``n`` cut into equal chunks (lengths differing by at most 1) of at
    most ``chunk``, as ``(begin, end)``."""
    q = -(-n // chunk)
    j = np.arange(q + 1, dtype=np.int64) * n // q
    return np.stack([j[:-1], j[1:]], axis=1)


def _chunk_tiles(graph: Graph, keys: Tensor, bounds: np.ndarray) -> np.ndarray:
    """``[rows, chunks]``: the tile holding most of each chunk of each row of the 2-D ``keys`` (the
    lowest of the tiles holding as much), unless that tile has its share already (``_balance``)."""
    rows, n = keys.shape()
    num_tiles, q = graph.getTarget().getNumTiles(), len(bounds)
    chunk = np.searchsorted(bounds[:, 0], np.arange(n), side="right") - 1
    groups = np.arange(rows)[:, None] * q + chunk
    pairs, counts = np.unique((groups * num_tiles + element_tiles(graph, keys).reshape(rows, n)).ravel(),
                              return_counts=True)
    order = np.lexsort((-counts, pairs // num_tiles))  # by group, the most common tile first
    first = np.unique(pairs[order] // num_tiles, return_index=True)[1]
    return _balance((pairs[order][first] % num_tiles).reshape(rows, q), num_tiles)


def _balance(tiles: np.ndarray, num_tiles: int) -> np.ndarray:
    """``tiles`` with no tile given more than its share (rounded up) of the chunks: those over it
    (the later ones) move, in order, to the tiles with room, a chunk to each in turn. A row held
    by few tiles (a row on one tile) is so spread over all of them, as PopLibs lays its top-k out."""
    flat = tiles.ravel().copy()
    share = -(-flat.size // num_tiles)
    counts = np.bincount(flat, minlength=num_tiles)
    order = np.argsort(flat, kind="stable")
    rank = np.arange(flat.size) - np.repeat(np.cumsum(counts) - counts, counts)  # place on its tile
    over = np.sort(order[rank >= share])
    kept = np.minimum(counts, share)
    free = share - kept
    room = np.repeat(np.arange(num_tiles), free)
    slot = np.arange(room.size) - np.repeat(np.cumsum(free) - free, free) + kept[room]
    flat[over] = room[np.lexsort((room, slot))][:over.size]  # every tile's first free slot, then the next
    return flat.reshape(tiles.shape)


@dataclass
class _Results:
    """Sorted results, one per piece of every row: result j of row r is columns ``[starts[j],
    starts[j] + lengths[j])`` of row r of ``keys`` and ``values`` (2-D views; values are the keys'
    indices in the row for topKWithPermutation), on tile ``tiles[r, j]``."""

    keys: Tensor
    values: Tensor
    starts: np.ndarray
    lengths: np.ndarray
    tiles: np.ndarray


def _new_results(graph: Graph, types: list[tuple[str, Type]], lengths: np.ndarray, tiles: np.ndarray,
                 name: str) -> tuple[list[Tensor], np.ndarray]:
    """A stage's outputs: a variable ``[rows, sum(lengths)]`` per ``(name, type)`` of ``types``,
    result j of row r (``lengths[j]`` columns) on ``tiles[r, j]``; and the results' first columns."""
    rows = tiles.shape[0]
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    width = int(lengths.sum())
    outs = [graph.addVariable(type_, [rows, width], f"{name}/{what}") for what, type_ in types]
    begin = (np.arange(rows)[:, None] * width + starts).ravel()
    for t in outs:
        graph.map_intervals(t.flatten(), begin, begin + np.tile(lengths, rows), tiles.ravel())
    return outs, starts


def _add_vertices(graph: Graph, prog: prog_.Sequence, vertex: str, tiles: np.ndarray,
                  fields: dict[str, tuple[Tensor, np.ndarray]], state: dict[str, bool], name: str,
                  offsets: np.ndarray | None = None) -> None:
    """A compute set, added to ``prog``, of one ``vertex`` per tile of ``tiles``, the tiles of the
    stage's items: item i is a row of each list field of the vertex on ``tiles[i]`` (rows in item
    order), elements ``ranges[i] = (begin, end)`` of the flattened tensor of ``fields[field] =
    (tensor, ranges)``, and its ``offsets`` element is ``offsets[i]``."""
    order = np.argsort(tiles.ravel(), kind="stable")
    vertex_tiles, per_vertex = np.unique(tiles.ravel()[order], return_counts=True)
    row = np.arange(order.size)
    lists = {f: (t, Rows(per_vertex, ranges[order, 0], ranges[order, 1], row))
             for f, (t, ranges) in fields.items()}
    vector_state = None if offsets is None else {"offsets": (offsets.ravel()[order], per_vertex)}
    cs = graph.addComputeSet(name)
    graph.add_vertices(cs, vertex, vertex_tiles, lists, state=state, vector_state=vector_state)
    prog.add(prog_.Execute(cs))


def _ranges(width: int, starts: np.ndarray, lengths: np.ndarray, rows: int) -> np.ndarray:
    """``[rows * len(starts), 2]``: the flat ``(begin, end)`` of columns ``[starts[j], starts[j] +
    lengths[j])`` of every row of a 2-D tensor ``width`` wide, row by row."""
    begin = (np.arange(rows)[:, None] * width + starts).ravel()
    return np.stack([begin, begin + np.tile(lengths, rows)], axis=1)


def _first_stage(graph: Graph, prog: prog_.Sequence, keys: Tensor, values: Tensor | None, k: int,
                 largest: bool, reverse: bool, name: str) -> _Results:
    """Each chunk of each row of the 2-D ``keys`` to its best ``k``, sorted, with their values (their
    indices if ``values`` is None), on the tile holding most of the chunk: one MultiVertex per
    tile, a chunk per worker in turn. A row that is one chunk comes out in the final order."""
    rows, n = keys.shape()
    bounds = _bounds(n, min(n, _chunk_length(rows, n, graph.getTarget())))
    tiles = _chunk_tiles(graph, keys, bounds)
    lengths = np.minimum(k, bounds[:, 1] - bounds[:, 0])
    types = [("keys", keys.elementType())]
    types += [("indices", UNSIGNED_INT)] if values is None else [("values", values.elementType()),
                                                                 ("positions", UNSIGNED_INT)]
    outs, starts = _new_results(graph, types, lengths, tiles, f"{name}/stage0")
    chunks = _ranges(n, bounds[:, 0], bounds[:, 1] - bounds[:, 0], rows)
    pieces = _ranges(outs[0].dim(1), starts, lengths, rows)
    state = {"largest": largest, "reverse": reverse and len(bounds) == 1}
    offsets = None
    if values is None:
        vertex, offsets = templateVertex("popops::TopK", keys.elementType()), np.tile(bounds[:, 0], rows)
        fields = {"inp": (keys.flatten(), chunks)}
        outputs = ("outValues", "outIndices")
    else:
        vertex = templateVertex("popops::TopKKeyValue", keys.elementType(), values.elementType())
        fields = {"keys": (keys.flatten(), chunks), "values": (values.flatten(), chunks)}
        outputs = ("outKeys", "outValues", "positions")
    fields.update((f, (t.flatten(), pieces)) for f, t in zip(outputs, outs))
    _add_vertices(graph, prog, vertex, tiles, fields, state, f"{name}/stage0", offsets)
    return _Results(outs[0], outs[1], starts, lengths, tiles)


def _merge_stage(graph: Graph, prog: prog_.Sequence, results: _Results, k: int, largest: bool,
                 reverse: bool, name: str) -> _Results:
    """Neighbouring results merged in pairs into the best ``k`` of each pair, on the first's tile (the
    last result passes through when their number is odd); one result left is in the final order."""
    q = len(results.lengths)
    pairs = q // 2
    rows, width = results.keys.shape()
    a, b = np.arange(0, 2 * pairs, 2), np.arange(1, 2 * pairs, 2)
    lengths = np.minimum(k, results.lengths[a] + results.lengths[b])
    tiles = results.tiles[:, a]
    types = [("keys", results.keys.elementType()), ("values", results.values.elementType())]
    (keys, values), starts = _new_results(graph, types, lengths, tiles, name)
    fields = {}
    for side, which in (("a", a), ("b", b)):
        ranges = _ranges(width, results.starts[which], results.lengths[which], rows)
        fields.update({f"{side}Keys": (results.keys.flatten(), ranges),
                       f"{side}Values": (results.values.flatten(), ranges)})
    pieces = _ranges(keys.dim(1), starts, lengths, rows)
    fields.update(outKeys=(keys.flatten(), pieces), outValues=(values.flatten(), pieces))
    _add_vertices(graph, prog, templateVertex("popops::TopKMerge", *(t for _, t in types)), tiles, fields,
                  {"largest": largest, "reverse": reverse and q == 2}, name)
    if q % 2 == 0:
        return _Results(keys, values, starts, lengths, tiles)
    last = slice(int(results.starts[-1]), int(results.starts[-1] + results.lengths[-1]))
    return _Results(concat([keys, results.keys[:, last]], 1), concat([values, results.values[:, last]], 1),
                    np.append(starts, keys.dim(1)), np.append(lengths, results.lengths[-1]),
                    np.concatenate([tiles, results.tiles[:, -1:]], axis=1))


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
    while len(results.lengths) > 1:
        results = _merge_stage(graph, prog, results, k, largest, reverse, f"{name}/stage{stage}")
        stage += 1
    return results.keys.reshape(out_shape), results.values.reshape(out_shape)


def topKWithPermutation(graph: Graph, prog: prog_.Sequence, t: Tensor, params: TopKParams,
                        debugContext: object = "") -> tuple[Tensor, Tensor]:
    """The top ``params.k`` of each row of ``t``'s innermost dim, and their indices.

    Returns ``(values, indices)``, shaped as ``t`` with the last dim ``k`` (indices are
    UNSIGNED_INT). Long rows are reduced in stages spread over the tiles holding them
    (see the module's notes); the results live on the tile of each row's last stage.
    NaN counts as larger than every number; equal elements come in index order.
    """
    name = debug_name(debugContext, "topKWithPermutation") or "topKWithPermutation"
    sequenceArgument(prog, name)
    t = _check_tensor(graph, t, name, "tensor")
    return _top_k(graph, prog, t, None, params, name)


def topK(graph: Graph, prog: prog_.Sequence, t: Tensor, params: TopKParams,
         debugContext: object = "") -> Tensor:
    """The top ``params.k`` values of each row of ``t``'s innermost dim (see topKWithPermutation)."""
    return topKWithPermutation(graph, prog, t, params, debug_name(debugContext, "topK") or "topK")[0]


def topKKeyValue(graph: Graph, prog: prog_.Sequence, keys: Tensor, values: Tensor, params: TopKParams,
                 debugContext: object = "") -> tuple[Tensor, Tensor]:
    """The top ``params.k`` of each row of ``keys``' innermost dim, and the elements of
    ``values`` (same shape) at their positions.

    Returns ``(keys, values)``, both shaped as the inputs with the last dim ``k``; the stages
    carry the values along with their keys (see topKWithPermutation).
    """
    name = debug_name(debugContext, "topKKeyValue") or "topKKeyValue"
    sequenceArgument(prog, name)
    keys = _check_tensor(graph, keys, name, "keys")
    values = _check_tensor(graph, values, name, "values")
    if keys.shape() != values.shape():
        raise PoplibsError(f"{name}: keys '{keys.name}' {keys.shape()} and values '{values.name}' "
                           f"{values.shape()} differ in shape")
    return _top_k(graph, prog, keys, values, params, name)


def createTopKInput(graph: Graph, type: Type, shape: list[int], params: TopKParams,  # noqa: A002
                    debugContext: object = "") -> Tensor:
    """A new variable of ``shape`` laid out for topK with ``params``: the first stage's chunks (a
    whole row if rows are short) spread evenly over the tiles in row order, whole chunks on each,
    so the first stage reads no element from another tile."""
    name = debug_name(debugContext, "createTopKInput") or "createTopKInput"
    type_ = asType(type)
    if type_ not in TYPES:
        raise PoplibsError(f"{name}: type {type_} is not one topK takes (FLOAT, HALF, INT or UNSIGNED_INT)")
    shape = list(checked_shape(shape, name))
    if not shape:
        raise PoplibsError(f"{name}: shape {shape} must have at least one dimension")
    n = shape[-1]
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    _check_params(params, n, f"shape {shape}", name)
    t = graph.addVariable(type_, shape, name)
    if rows == 0 or n == 0:
        return t
    num_tiles = graph.getTarget().getNumTiles()
    bounds = _bounds(n, min(n, _chunk_length(rows, n, graph.getTarget())))
    first = np.arange(rows)[:, None] * n
    begin, end = (first + bounds[:, 0]).ravel(), (first + bounds[:, 1]).ravel()
    graph.map_intervals(t.flatten(), begin, end, np.arange(begin.size) * num_tiles // begin.size)
    return t
