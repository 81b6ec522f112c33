"""Pass: expand a replicated graph into its replicas.

A replicated graph holds one replica. Once its tile mapping is complete, this pass makes
``R`` copies of every variable, vertex and edge: replica ``r``'s copy of variable ``v`` is
variable ``v + r * V``, of vertex ``x`` is ``x + r * NV``, and what lives on tile ``t`` of
the replica lives on tile ``t + r * T`` of the device (``T`` tiles per replica, so on the
replica's own IPUs). The replica index constants hold ``r`` on replica ``r``.

Lowering then turns each program into steps over every replica at once
(:meth:`Replication.runs`): all replicas run the same program on their own tile memories, and a
``CrossReplicaCopy`` is an ordinary planned copy between tiles of different replicas, costed by
the exchange and the IPU-Link fabric like any other.
"""

from __future__ import annotations

import dataclasses
import types as pytypes
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..ir import EdgesIR, GraphIR, VariablesIR, VerticesIR
from ..regions import IntervalMap, Runs
from .mapping import TileMapping

_I64 = np.int64


@dataclass(frozen=True)
class Replication:
    """How replicas are laid out in the expanded graph: per replica, ``variables`` variables,
    ``elements`` element ids and ``tiles`` tiles."""

    factor: int
    variables: int
    elements: int
    tiles: int

    def shifted(self, runs: Runs, replica: int) -> Runs:
        """``runs`` (elements of replica 0) as the same elements of ``replica``."""
        if replica == 0:
            return runs
        return Runs(runs.var + replica * self.variables, runs.offset, runs.count, runs.stride)

    def runs(self, runs: Runs, replicas: Sequence[int] | None = None) -> Runs:
        """The elements of every replica (or of ``replicas``, in that order), one after another."""
        order = range(self.factor) if replicas is None else replicas
        return Runs.concat([self.shifted(runs, r) for r in order])


def replicate(graph: GraphIR, mapping: TileMapping) -> tuple[GraphIR, TileMapping, Replication]:
    """The graph and its complete mapping with every replica expanded (unchanged when R is 1)."""
    r_count = graph.replication_factor
    v = graph.variables
    rep = Replication(r_count, len(v), v.num_elements, graph.target.getNumTiles())
    if r_count == 1:
        return graph, mapping, rep
    assert graph.device_target is not None
    imap, tiles = _mapping(mapping.intervals, mapping.tiles, rep)
    user_map, user_tiles = _mapping(graph.mapping, graph.mapping_tiles, rep)
    constants = set(graph.replica_index_constants)
    initial = tuple((var + r * rep.variables, _replica_values(values, r) if var in constants else values)
                    for r in range(r_count) for var, values in graph.initial)
    expanded = dataclasses.replace(
        graph, target=graph.device_target, variables=_variables(v, r_count), mapping=user_map,
        mapping_tiles=user_tiles, initial=initial, vertices=_vertices(graph.vertices, rep),
        edges=_edges(graph, rep), device_target=None, replica_index_constants=())
    return expanded, TileMapping(imap, tiles, mapping.auto_mapped), rep


def _replica_values(values: np.ndarray, replica: int) -> np.ndarray:
    out = np.full_like(values, replica)
    out.flags.writeable = False
    return out


def _mapping(imap: IntervalMap, tiles: np.ndarray, rep: Replication) -> tuple[IntervalMap, np.ndarray]:
    starts = np.concatenate([imap.starts + r * rep.elements for r in range(rep.factor)])
    moved = np.concatenate([np.where(tiles >= 0, tiles + r * rep.tiles, tiles) for r in range(rep.factor)])
    return IntervalMap(starts, imap.end * rep.factor), moved


def _variables(v: VariablesIR, r_count: int) -> VariablesIR:
    bases = np.concatenate([v.bases + r * v.num_elements for r in range(r_count)])
    return VariablesIR(v.names * r_count, v.types * r_count, v.shapes * r_count, np.tile(v.sizes, r_count),
                       bases, np.tile(v.constant, r_count), v.num_elements * r_count)


def _vertices(x: VerticesIR, rep: Replication) -> VerticesIR:
    n, r_count = len(x), rep.factor
    cs = np.tile(x.compute_set, r_count)
    by_cs = np.argsort(cs, kind="stable").astype(_I64)
    bounds = np.searchsorted(cs[by_cs], np.arange(x.cs_bounds.size)).astype(_I64)
    tile = np.concatenate([np.where(x.tile >= 0, x.tile + r * rep.tiles, x.tile) for r in range(r_count)])
    sizes = {(vid + r * n, f): size for r in range(r_count) for (vid, f), size in x.sizes.items()}
    state = {(vid + r * n, f): values for r in range(r_count) for (vid, f), values in x.state.items()}
    listed = frozenset((vid + r * n, f) for r in range(r_count) for vid, f in x.listed)
    return VerticesIR(x.classes, np.tile(x.cls, r_count), cs, tile, np.tile(x.perf, r_count),
                      np.tile(x.source, r_count), x.sources, by_cs, bounds, pytypes.MappingProxyType(sizes),
                      listed, pytypes.MappingProxyType(state), x.num_edges * r_count)


def _edges(graph: GraphIR, rep: Replication) -> EdgesIR:
    e, n, r_count = graph.edges, len(graph.vertices), rep.factor
    cs = np.tile(graph.vertices.compute_set[e.vertex], r_count)
    order = np.argsort(cs, kind="stable")  # each replica's rows of a compute set follow the previous one's
    var = np.concatenate([np.where(e.var >= 0, e.var + r * rep.variables, e.var) for r in range(r_count)])
    vertex = np.concatenate([e.vertex + r * n for r in range(r_count)])
    cols = [vertex, np.tile(e.field, r_count), np.tile(e.row, r_count), var, np.tile(e.offset, r_count),
            np.tile(e.count, r_count), np.tile(e.stride, r_count)]
    bounds = np.searchsorted(cs[order], np.arange(e.cs_bounds.size)).astype(_I64)
    return EdgesIR(*(c[order] for c in cols), bounds)
