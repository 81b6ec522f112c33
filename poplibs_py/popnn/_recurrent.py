"""What LSTM and GRU layers share: parameters, weights laid out for the gate matMuls, and the
small tensor helpers their time steps use.

A layer's weights are PopLibs': ``inputWeights [G, inputSize, H]``, ``outputWeights [G, H, H]``
and ``biases [G, H]`` for G gates. A time step multiplies ``x [B, inputSize]`` by the input
weights viewed as one ``[inputSize, G*H]`` matrix (and ``h`` by the output weights), so all
gates come from one matMul on the tiles, as PopLibs' fused cell does.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from poplar_py import Graph, Tensor, Type, concat
from poplar_py import program as prog_
from poplar_py.debug import debug_name
from poplar_py.types import asType

from .. import poplin, popops
from ..popops import expr as pe
from ..poputil import PoplibsArgumentError, PoplibsError, checkOptions, mapTensorLinearly

#: the options PopLibs' LSTM and GRU layers know (planning and recomputation choices: checked,
#: changing nothing here)
GRU_OPTIONS = frozenset({"availableMemoryProportion", "inferenceOnly", "numShards", "partialsType",
                         "rnnCodeReuse"})
LSTM_OPTIONS = GRU_OPTIONS | {"preCalcWeights", "weightAccumulatorsType", "recomputationMode",
                              "rnnStepsPerWU", "disableWUPartialInterleaving"}


def trailing(what: str, debugContext: Any, options: Any, planningCache: Any, known: Collection[str],
             default: str) -> str:
    """The debug name of a layer function (``default`` without one), after checking its trailing
    ``options`` (against ``known``) and ``planningCache`` (a ``poplin.PlanningCache`` or None)."""
    checkOptions(options, known, what)
    if planningCache is not None and not isinstance(planningCache, poplin.PlanningCache):
        raise PoplibsArgumentError(f"{what}: planningCache must be a poplin.PlanningCache (or None), got "
                                   f"{type(planningCache).__name__} {planningCache!r:.40}")
    return debug_name(debugContext, f"{what}: debugContext") or default


@dataclass(frozen=True)
class RnnParams:
    """``(dataType, batchSize, timeSteps, [inputSize, outputSize])``, as PopLibs' LstmParams
    and GruParams; ``outputFullSequence``: the output holds every step (else the last)."""

    dataType: Type
    batchSize: int
    timeSteps: int
    layerSizes: Sequence[int]
    outputFullSequence: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "dataType", asType(self.dataType))
        sizes = tuple(int(s) for s in self.layerSizes)
        if len(sizes) != 2 or min(sizes) < 1:
            raise PoplibsError(f"{type(self).__name__}: layerSizes must be [inputSize, outputSize], both "
                               f"positive, got {list(self.layerSizes)}")
        if self.batchSize < 1 or self.timeSteps < 1:
            raise PoplibsError(f"{type(self).__name__}: batchSize and timeSteps must be positive, got "
                               f"{self.batchSize} and {self.timeSteps}")
        object.__setattr__(self, "layerSizes", sizes)

    @property
    def inputSize(self) -> int:
        return self.layerSizes[0]

    @property
    def outputSize(self) -> int:
        return self.layerSizes[1]


@dataclass
class RnnWeights:
    """``inputWeights [G, inputSize, H]``, ``outputWeights [G, H, H]``, ``biases [G, H]``."""

    inputWeights: Tensor
    outputWeights: Tensor
    biases: Tensor


def variable(graph: Graph, params: RnnParams, shape: list[int], name: str) -> Tensor:
    """A new tensor of the layer's type, spread over the tiles."""
    t = graph.addVariable(params.dataType, shape, name)
    mapTensorLinearly(graph, t)
    return t


def create_input(graph: Graph, params: RnnParams, name: str) -> Tensor:
    """``[timeSteps, batchSize, inputSize]``, each step laid out as a matMul's left operand."""
    steps = [poplin.createMatMulInputLHS(graph, params.dataType, [params.batchSize, params.inputSize],
                                         [params.inputSize, params.outputSize], f"{name}/{t}")
             for t in range(params.timeSteps)]
    return stack(steps)


def create_weights(graph: Graph, params: RnnParams, gates: int, name: str) -> RnnWeights:
    i, h = params.inputSize, params.outputSize
    return RnnWeights(variable(graph, params, [gates, i, h], f"{name}/inputWeights"),
                      variable(graph, params, [gates, h, h], f"{name}/outputWeights"),
                      variable(graph, params, [gates, h], f"{name}/biases"))


def check_input(params: RnnParams, t: Tensor, what: str, shape: list[int]) -> None:
    if not isinstance(t, Tensor) or list(t.shape()) != shape:
        got = list(t.shape()) if isinstance(t, Tensor) else type(t).__name__
        raise PoplibsError(f"{what} must be a tensor of shape {shape}, got {got}")
    if t.elementType() != params.dataType:
        raise PoplibsError(f"{what} must be {params.dataType}, got {t.elementType()}")


def check_weights(params: RnnParams, w: RnnWeights, gates: int, what: str) -> None:
    i, h = params.inputSize, params.outputSize
    check_input(params, w.inputWeights, f"{what}.inputWeights", [gates, i, h])
    check_input(params, w.outputWeights, f"{what}.outputWeights", [gates, h, h])
    check_input(params, w.biases, f"{what}.biases", [gates, h])


def flat_gates(w: Tensor) -> Tensor:
    """``[G, rows, H]`` weights as the ``[rows, G*H]`` matrix a time step multiplies by."""
    g, rows, h = w.shape()
    return w.dimShuffle([1, 0, 2]).reshape([rows, g * h])


def gate_sums(graph: Graph, x: Tensor, h: Tensor, w: RnnWeights, prog: prog_.Sequence, name: str) -> Tensor:
    """``x @ Wi + h @ Wo + b`` for every gate at once: ``[B, G, H]``."""
    g, _, hidden = w.inputWeights.shape()
    sums = poplin.matMul(graph, x, flat_gates(w.inputWeights), prog, debugName=f"{name}/x")
    poplin.matMulAcc(graph, sums, 1.0, h, flat_gates(w.outputWeights), prog, debugName=f"{name}/h")
    gates = sums.reshape([x.dim(0), g, hidden])
    popops.addInPlace(graph, gates, w.biases, prog, f"{name}/bias")  # [G, H] broadcast over the batch
    return gates


def check_backward(params: RnnParams, what: str, fwdIntermediates: Tensor, per_step: int,
                   fwdInputSeq: Tensor, outputGrad: Tensor) -> None:
    """The shapes a backward pass needs: ``per_step`` intermediates a step, the input sequence
    and the output's gradient (every step's, or the last one's)."""
    b, hidden, steps = params.batchSize, params.outputSize, params.timeSteps
    check_input(params, fwdIntermediates, f"{what}: fwdIntermediates", [steps, per_step, b, hidden])
    check_input(params, fwdInputSeq, f"{what}: fwdInputSeq", [steps, b, params.inputSize])
    grad_shape = [steps, b, hidden] if params.outputFullSequence else [b, hidden]
    check_input(params, outputGrad, f"{what}: gradLayerNext", grad_shape)


def add_output_grad(graph: Graph, params: RnnParams, dh: Tensor, outputGrad: Tensor, t: int,
                    prog: prog_.Sequence, name: str) -> Tensor:
    """``dh`` plus what the next layer sends back for step ``t`` (only the last step's without
    ``outputFullSequence``)."""
    if params.outputFullSequence:
        return popops.add(graph, dh, outputGrad[t], prog, f"{name}/dh")
    if t == params.timeSteps - 1:
        return popops.add(graph, dh, outputGrad, prog, f"{name}/dh")
    return dh


def weight_grads(graph: Graph, params: RnnParams, gates: int, xs: list[Tensor],
                 recurrent: list[tuple[slice, list[Tensor]]], dgates: list[Tensor], prog: prog_.Sequence,
                 name: str) -> RnnWeights:
    """New weight and bias gradients of every step at once (one matMul over the stacked steps
    each; ``dgates``: each step's ``[B, gates*H]``): ``x^T @ dg`` for the input weights, the sum of
    ``dg`` over the rows for the biases, and for each ``(which, hs)`` in ``recurrent``,
    ``h^T @ dg`` for the output weights of the gates ``which`` (a slice)."""
    hidden = params.outputSize
    grads = create_weights(graph, params, gates, f"{name}/weightsGrad")
    for t in (grads.inputWeights, grads.outputWeights, grads.biases):
        popops.zero(graph, t, prog, f"{name}/zeroGrads")
    d = concat_rows(dgates)  # [T*B, G*H]
    poplin.matMulAcc(graph, flat_gates(grads.inputWeights), 1.0, concat_rows(xs).transpose(), d, prog,
                     debugName=f"{name}/dWi")
    by_gate = d.reshape([d.dim(0), gates, hidden])
    for which, hs in recurrent:
        part = by_gate[:, which]
        poplin.matMulAcc(graph, flat_gates(grads.outputWeights[which]), 1.0, concat_rows(hs).transpose(),
                         part.reshape([d.dim(0), part.dim(1) * hidden]), prog, debugName=f"{name}/dWo")
    popops.reduceWithOutput(graph, d, grads.biases.reshape([gates * hidden]), [0],
                            popops.ReduceParams(popops.Operation.ADD, update=True), prog, f"{name}/db")
    return grads


def concat_rows(ts: list[Tensor]) -> Tensor:
    """The tensors one after another along dimension 0 (a view: nothing copied)."""
    return concat(ts, 0)


def stack(ts: list[Tensor]) -> Tensor:
    """``[len(ts), *shape]``: a view of the tensors one after another (nothing copied)."""
    return concat_rows([t.expand([0]) for t in ts])


def zeros(graph: Graph, params: RnnParams, shape: list[int], prog: prog_.Sequence, name: str) -> Tensor:
    t = variable(graph, params, shape, name)
    popops.zero(graph, t, prog, name)
    return t


#: ``d * x * s * (1 - s)`` and ``d * x * (1 - t^2)``: a gradient through a product with ``x``
#: and a sigmoid (output ``s``) or a tanh (output ``t``)
SIGMOID_GRAD = pe._1 * pe._2 * pe._3 * (pe.Const(1.0) - pe._3)
TANH_GRAD = pe._1 * pe._2 * (pe.Const(1.0) - pe._3 * pe._3)
