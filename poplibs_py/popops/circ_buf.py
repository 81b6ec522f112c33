"""popops CircBuf (CircBuf.hpp): a circular buffer of tensors on the tiles.

The history is one ``[grains, size, 4]`` variable: each entry is flattened, padded to whole
grains of 4 elements (64 bits of halves) and its grains spread over the tiles, an entry's
grain g on the tile of every other entry's grain g. The index, an UNSIGNED_INT on tile 0
starting at 0, is stepped by a ``CircBufIncrIndex`` vertex before each ``add`` writes the
entry there (a dynamicUpdate); ``prev(i)`` has a ``CircOffset`` vertex compute
``(index + size - i) mod size`` and dynamically slices that entry out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from poplar_py import UNSIGNED_INT, Graph, Interval, Tensor
from poplar_py import program as prog_
from poplar_py.debug import debug_name

from ..poputil import PoplibsError, sequenceArgument, splitRegions
from .dynamic_slice import dynamicSlice, dynamicUpdate
from .pad import pad
from .perf_estimation import registerDefaultEstimator
from .slice_cycles import constantEstimator

__all__ = ["CircBuf"]

GRAIN = 4  # elements: 64 bits of halves a load


class CircBuf:
    """``CircBuf(graph, dataType, size, shape, debugContext="")``: room for ``size`` tensors of
    ``shape``; ``add`` appends one (overwriting the oldest once full), ``prev(i)`` reads the
    one added ``i`` adds ago (``prev(0)`` the latest)."""

    def __init__(self, graph: Graph, dataType: Any, size: int, shape: Sequence[int],
                 debugContext: Any = "") -> None:
        name = debug_name(debugContext, "CircBuf: debugContext") or "CircBuf"
        if int(size) < 1:
            raise PoplibsError(f"CircBuf '{name}': size must be at least 1, not {size}")
        self.graph = graph
        self._size = int(size)
        self._shape = [int(s) for s in shape]
        n = math.prod(self._shape)
        grains = -(-n // GRAIN)
        self._pad = grains * GRAIN - n
        self._hist = graph.addVariable(dataType, [grains, self._size, GRAIN], name)
        for tile, part in enumerate(splitRegions([(0, grains)], 1, graph.getTarget().getNumTiles())):
            for iv in part:
                graph.setTileMapping(self._hist.slice(iv.begin(), iv.end(), 0), tile)
        self._index = graph.addVariable(UNSIGNED_INT, [1], f"{name}/CircBufIndex")
        graph.setInitialValue(self._index[0], 0)
        graph.setTileMapping(self._index, 0)
        self._name = name

    def size(self) -> int:
        """The number of entries."""
        return self._size

    def getIndex(self) -> Tensor:
        """The ``[1]`` UNSIGNED_INT index of the latest entry (0 before the first add)."""
        return self._index

    def getTileMapping(self) -> list[list[Interval]]:
        """The tile mapping of one entry as prev returns it before unpadding (``[grains, 1, 4]``)."""
        return self.graph.getTileMapping(self._hist.slice(0, 1, 1))

    def prev(self, i: int, seq: prog_.Sequence, debugContext: Any = "") -> Tensor:
        """A new tensor of ``shape``: the entry added ``i`` adds ago (``i < size``). One
        compute set for the offset, then a dynamicSlice on the tiles holding the history."""
        name = debug_name(debugContext, "CircBuf.prev: debugContext") or f"{self._name}/prev"
        seq = sequenceArgument(seq, "CircBuf.prev: seq")
        if not 0 <= int(i) < self._size:
            raise PoplibsError(f"CircBuf.prev: i must be in [0, {self._size}), not {i}")
        index = self.graph.addVariable(UNSIGNED_INT, [1], f"{name}/Offset")
        self.graph.setTileMapping(index, 0)
        cs = self.graph.addComputeSet(f"{name}/CircBufPrev")
        registerDefaultEstimator(self.graph, "popops::CircOffset", constantEstimator(10))
        v = self.graph.addVertex(cs, "popops::CircOffset", {"indexIn": self._index[0], "indexOut": index[0]})
        self.graph.setInitialValue(v["hSize"], self._size)
        self.graph.setInitialValue(v["offset"], self._size - int(i))
        self.graph.setTileMapping(v, 0)
        seq.add(prog_.Execute(cs))
        t = dynamicSlice(self.graph, self._hist, index, [1], [1], seq, name)
        return t.flatten().slice(0, t.numElements() - self._pad).reshape(self._shape)

    def add(self, t: Tensor, seq: prog_.Sequence, debugContext: Any = "") -> None:
        """Step the index (a ``CircBufIncrIndex`` vertex on tile 0) and write ``t`` there (a
        dynamicUpdate on the tiles holding the history)."""
        name = debug_name(debugContext, "CircBuf.add: debugContext") or f"{self._name}/add"
        seq = sequenceArgument(seq, "CircBuf.add: seq")
        type_ = self._hist.elementType()
        if not isinstance(t, Tensor) or t.shape() != self._shape or t.elementType() != type_:
            raise PoplibsError(f"CircBuf.add: t must be a {type_} tensor of shape {self._shape}")
        cs = self.graph.addComputeSet(f"{name}/CircBufSet")
        registerDefaultEstimator(self.graph, "popops::CircBufIncrIndex", constantEstimator(8))
        v = self.graph.addVertex(cs, "popops::CircBufIncrIndex", {"index": self._index[0]})
        self.graph.setInitialValue(v["hSize"], self._size)
        self.graph.setTileMapping(v, 0)
        seq.add(prog_.Execute(cs))
        padded = pad(self.graph, t.flatten(), [0], [self._pad]) if self._pad else t.flatten()
        dynamicUpdate(self.graph, self._hist, padded.reshape([self._hist.dim(0), 1, GRAIN]), self._index,
                      [1], [1], seq, name)
