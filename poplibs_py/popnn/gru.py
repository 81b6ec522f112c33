"""popnn::gru: a basic GRU layer, forward and backward, on the tiles.

Gates, in PopLibs' order (``BASIC_GRU_CELL_*``): reset, update, candidate. A time step, as
PopLibs' default cell (the reset gate applied before the candidate's matMul)::

    r, u = sigmoid(x Wi + h Wo + b),  c = tanh(x Wi_c + (r*h) Wo_c + b_c),  h' = u*h + (1-u)*c

One matMul gives all three gates' input sums, one accumulating matMul adds ``h Wo`` to the
reset and update gates, and one more adds ``(r*h) Wo_c`` to the candidate. The forward
intermediates are a view ``[timeSteps, 4, batchSize, H]`` of each step's r, u, c and h'.
The backward pass runs the steps in reverse; ``gruBwdWithWU`` also adds the weight gradients.
Out-arguments (``intermediates``, ``inputGrad``, ``bwdIntermediates``, ``weightsGrad``) are
lists, as in :mod:`popnn.lstm`.
``options`` (PopLibs' GRU options) and ``planningCache`` (a ``poplin.PlanningCache``) are
checked, positionally or by keyword; neither changes what is built.
"""

from __future__ import annotations

from typing import Any

from poplar_py import Graph, Tensor, concat
from poplar_py import program as prog_

from .. import poplin, popops
from ..popops import expr as pe
from ..poputil import PoplibsError
from . import _recurrent as rnn

__all__ = [
    "BASIC_GRU_CELL_CANDIDATE",
    "BASIC_GRU_CELL_RESET_GATE",
    "BASIC_GRU_CELL_UPDATE_GATE",
    "GruParams",
    "GruWeights",
    "createInitialState",
    "createInput",
    "createWeights",
    "getDefaultBasicGruCellOrder",
    "gruBwd",
    "gruBwdWithWU",
    "gruFwd",
]

BASIC_GRU_CELL_RESET_GATE, BASIC_GRU_CELL_UPDATE_GATE, BASIC_GRU_CELL_CANDIDATE = range(3)
GATES = 3
RESET, UPDATE, CAND, HIDDEN = range(4)  # the forward intermediates of a step


def getDefaultBasicGruCellOrder() -> list[int]:
    """The gate order of the weights: reset, update, candidate."""
    return [BASIC_GRU_CELL_RESET_GATE, BASIC_GRU_CELL_UPDATE_GATE, BASIC_GRU_CELL_CANDIDATE]


class GruParams(rnn.RnnParams):
    """``GruParams(dataType, batchSize, timeSteps, [inputSize, outputSize])``."""


GruWeights = rnn.RnnWeights


def createInput(graph: Graph, params: GruParams, debugContext: Any = "", options: Any = None,
                planningCache: Any = None) -> Tensor:
    """A ``[timeSteps, batchSize, inputSize]`` input, each step laid out for its matMul."""
    name = rnn.trailing("createInput", debugContext, options, planningCache, rnn.GRU_OPTIONS,
                        "gru/input")
    return rnn.create_input(graph, params, name)


def createWeights(graph: Graph, params: GruParams, debugContext: Any = "", options: Any = None,
                  planningCache: Any = None) -> GruWeights:
    """New input weights ``[3, inputSize, H]``, output weights ``[3, H, H]`` and biases ``[3, H]``."""
    name = rnn.trailing("createWeights", debugContext, options, planningCache, rnn.GRU_OPTIONS,
                        "gru/weights")
    return rnn.create_weights(graph, params, GATES, name)


def createInitialState(graph: Graph, params: GruParams, debugContext: Any = "", options: Any = None,
                       planningCache: Any = None) -> Tensor:
    """A new (uninitialised) initial output ``[batchSize, outputSize]``."""
    name = rnn.trailing("createInitialState", debugContext, options, planningCache, rnn.GRU_OPTIONS,
                        "gru/initialOutput")
    return rnn.variable(graph, params, [params.batchSize, params.outputSize], name)


def _check(params: GruParams, state: Tensor, weights: GruWeights, what: str) -> None:
    if not isinstance(params, GruParams):
        raise PoplibsError(f"{what}: params must be popnn.gru.GruParams, got {type(params).__name__}")
    rnn.check_input(params, state, f"{what}: the initial output", [params.batchSize, params.outputSize])
    rnn.check_weights(params, weights, GATES, f"{what}: weights")


def gruFwd(graph: Graph, params: GruParams, outputInit: Tensor, input: Tensor,  # noqa: A002
           weights: GruWeights, intermediates: list | None, fwdProg: prog_.Sequence, debugContext: Any = "",
           options: Any = None, planningCache: Any = None) -> Tensor:
    """Run the layer over ``input [T, B, inputSize]``: the output, ``[T, B, H]`` (or the last
    step's ``[B, H]`` without ``outputFullSequence``)."""
    name = rnn.trailing("gruFwd", debugContext, options, planningCache, rnn.GRU_OPTIONS, "gru/fwd")
    _check(params, outputInit, weights, "gruFwd")
    rnn.check_input(params, input, "gruFwd: input", [params.timeSteps, params.batchSize, params.inputSize])
    b, hidden = params.batchSize, params.outputSize
    w_in, w_out = rnn.flat_gates(weights.inputWeights), rnn.flat_gates(weights.outputWeights[RESET:CAND])
    h = outputInit
    outputs, steps = [], []
    for t in range(params.timeSteps):
        at = f"{name}/step{t}"
        sums = poplin.matMul(graph, input[t], w_in, fwdProg, debugName=f"{at}/x")
        gates = sums.reshape([b, GATES, hidden])
        by_gate = gates.dimShuffle([1, 0, 2])
        poplin.matMulAcc(graph, gates[:, RESET:CAND].reshape([b, 2 * hidden]), 1.0, h, w_out, fwdProg,
                         debugName=f"{at}/h")
        popops.addInPlace(graph, gates, weights.biases, fwdProg, f"{at}/bias")
        popops.sigmoidInPlace(graph, by_gate[RESET:CAND], fwdProg, f"{at}/sigmoid")
        reset_h = popops.mul(graph, by_gate[RESET], h, fwdProg, f"{at}/resetOutput")
        poplin.matMulAcc(graph, by_gate[CAND], 1.0, reset_h, weights.outputWeights[CAND], fwdProg,
                         debugName=f"{at}/candidate")
        popops.tanhInPlace(graph, by_gate[CAND], fwdProg, f"{at}/tanh")
        h = popops.map(graph, pe._1 * pe._2 + (pe.Const(1.0) - pe._1) * pe._3,
                       [by_gate[UPDATE], h, by_gate[CAND]], fwdProg, f"{at}/output")
        outputs.append(h)
        steps.append(concat([by_gate, h.expand([0])]))
    if intermediates is not None:
        intermediates.append(rnn.stack(steps))
    return rnn.stack(outputs) if params.outputFullSequence else h


def _backward(graph: Graph, params: GruParams, prog: prog_.Sequence, outputInit: Tensor,
              fwdIntermediates: Tensor, weights: GruWeights, fwdInputSeq: Tensor, outputGrad: Tensor,
              name: str) -> tuple[Tensor, list[Tensor], list[Tensor], list[Tensor]]:
    """Back-propagation through time: the initial output's gradient, then per step the input
    gradients, the gates' (pre-activation) gradients ``[B, 3*H]`` and ``r*h_prev``."""
    what = "gruBwd"
    _check(params, outputInit, weights, what)
    b, hidden, steps = params.batchSize, params.outputSize, params.timeSteps
    rnn.check_backward(params, what, fwdIntermediates, HIDDEN + 1, fwdInputSeq, outputGrad)
    w_in = rnn.flat_gates(weights.inputWeights)
    w_ru = rnn.flat_gates(weights.outputWeights[RESET:CAND])
    w_cand = weights.outputWeights[CAND]
    dh = rnn.zeros(graph, params, [b, hidden], prog, f"{name}/dh")
    dxs: list[Tensor] = [None] * steps  # type: ignore[list-item]
    dgates_all: list[Tensor] = [None] * steps  # type: ignore[list-item]
    reset_hs: list[Tensor] = [None] * steps  # type: ignore[list-item]
    for t in reversed(range(steps)):
        at = f"{name}/step{t}"
        now = fwdIntermediates[t]
        h_prev = outputInit if t == 0 else fwdIntermediates[t - 1][HIDDEN]
        dh = rnn.add_output_grad(graph, params, dh, outputGrad, t, prog, at)
        dgates = poplin.createMatMulInputLHS(graph, params.dataType, [b, GATES * hidden],
                                             [GATES * hidden, hidden], f"{at}/dgates")
        by_gate = dgates.reshape([b, GATES, hidden]).dimShuffle([1, 0, 2])
        cs = graph.addComputeSet(f"{at}/candidateAndUpdateGrads")
        popops.mapWithOutput(graph, pe._1 * (pe.Const(1.0) - pe._2) * (pe.Const(1.0) - pe._3 * pe._3),
                             [dh, now[UPDATE], now[CAND]], by_gate[CAND], cs, f"{at}/dc")
        popops.mapWithOutput(graph, pe._1 * (pe._2 - pe._3) * pe._4 * (pe.Const(1.0) - pe._4),
                             [dh, h_prev, now[CAND], now[UPDATE]], by_gate[UPDATE], cs, f"{at}/du")
        prog.add(prog_.Execute(cs))
        d_reset_h = poplin.matMul(graph, by_gate[CAND], w_cand.transpose(), prog, debugName=f"{at}/dReset")
        popops.mapWithOutput(graph, rnn.SIGMOID_GRAD, [d_reset_h, h_prev, now[RESET]], by_gate[RESET], prog,
                             f"{at}/dr")
        dxs[t] = poplin.matMul(graph, dgates, w_in.transpose(), prog, debugName=f"{at}/dx")
        ru = dgates.reshape([b, GATES, hidden])[:, RESET:CAND].reshape([b, 2 * hidden])
        through_gates = poplin.matMul(graph, ru, w_ru.transpose(), prog, debugName=f"{at}/dhGates")
        dh = popops.map(graph, pe._1 * pe._2 + pe._3 * pe._4 + pe._5,
                        [dh, now[UPDATE], d_reset_h, now[RESET], through_gates], prog, f"{at}/dhPrev")
        dgates_all[t] = dgates
        reset_hs[t] = popops.mul(graph, now[RESET], h_prev, prog, f"{at}/resetOutput")
    return dh, dxs, dgates_all, reset_hs


def gruBwd(graph: Graph, params: GruParams, prog: prog_.Sequence, fwdOutputInit: Tensor,
           fwdIntermediates: Tensor, weights: GruWeights, fwdInputSeq: Tensor, fwdOutput: Tensor,
           gradLayerNext: Tensor, inputGrad: list | None, bwdIntermediates: list | None,
           debugContext: Any = "", options: Any = None, planningCache: Any = None) -> Tensor:
    """The gradient of the initial output (returned), of the input (``inputGrad``) and of the
    gates (``bwdIntermediates``: ``[T, B, 3, H]``), from the output's gradient."""
    name = rnn.trailing("gruBwd", debugContext, options, planningCache, rnn.GRU_OPTIONS, "gru/bwd")
    dh, dxs, dgates, _ = _backward(graph, params, prog, fwdOutputInit, fwdIntermediates, weights, fwdInputSeq,
                                   gradLayerNext, name)
    if inputGrad is not None:
        inputGrad.append(rnn.stack(dxs))
    if bwdIntermediates is not None:
        bwdIntermediates.append(rnn.stack([d.reshape([params.batchSize, GATES, params.outputSize])
                                           for d in dgates]))
    return dh


def gruBwdWithWU(graph: Graph, params: GruParams, prog: prog_.Sequence, fwdOutputInit: Tensor,
                 fwdIntermediates: Tensor, weights: GruWeights, input: Tensor,  # noqa: A002
                 output: Tensor, outputGrad: Tensor, inputGrad: list | None, weightsGrad: list,
                 debugContext: Any = "", options: Any = None, planningCache: Any = None) -> Tensor:
    """``gruBwd`` plus the weights' gradients (a ``GruWeights`` appended to ``weightsGrad``)."""
    name = rnn.trailing("gruBwdWithWU", debugContext, options, planningCache, rnn.GRU_OPTIONS,
                        "gru/bwdWithWU")
    dh, dxs, dgates, reset_hs = _backward(graph, params, prog, fwdOutputInit, fwdIntermediates, weights,
                                          input, outputGrad, name)
    if inputGrad is not None:
        inputGrad.append(rnn.stack(dxs))
    steps = params.timeSteps
    h_prev = [fwdOutputInit] + [fwdIntermediates[t][HIDDEN] for t in range(steps - 1)]
    recurrent = [(slice(RESET, CAND), h_prev), (slice(CAND, CAND + 1), reset_hs)]
    xs = [input[t] for t in range(steps)]
    weightsGrad.append(rnn.weight_grads(graph, params, GATES, xs, recurrent, dgates, prog, name))
    return dh
