"""Collectives across the IPUs of one replica (GCL's ``allReduceWithinReplica``,
``reduceScatterWithinReplica`` and ``allGatherWithinReplica``).

The tensor's outer dimension is the IPU: ``t[i]`` is IPU i's partial (and should be mapped
to IPU i). Within a replica every IPU's part of the program is written out, so each ring
step is one ordinary copy of a chunk from every IPU to the next over the IPU-Links, and for
a reduction one popops compute set combining what arrived with the local chunk. A
reduce-scatter leaves each IPU one chunk of the combined partials, handed back as GCL's
``Chunks``; an all-gather of them puts every chunk on every IPU. ``options`` are accepted and
ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from poplar_py import Graph, Tensor, concat
from poplar_py import program as prog_
from poplar_py.checks.arguments import is_int

from .. import popops
from ..popops import expr as pe
from ..poputil import PoplibsArgumentError, PoplibsError, tensorArgument
from .arguments import checked_call, checked_op
from .operators import CollectiveOperator, combine_expr
from .ring import chunks

__all__ = ["Chunk", "Chunks", "allGatherWithinReplica", "allReduceWithinReplica",
           "reduceScatterWithinReplica"]


@dataclass(eq=False)
class Chunk:
    """A section of a tensor mapped to an IPU, as ``gcl::Chunk``: ``index`` is its place in the
    gathered tensor (the ring index), ``offset`` orders the chunks of one index."""

    tensor: Tensor | None = None
    index: int = 0
    offset: int = 0


@dataclass(init=False, eq=False)
class Chunks:
    """``gcl::Chunks``: ``chunks`` and ``originalInput``, the ``[numIPUs, ...]`` tensor whose shape
    and mapping an all-gather of the chunks takes. ``Chunks(size)`` holds ``size`` empty chunks."""

    originalInput: Tensor | None
    chunks: list[Chunk] = field(default_factory=list)

    def __init__(self, size: int = 0, originalInput: Tensor | None = None,
                 chunks: list[Chunk] | None = None) -> None:
        if not is_int(size) or size < 0:
            raise PoplibsArgumentError(f"Chunks: size must be a non-negative integer, got {size!r:.40}")
        self.originalInput = originalInput
        self.chunks = list(chunks) if chunks is not None else [Chunk() for _ in range(int(size))]


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


def _reduce_scatter(graph: Graph, out: Tensor, op: CollectiveOperator, prog: prog_.Sequence,
                    name: str) -> list[list[Tensor]]:
    """Reduce-scatter the partials ``out[0..P)`` in place, P > 1: each ``out[i]`` cut in P chunks;
    after P - 1 ring steps IPU i's chunk ``(i + 1) mod P`` holds that chunk combined by ``op`` over
    every IPU (divided by P for MEAN). Returns the chunks, ``[ipu][chunk]``."""
    ipus = out.dim(0)
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
    return parts


def _gather(prog: prog_.Sequence, parts: list[list[Tensor]], own: list[int]) -> None:
    """Ring all-gather of chunks: ``parts[i][c]`` is chunk c's place on IPU i, and IPU i starts
    holding chunk ``own[i]`` (a permutation); P - 1 steps, each IPU passing the chunk it received
    last to the next."""
    ipus = len(parts)
    for step in range(ipus - 1):
        _copy(prog, [(parts[i][own[(i - step) % ipus]], parts[(i + 1) % ipus][own[(i - step) % ipus]])
                     for i in range(ipus)])


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
    if ipus == 1:
        popops.squareInPlace(graph, out, prog, debugName=f"{name}/square")
        return out
    parts = _reduce_scatter(graph, out, op, prog, name)
    _gather(prog, parts, [(i + 1) % ipus for i in range(ipus)])
    return out


def reduceScatterWithinReplica(graph: Graph, toReduce: Tensor, op: CollectiveOperator, prog: prog_.Sequence,
                               debugContext: Any = "", options: dict | None = None) -> Chunks:
    """The partials ``toReduce[0..P)`` combined by ``op``, cut in P chunks of ``ceil(m / P)`` of
    their m elements (the last shorter, maybe empty), one on each IPU: ``Chunks`` whose
    ``originalInput`` is ``toReduce`` and whose chunk with ``index`` c (its place in the flattened
    result) is a 1-D tensor on the IPU that combined it. On the tiles: a copy of the partials and
    P - 1 reduce-scatter steps (each IPU sends a chunk to the next, popops vertices combine it)."""
    what = "reduceScatterWithinReplica"
    name, toReduce = checked_call(what, graph, toReduce, prog, debugContext, options)
    op = checked_op(op, toReduce, what)
    if op is CollectiveOperator.LOCAL:
        raise PoplibsError(f"{what}: LOCAL is not a reduction; an IPU's own chunk is a slice of its partial")
    ipus = _partials(graph, toReduce, what)
    out = graph.clone(toReduce, f"{name}/out")
    prog.add(prog_.Copy(toReduce, out))
    if ipus == 1:
        if op is CollectiveOperator.SQUARE_ADD and out.numElements():
            popops.squareInPlace(graph, out, prog, debugName=f"{name}/square")
        return Chunks(originalInput=toReduce, chunks=[Chunk(out[0].flatten(), 0, 0)])
    if out.numElements() == 0:
        parts = [chunks(out[i], ipus)[1] for i in range(ipus)]
    else:
        parts = _reduce_scatter(graph, out, op, prog, name)
    return Chunks(originalInput=toReduce,
                  chunks=[Chunk(parts[i][(i + 1) % ipus], (i + 1) % ipus, 0) for i in range(ipus)])


def allGatherWithinReplica(graph: Graph, t: Tensor | Chunks, prog: prog_.Sequence, debugContext: Any = "",
                           options: dict | None = None) -> Tensor:
    """Every IPU's part, on every IPU. Given GCL's ``Chunks`` (``chunks[i]`` IPU i's, e.g. from
    reduceScatterWithinReplica): a new tensor shaped and mapped like ``chunks.originalInput`` whose
    ``[i]`` holds the chunks in order of (index, offset), flattened into its shape. Given a tensor
    ``[P, ...]`` of partials: a new tensor of shape ``[P, P, ...]`` whose ``[i]`` (mapped like
    ``t[i]``, on IPU i) holds every partial ``t[0..P)``. On the tiles: P - 1 steps, each IPU passing
    the last chunk it received to the next IPU over the links."""
    if isinstance(t, Chunks):
        return _gather_chunks(graph, t, prog, debugContext, options)
    name, t = checked_call("allGatherWithinReplica", graph, t, prog, debugContext, options)
    ipus = _partials(graph, t, "allGatherWithinReplica")
    out = concat([graph.cloneN(t[i], ipus, f"{name}/out{i}").expand([0]) for i in range(ipus)], 0)
    _copy(prog, [(t[i], out[i][i]) for i in range(ipus)])
    _gather(prog, [[out[i][j] for j in range(ipus)] for i in range(ipus)], list(range(ipus)))
    return out


def _gather_chunks(graph: Graph, given: Chunks, prog: prog_.Sequence, debugContext: Any,
                   options: dict | None) -> Tensor:
    what = "allGatherWithinReplica"
    if isinstance(graph, Graph):
        tensorArgument(graph, given.originalInput, f"{what}: chunks.originalInput")
    name, reference = checked_call(what, graph, given.originalInput, prog, debugContext, options)
    ipus = _partials(graph, reference, what)
    if len(given.chunks) != ipus:
        raise PoplibsError(f"{what}: {len(given.chunks)} chunks for {ipus} IPUs: one chunk per IPU")
    for k, c in enumerate(given.chunks):
        if not isinstance(c, Chunk):
            raise PoplibsArgumentError(f"{what}: chunks[{k}] must be a gcl.Chunk, got {type(c).__name__}")
        tensorArgument(graph, c.tensor, f"{what}: chunks[{k}].tensor")
        for field_name in ("index", "offset"):
            if not is_int(getattr(c, field_name)) or getattr(c, field_name) < 0:
                raise PoplibsArgumentError(f"{what}: chunks[{k}].{field_name} must be a non-negative "
                                           f"integer, got {getattr(c, field_name)!r:.40}")
    order = sorted(range(ipus), key=lambda k: (given.chunks[k].index, given.chunks[k].offset))
    sizes = [given.chunks[k].tensor.numElements() for k in order]
    if sum(sizes) != reference[0].numElements():
        raise PoplibsError(f"{what}: the chunks hold {sum(sizes)} elements; each IPU's part of "
                           f"originalInput '{reference.name}' has {reference[0].numElements()}")
    out = graph.clone(reference, f"{name}/out")
    starts = [sum(sizes[:j]) for j in range(ipus)]
    # chunk order[j]'s place on each IPU, and the chunk each IPU starts with: chunk k is IPU k's
    parts = [[out[i].flatten().slice(a, a + n) for a, n in zip(starts, sizes)] for i in range(ipus)]
    own = [order.index(k) for k in range(ipus)]
    _copy(prog, [(given.chunks[k].tensor.flatten(), parts[k][own[k]]) for k in range(ipus)])
    _gather(prog, parts, own)
    return out
