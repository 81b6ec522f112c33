"""GCL's collective balanced reorder (``gcl/CollectiveBalancedReorder.hpp``): the layout replicated
tensor sharding gives a tensor so that every replica's shard is spread evenly over the tiles.

A reduce-scatter of a tensor as it is laid out hands replica r the r-th of its R chunks, which
lives on a few tiles only. The balanced reorder instead cuts each tile's elements of the
reference tensor (in their order in the tensor) into R equal parts, padded at the end to a
multiple of R: part r of every tile goes to replica r. A replica's slice is those parts, tile
after tile, so it has ``ceil(n_t / R)`` elements on each tile t, and the collectives (gathered)
tensor is the R replica slices one after another, ``[R, totalElementsPerReplica]``. Every
column of it lies on one tile, so a collective's ring steps over it move data between replicas
only, never between tiles.

On the device the reorder is only views: ``undoRearrangeForCollective`` sees a gathered tensor
in the reference tensor's shape and order, ``rearrangeForCollective`` sees a reference-shaped
tensor in gathered order; copies to and from them are ordinary on-tile copies.
``CollectiveBalancedHostRearrangement`` does the same permutation on host buffers (numpy),
for writing each replica's shard to Streaming Memory and reading it back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from poplar_py import Graph, Interval, Tensor, concat
from poplar_py.checks.arguments import is_int
from poplar_py.debug import debug_name
from poplar_py.errors import InvalidArgumentError, InvalidTileMappingError
from poplar_py.regions.arrays import expand_ranges
from poplar_py.types import Type, asType

from ..poputil import PoplibsArgumentError, PoplibsError, tensorArgument

__all__ = ["CollectiveBalancedHostRearrangement", "CollectiveBalancedReorder"]


class CollectiveBalancedHostRearrangement:
    """The host side of a balanced reorder, as ``gcl::CollectiveBalancedHostRearrangement``:
    ``gatheredToRefSlices`` are the intervals of the gathered tensor (``getNumRearrangedTensorElems``
    elements, R slices of ``totalElementsPerReplica``) holding the reference tensor's elements, in
    the reference tensor's order. Rearranging copies bytes between host buffers only."""

    def __init__(self, replicationFactor: int = 0, totalElementsPerReplica: int = 0,
                 gatheredToRefSlices: Any = ()) -> None:
        what = "CollectiveBalancedHostRearrangement"
        self.replicationFactor = _count(replicationFactor, "replicationFactor", what)
        self.totalElementsPerReplica = _count(totalElementsPerReplica, "totalElementsPerReplica", what)
        self.setGatheredToRefSlices(gatheredToRefSlices)

    def getReplicationFactor(self) -> int:
        return self.replicationFactor

    def setReplicationFactor(self, replicationFactor: int) -> None:
        self.replicationFactor = _count(replicationFactor, "replicationFactor", "setReplicationFactor")

    def getTotalElementsPerReplica(self) -> int:
        return self.totalElementsPerReplica

    def setTotalElementsPerReplica(self, totalElementsPerReplica: int) -> None:
        self.totalElementsPerReplica = _count(totalElementsPerReplica, "totalElementsPerReplica",
                                              "setTotalElementsPerReplica")

    def getGatheredToRefSlices(self) -> list[Interval]:
        return [Interval(b, e) for b, e in zip(self._begin.tolist(), self._end.tolist())]

    def setGatheredToRefSlices(self, slices: Any) -> None:
        try:
            pairs = np.asarray([(int(s[0]), int(s[1])) for s in slices], np.int64).reshape(-1, 2)
        except (TypeError, ValueError, IndexError):
            raise PoplibsArgumentError(f"CollectiveBalancedHostRearrangement: gatheredToRefSlices must be "
                                       f"intervals (begin, end), got {slices!r:.60}") from None
        if (pairs[:, 0] > pairs[:, 1]).any() or (pairs < 0).any():
            raise PoplibsArgumentError("CollectiveBalancedHostRearrangement: gatheredToRefSlices has an "
                                       "interval with begin > end or a negative bound")
        self._begin, self._end = pairs[:, 0], pairs[:, 1]

    gatheredToRefSlices = property(getGatheredToRefSlices, setGatheredToRefSlices)

    def getNumRearrangedTensorElems(self) -> int:
        """Elements of the gathered tensor: R replica slices."""
        return self.totalElementsPerReplica * self.replicationFactor

    def getNumReferenceElems(self) -> int:
        """Elements of the reference tensor the intervals cover."""
        return int((self._end - self._begin).sum())

    def rearrangeForCollective(self, in_: np.ndarray, out: np.ndarray, elemByteSize: int) -> np.ndarray:
        """Reference order to gathered order: each element of ``in_`` (the reference tensor's
        elements, ``elemByteSize`` bytes each) copied to its place in ``out`` (the gathered tensor,
        ``getNumRearrangedTensorElems`` elements); padding in ``out`` is left as it was. Returns
        ``out``; replica r's shard is then ``out``'s r-th ``totalElementsPerReplica`` elements."""
        src, dst = self._buffers(in_, out, elemByteSize, "rearrangeForCollective", to_gathered=True)
        dst[self._gathered()] = src[:self.getNumReferenceElems()]
        return out

    def undoRearrangeForCollective(self, in_: np.ndarray, out: np.ndarray, elemByteSize: int) -> np.ndarray:
        """Gathered order to reference order: the reference tensor's elements picked from ``in_``
        (the gathered tensor, e.g. every replica's shard one after another) into ``out``; padding
        dropped. Returns ``out``."""
        src, dst = self._buffers(in_, out, elemByteSize, "undoRearrangeForCollective", to_gathered=False)
        dst[:self.getNumReferenceElems()] = src[self._gathered()]
        return out

    def _gathered(self) -> np.ndarray:
        """The gathered index of each reference element."""
        owner, within = expand_ranges(np.zeros(self._begin.size, np.int64), self._end - self._begin)
        return self._begin[owner] + within

    def _buffers(self, in_: Any, out: Any, elemByteSize: Any, what: str, to_gathered: bool
                 ) -> tuple[np.ndarray, np.ndarray]:
        """``in_`` and ``out`` as [elements, elemByteSize] byte arrays (``out`` writing through to the
        caller's array), each checked to hold enough elements."""
        if not is_int(elemByteSize) or elemByteSize < 1:
            raise PoplibsArgumentError(f"{what}: elemByteSize must be a positive integer, got "
                                       f"{elemByteSize!r:.40}")
        size = int(elemByteSize)
        views = []
        for name, a in (("in", in_), ("out", out)):
            if not isinstance(a, np.ndarray) or not a.flags.c_contiguous:
                raise PoplibsArgumentError(f"{what}: {name} must be a C-contiguous numpy array, got "
                                           f"{type(a).__name__}")
            if a.nbytes % size:
                raise PoplibsArgumentError(f"{what}: {name} holds {a.nbytes} bytes, not whole elements of "
                                           f"{size} bytes (elemByteSize)")
            views.append(a.reshape(-1).view(np.uint8).reshape(-1, size))
        if not out.flags.writeable:
            raise PoplibsArgumentError(f"{what}: out is a read-only array")
        gathered, reference = self.getNumRearrangedTensorElems(), self.getNumReferenceElems()
        if self._end.size and int(self._end.max()) > gathered:
            raise PoplibsError(f"{what}: gatheredToRefSlices reach element {int(self._end.max())} of a "
                               f"gathered tensor of {gathered} elements")
        need = {"in": reference if to_gathered else gathered, "out": gathered if to_gathered else reference}
        for name, view in zip(("in", "out"), views):
            if view.shape[0] < need[name]:
                raise PoplibsArgumentError(f"{what}: {name} holds {view.shape[0]} elements of {size} bytes, "
                                           f"needs {need[name]}")
        return views[0], views[1]


class CollectiveBalancedReorder:
    """``CollectiveBalancedReorder(graph, tensor, replicationFactor, debugContext)``, as GCL's: the
    balanced layout of ``tensor`` (the reference tensor, which must be mapped to tiles) for
    ``replicationFactor`` shards, usually the size of the replica group the collectives run on.
    Building it adds nothing to the graph."""

    def __init__(self, graph: Graph, tensor: Tensor, replicationFactor: int, debugContext: Any = "") -> None:
        what = "CollectiveBalancedReorder"
        if not isinstance(graph, Graph):
            raise PoplibsArgumentError(f"{what}: graph must be a poplar Graph, got {type(graph).__name__}")
        tensor = tensorArgument(graph, tensor, f"{what}: tensor")
        if not is_int(replicationFactor) or replicationFactor < 1:
            raise PoplibsArgumentError(f"{what}: replicationFactor must be a positive integer, got "
                                       f"{replicationFactor!r:.40}")
        self._name = debug_name(debugContext, f"{what}: debugContext") or f"{tensor.name}/cbr"
        self._graph, self._reference, self._replicas = graph, tensor, int(replicationFactor)
        try:
            begin, end, tile = graph.tile_intervals(tensor)
        except InvalidTileMappingError as exc:
            raise InvalidTileMappingError(f"{what}: {exc}") from None
        order = np.lexsort((begin, tile))  # each tile's elements in the tensor's order
        begin, end, tile = begin[order], end[order], tile[order]
        owner, position = expand_ranges(begin, end - begin)  # flat index of each element, tile after tile
        elem_tile = tile[owner]
        per_tile = np.bincount(elem_tile, minlength=int(tile.max(initial=-1)) + 1)
        self._per_tile = -(-per_tile // self._replicas)  # each replica's elements on each tile
        offset = np.concatenate(([0], np.cumsum(self._per_tile)))
        total = int(offset[-1])
        first = np.concatenate(([0], np.cumsum(per_tile)))[elem_tile]
        j = np.arange(position.size) - first  # index within the tile's elements
        share = self._per_tile[elem_tile]
        gathered = np.empty(position.size, np.int64)
        gathered[position] = (j // share) * total + offset[elem_tile] + j % share
        self._gathered = gathered  # gathered index of each reference element
        breaks = np.flatnonzero(np.diff(gathered) != 1) + 1
        starts = np.concatenate(([0], breaks)).astype(np.int64)
        stops = np.append(breaks, gathered.size).astype(np.int64)
        slices = np.stack([gathered[starts], gathered[stops - 1] + 1], axis=1) if gathered.size else []
        self._host = CollectiveBalancedHostRearrangement(self._replicas, total, slices)

    def getHostRearrangement(self) -> CollectiveBalancedHostRearrangement:
        """The host side of this reorder, for the shards in Streaming Memory or host buffers."""
        return self._host

    def getNumRearrangedTensorElems(self) -> int:
        """Elements of the collectives tensor: R replica slices."""
        return self._host.getNumRearrangedTensorElems()

    def getReferenceTensor(self) -> Tensor:
        return self._reference

    def getReferenceShape(self) -> list[int]:
        return self._reference.shape()

    def getReferenceTensorClone(self, name: Any = "") -> Tensor:
        """A new tensor shaped and mapped like the reference tensor."""
        return self._graph.clone(self._reference, debug_name(name, "getReferenceTensorClone: name") or
                                 f"{self._name}/refClone")

    def createReplicaSlice(self, type: Any) -> Tensor:  # noqa: A002 (GCL's name)
        """A new 1-D tensor of ``totalElementsPerReplica`` elements of ``type``, a replica's shard:
        a contiguous part on each tile, as many elements as the tile's share of the reference."""
        return self._rows(type, 1, "createReplicaSlice", f"{self._name}/slice")[0]

    def createCollectivesTensor(self, type: Any, debugPrefix: Any = "") -> Tensor:  # noqa: A002
        """A new ``[R, totalElementsPerReplica]`` tensor of ``type``: row r is replica r's slice,
        laid out as ``createReplicaSlice``, so each column lies on one tile."""
        prefix = debug_name(debugPrefix, "createCollectivesTensor: debugPrefix") or self._name
        return self._rows(type, self._replicas, "createCollectivesTensor", f"{prefix}/collectives")

    def undoRearrangeForCollective(self, tensor: Tensor) -> Tensor:
        """A view of ``tensor`` (a collectives tensor, any shape of ``getNumRearrangedTensorElems``
        elements) in the reference tensor's shape and element order; padding left out."""
        flat = self._checked(tensor, "undoRearrangeForCollective", self.getNumRearrangedTensorElems())
        return _view(flat, [(s[0], s[1]) for s in self._host.getGatheredToRefSlices()]).reshape(
            self.getReferenceShape())

    def rearrangeForCollective(self, tensor: Tensor) -> Tensor:
        """A 1-D view of ``tensor`` (shaped as, or with the elements of, the reference tensor) in the
        collectives order, ``getNumRearrangedTensorElems`` elements; each padding place is an
        element of a new variable on its column's tile (never written: it holds no data)."""
        flat = self._checked(tensor, "rearrangeForCollective", self._reference.numElements())
        n, gathered = flat.numElements(), self.getNumRearrangedTensorElems()
        source = np.full(gathered, -1, np.int64)
        source[self._gathered] = np.arange(n)
        padding = np.flatnonzero(source < 0)
        if padding.size:
            pad = self._graph.addVariable(flat.elementType(), [int(padding.size)], f"{self._name}/padding")
            column_tile = np.repeat(np.arange(self._per_tile.size), self._per_tile)
            at = np.arange(padding.size)
            column = padding % self._host.totalElementsPerReplica
            self._graph.map_intervals(pad, at, at + 1, column_tile[column])
            source[padding] = n + at
            flat = concat([flat, pad])
        breaks = np.flatnonzero(np.diff(source) != 1) + 1
        starts = np.concatenate(([0], breaks))
        stops = np.append(breaks, gathered)
        return _view(flat, list(zip(source[starts].tolist(), (source[stops - 1] + 1).tolist())))

    def _rows(self, type_: Any, rows: int, what: str, name: str) -> Tensor:
        try:
            element = type_ if isinstance(type_, Type) else asType(type_)
        except InvalidArgumentError:
            raise PoplibsArgumentError(f"{what}: type must be a poplar element type, got "
                                       f"{type_!r:.40}") from None
        total = self._host.totalElementsPerReplica
        t = self._graph.addVariable(element, [rows, total], name)
        tiles = np.flatnonzero(self._per_tile)
        start = np.concatenate(([0], np.cumsum(self._per_tile)))[tiles] + (np.arange(rows) * total)[:, None]
        end = start + self._per_tile[tiles]
        self._graph.map_intervals(t, start.ravel(), end.ravel(), np.tile(tiles, rows))
        return t

    def _checked(self, tensor: Any, what: str, elements: int) -> Tensor:
        tensor = tensorArgument(self._graph, tensor, f"{what}: tensor")
        if tensor.numElements() != elements:
            raise PoplibsError(f"{what}: tensor '{tensor.name}' has {tensor.numElements()} elements, needs "
                               f"{elements}")
        return tensor.flatten()


def _view(flat: Tensor, intervals: list[tuple[int, int]]) -> Tensor:
    """The elements of ``flat`` in ``intervals``, one after another, as one 1-D view."""
    parts = flat.slices(intervals)
    return concat(parts) if parts else flat.slice(0, 0)


def _count(value: Any, name: str, what: str) -> int:
    if not is_int(value) or value < 0:
        raise PoplibsArgumentError(f"{what}: {name} must be a non-negative integer, got {value!r:.40}")
    return int(value)
