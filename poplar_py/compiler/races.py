"""The data-race check of a compute set, on intervals of elements.

Two vertices of one compute set may not touch an element that either of them writes
(Poplar's ``graph_cycle_error``). Each vertex's accesses become gid intervals, merged per
vertex; an element is in conflict when at least two vertices cover it and one of them
writes it. Counting coverage over the intervals' end points costs O(intervals), not
O(elements).
"""

from __future__ import annotations

import numpy as np

from ..errors import GraphCycleError
from ..ir import GraphIR
from ..regions.arrays import union_grouped, unique_sorted
from .segments import SegmentRuns, Segments

_I64 = np.int64


def _coverage(points: np.ndarray, group: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """How many groups cover each elementary interval ``[points[k], points[k + 1])``
    (intervals already merged within each group)."""
    _, lo, hi = union_grouped(group, lo, hi)
    delta = np.bincount(np.searchsorted(points, lo), minlength=points.size) \
        - np.bincount(np.searchsorted(points, hi), minlength=points.size)
    return np.cumsum(delta)[:-1]


def _overlapping(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The intervals ``[lo, hi)`` that overlap another one, in order (one sort)."""
    order = np.argsort(lo, kind="stable")
    slo, shi = lo[order], hi[order]
    overlaps = np.zeros(lo.size, dtype=bool)
    overlaps[1:] = slo[1:] < np.maximum.accumulate(shi)[:-1]
    overlaps[:-1] |= shi[:-1] > slo[1:]
    return np.sort(order[overlaps])


def check_races(cs_name: str, graph: GraphIR, vids: np.ndarray, seg: Segments, sruns: SegmentRuns) -> None:
    """Raise GraphCycleError if two vertices touch an element one of them writes."""
    runs = sruns.runs
    if not len(runs) or not seg.writes[sruns.segment].any():
        return
    # Only runs whose spans overlap another's can conflict, and only if one of them writes:
    # elements are looked at for those runs alone.
    first = runs.gids(graph.variables.bases)
    last = first + (runs.count - 1) * runs.stride
    suspects = _overlapping(np.minimum(first, last), np.maximum(first, last) + 1)
    if not seg.writes[sruns.segment[suspects]].any():
        return
    lo, hi, run = runs.select(suspects).unit_intervals(graph.variables.bases)
    run = suspects[run]
    involved = _overlapping(lo, hi)
    if not seg.writes[sruns.segment[run[involved]]].any():
        return
    lo, hi, run = lo[involved], hi[involved], run[involved]
    segment = sruns.segment[run]
    vertex, writes = seg.vertex[segment], seg.writes[segment]
    points = unique_sorted(np.concatenate((lo, hi)))
    touched = _coverage(points, vertex, lo, hi)
    written = _coverage(points, vertex[writes], lo[writes], hi[writes])
    bad = np.flatnonzero((touched >= 2) & (written >= 1))
    if not bad.size:
        return
    element = int(points[bad[0]])
    count = int((points[bad + 1] - points[bad]).sum())
    # The accesses to that element, in (vertex, segment) order: the first writer, and the
    # first access of another vertex.
    at = np.flatnonzero((lo <= element) & (element < hi))
    at = at[np.lexsort((segment[at], vertex[at]))]
    writer = int(segment[at[np.flatnonzero(writes[at])[0]]])
    other = int(segment[next(a for a in at.tolist() if vertex[a] != seg.vertex[writer])])
    var = int(graph.variables.var_of(np.asarray([element]))[0])

    def field_of(s: int) -> str:
        vid = int(vids[seg.vertex[s]])
        cls = graph.vertices.classes[int(graph.vertices.cls[vid])]
        return f"{cls.vertexName}.{list(cls.fields)[int(seg.field[s])]} of {graph.vertices.describe(vid)}"

    raise GraphCycleError(
        f"compute set '{cs_name}': field {field_of(writer)} writes element "
        f"{element - int(graph.variables.bases[var])} of variable '{graph.variables.names[var]}' that field "
        f"{field_of(other)} {'writes' if seg.writes[other] else 'reads'} in the same compute set "
        f"({count} element(s) conflict)")
