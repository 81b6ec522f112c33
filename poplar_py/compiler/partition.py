"""Pass (runs over MPI ranks): which rank holds which tiles, and every copy plan cut by rank; with
how many ranks the launcher started, the kinds of move a plan makes and the digest ranks compare.

Under MPI each of K ranks holds the memories of one contiguous block
of the device's tiles: whole IPUs when the device has at least K, else an even split of the
tiles. In a replicated graph that is R/K whole replicas per rank when K divides R; a replica's
plan is cut here only for a replica whose tiles several ranks hold, shifted to its memories. Tile
buffers lie back to back in the arena, so a rank's tiles are one byte range of it, and which
rank holds a byte is one ``searchsorted``. A copy plan's pieces are cut where they cross a
rank's range (a contiguous piece at the boundary, any other element by element), then:

* tile to tile (:class:`RankCopy`): pieces within the rank run as before; those that leave it
  are packed, in plan order, into one send buffer per destination rank, and those that arrive
  are unpacked from the receive buffer after one ``Alltoallv``;
* host to tiles (:class:`HostScatter`): each rank writes only its own pieces;
* tiles to host (:class:`HostGather`): each rank packs its own pieces, and after one
  ``Allgatherv`` every rank unpacks all of them into its host buffer.

Plans are numpy only: :mod:`poplar_py.runtime.mpi_world` runs them.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..regions.arrays import exclusive_cumsum
from .exchange import CopyPlan, SharedGather, TileTraffic

_I64 = np.int64
_NONE = TileTraffic.empty(0)
SRC, DST = 0, 1  # the side of a piece: its source or its destination

#: environment variables by which MPI launchers (MPICH's Hydra, Open MPI, Slurm's srun) give
#: the number of ranks, and this process's rank
LAUNCH_SIZE = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_STEP_NUM_TASKS")
LAUNCH_RANK = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID")


def _launch_value(names: tuple[str, ...], default: int) -> int:
    for name in names:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return default


def launched_ranks() -> int:
    """How many ranks an MPI launcher started (1 without one): read from the environment, so
    that a program run without mpiexec never imports mpi4py."""
    return _launch_value(LAUNCH_SIZE, 1)


def launched_rank() -> int:
    """This process's rank, as the MPI launcher gave it (0 without one)."""
    return _launch_value(LAUNCH_RANK, 0) if launched_ranks() > 1 else 0


#: the moves a plan makes: tile to tile, host to tiles, tiles to host
COPY, SCATTER, GATHER = "copy", "scatter", "gather"
#: a plan a step runs: its kind of move, the plan, and whether it runs on every replica's
#: memories (else it spans the device: a CrossReplicaCopy)
Move = tuple[str, Any, bool]


def ir_digest(parts: list[Any]) -> str:
    """A hash of what the ranks must agree on (arrays by their bytes, the rest by repr)."""
    h = hashlib.sha256()
    for p in parts:
        h.update(np.ascontiguousarray(p).tobytes() if isinstance(p, np.ndarray) else repr(p).encode())
    return h.hexdigest()


@dataclass(frozen=True)
class RankBlocks:
    """The tiles and arena bytes each rank holds: rank r has tiles ``tiles[r]:tiles[r + 1]``,
    bytes ``bytes[r]:bytes[r + 1]``."""

    rank: int
    tiles: np.ndarray
    bytes: np.ndarray

    @property
    def size(self) -> int:
        return int(self.tiles.size - 1)

    def rank_of(self, offsets: np.ndarray) -> np.ndarray:
        """The rank holding each arena byte offset."""
        return np.clip(np.searchsorted(self.bytes, offsets, side="right") - 1, 0, self.size - 1)

    def tile_ranks(self) -> np.ndarray:
        """The rank of every tile."""
        return np.repeat(np.arange(self.size), np.diff(self.tiles))

    def own_tiles(self) -> np.ndarray:
        """Per tile: whether this rank holds it."""
        return self.tile_ranks() == self.rank

    def own_bytes(self) -> tuple[int, int]:
        return int(self.bytes[self.rank]), int(self.bytes[self.rank + 1])


def rank_blocks(rank: int, ranks: int, ipus: int, tiles_per_ipu: int, tile_base: np.ndarray) -> RankBlocks:
    """Rank ``rank`` of ``ranks``: whole IPUs when there are at least as many IPUs as ranks,
    else an even split of all tiles. ``tile_base``: each tile's first arena byte, and the end."""
    if ipus >= ranks:
        tiles = np.asarray([r * ipus // ranks * tiles_per_ipu for r in range(ranks + 1)], _I64)
    else:
        tiles = np.asarray([r * ipus * tiles_per_ipu // ranks for r in range(ranks + 1)], _I64)
    return RankBlocks(rank, tiles, np.asarray(tile_base, _I64)[tiles])


def full_pieces(plan: CopyPlan, src_shift: int = 0, dst_shift: int = 0) -> np.ndarray:
    """A plan's pieces as rows of (source, destination, count, source step, destination step, size),
    their sources and destinations moved by these many bytes (a replica's plan on another replica)."""
    p = plan.pieces
    if plan.steps is None:
        rows = p.reshape(-1, 6)
    else:
        ss, ds, size = plan.steps
        rows = np.concatenate((p.reshape(-1, 3), np.tile(np.asarray([ss, ds, size], _I64), (p.shape[0], 1))),
                              axis=1)
    if src_shift or dst_shift:
        rows = rows + np.asarray([src_shift, dst_shift, 0, 0, 0, 0], _I64)
    return rows


def cut(pieces: np.ndarray, blocks: RankBlocks, side: int) -> np.ndarray:
    """The pieces cut so that none crosses from one rank's bytes to another's on ``side``."""
    start, count, step, size = pieces[:, side], pieces[:, 2], pieces[:, 3 + side], pieces[:, 5]
    last = start + (count - 1) * step
    crossing = np.flatnonzero(blocks.rank_of(start) != blocks.rank_of(last))
    if crossing.size == 0:
        return pieces
    parts = [pieces[:crossing[0]]]
    for k, i in enumerate(crossing.tolist()):
        row = pieces[i]
        if step[i] == size[i]:
            inner = blocks.bytes[(blocks.bytes > start[i]) & (blocks.bytes <= last[i])]
            firsts = np.concatenate(([0], -(-(inner - start[i]) // size[i]))).astype(_I64)
            counts = np.diff(np.append(firsts, count[i]))
        else:
            firsts, counts = np.arange(count[i], dtype=_I64), np.ones(count[i], _I64)
        rows = np.repeat(row[None, :], firsts.size, axis=0)
        rows[:, 0] += firsts * row[3]
        rows[:, 1] += firsts * row[4]
        rows[:, 2] = counts
        parts.append(rows)
        end = crossing[k + 1] if k + 1 < crossing.size else pieces.shape[0]
        parts.append(pieces[i + 1:end])
    return np.concatenate(parts)


def _plan(rows: np.ndarray, same_memory: bool = False) -> CopyPlan:
    return CopyPlan.build(*(rows[:, k] for k in range(6)), _NONE, same_memory=same_memory)


def _packed(rows: np.ndarray, side: int) -> np.ndarray:
    """The rows with ``side`` moved into a packed buffer, in row order."""
    out = rows.copy()
    out[:, side] = exclusive_cumsum(rows[:, 2] * rows[:, 5])
    out[:, 3 + side] = rows[:, 5]
    return out


def _bytes_by(ranks: np.ndarray, rows: np.ndarray, size: int) -> np.ndarray:
    return np.bincount(ranks, weights=rows[:, 2] * rows[:, 5], minlength=size).astype(_I64)


@dataclass(frozen=True)
class RankCopy:
    """One rank's share of a tile-to-tile copy: its local pieces, what it packs for each other
    rank and unpacks from them, and the bytes of the ``Alltoallv`` (none anywhere: no call)."""

    local: CopyPlan
    pack: CopyPlan  # arena -> send buffer, grouped by destination rank
    unpack: CopyPlan  # receive buffer -> arena, grouped by source rank
    send: np.ndarray  # bytes to each rank
    receive: np.ndarray  # bytes from each rank
    crossing: bool  # some bytes cross ranks (on any rank)


def rank_copy(plan: CopyPlan, blocks: RankBlocks, shift: int = 0) -> RankCopy:
    """``plan`` (run ``shift`` bytes into the arena) cut by rank."""
    rows = cut(cut(full_pieces(plan, shift, shift), blocks, SRC), blocks, DST)
    src, dst = blocks.rank_of(rows[:, 0]), blocks.rank_of(rows[:, 1])
    me = blocks.rank
    out = np.flatnonzero((src == me) & (dst != me))
    out = out[np.argsort(dst[out], kind="stable")]
    into = np.flatnonzero((dst == me) & (src != me))
    into = into[np.argsort(src[into], kind="stable")]
    local = rows[(src == me) & (dst == me)]
    return RankCopy(_plan(local, same_memory=True), _plan(_packed(rows[out], DST)),
                    _plan(_packed(rows[into], SRC)), _bytes_by(dst[out], rows[out], blocks.size),
                    _bytes_by(src[into], rows[into], blocks.size), bool((src != dst).any()))


@dataclass(frozen=True)
class HostScatter:
    """One rank's share of a host-to-tiles copy: the pieces that land on its tiles."""

    own: CopyPlan


def host_scatter(plan: CopyPlan, blocks: RankBlocks, shift: int = 0) -> HostScatter:
    rows = cut(full_pieces(plan, dst_shift=shift), blocks, DST)
    return HostScatter(_plan(rows[blocks.rank_of(rows[:, 1]) == blocks.rank]))


@dataclass(frozen=True)
class HostGather:
    """A tiles-to-host copy over ranks: this rank packs its pieces; after the ``Allgatherv``
    (``counts`` bytes from each rank) every rank unpacks all pieces into its host buffer."""

    pack: CopyPlan
    unpack: CopyPlan
    counts: np.ndarray


def host_gather(plan: CopyPlan, blocks: RankBlocks, shift: int = 0) -> HostGather:
    rows = cut(full_pieces(plan, src_shift=shift), blocks, SRC)
    owner = blocks.rank_of(rows[:, 0])
    order = np.argsort(owner, kind="stable")
    mine = rows[owner == blocks.rank]
    return HostGather(_plan(_packed(mine, DST)), _plan(_packed(rows[order], SRC)),
                      _bytes_by(owner, rows, blocks.size))


def tile_copies(plan: CopyPlan | SharedGather) -> list[CopyPlan]:
    """The tile-to-tile plans a copy runs, in order."""
    return [plan.gather, plan.replicate] if isinstance(plan, SharedGather) else [plan]
