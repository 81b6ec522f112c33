"""Cross-replica collectives (GCL's ``Collectives.hpp``), built from ring steps.

Each collective copies its input into a work buffer (a row per replica, columns spread over
the tiles), rotates it by the replica's ring position, runs ring steps (:mod:`.ring`) in which
every replica sends one row to the next over the IPU-Links with a ``CrossReplicaCopy`` and
popops vertices combine what arrived with a local row, rotates back and copies the result
out. An all-reduce is a reduce-scatter then an all-gather: each replica sends ``2 (R - 1) / R``
of the data, the ring's bandwidth bound. ``options`` (GCL's option flags) are accepted and
ignored.
"""

from __future__ import annotations

from typing import Any

from poplar_py import Graph, Tensor
from poplar_py import program as prog_

from .. import popops
from ..popops import expr as pe
from ..poputil import PoplibsError
from .arguments import checked_call, checked_op, checked_root, checked_writeable
from .operators import CollectiveOperator, combine_expr
from .ring import Combine, Ring, all_gather, chunks, column_buffer, copy_rows, reduce_scatter

__all__ = ["allGatherCrossReplica", "allReduceCrossReplica", "allReduceInPlaceCrossReplica",
           "broadcastCrossReplica", "reduceScatterCrossReplica"]


def _combine(graph: Graph, op: CollectiveOperator) -> Combine:
    expr = combine_expr(op)

    def run(received: Tensor, local: Tensor, prog: prog_.Sequence) -> None:
        popops.mapInPlace(graph, expr, [local, received], prog, f"gcl/{op.value}")
    return run


def _load(graph: Graph, ring: Ring, t: Tensor, op: CollectiveOperator | None, prog: prog_.Sequence,
          name: str) -> Tensor:
    """A work buffer holding ``t``'s chunks (squared for SQUARE_ADD), rotated by this replica's
    ring position."""
    size, parts = chunks(t, ring.size)
    buf = column_buffer(graph, t.elementType(), ring.size, size, f"{name}/buffer")
    copy_rows(prog, [parts[k] for k in ring.fragment_order()], _rows(buf), to_rows=True)
    if op is CollectiveOperator.SQUARE_ADD:
        popops.squareInPlace(graph, buf, prog, debugName=f"{name}/square")
    ring.rotate(graph, buf, prog, f"{name}/rotate")
    return buf


def _rows(buf: Tensor) -> list[Tensor]:
    return [buf[j] for j in range(buf.dim(0))]


def _unload(graph: Graph, ring: Ring, buf: Tensor, out: Tensor, prog: prog_.Sequence, name: str) -> None:
    """A rotated work buffer's rows back to ``out``'s chunks."""
    ring.rotate(graph, buf, prog, f"{name}/unrotate", inverse=True)
    parts = chunks(out, ring.size)[1]
    copy_rows(prog, [parts[k] for k in ring.fragment_order()], _rows(buf), to_rows=False)


def _mean(graph: Graph, ring: Ring, row: Tensor, prog: prog_.Sequence, name: str) -> None:
    popops.mapInPlace(graph, pe.Divide(pe.PlaceHolder(1), pe.Const(ring.size)), [row], prog, f"{name}/mean")


def _alone(graph: Graph, t: Tensor, out: Tensor, op: CollectiveOperator | None, prog: prog_.Sequence,
           name: str) -> None:
    """``out`` = ``t`` combined over one replica, all a collective over one replica needs: ``t``
    itself (a Copy, nothing when ``out`` is ``t``), or for SQUARE_ADD its square, computed by popops
    vertices on ``out``'s tiles."""
    if op is CollectiveOperator.SQUARE_ADD and t.numElements():
        popops.mapWithOutput(graph, pe.Square(pe.PlaceHolder(1)), [t], out, prog, f"{name}/square")
    elif out is not t:
        prog.add(prog_.Copy(t, out))


def _all_reduce(graph: Graph, t: Tensor, out: Tensor, op: CollectiveOperator, prog: prog_.Sequence,
                name: str) -> None:
    """``out`` = ``t`` combined over every replica (``out`` may be ``t``)."""
    if op is CollectiveOperator.LOCAL or t.numElements() == 0 or graph.getReplicationFactor() == 1:
        _alone(graph, t, out, op, prog, name)
        return
    ring = Ring.of(graph)
    buf = _load(graph, ring, t, op, prog, name)
    row = reduce_scatter(graph, ring, buf, _combine(graph, op), prog, f"{name}/reduceScatter")
    if op is CollectiveOperator.MEAN:
        _mean(graph, ring, row, prog, name)
    all_gather(ring, buf, 1, prog)
    _unload(graph, ring, buf, out, prog, name)


def allReduceCrossReplica(graph: Graph, t: Tensor, op: CollectiveOperator, prog: prog_.Sequence,
                          debugContext: Any = "", options: dict | None = None) -> Tensor:
    """A new tensor (mapped like ``t``) holding ``t`` combined by ``op`` over every replica, the
    same on all of them. On the tiles: a ring reduce-scatter then a ring all-gather, 2 (R - 1)
    steps, each a cross-replica copy of ``1/R`` of the data and popops vertices combining it."""
    name, t = checked_call("allReduceCrossReplica", graph, t, prog, debugContext, options)
    op = checked_op(op, t, "allReduceCrossReplica")
    out = graph.clone(t, f"{name}/out")
    _all_reduce(graph, t, out, op, prog, name)
    return out


def allReduceInPlaceCrossReplica(graph: Graph, t: Tensor, op: CollectiveOperator, prog: prog_.Sequence,
                                 debugContext: Any = "", options: dict | None = None) -> None:
    """``t`` = ``t`` combined by ``op`` over every replica (as allReduceCrossReplica)."""
    name, t = checked_call("allReduceInPlaceCrossReplica", graph, t, prog, debugContext, options)
    op = checked_op(op, t, "allReduceInPlaceCrossReplica")
    checked_writeable(t, op, "allReduceInPlaceCrossReplica")
    _all_reduce(graph, t, t, op, prog, name)


def reduceScatterCrossReplica(graph: Graph, t: Tensor, op: CollectiveOperator, prog: prog_.Sequence,
                              debugContext: Any = "", options: dict | None = None) -> Tensor:
    """A new 1-D tensor of ``ceil(n / R)`` elements: on replica r, chunk r of the flattened ``t``
    combined over every replica (past the end of ``t``, the last shards hold zeros combined).
    On the tiles: R - 1 ring steps of a cross-replica copy and a combine."""
    name, t = checked_call("reduceScatterCrossReplica", graph, t, prog, debugContext, options)
    op = checked_op(op, t, "reduceScatterCrossReplica")
    if op is CollectiveOperator.LOCAL:
        raise PoplibsError("reduceScatterCrossReplica: LOCAL is not a reduction; a replica's own shard is "
                           "a slice of t")
    if graph.getReplicationFactor() == 1:  # the one shard is all of t, mapped like t
        out = graph.clone(t.flatten(), f"{name}/out")
        _alone(graph, t.flatten(), out, op, prog, name)
        return out
    ring = Ring.of(graph)
    rotated = _load(graph, ring, t, op, prog, name)
    row = reduce_scatter(graph, ring, rotated, _combine(graph, op), prog, name)
    if op is CollectiveOperator.MEAN:
        _mean(graph, ring, row, prog, name)
    return row


def allGatherCrossReplica(graph: Graph, t: Tensor, prog: prog_.Sequence, debugContext: Any = "",
                          options: dict | None = None) -> Tensor:
    """A new tensor of shape ``[R, *t.shape()]`` whose row r is replica r's ``t``, on every replica
    (each row mapped like ``t``). On the tiles: R - 1 ring steps, each a cross-replica copy of
    the last row received, stored at its place by a dynamicUpdate."""
    name, t = checked_call("allGatherCrossReplica", graph, t, prog, debugContext, options)
    ring = Ring.of(graph)
    out = graph.cloneN(t, ring.size, f"{name}/out")
    if t.numElements() == 0:
        return out
    if graph.getReplicationFactor() == 1:
        _alone(graph, t, out[0], None, prog, name)
        return out
    rotated = column_buffer(graph, t.elementType(), ring.size, t.numElements(), f"{name}/buffer")
    prog.add(prog_.Copy(t.flatten(), rotated[0]))  # row j: the replica j places further round the ring
    all_gather(ring, rotated, 0, prog)
    ring.rotate(graph, rotated, prog, f"{name}/unrotate", inverse=True)
    copy_rows(prog, [out[r].flatten() for r in ring.order], _rows(rotated), to_rows=False)
    return out


def broadcastCrossReplica(graph: Graph, t: Tensor, prog: prog_.Sequence, rootReplica: int = 0,
                          debugContext: Any = "", options: dict | None = None) -> Tensor:
    """A new tensor (mapped like ``t``) holding replica ``rootReplica``'s ``t`` on every replica.
    On the tiles: a ring reduce-scatter whose combine keeps the root's row as it passes (a
    popops select), then a ring all-gather: 2 (R - 1) steps of ``1/R`` of the data."""
    name, t = checked_call("broadcastCrossReplica", graph, t, prog, debugContext, options)
    rootReplica = checked_root(rootReplica, graph, "broadcastCrossReplica")
    out = graph.clone(t, f"{name}/out")
    if t.numElements() == 0:
        return out
    if graph.getReplicationFactor() == 1:
        _alone(graph, t, out, None, prog, name)
        return out
    ring = Ring.of(graph)
    buf = _load(graph, ring, t, None, prog, name)
    index = graph.addReplicationIndexConstant(f"{name}/replicationIndex")
    is_root = popops.map(graph, pe.Equal(pe.PlaceHolder(1), pe.Const(rootReplica)), [index], prog,
                         f"{name}/isRoot")
    keep_root = pe.Select(pe.PlaceHolder(1), pe.PlaceHolder(2), pe.PlaceHolder(3))

    def combine(received: Tensor, local: Tensor, body: prog_.Sequence) -> None:
        popops.mapInPlace(graph, keep_root, [local, received, is_root], body, f"{name}/keepRoot")

    reduce_scatter(graph, ring, buf, combine, prog, f"{name}/scatter")
    all_gather(ring, buf, 1, prog)
    _unload(graph, ring, buf, out, prog, name)
    return out
