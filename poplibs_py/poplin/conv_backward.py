"""Convolution training passes (PopLibs' Convolution.hpp): weight deltas and update, biases.

All of them run on the tiles, built from the forward pass's pieces (:mod:`.convolution`):

* the weight gradient ``dW[g, co, (ci, kh, kw)] = sum_n zDeltas[g, co, n] * patches[g, (ci, kh,
  kw), n]`` is one grouped matMul of the output gradient's view ``[G, Co, B*oH*oW]`` by the
  transposed im2col view of the activations ``[G, B*oH*oW, Ci*kH*kW]`` (gathered by a Copy
  onto the tiles that multiply it, as in the forward pass); its long K (every
  output position of the batch) is split over tiles and the partial sums reduced in a
  second compute set;
* ``convolutionWeightUpdate`` with a number as scale is the same product as ``matMulAcc``:
  the reduction adds ``scale * dW`` into the weights in place (``ScaledReducePartials``); with
  a tensor scale the deltas go through ``popops.scaledAddTo``;
* the input gradient is ``convolution(graph, zDeltas, weights, getGradientParams(params),
  True, prog)``; ``weightsTransposeChansFlipXY`` makes the transposed, flipped weights as a
  tensor of their own (a ``Copy`` on the device);
* ``addBias`` is a ``popops.addInPlace`` with the biases broadcast over batch and field,
  ``convolutionBiasUpdate`` a ``popops.reduceWithOutput`` (ADD with scale and update).

The bias functions, tensor scales and output padding need the popops codelets
(``popops.addCodelets``).
"""

from __future__ import annotations

from typing import Any

from poplar_py import FLOAT, Graph, Tensor
from poplar_py import program as prog
from poplar_py.debug import debug_name

from .. import popops
from ..poputil import PoplibsArgumentError, PoplibsError, mapTensorLinearly, tensorArgument, trailingArguments
from .conv_params import ConvParams
from .convolution import (
    check_operands,
    checkParams,
    gatherPatches,
    inputPatches,
    matMulOptions,
    outputInterior,
)
from .matmul import is_unmapped, matMulGrouped, matMulGroupedAcc
from .plan import PlanningCache, planningCacheArgument

__all__ = ["addBias", "calculateWeightDeltas", "convolutionBiasUpdate", "convolutionWeightUpdate",
           "createBiases", "weightsTransposeChansFlipXY"]


def _program(what: str, p: Any) -> prog.Sequence:
    if not isinstance(p, prog.Sequence):
        raise PoplibsError(f"{what}: prog must be a poplar program Sequence, got {type(p).__name__}")
    return p


def _wu_operands(graph: Graph, what: str, zDeltas: Tensor, activations: Tensor, params: ConvParams,
                 prog_: prog.Sequence, name: str, options: dict | None,
                 cache: PlanningCache | None) -> tuple[Tensor, Tensor]:
    """The weight-update product's operands: ``zDeltas [G, Co, N]`` and ``patches^T [G, N, K]``."""
    checkParams(what, params)
    check_operands(what, graph, params, [("zDeltas", zDeltas, params.outputShape()),
                                 ("activations", activations, params.inputShape())])
    dy = outputInterior(zDeltas, params)
    patches = inputPatches(graph, activations, params, name).dimShuffle([0, 2, 1])
    return dy, gatherPatches(graph, patches, dy.shape(), params.inputType, params.inputType,
                             _program(what, prog_), name, options, cache)


def calculateWeightDeltas(graph: Graph, zDeltas: Tensor, activations: Tensor, params: ConvParams,
                          prog_: prog.Sequence, debugContext: Any = "", options: dict | None = None,
                          cache: PlanningCache | None = None) -> Tensor:
    """The weights' gradient ``[G, Co, Ci, kH, kW]`` (``createWeights``' shape) of a convolution
    with forward ``params``, from the output gradient ``zDeltas [B, G*Co, oH, oW]`` and the
    forward input ``activations [B, G*Ci, H, W]``: one grouped matMul on the tiles (module doc).
    """
    what = "calculateWeightDeltas"
    name = debug_name(debugContext, what) or "weightDeltas"
    options = matMulOptions(options, what)
    cache = planningCacheArgument(cache, what)
    dy, patches_t = _wu_operands(graph, what, zDeltas, activations, params, prog_, name, options, cache)
    deltas = matMulGrouped(graph, dy, patches_t, _program(what, prog_), params.inputType, name, options,
                           cache)
    return deltas.reshape(params.weightsShape())


def convolutionWeightUpdate(graph: Graph, zDeltas: Tensor, weights: Tensor, activations: Tensor,
                            params: ConvParams, scale: float | Tensor, prog_: prog.Sequence,
                            debugContext: Any = "", options: dict | None = None,
                            cache: PlanningCache | None = None) -> None:
    """``weights += scale * calculateWeightDeltas(...)``, in place (``scale = -learningRate`` for SGD).

    With a number as ``scale`` the update is fused into the product's reduction (as
    ``matMulAcc``); a one-element FLOAT (or weights-typed) tensor ``scale`` goes through
    ``popops.scaledAddTo`` on the tiles holding the weights.
    """
    what = "convolutionWeightUpdate"
    name = debug_name(debugContext, what) or "weightUpdate"
    options = matMulOptions(options, what)
    cache = planningCacheArgument(cache, what)
    check_operands(what, graph, checkParams(what, params), [("weights", weights, params.weightsShape())])
    if not weights.isParallelWriteable():
        raise PoplibsError(f"{what}: weights '{weights.name}' are not writeable in place (they contain "
                           "constants or aliased elements)")
    if isinstance(scale, Tensor):

        scale = tensorArgument(graph, scale, f"{what}: scale")
        if scale.numElements() != 1 or scale.elementType() not in (FLOAT, weights.elementType()):
            raise PoplibsError(f"{what}: scale '{scale.name}' must be one element of type float, got "
                               f"{scale.elementType()} of shape {scale.shape()}")
        deltas = calculateWeightDeltas(graph, zDeltas, activations, params, prog_, name, options, cache)
        popops.scaledAddTo(graph, weights, deltas, scale, prog_, debugName=f"{name}/update")
        return
    if isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise PoplibsError(f"{what}: scale must be a number or a one-element tensor, got {scale!r:.40}")
    dy, patches_t = _wu_operands(graph, what, zDeltas, activations, params, prog_, name, options, cache)
    matMulGroupedAcc(graph, weights.reshape(params.matMulShapes()[0]), float(scale), dy, patches_t,
                     _program(what, prog_), name, options, cache)


def weightsTransposeChansFlipXY(graph: Graph, weightsIn: Tensor, weightsOut: Tensor, prog_: prog.Sequence,
                                debugContext: Any = "") -> None:
    """``weightsOut[g, i, o, H-1-h, W-1-w] = weightsIn[g, o, i, h, w]``: a ``Copy`` on the device
    (an exchange between the tiles holding the two). An unmapped ``weightsOut`` is mapped
    linearly first."""
    what = "weightsTransposeChansFlipXY"
    weightsIn = tensorArgument(graph, weightsIn, f"{what}: weightsIn")
    weightsOut = tensorArgument(graph, weightsOut, f"{what}: weightsOut")
    if weightsIn.rank() != 5:
        raise PoplibsError(f"{what}: weightsIn '{weightsIn.name}' of shape {weightsIn.shape()} is not "
                           "[G, Co, Ci, kH, kW]")
    view = weightsIn.dimShuffle([0, 2, 1, 3, 4]).reverse(3).reverse(4)
    if weightsOut.shape() != view.shape() or weightsOut.elementType() != weightsIn.elementType():
        raise PoplibsError(f"{what}: weightsOut '{weightsOut.name}' is {weightsOut.elementType()} "
                           f"{weightsOut.shape()}, expected {weightsIn.elementType()} {view.shape()}")
    if is_unmapped(graph, weightsOut):
        mapTensorLinearly(graph, weightsOut)
    _program(what, prog_).add(prog.Copy(view, weightsOut, False, debug_name(debugContext, what) or what))


def createBiases(graph: Graph, activations: Tensor, *args: Any, name: Any = "",
                 options: dict | None = None, cache: PlanningCache | None = None) -> Tensor:
    """A ``[C]`` bias tensor for ``activations [B, C, ...]``: ``createBiases(graph, acts[, params],
    debugContext="biases", options=None, cache=None)``; positionally, options and cache follow
    params, as in C++ (they are checked; the layout needs no plan). Bias ``c`` lives on the tile
    holding the first element of channel ``c`` of the activations (where ``addBias`` adds it)."""
    rest = list(args)
    with_params = bool(rest) and isinstance(rest[0], ConvParams)
    keywords = {"debugContext": name, "options": options, "cache": cache}
    if with_params:
        rest.pop(0)
    elif len(rest) > 1:  # PopLibs' overload without params takes only a debug context
        raise PoplibsArgumentError(f"createBiases: options and cache follow params, got {rest[1:]!r:.60} "
                                   "after the debug context without params")
    name, options, cache = trailingArguments("createBiases", rest, keywords)
    matMulOptions(options, "createBiases")
    planningCacheArgument(cache, "createBiases")
    name = debug_name(name, "createBiases: debugContext") or "biases"
    activations = tensorArgument(graph, activations, "createBiases: activations")
    if activations.rank() < 2:
        raise PoplibsError(f"createBiases: activations '{activations.name}' of shape {activations.shape()} "
                           "have no channel dimension (expected [batch, channels, ...])")
    channels = activations.dim(1)
    biases = graph.addVariable(activations.elementType(), [channels], name)
    per_channel = activations.dimShuffle([1, 0, *range(2, activations.rank())]).reshape(
        [channels, activations.numElements() // channels])
    mapping = graph.getTileMapping(per_channel.slice(0, 1, 1), requireComplete=False)
    mapped = set()
    for tile, intervals in enumerate(mapping):
        for iv in intervals:
            graph.setTileMapping(biases.slice(iv.begin(), iv.end()), tile)
            mapped.update(range(iv.begin(), iv.end()))
    if len(mapped) < channels:  # unmapped activations: spread the biases instead
        mapTensorLinearly(graph, biases)
    return biases


def _biases(graph: Graph, what: str, acts: Tensor, biases: Tensor, acts_name: str) -> tuple[Tensor, Tensor]:
    acts = tensorArgument(graph, acts, f"{what}: {acts_name}")
    biases = tensorArgument(graph, biases, f"{what}: biases")
    if acts.rank() < 2 or biases.shape() != [acts.dim(1)]:
        raise PoplibsError(f"{what}: biases '{biases.name}' of shape {biases.shape()} do not match the "
                           f"channels (dimension 1) of {acts_name} '{acts.name}' {acts.shape()}")
    if biases.elementType() != acts.elementType():
        raise PoplibsError(f"{what}: biases '{biases.name}' are {biases.elementType()}, {acts_name} "
                           f"'{acts.name}' {acts.elementType()}")
    return acts, biases


def addBias(graph: Graph, activations: Tensor, biases: Tensor, prog_: prog.Sequence,
            debugContext: Any = "") -> None:
    """``activations[b, c, ...] += biases[c]``, in place on the tiles holding the activations
    (``popops.addInPlace`` with the biases broadcast)."""

    acts, biases = _biases(graph, "addBias", activations, biases, "activations")
    view = biases.reshape([acts.dim(1)] + [1] * (acts.rank() - 2))
    popops.addInPlace(graph, acts, view, _program("addBias", prog_), debug_name(debugContext) or "addBias")


def convolutionBiasUpdate(graph: Graph, zDeltas: Tensor, biases: Tensor, scale: float | Tensor,
                          options: dict | None, prog_: prog.Sequence, debugContext: Any = "") -> None:
    """``biases[c] += scale * sum(zDeltas[:, c, ...])``, PopLibs' argument order (options before
    prog): a ``popops.reduceWithOutput`` over every dimension but the channels, updating the
    biases where they live."""

    if isinstance(options, prog.Sequence) and not isinstance(prog_, prog.Sequence):
        options, prog_ = prog_, options  # (…, prog, options) given the Python way round
    zDeltas, biases = _biases(graph, "convolutionBiasUpdate", zDeltas, biases, "zDeltas")
    if isinstance(scale, bool) or not isinstance(scale, (int, float, Tensor)):
        raise PoplibsError(f"convolutionBiasUpdate: scale must be a number or a tensor, got {scale!r:.40}")
    dims = [0, *range(2, zDeltas.rank())]
    params = popops.ReduceParams(popops.Operation.ADD, update=True, scale=scale)
    popops.reduceWithOutput(graph, zDeltas, biases, dims, params, _program("convolutionBiasUpdate", prog_),
                            debug_name(debugContext) or "biasUpdate")
