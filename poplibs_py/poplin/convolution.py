"""2-D convolution (cross-correlation, as PopLibs) lowered to a grouped matMul on im2col views.

For ``input [B, G*Ci, H, W]`` and ``weights [G, Co, Ci, kH, kW]``, the transformed input
(truncated with ``slice``, dilated and padded by concatenating zero constants: views) is
viewed as ``patches [G, Ci*kH*kW, B*oH*oW]``: one strided, dilated window per kernel
position, built with ``slice`` and ``subSample`` (the output truncation and stride only move
and space the windows). Nothing is copied on the host: a ``Copy`` program gathers the
patches, through the exchange, into a variable laid out as the matMul's right-hand operand
(each block on the tile that multiplies it; live only until the product, so the memory is
shared with other temporaries). ``weights`` viewed as ``[G, Co, Ci*kH*kW]`` times
``patches`` gives ``[G, Co, B*oH*oW]``, returned as the view ``[B, G*Co, oH, oW]``. With
output padding, the product goes into the middle of a new output whose border
``popops::Fill`` vertices zero.
The training passes built on the same views are in :mod:`.conv_backward`.
"""

from __future__ import annotations

from typing import Any

from poplar_py import Graph, Tensor, concat
from poplar_py import program as prog
from poplar_py.debug import debug_name

from .. import popops
from ..poputil import PoplibsError, mapTensorLinearly, sequenceArgument, tensorArgument
from .conv_params import ConvParams, getGradientParams
from .matmul import (
    MATMUL_OPTIONS,
    create_operand,
    is_unmapped,
    matMulGrouped,
    matMulGroupedWithOutput,
    matmulValidateOptions,
)
from .matmul_operands import mapMatMulOutput
from .plan import PlanningCache, planningCacheArgument

__all__ = ["ConvParams", "convolution", "convolutionValidateOptions", "convolutionWithOutput",
           "createConvOutput", "createInput", "createWeights", "getGradientParams"]

#: PopLibs' convolution option ``pass`` and its values (the rest are matMul's options)
_PASSES = {"NONE", "INFERENCE_FWD", "TRAINING_FWD", "TRAINING_BWD", "TRAINING_WU", "FC_INFERENCE_FWD",
           "FC_TRAINING_FWD", "FC_TRAINING_BWD", "FC_TRAINING_WU"}


def matMulOptions(options: dict | None, what: str) -> dict | None:
    """The convolution ``options`` for the matMul it runs: ``pass`` is checked and dropped."""
    if not options:
        return None
    if not isinstance(options, dict):
        raise PoplibsError(f"{what}: options must be a dict of strings, got {type(options).__name__}")
    for name, value in options.items():
        if name == "pass" and str(value) not in _PASSES:
            raise PoplibsError(f"{what}: option pass={value!r} is not one of {', '.join(sorted(_PASSES))}")
        if name != "pass" and name not in MATMUL_OPTIONS:
            raise PoplibsError(f"{what}: unrecognised convolution option '{name}' (known: pass, "
                               f"{', '.join(sorted(MATMUL_OPTIONS))})")
    return {k: v for k, v in options.items() if k != "pass"}


def createWeights(graph: Graph, params: ConvParams, name: Any = "weights", options: dict | None = None,
                  cache: PlanningCache | None = None) -> Tensor:
    """A ``[G, Co, Ci, kH, kW]`` weights tensor, each block on the tile that multiplies it
    (``createWeights(graph, params, debugContext, options, cache)``; ``cache`` holds the plan)."""
    what = "createWeights"
    a_shape, b_shape = checkParams(what, params).matMulShapes()
    t = create_operand(graph, params.inputType, params.outputType, a_shape, b_shape,
                       debug_name(name, f"{what}: debugContext") or "weights", matMulOptions(options, what),
                       planningCacheArgument(cache, what), lhs=True)
    return t.reshape(params.weightsShape())


def createInput(graph: Graph, params: ConvParams, name: Any = "input", options: dict | None = None,
                cache: PlanningCache | None = None) -> Tensor:
    """A ``[B, G*Ci, H, W]`` input tensor, spread linearly over the tiles
    (``createInput(graph, params, debugContext, options, cache)``: the options and cache are
    checked; the layout needs no plan)."""
    what = "createInput"
    checkParams(what, params)
    matMulOptions(options, what)
    planningCacheArgument(cache, what)
    t = graph.addVariable(params.inputType, params.inputShape(), debug_name(name, f"{what}: debugContext")
                          or "input")
    mapTensorLinearly(graph, t)
    return t


def checkParams(what: str, params: Any) -> ConvParams:
    """``params``, if it is a ConvParams; else PoplibsError."""
    if not isinstance(params, ConvParams):
        raise PoplibsError(f"{what}: params must be a poplin.ConvParams, got {type(params).__name__}")
    return params


def check_operands(what: str, graph: Graph, params: ConvParams,
                   tensors: list[tuple[str, Any, list[int]]]) -> None:
    """PoplibsError naming the argument unless each ``(argument, tensor, shape)`` is a tensor of
    ``graph`` with that shape and the parameters' input type."""
    for arg, t, shape in tensors:
        t = tensorArgument(graph, t, f"{what}: {arg}")
        if t.shape() != shape:
            layout = " ([batch, channels, height, width])" if len(shape) == 4 else ""
            raise PoplibsError(f"{what}: {arg} '{t.name}' has shape {t.shape()}, the parameters need "
                               f"{shape}{layout}")
        if t.elementType() != params.inputType:
            raise PoplibsError(f"{what}: {arg} '{t.name}' is {t.elementType()}, the parameters say "
                               f"{params.inputType}")


def _zeros(graph: Graph, params: ConvParams, shape: list[int], name: str) -> Tensor:
    zeros = graph.addConstant(params.inputType, shape, 0, name)
    mapTensorLinearly(graph, zeros)
    return zeros


def _dilate(graph: Graph, x: Tensor, params: ConvParams, axis: int, d: int, name: str) -> Tensor:
    """``x`` with ``d - 1`` zeros between its elements along ``axis`` (a view)."""
    n = x.dim(axis)
    if d == 1 or n == 1:
        return x
    head = x.slice(0, n - 1, axis).expand([axis + 1])  # [..., n-1, 1, ...]
    shape = head.shape()
    shape[axis + 1] = d - 1
    spaced = concat([head, _zeros(graph, params, shape, f"{name}/dilation")], axis + 1)
    shape = x.shape()
    shape[axis] = (n - 1) * d
    return concat([spaced.reshape(shape), x.slice(n - 1, n, axis)], axis)


def _transform(graph: Graph, x: Tensor, params: ConvParams, name: str) -> Tensor:
    """``x`` truncated, dilated and zero-padded in its field dimensions, as views."""
    for dim in range(2):
        axis, lower, upper = 2 + dim, params.inputTruncationLower[dim], params.inputTruncationUpper[dim]
        if lower or upper:
            x = x.slice(lower, x.dim(axis) - upper, axis)
        x = _dilate(graph, x, params, axis, params.inputDilation[dim], name)
        pieces = [x]
        for lower_side, width in ((True, params.paddingLower[dim]), (False, params.paddingUpper[dim])):
            if width:
                shape = x.shape()
                shape[axis] = width
                zeros = _zeros(graph, params, shape, f"{name}/padding")
                pieces.insert(0 if lower_side else len(pieces), zeros)
        x = concat(pieces, axis) if len(pieces) > 1 else x
    return x


def inputPatches(graph: Graph, input_: Tensor, params: ConvParams, name: str) -> Tensor:
    """The im2col view ``[G, Ci*kH*kW, B*oH*oW]`` of the transformed input: one window per kernel
    position, moved by the output truncation and spaced by the stride."""
    x = _transform(graph, input_, params, name)
    oh, ow = params.stridedOutputSize(0), params.stridedOutputSize(1)
    (sh, sw), (dh, dw) = params.stride, params.dilation
    th, tw = params.outputTruncationLower
    windows = []
    for kh in range(params.kernelShape[0]):
        for kw in range(params.kernelShape[1]):
            h0, w0 = th + kh * dh, tw + kw * dw
            w = x.slice([0, 0, h0, w0], [x.dim(0), x.dim(1), h0 + (oh - 1) * sh + 1, w0 + (ow - 1) * sw + 1])
            windows.append(w.subSample(sh, 2).subSample(sw, 3).expand([0]))
    k = params.kernelShape[0] * params.kernelShape[1]
    stacked = concat(windows, 0)  # [kH*kW, B, C, oH, oW]
    g, ci = params.numConvGroups, params.inputChannelsPerConvGroup
    grouped = stacked.reshape([k, params.batchSize, g, ci, oh, ow])
    # -> [G, Ci, kH*kW, B, oH, oW]: the K index runs (ci, kh, kw) as the weights' reshape does
    return grouped.dimShuffle([2, 3, 0, 1, 4, 5]).reshape([g, ci * k, params.batchSize * oh * ow])


def gatherPatches(graph: Graph, view: Tensor, aShape: list[int], inType: Any, outType: Any,
                  prog_: prog.Sequence, name: str, options: dict | None,
                  cache: PlanningCache | None) -> Tensor:
    """The matMul's right-hand operand ``view`` copied into a variable whose blocks lie on the tiles
    that multiply them (``createMatMulInputRHS``' layout): one exchange gathers each tile's patches
    into memory that is live only until the product, and the product then reads it in place."""
    t = create_operand(graph, inType, outType, aShape, view.shape(), f"{name}/patches", options, cache,
                       lhs=False)
    prog_.add(prog.Copy(view, t, False, f"{name}/gatherPatches"))
    return t


def outputInterior(t: Tensor, params: ConvParams) -> Tensor:
    """The computed part of an output-shaped ``t`` (without its padding) as ``[G, Co, B*oH*oW]``."""
    (ph, pw), oh, ow = params.outputPaddingLower, params.stridedOutputSize(0), params.stridedOutputSize(1)
    if params.hasOutputPadding():
        t = t.slice([0, 0, ph, pw], [t.dim(0), t.dim(1), ph + oh, pw + ow])
    g, co = params.numConvGroups, params.outputChannelsPerConvGroup
    return t.reshape([params.batchSize, g, co, oh, ow]).dimShuffle([1, 2, 0, 3, 4]).reshape(
        [g, co, params.batchSize * oh * ow])


def _border(out: Tensor, params: ConvParams) -> Tensor:
    """The output padding of an output-shaped ``out``, flattened."""
    ph, pw = params.outputPaddingLower
    oh, ow = params.stridedOutputSize(0), params.stridedOutputSize(1)
    b, c, full_h, full_w = out.shape()
    boxes = [([0, 0, 0, 0], [b, c, ph, full_w]), ([0, 0, ph + oh, 0], [b, c, full_h, full_w]),
             ([0, 0, ph, 0], [b, c, ph + oh, pw]), ([0, 0, ph, pw + ow], [b, c, ph + oh, full_w])]
    return concat([out.slice(lo, hi).flatten() for lo, hi in boxes if all(h > lo_ for lo_, h in zip(lo, hi))])


def convolution(graph: Graph, input_: Tensor, weights: Tensor, params: ConvParams,
                transposeAndFlipWeights: bool = False, prog_: prog.Sequence | None = None,
                debugName: Any = "", options: dict | None = None, cache: Any = None,
                **kwargs: Any) -> Tensor:
    """Convolve ``input [B, G*Ci, H, W]`` with ``weights [G, Co, Ci, kH, kW]`` -> ``[B, G*Co, oH, oW]``.

    ``convolution(graph, in, weights, params, transposeAndFlipWeights, prog, debugContext="",
    options=None, cache=None)`` as PopLibs. With ``transposeAndFlipWeights`` the weights are
    ``[G, Ci, Co, kH, kW]`` (a forward pass's weights) and are used transposed and spatially
    flipped, through views: with ``getGradientParams(fwdParams)`` this is the backward pass,
    ``zDeltas`` in, the forward input's gradient out. The work is one grouped matMul on the
    tiles (see the module doc); output padding adds a compute set zeroing it (popops codelets).
    A :class:`PlanningCache` ``cache`` holds the matMul's plan.
    """
    prog_ = kwargs.pop("prog", prog_)
    debugName = kwargs.pop("debugContext", debugName)
    if prog_ is None or kwargs:
        raise PoplibsError(f"convolution: needs a program to add to (unexpected arguments {sorted(kwargs)})")
    a, patches, name, options, cache = _operands("convolution", graph, input_, weights, params,
                                                 transposeAndFlipWeights, prog_, debugName, options, cache)
    if not params.hasOutputPadding():
        out = matMulGrouped(graph, a, patches, prog_, params.outputType, name, options, cache)
        g, co = params.numConvGroups, params.outputChannelsPerConvGroup
        oh, ow = params.getOutputFieldShape()
        return out.reshape([g, co, params.batchSize, oh, ow]).dimShuffle([2, 0, 1, 3, 4]).reshape(
            params.outputShape())
    out = graph.addVariable(params.outputType, params.outputShape(), name)
    _into(graph, a, patches, out, params, prog_, name, options, cache)
    return out


def convolutionWithOutput(graph: Graph, input_: Tensor, weights: Tensor, out: Tensor, params: ConvParams,
                          transposeAndFlipWeights: bool, prog_: prog.Sequence, debugContext: Any = "",
                          options: dict | None = None, cache: Any = None) -> None:
    """:func:`convolution` writing its result into ``out`` (``[B, G*Co, oH, oW]`` of the output
    type, e.g. from :func:`createConvOutput`; an unmapped ``out`` is mapped as the product's
    output, its padding linearly)."""
    what = "convolutionWithOutput"
    out = tensorArgument(graph, out, f"{what}: out")
    if out.shape() != checkParams(what, params).outputShape() or out.elementType() != params.outputType:
        raise PoplibsError(f"{what}: out '{out.name}' is {out.elementType()} {out.shape()}, the parameters "
                           f"need {params.outputType} {params.outputShape()}")
    a, patches, name, options, cache = _operands(what, graph, input_, weights, params,
                                                 transposeAndFlipWeights, prog_, debugContext, options, cache)
    _into(graph, a, patches, out, params, prog_, name, options, cache)


def createConvOutput(graph: Graph, params: ConvParams, debugContext: Any = "", options: dict | None = None,
                     cache: Any = None) -> Tensor:
    """A new ``[B, G*Co, oH, oW]`` output whose computed part lies on the tiles that compute it (the
    product's output blocks) and whose output padding is spread linearly."""
    what = "createConvOutput"
    a_shape, b_shape = checkParams(what, params).matMulShapes()
    options = matMulOptions(options, what)
    name = debug_name(debugContext, f"{what}: debugContext") or "output"
    out = graph.addVariable(params.outputType, params.outputShape(), name)
    mapMatMulOutput(graph, outputInterior(out, params), params.inputType, a_shape, b_shape, options,
                    planningCacheArgument(cache, what))
    if params.hasOutputPadding():
        mapTensorLinearly(graph, _border(out, params))
    return out


def convolutionValidateOptions(options: dict | None) -> None:
    """PoplibsError naming the first convolution option that is unknown or has a bad value."""
    matMulOptions(options, "convolutionValidateOptions")
    matmulValidateOptions({k: v for k, v in (options or {}).items() if k != "pass"})


def _operands(what: str, graph: Graph, input_: Tensor, weights: Tensor, params: ConvParams, flip: bool,
              prog_: Any, debugName: Any, options: Any, cache: Any
              ) -> tuple[Tensor, Tensor, str, dict | None, PlanningCache | None]:
    """The grouped product's operands (the weights' view and the gathered patches), the name, the
    matMul options and the cache of a convolution, all checked."""
    expected = checkParams(what, params).weightsShape()
    if flip:
        expected[1], expected[2] = expected[2], expected[1]
    check_operands(what, graph, params,
                   [("input", input_, params.inputShape()), ("weights", weights, expected)])
    prog_ = sequenceArgument(prog_, what)
    name = debug_name(debugName, what) or "conv"
    if flip:
        weights = weights.dimShuffle([0, 2, 1, 3, 4]).reverse(3).reverse(4)
    a_shape, _ = params.matMulShapes()
    options = matMulOptions(options, what)
    cache = planningCacheArgument(cache, what)
    patches = gatherPatches(graph, inputPatches(graph, input_, params, name), a_shape, params.inputType,
                            params.outputType, prog_, name, options, cache)
    return weights.reshape(a_shape), patches, name, options, cache


def _into(graph: Graph, a: Tensor, patches: Tensor, out: Tensor, params: ConvParams, prog_: prog.Sequence,
          name: str, options: dict | None, cache: PlanningCache | None) -> None:
    """The product into ``out``'s computed part; its padding zeroed (mapped linearly if unmapped)."""
    matMulGroupedWithOutput(graph, a, patches, outputInterior(out, params), prog_, name, options, cache)
    if params.hasOutputPadding():
        border = _border(out, params)
        if is_unmapped(graph, border):
            mapTensorLinearly(graph, border)
        popops.zero(graph, border, prog_, f"{name}/outputPadding")
