"""popnn losses and classification helpers (PopLibs' Loss.hpp).

``calcLoss`` returns a program, as PopLibs does: the labels are one-hot encoded on the tiles
(``popops.encodeOneHot``), one compute set of two fused map codelets writes the deltas and the
per-element loss terms, and ``popops.reduce`` sums the terms of each row into ``loss``. With
``numCorrect`` it also runs ``calcAccuracy``: a ``ReduceArgRows`` vertex per worker finds each
row's arg max on the tile holding the row, then one ``CalcAccuracy`` vertex on the tile of
``numCorrect`` adds the matches to it (it accumulates: zero it yourself between epochs).

Labels outside ``[0, classes)`` -- ``MASKED_LABEL_CODE`` in particular -- mark rows to ignore:
their loss and deltas are 0 and they never count as correct. (PopLibs' header says masked
labels do not contribute; its codelet leaves ``deltasScale * p`` in their deltas, which its own
test's reference means to set to 0. We set 0: an ignored row gets no gradient.)
"""

from __future__ import annotations

import enum

import numpy as np

from poplar_py import FLOAT, HALF, INT, UNSIGNED_INT, Graph, Tensor
from poplar_py import program as prog_
from poplar_py.builder.bulk_vertices import Rows

from .. import popops
from ..popops import expr as pe
from ..popops.encoding import MASKED_LABEL_CODE
from ..popops.expr import _1, _2, _3, _4, _5
from ..popops.perf_estimation import registerDefaultEstimator
from ..poputil import PoplibsError, sequenceArgument, templateVertex, tensorArgument
from ._rows import map_rows, row_tiles
from .perf_estimation import calcAccuracyEstimator, reduceArgRowsEstimator

__all__ = ["CROSS_ENTROPY_LOSS", "EPS_LOG_N_FLOAT", "EPS_LOG_N_HALF", "MASKED_LABEL_CODE",
           "SUM_SQUARED_LOSS", "LossType", "argMax", "argMin", "calcAccuracy", "calcLoss",
           "maxAndArgMax", "minAndArgMin"]

#: added to probabilities before ``log`` (PopLibs' EPS_LOG_N_FLOAT / EPS_LOG_N_HALF)
EPS_LOG_N_FLOAT = 1.17549435e-38
EPS_LOG_N_HALF = 5.9604645e-08


class LossType(enum.Enum):
    SUM_SQUARED_LOSS = 0
    CROSS_ENTROPY_LOSS = 1


SUM_SQUARED_LOSS = LossType.SUM_SQUARED_LOSS  # popnn::SUM_SQUARED_LOSS (an unscoped enum in C++)
CROSS_ENTROPY_LOSS = LossType.CROSS_ENTROPY_LOSS


def _reduce_arg(graph: Graph, t: Tensor, prog: prog_.Sequence, isMax: bool,
                name: str) -> tuple[Tensor, Tensor]:
    """(values, indices) of each row's max/min, computed by one ``ReduceArgRows`` MultiVertex per
    tile on the tile holding most of each row (its workers share the rows); both outputs are
    mapped with their rows."""
    t, prog = tensorArgument(graph, t, f"{name}: input"), sequenceArgument(prog, name)
    if t.rank() != 2:
        raise PoplibsError(f"{name}: input '{t.name}' must be 2-D [rows, classes], has shape {t.shape()}")
    if t.dim(1) == 0:
        raise PoplibsError(f"{name}: input '{t.name}' has empty rows, shape {t.shape()}")
    if t.elementType() not in (FLOAT, HALF, INT, UNSIGNED_INT):
        raise PoplibsError(f"{name}: input '{t.name}' must be FLOAT, HALF, INT or UNSIGNED_INT")
    tiles = row_tiles(graph, t)
    values = graph.addVariable(t.elementType(), [t.dim(0)], f"{name}/values")
    indices = graph.addVariable(UNSIGNED_INT, [t.dim(0)], f"{name}/indices")
    map_rows(graph, values, tiles)
    map_rows(graph, indices, tiles)
    cs = graph.addComputeSet(name)
    vertex = templateVertex("popnn::ReduceArgRows", t.elementType(), isMax)
    registerDefaultEstimator(graph, vertex, reduceArgRowsEstimator(t.elementType()))
    order = np.argsort(tiles, kind="stable")  # rows by tile: one vertex per tile
    vertex_tiles, per_vertex = np.unique(tiles, return_counts=True)
    owner = np.repeat(np.arange(vertex_tiles.size), per_vertex)
    width = t.dim(1)
    rows = Rows(per_vertex, order * width, (order + 1) * width, np.arange(order.size))
    one = Rows(np.ones(vertex_tiles.size, np.int64), order, order + 1, owner)
    graph.add_vertices(cs, vertex, vertex_tiles, {"rows": (t.flatten(), rows), "index": (indices, one),
                                                  "value": (values, one)})
    prog.add(prog_.Execute(cs))
    return values, indices


def argMax(graph: Graph, input: Tensor, prog: prog_.Sequence, debugName: str = "") -> Tensor:  # noqa: A002
    """UNSIGNED_INT ``[rows]``: the column of each row's largest element of the 2-D ``input``
    (the first on ties), found on the tile holding the row."""
    return _reduce_arg(graph, input, prog, True, debugName or "argMax")[1]


def argMin(graph: Graph, input: Tensor, prog: prog_.Sequence, debugName: str = "") -> Tensor:  # noqa: A002
    """As ``argMax``, for the smallest element."""
    return _reduce_arg(graph, input, prog, False, debugName or "argMin")[1]


def maxAndArgMax(graph: Graph, input: Tensor, prog: prog_.Sequence,  # noqa: A002
                 debugName: str = "") -> tuple[Tensor, Tensor]:
    """``(max values, argMax indices)`` of the rows of the 2-D ``input``, in one compute set."""
    return _reduce_arg(graph, input, prog, True, debugName or "maxAndArgMax")


def minAndArgMin(graph: Graph, input: Tensor, prog: prog_.Sequence,  # noqa: A002
                 debugName: str = "") -> tuple[Tensor, Tensor]:
    """``(min values, argMin indices)`` of the rows of the 2-D ``input``."""
    return _reduce_arg(graph, input, prog, False, debugName or "minAndArgMin")


def _check_outputs(modelOutputs: Tensor, expected: Tensor, name: str) -> None:
    if modelOutputs.rank() != 2 or modelOutputs.elementType() not in (FLOAT, HALF):
        raise PoplibsError(f"{name}: modelOutputs '{modelOutputs.name}' must be a 2-D [batch, classes] FLOAT "
                           f"or HALF tensor, is {modelOutputs.elementType()} {modelOutputs.shape()}")
    if expected.shape() != [modelOutputs.dim(0)] or expected.elementType() not in (UNSIGNED_INT, INT):
        raise PoplibsError(f"{name}: expected '{expected.name}' must be UNSIGNED_INT or INT labels of shape "
                           f"[{modelOutputs.dim(0)}], is {expected.elementType()} {expected.shape()}")


def calcAccuracy(graph: Graph, modelOutputs: Tensor, expected: Tensor, numCorrect: Tensor,
                 debugName: str = "") -> prog_.Sequence:
    """A program adding to ``numCorrect`` (UNSIGNED_INT, one element) the number of rows of
    ``modelOutputs`` whose arg max equals the label in ``expected``.

    Arg max vertices run on the tiles holding the rows; one ``CalcAccuracy`` vertex on the tile
    of ``numCorrect`` counts the matches.
    """
    name = debugName or "calcAccuracy"
    _check_outputs(modelOutputs, expected, name)
    if numCorrect.numElements() != 1 or numCorrect.elementType() != UNSIGNED_INT:
        raise PoplibsError(f"{name}: numCorrect '{numCorrect.name}' must be one UNSIGNED_INT element, is "
                           f"{numCorrect.elementType()} {numCorrect.shape()}")
    seq = prog_.Sequence()
    indices = argMax(graph, modelOutputs, seq, f"{name}/argMax")
    cs = graph.addComputeSet(f"{name}/count")
    vertex = templateVertex("popnn::CalcAccuracy", expected.elementType())
    registerDefaultEstimator(graph, vertex, calcAccuracyEstimator)
    v = graph.addVertex(cs, vertex,
                        {"maxIndex": indices, "expected": expected, "numCorrect": numCorrect.reshape([])})
    graph.setTileMapping(v, _tile_of(graph, numCorrect))
    seq.add(prog_.Execute(cs))
    return seq


def _tile_of(graph: Graph, t: Tensor) -> int:
    mapping = graph.getTileMapping(t, False)
    return next((tile for tile, ivs in enumerate(mapping) if ivs), 0)


def _scalar(graph: Graph, value: Tensor | float, type_, what: str, name: str) -> Tensor:
    """A one-element tensor: ``value`` itself, or a constant on tile 0."""
    if isinstance(value, Tensor):
        if value.numElements() != 1 or value.elementType() != type_:
            raise PoplibsError(f"{name}: {what} '{value.name}' must be one {type_} element")
        return value.reshape([])
    const = graph.addConstant(type_, [], float(value), f"{name}/{what}")
    graph.setTileMapping(const, 0)
    return const


def calcLoss(graph: Graph, modelOutputs: Tensor, expected: Tensor, loss: Tensor, deltas: Tensor,
             *args: Tensor | float | LossType | str, debugName: str = "") -> prog_.Sequence:
    """A program computing, for each row b of ``modelOutputs`` ``[batch, classes]`` (probabilities)
    and label ``expected[b]``: ``deltas[b]`` (the gradient w.r.t. the model outputs) and ``loss[b]``.

    ``calcLoss(graph, outputs, expected, loss, deltas, [deltasScale, modelOutputScaling,]
    [numCorrect,] lossType[, debugName])``. With ``o`` the one-hot label row:

    * SUM_SQUARED_LOSS: ``deltas = p - o``, ``loss = sum(0.5 * (p - o)**2)``;
    * CROSS_ENTROPY_LOSS: ``deltas = deltasScale / s * (p - o * s)``,
      ``loss = -sum(o * (log(p + eps) - log(s)))`` with ``s = modelOutputScaling`` (default 1) and
      eps = EPS_LOG_N_FLOAT or EPS_LOG_N_HALF.

    ``deltasScale``/``modelOutputScaling`` are one-element tensors of the outputs' type (or numbers);
    ``numCorrect`` (UNSIGNED_INT, one element) accumulates the correct predictions (``calcAccuracy``).
    Masked rows: see the module docstring.
    """
    name = debugName
    if args and isinstance(args[-1], str):
        args, name = args[:-1], args[-1]
    name = name or "calcLoss"
    if not args or not isinstance(args[-1], LossType):
        raise PoplibsError(f"{name}: the last argument before debugName must be a LossType, "
                           f"got {args[-1:]!r}")
    lossType, extra = args[-1], list(args[:-1])
    numCorrect = extra.pop() if len(extra) in (1, 3) else None
    if len(extra) not in (0, 2):
        raise PoplibsError(f"{name}: expected [deltasScale, modelOutputScaling,] [numCorrect,] "
                           "before the LossType")
    _check_outputs(modelOutputs, expected, name)
    type_ = modelOutputs.elementType()
    if deltas.shape() != modelOutputs.shape() or deltas.elementType() != type_:
        raise PoplibsError(f"{name}: deltas '{deltas.name}' must be {type_} {modelOutputs.shape()}, is "
                           f"{deltas.elementType()} {deltas.shape()}")
    if loss.shape() != [modelOutputs.dim(0)] or loss.elementType() != type_:
        raise PoplibsError(f"{name}: loss '{loss.name}' must be {type_} [{modelOutputs.dim(0)}], is "
                           f"{loss.elementType()} {loss.shape()}")
    if extra and lossType is not CROSS_ENTROPY_LOSS:
        raise PoplibsError(f"{name}: deltasScale and modelOutputScaling are only for CROSS_ENTROPY_LOSS")
    seq = prog_.Sequence()
    classes = modelOutputs.dim(1)
    oneHot = graph.clone(modelOutputs, f"{name}/oneHot")
    popops.encodeOneHot(graph, expected, oneHot, seq, f"{name}/oneHot")
    labels = expected.expand([1])
    valid = pe.And(_3 >= 0, _3 < classes) if expected.elementType() == INT else _3 < classes  # a class label
    cs = graph.addComputeSet(f"{name}/transform")
    if lossType is SUM_SQUARED_LOSS:
        ins = [modelOutputs, oneHot, labels]
        popops.mapWithOutput(graph, pe.Select(_1 - _2, 0, valid), ins, deltas, cs, f"{name}/deltas")
        terms = popops.map(graph, pe.Select(0.5 * pe.Square(_1 - _2), 0, valid), ins, cs, f"{name}/terms")
    else:
        ds, mos = (_scalar(graph, v, type_, w, name) for v, w in zip(extra or [1.0, 1.0],
                                                                      ["deltasScale", "modelOutputScaling"]))
        eps = EPS_LOG_N_FLOAT if type_ == FLOAT else EPS_LOG_N_HALF
        ins = [modelOutputs, oneHot, labels, ds, mos]
        popops.mapWithOutput(graph, pe.Select((_1 - _2 * _5) * (_4 / _5), 0, valid), ins, deltas, cs,
                             f"{name}/deltas")
        terms = popops.map(graph, -_2 * (pe.Log(_1 + eps) - pe.Log(_3)), [modelOutputs, oneHot, mos], cs,
                           f"{name}/terms")
    seq.add(prog_.Execute(cs))
    popops.reduceWithOutput(graph, terms, loss, [1], popops.Operation.ADD, seq, f"{name}/loss")
    if numCorrect is not None:
        seq.add(calcAccuracy(graph, modelOutputs, expected, numCorrect, f"{name}/accuracy"))
    return seq

