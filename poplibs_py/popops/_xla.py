"""Shared pieces of XLA-style gather and scatter: argument checks and window offsets.

Both operations address windows of an operand: window w starts at an index vector (read on
the device) in the *indexed* dims and at 0 in the others, and spans ``window[d]`` elements
of each dim d. The operand is viewed as ``[rows, columns]``, its indexed dims (in the order
of the index vector) flattened into rows and the window's part of the other dims into
columns, so each window is a fixed set of rows: one ``XlaWindowOffsets`` compute set turns
the index vectors into one row offset per (window, row) on the tiles, and a MultiSlice or
MultiUpdate compute set moves the rows' columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from poplar_py import INT, UNSIGNED_INT, Graph, Tensor
from poplar_py import program as prog_

from ..poputil import PoplibsError, splitRegions, templateVertex


def int_list(values: object, what: str, name: str) -> list[int]:
    """``values`` as a list of ints, or PoplibsError naming ``what``."""
    if isinstance(values, (int, np.integer)):
        values = [values]
    try:
        out = [int(v) for v in values]  # type: ignore[union-attr]
    except (TypeError, ValueError) as e:
        raise PoplibsError(f"{name}: {what} must be a list of integers, got {values!r:.40}") from e
    if any(isinstance(v, bool) for v in values):  # type: ignore[union-attr]
        raise PoplibsError(f"{name}: {what} must be a list of integers, got {values!r:.40}")
    return out


def dim_list(values: object, bound: int, what: str, name: str, ordered: bool = True) -> list[int]:
    """Distinct dims in ``[0, bound)`` (in increasing order when ``ordered``), else PoplibsError."""
    dims = int_list(values, what, name)
    if len(set(dims)) != len(dims) or any(not 0 <= d < bound for d in dims) or \
            (ordered and dims != sorted(dims)):
        order = "increasing, " if ordered else ""
        raise PoplibsError(f"{name}: {what} {dims} must be {order}distinct dims in [0, {bound})")
    return dims


def index_vectors(indices: Tensor, indexVectorDim: object, name: str) -> tuple[Tensor, list[int]]:
    """``indices`` as ``[N, K]`` (one index vector a row) and the batch shape (the shape of
    ``indices`` without ``indexVectorDim``; K = 1 when ``indexVectorDim == indices.rank()``)."""
    if indices.elementType() not in (UNSIGNED_INT, INT):
        raise PoplibsError(f"{name}: indices '{indices.name}' must be UNSIGNED_INT or INT, "
                           f"not {indices.elementType()}")
    if isinstance(indexVectorDim, bool) or not isinstance(indexVectorDim, (int, np.integer)) \
            or not 0 <= indexVectorDim <= indices.rank():
        raise PoplibsError(f"{name}: indexVectorDim {indexVectorDim!r} must be in [0, {indices.rank()}] "
                           f"for indices '{indices.name}' of shape {indices.shape()}")
    ivd = int(indexVectorDim)
    if ivd == indices.rank():
        indices = indices.expand([ivd])
    batch = [n for d, n in enumerate(indices.shape()) if d != ivd]
    order = [d for d in range(indices.rank()) if d != ivd] + [ivd]
    n = int(np.prod(batch, dtype=np.int64))
    return indices.dimShuffle(order).reshape([n, indices.dim(ivd)]), batch


@dataclass
class Windows:
    """Windows of ``window`` (one size per operand dim) into ``operand``, started by index
    vectors over ``indexed`` dims (see the module docstring)."""

    operand: Tensor
    indexed: list[int]
    window: list[int]

    @property
    def others(self) -> list[int]:
        return [d for d in range(self.operand.rank()) if d not in self.indexed]

    @property
    def rows_per_window(self) -> int:
        return int(np.prod([self.window[d] for d in self.indexed], dtype=np.int64))

    @property
    def columns(self) -> int:
        return int(np.prod([self.window[d] for d in self.others], dtype=np.int64))

    def rows_view(self) -> Tensor:
        """The operand as ``[rows, columns]`` (the window's part of the other dims only)."""
        t = self.operand
        for d in self.others:
            t = t.slice(0, self.window[d], d)
        rows = int(np.prod([t.dim(d) for d in self.indexed], dtype=np.int64))
        return t.dimShuffle(self.indexed + self.others).reshape([rows, self.columns])

    def to_rows(self, w: Tensor) -> Tensor:
        """``[N, *window]`` windows (operand dim order) as ``[N * rows_per_window, 1, columns]``."""
        n = w.dim(0)
        perm = [0] + [1 + d for d in self.indexed + self.others]
        return w.dimShuffle(perm).reshape([n * self.rows_per_window, 1, self.columns])

    def from_rows(self, r: Tensor, n: int) -> Tensor:
        """The inverse of ``to_rows``: ``[n, *window]`` in operand dim order."""
        order = self.indexed + self.others
        t = r.reshape([n] + [self.window[d] for d in order])
        return t.dimShuffle([0] + [1 + order.index(d) for d in range(len(order))])

    def offsets(self, graph: Graph, index_rows: Tensor, clamp: bool, prog: prog_.Sequence,
                name: str) -> Tensor:
        """A new ``[N * rows_per_window, 1]`` UNSIGNED_INT tensor of row offsets, computed on
        the tiles from the ``[N, K]`` index vectors: XlaWindowOffsets vertices, the windows
        split evenly over the tiles (one vertex per tile). A window that does not fit is
        clamped (``clamp``) or gets offsets 0xFFFFFFFF, which the update vertices skip."""
        shape = self.operand.shape()
        strides = [int(np.prod([shape[e] for e in self.indexed[j + 1:]], dtype=np.int64))
                   for j in range(len(self.indexed))]
        limits = [shape[d] - self.window[d] for d in self.indexed]
        within = np.zeros(1, np.int64)
        if self.indexed:
            grid = np.indices([self.window[d] for d in self.indexed]).reshape(len(self.indexed), -1)
            within = (np.asarray(strides, np.int64)[:, None] * grid).sum(0)
        n, m = index_rows.dim(0), self.rows_per_window
        out = graph.addVariable(UNSIGNED_INT, [n * m, 1], f"{name}/offsets")
        if n * m == 0:
            return out
        vertex = templateVertex("popops::XlaWindowOffsets", index_rows.elementType())
        cs = graph.addComputeSet(f"{name}/offsets")
        for tile, part in enumerate(splitRegions([(0, n)], 1, graph.getTarget().getNumTiles())):
            for iv in part:
                dst = out.slice(iv.begin() * m, iv.end() * m, 0).flatten()
                graph.setTileMapping(dst, tile)
                src = index_rows.slice(iv.begin(), iv.end(), 0).flatten()
                v = graph.addVertex(cs, vertex, {"indices": src, "offsets": dst})
                graph.setInitialValue(v["limits"], np.asarray(limits, np.uint32))
                graph.setInitialValue(v["strides"], np.asarray(strides, np.uint32))
                graph.setInitialValue(v["windowOffsets"], np.asarray(within, np.uint32))
                graph.setInitialValue(v["clamp"], int(clamp))
                graph.setTileMapping(v, tile)
        prog.add(prog_.Execute(cs))
        return out


def check_window(operand: Tensor, window: Sequence[int], what: str, name: str) -> None:
    """Each window size must fit its operand dim."""
    if any(not 0 <= w <= n for w, n in zip(window, operand.shape())):
        raise PoplibsError(f"{name}: {what} {list(window)} does not fit operand '{operand.name}' "
                           f"of shape {operand.shape()}")
