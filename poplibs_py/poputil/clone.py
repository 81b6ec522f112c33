"""poputil: duplicate (Util.hpp), cloneToGraph, cloneToIpu and copyToIpu (TileMapping.hpp).

A clone is a new variable of the source's shape and type; these functions choose its tile
mapping: the source's own (duplicate), the same relative tiles of another (virtual) graph
(cloneToGraph), or the same tiles of another IPU (cloneToIpu, copyToIpu). Copies between
them are ordinary ``Copy`` programs: exchanges between tiles, over the IPU-Links when the
tensors are on different IPUs.
"""

from __future__ import annotations

from typing import Any

from poplar_py import Graph, Interval, Tensor, TensorCloneMethod
from poplar_py import program as prog_
from poplar_py.errors import PoplarError

from .errors import PoplibsArgumentError, PoplibsError, tensorArgument

__all__ = ["cloneToGraph", "cloneToIpu", "copyToIpu", "duplicate"]

_DEFAULT = TensorCloneMethod.PRESERVE_ORDER_UNLESS_ALIASES


def _name(debugContext: Any, t: Tensor, suffix: str) -> str:
    return debugContext if isinstance(debugContext, str) and debugContext else f"{t.name}.{suffix}"


def _check_method(method: Any, what: str) -> None:
    if not isinstance(method, TensorCloneMethod):
        raise PoplibsArgumentError(f"{what}: method must be a TensorCloneMethod, got {method!r:.40}")


def _mapping(graph: Graph, t: Tensor, what: str) -> list[list[Interval]]:
    try:
        return graph.getTileMapping(t)
    except PoplarError as e:
        raise PoplibsError(f"{what}: tensor '{t.name}' must be completely mapped on the source graph's "
                           f"tiles ({e})") from e


def duplicate(graph: Graph, src: Tensor, prog: prog_.Sequence, debugContext: Any = "",
              method: TensorCloneMethod = _DEFAULT) -> Tensor:
    """A clone of ``src`` (same shape, type and tile mapping; aliased elements get their own)
    and a ``Copy(src, clone)`` appended to ``prog``: the copy runs on the tiles holding them."""
    src = tensorArgument(graph, src, "duplicate")
    _check_method(method, "duplicate")
    if not isinstance(prog, prog_.Sequence):
        raise PoplibsArgumentError(f"duplicate of tensor '{src.name}': prog must be a program Sequence, "
                                   f"got {type(prog).__name__}")
    clone = graph.clone(src, _name(debugContext, src, "duplicate"), method)
    prog.add(prog_.Copy(src, clone))
    return clone


def cloneToGraph(srcGraph: Graph, dstGraph: Graph, t: Tensor, debugContext: Any = "",
                 method: TensorCloneMethod = _DEFAULT) -> Tensor:
    """A clone of ``t`` in ``dstGraph``: an element on tile k of ``srcGraph`` goes on tile k of
    ``dstGraph`` (tile ids relative to each graph, as in virtual graphs).

    Both graphs must be views of one top-level graph (the graph and its virtual graphs) with the
    same replication factor, and ``dstGraph`` must have more tiles than the highest tile ``t``
    uses in ``srcGraph``.
    """
    what = "cloneToGraph"
    t = tensorArgument(srcGraph, t, what)
    _check_method(method, what)
    if not isinstance(dstGraph, Graph) or dstGraph.getTopLevelGraph() is not srcGraph.getTopLevelGraph():
        raise PoplibsArgumentError(f"{what}: the destination graph of tensor '{t.name}' must share the "
                                   "source graph's top-level graph (a virtual graph of it, or it)")
    if srcGraph.getReplicationFactor() != dstGraph.getReplicationFactor():
        raise PoplibsError(f"{what}: cannot clone tensor '{t.name}' to a graph with a different "
                           f"replication factor ({srcGraph.getReplicationFactor()} and "
                           f"{dstGraph.getReplicationFactor()})")
    mapping = _mapping(srcGraph, t, what)
    used = [tile for tile, ivs in enumerate(mapping) if ivs]
    num_dst = dstGraph.getTarget().getNumTiles()
    if used and used[-1] >= num_dst:
        raise PoplibsError(f"{what}: tensor '{t.name}' uses tile {used[-1]} of the source graph, but the "
                           f"destination graph has only {num_dst} tiles")
    clone = dstGraph.addVariable(t.elementType(), t.shape(), _name(debugContext, t, "clone"))
    dstGraph.setTileMapping(clone, mapping[:num_dst])
    return clone


def cloneToIpu(graph: Graph, t: Tensor, dstIPU: int, debugContext: Any = "",
               method: TensorCloneMethod = _DEFAULT) -> Tensor:
    """A clone of ``t`` on IPU ``dstIPU`` of ``graph``'s multi-IPU target: an element on tile i of
    any IPU goes on tile i of ``dstIPU``, so each tile's layout pattern is kept."""
    what = "cloneToIpu"
    t = tensorArgument(graph, t, what)
    _check_method(method, what)
    target = graph.getTarget()
    num_ipus, per_ipu = target.getNumIPUs(), target.getTilesPerIPU()
    if isinstance(dstIPU, bool) or not isinstance(dstIPU, int) or not 0 <= dstIPU < num_ipus:
        raise PoplibsError(f"{what}: dstIPU {dstIPU!r} for tensor '{t.name}' is not an IPU of the "
                           f"target (0 to {num_ipus - 1})")
    mapping = _mapping(graph, t, what)
    moved: list[list[Interval]] = [[] for _ in range(target.getNumTiles())]
    for tile, intervals in enumerate(mapping):
        moved[dstIPU * per_ipu + tile % per_ipu] += intervals
    clone = graph.addVariable(t.elementType(), t.shape(), _name(debugContext, t, f"ipu{dstIPU}"))
    graph.setTileMapping(clone, moved)
    return clone


def copyToIpu(graph: Graph, src: Tensor, prog: prog_.Sequence, dstIPU: int, debugContext: Any = "",
              method: TensorCloneMethod = _DEFAULT) -> Tensor:
    """``cloneToIpu(graph, src, dstIPU)`` and a ``Copy(src, clone)`` appended to ``prog``: the
    values cross the IPU-Links to the same tiles of ``dstIPU``. Returns the clone."""
    if not isinstance(prog, prog_.Sequence):
        raise PoplibsArgumentError(f"copyToIpu: prog must be a program Sequence, got {type(prog).__name__}")
    clone = cloneToIpu(graph, src, dstIPU, debugContext, method)
    prog.add(prog_.Copy(src, clone))
    return clone
