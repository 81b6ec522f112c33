"""popops NormaliseImage.hpp: scale and normalise 3-channel images into 4 channels.

``createNormaliseImageInput`` spreads whole pixels over the tiles (grains of pixels that fill
whole 32-bit words); ``normaliseImage`` gives each tile's pixels to its workers, one
``NormaliseImage`` vertex each, whose 4-channel output is mapped on that tile.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from poplar_py import FLOAT, HALF, UNSIGNED_CHAR, Graph, Target, Tensor, VertexPerfEstimate
from poplar_py import program as prog_
from poplar_py.debug import debug_name
from poplar_py.types import asType

from ..poputil import (
    PoplibsError,
    mapTensorLinearly,
    sequenceArgument,
    splitRegionsBetweenWorkers,
    templateVertex,
)
from .perf_estimation import registerDefaultEstimator

__all__ = ["createNormaliseImageInput", "normaliseImage"]

#: cycles to start a worker, and a pixel, by input type (PopLibs' NormaliseImage estimate)
_CYCLES = {UNSIGNED_CHAR: (28, 8), HALF: (51, 11), FLOAT: (51, 17)}


def normaliseImageEstimator(inType: Any) -> Any:
    """A worker's cycles for its pixels (PopLibs' per-worker figures)."""
    start, per_pixel = _CYCLES[inType]

    def estimate(vertex: Any, target: Target) -> VertexPerfEstimate:
        return VertexPerfEstimate(start + per_pixel * (vertex.getFieldInfo("inT").size() // 3) + 1)

    return estimate


def _check(what: str, type_: Any, shape: Sequence[int]) -> None:
    if type_ not in _CYCLES:
        raise PoplibsError(f"{what}() only supports UNSIGNED_CHAR, HALF and FLOAT inputs, not {type_}")
    if len(shape) < 2 or shape[-1] != 3:
        raise PoplibsError(f"{what}() requires the inner dimension to be 3, got shape {list(shape)}")


def createNormaliseImageInput(graph: Graph, type_: Any, shape: Sequence[int],
                              debugContext: Any = "") -> Tensor:
    """A new image tensor ``[..., 3]`` mapped linearly in grains of whole pixels filling whole
    32-bit words, at least a grain per worker on each tile used."""
    type_ = asType(type_)
    shape = [int(s) for s in shape]
    _check("createNormaliseImageInput", type_, shape)
    t = graph.addVariable(type_, shape, debug_name(debugContext, "createNormaliseImageInput: debugContext")
                          or "createNormaliseImageInput")
    grain = 3 * (4 // type_.size)
    mapTensorLinearly(graph, t, grain * graph.getTarget().getNumWorkerContexts(), grain)
    return t


def normaliseImage(graph: Graph, seq: prog_.Sequence, tIn: Tensor, inScale: float, offsets: Tensor,
                   scales: Tensor, debugContext: Any = "") -> Tensor:
    """A new ``[..., 4]`` tensor: ``(tIn * inScale - offsets) * scales`` per channel, the fourth
    channel 0; HALF for UNSIGNED_CHAR images, else the image's type (``offsets`` and
    ``scales``, 3 elements, of that type). Each tile's pixels must be whole (as
    ``createNormaliseImageInput`` maps them); one compute set."""
    name = debug_name(debugContext, "normaliseImage: debugContext") or "normalise"
    seq = sequenceArgument(seq, "normaliseImage: seq")
    _check("normaliseImage", tIn.elementType(), tIn.shape())
    out_type = HALF if tIn.elementType() == UNSIGNED_CHAR else tIn.elementType()
    for what, t in (("offsets", offsets), ("scales", scales)):
        if not isinstance(t, Tensor) or t.elementType() != out_type or t.numElements() != 3:
            raise PoplibsError(f"normaliseImage() requires the {what} tensor to have 3 elements of the "
                               f"output type {out_type}")
    if float(inScale) == 0.0:
        raise PoplibsError("normaliseImage() must have a non-zero inScale")
    out = graph.addVariable(out_type, [*tIn.shape()[:-1], 4], name)
    flat_in, flat_out = tIn.flatten(), out.flatten()
    cs = graph.addComputeSet(name)
    vertex = templateVertex("popops::NormaliseImage", tIn.elementType(), out_type)
    registerDefaultEstimator(graph, vertex, normaliseImageEstimator(tIn.elementType()))
    target = graph.getTarget()
    for tile, intervals in enumerate(graph.getTileMapping(flat_in)):
        if any(iv.begin() % 3 or iv.end() % 3 for iv in intervals):
            raise PoplibsError("normaliseImage() expects whole pixels to be mapped to each tile. Did you "
                               "create the input using createNormaliseImageInput()?")
        pixels = [(iv.begin() // 3, iv.end() // 3) for iv in intervals]
        for part in splitRegionsBetweenWorkers(target, pixels, 1) if pixels else []:
            for iv in part:
                b, e = iv.begin(), iv.end()
                graph.setTileMapping(flat_out.slice(4 * b, 4 * e), tile)
                v = graph.addVertex(cs, vertex, {"inT": flat_in.slice(3 * b, 3 * e),
                                                 "out": flat_out.slice(4 * b, 4 * e),
                                                 "scales": scales.flatten(), "offsets": offsets.flatten()})
                graph.setInitialValue(v["inScale"], float(inScale))
                graph.setTileMapping(v, tile)
    seq.add(prog_.Execute(cs))
    return out
