"""popnn::experimental: ROIAlign (experimental/ROIAlign.hpp).

``roiAlignFwd`` pools every region of interest ``bottomRois [numRois, 4]`` (``x1, y1, x2, y2``
in input coordinates, scaled by ``spatialScale``) of image ``bottomBatchIndex[r]`` (INT) of
``bottomData [N, C, H, W]`` into ``alignedHeight x alignedWidth`` bins, each the mean of
``samplingRatio x samplingRatio`` bilinear samples; ``aligned`` shifts the regions by half a
pixel (and lets them be narrower than a pixel). One ``popnn::ROIAlignForward`` vertex per
channel, on tile ``c % numTiles``, handles that channel of every region;
``roiAlignInputGradient`` runs one ``popnn::ROIAlignBackward`` vertex per channel the same way,
accumulating the bins' gradients into the channel's planes (codelets/popnn/roi_align.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from poplar_py import FLOAT, HALF, INT, Graph, Tensor
from poplar_py import program as prog_
from poplar_py.debug import debug_name

from ..popops.perf_estimation import registerDefaultEstimator
from ..poputil import PoplibsError, templateVertex
from .perf_estimation import roiAlignEstimator

__all__ = ["roiAlignFwd", "roiAlignInputGradient", "roiAlignParams"]


@dataclass
class roiAlignParams:  # noqa: N801 - PopLibs' name
    """``roiAlignParams(samplingRatio, poolH, poolW, aligned, spatialScale)``."""

    samplingRatio_: int
    alignedHeight_: int
    alignedWidth_: int
    aligned_: bool
    spatialScale_: float


def _check(what: str, data: Any, rois: Any, index: Any, params: Any) -> None:
    if not isinstance(params, roiAlignParams):
        raise PoplibsError(f"{what}: params must be popnn.experimental.roiAlignParams, got "
                           f"{type(params).__name__}")
    if not isinstance(data, Tensor) or data.rank() != 4 or data.elementType() not in (FLOAT, HALF):
        raise PoplibsError(f"{what}: bottomData must be a 4-dimensional FLOAT or HALF tensor")
    if not isinstance(rois, Tensor) or rois.rank() != 2 or rois.dim(1) != 4 \
            or rois.elementType() != data.elementType():
        raise PoplibsError(f"{what}: bottomRois must be [numRois, 4] of bottomData's type")
    if not isinstance(index, Tensor) or index.shape() != [rois.dim(0)] or index.elementType() != INT:
        raise PoplibsError(f"{what}: bottomBatchIndex must be INT [{rois.dim(0)}]")
    for value, arg in ((params.samplingRatio_, "samplingRatio"), (params.alignedHeight_, "poolH"),
                       (params.alignedWidth_, "poolW")):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise PoplibsError(f"{what}: {arg} must be greater than 0, got {value!r:.40}")
    if not params.spatialScale_ > 0:
        raise PoplibsError(f"{what}: spatialScale must be greater than 0, got {params.spatialScale_!r:.40}")


def _add(graph: Graph, prog: prog_.Sequence, vertex_name: str, bins: str, data: Tensor, fields: dict,
         params: roiAlignParams, name: str) -> None:
    """One vertex per channel: ``fields[k][c]`` connected, on tile ``c % numTiles``."""
    _, c, h, w = data.shape()
    vertex = templateVertex(vertex_name, data.elementType())
    registerDefaultEstimator(graph, vertex, roiAlignEstimator(bins))
    cs = graph.addComputeSet(name)
    tiles = graph.getTarget().getNumTiles()
    for ch in range(c):
        v = graph.addVertex(cs, vertex, {k: t(ch) for k, t in fields.items()})
        for key, value in (("height", h), ("width", w), ("alignedH", params.alignedHeight_),
                           ("alignedW", params.alignedWidth_), ("grid", params.samplingRatio_),
                           ("spatialScale", float(params.spatialScale_)), ("aligned", bool(params.aligned_))):
            graph.setInitialValue(v[key], value)
        graph.setTileMapping(v, ch % tiles)
    prog.add(prog_.Execute(cs))


def _by_channel(graph: Graph, type_: Any, shape: list[int], name: str) -> Tensor:
    """A new ``shape`` tensor whose channel ``c`` (dim 1) lies on tile ``c % numTiles``, where
    ``_add`` puts that channel's vertex."""
    t = graph.addVariable(type_, shape, name)
    tiles = graph.getTarget().getNumTiles()
    for ch in range(shape[1]):
        graph.setTileMapping(t[:, ch], ch % tiles)
    return t


def roiAlignFwd(graph: Graph, prog: prog_.Sequence, bottomData: Tensor, bottomRois: Tensor,
                bottomBatchIndex: Tensor, params: roiAlignParams, debugContext: Any = "") -> Tensor:
    """A new ``[numRois, C, alignedHeight, alignedWidth]`` tensor of the regions' bins."""
    _check("roiAlignFwd", bottomData, bottomRois, bottomBatchIndex, params)
    name = debug_name(debugContext, "roiAlignFwd: debugContext") or "roiAlignFwd"
    n, c, h, w = bottomData.shape()
    rois = bottomRois.dim(0)
    shape = [rois, c, params.alignedHeight_, params.alignedWidth_]
    out = _by_channel(graph, bottomData.elementType(), shape, f"{name}/out")
    planes = bottomData.reshape([n, c, h * w])
    bins = out.reshape([rois, c, params.alignedHeight_ * params.alignedWidth_])
    _add(graph, prog, "popnn::ROIAlignForward", "out", bottomData,
         {"planes": lambda ch: planes[:, ch], "rois": lambda ch: bottomRois,
          "batchIndex": lambda ch: bottomBatchIndex, "out": lambda ch: bins[:, ch]}, params, name)
    return out


def roiAlignInputGradient(graph: Graph, prog: prog_.Sequence, bottomData: Tensor, bottomRois: Tensor,
                          bottomBatchIndex: Tensor, topDataGrad: Tensor, params: roiAlignParams,
                          debugContext: Any = "") -> Tensor:
    """The gradient ``[N, C, H, W]`` of ``bottomData`` from the bins' gradient ``topDataGrad``."""
    what = "roiAlignInputGradient"
    _check(what, bottomData, bottomRois, bottomBatchIndex, params)
    name = debug_name(debugContext, f"{what}: debugContext") or what
    n, c, h, w = bottomData.shape()
    rois = bottomRois.dim(0)
    shape = [rois, c, params.alignedHeight_, params.alignedWidth_]
    if not isinstance(topDataGrad, Tensor) or topDataGrad.shape() != shape \
            or topDataGrad.elementType() != bottomData.elementType():
        raise PoplibsError(f"{what}: topDataGrad must be {bottomData.elementType()} {shape}")
    grads = _by_channel(graph, bottomData.elementType(), [n, c, h, w], f"{name}/grads")
    planes = grads.reshape([n, c, h * w])
    top = topDataGrad.reshape([rois, c, params.alignedHeight_ * params.alignedWidth_])
    _add(graph, prog, "popnn::ROIAlignBackward", "topGrad", bottomData,
         {"topGrad": lambda ch: top[:, ch], "rois": lambda ch: bottomRois,
          "batchIndex": lambda ch: bottomBatchIndex, "planeGrads": lambda ch: planes[:, ch]}, params, name)
    return grads
