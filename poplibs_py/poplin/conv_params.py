"""ConvParams: a 2-D convolution's shapes and field transforms, with PopLibs' names.

Each field dimension goes through PopLibs' transforms, in PopLibs' order:

* input: truncate (``inputTruncationLower/Upper``), dilate (``inputDilation``: zeros placed
  between elements), pad with zeros (``paddingLower/Upper``);
* kernel: dilate (``dilation``);
* output of the "valid" cross-correlation: truncate (``outputTruncationLower/Upper``),
  stride (``stride``), pad with zeros (``outputPaddingLower/Upper``).

A forward convolution normally uses only ``stride``, ``padding*`` and ``dilation``; the
other transforms describe the backward passes (:func:`getGradientParams`). They may also be
given as PopLibs' ``ConvParams.InputTransform`` (input and kernel) and ``ConvParams.OutputTransform``
objects, in the C++ constructor's positional form. Everything here is shape arithmetic on the
host; no tensor is touched.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from poplar_py import Type
from poplar_py.checks.arguments import is_int
from poplar_py.errors import InvalidArgumentError
from poplar_py.types import asType

from ..poputil import PoplibsArgumentError, PoplibsError

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
class InputTransform:
    """PopLibs' ``ConvParams::InputTransform`` of the 2-D input or kernel: truncation, dilation,
    zero padding and flip per field dimension (each an int for both dimensions, or a pair); the
    defaults change nothing."""

    truncationLower: tuple[int, int] = (0, 0)
    truncationUpper: tuple[int, int] = (0, 0)
    dilation: tuple[int, int] = (1, 1)
    paddingLower: tuple[int, int] = (0, 0)
    paddingUpper: tuple[int, int] = (0, 0)
    flip: tuple[bool, bool] = (False, False)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            pair = _pair(getattr(self, f.name), f"InputTransform.{f.name}")
            object.__setattr__(self, f.name, tuple(bool(v) for v in pair) if f.name == "flip" else pair)


@dataclass(frozen=True)
class OutputTransform:
    """PopLibs' ``ConvParams::OutputTransform``: truncation, stride and zero padding of the
    output per field dimension (each an int for both dimensions, or a pair)."""

    truncationLower: tuple[int, int] = (0, 0)
    truncationUpper: tuple[int, int] = (0, 0)
    stride: tuple[int, int] = (1, 1)
    paddingLower: tuple[int, int] = (0, 0)
    paddingUpper: tuple[int, int] = (0, 0)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            object.__setattr__(self, f.name, _pair(getattr(self, f.name), f"OutputTransform.{f.name}"))


#: the fields each transform argument of the C++ constructor sets
_TRANSFORM_FIELDS = {
    "inputTransform": (InputTransform, {"truncationLower": "inputTruncationLower",
                                        "truncationUpper": "inputTruncationUpper",
                                        "dilation": "inputDilation", "paddingLower": "paddingLower",
                                        "paddingUpper": "paddingUpper"}),
    "kernelTransform": (InputTransform, {"dilation": "dilation"}),
    "outputTransform": (OutputTransform, {"truncationLower": "outputTruncationLower",
                                          "truncationUpper": "outputTruncationUpper", "stride": "stride",
                                          "paddingLower": "outputPaddingLower",
                                          "paddingUpper": "outputPaddingUpper"}),
}
#: PopLibs' constructor taking both element types, and then optionally the three transforms
_TWO_TYPES = ("inputType", "outputType", "batchSize", "inputFieldShape", "kernelShape",
              "inputChannelsPerConvGroup", "outputChannelsPerConvGroup", "numConvGroups",
              "inputTransform", "kernelTransform", "outputTransform")


def _constructor_arguments(args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Every field's value from ConvParams' positional and keyword arguments (see its doc)."""
    fields = dataclasses.fields(ConvParams)
    names = [f.name for f in fields]
    if len(args) >= 2 and not is_int(args[1]):  # a type after the input type: the C++ two-type forms
        if len(args) not in (8, 11):
            raise PoplibsArgumentError(
                f"ConvParams(inputType, outputType, batchSize, inputFieldShape, kernelShape, inputChannels, "
                f"outputChannels, numConvGroups[, inputTransform, kernelTransform, outputTransform]) takes "
                f"8 or 11 positional arguments, got {len(args)}")
        order: Sequence[str] = _TWO_TYPES
    else:
        order = names
        if len(args) > len(order):
            raise PoplibsArgumentError(f"ConvParams takes at most {len(order)} positional arguments, got "
                                       f"{len(args)}")
    given = dict(zip(order, args))
    for name, value in kwargs.items():
        if name not in names and name not in _TRANSFORM_FIELDS:
            raise PoplibsArgumentError(f"ConvParams: unexpected argument {name!r}")
        if name in given:
            raise PoplibsArgumentError(f"ConvParams: {name} given both positionally and by keyword")
        given[name] = value
    for arg, (cls, targets) in _TRANSFORM_FIELDS.items():
        if arg not in given:
            continue
        transform = given.pop(arg)
        if not isinstance(transform, cls):
            raise PoplibsArgumentError(f"ConvParams: {arg} must be a ConvParams.{cls.__name__}, got "
                                       f"{type(transform).__name__} {transform!r:.40}")
        default = cls()
        for f in dataclasses.fields(cls):
            value = getattr(transform, f.name)
            if f.name not in targets:
                if value != getattr(default, f.name):  # (the kernel's truncation, padding; flips)
                    raise PoplibsError(f"ConvParams: {arg}.{f.name} {value} is not supported (only "
                                       f"{', '.join(targets)})")
                continue
            field = targets[f.name]
            if field in given:
                raise PoplibsArgumentError(f"ConvParams: {field} given both by {arg} and by keyword")
            given[field] = value
    missing = [f.name for f in fields if f.default is dataclasses.MISSING and f.name not in given]
    if missing:
        raise PoplibsArgumentError(f"ConvParams: missing argument(s) {', '.join(missing)}")
    return {f.name: given.get(f.name, f.default) for f in fields}


@dataclass(frozen=True, init=False)
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

    PopLibs' constructors work positionally too: ``ConvParams(dataType, batchSize, inputFieldShape,
    kernelShape, inputChannels, outputChannels, numConvGroups)`` (the form above) and
    ``ConvParams(inputType, outputType, batchSize, inputFieldShape, kernelShape, inputChannels,
    outputChannels, numConvGroups[, inputTransform, kernelTransform, outputTransform])``, the
    channels counted per conv group as in PopLibs; the transforms are ``ConvParams.InputTransform``
    and ``ConvParams.OutputTransform`` objects (a kernel transform may only dilate).
    """

    InputTransform = InputTransform
    OutputTransform = OutputTransform

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

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        for name, value in _constructor_arguments(args, kwargs).items():
            object.__setattr__(self, name, value)
        self.__post_init__()

    def __post_init__(self) -> None:
        fix = object.__setattr__  # normalise the arguments of a frozen dataclass
        for name in ("inputType", "outputType"):
            try:
                value = getattr(self, name)
                fix(self, name, self.inputType if value is None else asType(value))
            except InvalidArgumentError:
                raise PoplibsArgumentError(f"ConvParams: {name} must be a poplar element type, got "
                                           f"{type(value).__name__} {value!r:.40}") from None
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

    def validate(self) -> None:
        """PoplibsError if the parameters describe no convolution (as the constructor checks)."""
        self.__post_init__()

    # ---- sizes (PopLibs' names) -------------------------------------------------------------
    def getNumFieldDims(self) -> int:
        return 2

    def getBatchSize(self) -> int:
        return self.batchSize

    def getInputFieldShape(self) -> list[int]:
        return list(self.inputFieldShape)

    def getKernelShape(self) -> list[int]:
        return list(self.kernelShape)

    def getInputSize(self, dim: int) -> int:
        return self.inputFieldShape[dim]

    def getTruncatedInputSize(self, dim: int) -> int:
        """The input's size after its truncation."""
        return self.inputFieldShape[dim] - self.inputTruncationLower[dim] - self.inputTruncationUpper[dim]

    def getTruncatedKernelSize(self, dim: int) -> int:
        """The kernel's size after truncation (kernels are not truncated here: its size)."""
        return self.kernelShape[dim]

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

    @property
    def inputTransform(self) -> InputTransform:
        """The input's truncation, dilation and padding, as PopLibs' ``inputTransform``."""
        return InputTransform(self.inputTruncationLower, self.inputTruncationUpper, self.inputDilation,
                              self.paddingLower, self.paddingUpper)

    @property
    def kernelTransform(self) -> InputTransform:
        """The kernel's dilation, as PopLibs' ``kernelTransform``."""
        return InputTransform(dilation=self.dilation)

    @property
    def outputTransform(self) -> OutputTransform:
        """The output's truncation, stride and padding, as PopLibs' ``outputTransform``."""
        return OutputTransform(self.outputTruncationLower, self.outputTruncationUpper, self.stride,
                               self.outputPaddingLower, self.outputPaddingUpper)

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


def hash_value(value: ConvParams | InputTransform | OutputTransform) -> int:
    """PopLibs' ``hash_value`` of conv parameters or a transform: equal values hash equal."""
    if not isinstance(value, (ConvParams, InputTransform, OutputTransform)):
        raise PoplibsArgumentError(f"hash_value: expected a ConvParams or one of its transforms, got "
                                   f"{type(value).__name__}")
    return hash(value)


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
