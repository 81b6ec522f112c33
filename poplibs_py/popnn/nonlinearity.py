# ruff: noqa: N816  (module-level functions keep PopLibs' camelCase names)
"""popnn non-linearities (PopLibs' NonLinearity.hpp) and log-softmax (LogSoftmax.hpp).

Element-wise types are one fused ``popops.map`` expression each, evaluated by the generated
codelet on the tiles that hold the data. The softmax family works on the innermost dimension:
the tensor is viewed as rows ``[outer, inner]``, ``popops.reduce`` finds each row's maximum and
sum where the row lives, and maps (broadcasting the per-row values) do the rest.

Gradients (``nonLinearityInputGradient``) take, as PopLibs, the forward **output** for SIGMOID,
RELU, TANH and the softmaxes, and the forward **input** for GELU, GELU_ERF, SWISH and HARD_SIGMOID.
"""

from __future__ import annotations

import enum
import math

from poplar_py import FLOAT, HALF, ComputeSet, Graph, Tensor
from poplar_py import program as prog_

from .. import popops
from ..popops import expr as pe
from ..popops.expr import _1, _2, _3
from ..popops.expr_map import ProgOrCs, mapAsVertex
from ..poputil import PoplibsError, sequenceArgument, tensorArgument
from .perf_estimation import nonLinearityCost, nonLinearityGradCost

__all__ = ["SOFTMAX_SCALING", "NonLinearityType", "gelu", "geluErf", "geluErfInPlace", "geluInPlace",
           "hardSigmoid", "hardSigmoidInPlace", "logSoftmax", "logSoftmaxInPlace", "nonLinearity",
           "nonLinearityInPlace", "nonLinearityInputGradient", "relu", "reluInPlace", "scaledSoftmaxStable",
           "scaledSoftmaxStableInPlace", "sigmoid", "sigmoidInPlace", "softmax", "softmaxInPlace",
           "softmaxStable", "softmaxStableInPlace", "swish", "swishInPlace", "tanh", "tanhInPlace"]

#: SOFTMAX_SCALED's outputs are the probabilities times this (PopLibs' value), so that small
#: probabilities keep precision in half
SOFTMAX_SCALING = 10000.0


class NonLinearityType(enum.Enum):
    SIGMOID = enum.auto()
    HARD_SIGMOID = enum.auto()
    RELU = enum.auto()
    TANH = enum.auto()
    GELU = enum.auto()
    GELU_ERF = enum.auto()
    SWISH = enum.auto()
    SOFTMAX = enum.auto()
    SOFTMAX_STABLE = enum.auto()
    SOFTMAX_SCALED = enum.auto()


_N = NonLinearityType
_SOFTMAXES = (_N.SOFTMAX, _N.SOFTMAX_STABLE, _N.SOFTMAX_SCALED)
_ALPHA, _BETA = 0.7978845608, 0.044715  # GELU's tanh approximation: tanh(alpha*x*(1 + beta*x^2))
_INV_SQRT2 = 1 / math.sqrt(2)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)


def _gelu_tanh(x: pe.Expr) -> pe.Expr:
    return pe.Tanh(_ALPHA * x * (1 + _BETA * x * x))


_FORWARD: dict[NonLinearityType, pe.Expr] = {
    _N.SIGMOID: pe.Sigmoid(_1),
    _N.HARD_SIGMOID: pe.Clamp(0.2 * _1 + 0.5, 0, 1),
    _N.RELU: pe.Max(_1, 0),
    _N.TANH: pe.Tanh(_1),
    _N.GELU: 0.5 * _1 * (1 + _gelu_tanh(_1)),
    _N.GELU_ERF: pe.GeluErf(_1),
    _N.SWISH: _1 * pe.Sigmoid(_1),
}

# _1: the forward output (or input, see the module docstring), _2: the output gradient
_GRADIENT: dict[NonLinearityType, pe.Expr] = {
    _N.SIGMOID: _2 * _1 * (1 - _1),
    _N.HARD_SIGMOID: pe.Select(0.2 * _2, 0, pe.Abs(_1) <= 2.5),
    _N.RELU: pe.Select(_2, 0, _1 > 0),
    _N.TANH: _2 * (1 - _1 * _1),
    _N.GELU: _2 * 0.5 * (1 + _gelu_tanh(_1) + (1 - _gelu_tanh(_1) * _gelu_tanh(_1))
                         * _1 * (_ALPHA + 3 * _ALPHA * _BETA * _1 * _1)),
    _N.GELU_ERF: _2 * (0.5 * (1 + pe.Erf(_1 * _INV_SQRT2)) + _1 * _INV_SQRT_2PI * pe.Exp(-0.5 * _1 * _1)),
    _N.SWISH: _2 * pe.Sigmoid(_1) * (1 + _1 * (1 - pe.Sigmoid(_1))),
}


def _check(graph: Graph, t: Tensor, what: str, type_: NonLinearityType | None = None) -> Tensor:
    t = tensorArgument(graph, t, what)
    if type_ is not None and not isinstance(type_, NonLinearityType):
        raise PoplibsError(f"{what}: {type_!r} is not a NonLinearityType")
    if t.elementType() not in (FLOAT, HALF):
        raise PoplibsError(f"{what}: tensor '{t.name}' must be FLOAT or HALF, not {t.elementType()}")
    if (type_ in _SOFTMAXES or type_ is None) and (t.rank() == 0 or t.numElements() == 0):
        raise PoplibsError(f"{what}: softmax needs a non-empty tensor of rank >= 1, "
                           f"'{t.name}' has shape {t.shape()}")
    return t


def _rows(t: Tensor) -> Tensor:
    """``t`` as ``[outer, innermost]`` (a view)."""
    return t.reshape([t.numElements() // t.dim(t.rank() - 1), t.dim(t.rank() - 1)])


def _sequence(prog: ProgOrCs, what: str) -> prog_.Sequence:
    if isinstance(prog, ComputeSet):
        raise PoplibsError(f"{what}: the softmax family needs a program Sequence, not a ComputeSet")
    return sequenceArgument(prog, what)


def _softmax(graph: Graph, type_: NonLinearityType, t: Tensor, out: Tensor | None, prog: prog_.Sequence,
             name: str) -> Tensor:
    """Softmax of the rows of ``t`` into ``out`` (or a new tensor): stable variants subtract each
    row's maximum before ``exp``; SOFTMAX_SCALED multiplies by SOFTMAX_SCALING."""
    rows = _rows(t)
    if type_ is _N.SOFTMAX:
        e = popops.map(graph, pe.Exp(_1), [rows], prog, f"{name}/exp")
    else:
        m = popops.reduce(graph, rows, [1], popops.Operation.MAX, prog, f"{name}/max")
        e = popops.map(graph, pe.Exp(_1 - _2), [rows, m.expand([1])], prog, f"{name}/exp")
    s = popops.reduce(graph, e, [1], popops.Operation.ADD, prog, f"{name}/sum")
    # multiply by the inverse sum rather than divide each element: one division per row
    scale = SOFTMAX_SCALING if type_ is _N.SOFTMAX_SCALED else 1.0
    popops.mapInPlace(graph, scale / _1, [s], prog, f"{name}/invSum")
    if out is None:
        popops.mapInPlace(graph, _1 * _2, [e, s.expand([1])], prog, f"{name}/normalise")
        return e.reshape(t.shape())
    popops.mapWithOutput(graph, _1 * _2, [e, s.expand([1])], _rows(out), prog, f"{name}/normalise")
    return out


def nonLinearity(graph: Graph, type_: NonLinearityType, t: Tensor, prog: ProgOrCs,
                 debugName: str = "") -> Tensor:
    """A new tensor holding ``type_`` applied to ``t`` (FLOAT or HALF).

    Element-wise types run as one generated map codelet on the tiles holding ``t`` (``prog`` may
    be a ComputeSet for them); the softmaxes reduce each innermost row where it lives and need a
    Sequence. SOFTMAX_SCALED's result is scaled by ``SOFTMAX_SCALING``.
    """
    name = debugName or f"nonLinearity/{getattr(type_, 'name', type_)}"
    t = _check(graph, t, name, type_)
    if type_ in _SOFTMAXES:
        return _softmax(graph, type_, t, None, _sequence(prog, name), name)
    return mapAsVertex(graph, nonLinearityCost(type_.name, t.elementType(), False), _FORWARD[type_], [t],
                       prog, name)


def nonLinearityInPlace(graph: Graph, type_: NonLinearityType, t: Tensor, prog: ProgOrCs,
                        debugName: str = "") -> None:
    """Overwrite ``t`` (parallel-writeable) with ``type_`` applied to it, on the tiles holding it."""
    name = debugName or f"nonLinearityInPlace/{getattr(type_, 'name', type_)}"
    t = _check(graph, t, name, type_)
    if not t.isParallelWriteable():
        raise PoplibsError(f"{name}: Trying to update tensor '{t.name}' that cannot be written in parallel")
    if type_ in _SOFTMAXES:
        _softmax(graph, type_, t, t, _sequence(prog, name), name)
    else:
        mapAsVertex(graph, nonLinearityCost(type_.name, t.elementType(), True), _FORWARD[type_], [t], prog,
                    name, inPlace=True)


def nonLinearityInputGradient(graph: Graph, type_: NonLinearityType, act: Tensor, outGradient: Tensor,
                              prog: ProgOrCs, debugName: str = "") -> Tensor:
    """The gradient with respect to the non-linearity's input, as a new tensor.

    ``act`` is the forward output (SIGMOID, RELU, TANH, softmaxes) or the forward input (GELU,
    GELU_ERF, SWISH, HARD_SIGMOID); ``outGradient`` has its shape and type. Element-wise types are
    one map on the tiles holding the data; softmaxes compute ``y * (g - sum(g * y))`` per innermost
    row (for SOFTMAX_SCALED, the exact gradient of the scaled forward: ``out * (g - sum(g * out) / S)``).
    """
    name = debugName or f"nonLinearityInputGradient/{getattr(type_, 'name', type_)}"
    act = _check(graph, act, name, type_)
    outGradient = tensorArgument(graph, outGradient, f"{name}: outGradient")
    if act.shape() != outGradient.shape() or act.elementType() != outGradient.elementType():
        raise PoplibsError(f"{name}: act '{act.name}' {act.shape()} {act.elementType()} and outGradient "
                           f"'{outGradient.name}' {outGradient.shape()} {outGradient.elementType()} differ")
    if type_ not in _SOFTMAXES:
        return mapAsVertex(graph, nonLinearityGradCost(type_.name, act.elementType()), _GRADIENT[type_],
                           [act, outGradient], prog, name)
    seq = _sequence(prog, name)
    y, g = _rows(act), _rows(outGradient)
    gy = popops.map(graph, _1 * _2, [y, g], seq, f"{name}/gy")
    dot = popops.reduce(graph, gy, [1], popops.Operation.ADD, seq, f"{name}/sum")
    if type_ is _N.SOFTMAX_SCALED:
        popops.mapInPlace(graph, _1 * (1 / SOFTMAX_SCALING), [dot], seq, f"{name}/unscale")
    popops.mapWithOutput(graph, _1 * (_2 - _3), [y, g, dot.expand([1])], gy, seq, name)
    return gy.reshape(act.shape())


def _log_softmax(graph: Graph, t: Tensor, out: Tensor | None, prog: prog_.Sequence, name: str) -> Tensor:
    rows = _rows(t)
    m = popops.reduce(graph, rows, [1], popops.Operation.MAX, prog, f"{name}/max")
    e = popops.map(graph, pe.Exp(_1 - _2), [rows, m.expand([1])], prog, f"{name}/exp")
    s = popops.reduce(graph, e, [1], popops.Operation.ADD, prog, f"{name}/sum")
    popops.mapInPlace(graph, _1 + pe.Log(_2), [m, s], prog, f"{name}/logSumExp")
    if out is None:
        popops.mapWithOutput(graph, _1 - _2, [rows, m.expand([1])], e, prog, name)
        return e.reshape(t.shape())
    popops.mapInPlace(graph, _1 - _2, [rows, m.expand([1])], prog, name)
    return out


def logSoftmax(graph: Graph, t: Tensor, prog: prog_.Sequence, debugName: str = "") -> Tensor:
    """A new tensor ``x - max - log(sum(exp(x - max)))`` over the innermost dimension of ``t``,
    each row reduced (max, sum) where it lives."""
    name = debugName or "logSoftmax"
    t = _check(graph, t, name)
    return _log_softmax(graph, t, None, _sequence(prog, name), name)


def logSoftmaxInPlace(graph: Graph, t: Tensor, prog: prog_.Sequence, debugName: str = "") -> None:
    """``logSoftmax`` written into ``t`` (parallel-writeable)."""
    name = debugName or "logSoftmaxInPlace"
    t = _check(graph, t, name)
    if not t.isParallelWriteable():
        raise PoplibsError(f"{name}: Trying to update tensor '{t.name}' that cannot be written in parallel")
    _log_softmax(graph, t, t, _sequence(prog, name), name)


def _helpers(type_: NonLinearityType, name: str) -> tuple:
    def op(graph: Graph, t: Tensor, prog: ProgOrCs, debugName: str = "") -> Tensor:
        return nonLinearity(graph, type_, t, prog, debugName or name)

    def op_in_place(graph: Graph, t: Tensor, prog: ProgOrCs, debugName: str = "") -> None:
        nonLinearityInPlace(graph, type_, t, prog, debugName or name)

    op.__name__, op_in_place.__name__ = name, name + "InPlace"
    op.__doc__ = f"``nonLinearity(graph, {type_.name}, t, prog)``."
    op_in_place.__doc__ = f"``nonLinearityInPlace(graph, {type_.name}, t, prog)``."
    return op, op_in_place


sigmoid, sigmoidInPlace = _helpers(_N.SIGMOID, "sigmoid")
hardSigmoid, hardSigmoidInPlace = _helpers(_N.HARD_SIGMOID, "hardSigmoid")
relu, reluInPlace = _helpers(_N.RELU, "relu")
tanh, tanhInPlace = _helpers(_N.TANH, "tanh")
gelu, geluInPlace = _helpers(_N.GELU, "gelu")
geluErf, geluErfInPlace = _helpers(_N.GELU_ERF, "geluErf")
swish, swishInPlace = _helpers(_N.SWISH, "swish")
softmax, softmaxInPlace = _helpers(_N.SOFTMAX, "softmax")
softmaxStable, softmaxStableInPlace = _helpers(_N.SOFTMAX_STABLE, "softmaxStable")


def scaledSoftmaxStable(graph: Graph, t: Tensor, prog: prog_.Sequence,
                        debugName: str = "") -> tuple[Tensor, float]:
    """``(SOFTMAX_SCALING * softmax(t), SOFTMAX_SCALING)``: PopLibs returns the scaling through a
    reference argument."""
    out = nonLinearity(graph, _N.SOFTMAX_SCALED, t, prog, debugName or "scaledSoftmaxStable")
    return out, SOFTMAX_SCALING


def scaledSoftmaxStableInPlace(graph: Graph, t: Tensor, prog: prog_.Sequence, debugName: str = "") -> float:
    """Write ``SOFTMAX_SCALING * softmax(t)`` into ``t``; returns the scaling."""
    nonLinearityInPlace(graph, _N.SOFTMAX_SCALED, t, prog, debugName or "scaledSoftmaxStableInPlace")
    return SOFTMAX_SCALING
