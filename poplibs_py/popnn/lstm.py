"""popnn::lstm: a basic LSTM layer, forward and backward, on the tiles.

Gates, in PopLibs' order (``BASIC_LSTM_CELL_*``): forget, input, candidate, output. A time step
computes all four gates' sums with one matMul for the input and one accumulating matMul for the
previous output (``_recurrent.gate_sums``), then on the tiles::

    f, i, o = sigmoid(...), g = tanh(...), c = f*c_prev + i*g, h = o*tanh(c)

The time steps are unrolled into the program. The forward intermediates are a view
``[timeSteps, 7, batchSize, H]`` of each step's f, i, g, o, c, tanh(c) and h (nothing copied).
The backward pass runs the steps in reverse (back-propagation through time); with ``WithWU`` it
also adds every step's weight gradients, in three matMuls over all steps at once.

PopLibs' ``Tensor*`` out-arguments (``intermediates``, ``inputGrad``, ``bwdIntermediates``,
``weightsGrad``) are lists here: pass a list and the tensor (or ``LstmWeights``) is appended;
pass None when not needed.
``options`` (PopLibs' LSTM options) and ``planningCache`` (a ``poplin.PlanningCache``) are
checked, positionally or by keyword; neither changes what is built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from poplar_py import Graph, Tensor, concat
from poplar_py import program as prog_

from .. import poplin, popops
from ..popops import expr as pe
from ..poputil import PoplibsError
from . import _recurrent as rnn

__all__ = [
    "BASIC_LSTM_CELL_CANDIDATE",
    "BASIC_LSTM_CELL_FORGET_GATE",
    "BASIC_LSTM_CELL_INPUT_GATE",
    "BASIC_LSTM_CELL_OUTPUT_GATE",
    "LstmParams",
    "LstmState",
    "LstmWeights",
    "createInitialState",
    "createInput",
    "createWeights",
    "getDefaultBasicLstmCellOrder",
    "lstmBwd",
    "lstmBwdWithWU",
    "lstmFwd",
    "zeroInitialState",
]

BASIC_LSTM_CELL_FORGET_GATE, BASIC_LSTM_CELL_INPUT_GATE, BASIC_LSTM_CELL_CANDIDATE, \
    BASIC_LSTM_CELL_OUTPUT_GATE = range(4)
GATES = 4
FORGET, INPUT, CAND, OUT, CELL, TANH_CELL, HIDDEN = range(7)  # the forward intermediates of a step


class LstmParams(rnn.RnnParams):
    """``LstmParams(dataType, batchSize, timeSteps, [inputSize, outputSize])``."""


LstmWeights = rnn.RnnWeights


@dataclass
class LstmState:
    """The layer's state: ``output`` (h) and ``cellState`` (c), each ``[batchSize, outputSize]``."""

    output: Tensor
    cellState: Tensor

    def getAsTensor(self) -> Tensor:
        """``[2, batchSize, outputSize]``: the output then the cell state (a view)."""
        return concat([self.output.expand([0]), self.cellState.expand([0])])


def getDefaultBasicLstmCellOrder() -> list[int]:
    """The gate order of the weights: forget, input, candidate, output."""
    return [BASIC_LSTM_CELL_FORGET_GATE, BASIC_LSTM_CELL_INPUT_GATE, BASIC_LSTM_CELL_CANDIDATE,
            BASIC_LSTM_CELL_OUTPUT_GATE]


def zeroInitialState(graph: Graph, initialState: LstmState, prog: prog_.Sequence,
                     debugContext: Any = "") -> None:
    """Zero both state tensors on the tiles holding them."""
    name = rnn.trailing("zeroInitialState", debugContext, None, None, rnn.LSTM_OPTIONS,
                        "lstm/zeroInitialState")
    popops.zero(graph, initialState.getAsTensor(), prog, name)


def createInput(graph: Graph, params: LstmParams, debugContext: Any = "", options: Any = None,
                planningCache: Any = None) -> Tensor:
    """A ``[timeSteps, batchSize, inputSize]`` input, each step laid out for its matMul."""
    name = rnn.trailing("createInput", debugContext, options, planningCache, rnn.LSTM_OPTIONS,
                        "lstm/input")
    return rnn.create_input(graph, params, name)


def createWeights(graph: Graph, params: LstmParams, debugContext: Any = "", options: Any = None,
                  planningCache: Any = None) -> LstmWeights:
    """New input weights ``[4, inputSize, H]``, output weights ``[4, H, H]`` and biases ``[4, H]``."""
    name = rnn.trailing("createWeights", debugContext, options, planningCache, rnn.LSTM_OPTIONS,
                        "lstm/weights")
    return rnn.create_weights(graph, params, GATES, name)


def createInitialState(graph: Graph, params: LstmParams, debugContext: Any = "", options: Any = None,
                       planningCache: Any = None) -> LstmState:
    """New (uninitialised) ``output`` and ``cellState`` tensors ``[batchSize, outputSize]``."""
    name = rnn.trailing("createInitialState", debugContext, options, planningCache, rnn.LSTM_OPTIONS,
                        "lstm/initialState")
    shape = [params.batchSize, params.outputSize]
    return LstmState(rnn.variable(graph, params, shape, f"{name}/output"),
                     rnn.variable(graph, params, shape, f"{name}/cellState"))


def _check(params: LstmParams, state: LstmState, weights: LstmWeights, what: str) -> None:
    if not isinstance(params, LstmParams):
        raise PoplibsError(f"{what}: params must be popnn.lstm.LstmParams, got {type(params).__name__}")
    shape = [params.batchSize, params.outputSize]
    rnn.check_input(params, state.output, f"{what}: the state's output", shape)
    rnn.check_input(params, state.cellState, f"{what}: the state's cellState", shape)
    rnn.check_weights(params, weights, GATES, f"{what}: weights")


def lstmFwd(graph: Graph, params: LstmParams, stateInit: LstmState, input: Tensor,  # noqa: A002
            weights: LstmWeights, intermediates: list | None, fwdProg: prog_.Sequence, debugContext: Any = "",
            options: Any = None, planningCache: Any = None) -> tuple[Tensor, Tensor]:
    """Run the layer over ``input [T, B, inputSize]``: returns the output (``[T, B, H]``, or the
    last step's ``[B, H]`` without ``outputFullSequence``) and the last cell state ``[B, H]``."""
    name = rnn.trailing("lstmFwd", debugContext, options, planningCache, rnn.LSTM_OPTIONS, "lstm/fwd")
    _check(params, stateInit, weights, "lstmFwd")
    rnn.check_input(params, input, "lstmFwd: input", [params.timeSteps, params.batchSize, params.inputSize])
    h, c = stateInit.output, stateInit.cellState
    outputs, steps = [], []
    for t in range(params.timeSteps):
        at = f"{name}/step{t}"
        gates = rnn.gate_sums(graph, input[t], h, weights, fwdProg, at)
        by_gate = gates.dimShuffle([1, 0, 2])  # [4, B, H]
        sigmoids = concat([by_gate[FORGET:CAND], by_gate[OUT:OUT + 1]])
        popops.sigmoidInPlace(graph, sigmoids, fwdProg, f"{at}/sigmoid")
        popops.tanhInPlace(graph, by_gate[CAND], fwdProg, f"{at}/tanh")
        c = popops.map(graph, pe._1 * pe._2 + pe._3 * pe._4,
                       [by_gate[FORGET], c, by_gate[INPUT], by_gate[CAND]], fwdProg, f"{at}/cellState")
        tanh_c = popops.tanh(graph, c, fwdProg, f"{at}/tanhCellState")
        h = popops.mul(graph, by_gate[OUT], tanh_c, fwdProg, f"{at}/output")
        outputs.append(h)
        steps.append(concat([by_gate, c.expand([0]), tanh_c.expand([0]), h.expand([0])]))
    if intermediates is not None:
        intermediates.append(rnn.stack(steps))
    return (rnn.stack(outputs) if params.outputFullSequence else h), c


def _backward(graph: Graph, params: LstmParams, prog: prog_.Sequence, fwdStateInit: LstmState,
              fwdIntermediates: Tensor, weights: LstmWeights, fwdInputSeq: Tensor, outputGrad: Tensor,
              lastCellStateGrad: Tensor | None, name: str) -> tuple[LstmState, list[Tensor], list[Tensor]]:
    """Back-propagation through time: the initial state's gradient, then per step the input
    gradients and the gates' (pre-activation) gradients ``[B, 4, H]``."""
    what = "lstmBwd"
    _check(params, fwdStateInit, weights, what)
    b, hidden, steps = params.batchSize, params.outputSize, params.timeSteps
    rnn.check_backward(params, what, fwdIntermediates, HIDDEN + 1, fwdInputSeq, outputGrad)
    w_in, w_out = rnn.flat_gates(weights.inputWeights), rnn.flat_gates(weights.outputWeights)
    dh = rnn.zeros(graph, params, [b, hidden], prog, f"{name}/dh")
    if lastCellStateGrad is not None:
        rnn.check_input(params, lastCellStateGrad, f"{what}: lastCellStateGrad", [b, hidden])
        dc = lastCellStateGrad
    else:
        dc = rnn.zeros(graph, params, [b, hidden], prog, f"{name}/dc")
    input_grads: list[Tensor] = [None] * steps  # type: ignore[list-item]
    gate_grads: list[Tensor] = [None] * steps  # type: ignore[list-item]
    for t in reversed(range(steps)):
        at = f"{name}/step{t}"
        now = fwdIntermediates[t]
        c_prev = fwdStateInit.cellState if t == 0 else fwdIntermediates[t - 1][CELL]
        dh = rnn.add_output_grad(graph, params, dh, outputGrad, t, prog, at)
        dc = popops.map(graph, pe._1 + pe._2 * pe._3 * (pe.Const(1.0) - pe._4 * pe._4),
                        [dc, dh, now[OUT], now[TANH_CELL]], prog, f"{at}/dc")
        dgates = poplin.createMatMulInputLHS(graph, params.dataType, [b, GATES * hidden],
                                             [GATES * hidden, hidden], f"{at}/dgates")
        by_gate = dgates.reshape([b, GATES, hidden]).dimShuffle([1, 0, 2])
        cs = graph.addComputeSet(f"{at}/gateGrads")
        for gate, expr, ts in ((FORGET, rnn.SIGMOID_GRAD, [dc, c_prev, now[FORGET]]),
                               (INPUT, rnn.SIGMOID_GRAD, [dc, now[CAND], now[INPUT]]),
                               (CAND, rnn.TANH_GRAD, [dc, now[INPUT], now[CAND]]),
                               (OUT, rnn.SIGMOID_GRAD, [dh, now[TANH_CELL], now[OUT]])):
            popops.mapWithOutput(graph, expr, ts, by_gate[gate], cs, f"{at}/d{gate}")
        prog.add(prog_.Execute(cs))
        dc = popops.mul(graph, dc, now[FORGET], prog, f"{at}/dcPrev")
        input_grads[t] = poplin.matMul(graph, dgates, w_in.transpose(), prog, debugName=f"{at}/dx")
        dh = poplin.matMul(graph, dgates, w_out.transpose(), prog, debugName=f"{at}/dhPrev")
        gate_grads[t] = dgates
    return LstmState(dh, dc), input_grads, gate_grads


def lstmBwd(graph: Graph, params: LstmParams, prog: prog_.Sequence, fwdStateInit: LstmState,
            fwdIntermediates: Tensor, weights: LstmWeights, fwdInputSeq: Tensor, fwdOutput: Tensor,
            gradLayerNext: Tensor, lastCellStateGrad: Tensor | None, inputGrad: list | None,
            bwdIntermediates: list | None, debugContext: Any = "", options: Any = None,
            planningCache: Any = None) -> LstmState:
    """The gradients of the loss w.r.t. the initial state (returned), the input
    (``inputGrad``: ``[T, B, inputSize]``) and the gates (``bwdIntermediates``: ``[T, B, 4, H]``),
    from the output's gradient ``gradLayerNext``."""
    name = rnn.trailing("lstmBwd", debugContext, options, planningCache, rnn.LSTM_OPTIONS, "lstm/bwd")
    state, dx, dgates = _backward(graph, params, prog, fwdStateInit, fwdIntermediates, weights, fwdInputSeq,
                                  gradLayerNext, lastCellStateGrad, name)
    if inputGrad is not None:
        inputGrad.append(rnn.stack(dx))
    if bwdIntermediates is not None:
        bwdIntermediates.append(rnn.stack([d.reshape([params.batchSize, GATES, params.outputSize])
                                           for d in dgates]))
    return state


def lstmBwdWithWU(graph: Graph, params: LstmParams, prog: prog_.Sequence, fwdStateInit: LstmState,
                  fwdIntermediates: Tensor, weights: LstmWeights, input: Tensor,  # noqa: A002
                  output: Tensor,
                  outputGrad: Tensor, lastCellStateGrad: Tensor | None, inputGrad: list | None,
                  weightsGrad: list, debugContext: Any = "", options: Any = None,
                  planningCache: Any = None) -> LstmState:
    """``lstmBwd`` plus the weights' gradients (an ``LstmWeights`` appended to ``weightsGrad``)."""
    name = rnn.trailing("lstmBwdWithWU", debugContext, options, planningCache, rnn.LSTM_OPTIONS,
                        "lstm/bwdWithWU")
    state, dx, dgates = _backward(graph, params, prog, fwdStateInit, fwdIntermediates, weights, input,
                                  outputGrad, lastCellStateGrad, name)
    if inputGrad is not None:
        inputGrad.append(rnn.stack(dx))
    h_prev = [fwdStateInit.output] + [fwdIntermediates[t][HIDDEN] for t in range(params.timeSteps - 1)]
    weightsGrad.append(rnn.weight_grads(graph, params, GATES, [input[t] for t in range(params.timeSteps)],
                                        [(slice(0, GATES), h_prev)], dgates, prog, name))
    return state

