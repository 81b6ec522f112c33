"""poputil: duplicate (Util.hpp), cloneToGraph, cloneToIpu and copyToIpu (TileMapping.hpp).

A clone is a new variable of the source's shape and type; these functions choose its tile
mapping: the source's own (duplicate), the same relative tiles of another (virtual) graph
(cloneToGraph), or the same tiles of another IPU (cloneToIpu, copyToIpu). Copies between
them are ordinary ``Copy`` programs: exchanges between tiles, over the IPU-Links when the
tensors are on different IPUs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from poplar_py import Graph, Interval, Tensor, TensorCloneMethod, concat
from poplar_py import program as prog_
from poplar_py.debug import debug_name
from poplar_py.errors import PoplarError

from .debug_info import PoplibsOpDebugInfo
from .errors import PoplibsArgumentError, PoplibsError, tensorArgument
from .tile_mapping import calcLinearTileMappingAndNewOffset

__all__ = ["cloneAndExpandAliasing", "cloneToGraph", "cloneToIpu", "copyToIpu", "createIpuCopy", "duplicate"]

_DEFAULT = TensorCloneMethod.PRESERVE_ORDER_UNLESS_ALIASES


def _name(di: PoplibsOpDebugInfo, t: Tensor, suffix: str) -> str:
    return di.getPathName() or f"{t.name}.{suffix}"


def _check_method(method: Any, what: str) -> None:
    if not isinstance(method, TensorCloneMethod):
        raise PoplibsArgumentError(f"{what}: method must be a TensorCloneMethod, got {method!r:.40}")


def _intervals(graph: Graph, t: Tensor, what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The mapping of flattened ``t`` as arrays (begin, end, tile)."""
    try:
        return graph.tile_intervals(t)
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
    di = PoplibsOpDebugInfo(debugContext, {"src": src, "method": method}, "duplicate")
    clone = graph.clone(src, _name(di, src, "duplicate"), method)
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
    di = PoplibsOpDebugInfo(debugContext, {"t": t, "method": method}, what)
    begin, end, tiles = _intervals(srcGraph, t, what)
    num_dst = dstGraph.getTarget().getNumTiles()
    if tiles.size and int(tiles.max()) >= num_dst:
        raise PoplibsError(f"{what}: tensor '{t.name}' uses tile {int(tiles.max())} of the source graph, but "
                           f"the destination graph has only {num_dst} tiles")
    clone = srcGraph.clone(t, _name(di, t, "clone"), method)
    dstGraph.map_intervals(clone.flatten(), begin, end, tiles)
    di.addOutput(clone)
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
    di = PoplibsOpDebugInfo(debugContext, {"t": t, "dstIpu": dstIPU, "method": method}, what)
    begin, end, tiles = _intervals(graph, t, what)
    clone = graph.clone(t, _name(di, t, f"ipu{dstIPU}"), method)
    graph.map_intervals(clone.flatten(), begin, end, dstIPU * per_ipu + tiles % per_ipu)
    di.addOutput(clone)
    return clone


def createIpuCopy(graph: Graph, t: Tensor, dstIpu: int, debugContext: Any = "",
                  method: TensorCloneMethod = TensorCloneMethod.PRESERVE_ORDER_AND_ALIASES
                  ) -> tuple[Tensor, Tensor, Tensor]:
    """``cloneToIpu(graph, t, dstIpu)`` without the copy: returns ``(clone, copySrc, copyDst)``,
    where ``Copy(copySrc, copyDst)`` moves the values (C++ fills the last two as reference
    arguments). The clone has no aliases (poplar-py's clones never keep them), so the copy is
    between ``t`` and the whole clone, aliased elements of ``t`` read more than once."""
    clone = cloneToIpu(graph, t, dstIpu, debugContext, method)
    return clone, t, clone


def copyToIpu(graph: Graph, src: Tensor, prog: prog_.Sequence, dstIPU: int, debugContext: Any = "",
              method: TensorCloneMethod = _DEFAULT) -> Tensor:
    """``cloneToIpu(graph, src, dstIPU)`` and a ``Copy(src, clone)`` appended to ``prog``: the
    values cross the IPU-Links to the same tiles of ``dstIPU``. Returns the clone."""
    if not isinstance(prog, prog_.Sequence):
        raise PoplibsArgumentError(f"copyToIpu: prog must be a program Sequence, got {type(prog).__name__}")
    clone, copy_src, copy_dst = createIpuCopy(graph, src, dstIPU, debugContext, method)
    prog.add(prog_.Copy(copy_src, copy_dst))
    return clone


def cloneAndExpandAliasing(graph: Graph, t: Tensor, offset: int = 0,
                           debugContext: Any = "") -> tuple[Tensor, int]:
    """A clone of ``t`` in which every element is its own, and the tile after the last one used:

    each element of ``t`` seen for the first time (in flattened order) gets a clone element on its
    tile; every later occurrence of an element (an alias: a broadcast, a repeated slice) gets a new
    element too, and those are mapped linearly from tile ``offset`` on, so no tile fills up with
    copies of what it held once (``calcLinearTileMappingAndNewOffset``). Returns ``(clone,
    newOffset)``; a ``t`` without aliases is simply cloned, and ``offset`` returned unchanged."""
    what = "cloneAndExpandAliasing"
    t = tensorArgument(graph, t, f"{what}: t")
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)) or offset < 0:
        raise PoplibsArgumentError(f"{what}: offset must be a non-negative integer, got {offset!r:.40}")
    name = debug_name(debugContext, what) if debugContext else ""
    if not t.containsAliases():
        return graph.clone(t, name or f"{t.name}.clone"), int(offset)
    var, off = t.flatten().runs().elements()
    key = var.astype(np.int64) * (int(off.max()) + 1) + off
    first = np.zeros(key.size, bool)
    first[np.unique(key, return_index=True)[1]] = True
    clone = graph.clone(t, name or f"{t.name}.clone", TensorCloneMethod.CREATE_NEW_ORDER)
    flat = clone.flatten()
    edges = np.flatnonzero(np.diff(np.concatenate(([0], (~first).astype(np.int8), [0]))))
    aliased = concat(flat.slices([Interval(int(b), int(e)) for b, e in zip(edges[::2], edges[1::2])]))
    mapping, new_offset = calcLinearTileMappingAndNewOffset(graph, aliased, int(offset))
    graph.setTileMapping(aliased, mapping)
    return clone, new_offset
