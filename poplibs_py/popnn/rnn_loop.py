"""popnn::rnn (Rnn.hpp): parameters, sequence tensors and the generic ``Rnn`` loop that runs a
caller's cell (``loopFn``) once per time step on the device.

Sequence tensors are ``[steps * multiple, batchSize, size]``, step-major, laid out by
``popops.createSliceableTensor`` so every step's slice lives on the same tiles: the loop's
dynamic slices and updates need no exchange of the sequence.

``Rnn`` splits the ``maxTimeSteps`` steps into ``numShards`` intervals of
``ceil(maxTimeSteps / numShards)`` steps. Each interval is one ``Repeat`` whose body (a) slices
the step's input (and ``interimIn``) with ``popops.dynamicSlice`` at the step counter, (b) runs
the program ``loopFn`` returned, and (c) writes the step's outputs, ``interimOut``, the state
named by ``stateSequence`` and the tensors ``loopFn`` created into their sequences with
``popops.dynamicUpdate``. The counter is an UNSIGNED_INT ``[1]`` on tile 0, counting the
interval's steps up (or down with ``reverse``); ``TimeStepState.begin`` is the interval's first
step. ``loopFn`` is called once per interval (PopLibs without code reuse).

With variable time steps (``varTimeSteps``: ``[batchSize]`` or ``[1]``, INT or UNSIGNED_INT)
every step also computes ``RnnBatchwiseFlags``: ``mask[b] = 1`` while the step is below batch
entry b's limit (else 0) and ``inverse = 1 - mask``, of the layer's type, for the cell to hold
its state past the limit. All ``maxTimeSteps`` steps run (PopLibs stops at the longest limit;
the masks make the extra steps leave the state unchanged).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from poplar_py import INT, UNSIGNED_INT, Graph, Tensor, Type
from poplar_py import program as prog_
from poplar_py.debug import debug_name
from poplar_py.types import asType

from .. import popops
from ..popops import expr as pe
from ..poputil import PoplibsArgumentError, PoplibsError, checkOptions

__all__ = [
    "Rnn",
    "RnnBatchwiseFlags",
    "RnnParams",
    "RnnSlice",
    "StateSequence",
    "TimeStepState",
    "createInitialState",
    "createInputTensor",
    "createOutputTensor",
    "createRecurrentTensor",
    "shiftRnnTensor",
]

RNN_OPTIONS = frozenset({"codeReuse"})


class RnnParams:
    """``RnnParams(dataType, batchSize, timeSteps, layerSizes)`` or, with a time-step limit per
    batch entry, ``RnnParams(dataType, batchSize, maxTimeSteps, varTimeSteps, layerSizes)``
    (``varTimeSteps``: a ``[batchSize]`` or ``[1]`` INT/UNSIGNED_INT tensor read on the device)."""

    def __init__(self, dataType: Any, batchSize: int, *args: Any) -> None:
        if len(args) == 2:
            timeSteps, layerSizes = args
            varTimeSteps = None
        elif len(args) == 3:
            timeSteps, varTimeSteps, layerSizes = args
        else:
            raise PoplibsArgumentError("RnnParams(dataType, batchSize, timeSteps, layerSizes) or RnnParams("
                                       "dataType, batchSize, maxTimeSteps, varTimeSteps, layerSizes), got "
                                       f"{2 + len(args)} arguments")
        self.dataType: Type = asType(dataType)
        for value, what in ((batchSize, "batchSize"), (timeSteps, "timeSteps")):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise PoplibsError(f"RnnParams: {what} must be a positive integer, got {value!r:.40}")
        self.batchSize, self.maxTimeSteps, self.timeSteps = batchSize, timeSteps, timeSteps
        try:
            self.layerSizes = [int(s) for s in layerSizes]
        except (TypeError, ValueError):
            raise PoplibsArgumentError(f"RnnParams: layerSizes must be a list of sizes, got "
                                       f"{layerSizes!r:.40}") from None
        if not self.layerSizes or min(self.layerSizes) < 1:
            raise PoplibsError(f"RnnParams: layerSizes must be positive sizes, got {self.layerSizes}")
        if varTimeSteps is not None:
            if not isinstance(varTimeSteps, Tensor):
                raise PoplibsArgumentError(f"RnnParams: varTimeSteps must be a Tensor, got "
                                           f"{type(varTimeSteps).__name__}")
            if varTimeSteps.rank() != 1 or varTimeSteps.dim(0) not in (1, batchSize):
                raise PoplibsError(f"RnnParams: varTimeSteps must be [batchSize] or [1], is "
                                   f"{varTimeSteps.shape()}")
            if varTimeSteps.elementType() not in (INT, UNSIGNED_INT):
                raise PoplibsError(f"RnnParams: varTimeSteps must be INT or UNSIGNED_INT, is "
                                   f"{varTimeSteps.elementType()}")
        self.varTimeSteps: Tensor | None = varTimeSteps

    def variableTimeSteps(self) -> bool:
        return self.varTimeSteps is not None

    def batchVariableTimeSteps(self) -> bool:
        return self.varTimeSteps is not None and self.varTimeSteps.numElements() > 1

    def getMaxShards(self, graph: Graph) -> int:
        """At most one shard per time step, and one tile per shard."""
        return min(self.maxTimeSteps, graph.getTarget().getNumTiles())

    def _bytes_per_tile(self, graph: Graph, size: int) -> int:
        per_step = self.batchSize * size * graph.getTarget().getTypeSize(self.dataType)
        tiles = graph.getTarget().getNumTiles()
        return -(-per_step * self.maxTimeSteps // tiles)

    def getInputBytesPerTile(self, graph: Graph) -> int:
        return self._bytes_per_tile(graph, self.layerSizes[0])

    def getOutputBytesPerTile(self, graph: Graph) -> int:
        return self._bytes_per_tile(graph, self.layerSizes[-1])

    def __repr__(self) -> str:
        return (f"RnnParams({self.dataType}, batchSize={self.batchSize}, maxTimeSteps={self.maxTimeSteps}, "
                f"layerSizes={self.layerSizes}, variable={self.variableTimeSteps()})")


@dataclass
class RnnSlice:
    """One step's tensors: ``inputs`` ([batchSize, size] each), ``interimIn`` and ``interimOut``
    ([numTemps, batchSize, outputSize]) and ``outputs`` ([multiple, batchSize, size] each)."""

    inputs: list = field(default_factory=list)
    interimIn: Tensor | None = None
    interimOut: Tensor | None = None
    outputs: list = field(default_factory=list)


@dataclass
class RnnBatchwiseFlags:
    """``mask``/``inverse`` ([batchSize], the layer's type): 1/0 while the step is within a batch
    entry's limit, 0/1 after it; None without per-batch limits."""

    mask: Tensor | None = None
    inverse: Tensor | None = None

    def valid(self) -> bool:
        return self.mask is not None


@dataclass
class TimeStepState:
    """``begin``: the shard's first step; ``counter``: the step within the shard (UNSIGNED_INT [1]
    tensors on tile 0); ``variableSeqFlag`` is not computed here (None)."""

    begin: Tensor
    counter: Tensor
    variableSeqFlag: Tensor | None = None


@dataclass
class StateSequence:
    """Store state ``stateIndex`` after every step into ``output`` ([steps * multiple, B, size])."""

    output: Tensor | None = None
    stateIndex: int = 0


LoopBody = Callable[..., prog_.Sequence]


def _check_params(params: Any, what: str) -> RnnParams:
    if not isinstance(params, RnnParams):
        raise PoplibsArgumentError(f"{what}: params must be popnn.rnn.RnnParams, got {type(params).__name__}")
    return params


def _count(value: Any, what: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise PoplibsArgumentError(f"{what} must be an integer >= {minimum}, got {value!r:.40}")
    return value


def _sequence(graph: Graph, params: RnnParams, rows: int, size: int, name: str) -> Tensor:
    """``[rows, batchSize, size]`` with every row on the same tiles (slicing along rows is local)."""
    return popops.createSliceableTensor(graph, params.dataType, [rows, params.batchSize, size], [0], [1],
                                        debugContext=name)


def createInitialState(graph: Graph, params: RnnParams, isOutput: bool, multiple: int, numShards: int,
                       debugContext: Any = "") -> Tensor:
    """A new ``[multiple, batchSize, layerSizes[isOutput]]`` state tensor."""
    _check_params(params, "createInitialState")
    _count(multiple, "createInitialState: multiple")
    _count(numShards, "createInitialState: numShards")
    name = debug_name(debugContext, "createInitialState: debugContext") or "rnn/initState"
    return _sequence(graph, params, multiple, params.layerSizes[1 if isOutput else 0], name)


def createRecurrentTensor(graph: Graph, params: RnnParams, size: int, numShards: int,
                          debugContext: Any = "") -> Tensor:
    """A new ``[maxTimeSteps, batchSize, size]`` tensor laid out for slicing by step."""
    _check_params(params, "createRecurrentTensor")
    _count(size, "createRecurrentTensor: size")
    _count(numShards, "createRecurrentTensor: numShards")
    name = debug_name(debugContext, "createRecurrentTensor: debugContext") or "rnn/recurrent"
    return _sequence(graph, params, params.maxTimeSteps, size, name)


def createInputTensor(graph: Graph, params: RnnParams, numShards: int, debugContext: Any = "") -> Tensor:
    """A new ``[maxTimeSteps, batchSize, inputSize]`` input sequence."""
    _check_params(params, "createInputTensor")
    _count(numShards, "createInputTensor: numShards")
    name = debug_name(debugContext, "createInputTensor: debugContext") or "rnn/input"
    return _sequence(graph, params, params.maxTimeSteps, params.layerSizes[0], name)


def createOutputTensor(graph: Graph, params: RnnParams, *args: Any, debugContext: Any = "") -> Tensor:
    """``createOutputTensor(graph, params, [multiple,] numShards[, debugContext])``: a new
    ``[multiple * maxTimeSteps, batchSize, outputSize]`` output sequence (step-major)."""
    _check_params(params, "createOutputTensor")
    if args and not isinstance(args[-1], int):
        args, debugContext = args[:-1], args[-1]
    if len(args) == 1:
        multiple, numShards = 1, args[0]
    elif len(args) == 2:
        multiple, numShards = args
    else:
        raise PoplibsArgumentError("createOutputTensor(graph, params, [multiple,] numShards[, debugContext])")
    _count(multiple, "createOutputTensor: multiple")
    _count(numShards, "createOutputTensor: numShards")
    name = debug_name(debugContext, "createOutputTensor: debugContext") or "rnn/output"
    return _sequence(graph, params, multiple * params.maxTimeSteps, params.layerSizes[-1], name)


def shiftRnnTensor(graph: Graph, params: RnnParams, tBase: Tensor, tSingle: Tensor, prog: prog_.Sequence,
                   numShards: int, debugContext: Any = "") -> Tensor:
    """A new tensor like ``tBase`` ([steps * multiple, ...]) whose step n holds ``tBase``'s step
    n - 1 and whose step 0 holds ``tSingle`` ([multiple, ...]): two copies added to ``prog``."""
    _check_params(params, "shiftRnnTensor")
    _count(numShards, "shiftRnnTensor: numShards")
    name = debug_name(debugContext, "shiftRnnTensor: debugContext") or "rnn/shift"
    if not isinstance(tBase, Tensor) or tBase.rank() < 1 or tBase.dim(0) % params.maxTimeSteps:
        raise PoplibsError(f"shiftRnnTensor: tBase must have a multiple of {params.maxTimeSteps} rows")
    multiple = tBase.dim(0) // params.maxTimeSteps
    if not isinstance(tSingle, Tensor) or tSingle.shape() != [multiple, *tBase.shape()[1:]]:
        raise PoplibsError(f"shiftRnnTensor: tSingle must be {[multiple, *tBase.shape()[1:]]}, is "
                           f"{tSingle.shape() if isinstance(tSingle, Tensor) else type(tSingle).__name__}")
    out = graph.clone(tBase, f"{name}/shifted")
    prog.add(prog_.Copy(tSingle, out[:multiple]))
    if tBase.dim(0) > multiple:
        prog.add(prog_.Copy(tBase[:tBase.dim(0) - multiple], out[multiple:]))
    return out


def _check_sequence(t: Any, rows: int, params: RnnParams, what: str) -> Tensor:
    if not isinstance(t, Tensor) or t.rank() != 3 or t.dim(0) % rows or t.dim(1) != params.batchSize:
        got = t.shape() if isinstance(t, Tensor) else type(t).__name__
        raise PoplibsError(f"Rnn: {what} must be [k * {rows}, {params.batchSize}, size], got {got}")
    return t


def _update(graph: Graph, seq: Tensor, step_rows: Tensor, at: Tensor, first: int, steps: int,
            prog: prog_.Sequence, name: str) -> None:
    """Write ``step_rows`` ([multiple, ...]) into step ``first + at`` of ``seq``."""
    multiple = step_rows.dim(0)
    by_step = seq.reshape([seq.dim(0) // multiple, multiple, *seq.shape()[1:]])[first:first + steps]
    popops.dynamicUpdate(graph, by_step, step_rows.expand([0]), at, [0], [1], prog, name)


def _flags(graph: Graph, params: RnnParams, begin: Tensor, counter: Tensor, prog: prog_.Sequence,
           name: str) -> RnnBatchwiseFlags:
    limits = params.varTimeSteps
    assert limits is not None
    step = popops.map(graph, pe.Cast(pe._1 + pe._2, limits.elementType()), [begin, counter], prog,
                      f"{name}/step")
    if limits.numElements() == 1:
        limits = limits.broadcast(params.batchSize, 0)
    mask = popops.map(graph, pe.Cast(pe._1 > pe._2, params.dataType), [limits, step], prog, f"{name}/mask")
    inverse = popops.map(graph, pe.Const(1.0) - pe._1, [mask], prog, f"{name}/inverse")
    return RnnBatchwiseFlags(mask, inverse)


def Rnn(graph: Graph, params: RnnParams, reverse: bool, initState: Sequence[Tensor | None],
        stateSequence: StateSequence | None, inputs: Sequence[Tensor | None], interimIn: Tensor | None,
        interimOut: Tensor | None, outputs: Sequence[Tensor], created: Sequence[Tensor], prog: prog_.Sequence,
        loopFn: LoopBody, numShards: int = 1, options: dict | None = None,
        debugContext: Any = "") -> list[Tensor | None]:
    """Run ``loopFn`` at every time step (see the module docstring); returns the final state.

    ``loopFn(graph, time, batchwiseFlags, state, slice, created, initProg, debugContext)``
    returns the step's program. ``state`` is a list of the loop's state tensors (copies of
    ``initState``, updated in place by the step); ``slice`` an ``RnnSlice``; ``created`` a list
    of ``len(created)`` Nones that ``loopFn`` fills with the step's ``[multiple, B, size]``
    tensors, stored at the step in ``created``'s sequences; ``initProg`` is ``prog`` for the
    first shard (None after), for one-off set-up before the loop.
    """
    params = _check_params(params, "Rnn")
    numShards = _count(numShards, "Rnn: numShards")
    checkOptions(options, RNN_OPTIONS, "Rnn")
    if not callable(loopFn):
        raise PoplibsArgumentError(f"Rnn: loopFn must be callable, got {type(loopFn).__name__}")
    if not isinstance(prog, prog_.Sequence):
        raise PoplibsArgumentError(f"Rnn: prog must be a program Sequence, got {type(prog).__name__}")
    name = debug_name(debugContext, "Rnn: debugContext") or "rnn"
    steps = params.maxTimeSteps
    if numShards > steps:
        raise PoplibsError(f"Rnn: numShards ({numShards}) must not exceed the {steps} time steps")
    inputs = [None if t is None else _check_sequence(t, steps, params, f"inputs[{i}]") for i,
              t in enumerate(inputs)]
    outputs = [_check_sequence(t, steps, params, f"outputs[{i}]") for i, t in enumerate(outputs)]
    created = [_check_sequence(t, steps, params, f"created[{i}]") for i, t in enumerate(created)]
    for t, what in ((interimIn, "interimIn"), (interimOut, "interimOut")):
        if t is not None and (not isinstance(t, Tensor) or t.rank() != 4 or t.dim(0) != steps):
            raise PoplibsError(f"Rnn: {what} must be [{steps}, numTemps, batchSize, size]")
    if stateSequence is not None and stateSequence.output is not None:
        if not 0 <= stateSequence.stateIndex < len(initState) or initState[stateSequence.stateIndex] is None:
            raise PoplibsError(f"Rnn: stateSequence.stateIndex {stateSequence.stateIndex} names no state")
        _check_sequence(stateSequence.output, steps, params, "stateSequence.output")
    else:
        stateSequence = None
    state: list[Tensor | None] = []
    for i, t in enumerate(initState):
        if t is None:
            state.append(None)
            continue
        if not isinstance(t, Tensor) or t.rank() != 3 or t.dim(1) != params.batchSize:
            raise PoplibsError(f"Rnn: initState[{i}] must be [multiple, {params.batchSize}, size]")
        s = graph.clone(t, f"{name}/state{i}")
        prog.add(prog_.Copy(t, s))
        state.append(s)

    per_shard = -(-steps // numShards)
    shard_starts = list(range(0, steps, per_shard))
    order = list(reversed(shard_starts)) if reverse else shard_starts
    for k, first in enumerate(order):
        count = min(per_shard, steps - first)
        at = f"{name}/shard{first // per_shard}"
        counter = graph.addVariable(UNSIGNED_INT, [1], f"{at}/counter")
        begin = graph.addConstant(UNSIGNED_INT, [1], first, f"{at}/begin")
        start = graph.addConstant(UNSIGNED_INT, [1], count if reverse else 0, f"{at}/counterStart")
        one = graph.addConstant(UNSIGNED_INT, [1], 1, f"{at}/one")
        for t in (counter, begin, start, one):
            graph.setTileMapping(t, 0)
        prog.add(prog_.Copy(start, counter))
        body = prog_.Sequence()
        if reverse:  # count down from `count`: the step index is the decremented counter
            popops.subInPlace(graph, counter, one, body, f"{at}/decrement")
        sl = RnnSlice()
        sl.inputs = [None if t is None else
                     popops.dynamicSlice(graph, t[first:first + count], counter, [0], [1], body,
                                         f"{at}/input{i}")[0] for i, t in enumerate(inputs)]
        if interimIn is not None:
            sl.interimIn = popops.dynamicSlice(graph, interimIn[first:first + count], counter, [0], [1], body,
                                               f"{at}/interimIn")[0]
        if interimOut is not None:
            sl.interimOut = graph.clone(interimOut[0], f"{at}/interimOut")
        sl.outputs = [graph.clone(o[:o.dim(0) // steps], f"{at}/output{i}") for i, o in enumerate(outputs)]
        flags = _flags(graph, params, begin, counter, body, at) if params.variableTimeSteps() \
            else RnnBatchwiseFlags()
        made: list[Tensor | None] = [None] * len(created)
        step_prog = loopFn(graph, TimeStepState(begin, counter), flags, state, sl, made,
                           prog if k == 0 else None,
                           at)
        if not isinstance(step_prog, prog_.Program):
            raise PoplibsArgumentError(f"Rnn: loopFn must return a Program, returned "
                                       f"{type(step_prog).__name__}")
        body.add(step_prog)
        if interimOut is not None:
            popops.dynamicUpdate(graph, interimOut[first:first + count], sl.interimOut.expand([0]), counter,
                                 [0], [1], body, f"{at}/updateInterimOut")
        if stateSequence is not None:
            _update(graph, stateSequence.output, state[stateSequence.stateIndex], counter, first, count, body,
                    f"{at}/updateStateSequence")
        for i, (seq, rows) in enumerate(zip(outputs, sl.outputs)):
            _update(graph, seq, rows, counter, first, count, body, f"{at}/updateOutput{i}")
        for i, (seq, rows) in enumerate(zip(created, made)):
            if not isinstance(rows, Tensor):
                raise PoplibsError(f"Rnn: loopFn left created[{i}] unset")
            _update(graph, seq, rows, counter, first, count, body, f"{at}/updateCreated{i}")
        if not reverse:
            popops.addInPlace(graph, counter, one, body, f"{at}/increment")
        prog.add(prog_.Repeat(count, body))
    return state
