"""PopLibs' ConvUtil.hpp: which input, kernel and output elements of a convolution meet.

In field dimension ``dim`` of a convolution with parameters ``params``, output element ``o``
(an index of the final, padded output) is the sum over kernel elements ``k`` of
``kernel[k] * input[i]``, where ``i = getInputIndex(dim, o, k, params)``: the input element the
transforms (truncation, dilation and padding of the input, dilation of the kernel, truncation,
stride and padding of the output) bring under ``k``; there is none (``NO_INDEX``, PopLibs'
``~0U``) where that position is padding or a dilation hole. The ``get*Range`` functions give
the smallest ``[begin, end)`` holding every index that takes part, within an output range, in
the relation (``(0, 0)`` when none does), as PopLibs' exact ranges. ``getWeightUpdateParams``
gives the parameters of the weight-update pass. Everything here is index arithmetic on the host.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..poputil import PoplibsArgumentError, PoplibsError
from .conv_params import ConvParams, getGradientParams

__all__ = ["NO_INDEX", "getDilatedSize", "getGradientParams", "getInputIndex", "getInputRange",
           "getKernelIndex", "getKernelRange", "getOutputRangeForInputIndex", "getOutputRangeForInputRange",
           "getOutputRangeForKernelIndex", "getOutputRangeForKernelRange", "getWeightUpdateParams"]

#: PopLibs' ``~0U``: no element takes part
NO_INDEX = 0xFFFFFFFF

Range = tuple[int, int]


def getDilatedSize(size: int, dilation: int) -> int:
    """The size of ``size`` elements with ``dilation - 1`` zeros put between neighbours."""
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
        raise PoplibsArgumentError(f"getDilatedSize: size must be a non-negative integer, got {size!r:.20}")
    if isinstance(dilation, bool) or not isinstance(dilation, (int, np.integer)) or dilation < 1:
        raise PoplibsArgumentError(f"getDilatedSize: dilation must be a positive integer, got "
                                   f"{dilation!r:.20}")
    return 0 if size == 0 else 1 + (int(size) - 1) * int(dilation)


# ---- the relation, vectorised over index arrays (-1: none) ------------------------------------

def _untransformed_outputs(dim: int, o: np.ndarray, p: ConvParams) -> np.ndarray:
    """Each output index's position in the valid cross-correlation (-1 in the output padding)."""
    lower = p.outputPaddingLower[dim]
    inside = (o >= lower) & (o < p.getOutputSize(dim) - p.outputPaddingUpper[dim])
    return np.where(inside, (o - lower) * p.stride[dim] + p.outputTruncationLower[dim], -1)


def _transformed_inputs(dim: int, i: np.ndarray, p: ConvParams) -> np.ndarray:
    """Each input index's position in the truncated, dilated, padded input (-1 if truncated)."""
    lower = p.inputTruncationLower[dim]
    kept = (i >= lower) & (i < p.inputFieldShape[dim] - p.inputTruncationUpper[dim])
    return np.where(kept, (i - lower) * p.inputDilation[dim] + p.paddingLower[dim], -1)


def _inputs(dim: int, o: np.ndarray, k: np.ndarray, p: ConvParams) -> np.ndarray:
    """The input index under kernel element ``k`` for output ``o`` (broadcast; -1: none)."""
    u = _untransformed_outputs(dim, o, p)
    t = u + k * p.dilation[dim] - p.paddingLower[dim]  # in the truncated, dilated input
    kept = p.inputFieldShape[dim] - p.inputTruncationLower[dim] - p.inputTruncationUpper[dim]
    d = p.inputDilation[dim]
    ok = (u >= 0) & (t >= 0) & (t <= (kept - 1) * d) & (t % d == 0)
    return np.where(ok, t // d + p.inputTruncationLower[dim], -1)


def _kernels(dim: int, o: np.ndarray, i: np.ndarray, p: ConvParams) -> np.ndarray:
    """The kernel index meeting input ``i`` for output ``o`` (broadcast; -1: none)."""
    u, t = _untransformed_outputs(dim, o, p), _transformed_inputs(dim, i, p)
    kk = t - u
    ok = (u >= 0) & (t >= 0) & (kk >= 0) & (kk < p.getTransformedKernelSize(dim))
    ok &= kk % p.dilation[dim] == 0
    return np.where(ok, kk // p.dilation[dim], -1)


def _hull(values: np.ndarray) -> Range:
    values = values[values >= 0]
    return (int(values.min()), int(values.max()) + 1) if values.size else (0, 0)


# ---- argument checks ------------------------------------------------------------------------

def _params(what: str, params: Any) -> ConvParams:
    if not isinstance(params, ConvParams):
        raise PoplibsArgumentError(f"{what}: params must be a poplin.ConvParams, got {type(params).__name__}")
    return params


def _dim(what: str, dim: Any, params: ConvParams) -> int:
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or not 0 <= dim < 2:
        raise PoplibsArgumentError(f"{what}: dim {dim!r:.20} is not a field dimension (0 or 1)")
    return int(dim)


def _index(what: str, name: str, value: Any, size: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value < size:
        raise PoplibsArgumentError(f"{what}: {name} {value!r:.20} is not in [0, {size})")
    return int(value)


def _range(what: str, name: str, value: Any, size: int) -> Range:
    try:
        begin, end = (int(v) for v in value)
    except (TypeError, ValueError):
        raise PoplibsArgumentError(f"{what}: {name} must be a (begin, end) pair, got {value!r:.30}") from None
    if not 0 <= begin <= end <= size:
        raise PoplibsArgumentError(f"{what}: {name} ({begin}, {end}) is not a range within [0, {size}]")
    return begin, end


def _sizes(dim: int, p: ConvParams) -> dict[str, int]:
    return {"output": p.getOutputSize(dim), "kernel": p.kernelShape[dim], "input": p.inputFieldShape[dim]}


def _grid(a: Range, b: Range) -> tuple[np.ndarray, np.ndarray]:
    return np.arange(*a)[:, None], np.arange(*b)[None, :]


# ---- public API -----------------------------------------------------------------------------

def getInputIndex(dim: int, outputIndex: int, kernelIndex: int, params: ConvParams) -> int:
    """The input index multiplied by kernel element ``kernelIndex`` to produce output
    ``outputIndex`` in dimension ``dim``; ``NO_INDEX`` if there is none (padding, a dilation
    hole, or an output in the output padding)."""
    what = "getInputIndex"
    p = _params(what, params)
    dim = _dim(what, dim, p)
    o = _index(what, "outputIndex", outputIndex, p.getOutputSize(dim))
    k = _index(what, "kernelIndex", kernelIndex, p.kernelShape[dim])
    i = int(_inputs(dim, np.int64(o), np.int64(k), p))
    return NO_INDEX if i < 0 else i


def getKernelIndex(dim: int, outputIndex: int, inputIndex: int, params: ConvParams) -> int:
    """The kernel index multiplied by input element ``inputIndex`` to produce output
    ``outputIndex`` in dimension ``dim``; ``NO_INDEX`` if there is none."""
    what = "getKernelIndex"
    p = _params(what, params)
    dim = _dim(what, dim, p)
    o = _index(what, "outputIndex", outputIndex, p.getOutputSize(dim))
    i = _index(what, "inputIndex", inputIndex, p.inputFieldShape[dim])
    k = int(_kernels(dim, np.int64(o), np.int64(i), p))
    return NO_INDEX if k < 0 else k


def _output_range(what: str, dim: int, outputRange: Any, other: Any, params: Any, other_kind: str,
                  single: bool) -> Range:
    """The outputs of ``outputRange`` that meet the ``other_kind`` index (``single``) or range."""
    p = _params(what, params)
    dim = _dim(what, dim, p)
    sizes = _sizes(dim, p)
    outputs = _range(what, "outputRange", outputRange, sizes["output"])
    if single:
        index = _index(what, f"{other_kind}Index", other, sizes[other_kind])
        others: Range = (index, index + 1)
    else:
        others = _range(what, f"{other_kind}Range", other, sizes[other_kind])
    o, x = _grid(outputs, others)
    meets = (_inputs(dim, o, x, p) if other_kind == "kernel" else _kernels(dim, o, x, p)) >= 0
    return _hull(np.where(meets.any(axis=1), np.arange(*outputs), -1))


def getOutputRangeForKernelIndex(dim: int, outputRange: Range, kernelIndex: int, params: ConvParams) -> Range:
    """The part of ``outputRange`` whose computation uses kernel element ``kernelIndex``."""
    return _output_range("getOutputRangeForKernelIndex", dim, outputRange, kernelIndex, params, "kernel",
                         True)


def getOutputRangeForInputIndex(dim: int, outputRange: Range, inputIndex: int, params: ConvParams) -> Range:
    """The part of ``outputRange`` whose computation uses input element ``inputIndex``."""
    return _output_range("getOutputRangeForInputIndex", dim, outputRange, inputIndex, params, "input", True)


def getOutputRangeForKernelRange(dim: int, outputRange: Range, kernelIndexRange: Range,
                                 params: ConvParams) -> Range:
    """The part of ``outputRange`` whose computation uses a kernel element of ``kernelIndexRange``."""
    return _output_range("getOutputRangeForKernelRange", dim, outputRange, kernelIndexRange, params, "kernel",
                         False)


def getOutputRangeForInputRange(dim: int, outputRange: Range, inputRange: Range, params: ConvParams) -> Range:
    """The part of ``outputRange`` whose computation uses an input element of ``inputRange``."""
    return _output_range("getOutputRangeForInputRange", dim, outputRange, inputRange, params, "input", False)


def getInputRange(dim: int, output: int | Range, *args: Any) -> Range:
    """The inputs that the kernel elements meet while computing the outputs.

    PopLibs' overloads: ``getInputRange(dim, outputRange, kernelIndex, params)``,
    ``(dim, outputRange, kernelIndexRange, params)``, ``(dim, outputIndex, kernelIndexRange,
    params)``, ``(dim, outputIndex, params)`` and ``(dim, outputRange, params)`` (the last two over
    the whole kernel); an output or kernel index stands for the one-element range.
    """
    what = "getInputRange"
    if len(args) not in (1, 2):
        raise PoplibsArgumentError(f"{what}: expected (dim, output, [kernel,] params), got {2 + len(args)} "
                                   "arguments")
    p = _params(what, args[-1])
    dim = _dim(what, dim, p)
    sizes = _sizes(dim, p)
    kernel = args[0] if len(args) == 2 else (0, sizes["kernel"])
    outputs = _one_or_range(what, "output", output, sizes["output"])
    kernels = _one_or_range(what, "kernel", kernel, sizes["kernel"])
    o, k = _grid(outputs, kernels)
    return _hull(_inputs(dim, o, k, p))


def getKernelRange(dim: int, outputRange: Range, inputs: int | Range, params: ConvParams) -> Range:
    """The kernel elements that meet the input element (``getKernelRange(dim, outputRange,
    inputIndex, params)``) or range (``(dim, outputRange, inputRange, params)``) while computing
    the outputs of ``outputRange``."""
    what = "getKernelRange"
    p = _params(what, params)
    dim = _dim(what, dim, p)
    sizes = _sizes(dim, p)
    outputs = _range(what, "outputRange", outputRange, sizes["output"])
    o, i = _grid(outputs, _one_or_range(what, "input", inputs, sizes["input"]))
    return _hull(_kernels(dim, o, i, p))


def _one_or_range(what: str, kind: str, value: Any, size: int) -> Range:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        index = _index(what, f"{kind}Index", value, size)
        return index, index + 1
    return _range(what, f"{kind}Range", value, size)


def getWeightUpdateParams(fwdParams: ConvParams) -> ConvParams:
    """The convolution giving the weight deltas of a forward convolution (PopLibs'
    ``getWeightUpdateParams``): the activations, with batch and channels swapped, convolved with
    the output gradient as the kernel. Batch = forward input channels, input channels = forward
    batch, the input transformed as the forward's, the kernel = the forward output field dilated by
    the forward stride, the output truncated as the forward output (and by the rows the forward
    stride skipped at the end) and strided by the forward kernel dilation: the output ``[Ci, G*Co,
    kH, kW]`` holds the deltas. Forward output padding would become kernel truncation, which
    ConvParams does not describe: PoplibsError."""
    p = _params("getWeightUpdateParams", fwdParams)
    if p.hasOutputPadding():
        raise PoplibsError(f"getWeightUpdateParams: fwdParams has output padding {p.outputPaddingLower}, "
                           f"{p.outputPaddingUpper}, which would need a kernel truncation (not supported)")
    skipped = []  # the untransformed outputs past the forward's last stride step
    for dim in range(p.getNumFieldDims()):
        kept = p.getUntransformedOutputSize(dim) - p.outputTruncationLower[dim] - p.outputTruncationUpper[dim]
        skipped.append((kept - 1) % p.stride[dim])
    wu = ConvParams(p.inputType, p.inputChannelsPerConvGroup, p.inputFieldShape,
                    tuple(p.getOutputFieldShape()), p.batchSize, p.outputChannelsPerConvGroup,
                    p.numConvGroups, outputType=p.outputType, dilation=p.stride, stride=p.dilation,
                    inputDilation=p.inputDilation,
                    inputTruncationLower=p.inputTruncationLower, inputTruncationUpper=p.inputTruncationUpper,
                    paddingLower=p.paddingLower, paddingUpper=p.paddingUpper,
                    outputTruncationLower=p.outputTruncationLower,
                    outputTruncationUpper=tuple(t + r for t, r in zip(p.outputTruncationUpper, skipped)))
    return wu.canonicalize()
