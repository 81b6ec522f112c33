"""poplin::multiconv (PopLibs' MultiConvolution.hpp): a set of convolutions given together.

Each convolution of the set runs as poplin's single convolution functions run it (a gather of
the patches and one grouped matMul on the tiles, see :mod:`.convolution` and
:mod:`.conv_backward`), one after the other in ``prog``, with its own plan: PopLibs'
``planType=serial``. The per-convolution ``options`` of each argument are the convolution's
options; the ``options`` of the call are the multi-convolution options, checked as PopLibs
checks them (``planType`` serial or parallel, ``perConvReservedTiles``, ``cycleBackOff``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from poplar_py import Graph, Tensor
from poplar_py import program as prog
from poplar_py.debug import debug_name

from ..poputil import PoplibsArgumentError, PoplibsError, checkOptions
from .conv_backward import calculateWeightDeltas as singleWeightDeltas
from .conv_backward import convolutionWeightUpdate as singleWeightUpdate
from .conv_backward import weightsTransposeChansFlipXY as singleTransposeFlip
from .conv_params import ConvParams
from .convolution import convolution as convolve
from .convolution import createInput as singleCreateInput
from .convolution import createWeights as singleCreateWeights
from .plan import PlanningCache, planningCacheArgument

__all__ = ["CalculateWeightDeltasArgs", "ConvWeightUpdateArgs", "ConvWeightUpdateArgsScalar",
           "ConvolutionArgs", "CreateTensorArgs", "calculateWeightDeltas", "convolution",
           "convolutionWeightUpdate", "createInput", "createWeights", "weightsTransposeChansFlipXY"]

_OPTIONS = {"planType", "perConvReservedTiles", "cycleBackOff"}


@dataclass
class CreateTensorArgs:
    """One convolution of the set, for the tensor creators: its parameters, options and the new
    tensor's name."""

    params: ConvParams
    options: dict = field(default_factory=dict)
    name: str = ""


@dataclass
class ConvolutionArgs:
    """One convolution of the set: its input, weights, parameters and options."""

    inputs: Tensor
    weights: Tensor
    params: ConvParams
    options: dict = field(default_factory=dict)


@dataclass
class CalculateWeightDeltasArgs:
    """One weight-delta computation: the output gradient, the forward input, parameters, options."""

    zDeltas: Tensor
    activations: Tensor
    params: ConvParams
    options: dict = field(default_factory=dict)


@dataclass
class ConvWeightUpdateArgs:
    """One weight update ``weights += scale * deltas`` with a one-element tensor ``scale``."""

    zDeltas: Tensor
    weights: Tensor
    activations: Tensor
    scale: Tensor
    params: ConvParams
    options: dict = field(default_factory=dict)


@dataclass
class ConvWeightUpdateArgsScalar:
    """One weight update ``weights += scale * deltas`` with a number ``scale``."""

    zDeltas: Tensor
    weights: Tensor
    activations: Tensor
    scale: float
    params: ConvParams
    options: dict = field(default_factory=dict)


def _multi_options(options: Any, what: str) -> None:
    """PoplibsError naming the first multi-convolution option that is unknown or has a bad value."""
    options = checkOptions(options, _OPTIONS, what)
    plan_type = str(options.get("planType", "parallel"))
    if plan_type not in ("serial", "parallel"):
        raise PoplibsError(f"{what}: option planType={plan_type!r} is not 'serial' or 'parallel'")
    for name, kind, low, high in (("perConvReservedTiles", int, 1, None), ("cycleBackOff", float, 0.0, 1.0)):
        if name not in options:
            continue
        try:
            value = kind(options[name])
        except (TypeError, ValueError):
            value = None
        if value is None or value < low or (high is not None and value > high):
            raise PoplibsError(f"{what}: option {name}={options[name]!r} is not a {kind.__name__} in "
                               f"[{low}, {high if high is not None else 'inf'}]")


def _arguments(what: str, args: Any, kind: type | tuple[type, ...], options: Any, cache: Any
               ) -> tuple[list, PlanningCache | None]:
    """``args`` as a list of ``kind``, the multi-convolution options and the cache checked."""
    if not isinstance(args, Sequence) or isinstance(args, (str, bytes)):
        raise PoplibsArgumentError(f"{what}: args must be a list of multiconv arguments, got "
                                   f"{type(args).__name__}")
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for i, arg in enumerate(args):
        if not isinstance(arg, kinds):
            raise PoplibsArgumentError(f"{what}: args[{i}] must be a multiconv."
                                       f"{' or '.join(k.__name__ for k in kinds)}, got {type(arg).__name__}")
    _multi_options(options, what)
    return list(args), planningCacheArgument(cache, what)


def _index(what: str, index: Any, args: list, name: str) -> int:
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(args):
        raise PoplibsArgumentError(f"{what}: {name} {index!r:.20} is not an index into the {len(args)} args")
    return index


def createWeights(graph: Graph, args: Sequence[CreateTensorArgs], weightsIndex: int,
                  options: dict | None = None, cache: PlanningCache | None = None) -> Tensor:
    """The weights of convolution ``weightsIndex`` of the set, laid out as ``poplin.createWeights``
    lays them out (each block on the tile that multiplies it)."""
    what = "multiconv::createWeights"
    args, cache = _arguments(what, args, CreateTensorArgs, options, cache)
    arg = args[_index(what, weightsIndex, args, "weightsIndex")]
    return singleCreateWeights(graph, arg.params, arg.name or "weights", arg.options, cache)


def createInput(graph: Graph, args: Sequence[CreateTensorArgs], inputIndex: int, options: dict | None = None,
                cache: PlanningCache | None = None) -> Tensor:
    """The input of convolution ``inputIndex`` of the set, as ``poplin.createInput`` makes it."""
    what = "multiconv::createInput"
    args, cache = _arguments(what, args, CreateTensorArgs, options, cache)
    arg = args[_index(what, inputIndex, args, "inputIndex")]
    return singleCreateInput(graph, arg.params, arg.name or "input", arg.options, cache)


def weightsTransposeChansFlipXY(graph: Graph, args: Sequence[ConvolutionArgs], weightsIn: Sequence[Tensor],
                                prog_: prog.Sequence, options: dict | None = None, debugContext: Any = "",
                                cache: PlanningCache | None = None) -> None:
    """For each convolution ``i``, copy ``weightsIn[i]`` transposed in its channels and flipped in
    its field into ``args[i].weights`` (a Copy on the device each, as the single function)."""
    what = "multiconv::weightsTransposeChansFlipXY"
    args, _ = _arguments(what, args, ConvolutionArgs, options, cache)
    if not isinstance(weightsIn, Sequence) or len(weightsIn) != len(args):
        raise PoplibsArgumentError(f"{what}: weightsIn must be a list of {len(args)} tensors, one per "
                                   f"convolution")
    name = debug_name(debugContext, what) or "weightsTransposeChansFlipXY"
    for i, (arg, w) in enumerate(zip(args, weightsIn)):
        singleTransposeFlip(graph, w, arg.weights, prog_, f"{name}/{i}")


def convolution(graph: Graph, args: Sequence[ConvolutionArgs], transposeAndFlipWeights: bool,
                prog_: prog.Sequence, debugContext: Any = "", options: dict | None = None,
                cache: PlanningCache | None = None) -> list[Tensor]:
    """The output of each convolution of the set (``poplin.convolution`` of each, in order)."""
    what = "multiconv::convolution"
    args, cache = _arguments(what, args, ConvolutionArgs, options, cache)
    name = debug_name(debugContext, what) or "multiConv"
    flip = bool(transposeAndFlipWeights)
    return [convolve(graph, arg.inputs, arg.weights, arg.params, flip, prog_, f"{name}/conv{i}", arg.options,
                     cache) for i, arg in enumerate(args)]


def calculateWeightDeltas(graph: Graph, args: Sequence[CalculateWeightDeltasArgs], prog_: prog.Sequence,
                          debugContext: Any = "", options: dict | None = None,
                          cache: PlanningCache | None = None) -> list[Tensor]:
    """The weight deltas of each convolution of the set (``poplin.calculateWeightDeltas`` of each)."""
    what = "multiconv::calculateWeightDeltas"
    args, cache = _arguments(what, args, CalculateWeightDeltasArgs, options, cache)
    name = debug_name(debugContext, what) or "multiWeightDeltas"
    return [singleWeightDeltas(graph, arg.zDeltas, arg.activations, arg.params, prog_,
                                                f"{name}/conv{i}", arg.options, cache)
            for i, arg in enumerate(args)]


def convolutionWeightUpdate(graph: Graph, args: Sequence[ConvWeightUpdateArgs | ConvWeightUpdateArgsScalar],
                            prog_: prog.Sequence, debugContext: Any = "", options: dict | None = None,
                            cache: PlanningCache | None = None) -> None:
    """``weights += scale * deltas`` for each convolution of the set, in place
    (``poplin.convolutionWeightUpdate`` of each; the scale a tensor or a number)."""
    what = "multiconv::convolutionWeightUpdate"
    args, cache = _arguments(what, args, (ConvWeightUpdateArgs, ConvWeightUpdateArgsScalar), options, cache)
    name = debug_name(debugContext, what) or "multiWeightUpdate"
    for i, arg in enumerate(args):
        singleWeightUpdate(graph, arg.zDeltas, arg.weights, arg.activations, arg.params,
                                              arg.scale, prog_, f"{name}/conv{i}", arg.options, cache)
