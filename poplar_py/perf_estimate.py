"""VertexPerfEstimate: what a perf estimator registered with ``graph.registerPerfEstimator`` returns."""

from __future__ import annotations

from dataclasses import dataclass

from .types import Type


@dataclass(frozen=True)
class VertexPerfEstimate:
    """Poplar's ``VertexPerfEstimate``: a vertex's ``cycles`` and the floating-point operations it
    does. ``flopsType`` (poplar-py's addition) names the type they are done on, so the profile can
    give the share of the device's peak for that type (``Target.getPeakFlopsPerCycle``); FLOPs
    without a type are counted but have no peak."""

    cycles: int
    flops: int = 0
    flopsType: Type | None = None
