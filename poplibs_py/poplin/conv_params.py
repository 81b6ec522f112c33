"""ConvParams: a 2-D convolution's shapes and field transforms, with PopLibs' names.

Each field dimension goes through PopLibs' transforms, in PopLibs' order:

* input: truncate (``inputTruncationLower/Upper``), dilate (``inputDilation``: zeros placed
  between elements), pad with zeros (``paddingLower/Upper``);
* kernel: dilate (``dilation``);
* output of the "valid" cross-correlation: truncate (``outputTruncationLower/Upper``),
  stride (``stride``), pad with zeros (``outputPaddingLower/Upper``).

A forward convolution normally uses only ``stride``, ``padding*`` and ``dilation``; the
other transforms describe the backward passes (:func:`getGradientParams`). Everything here
is shape arithmetic on the host; no tensor is touched.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from poplar_py import Type
from poplar_py.types import asType

from ..poputil import PoplibsError

_PAIRS = ("inputFieldShape", "kernelShape", "stride", "paddingLower", "paddingUpper", "dilation",
          "inputDilation", "inputTruncationLower", "inputTruncationUpper", "outputTruncationLower",
          "outputTruncationUpper", "outputPaddingLower", "outputPaddingUpper")
_AT_LEAST_ONE = ("inputFieldShape", "kernelShape", "stride", "dilation", "inputDilation")


def _pair(value: int | Sequence[int], what: str) -> tuple[int, int]:
    try:
        pair = (value, value) if isinstance(value, int) else tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise PoplibsError(f"ConvParams: {what} must be an int or a pair of ints, got {value!r}") from None
    if len(pair) != 2:
        raise PoplibsError(f"ConvParams: {what} must have 2 entries (one per field dimension), got {value!r}")
    return pair  # type: ignore[return-value]


@dataclass(frozen=True)
class ConvParams:
    """A 2-D convolution, with PopLibs' field names.

    ``ConvParams(inputType, batchSize, inputFieldShape, kernelShape, inputChannelsPerConvGroup,
    outputChannelsPerConvGroup, numConvGroups=1, stride=(1, 1), paddingLower=(0, 0),
    paddingUpper=(0, 0), dilation=(1, 1), outputType=None, inputDilation=(1, 1),
    inputTruncationLower=(0, 0), inputTruncationUpper=(0, 0), outputTruncationLower=(0, 0),
    outputTruncationUpper=(0, 0), outputPaddingLower=(0, 0), outputPaddingUpper=(0, 0))``.
    Padding is input padding with zeros; dilation is kernel dilation; each may be an int (both
    dimensions) or a pair. The transforms are those of PopLibs' ``InputTransform`` (input),
    ``InputTransform`` (kernel: dilation only) and ``OutputTransform`` (see the module doc).
    """

    inputType: Type
    batchSize: int
    inputFieldShape: tuple[int, int]
    kernelShape: tuple[int, int]
    inputChannelsPerConvGroup: int
    outputChannelsPerConvGroup: int
    numConvGroups: int = 1
    stride: tuple[int, int] = (1, 1)
    paddingLower: tuple[int, int] = (0, 0)
    paddingUpper: tuple[int, int] = (0, 0)
    dilation: tuple[int, int] = (1, 1)
    outputType: Type | None = None
    inputDilation: tuple[int, int] = (1, 1)
    inputTruncationLower: tuple[int, int] = (0, 0)
    inputTruncationUpper: tuple[int, int] = (0, 0)
    outputTruncationLower: tuple[int, int] = (0, 0)
    outputTruncationUpper: tuple[int, int] = (0, 0)
    outputPaddingLower: tuple[int, int] = (0, 0)
    outputPaddingUpper: tuple[int, int] = (0, 0)

    def __post_init__(self) -> None:
        fix = object.__setattr__  # normalise the arguments of a frozen dataclass
        fix(self, "inputType", asType(self.inputType))
        fix(self, "outputType", asType(self.outputType) if self.outputType is not None else self.inputType)
        for name in _PAIRS:
            fix(self, name, _pair(getattr(self, name), name))
        for name in ("batchSize", "inputChannelsPerConvGroup", "outputChannelsPerConvGroup", "numConvGroups"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise PoplibsError(f"ConvParams: {name} must be an int of at least 1, got {value!r}")
        if min(self.inputFieldShape) < 1 or min(self.kernelShape) < 1:
            raise PoplibsError(f"ConvParams: field {self.inputFieldShape} and kernel {self.kernelShape} "
                               "sizes must be at least 1")
        for name in _AT_LEAST_ONE[2:]:
            if min(getattr(self, name)) < 1:
                raise PoplibsError(f"ConvParams: {name} {getattr(self, name)} must be >= 1")
        for name in set(_PAIRS) - set(_AT_LEAST_ONE):
            if min(getattr(self, name)) < 0:
                raise PoplibsError(f"ConvParams: {name} {getattr(self, name)} must not be negative")
        for dim in range(2):
            kept = self.inputFieldShape[dim] - self.inputTruncationLower[dim] - self.inputTruncationUpper[dim]
            if kept < 1:
                raise PoplibsError(f"ConvParams: the input truncation leaves {kept} elements of the "
                                   f"{self.inputFieldShape[dim]} in dimension {dim}")
            if self.dilatedKernelSize(dim) > self.paddedInputSize(dim):
                raise PoplibsError(f"ConvParams: the dilated kernel ({self.dilatedKernelSize(dim)}) is "
                                   f"larger than the padded input ({self.paddedInputSize(dim)}) in "
                                   f"dimension {dim}")
            conv = self.getUntransformedOutputSize(dim)
            if conv - self.outputTruncationLower[dim] - self.outputTruncationUpper[dim] < 1:
                raise PoplibsError(f"ConvParams: the output truncation leaves no element of the {conv} "
                                   f"in dimension {dim}")

    # ---- sizes (PopLibs' names) -------------------------------------------------------------
    def getNumFieldDims(self) -> int:
        return 2

    def getTransformedInputSize(self, dim: int) -> int:
        """The input's size after truncation, dilation and padding."""
        kept = self.inputFieldShape[dim] - self.inputTruncationLower[dim] - self.inputTruncationUpper[dim]
        return (kept - 1) * self.inputDilation[dim] + 1 + self.paddingLower[dim] + self.paddingUpper[dim]

    def getTransformedKernelSize(self, dim: int) -> int:
        """The kernel's size after dilation."""
        return (self.kernelShape[dim] - 1) * self.dilation[dim] + 1

    paddedInputSize = getTransformedInputSize
    dilatedKernelSize = getTransformedKernelSize

    def getUntransformedOutputSize(self, dim: int) -> int:
        """The size of the valid cross-correlation, before the output transform."""
        return self.getTransformedInputSize(dim) - self.getTransformedKernelSize(dim) + 1

    def stridedOutputSize(self, dim: int) -> int:
        """The output's size after truncation and stride, before its padding: the computed part."""
        kept = (self.getUntransformedOutputSize(dim) - self.outputTruncationLower[dim]
                - self.outputTruncationUpper[dim])
        return (kept - 1) // self.stride[dim] + 1

    def getOutputSize(self, dim: int) -> int:
        """The output's size: ``(paddedInput - dilatedKernel) // stride + 1`` when only stride,
        padding and dilation are used."""
        return self.stridedOutputSize(dim) + self.outputPaddingLower[dim] + self.outputPaddingUpper[dim]

    def getOutputFieldShape(self) -> list[int]:
        return [self.getOutputSize(0), self.getOutputSize(1)]

    def getNumInputChans(self) -> int:
        return self.inputChannelsPerConvGroup * self.numConvGroups

    def getNumOutputChans(self) -> int:
        return self.outputChannelsPerConvGroup * self.numConvGroups

    def getNumInputChansPerConvGroup(self) -> int:
        return self.inputChannelsPerConvGroup

    def getNumOutputChansPerConvGroup(self) -> int:
        return self.outputChannelsPerConvGroup

    def getNumConvGroups(self) -> int:
        return self.numConvGroups

    def inputShape(self) -> list[int]:
        return [self.batchSize, self.getNumInputChans(), *self.inputFieldShape]

    def weightsShape(self) -> list[int]:
        return [self.numConvGroups, self.outputChannelsPerConvGroup, self.inputChannelsPerConvGroup,
                *self.kernelShape]

    def outputShape(self) -> list[int]:
        return [self.batchSize, self.getNumOutputChans(), *self.getOutputFieldShape()]

    def matMulShapes(self) -> tuple[list[int], list[int]]:
        """The grouped matMul's operand shapes: weights ``[G, Co, K]`` and patches ``[G, K, N]``
        (N counts the computed outputs, without the output padding)."""
        k = self.inputChannelsPerConvGroup * self.kernelShape[0] * self.kernelShape[1]
        n = self.batchSize * self.stridedOutputSize(0) * self.stridedOutputSize(1)
        return [self.numConvGroups, self.outputChannelsPerConvGroup, k], [self.numConvGroups, k, n]

    def hasOutputPadding(self) -> bool:
        return max(self.outputPaddingLower + self.outputPaddingUpper) > 0

    def canonicalize(self) -> ConvParams:
        """The same convolution without wasted work (PopLibs' ``canonicalize``): input rows past
        the last stride step become output truncation, and zero padding that the output
        truncation would skip again is removed from both."""
        fields = {name: list(getattr(self, name)) for name in _PAIRS}
        for dim in range(2):
            kept = (self.getUntransformedOutputSize(dim) - self.outputTruncationLower[dim]
                    - self.outputTruncationUpper[dim])
            fields["outputTruncationUpper"][dim] += (kept - 1) % self.stride[dim]
            for side in ("Lower", "Upper"):
                cut = min(fields["padding" + side][dim], fields["outputTruncation" + side][dim])
                fields["padding" + side][dim] -= cut
                fields["outputTruncation" + side][dim] -= cut
        return dataclasses.replace(self, **{k: tuple(v) for k, v in fields.items()})


def getGradientParams(params: ConvParams) -> ConvParams:
    """The parameters of the backward pass (PopLibs' ``getGradientParams``).

    ``convolution(graph, zDeltas, weights, getGradientParams(fwdParams), True, prog)`` with the
    forward pass's ``weights`` then gives the gradient of the forward input. The forward's
    output becomes the input, dilated by the forward stride and padded by
    the kernel's size - 1 (a "full" convolution); the forward output padding becomes input
    truncation, the input padding output truncation, the input dilation output stride and the
    input truncation output padding.
    """
    if not isinstance(params, ConvParams):
        raise PoplibsError(f"getGradientParams: params must be a ConvParams, got {type(params).__name__}")
    p = params.canonicalize()
    pad_lower = tuple(p.outputTruncationLower[d] + p.getTransformedKernelSize(d) - 1 for d in range(2))
    pad_upper = tuple(p.outputTruncationUpper[d] + p.getTransformedKernelSize(d) - 1 for d in range(2))
    bwd = ConvParams(
        p.inputType, p.batchSize, p.getOutputFieldShape(), p.kernelShape,
        p.outputChannelsPerConvGroup, p.inputChannelsPerConvGroup, p.numConvGroups,
        stride=p.inputDilation, paddingLower=pad_lower, paddingUpper=pad_upper, dilation=p.dilation,
        outputType=p.outputType, inputDilation=p.stride,
        inputTruncationLower=p.outputPaddingLower, inputTruncationUpper=p.outputPaddingUpper,
        outputTruncationLower=p.paddingLower, outputTruncationUpper=p.paddingUpper,
        outputPaddingLower=p.inputTruncationLower, outputPaddingUpper=p.inputTruncationUpper)
    return bwd.canonicalize()
