"""popops: iota and encodeOneHot (Encoding.hpp), written on the tiles holding the output.

Each tile's part of the output is cut into segments (pieces of rows), shared between
the tile's workers; one vertex per worker writes its segments.
"""

from __future__ import annotations

import numpy as np

from poplar_py import FLOAT, HALF, INT, UNSIGNED_INT, Graph, Interval, Tensor, concat
from poplar_py import program as prog_

from ..poputil import PoplibsError, splitRegionsBetweenWorkers, templateVertex
from ._common import check_writeable
from .perf_estimation import encodeOneHotEstimator, iotaEstimator, registerDefaultEstimator

__all__ = ["MASKED_LABEL_CODE", "encodeOneHot", "iota"]

#: an index that encodes as a row of zeros (``off`` values)
MASKED_LABEL_CODE = 0xFFFFFFFF


def _partitions(graph: Graph, t: Tensor):
    """``(tile, intervals)`` of the flattened ``t`` for each vertex: a tile's part, split
    between its workers."""
    target = graph.getTarget()
    for tile, intervals in enumerate(graph.getTileMapping(t)):
        if intervals:
            for part in splitRegionsBetweenWorkers(target, intervals, target.getVectorWidth(t.elementType())):
                yield tile, part


def iota(graph: Graph, t: Tensor, start: int, prog: prog_.Sequence, debugName: str = "") -> None:
    """``t[k] = start + k`` for the 1-D INT or UNSIGNED_INT tensor ``t``, written by ``Iota``
    vertices on the tiles that hold ``t`` (integers wrap as the type does)."""
    name = debugName or "iota"
    if t.elementType() not in (INT, UNSIGNED_INT):
        raise PoplibsError(f"{name}: tensor '{t.name}' must be INT or UNSIGNED_INT, not {t.elementType()}")
    if t.rank() != 1:
        raise PoplibsError(f"{name}: tensor '{t.name}' must be 1-D, has shape {t.shape()}")
    if t.elementType() == UNSIGNED_INT and start < 0:
        raise PoplibsError(f"{name}: start {start} is negative for UNSIGNED_INT tensor '{t.name}'")
    check_writeable(t, name)
    cs = graph.addComputeSet(name)
    vertex = templateVertex("popops::Iota", t.elementType())
    registerDefaultEstimator(graph, vertex, iotaEstimator(t.elementType()))
    for tile, part in _partitions(graph, t):
        v = graph.addVertex(cs, vertex, {"out": [t.slice(iv.begin(), iv.end()) for iv in part]})
        # the start of each segment, wrapped to the type as the codelet's arithmetic wraps
        starts = np.array([int(start) + iv.begin() for iv in part], dtype=np.int64)
        graph.setInitialValue(v["starts"], starts.astype(t.elementType().dtype))
        graph.setTileMapping(v, tile)
    prog.add(prog_.Execute(cs))


def _value(graph: Graph, value: Tensor | None, default: int, type_, what: str, name: str) -> Tensor:
    if value is None:
        const = graph.addConstant(type_, [], default, f"{name}/{what}")
        graph.setTileMapping(const, 0)
        return const
    if not isinstance(value, Tensor) or value.numElements() != 1 or value.elementType() != type_:
        raise PoplibsError(f"{name}: '{what}' must be a one-element tensor of {type_}")
    return value.reshape([])


def encodeOneHot(graph: Graph, indices: Tensor, encoded: Tensor, prog: prog_.Sequence,
                 on: Tensor | str | None = None, off: Tensor | None = None, debugName: str = "") -> None:
    """Row i of the ``[N, C]`` tensor ``encoded`` gets ``on`` (default 1) at column
    ``indices[i]`` and ``off`` (default 0) elsewhere.

    ``indices`` is 1-D UNSIGNED_INT or INT of length N. An index outside ``[0, C)`` --
    MASKED_LABEL_CODE, a negative INT, or too large -- leaves its row all ``off``, as
    PopLibs' codelet does. ``on``/``off`` are optional one-element tensors of the encoded
    type (a string in their place is taken as the debug name). ``EncodeOneHot`` vertices
    run on the tiles holding ``encoded``, one per worker, and read the indices of
    their rows through the exchange.
    """
    if isinstance(on, str):
        on, debugName = None, on
    name = debugName or "encodeOneHot"
    if indices.elementType() not in (INT, UNSIGNED_INT):
        raise PoplibsError(f"{name}: indices '{indices.name}' must be UNSIGNED_INT or INT, "
                           f"not {indices.elementType()}")
    if indices.rank() != 1:
        raise PoplibsError(f"{name}: indices '{indices.name}' must be 1-D, has shape {indices.shape()}")
    if encoded.rank() != 2 or encoded.dim(0) != indices.dim(0):
        raise PoplibsError(f"{name}: encoded '{encoded.name}' must have shape [{indices.dim(0)}, C] "
                           f"(one row per index), has shape {encoded.shape()}")
    check_writeable(encoded, name)
    type_ = encoded.elementType()
    if type_ not in (FLOAT, HALF, INT, UNSIGNED_INT):
        raise PoplibsError(f"{name}: encoded '{encoded.name}' must be FLOAT, HALF, INT or UNSIGNED_INT, "
                           f"not {type_}")
    on_t = _value(graph, on, 1, type_, "on", name)
    off_t = _value(graph, off, 0, type_, "off", name)
    if encoded.numElements() == 0:
        return
    cols = encoded.dim(1)
    flat = encoded.flatten()
    cs = graph.addComputeSet(name)
    vertex = templateVertex("popops::EncodeOneHot", indices.elementType(), type_)
    registerDefaultEstimator(graph, vertex, encodeOneHotEstimator(indices.elementType(), type_))
    for tile, part in _partitions(graph, encoded):
        segments = [seg for iv in part for seg in _row_segments(iv, cols)]
        v = graph.addVertex(cs, vertex, {
            "indices": concat([indices.slice(b // cols, b // cols + 1) for b, _ in segments]),
            "out": [flat.slice(b, e) for b, e in segments], "on": on_t, "off": off_t})
        graph.setInitialValue(v["columns"], np.array([b % cols for b, _ in segments], dtype=np.uint32))
        graph.setTileMapping(v, tile)
    prog.add(prog_.Execute(cs))


def _row_segments(iv: Interval, cols: int) -> list[tuple[int, int]]:
    """A flat interval cut where rows of ``cols`` elements end."""
    segments = []
    b = iv.begin()
    while b < iv.end():
        e = min(iv.end(), (b // cols + 1) * cols)
        segments.append((b, e))
        b = e
    return segments
