"""Exchange planning: the byte moves a copy makes between (and within) tile memories.

A :class:`CopyPlan` is computed once, when the engine is built, as *pieces*: piece ``k``
moves ``count[k]`` elements of ``size[k]`` bytes, read every ``src_step[k]`` bytes and
written every ``dst_step[k]`` bytes (a contiguous piece is one ``memmove``). It runs
natively (:mod:`native_copy`) over any two memories: tile to tile, host to tile, tile
to host. A plan also records the bytes each tile sends and receives, which the cycle
model charges to the exchange phase.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..regions import exclusive_cumsum, expand_ranges, union, union_grouped
from . import native_copy, threads

_I64 = np.int64
# Below these sizes a copy is not worth handing to several threads.
_MIN_PIECES_PER_THREAD = 4096
_MIN_BYTES_PER_THREAD = 1 << 18


@dataclass(frozen=True)
class TileTraffic:
    """Bytes per tile for one step: sent to / received from other tiles, copied on-tile."""

    bytes_out: np.ndarray
    bytes_in: np.ndarray
    bytes_local: np.ndarray

    @staticmethod
    def empty(num_tiles: int) -> TileTraffic:
        z = np.zeros(num_tiles, dtype=_I64)
        return TileTraffic(z, z, z)

    def __add__(self, other: TileTraffic) -> TileTraffic:
        return TileTraffic(self.bytes_out + other.bytes_out, self.bytes_in + other.bytes_in,
                           self.bytes_local + other.bytes_local)


def traffic(src_tile: np.ndarray, dst_tile: np.ndarray, count: np.ndarray, size: np.ndarray, num_tiles: int,
            src_gid: np.ndarray | None = None, src_gstep: np.ndarray | None = None) -> TileTraffic:
    """Exchange bytes of moving pieces of elements from ``src_tile`` to ``dst_tile``.

    With the source elements given (``src_gid``, ``src_gstep``), an element sent to several
    tiles goes on its tile's bus once (a broadcast).
    """
    nbytes = count * size
    remote = src_tile != dst_tile
    bytes_in = np.bincount(dst_tile[remote], weights=nbytes[remote], minlength=num_tiles)
    bytes_local = np.bincount(dst_tile[~remote], weights=nbytes[~remote], minlength=num_tiles)
    if src_gid is None or src_gstep is None:
        bytes_out = np.bincount(src_tile[remote], weights=nbytes[remote], minlength=num_tiles)
    else:
        bytes_out = _broadcast_bytes(src_tile[remote], count[remote], size[remote], src_gid[remote],
                                     src_gstep[remote], num_tiles)
    return TileTraffic(bytes_out.astype(_I64), bytes_in.astype(_I64), bytes_local.astype(_I64))


def _broadcast_bytes(tile: np.ndarray, count: np.ndarray, size: np.ndarray, gid: np.ndarray,
                     gstep: np.ndarray, num_tiles: int) -> np.ndarray:
    """Bytes each tile sends when every distinct source element is sent once."""
    simple = np.abs(gstep) <= 1
    s_lo = np.where(gstep < 0, gid - count + 1, gid)[simple]
    s_hi = s_lo + np.where(gstep == 0, 1, count)[simple]
    other = np.flatnonzero(~simple)
    owner, within = expand_ranges(np.zeros(other.size, _I64), count[other])
    piece = other[owner]
    e_lo = gid[piece] + within * gstep[piece]
    group = np.concatenate((tile[simple], tile[piece])) * 16 + np.concatenate((size[simple], size[piece]))
    group, lo, hi = union_grouped(group, np.concatenate((s_lo, e_lo)), np.concatenate((s_hi, e_lo + 1)))
    return np.bincount(group // 16, weights=(hi - lo) * (group % 16), minlength=num_tiles)


def align_pieces(a_flat: np.ndarray, a_count: np.ndarray, b_flat: np.ndarray, b_count: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Two cuttings of the flat positions ``[0, n)`` into pieces, cut where either cuts:
    (start, count, piece of a, piece of b) of every resulting piece."""
    n = int(a_count.sum())
    if n == 0:
        z = np.zeros(0, _I64)
        return z, z, z, z
    start = np.union1d(a_flat, b_flat)
    count = np.diff(np.append(start, n))
    ia = np.searchsorted(a_flat, start, side="right") - 1
    ib = np.searchsorted(b_flat, start, side="right") - 1
    return start, count, ia, ib


@dataclass(frozen=True)
class CopyPlan:
    """Pieces of elements to move (see the module docstring)."""

    src: np.ndarray  # byte offset of each piece's first element from the source base
    dst: np.ndarray
    count: np.ndarray
    src_step: np.ndarray
    dst_step: np.ndarray
    size: np.ndarray
    staging: np.ndarray | None  # offsets in a temporary when the copy overwrites its own source
    traffic: TileTraffic

    @staticmethod
    def build(src: np.ndarray, dst: np.ndarray, count: np.ndarray, src_step: np.ndarray, dst_step: np.ndarray,
              size: np.ndarray, traffic_: TileTraffic, same_memory: bool = False) -> CopyPlan:
        """A plan moving these pieces; ``same_memory``: source and destination are one memory,
        so a copy that overwrites what it still has to read goes through a temporary."""
        src, dst, count, src_step, dst_step, size = _joined(src, dst, count, src_step, dst_step, size)
        staging = None
        if same_memory and (count.size > 1 or (src_step != size).any() or (dst_step != size).any()) \
                and _overlap(src, count, src_step, size, dst, dst_step):
            staging = exclusive_cumsum(count * size)
        return CopyPlan(src, dst, count, src_step, dst_step, size, staging, traffic_)

    @property
    def nbytes(self) -> int:
        return int((self.count * self.size).sum())

    def __len__(self) -> int:
        return int(self.count.size)

    def execute(self, src_base: int, dst_base: int) -> None:
        """Run the copy between memories at these addresses."""
        if not len(self):
            return
        if self.staging is None:
            self._run(src_base, dst_base, self.src, self.dst, self.src_step, self.dst_step)
            return
        temp = np.empty(self.nbytes + 8, dtype=np.uint8)
        self._run(src_base, temp.ctypes.data, self.src, self.staging, self.src_step, self.size)
        self._run(temp.ctypes.data, dst_base, self.staging, self.dst, self.size, self.dst_step)

    def _run(self, src_base: int, dst_base: int, src: np.ndarray, dst: np.ndarray, src_step: np.ndarray,
             dst_step: np.ndarray) -> None:
        arrays = (src, dst, self.count, src_step, dst_step, self.size)
        ptrs = [np.ascontiguousarray(a, dtype=_I64).ctypes.data for a in arrays]
        n = len(self)
        big = self.nbytes >= _MIN_BYTES_PER_THREAD
        pieces = threads.split(n, _MIN_PIECES_PER_THREAD) if big else [(0, n)]
        threads.run_all(native_copy.copy_pieces(), [
            (src_base, dst_base, *(p + 8 * a for p in ptrs), b - a) for a, b in pieces])


def _joined(src: np.ndarray, dst: np.ndarray, count: np.ndarray, src_step: np.ndarray, dst_step: np.ndarray,
            size: np.ndarray) -> tuple[np.ndarray, ...]:
    """Neighbouring pieces that are contiguous on both sides and continue each other, as one."""
    if count.size <= 1:
        return src, dst, count, src_step, dst_step, size
    flat = ((src_step == size) & (dst_step == size)) | (count == 1)
    end = count * size
    joins = flat[:-1] & flat[1:] & (size[1:] == size[:-1]) & (src[1:] == src[:-1] + end[:-1]) \
        & (dst[1:] == dst[:-1] + end[:-1])
    if not joins.any():
        return src, dst, count, src_step, dst_step, size
    first = np.flatnonzero(np.concatenate(([True], ~joins)))
    counts = np.add.reduceat(count, first)
    joined = counts != count[first]
    return (src[first], dst[first], counts, np.where(joined, size[first], src_step[first]),
            np.where(joined, size[first], dst_step[first]), size[first])


def _overlap(src: np.ndarray, count: np.ndarray, src_step: np.ndarray, size: np.ndarray, dst: np.ndarray,
             dst_step: np.ndarray) -> bool:
    """Could a destination byte be a source byte? (Byte ranges of the pieces, conservatively.)"""
    def ranges(start: np.ndarray, step: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        last = start + (count - 1) * step
        return union(np.minimum(start, last), np.maximum(start, last) + size)

    a_lo, a_hi = ranges(src, src_step)
    b_lo, b_hi = ranges(dst, dst_step)
    k = np.searchsorted(b_hi, a_lo, side="right")
    inside = k < b_lo.size
    return bool((b_lo[k[inside]] < a_hi[inside]).any())
