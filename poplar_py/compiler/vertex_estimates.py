"""Cycle estimates of a compute set's vertices: ``setPerfEstimate`` values (the IPU Model's) and
what the perf estimators registered with ``graph.registerPerfEstimator`` say, with the FLOPs they
report; vertices without an estimate are measured by their kernels when they run."""

from __future__ import annotations

import numpy as np

from ..errors import MissingCycleEstimateError
from ..introspector import VertexIntrospector
from ..ir import GraphIR, PerfEstimator
from ..perf_estimate import VertexPerfEstimate
from ..regions.arrays import expand_ranges, first_alike
from ..target import Target
from ..vertex import Direction
from .computeset import ComputeSetPlan

_I64 = np.int64


def cycle_estimates(graph: GraphIR, plan: ComputeSetPlan, target: Target
                     ) -> tuple[np.ndarray, dict[str, int]]:
    """Per vertex: setPerfEstimate (read by the IPU Model only), else a registered estimator, else
    -1 (use the kernel's count); and the FLOPs the estimators reported, by the type they name (""
    when they name none)."""
    out = graph.vertices.perf[plan.vertices].copy() if target.calibration.perf_estimates \
        else np.full(plan.vertices.size, -1, _I64)
    flops: dict[str, int] = {}
    estimators = graph.perf_estimators
    if not estimators:
        return out, flops
    for cls, positions in plan.groups.items():
        estimator = estimators.get(cls.vertexName)
        if estimator is None:
            continue
        todo = positions[out[positions] < 0]
        # An estimator sees fields' sizes and state values only: vertices alike in those (a
        # library operation's vertices come in a few shapes) are estimated once.
        alike = _first_alike(graph, plan, cls, todo)
        firsts = np.flatnonzero(alike == np.arange(todo.size))
        known = [_estimate(estimator, VertexIntrospector(graph, plan, int(todo[k])), target, cls.vertexName)
                 for k in firsts.tolist()]
        cycles = np.zeros(todo.size, _I64)
        cycles[firsts] = [c for c, _, _ in known]
        out[todo] = cycles[alike]
        members = np.bincount(alike, minlength=todo.size)[firsts].tolist()
        for (_, done, kind), n in zip(known, members):
            if done:
                flops[kind] = flops.get(kind, 0) + done * n
    return out, flops


def _estimate(estimator: PerfEstimator, vertex: VertexIntrospector, target: Target,
              name: str) -> tuple[int, int, str]:
    """(cycles, FLOPs, the FLOPs' type or "") an estimator gives for one vertex."""
    est = estimator(vertex, target)
    cycles = est[0] if isinstance(est, tuple) else getattr(est, "cycles", est)
    if cycles is None:
        raise MissingCycleEstimateError(f"the perf estimator of '{name}' returned nothing for "
                                        f"{vertex.describe()}")
    done = est[1] if isinstance(est, tuple) and len(est) > 1 else getattr(est, "flops", 0)
    kind = est.flopsKind if isinstance(est, VertexPerfEstimate) else ""
    return int(cycles), int(done or 0), kind


def _first_alike(graph: GraphIR, plan: ComputeSetPlan, cls: type, positions: np.ndarray) -> np.ndarray:
    """Per vertex at these positions: the first of them alike in what an estimator sees, the
    lengths of its fields' segments and its state values (an index into ``positions``)."""
    seg = plan.segments
    first = np.searchsorted(seg.vertex, positions)
    owner, at = expand_ranges(first, np.searchsorted(seg.vertex, positions + 1) - first)
    owners, tokens = [np.repeat(owner, 2)], [np.stack((seg.field[at], seg.length[at]), axis=1).reshape(-1)]
    vids = plan.vertices[positions]
    every = np.arange(positions.size, dtype=_I64)
    for f, spec in enumerate(cls.fields.values()):
        if spec.direction is Direction.STATE:  # flat values of the field's type: their bytes tell them
            data, nbytes = graph.vertices.store.raw(f, vids)
            owners += [every, np.repeat(every, np.maximum(nbytes, 0))]
            tokens += [nbytes, data.astype(_I64)]
    owner = np.concatenate(owners)
    order = np.argsort(owner, kind="stable")  # vertex by vertex, each part in order
    return first_alike(np.concatenate(tokens)[order], np.bincount(owner, minlength=positions.size))
