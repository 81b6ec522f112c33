"""A matmul plan's blocks as numpy arrays, and the flat ranges of the operands they cover.

The block products, the reduction and the mappings of a product are built from these arrays
in bulk (one ``Graph.add_vertices`` per compute set, one mapping call per tensor), with no
Python work per block or per row of a block.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from poplar_py.regions import expand_ranges

from .plan import MatMulPlan

_I64 = np.int64


def _parts(size: int, split: int) -> tuple[np.ndarray, np.ndarray]:
    """``plan.ranges(size, split, i)`` for every ``i``: (begins, ends)."""
    block = -(-size // split) if split else 0
    index = np.arange(split, dtype=_I64)
    return np.minimum(index * block, size), np.minimum((index + 1) * block, size)


@dataclass(frozen=True)
class Blocks:
    """The non-empty blocks ``A[m0:m1, k0:k1] @ B[k0:k1, n0:n1]`` of a plan, in the order
    (group, im, jn, ik), each with the tile that computes it."""

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

    @staticmethod
    def of(plan: MatMulPlan) -> Blocks:
        shape = (plan.groups, plan.splitM, plan.splitN, plan.splitK)
        gi, im, jn, ik = (a.ravel() for a in np.indices(shape, dtype=_I64))
        (mb, me), (nb, ne), (kb, ke) = (_parts(size, split) for size, split in
                                        ((plan.m, plan.splitM), (plan.n, plan.splitN), (plan.k, plan.splitK)))
        keep = (me[im] > mb[im]) & (ne[jn] > nb[jn])
        gi, im, jn, ik = gi[keep], im[keep], jn[keep], ik[keep]
        return Blocks(gi, im, jn, ik, mb[im], me[im], nb[jn], ne[jn], kb[ik], ke[ik],
                      plan.tile(gi, im, jn, ik))

    def __len__(self) -> int:
        return int(self.tile.size)

    def select(self, keep: np.ndarray) -> Blocks:
        return Blocks(*(getattr(self, f)[keep] for f in self.__dataclass_fields__))


def operandBlocks(plan: MatMulPlan, lhs: bool) -> tuple[np.ndarray, ...]:
    """``(group, r0, r1, c0, c1, tile)`` of the blocks of a ``[g, m, k]`` LHS (``[g, k, n]`` RHS)
    on the tiles of the plan's first N-split (first M-split) that multiply them."""
    outer_size, outer_split = (plan.m, plan.splitM) if lhs else (plan.n, plan.splitN)
    gi, io, ik = (a.ravel() for a in np.indices((plan.groups, outer_split, plan.splitK), dtype=_I64))
    (ob, oe), (kb, ke) = _parts(outer_size, outer_split), _parts(plan.k, plan.splitK)
    zero = np.zeros_like(io)
    if lhs:
        return gi, ob[io], oe[io], kb[ik], ke[ik], plan.tile(gi, io, zero, ik)
    return gi, kb[ik], ke[ik], ob[io], oe[io], plan.tile(gi, zero, io, ik)


def blockRanges(start: np.ndarray, pitch: np.ndarray | int, width: np.ndarray, first: np.ndarray | int,
                last: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Flat ranges holding elements ``[first, last)`` (in row-major order) of 2-D blocks whose row
    ``r`` is ``[start + r * pitch, start + r * pitch + width)``: (owner block, row within the
    block, begin, end) per piece, blocks in order, rows in order."""
    width = np.asarray(width, _I64)
    first = np.broadcast_to(np.asarray(first, _I64), width.shape)
    last = np.asarray(last, _I64)
    step = np.maximum(width, 1)
    r0 = first // step
    r1 = np.where(width > 0, -(-last // step), r0)
    owner, row = expand_ranges(r0, np.maximum(r1 - r0, 0))
    w = width[owner]
    lo = np.maximum(first[owner] - row * w, 0)
    hi = np.minimum(last[owner] - row * w, w)
    base = np.asarray(start, _I64)[owner] + row * np.broadcast_to(np.asarray(pitch, _I64), width.shape)[owner]
    return owner, row, base + lo, base + hi


def rowRanges(start: np.ndarray, pitch: np.ndarray | int, rows: np.ndarray, width: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`blockRanges` of whole blocks of ``rows`` rows: one range per row."""
    width = np.asarray(width, _I64)
    return blockRanges(start, pitch, width, 0, np.asarray(rows, _I64) * width)


def matrixBlockRanges(group: np.ndarray, r0: np.ndarray, r1: np.ndarray, c0: np.ndarray, c1: np.ndarray,
                      shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`rowRanges` of the blocks ``[group, r0:r1, c0:c1]`` of a flattened ``[g, *shape]`` tensor."""
    rows, cols = shape
    return rowRanges(group * rows * cols + r0 * cols + c0, cols, r1 - r0, c1 - c0)


def tileLists(begin: np.ndarray, end: np.ndarray, tiles: np.ndarray, num_tiles: int
              ) -> list[list[tuple[int, int]]]:
    """``setTileMapping``'s per-tile interval lists for ranges ``[begin, end)`` on ``tiles``."""
    mapping: list[list[tuple[int, int]]] = [[] for _ in range(num_tiles)]
    for b, e, t in zip(begin.tolist(), end.tolist(), tiles.tolist()):
        mapping[t].append((b, e))
    return mapping
