"""popnn::rnn (Recurrent.hpp): the vanilla recurrent layer ``y_t = nl(x_t @ Wi + y_{t-1} @ Wfb + b)``.

Shapes as PopLibs': sequences ``[steps, batchSize, size]``, ``weightsInput [inputSize,
outputSize]``, ``weightsFeedback [outputSize, outputSize]``, ``biases [outputSize]``; the forward
state is the layer's output ``[batchSize, outputSize]``. Every product is a ``poplin.matMul`` on
the tiles and the non-linearity and its gradient are popnn's. ``forwardIterate`` unrolls the
steps it is given; ``rnnFwdSequence`` and ``rnnBwdSequence`` are one ``Repeat`` each, slicing
the step with ``popops.dynamicSlice`` at a device counter and storing its results with
``popops.dynamicUpdate``, as PopLibs does.

``partialsType``, ``inferenceOnly`` and ``planningCache`` are accepted and checked; they change
no result here.
"""

from __future__ import annotations

from typing import Any

from poplar_py import UNSIGNED_INT, Graph, Tensor, concat
from poplar_py import program as prog_
from poplar_py.debug import debug_name
from poplar_py.types import asType

from .. import poplin, popops
from ..poputil import PoplibsArgumentError, PoplibsError, duplicate
from .nonlinearity import NonLinearityType, nonLinearityInPlace, nonLinearityInputGradient

__all__ = ["backwardGradientStep", "createBwdState", "createFwdState", "createInput", "createWeightsFeedback",
           "createWeightsInput", "forwardIterate", "forwardWeightInput", "getBwdFlops", "getFwdFlops",
           "getOutputFromFwdState", "getWuFlops", "paramDeltaUpdate", "rnnBwdSequence", "rnnFwdSequence"]


def _name(debugContext: Any, what: str, partialsType: Any = None, planningCache: Any = None) -> str:
    if partialsType is not None:
        try:
            asType(partialsType)
        except Exception:
            raise PoplibsArgumentError(f"{what}: partialsType must be a poplar type, got "
                                       f"{partialsType!r:.40}") from None
    if planningCache is not None and not isinstance(planningCache, poplin.PlanningCache):
        raise PoplibsArgumentError(f"{what}: planningCache must be a poplin.PlanningCache or None")
    return debug_name(debugContext, f"{what}: debugContext") or f"rnn/{what}"


def _sizes(what: str, **sizes: Any) -> None:
    for arg, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise PoplibsError(f"{what}: {arg} must be a positive integer, got {value!r:.40}")


def _tensor(t: Any, what: str, shape: list[int | None]) -> Tensor:
    ok = isinstance(t, Tensor) and t.rank() == len(shape) and all(
        want is None or got == want for got, want in zip(t.shape(), shape))
    if not ok:
        got = t.shape() if isinstance(t, Tensor) else type(t).__name__
        want = ", ".join("*" if s is None else str(s) for s in shape)
        raise PoplibsError(f"{what} must be shaped [{want}], got {got}")
    return t


def getFwdFlops(sequenceSize: int, batchSize: int, inputSize: int, outputSize: int,
                weightInput: bool = True) -> int:
    """PopLibs' count: the feedback (and input) products and the bias and input additions."""
    rows = batchSize * sequenceSize
    iterate = outputSize * (2 * outputSize - 1) * rows + 2 * sequenceSize * outputSize
    feed = inputSize * outputSize * rows + outputSize * (inputSize - 1) * rows
    return iterate + (feed if weightInput else 0)


def getBwdFlops(sequenceSize: int, batchSize: int, inputSize: int, outputSize: int,
                calcInputGrad: bool = True) -> int:
    """PopLibs' count (the non-linearity's gradient not included)."""
    rows = batchSize * sequenceSize
    inputs = inputSize * outputSize * rows + outputSize * (inputSize - 1) * rows
    total = outputSize * outputSize * rows + outputSize * (outputSize - 1) * rows
    return total + (inputs if calcInputGrad else 0)


def getWuFlops(sequenceSize: int, batchSize: int, inputSize: int, outputSize: int) -> int:
    """The weight-delta products, their sums over batch and steps, and the update, as PopLibs counts."""
    rows = batchSize * sequenceSize
    products = (inputSize + outputSize) * outputSize * rows
    sums = (rows - 1) * outputSize * (inputSize + outputSize + 1)
    return products + sums + outputSize * (inputSize + outputSize + 1)


def createInput(graph: Graph, numSteps: int, batchSize: int, inputSize: int, outputSize: int, dType: Any,
                partialsType: Any = None, inferenceOnly: bool = False, debugContext: Any = "",
                planningCache: Any = None) -> Tensor:
    """A new ``[numSteps, batchSize, inputSize]`` input, every step laid out as the left
    operand of the input matMul."""
    name = _name(debugContext, "createInput", partialsType, planningCache)
    _sizes("createInput", numSteps=numSteps, batchSize=batchSize, inputSize=inputSize, outputSize=outputSize)
    first = poplin.createMatMulInputLHS(graph, dType, [batchSize, inputSize], [inputSize, outputSize], name)
    steps = [first] + [graph.clone(first, f"{name}/{s}") for s in range(1, numSteps)]
    return concat([s.expand([0]) for s in steps])


def createFwdState(graph: Graph, dType: Any, batchSize: int, outputSize: int, prog: prog_.Sequence,
                   initState: bool, inferenceOnly: bool, debugContext: Any = "",
                   planningCache: Any = None) -> Tensor:
    """A new ``[batchSize, outputSize]`` forward state (zeroed by ``prog`` if ``initState``)."""
    name = _name(debugContext, "createFwdState", None, planningCache)
    _sizes("createFwdState", batchSize=batchSize, outputSize=outputSize)
    state = poplin.createMatMulInputLHS(graph, dType, [batchSize, outputSize], [outputSize, outputSize], name)
    if initState:
        popops.zero(graph, state, prog, name)
    return state


def getOutputFromFwdState(fwdState: Tensor) -> Tensor:
    """The layer's output held in a forward state: the state itself."""
    return fwdState


def createBwdState(graph: Graph, dType: Any, batchSize: int, outputSize: int, prog: prog_.Sequence,
                   debugContext: Any = "", planningCache: Any = None) -> Tensor:
    """A new ``[batchSize, outputSize]`` backward state, zeroed by ``prog``."""
    name = _name(debugContext, "createBwdState", None, planningCache)
    _sizes("createBwdState", batchSize=batchSize, outputSize=outputSize)
    state = poplin.createMatMulInputLHS(graph, dType, [batchSize, outputSize], [outputSize, outputSize], name)
    popops.zero(graph, state, prog, name)
    return state


def createWeightsInput(graph: Graph, sequenceSize: int, batchSize: int, inputSize: int, outputSize: int,
                       dType: Any, partialsType: Any = None, inferenceOnly: bool = False,
                       debugContext: Any = "", planningCache: Any = None) -> Tensor:
    """New ``[inputSize, outputSize]`` input weights, laid out as the input matMul's right operand."""
    name = _name(debugContext, "createWeightsInput", partialsType, planningCache)
    _sizes("createWeightsInput", batchSize=batchSize, inputSize=inputSize, outputSize=outputSize)
    return poplin.createMatMulInputRHS(graph, dType, [batchSize, inputSize], [inputSize, outputSize], name)


def createWeightsFeedback(graph: Graph, batchSize: int, outputSize: int, dType: Any, partialsType: Any = None,
                          inferenceOnly: bool = False, debugContext: Any = "",
                          planningCache: Any = None) -> Tensor:
    """New ``[outputSize, outputSize]`` feedback weights."""
    name = _name(debugContext, "createWeightsFeedback", partialsType, planningCache)
    _sizes("createWeightsFeedback", batchSize=batchSize, outputSize=outputSize)
    return poplin.createMatMulInputRHS(graph, dType, [batchSize, outputSize], [outputSize, outputSize], name)


def forwardWeightInput(graph: Graph, actIn: Tensor, weights: Tensor, prog: prog_.Sequence,
                       partialsType: Any = None, inferenceOnly: bool = False, debugContext: Any = "",
                       planningCache: Any = None) -> Tensor:
    """``actIn [S, B, I] @ weights [I, O]`` for every step in one matMul: a new ``[S, B, O]``."""
    name = _name(debugContext, "forwardWeightInput", partialsType, planningCache)
    _tensor(actIn, "forwardWeightInput: actIn", [None, None, None])
    _tensor(weights, "forwardWeightInput: weights", [actIn.dim(2), None])
    s, b, i = actIn.shape()
    out = poplin.matMul(graph, actIn.reshape([s * b, i]), weights, prog, debugName=name)
    return out.reshape([s, b, weights.dim(1)])


def forwardIterate(graph: Graph, feedFwdIn: Tensor, initState: Tensor, feedbackWeights: Tensor,
                   biases: Tensor,
                   prog: prog_.Sequence, nonLinearityType: NonLinearityType, partialsType: Any = None,
                   inferenceOnly: bool = False, debugContext: Any = "", planningCache: Any = None) -> Tensor:
    """The outputs ``[S, B, O]``: step s is ``nl(y_{s-1} @ feedbackWeights + feedFwdIn[s] +
    biases)``, with ``y_{-1} = initState``; the steps are unrolled into ``prog``."""
    name = _name(debugContext, "forwardIterate", partialsType, planningCache)
    s, b, o = _tensor(feedFwdIn, "forwardIterate: feedFwdIn", [None, None, None]).shape()
    _tensor(initState, "forwardIterate: initState", [b, o])
    _tensor(feedbackWeights, "forwardIterate: feedbackWeights", [o, o])
    _tensor(biases, "forwardIterate: biases", [o])
    outs = []
    y = initState
    for step in range(s):
        at = f"{name}/{step}"
        y = poplin.matMul(graph, y, feedbackWeights, prog, debugName=at)
        popops.addInPlace(graph, y, feedFwdIn[step], prog, f"{at}/sum")
        popops.addInPlace(graph, y, biases.expand([0]), prog, f"{at}/bias")
        nonLinearityInPlace(graph, nonLinearityType, y, prog, at)
        outs.append(y.expand([0]))
    return concat(outs)


def backwardGradientStep(graph: Graph, nextLayerGrad: Tensor, bwdState: Tensor, actOut: Tensor,
                         *args: Any, **kwargs: Any) -> Tensor | tuple[Tensor, Tensor]:
    """One step back: ``newBwdState = nlGrad(actOut, nextLayerGrad + bwdState @ Wfb^T)``.

    ``backwardGradientStep(graph, nextLayerGrad, bwdState, actOut, weightsInput, weightsFeedback,
    prog, nonLinearityType, ...)`` returns ``(newBwdState @ weightsInput^T, newBwdState)`` (the
    input's gradient first); without ``weightsInput`` it returns ``newBwdState`` only.
    """
    with_input = len(args) >= 2 and isinstance(args[1], Tensor)
    weights_in = args[0] if with_input else None
    rest = args[1:] if with_input else args
    if len(rest) < 3:
        raise PoplibsArgumentError("backwardGradientStep(graph, nextLayerGrad, bwdState, actOut, "
                                   "[weightsInput,] weightsFeedback, prog, nonLinearityType, ...)")
    weights_fb, prog, nl = rest[:3]
    extra = list(rest[3:])
    names = ["partialsType", "debugContext", "planningCache"]
    opts = dict(zip(names, extra)) | kwargs
    name = _name(opts.get("debugContext", ""), "backwardGradientStep", opts.get("partialsType"),
                 opts.get("planningCache"))
    b, o = _tensor(bwdState, "backwardGradientStep: bwdState", [None, None]).shape()
    _tensor(nextLayerGrad, "backwardGradientStep: nextLayerGrad", [b, o])
    _tensor(actOut, "backwardGradientStep: actOut", [b, o])
    _tensor(weights_fb, "backwardGradientStep: weightsFeedback", [o, o])
    t = poplin.matMul(graph, bwdState, weights_fb.transpose(), prog, debugName=f"{name}/feedback")
    popops.addInPlace(graph, t, nextLayerGrad, prog, f"{name}/addOutGrad")
    new_state = nonLinearityInputGradient(graph, nl, actOut, t, prog, name)
    if weights_in is None:
        return new_state
    _tensor(weights_in, "backwardGradientStep: weightsInput", [None, o])
    grad_in = poplin.matMul(graph, new_state, weights_in.transpose(), prog, debugName=f"{name}/feedFwd")
    return grad_in, new_state


def paramDeltaUpdate(graph: Graph, bwdState: Tensor, actIn: Tensor, prevOut: Tensor,
                     weightsInputDeltasAcc: Tensor,
                     weightsFeedbackDeltasAcc: Tensor, biasDeltasAcc: Tensor, prog: prog_.Sequence,
                     partialsType: Any = None, debugContext: Any = "", planningCache: Any = None) -> None:
    """Add one step's weight deltas: ``actIn^T @ bwdState``, ``prevOut^T @ bwdState`` and the
    batch sum of ``bwdState`` to the three accumulators, in place."""
    name = _name(debugContext, "paramDeltaUpdate", partialsType, planningCache)
    b, o = _tensor(bwdState, "paramDeltaUpdate: bwdState", [None, None]).shape()
    i = _tensor(actIn, "paramDeltaUpdate: actIn", [b, None]).dim(1)
    _tensor(prevOut, "paramDeltaUpdate: prevOut", [b, o])
    _tensor(weightsInputDeltasAcc, "paramDeltaUpdate: weightsInputDeltasAcc", [i, o])
    _tensor(weightsFeedbackDeltasAcc, "paramDeltaUpdate: weightsFeedbackDeltasAcc", [o, o])
    _tensor(biasDeltasAcc, "paramDeltaUpdate: biasDeltasAcc", [o])
    poplin.matMulAcc(graph, weightsInputDeltasAcc, 1.0, actIn.transpose(), bwdState, prog,
                     debugName=f"{name}/Wi")
    poplin.matMulAcc(graph, weightsFeedbackDeltasAcc, 1.0, prevOut.transpose(), bwdState, prog,
                     debugName=f"{name}/Wfb")
    popops.reduceWithOutput(graph, bwdState, biasDeltasAcc, [0],
                            popops.ReduceParams(popops.Operation.ADD, update=True), prog, f"{name}/bias")


def _counter(graph: Graph, start: int, prog: prog_.Sequence, name: str) -> tuple[Tensor, Tensor]:
    """An UNSIGNED_INT ``[1]`` step counter on tile 0 set to ``start`` by ``prog``, and a constant 1."""
    counter = graph.addVariable(UNSIGNED_INT, [1], f"{name}/seqIdx")
    first = graph.addConstant(UNSIGNED_INT, [1], start, f"{name}/start")
    one = graph.addConstant(UNSIGNED_INT, [1], 1, f"{name}/one")
    for t in (counter, first, one):
        graph.setTileMapping(t, 0)
    prog.add(prog_.Copy(first, counter))
    return counter, one


def _sequence_like(graph: Graph, step: Tensor, steps: int, name: str) -> Tensor:
    """A new ``[steps, *step.shape]`` tensor with every step mapped like ``step``."""
    out = graph.addVariable(step.elementType(), [steps, *step.shape()], name)
    for s in range(steps):
        graph.setTileMapping(out[s], graph.getTileMapping(step))
    return out


def rnnFwdSequence(graph: Graph, prog: prog_.Sequence, fwdStateInit: Tensor, weightedIn: Tensor | None,
                   biases: Tensor, feedFwdWeights: Tensor, feedbackWeights: Tensor, prevLayerActs: Tensor,
                   nonLinearityType: NonLinearityType, partialsType: Any, inferenceOnly: bool,
                   debugContext: Any = "", planningCache: Any = None) -> Tensor:
    """The forward states (outputs) ``[S, B, O]`` of the layer over ``prevLayerActs [S, B, I]``
    (or over the already weighted ``weightedIn [S, B, O]``): one ``Repeat`` of S steps, each
    slicing its input at the device counter, running ``forwardIterate`` for one step and
    writing its state with ``dynamicUpdate``."""
    name = _name(debugContext, "rnnFwdSequence", partialsType, planningCache)
    s, b, _ = _tensor(prevLayerActs, "rnnFwdSequence: prevLayerActs", [None, None, None]).shape()
    o = _tensor(feedbackWeights, "rnnFwdSequence: feedbackWeights", [None, None]).dim(0)
    _tensor(fwdStateInit, "rnnFwdSequence: fwdStateInit", [b, o])
    if weightedIn is not None:
        _tensor(weightedIn, "rnnFwdSequence: weightedIn", [s, b, o])
    else:
        _tensor(feedFwdWeights, "rnnFwdSequence: feedFwdWeights", [prevLayerActs.dim(2), o])
    state = duplicate(graph, fwdStateInit, prog, f"{name}/state")
    seq_idx, one = _counter(graph, 0, prog, name)
    loop = prog_.Sequence()
    if weightedIn is not None:
        feed = popops.dynamicSlice(graph, weightedIn, seq_idx, [0], [1], loop, f"{name}/input")
    else:
        x = popops.dynamicSlice(graph, prevLayerActs, seq_idx, [0], [1], loop, f"{name}/input")
        feed = forwardWeightInput(graph, x, feedFwdWeights, loop, debugContext=f"{name}/feedFwd")
    new_state = forwardIterate(graph, feed, state, feedbackWeights, biases, loop, nonLinearityType,
                               debugContext=f"{name}/iterate")
    fwd_state = _sequence_like(graph, new_state[0], s, f"{name}/fwdState")
    loop.add(prog_.Copy(new_state[0], state))
    popops.dynamicUpdate(graph, fwd_state, new_state, seq_idx, [0], [1], loop, f"{name}/update")
    popops.addInPlace(graph, seq_idx, one, loop, f"{name}/next")
    prog.add(prog_.Repeat(s, loop))
    return fwd_state


def rnnBwdSequence(graph: Graph, doWU: bool, ignoreInputGradientCalc: bool, prog: prog_.Sequence,
                   fwdStateInit: Tensor, fwdState: Tensor, biases: Tensor, feedFwdWeights: Tensor,
                   feedbackWeights: Tensor, outGradient: Tensor, actIn: Tensor,
                   nonLinearityType: NonLinearityType, partialsType: Any, debugContext: Any = "",
                   planningCache: Any = None) -> tuple[Tensor, Tensor | None, Tensor | None, Tensor | None]:
    """Back-propagation through time, last step first, in one ``Repeat``: returns the input's
    gradient ``[S, B, I]`` (the backward states ``[S, B, O]`` with ``ignoreInputGradientCalc``)
    and, with ``doWU``, the accumulated deltas of ``feedFwdWeights``, ``feedbackWeights`` and
    ``biases`` (else None). ``outGradient`` is ``[S, B, O]``; step s's non-linearity gradient is
    taken at ``fwdState[s]`` and its feedback delta uses ``fwdState[s - 1]`` (``fwdStateInit``
    for step 0)."""
    name = _name(debugContext, "rnnBwdSequence", partialsType, planningCache)
    s, b, i = _tensor(actIn, "rnnBwdSequence: actIn", [None, None, None]).shape()
    o = _tensor(feedbackWeights, "rnnBwdSequence: feedbackWeights", [None, None]).dim(1)
    _tensor(fwdStateInit, "rnnBwdSequence: fwdStateInit", [b, o])
    _tensor(fwdState, "rnnBwdSequence: fwdState", [s, b, o])
    _tensor(outGradient, "rnnBwdSequence: outGradient", [s, b, o])
    _tensor(feedFwdWeights, "rnnBwdSequence: feedFwdWeights", [i, o])
    _tensor(biases, "rnnBwdSequence: biases", [o])
    deltas: tuple[Tensor | None, ...] = (None, None, None)
    if doWU:
        deltas = tuple(graph.clone(w, f"{name}/{w_name}Delta") for w, w_name in
                       ((feedFwdWeights, "feedFwdWeights"), (feedbackWeights, "feedbackWeights"), (biases,
                                                                                                   "biases")))
        for d in deltas:
            popops.zero(graph, d, prog, f"{name}/zeroDeltas")
    bwd_state = createBwdState(graph, actIn.elementType(), b, o, prog, f"{name}/bwdState")
    seq_idx, one = _counter(graph, s, prog, name)
    previous = concat([fwdStateInit.expand([0]), fwdState[:s - 1]])  # step s's previous output
    loop = prog_.Sequence()
    popops.subInPlace(graph, seq_idx, one, loop, f"{name}/previous")  # counts s - 1 down to 0
    grad_s = popops.dynamicSlice(graph, outGradient, seq_idx, [0], [1], loop, f"{name}/outGradient")[0]
    act_s = popops.dynamicSlice(graph, fwdState, seq_idx, [0], [1], loop, f"{name}/fwdState")[0]
    if ignoreInputGradientCalc:
        new_state = backwardGradientStep(graph, grad_s, bwd_state, act_s, feedbackWeights, loop,
                                         nonLinearityType,
                                         debugContext=f"{name}/step")
        step_out = new_state
    else:
        step_out, new_state = backwardGradientStep(graph, grad_s, bwd_state, act_s, feedFwdWeights,
                                                   feedbackWeights,
                                                   loop, nonLinearityType, debugContext=f"{name}/step")
    grads = _sequence_like(graph, step_out, s, f"{name}/gradient")
    popops.dynamicUpdate(graph, grads, step_out.expand([0]), seq_idx, [0], [1], loop, f"{name}/update")
    loop.add(prog_.Copy(new_state, bwd_state))
    if doWU:
        prev_s = popops.dynamicSlice(graph, previous, seq_idx, [0], [1], loop, f"{name}/prevOut")[0]
        act_in_s = popops.dynamicSlice(graph, actIn, seq_idx, [0], [1], loop, f"{name}/actIn")[0]
        paramDeltaUpdate(graph, new_state, act_in_s, prev_s, *deltas, loop, debugContext=f"{name}/deltas")
    prog.add(prog_.Repeat(s, loop))
    return (grads, *deltas)
