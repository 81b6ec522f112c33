"""numpy-style broadcasting of tensor views (Broadcast.hpp), and ``createBroadcastOperand``
(TileMapping.hpp): a 1-D operand mapped where the full tensor it is broadcast against lives.

C++ updates its tensor arguments in place; here the broadcast views are returned:
``a, b = broadcastToMatch(a, b)``. Every view aliases its tensor (no data moves).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from poplar_py import Graph, Tensor, concat
from poplar_py.types import asType

from .debug_info import PoplibsOpDebugInfo
from .errors import PoplibsArgumentError, PoplibsError, tensorArgument
from .tile_mapping import _tiles_for, chooseMappingOffset, mapTensorLinearly
from .use_tracker import TensorUseTracker

__all__ = ["broadcastToMatch", "canBroadcastToMatch", "createBroadcastOperand", "expandToMatchRanks"]


def _tensor(t: Any, what: str) -> Tensor:
    if not isinstance(t, Tensor):
        raise PoplibsArgumentError(f"{what} must be a tensor, got {type(t).__name__} {t!r:.40}")
    return t


def expandToMatchRanks(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """``a`` and ``b`` with outer dimensions of size 1 added to the one of lower rank, so that
    their ranks match."""
    a, b = _tensor(a, "expandToMatchRanks: a"), _tensor(b, "expandToMatchRanks: b")
    if a.rank() < b.rank():
        a = a.expand([0] * (b.rank() - a.rank()))
    elif b.rank() < a.rank():
        b = b.expand([0] * (a.rank() - b.rank()))
    return a, b


def _to_shape(a: Tensor, shape: Sequence[int]) -> Tensor:
    if isinstance(shape, (str, bytes)) or not isinstance(shape, (Sequence, np.ndarray)):
        raise PoplibsArgumentError(f"broadcastToMatch: shape must be a list of dimensions, got "
                                   f"{type(shape).__name__} {shape!r:.40}")
    target = []
    for d in shape:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or d < 0:
            raise PoplibsArgumentError(f"broadcastToMatch: shape must be a list of non-negative integers, "
                                       f"got {list(shape)!r:.60}")
        target.append(int(d))
    if a.rank() > len(target):
        raise PoplibsError(f"Cannot broadcast tensor '{a.name}' of shape {a.shape()} to shape {target}: "
                           f"it has more dimensions")
    t = a.expand([0] * (len(target) - a.rank())) if a.rank() < len(target) else a
    for dim, (have, want) in enumerate(zip(t.shape(), target)):
        if have == want:
            continue
        if have != 1:
            raise PoplibsError(f"Cannot broadcast tensor '{a.name}' of shape {a.shape()} to shape {target}: "
                               f"dimension {dim} is {have}, not 1 or {want}")
        t = t.broadcast(want, dim)
    return t


def _pair(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    a0, b0 = a, b
    a, b = expandToMatchRanks(a, b)
    for dim in range(a.rank()):
        da, db = a.dim(dim), b.dim(dim)
        if da == db:
            continue
        if da == 1:
            a = a.broadcast(db, dim)
        elif db == 1:
            b = b.broadcast(da, dim)
        else:
            raise PoplibsError(f"Cannot broadcast tensors '{a0.name}' of shape {a0.shape()} and '{b0.name}' "
                               f"of shape {b0.shape()} to match dimension {dim} ({da} and {db})")
    return a, b


def broadcastToMatch(a: Tensor, *others: Any) -> Any:
    """numpy's broadcasting, as views:

    - ``broadcastToMatch(a, shape)``: ``a`` broadcast to ``shape`` (size-1 and missing leading
      dimensions repeat); returns the view;
    - ``broadcastToMatch(a, b)``: both broadcast to their common shape; returns ``(a, b)``;
    - ``broadcastToMatch(a, b, c)``: all three; returns ``(a, b, c)``.

    PoplibsError when the shapes do not broadcast, naming the dimension.
    """
    a = _tensor(a, "broadcastToMatch: a")
    if len(others) == 1 and not isinstance(others[0], Tensor):
        return _to_shape(a, others[0])
    if len(others) == 1:
        return _pair(a, _tensor(others[0], "broadcastToMatch: b"))
    if len(others) == 2:
        b, c = _tensor(others[0], "broadcastToMatch: b"), _tensor(others[1], "broadcastToMatch: c")
        a, b = _pair(a, b)
        b, c = _pair(b, c)
        c, a = _pair(c, a)
        return a, b, c
    raise PoplibsArgumentError("broadcastToMatch takes (a, shape), (a, b) or (a, b, c)")


def canBroadcastToMatch(a: Tensor, b: Tensor) -> bool:
    """Whether ``broadcastToMatch(a, b)`` would succeed."""
    a, b = _tensor(a, "canBroadcastToMatch: a"), _tensor(b, "canBroadcastToMatch: b")
    sa, sb = a.shape(), b.shape()
    rank = max(len(sa), len(sb))
    sa, sb = [1] * (rank - len(sa)) + sa, [1] * (rank - len(sb)) + sb
    return all(x == y or x == 1 or y == 1 for x, y in zip(sa, sb))


def createBroadcastOperand(graph: Graph, fullTensor: Tensor, type: Any, dim: int,  # noqa: A002 (PopLibs' name)
                           ditherMapping: bool = False, debugContext: Any = "") -> Tensor:
    """A new 1-D tensor of ``fullTensor.dim(dim)`` elements of ``type`` mapped like the full
    tensor: element i goes on (one of) the tiles holding index i of dimension ``dim`` of
    ``fullTensor``, so an operation between the full tensor and the operand broadcast along the
    other dimensions (a bias, a scale) needs little exchange. Elements several tiles want are
    shared between them in grains of the data path width; an operand against a full tensor with
    no elements is mapped linearly. ``ditherMapping`` moves the whole mapping on by an offset from
    a hash of the full tensor's shape, so operands of different layers spread over tiles."""
    what = "createBroadcastOperand"
    full = tensorArgument(graph, fullTensor, f"{what}: fullTensor")
    type_ = asType(type)
    if isinstance(dim, (bool, np.bool_)) or not isinstance(dim, (int, np.integer)) \
            or not 0 <= dim < full.rank():
        raise PoplibsArgumentError(f"{what}: dim {dim!r:.20} is not a dimension of tensor '{full.name}' of "
                                   f"rank {full.rank()}")
    if not isinstance(ditherMapping, (bool, np.bool_)):
        raise PoplibsArgumentError(f"{what}: ditherMapping must be a bool, got {ditherMapping!r:.40}")
    di = PoplibsOpDebugInfo(debugContext, {"fullTensor": full, "type": type_, "dim": int(dim),
                                           "ditherMapping": bool(ditherMapping)}, what)
    target = graph.getTarget()
    n = full.dim(dim)
    out = graph.addVariable(type_, [n], di.getPathName() or f"{full.name}.broadcastOperand")
    num_tiles = target.getNumTiles()
    tracker = TensorUseTracker(num_tiles)
    if full.numElements():
        begin, end, tiles = graph.tile_intervals(full.dimRoll(int(dim), full.rank() - 1))
        wanted: dict[int, list[tuple[int, int]]] = {}
        for b, e, tile in zip(begin.tolist(), end.tolist(), tiles.tolist()):
            regions = wanted.setdefault(tile, [])
            if e - b >= n:
                regions.append((0, n))
                continue
            rb, re = b % n, e % n
            if rb < re:
                regions.append((rb, re))
            else:
                regions.append((rb, n))
                if re:
                    regions.append((0, re))
        for tile, regions in sorted(wanted.items()):
            covered = np.zeros(n, bool)
            for rb, re in regions:
                covered[rb:re] = True
            edges = np.flatnonzero(np.diff(np.concatenate(([0], covered.astype(np.int8), [0]))))
            pieces = [out.slice(int(lo), int(hi)) for lo, hi in zip(edges[::2], edges[1::2])]
            if pieces:
                tracker.add(graph, tile, pieces[0] if len(pieces) == 1 else concat(pieces))
    if tracker.empty():
        mapTensorLinearly(graph, out)
    else:
        grain = max(1, target.getDataPathWidth() // (8 * target.getTypeSize(type_)))
        tracker.mapTensorsByUse(graph, grain, 0, False,
                                TensorUseTracker.MappingMethod.ConstrainMappingToUsedTiles)
    if ditherMapping and n:
        offset = chooseMappingOffset(num_tiles, full.shape())
        begin, end, tiles = graph.tile_intervals(out)
        moved = _tiles_for(num_tiles, num_tiles, offset, True)[tiles]
        graph.map_intervals(out, begin, end, moved)
    di.addOutput(out)
    return out

