"""The ring that cross-replica collectives run on, as GCL builds it.

Replicas pass fragments to their neighbour on a ring that follows the IPU-Links: with one
IPU per replica the ladder's Hamiltonian cycle (0, 1, 3, 5, ..., 6, 4, 2), so that every
hop is one link group; with whole rungs per replica the replicas in order (the way back
runs against the forward traffic, on idle link directions).

Every replica runs the same program, so which fragment a replica sends at a step cannot be
written into the program: each replica reads it at run time from a one-element offset that
starts at its position on the ring (looked up with its replication index) and steps back by
one each step. Fragments are rows of a buffer whose columns are spread over the tiles with
all rows of a column on one tile, so ``popops.dynamicSlice``/``dynamicUpdate`` at that offset
stay on the tile: each step is a cross-replica copy over the links and one compute set.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from poplar_py import UNSIGNED_INT, Graph, Tensor, concat
from poplar_py import program as prog_

from .. import popops
from ..popops import expr as pe
from ..poputil import calcLinearTileMapping

#: writes ``f(received, local)`` into ``out``
Combine = Callable[[Tensor, Tensor, Tensor, prog_.Sequence], None]


@dataclass(frozen=True)
class Ring:
    """The replicas in ring order; each sends to the next."""

    order: tuple[int, ...]

    @staticmethod
    def of(graph: Graph) -> Ring:
        replicas, ipus = graph.getReplicationFactor(), graph.getTarget().getNumIPUs()
        if ipus == 1 and replicas > 2:
            odd = list(range(1, replicas, 2))
            even = [r for r in range(replicas - 1, 0, -1) if r % 2 == 0]
            return Ring((0, *odd, *even))
        return Ring(tuple(range(replicas)))

    @property
    def size(self) -> int:
        return len(self.order)

    @property
    def forward(self) -> dict[int, int]:
        """The replica map of one hop."""
        return {r: self.order[(i + 1) % self.size] for i, r in enumerate(self.order)}

    def position(self, graph: Graph, prog: prog_.Sequence, name: str) -> Tensor:
        """A new UNSIGNED_INT [1] tensor holding this replica's position on the ring."""
        positions = [0] * self.size
        for i, r in enumerate(self.order):
            positions[r] = i
        table = graph.addConstant(UNSIGNED_INT, [self.size], positions, f"{name}/ringPositions")
        graph.setTileMapping(table, 0)
        index = graph.addReplicationIndexConstant(f"{name}/replicationIndex")
        return popops.dynamicSlice(graph, table, index.reshape([1]), [0], [1], prog, f"{name}/position")

    def step_back(self, graph: Graph, offset: Tensor, prog: prog_.Sequence, name: str) -> None:
        """``offset = (offset - 1) mod R`` on the tile holding it."""
        step = pe.Rem(pe.Add(pe.PlaceHolder(1), pe.Const(self.size - 1)), pe.Const(self.size))
        popops.mapInPlace(graph, step, [offset], prog, f"{name}/next")

    def fragment_order(self) -> list[int]:
        """The chunk each buffer row holds: row j holds chunk ``order[j - 1]``, so that the replica
        that ends a reduce-scatter holding row ``position + 1`` holds its own chunk."""
        return [self.order[(j - 1) % self.size] for j in range(self.size)]


def column_buffer(graph: Graph, type_: object, rows: int, cols: int, name: str) -> Tensor:
    """A new [rows, cols] tensor whose columns are spread linearly over the tiles, each column's
    rows on one tile."""
    buf = graph.addVariable(type_, [rows, cols], name)
    size = graph.getTarget().getTypeSize(type_)
    mapping = calcLinearTileMapping(graph, [cols], max(1, 128 // size),
                                    graph.getTarget().getVectorWidth(type_))
    for tile, intervals in enumerate(mapping):
        for iv in intervals:
            graph.setTileMapping(buf.slice([0, iv.begin()], [rows, iv.end()]), tile)
    return buf


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


def reduce_scatter(graph: Graph, ring: Ring, buf: Tensor, offset: Tensor, combine: Combine,
                   prog: prog_.Sequence, name: str) -> Tensor:
    """Ring reduce-scatter of ``buf``'s rows (one per replica). ``offset`` holds this replica's ring
    position; afterwards it holds ``position + 1`` and the returned tensor that row, combined
    over every replica. R - 1 steps, each a cross-replica copy of one row and a combine."""
    slice_prog = prog_.Sequence()
    local = popops.dynamicSlice(graph, buf, offset, [0], [1], slice_prog, f"{name}/slice")[0]
    send, recv = graph.clone(local, f"{name}/send"), graph.clone(local, f"{name}/recv")
    prog.add(slice_prog)
    prog.add(prog_.Copy(local, send))
    body = prog_.Sequence([prog_.CrossReplicaCopy(send, recv, ring.forward)])
    ring.step_back(graph, offset, body, name)
    body.add(slice_prog)
    combine(recv, local, send, body)
    prog.add(prog_.Repeat(ring.size - 1, body))
    return send


def all_gather(graph: Graph, ring: Ring, buf: Tensor, row: Tensor, offset: Tensor, prog: prog_.Sequence,
               name: str) -> None:
    """Ring all-gather into ``buf``: this replica's ``row`` goes to row ``offset``, then R - 1
    steps each pass the last row received to the next replica, which stores it at its own
    (stepped back) offset."""
    send, recv = graph.clone(row, f"{name}/send"), graph.clone(row, f"{name}/recv")
    update = prog_.Sequence()
    popops.dynamicUpdate(graph, buf, recv.expand([0]), offset, [0], [1], update, f"{name}/store")
    prog.add(prog_.Copy(row, recv))
    prog.add(update)
    body = prog_.Sequence([prog_.Copy(recv, send), prog_.CrossReplicaCopy(send, recv, ring.forward)])
    ring.step_back(graph, offset, body, name)
    body.add(update)
    prog.add(prog_.Repeat(ring.size - 1, body))
