"""Collectives across the IPUs of one replica (GCL's ``allReduceWithinReplica`` and
``allGatherWithinReplica``).

The tensor's outer dimension is the IPU: ``t[i]`` is IPU i's partial (and should be mapped
to IPU i). Within a replica every IPU's part of the program is written out, so each ring
step is one ordinary copy of a chunk from every IPU to the next over the IPU-Links, and for
a reduction one popops compute set combining what arrived with the local chunk. ``options``
are accepted and ignored.
"""

from __future__ import annotations

from typing import Any

from poplar_py import Graph, Tensor, concat
from poplar_py import program as prog_

from .. import popops
from ..popops import expr as pe
from ..poputil import PoplibsError
from .arguments import checked_call, checked_op
from .operators import CollectiveOperator, combine_expr
from .ring import chunks

__all__ = ["allGatherWithinReplica", "allReduceWithinReplica"]


def _partials(graph: Graph, t: Tensor, name: str) -> int:
    ipus = graph.getTarget().getNumIPUs()
    if t.rank() == 0 or t.dim(0) != ipus:
        raise PoplibsError(f"{name}: tensor '{t.name}' of shape {t.shape()} needs an outer dimension of "
                           f"{ipus}, one partial per IPU of the replica")
    return ipus


def _copy(prog: prog_.Sequence, pairs: list[tuple[Tensor, Tensor]]) -> None:
    """One copy moving every pair's source to its destination (empty pairs skipped)."""
    pairs = [(a, b) for a, b in pairs if a.numElements()]
    if pairs:
        prog.add(prog_.Copy(concat([a for a, _ in pairs]), concat([b for _, b in pairs])))


def allReduceWithinReplica(graph: Graph, t: Tensor, op: CollectiveOperator, prog: prog_.Sequence,
                           debugContext: Any = "", options: dict | None = None) -> Tensor:
    """A new tensor shaped and mapped like ``t`` whose every ``[i]`` holds the partials ``t[0..P)``
    combined by ``op``. On the tiles: P - 1 reduce-scatter steps (each IPU sends a chunk to the
    next, popops vertices combine it there) and P - 1 all-gather steps (chunks passed on)."""
    name, t = checked_call("allReduceWithinReplica", graph, t, prog, debugContext, options)
    op = checked_op(op, t, "allReduceWithinReplica")
    ipus = _partials(graph, t, "allReduceWithinReplica")
    out = graph.clone(t, f"{name}/out")
    prog.add(prog_.Copy(t, out))
    alone = ipus == 1 and op is not CollectiveOperator.SQUARE_ADD  # one partial: its own value
    if op is CollectiveOperator.LOCAL or out.numElements() == 0 or alone:
        return out
    if op is CollectiveOperator.SQUARE_ADD:
        popops.squareInPlace(graph, out, prog, debugName=f"{name}/square")
    parts = [chunks(out[i], ipus)[1] for i in range(ipus)]
    received = [graph.clone(parts[i][0], f"{name}/received{i}") for i in range(ipus)]
    for step in range(ipus - 1):
        moves = [(parts[i][(i - step) % ipus], (i + 1) % ipus) for i in range(ipus)]
        moves = [(src, ipu) for src, ipu in moves if src.numElements()]
        if not moves:
            continue
        _copy(prog, [(src, received[ipu].slice(0, src.numElements())) for src, ipu in moves])
        local = concat([parts[ipu][(ipu - 1 - step) % ipus] for _, ipu in moves])
        arrived = concat([received[ipu].slice(0, src.numElements()) for src, ipu in moves])
        popops.mapInPlace(graph, combine_expr(op), [local, arrived], prog, f"{name}/{op.value}")
    if op is CollectiveOperator.MEAN:
        mine = [parts[i][(i + 1) % ipus] for i in range(ipus) if parts[i][(i + 1) % ipus].numElements()]
        popops.mapInPlace(graph, pe.Divide(pe.PlaceHolder(1), pe.Const(ipus)), [concat(mine)], prog,
                          f"{name}/mean")
    for step in range(ipus - 1):
        _copy(prog, [(parts[i][(i + 1 - step) % ipus], parts[(i + 1) % ipus][(i + 1 - step) % ipus])
                     for i in range(ipus)])
    return out


def allGatherWithinReplica(graph: Graph, t: Tensor, prog: prog_.Sequence, debugContext: Any = "",
                           options: dict | None = None) -> Tensor:
    """A new tensor of shape ``[P, P, *t.shape()[1:]]`` whose ``[i]`` (mapped like ``t[i]``, on
    IPU i) holds every partial ``t[0..P)``. On the tiles: P - 1 steps, each IPU passing the
    last partial it received to the next IPU over the links."""
    name, t = checked_call("allGatherWithinReplica", graph, t, prog, debugContext, options)
    ipus = _partials(graph, t, "allGatherWithinReplica")
    out = concat([graph.cloneN(t[i], ipus, f"{name}/out{i}").expand([0]) for i in range(ipus)], 0)
    _copy(prog, [(t[i], out[i][i]) for i in range(ipus)])
    for step in range(1, ipus):
        _copy(prog, [(out[i][(i - step + 1) % ipus], out[(i + 1) % ipus][(i - step + 1) % ipus])
                     for i in range(ipus)])
    return out
