"""The rings that cross-replica collectives run on, as GCL builds them.

Replicas pass fragments to their neighbour on a ring that follows the IPU-Links: with one
IPU per replica the ladder's Hamiltonian cycle (0, 1, 3, 5, ..., 6, 4, 2), so that every
hop is one link group; with whole rungs per replica the replicas in order (the way back
runs against the forward traffic, on idle link directions). Replica groups (gcl.CommGroup)
each have their own ring, laid the same way over the group's members, and all the rings run
at once: a hop's replica map sends each replica to the next on its group's ring (a cycle per
group), so a step is still one cross-replica copy, whose bytes load the links between the
replicas that each group pairs.

Every replica runs the same program, but which fragment a replica sends at a step depends on
its place on the ring. So each replica first rotates its buffer of fragments (one row each), in
place, by its ring position, found at run time from its replication index: row j of the rotated
buffer is fragment ``position + j``. Then every step names the same rows on every replica: at
reduce-scatter step k each replica sends row ``-k`` and combines what arrives into row
``-k - 1`` (mod the group's size); at all-gather step k it sends row ``1 - k`` into the next
replica's row ``-k``. Rotating is one compute set of ``gcl::Rotate`` vertices; the buffer's
columns are spread over the tiles with every row of a column on one tile, and each tile has its
own copy of the replication index, so it stays on the tile. Each ring step is one cross-replica
copy over the links and, when reducing, one compute set of popops vertices.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from poplar_py import Graph, Tensor, concat
from poplar_py import program as prog_
from poplar_py.builder.bulk_vertices import Rows
from poplar_py.regions.arrays import expand_ranges

from ..codelets import add_library
from ..poputil import templateVertex
from ..poputil.tile_mapping import linear_partitions

#: writes ``f(received, local)`` into ``local``
Combine = Callable[[Tensor, Tensor, prog_.Sequence], None]


@dataclass(frozen=True)
class Ring:
    """One ring per group of replicas, all as long and run at once. ``groups``: each group's
    replicas in ascending order; ``order``: the ring over a group's indices (index i standing for
    the group's i-th replica), the same for every group; each replica sends to the next."""

    groups: tuple[tuple[int, ...], ...]
    order: tuple[int, ...]

    @staticmethod
    def of(graph: Graph, groups: tuple[tuple[int, ...], ...]) -> Ring:
        size = len(groups[0])
        if graph.getTarget().getNumIPUs() == 1 and size > 2:
            odd = list(range(1, size, 2))
            even = [i for i in range(size - 1, 0, -1) if i % 2 == 0]
            return Ring(groups, (0, *odd, *even))
        return Ring(groups, tuple(range(size)))

    @property
    def size(self) -> int:
        return len(self.order)

    def _rings(self) -> np.ndarray:
        """[group, position]: the replica at each position of each group's ring."""
        return np.asarray(self.groups, np.int64)[:, list(self.order)]

    @property
    def forward(self) -> dict[int, int]:
        """The replica map of one hop."""
        rings = self._rings()
        return dict(zip(rings.ravel().tolist(), np.roll(rings, -1, axis=1).ravel().tolist()))

    def rotate(self, graph: Graph, buf: Tensor, prog: prog_.Sequence, name: str,
               inverse: bool = False) -> None:
        """Rotate ``buf`` in place: its row j becomes its row ``p + j`` (mod k), p this replica's
        position on its group's ring (``-p``: ``inverse`` undoes a rotation). One compute set of one
        ``gcl::Rotate`` MultiVertex per tile, its workers sharing the tile's columns, each reading
        the replication index from a constant on its tile."""
        vertex = templateVertex("gcl::Rotate", buf.elementType())
        if not graph.hasCodelet(vertex):
            add_library(graph, "gcl")
        rings = self._rings()
        positions = np.empty(rings.size, np.int64)
        positions[rings] = np.arange(self.size)
        cs = graph.addComputeSet(name)
        begin, end, tile = graph.tile_intervals(buf[0])
        order = np.argsort(tile, kind="stable")
        begin, end, tile = begin[order], end[order], tile[order]
        tiles, runs = np.unique(tile, return_counts=True)
        replicas = []
        for t in tiles.tolist():
            replicas.append(graph.addReplicationIndexConstant(f"{name}/replicationIndex{t}"))
            graph.setTileMapping(replicas[-1], t)
        rows = Rows(runs * self.size, *_every_row(begin, end, self.size, buf.dim(1)),
                    np.arange(begin.size * self.size))
        target = graph.getTarget()
        perf = rotate_cycles(self.size, end - begin, target.getTypeSize(buf.elementType()),
                             np.repeat(np.arange(tiles.size), runs), target.getNumWorkerContexts())
        graph.add_vertices(cs, vertex, tiles, {"rows": (buf, rows)},
                           state={"positions": positions, "numRows": self.size, "inverse": inverse},
                           each={"replica": (replicas, np.arange(tiles.size))}, perf=perf)
        prog.add(prog_.Execute(cs))

    def row(self, rotated: Tensor, k: int) -> Tensor:
        """Row ``k`` (mod the ring's size) of a rotated buffer."""
        return rotated[k % self.size]

    def fragment_order(self) -> list[int]:
        """The chunk each buffer row holds: row j holds chunk ``order[j - 1]``, so that the replica
        that ends a reduce-scatter holding row ``position + 1`` holds its own chunk (its index in
        its group)."""
        return [self.order[(j - 1) % self.size] for j in range(self.size)]


def rotate_cycles(rows: int, length: np.ndarray, size: int, vertex: np.ndarray, workers: int) -> np.ndarray:
    """Cycles of each ``gcl::Rotate`` MultiVertex, from its runs of ``length`` columns of ``size``
    bytes (run k on vertex ``vertex[k]``, vertices in order, each with a run): each run cut into
    at most ``workers`` near-equal pieces, handed to the workers in turn; a piece costs entry and
    a few cycles per row, then its 64-bit loads and stores, 8 bytes a cycle (the rate of on-tile
    copies in the cycle model); the tile takes ``workers`` x its busiest worker."""
    count = np.minimum(workers, length)
    owner, k = expand_ranges(np.zeros_like(count), count)
    piece = length[owner] * (k + 1) // count[owner] - length[owner] * k // count[owner]
    cycles = 20 + 5 * rows + -(-rows * piece * size // 8)
    first = np.searchsorted(vertex[owner], vertex[owner], side="left")
    busy = np.zeros((int(vertex[-1]) + 1, workers), np.int64)
    np.add.at(busy, (vertex[owner], (np.arange(owner.size) - first) % workers), cycles)
    return workers * busy.max(axis=1)


def column_buffer(graph: Graph, type_: object, rows: int, cols: int, name: str,
                  like: Tensor | None = None) -> Tensor:
    """A new [rows, cols] tensor, each column's rows on one tile: column j on the tile of element j
    of ``like`` (a mapped tensor of ``cols`` elements), else the columns spread linearly over the
    tiles."""
    buf = graph.addVariable(type_, [rows, cols], name)
    if like is not None:
        begin, end, tiles = graph.tile_intervals(like.flatten())
    else:
        target = graph.getTarget()
        begin, end = linear_partitions(graph, [cols], max(1, 128 // target.getTypeSize(type_)),
                                       target.getVectorWidth(type_))
        tiles = np.arange(begin.size)
    graph.map_intervals(buf, *_every_row(begin, end, rows, cols), np.repeat(tiles, rows))
    return buf


def balanced_chunks(graph: Graph, parts: list[Tensor]) -> bool:
    """Whether equal-sized chunks are mapped alike, each column on one tile in every chunk (as the
    rows of a gcl.CollectiveBalancedReorder collectives tensor are): then a work buffer laid out
    like them keeps every element on its tile."""
    if parts[0].numElements() == 0 or any(p.numElements() != parts[0].numElements() for p in parts):
        return False
    layouts = [graph.tile_intervals(p, requireComplete=False) for p in parts]
    if layouts[0][0].size == 0 or layouts[0][0][0] != 0 or layouts[0][1][-1] != parts[0].numElements() \
            or np.any(layouts[0][0][1:] != layouts[0][1][:-1]):
        return False  # not every element of the first chunk has a tile
    return all(all(np.array_equal(a, b) for a, b in zip(layouts[0], other)) for other in layouts[1:])


def _every_row(begin: np.ndarray, end: np.ndarray, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """The flat ranges of a [rows, cols] tensor covering columns ``[begin[k], end[k])``: for each
    k, one range per row, rows in order."""
    starts = np.arange(rows, dtype=np.int64) * cols
    return (begin[:, None] + starts).ravel(), (end[:, None] + starts).ravel()


def chunks(t: Tensor, count: int) -> tuple[int, list[Tensor]]:
    """The flattened ``t`` cut into ``count`` chunks of ``ceil(n / count)`` elements (the last
    ones shorter or empty), with that chunk size."""
    flat, n = t.flatten(), t.numElements()
    size = -(-n // count)
    return size, [flat.slice(min(k * size, n), min((k + 1) * size, n)) for k in range(count)]


def copy_rows(prog: prog_.Sequence, sources: list[Tensor], rows: list[Tensor], to_rows: bool) -> None:
    """One copy between each source and the start of its row (or back), skipping empty ones."""
    pairs = [(s, r.slice(0, s.numElements())) for s, r in zip(sources, rows) if s.numElements()]
    if pairs:
        a, b = concat([p[0] for p in pairs]), concat([p[1] for p in pairs])
        prog.add(prog_.Copy(a, b) if to_rows else prog_.Copy(b, a))


def reduce_scatter(graph: Graph, ring: Ring, rotated: Tensor, combine: Combine, prog: prog_.Sequence,
                   name: str) -> Tensor:
    """Ring reduce-scatter of a rotated buffer's rows: k - 1 steps, each a cross-replica copy of one
    row and a combine into another. Returns row 1 (fragment ``position + 1``), combined over
    the replica's group."""
    received = graph.clone(rotated[0], f"{name}/received")
    for k in range(ring.size - 1):
        prog.add(prog_.CrossReplicaCopy(ring.row(rotated, -k), received, ring.forward))
        combine(received, ring.row(rotated, -k - 1), prog)
    return ring.row(rotated, 1)


def all_gather(ring: Ring, rotated: Tensor, first: int, prog: prog_.Sequence) -> None:
    """Ring all-gather in a rotated buffer whose row ``first`` is this replica's: k - 1 steps, each
    passing the row received last (first this replica's) into the next replica's row before it."""
    for k in range(ring.size - 1):
        prog.add(prog_.CrossReplicaCopy(ring.row(rotated, first - k), ring.row(rotated, first - k - 1),
                                        ring.forward))
