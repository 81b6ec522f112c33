"""VertexPerfEstimate: what a perf estimator registered with ``graph.registerPerfEstimator`` returns."""

from __future__ import annotations

from dataclasses import dataclass

from .types import Type


@dataclass(frozen=True)
class VertexPerfEstimate:
    """Poplar's ``VertexPerfEstimate``: a vertex's ``cycles`` and the floating-point operations it
    does. ``flopsType`` and ``flopsPartialsType`` (poplar-py's additions) name the type they are
    done on and the type they accumulate in, so the profile can give the share of the peak of the
    units that pair runs on (``Target.getPeakFlopsPerCycle``; without a partials type, the type's
    headline peak); FLOPs without a type are counted but have no peak."""

    cycles: int
    flops: int = 0
    flopsType: Type | None = None
    flopsPartialsType: Type | None = None

    @property
    def flopsKind(self) -> str:
        """The profile's key for these FLOPs: the type, ``"half.float"`` for half accumulated in
        float (Graphcore's FP16.32), ``""`` without a type."""
        if self.flopsType is None:
            return ""
        partials = self.flopsPartialsType
        same = partials is None or partials == self.flopsType
        return str(self.flopsType) + ("" if same else f".{partials}")
