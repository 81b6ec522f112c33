"""A matmul plan's blocks as numpy arrays, and the flat ranges of the tensors they cover.

The block products, the reduction and the mappings of a product are built from these arrays
in bulk (one ``Graph.add_vertices`` per compute set, one ``Graph.map_intervals`` per tensor),
with no Python work per block or per row of a block.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import NamedTuple

import numpy as np

from poplar_py import Graph, Tensor, Type, concat
from poplar_py.builder import box_views as boxes
from poplar_py.builder.bulk_vertices import Rows
from poplar_py.regions.arrays import exclusive_cumsum, expand_ranges
from poplar_py.regions.runs import Runs

from .plan import MatMulPlan

_I64 = np.int64


class Pieces(NamedTuple):
    """Flat ranges ``[begin, end)`` of a tensor, each a piece of row ``row`` of block ``owner``
    (blocks in order, each block's rows in order)."""

    owner: np.ndarray
    row: np.ndarray
    begin: np.ndarray
    end: np.ndarray

    def vector_rows(self, n: int) -> Rows:
        """The rows of a vector field of ``n`` vertices, vertex ``v`` taking block ``v``."""
        return Rows(np.ones(n, _I64), self.begin, self.end, self.owner)

    def list_rows(self, per_vertex: np.ndarray) -> Rows:
        """The rows of a list field, vertex ``v`` taking the ``per_vertex[v]`` rows of block ``v``."""
        return Rows(per_vertex, self.begin, self.end, exclusive_cumsum(per_vertex)[self.owner] + self.row)


def block_pieces(start: np.ndarray, pitch: np.ndarray | int, width: np.ndarray, first: np.ndarray | int,
                 last: np.ndarray) -> Pieces:
    """The pieces holding elements ``[first, last)`` (in row-major order) of 2-D blocks whose row
    ``r`` is ``[start + r * pitch, start + r * pitch + width)``."""
    width = np.asarray(width, _I64)
    first = np.broadcast_to(np.asarray(first, _I64), width.shape)
    last = np.asarray(last, _I64)
    step = np.maximum(width, 1)
    r0 = first // step
    r1 = np.where(width > 0, -(-last // step), r0)  # a block of empty rows has no pieces
    owner, row = expand_ranges(r0, np.maximum(r1 - r0, 0))
    w = width[owner]
    base = np.asarray(start, _I64)[owner] + row * np.broadcast_to(np.asarray(pitch, _I64), width.shape)[owner]
    return Pieces(owner, row, base + np.maximum(first[owner] - row * w, 0),
                  base + np.minimum(last[owner] - row * w, w))


def row_pieces(start: np.ndarray, pitch: np.ndarray | int, rows: np.ndarray, width: np.ndarray) -> Pieces:
    """:func:`block_pieces` of whole blocks of ``rows`` rows: one piece per row."""
    width = np.asarray(width, _I64)
    return block_pieces(start, pitch, width, 0, np.asarray(rows, _I64) * width)


def matrix_pieces(group: np.ndarray, r0: np.ndarray, r1: np.ndarray, c0: np.ndarray, c1: np.ndarray,
                  shape: tuple[int, int]) -> Pieces:
    """:func:`row_pieces` of the blocks ``[group, r0:r1, c0:c1]`` of a flattened ``[g, *shape]`` tensor."""
    rows, cols = shape
    return row_pieces(group * rows * cols + r0 * cols + c0, cols, r1 - r0, c1 - c0)


def _parts(size: int, split: int) -> tuple[np.ndarray, np.ndarray]:
    """``plan.ranges(size, split, i)`` for every ``i``: (begins, ends)."""
    block = -(-size // split)
    index = np.arange(split, dtype=_I64)
    return np.minimum(index * block, size), np.minimum((index + 1) * block, size)


@dataclass(frozen=True)
class Blocks:
    """The non-empty blocks ``A[group, m0:m1, k0:k1] @ B[group, k0:k1, n0:n1]`` of a plan, in the
    order (group, im, jn, ik), each with the tile that computes it and the index of its output
    block (the non-empty blocks of the output, in order)."""

    group: np.ndarray
    im: np.ndarray
    jn: np.ndarray
    ik: np.ndarray
    m0: np.ndarray
    m1: np.ndarray
    n0: np.ndarray
    n1: np.ndarray
    k0: np.ndarray
    k1: np.ndarray
    tile: np.ndarray
    output: np.ndarray

    @staticmethod
    def of(plan: MatMulPlan) -> Blocks:
        shape = (plan.groups, plan.splitM, plan.splitN, plan.splitK)
        gi, im, jn, ik = (a.ravel() for a in np.indices(shape, dtype=_I64))
        (mb, me), (nb, ne), (kb, ke) = (_parts(plan.m, plan.splitM), _parts(plan.n, plan.splitN),
                                        _parts(plan.k, plan.splitK))
        keep = (me[im] > mb[im]) & (ne[jn] > nb[jn])
        gi, im, jn, ik = gi[keep], im[keep], jn[keep], ik[keep]
        return Blocks(gi, im, jn, ik, mb[im], me[im], nb[jn], ne[jn], kb[ik], ke[ik],
                      plan.tile(gi, im, jn, ik), np.cumsum(ik == 0) - 1)

    def __len__(self) -> int:
        return int(self.tile.size)

    def select(self, keep: np.ndarray) -> Blocks:
        return Blocks(*(getattr(self, f.name)[keep] for f in fields(self)))

    def lhs(self, plan: MatMulPlan) -> Pieces:
        """Each block's rows of the flattened ``[g, m, k]`` LHS."""
        return matrix_pieces(self.group, self.m0, self.m1, self.k0, self.k1, (plan.m, plan.k))

    def rhs(self, plan: MatMulPlan) -> Pieces:
        """Each block's rows of the flattened ``[g, k, n]`` RHS."""
        return matrix_pieces(self.group, self.k0, self.k1, self.n0, self.n1, (plan.k, plan.n))

    def out(self, plan: MatMulPlan, first: np.ndarray | None = None,
            last: np.ndarray | None = None) -> Pieces:
        """Each block's rows of the flattened ``[g, m, n]`` output; with ``first`` and ``last``,
        only elements ``[first, last)`` of each (flattened) block."""
        width = self.n1 - self.n0
        start = self.group * plan.m * plan.n + self.m0 * plan.n + self.n0
        if first is None:
            return row_pieces(start, plan.n, self.m1 - self.m0, width)
        return block_pieces(start, plan.n, width, first, last)


def block_major_operand(graph: Graph, plan: MatMulPlan, type_: Type, lhs: bool, name: str,
                        spread: bool = False, shape: list[int] | None = None) -> Tensor:
    """A new ``[g, m, k]`` LHS (``[g, k, n]`` RHS) whose blocks each lie contiguous in one variable,
    as PopLibs lays out a created matMul input: a vertex then reads a block as one region, not
    row by row. Each block lies on the tile of the plan's first N-split (first M-split) that
    multiplies it; with ``spread``, in equal shares on all the tiles that multiply it (each sends
    its share to the others once, rather than one tile sending the whole block). ``shape``: the
    view's shape, if not ``[g, m, k]`` (``[g, k, n]``), with as many elements."""
    outer_size, outer_split = (plan.m, plan.splitM) if lhs else (plan.n, plan.splitN)
    readers = (plan.splitN if lhs else plan.splitM) if spread else 1
    (ob, oe), (kb, ke) = _parts(outer_size, outer_split), _parts(plan.k, plan.splitK)
    # per block (group, outer part, K part): its rows and columns of the operand
    gi, io, ik = (a.ravel() for a in np.indices((plan.groups, outer_split, plan.splitK), dtype=_I64))
    if lhs:
        rows, cols = (ob[io], oe[io]), (kb[ik], ke[ik])
    else:
        rows, cols = (kb[ik], ke[ik]), (ob[io], oe[io])
    flat, start, size, tensor = _block_major(graph, type_, plan.groups, gi, rows, cols, name, shape)
    # share j of each block on the tile of its j-th reader
    block, share = (a.ravel() for a in np.indices((size.size, readers), dtype=_I64))
    reader = plan.tile(gi[block], io[block], share, ik[block]) if lhs else \
        plan.tile(gi[block], share, io[block], ik[block])
    _map_shares(graph, flat, start[block], size[block], share, readers, reader)
    return tensor


def block_major_output(graph: Graph, plan: MatMulPlan, blocks: Blocks, type_: Type, name: str) -> Tensor:
    """A new ``[g, m, n]`` product output whose blocks each lie contiguous in one variable, as
    PopLibs lays out a product's output (a tile's block is one region, not one per row), mapped as
    the product writes it: block ``b``'s K-split ``ik`` reduces elements ``[ik * size // splitK,
    (ik + 1) * size // splitK)`` of it on its tile (without K-splits: the whole block)."""
    heads = blocks.select(blocks.ik == 0)
    flat, start, size, view = _block_major(graph, type_, plan.groups, heads.group, (heads.m0, heads.m1),
                                           (heads.n0, heads.n1), name)
    _map_shares(graph, flat, start[blocks.output], size[blocks.output], blocks.ik, plan.splitK, blocks.tile)
    return view


def share_of(size: np.ndarray, part: np.ndarray, parts: int) -> tuple[np.ndarray, np.ndarray]:
    """Elements ``[first, last)`` of share ``part`` of ``parts`` near-equal shares of ``size``."""
    return size * part // parts, size * (part + 1) // parts


def _map_shares(graph: Graph, flat: Tensor, start: np.ndarray, size: np.ndarray, part: np.ndarray, parts: int,
                tiles: np.ndarray) -> None:
    """Map share ``part[k]`` of ``parts`` of the ``size[k]`` elements of ``flat`` from ``start[k]``
    on ``tiles[k]`` (empty shares map nothing)."""
    first, last = share_of(size, part, parts)
    full = np.flatnonzero(last > first)
    graph.map_intervals(flat, start[full] + first[full], start[full] + last[full], tiles[full])


def _block_major(graph: Graph, type_: Type, groups: int, gi: np.ndarray, rows: tuple[np.ndarray, np.ndarray],
                 cols: tuple[np.ndarray, np.ndarray], name: str, shape: list[int] | None = None
                 ) -> tuple[Tensor, np.ndarray, np.ndarray, Tensor]:
    """One variable holding the blocks ``[gi, r0:r1, c0:c1]`` (in order, tiling the matrix) one
    after another: the variable, each block's start and size in it, and the ``[groups, rows,
    cols]`` view of it, or of ``shape`` (its runs from numpy: a row of each block, in row-major
    order)."""
    (r0, r1), (c0, c1) = rows, cols
    width = c1 - c0
    size = (r1 - r0) * width
    start = exclusive_cumsum(size)
    flat = graph.addVariable(type_, [int(size.sum())], name)
    block, row = expand_ranges(r0, np.maximum(r1 - r0, 0))
    order = np.lexsort((c0[block], row, gi[block]))  # row-major: group, row, then column
    block, row = block[order], row[order]
    runs = Runs.make(np.full(block.size, int(flat.runs().var[0]), _I64),
                     start[block] + (row - r0[block]) * width[block], width[block], np.ones(block.size, _I64))
    dims = tuple(shape) if shape is not None else (groups, int(r1.max(initial=0)), int(c1.max(initial=0)))
    view = Tensor.from_boxes(flat.variables, type_, dims, boxes.from_runs(runs, dims), name)
    return flat, start, size, view


@dataclass(frozen=True)
class Partials:
    """One ``[splitK, rows, cols]`` variable of partial sums per output block (a reduce vertex's
    rows of partials are then one strided view of it), flattened and concatenated in ``tensor``."""

    tensor: Tensor
    base: np.ndarray  # per output block, where its variable starts in ``tensor``
    size: np.ndarray  # per output block, its elements per K-split

    @staticmethod
    def add(graph: Graph, plan: MatMulPlan, blocks: Blocks, name: str) -> Partials:
        """The variables (not mapped) of the output blocks of ``blocks``, in order."""
        heads = blocks.ik == 0
        rows, cols = (blocks.m1 - blocks.m0)[heads], (blocks.n1 - blocks.n0)[heads]
        variables = [graph.addVariable(plan.partialsType, [plan.splitK, r, c], f"{name}/partials").flatten()
                     for r, c in zip(rows.tolist(), cols.tolist())]
        size = rows * cols
        return Partials(concat(variables), exclusive_cumsum(size * plan.splitK), size)

    def products(self, blocks: Blocks) -> Pieces:
        """The rows of ``tensor`` that take each block's (partial) product."""
        size, cols = self.size[blocks.output], blocks.n1 - blocks.n0
        return row_pieces(self.base[blocks.output] + blocks.ik * size, cols, blocks.m1 - blocks.m0, cols)

    def extents(self, blocks: Blocks) -> tuple[np.ndarray, np.ndarray]:
        """Where each block's (partial) product lies in ``tensor``, whole: ``(begin, end)``."""
        begin = self.base[blocks.output] + blocks.ik * self.size[blocks.output]
        return begin, begin + self.size[blocks.output]

    def shares(self, blocks: Blocks, first: np.ndarray, last: np.ndarray, split_k: int) -> Pieces:
        """Per block, elements ``[first, last)`` of each of its output block's ``split_k`` partial
        products: one row each."""
        start = self.base[blocks.output] + first
        return row_pieces(start, self.size[blocks.output], np.full(len(blocks), split_k), last - first)
