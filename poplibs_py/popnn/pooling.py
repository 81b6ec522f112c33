"""popnn pooling (PopLibs' Pooling.hpp): max, average and sum pooling of NCHW activations.

Shapes: input ``[batchSize, numChannels, *inputFieldShape]`` with a 1-D or 2-D field; output
``[batchSize, numChannels, *outputFieldShape]`` where, per field dimension,
``out = (in + lower + upper - kernel) // stride + 1`` and ``lower``/``upper`` are
``inputTruncationOrPaddingLower/Upper`` (positive: padding, negative: truncation).

MAX ignores padding (a window of padding only gives 0); AVG divides by the number of
non-padding elements in the window; SUM adds. Gradients: MAX sends each window's gradient to every
input equal to the window's maximum (PopLibs' rule; with ``useScaledGradient`` it is divided
between them), AVG spreads it over the window's non-padding inputs, SUM copies it to them.

Work is split by planes (one image channel): each plane is pooled by a vertex on the tile that
holds most of the input plane, each tile's planes shared between its workers; the output plane
is mapped to that tile too. (PopLibs also splits large planes and groups channels for vector
instructions; that only changes speed.)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np

from poplar_py import FLOAT, HALF, Graph, Tensor, Type
from poplar_py import program as prog_
from poplar_py.debug import debug_name

from ..poputil import PoplibsError, checkOptions, templateVertex, trailingArguments
from ._rows import map_rows, row_tiles, worker_rows

__all__ = ["PoolParams", "PoolingType", "pool", "poolInputGradient"]


#: the options PopLibs' pooling knows (layout and speed choices: checked, changing nothing here)
POOL_OPTIONS = frozenset({"poolUseIntrospectiveMapping", "optimizeForSpeed",
                          "useFloatPartialsWhereBeneficial"})


class PoolingType(enum.Enum):
    MAX = 0
    AVG = 1
    SUM = 2


@dataclass
class PoolParams:
    """PopLibs' ``popnn::pooling::PoolParams`` (lists have one entry per field dimension)."""

    poolingType: PoolingType
    inputFieldShape: list[int]
    kernelShape: list[int]
    stride: list[int]
    inputTruncationOrPaddingLower: list[int]
    inputTruncationOrPaddingUpper: list[int]
    numChannels: int
    batchSize: int
    dType: Type = field(default=FLOAT)

    def getOutputFieldShape(self) -> list[int]:
        """Per field dimension, ``(in + lower + upper - kernel) // stride + 1``."""
        return [(i + lo + up - k) // s + 1 for i, k, s, lo, up in zip(
            self.inputFieldShape, self.kernelShape, self.stride, self.inputTruncationOrPaddingLower,
            self.inputTruncationOrPaddingUpper)]

    def getNumFieldDims(self) -> int:
        return len(self.inputFieldShape)


def _validate(params: PoolParams, name: str) -> None:
    if not isinstance(params.poolingType, PoolingType):
        raise PoplibsError(f"{name}: poolingType {params.poolingType!r} is not a PoolingType")
    dims = params.getNumFieldDims()
    if dims not in (1, 2):
        raise PoplibsError(f"{name}: only 1-D and 2-D fields are supported, got inputFieldShape "
                           f"{params.inputFieldShape}")
    lists = {"kernelShape": params.kernelShape, "stride": params.stride,
             "inputTruncationOrPaddingLower": params.inputTruncationOrPaddingLower,
             "inputTruncationOrPaddingUpper": params.inputTruncationOrPaddingUpper}
    for what, values in lists.items():
        if len(values) != dims:
            raise PoplibsError(f"{name}: {what} {list(values)} must have {dims} entries, as inputFieldShape")
    if min(params.kernelShape) < 1 or min(params.stride) < 1:
        raise PoplibsError(f"{name}: kernel {params.kernelShape} and stride {params.stride} must be positive")
    if min(params.getOutputFieldShape()) < 1:
        raise PoplibsError(f"{name}: the kernel {params.kernelShape} does not fit the (padded) field "
                           f"{params.inputFieldShape}")
    if params.dType not in (FLOAT, HALF):
        raise PoplibsError(f"{name}: dType must be FLOAT or HALF, not {params.dType}")


def _check_tensor(params: PoolParams, t: Tensor, field_shape: list[int], what: str, name: str) -> None:
    shape = [params.batchSize, params.numChannels, *field_shape]
    if t.shape() != shape or t.elementType() != params.dType:
        raise PoplibsError(f"{name}: {what} '{t.name}' must be {params.dType} {shape}, is "
                           f"{t.elementType()} {t.shape()}")


def _geom(params: PoolParams) -> np.ndarray:
    """The codelets' geometry state (a 1-D field is a 2-D one of height 1)."""
    pad = 2 - params.getNumFieldDims()

    def two(values: list[int], fill: int) -> list[int]:
        return [fill] * pad + [int(v) for v in values]

    return np.array([*two(params.inputFieldShape, 1), *two(params.kernelShape, 1), *two(params.stride, 1),
                     *two(params.inputTruncationOrPaddingLower, 0), *two(params.getOutputFieldShape(), 1)],
                    dtype=np.int32)


def _planes(t: Tensor) -> Tensor:
    """``[batch * channels, field elements]``: one row per plane (a view)."""
    return t.reshape([t.dim(0) * t.dim(1), t.numElements() // max(t.dim(0) * t.dim(1), 1)])


def _new(graph: Graph, params: PoolParams, field_shape: list[int], tiles: np.ndarray, name: str) -> Tensor:
    t = graph.addVariable(params.dType, [params.batchSize, params.numChannels, *field_shape], name)
    map_rows(graph, _planes(t), tiles)
    return t


def pool(graph: Graph, params: PoolParams, input: Tensor, prog: prog_.Sequence,  # noqa: A002
         debugName: str = "", options: dict | None = None) -> Tensor:
    """A new ``[batch, channels, *outputField]`` tensor pooling ``input`` (see the module docstring);
    ``Pooling`` vertices run on the tiles holding the input planes. ``options`` (PopLibs' pooling
    options: layout and speed choices) are checked; none changes the result."""
    checkOptions(options, POOL_OPTIONS, "pool")
    name = debug_name(debugName, "pool: debugContext") or "pool"
    _validate(params, name)
    _check_tensor(params, input, list(params.inputFieldShape), "input", name)
    planes = _planes(input)
    tiles = row_tiles(graph, planes)
    out = _new(graph, params, params.getOutputFieldShape(), tiles, f"{name}/out")
    out_planes = _planes(out)
    cs = graph.addComputeSet(name)
    vertex = templateVertex("popnn::Pooling", params.dType)
    for tile, rows in worker_rows(graph, tiles):
        v = graph.addVertex(cs, vertex, {"inp": [planes[r] for r in rows],
                                         "out": [out_planes[r] for r in rows]})
        graph.setInitialValue(v["geom"], _geom(params))
        graph.setInitialValue(v["op"], params.poolingType.value)
        graph.setTileMapping(v, tile)
    prog.add(prog_.Execute(cs))
    return out


def poolInputGradient(graph: Graph, params: PoolParams, *args: Tensor | bool | int | prog_.Sequence | str,
                      debugName: str = "", options: dict | None = None) -> Tensor:
    """A new ``[batch, channels, *inputField]`` tensor: the gradient w.r.t. the pooling input.

    ``poolInputGradient(graph, params, input, pooled, pooledGradient, useScaledGradient, prog)``
    (any pooling type; MAX needs ``input`` and ``pooled``, the forward input and output) or, for
    AVG and SUM, ``poolInputGradient(graph, params, fwdChansPerGroup, pooledGradient, prog)``
    (``fwdChansPerGroup`` only guides PopLibs' layout and is ignored); then, as in C++, the
    debug name and ``options`` (checked as :func:`pool`'s). Vertices run on the tiles holding the
    planes of ``pooledGradient``.
    """
    progs = [i for i, a in enumerate(args) if isinstance(a, prog_.Sequence)]
    if progs:  # PopLibs' trailing debugContext and options follow prog
        debugName, options = trailingArguments("poolInputGradient", args[progs[0] + 1:],
                                               {"debugContext": debugName, "options": options})
        args = args[:progs[0] + 1]
    checkOptions(options, POOL_OPTIONS, "poolInputGradient")
    name = debug_name(debugName, "poolInputGradient: debugContext") or "poolInputGradient"
    _validate(params, name)
    if len(args) == 5 and isinstance(args[0], Tensor):
        inp, pooled, grad, scaled, prog = args
    elif len(args) == 3 and isinstance(args[0], int):
        inp = pooled = None
        grad, scaled, prog = args[1], False, args[2]
        if params.poolingType is PoolingType.MAX:
            raise PoplibsError(f"{name}: MAX pooling's gradient needs the forward input and output: "
                               "poolInputGradient(graph, params, input, pooled, pooledGradient, "
                               "useScaledGradient, prog)")
    else:
        raise PoplibsError(f"{name}: expected (input, pooled, pooledGradient, useScaledGradient, prog) or "
                           f"(fwdChansPerGroup, pooledGradient, prog), got {len(args)} arguments")
    out_shape = params.getOutputFieldShape()
    _check_tensor(params, grad, out_shape, "pooledGradient", name)
    grad_planes = _planes(grad)
    tiles = row_tiles(graph, grad_planes)
    in_grad = _new(graph, params, list(params.inputFieldShape), tiles, f"{name}/inGrad")
    in_grad_planes = _planes(in_grad)
    cs = graph.addComputeSet(name)
    sources = {"outGrad": grad_planes, "inGrad": in_grad_planes}
    if params.poolingType is PoolingType.MAX:
        _check_tensor(params, inp, list(params.inputFieldShape), "input", name)
        _check_tensor(params, pooled, out_shape, "pooled", name)
        sources.update(inp=_planes(inp), pooled=_planes(pooled))
        vertex = templateVertex("popnn::MaxPoolingGrad", params.dType, bool(scaled))
    else:  # an average's gradient is divided between the window's positions
        vertex = templateVertex("popnn::SumPoolingGrad", params.dType, params.poolingType is PoolingType.AVG)
    for tile, rows in worker_rows(graph, tiles):
        fields = {f: [planes[r] for r in rows] for f, planes in sources.items()}
        v = graph.addVertex(cs, vertex, fields)
        graph.setInitialValue(v["geom"], _geom(params))
        graph.setTileMapping(v, tile)
    prog.add(prog_.Execute(cs))
    return in_grad
