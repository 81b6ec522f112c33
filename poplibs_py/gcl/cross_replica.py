"""Cross-replica collectives (GCL's ``Collectives.hpp``), built from ring steps.

Each collective copies its input into a work buffer (a row per replica of its group, columns
spread over the tiles), rotates it by the replica's ring position, runs ring steps
(:mod:`.ring`) in which every replica sends one row to the next over the IPU-Links with a
``CrossReplicaCopy`` and popops vertices combine what arrived with a local row, rotates back
and copies the result out. An all-reduce is a reduce-scatter then an all-gather: each replica
sends ``2 (k - 1) / k`` of the data, the ring's bandwidth bound, k the group's size.

Each takes a ``gcl.CommGroup`` right after ``prog`` (or as ``group=``), every replica by
default: each group of replicas runs the collective among its own members, on its own ring,
all groups at once. ``options`` (GCL's option flags) are accepted and ignored.
"""

from __future__ import annotations

import math
from typing import Any

from poplar_py import Graph, Tensor, concat
from poplar_py import program as prog_

from .. import popops
from ..popops import expr as pe
from ..poputil import PoplibsError, tensorArgument
from .arguments import checked_call, checked_group, checked_op, checked_root, checked_writeable, group_at
from .groups import CommGroup, index_in_group
from .operators import CollectiveOperator, combine_expr
from .ring import Combine, Ring, all_gather, balanced_chunks, chunks, column_buffer, copy_rows, reduce_scatter
from .tensor_lists import checked_destinations, joined, joined_rows, split, split_rows

__all__ = ["allGatherCrossReplica", "allGatherToDestinationCrossReplica", "allReduceCrossReplica",
           "allReduceInPlaceCrossReplica", "allReduceToDestinationCrossReplica", "broadcastCrossReplica",
           "reduceScatterCrossReplica", "reduceScatterToDestinationCrossReplica"]


def _combine(graph: Graph, op: CollectiveOperator) -> Combine:
    expr = combine_expr(op)

    def run(received: Tensor, local: Tensor, prog: prog_.Sequence) -> None:
        popops.mapInPlace(graph, expr, [local, received], prog, f"gcl/{op.value}")
    return run


def _load(graph: Graph, ring: Ring, t: Tensor, op: CollectiveOperator | None, prog: prog_.Sequence,
          name: str) -> Tensor:
    """A work buffer holding ``t``'s chunks, one per replica of the group (squared for SQUARE_ADD),
    rotated by this replica's ring position."""
    size, parts = chunks(t, ring.size)
    like = parts[0] if balanced_chunks(graph, parts) else None
    buf = column_buffer(graph, t.elementType(), ring.size, size, f"{name}/buffer", like)
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


def _all_reduce(graph: Graph, ring: Ring, t: Tensor, out: Tensor, op: CollectiveOperator,
                prog: prog_.Sequence, name: str) -> None:
    """``out`` = ``t`` combined over the replica's group (``out`` may be ``t``)."""
    if op is CollectiveOperator.LOCAL or t.numElements() == 0 or ring.size == 1:
        _alone(graph, t, out, op, prog, name)
        return
    buf = _load(graph, ring, t, op, prog, name)
    row = reduce_scatter(graph, ring, buf, _combine(graph, op), prog, f"{name}/reduceScatter")
    if op is CollectiveOperator.MEAN:
        _mean(graph, ring, row, prog, name)
    all_gather(ring, buf, 1, prog)
    _unload(graph, ring, buf, out, prog, name)


@group_at(4)
def allReduceCrossReplica(graph: Graph, t: Tensor, op: CollectiveOperator, prog: prog_.Sequence,
                          group: CommGroup | None = None, debugContext: Any = "",
                          options: dict | None = None) -> Tensor:
    """A new tensor (mapped like ``t``) holding ``t`` combined by ``op`` over the replica's group
    (MEAN divides by its size k), the same on all its replicas. On the tiles: a ring
    reduce-scatter then a ring all-gather, 2 (k - 1) steps, each a cross-replica copy of ``1/k``
    of the data and popops vertices combining it. Given a list of tensors, one all-reduce of
    them all, a new tensor for each."""
    name, data = checked_call("allReduceCrossReplica", graph, t, prog, debugContext, options, many=True)
    t = joined(data) if isinstance(data, list) else data
    op = checked_op(op, t, "allReduceCrossReplica")
    ring = Ring.of(graph, checked_group(group, graph, "allReduceCrossReplica"))
    out = graph.clone(t, f"{name}/out")
    _all_reduce(graph, ring, t, out, op, prog, name)
    return split(out, data) if isinstance(data, list) else out


@group_at(4)
def allReduceInPlaceCrossReplica(graph: Graph, t: Tensor, op: CollectiveOperator, prog: prog_.Sequence,
                                 group: CommGroup | None = None, debugContext: Any = "",
                                 options: dict | None = None) -> None:
    """``t`` = ``t`` combined by ``op`` over the replica's group (as allReduceCrossReplica; each
    of a list of tensors, all in one all-reduce)."""
    what = "allReduceInPlaceCrossReplica"
    name, data = checked_call(what, graph, t, prog, debugContext, options, many=True)
    t = joined(data) if isinstance(data, list) else data
    op = checked_op(op, t, what)
    ring = Ring.of(graph, checked_group(group, graph, what))
    checked_writeable(t, op, what)
    _all_reduce(graph, ring, t, t, op, prog, name)


def _reduce_scatter(graph: Graph, ring: Ring, t: Tensor, op: CollectiveOperator, prog: prog_.Sequence,
                    name: str) -> Tensor:
    """This replica's shard of ``t`` combined over its group: a row of the work buffer."""
    rotated = _load(graph, ring, t, op, prog, name)
    row = reduce_scatter(graph, ring, rotated, _combine(graph, op), prog, name)
    if op is CollectiveOperator.MEAN:
        _mean(graph, ring, row, prog, name)
    return row


def _scatter_op(op: Any, t: Tensor, what: str) -> CollectiveOperator:
    op = checked_op(op, t, what)
    if op is CollectiveOperator.LOCAL:
        raise PoplibsError(f"{what}: LOCAL is not a reduction; a replica's own shard is a slice of t")
    return op


@group_at(5)
def allReduceToDestinationCrossReplica(graph: Graph, t: Tensor, destination: Tensor, op: CollectiveOperator,
                                       prog: prog_.Sequence, group: CommGroup | None = None,
                                       debugContext: Any = "", options: dict | None = None) -> None:
    """``destination`` (shaped as ``t``) = ``t`` combined by ``op`` over the replica's group (as
    allReduceCrossReplica, the last ring steps copying straight into ``destination``). Given a
    list of tensors, a list of destinations, one for each."""
    what = "allReduceToDestinationCrossReplica"
    name, data = checked_call(what, graph, t, prog, debugContext, options, many=True)
    t = joined(data) if isinstance(data, list) else data
    op = checked_op(op, t, what)
    ring = Ring.of(graph, checked_group(group, graph, what))
    if isinstance(data, list):
        destination = joined(_destinations(graph, destination, data, [d.shape() for d in data], what))
    destination = _destination(graph, destination, t.shape(), what)
    _all_reduce(graph, ring, t, destination, op, prog, name)


def _destinations(graph: Graph, destination: Any, data: list[Tensor], shapes: list[list[int]], what: str,
                  flat: bool = False) -> list[Tensor]:
    """``destination``, a list of writeable tensors of ``shapes``, one for each of ``data``."""
    given = checked_destinations(graph, destination, data, what)
    return [_destination(graph, d, shape, what, flat, f"destination[{i}]")
            for i, (d, shape) in enumerate(zip(given, shapes))]


def _destination(graph: Graph, destination: Any, shape: list[int], what: str, flat: bool = False,
                 called: str = "destination") -> Tensor:
    """``destination``, a writeable tensor of ``graph`` of ``shape`` (of as many elements, if ``flat``)."""
    destination = tensorArgument(graph, destination, f"{what}: {called}")
    fits = destination.numElements() == math.prod(shape) if flat else destination.shape() == list(shape)
    if not fits:
        need = f"{math.prod(shape)} elements" if flat else f"shape {list(shape)}"
        raise PoplibsError(f"{what}: {called} '{destination.name}' of shape {destination.shape()} must "
                           f"have {need}")
    if destination.numElements() and not destination.isParallelWriteable():
        raise PoplibsError(f"{what}: {called} '{destination.name}' contains constants or aliased elements")
    return destination


@group_at(4)
def reduceScatterCrossReplica(graph: Graph, t: Tensor, op: CollectiveOperator, prog: prog_.Sequence,
                              group: CommGroup | None = None, debugContext: Any = "",
                              options: dict | None = None) -> Tensor:
    """A new 1-D tensor of ``ceil(n / k)`` elements, k the group's size: on replica r, chunk p of
    the flattened ``t`` combined over r's group, p r's index in its group (past the end of ``t``,
    the last shards hold zeros combined). On the tiles: k - 1 ring steps of a cross-replica copy
    and a combine. Given a list of tensors, one reduce-scatter of them all, each tensor's shard."""
    name, data = checked_call("reduceScatterCrossReplica", graph, t, prog, debugContext, options, many=True)
    op = _scatter_op(op, data[0] if isinstance(data, list) else data, "reduceScatterCrossReplica")
    ring = Ring.of(graph, checked_group(group, graph, "reduceScatterCrossReplica"))
    t, widths = joined_rows(graph, data, ring.size, name) if isinstance(data, list) else (data, [])
    if ring.size == 1:  # the one shard is all of t, mapped like t
        out = graph.clone(t.flatten(), f"{name}/out")
        _alone(graph, t.flatten(), out, op, prog, name)
    else:
        out = _reduce_scatter(graph, ring, t, op, prog, name)
    return split_rows(out, data, widths) if isinstance(data, list) else out


@group_at(5)
def reduceScatterToDestinationCrossReplica(graph: Graph, t: Tensor, destination: Tensor,
                                           op: CollectiveOperator, prog: prog_.Sequence,
                                           group: CommGroup | None = None, debugContext: Any = "",
                                           options: dict | None = None) -> None:
    """reduceScatterCrossReplica writing the shard into ``destination`` (``ceil(n / k)`` elements,
    any shape): the same ring steps, then one copy from the work buffer's row. Given a list of
    tensors, a list of destinations, one for each tensor's shard."""
    what = "reduceScatterToDestinationCrossReplica"
    name, data = checked_call(what, graph, t, prog, debugContext, options, many=True)
    op = _scatter_op(op, data[0] if isinstance(data, list) else data, what)
    ring = Ring.of(graph, checked_group(group, graph, what))
    if isinstance(data, list):
        shards = [[-(-d.numElements() // ring.size)] for d in data]
        destination = joined(_destinations(graph, destination, data, shards, what, flat=True))
        t = joined_rows(graph, data, ring.size, name)[0]
    else:
        t = data
        destination = _destination(graph, destination, [-(-t.numElements() // ring.size)], what, flat=True)
    if ring.size == 1:
        _alone(graph, t.flatten(), destination.flatten(), op, prog, name)
    else:
        prog.add(prog_.Copy(_reduce_scatter(graph, ring, t, op, prog, name), destination.flatten()))


def _all_gather(graph: Graph, ring: Ring, t: Tensor, out: Tensor, prog: prog_.Sequence, name: str) -> None:
    """``out[j]`` = the ``t`` of the group's j-th replica."""
    if t.numElements() == 0:
        return
    if ring.size == 1:
        _alone(graph, t, out[0], None, prog, name)
        return
    rotated = column_buffer(graph, t.elementType(), ring.size, t.numElements(), f"{name}/buffer")
    # every row is written before it is read, a row at a time: say so, or the work buffer would
    # stay live (and take its tiles' memory) for the whole program
    prog.add(prog_.WriteUndef(rotated))
    prog.add(prog_.Copy(t.flatten(), rotated[0]))  # row j: the replica j places further round the ring
    all_gather(ring, rotated, 0, prog)
    ring.rotate(graph, rotated, prog, f"{name}/unrotate", inverse=True)
    copy_rows(prog, [out[j].flatten() for j in ring.order], _rows(rotated), to_rows=False)


@group_at(3)
def allGatherCrossReplica(graph: Graph, t: Tensor, prog: prog_.Sequence, group: CommGroup | None = None,
                          debugContext: Any = "", options: dict | None = None) -> Tensor:
    """A new tensor of shape ``[k, *t.shape()]``, k the group's size, whose row j is the ``t`` of
    the group's j-th replica (in ascending order), on each of them (each row mapped like ``t``).
    On the tiles: k - 1 ring steps, each a cross-replica copy of the last row received into its
    row of a rotated buffer, rotated back and copied out. Given a list of tensors, one
    all-gather of them all, a new tensor for each."""
    name, data = checked_call("allGatherCrossReplica", graph, t, prog, debugContext, options, many=True)
    ring = Ring.of(graph, checked_group(group, graph, "allGatherCrossReplica"))
    if not isinstance(data, list):
        out = graph.cloneN(data, ring.size, f"{name}/out")
        _all_gather(graph, ring, data, out, prog, name)
        return out
    outs = [graph.cloneN(d, ring.size, f"{name}/out{i}") for i, d in enumerate(data)]
    _all_gather(graph, ring, joined(data), _gathered(outs, ring.size), prog, name)
    return outs


def _gathered(outs: list[Tensor], size: int) -> Tensor:
    """``[k, ...]`` all-gather results joined into one ``[k, N]`` view."""
    return concat([o.reshape([size, o.numElements() // size]) for o in outs], 1)


@group_at(4)
def allGatherToDestinationCrossReplica(graph: Graph, t: Tensor, destination: Tensor, prog: prog_.Sequence,
                                       group: CommGroup | None = None, debugContext: Any = "",
                                       options: dict | None = None) -> None:
    """allGatherCrossReplica writing into ``destination``, of shape ``[k, *t.shape()]`` (given a
    list of tensors, a list of destinations, one for each)."""
    what = "allGatherToDestinationCrossReplica"
    name, data = checked_call(what, graph, t, prog, debugContext, options, many=True)
    ring = Ring.of(graph, checked_group(group, graph, what))
    if isinstance(data, list):
        shapes = [[ring.size, *d.shape()] for d in data]
        given = _destinations(graph, destination, data, shapes, what)
        _all_gather(graph, ring, joined(data), _gathered(given, ring.size), prog, name)
        return
    destination = _destination(graph, destination, [ring.size, *data.shape()], what)
    _all_gather(graph, ring, data, destination, prog, name)


@group_at(3)
def broadcastCrossReplica(graph: Graph, t: Tensor, prog: prog_.Sequence, group: CommGroup | None = None,
                          rootReplica: int = 0, debugContext: Any = "",
                          options: dict | None = None) -> Tensor:
    """A new tensor (mapped like ``t``) holding, on each replica, the ``t`` of its group's replica
    ``rootReplica`` (an index within the group: the replica index for every replica). On the
    tiles: a ring reduce-scatter whose combine keeps the root's row as it passes (a popops select
    on whether this replica's index in its group, from its replication index, is the root), then
    a ring all-gather: 2 (k - 1) steps of ``1/k`` of the data."""
    name, t = checked_call("broadcastCrossReplica", graph, t, prog, debugContext, options)
    groups = checked_group(group, graph, "broadcastCrossReplica")
    rootReplica = checked_root(rootReplica, group, groups, "broadcastCrossReplica")
    ring = Ring.of(graph, groups)
    out = graph.clone(t, f"{name}/out")
    if t.numElements() == 0:
        return out
    if ring.size == 1:
        _alone(graph, t, out, None, prog, name)
        return out
    buf = _load(graph, ring, t, None, prog, name)
    index = graph.addReplicationIndexConstant(f"{name}/replicationIndex")
    in_group = index_in_group(group or CommGroup(), graph.getReplicationFactor())
    is_root = popops.map(graph, pe.Equal(in_group, pe.Const(rootReplica)), [index], prog, f"{name}/isRoot")
    keep_root = pe.Select(pe.PlaceHolder(1), pe.PlaceHolder(2), pe.PlaceHolder(3))

    def combine(received: Tensor, local: Tensor, body: prog_.Sequence) -> None:
        popops.mapInPlace(graph, keep_root, [local, received, is_root], body, f"{name}/keepRoot")

    reduce_scatter(graph, ring, buf, combine, prog, f"{name}/scatter")
    all_gather(ring, buf, 1, prog)
    _unload(graph, ring, buf, out, prog, name)
    return out
