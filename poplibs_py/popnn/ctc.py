"""popnn::ctc: the CTC (connectionist temporal classification) loss and its gradient
(CTCLoss.hpp, CTCPlan.hpp).

``plan`` spreads the batch over the tiles: batch entry b is handled on tile
``b * numTiles // batchSize`` (``Plan.tileOf``), which holds its slice of the data
(``createDataInput``: ``[maxTime, batchSize, numClasses]``), its labels (``createLabelsInput``:
``[batchSize, maxLabelLength]``, UNSIGNED_INT), its scratch tables and its outputs. One
``popnn::CTCLossAndGradient`` vertex per batch entry runs the forward-backward algorithm in
the log domain (codelets/popnn/ctc.py) and writes the entry's loss (``-log P``) and gradient.

Options (``calcLossAndGradient*``): ``includeSoftmaxGradient`` (default true: the gradient is
taken through a log-softmax, i.e. with respect to logits; false: with respect to the log
probabilities), ``zeroInfinity`` (default false: with true, an entry whose labels cannot be
aligned to its data gets loss 0 and a zero gradient). Plan options ``partialsType`` (FLOAT)
and ``availableMemoryProportion`` are checked; the tables are float.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from poplar_py import FLOAT, HALF, UNSIGNED_INT, Graph, Tensor, Type
from poplar_py import program as prog_
from poplar_py.debug import debug_name
from poplar_py.types import asType

from ..popops.perf_estimation import registerDefaultEstimator
from ..poputil import PoplibsArgumentError, PoplibsError, checkOptions, templateVertex
from .nonlinearity import logSoftmax
from .perf_estimation import ctcLossEstimator

__all__ = ["Plan", "calcCTCLossLogProbabilities", "calcCTCLossLogits", "calcLossAndGradientLogProbabilities",
           "calcLossAndGradientLogits", "createDataInput", "createLabelsInput", "plan"]

PLAN_OPTIONS = frozenset({"partialsType", "availableMemoryProportion"})
LOSS_OPTIONS = frozenset({"includeSoftmaxGradient", "zeroInfinity", "zeroInfinityRelTolerance"})


@dataclass(frozen=True, order=True)
class Plan:
    """How a CTC operation is laid out: its sizes and the tile of every batch entry."""

    inType: Type
    outType: Type
    batchSize: int
    maxTime: int
    maxLabelLength: int
    numClasses: int
    beamwidth: int
    numTiles: int

    def tileOf(self, b: int) -> int:
        """The tile that handles batch entry ``b``."""
        return b * self.numTiles // self.batchSize

    def __str__(self) -> str:
        return (f"CTC plan: batch {self.batchSize} over {min(self.batchSize, self.numTiles)} tiles, maxTime "
                f"{self.maxTime}, classes {self.numClasses}, maxLabelLength {self.maxLabelLength}, "
                f"beamwidth {self.beamwidth}")


def positive(what: str, **sizes: Any) -> None:
    """Raise a PoplibsError naming the first size that is not a positive integer."""
    for arg, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise PoplibsError(f"{what}: {arg} must be a positive integer, got {value!r:.40}")


def float_type(value: Any, what: str) -> Type:
    """``value`` as FLOAT or HALF; a PoplibsError naming ``what`` otherwise."""
    try:
        t = asType(value)
    except Exception:
        raise PoplibsArgumentError(f"{what} must be a poplar type, got {value!r:.40}") from None
    if t not in (FLOAT, HALF):
        raise PoplibsError(f"{what} must be FLOAT or HALF, got {t}")
    return t


def make_plan(graph: Graph, inType: Any, outType: Any, batchSize: int, maxTime: int, maxLabelLength: int,
              numClasses: int, beamwidth: int, options: dict | None, what: str) -> Plan:
    """A ``Plan`` after checking every argument (shared with ``ctc_infer.plan``)."""
    positive(what, batchSize=batchSize, maxTime=maxTime, numClasses=numClasses)
    options = checkOptions(options, PLAN_OPTIONS, what)
    if "partialsType" in options:
        float_type(options["partialsType"], f"{what}: option partialsType")
    return Plan(float_type(inType, f"{what}: inType"), float_type(outType, f"{what}: outType"), batchSize,
                maxTime,
                maxLabelLength, numClasses, beamwidth, graph.getTarget().getNumTiles())


def plan(graph: Graph, inType: Any, outType: Any, batchSize: int, maxTime: int, maxLabelLength: int,
         numClasses: int, options: dict | None = None) -> Plan:
    """A plan for the CTC loss of ``batchSize`` entries of up to ``maxTime`` steps of
    ``numClasses`` classes (the blank included) and up to ``maxLabelLength`` labels."""
    positive("ctc::plan", maxLabelLength=maxLabelLength)
    return make_plan(graph, inType, outType, batchSize, maxTime, maxLabelLength, numClasses, 0, options,
                     "ctc::plan")


def check_plan(p: Any, what: str) -> Plan:
    if not isinstance(p, Plan):
        raise PoplibsArgumentError(f"{what}: plan must be a popnn.ctc.Plan, got {type(p).__name__}")
    return p


def data_input(graph: Graph, type_: Any, batchSize: int, maxTime: int, numClasses: int, p: Plan,
               name: str, what: str) -> Tensor:
    """``[maxTime, batchSize, numClasses]`` with each batch entry on its planned tile."""
    check_plan(p, what)
    positive(what, batchSize=batchSize, maxTime=maxTime, numClasses=numClasses)
    if (batchSize, maxTime, numClasses) != (p.batchSize, p.maxTime, p.numClasses):
        raise PoplibsError(f"{what}: batchSize, maxTime, numClasses ({batchSize}, {maxTime}, {numClasses}) "
                           f"differ from the plan's ({p.batchSize}, {p.maxTime}, {p.numClasses})")
    t = graph.addVariable(float_type(type_, f"{what}: type"), [maxTime, batchSize, numClasses], name)
    for b in range(batchSize):
        graph.setTileMapping(t[:, b], p.tileOf(b))
    return t


def createDataInput(graph: Graph, type_: Any, batchSize: int, maxTime: int, numClasses: int, plan: Plan,
                    debugContext: Any = "") -> Tensor:
    """A new ``[maxTime, batchSize, numClasses]`` data tensor mapped as ``plan`` says."""
    name = debug_name(debugContext, "ctc::createDataInput: debugContext") or "ctc/data"
    return data_input(graph, type_, batchSize, maxTime, numClasses, plan, name, "ctc::createDataInput")


def createLabelsInput(graph: Graph, type_: Any, batchSize: int, maxLabelLength: int, plan: Plan,
                      debugContext: Any = "") -> Tensor:
    """A new ``[batchSize, maxLabelLength]`` labels tensor (UNSIGNED_INT), each entry's row on
    its planned tile."""
    what = "ctc::createLabelsInput"
    check_plan(plan, what)
    name = debug_name(debugContext, f"{what}: debugContext") or "ctc/labels"
    if asType(type_) != UNSIGNED_INT:
        raise PoplibsError(f"{what}: type must be UNSIGNED_INT, got {asType(type_)}")
    positive(what, batchSize=batchSize, maxLabelLength=maxLabelLength)
    if (batchSize, maxLabelLength) != (plan.batchSize, plan.maxLabelLength):
        raise PoplibsError(f"{what}: batchSize and maxLabelLength ({batchSize}, {maxLabelLength}) differ "
                           f"from the plan's ({plan.batchSize}, {plan.maxLabelLength})")
    t = graph.addVariable(UNSIGNED_INT, [batchSize, maxLabelLength], name)
    for b in range(batchSize):
        graph.setTileMapping(t[b], plan.tileOf(b))
    return t


def check_lengths(t: Any, batchSize: int, what: str) -> Tensor:
    if not isinstance(t, Tensor) or t.shape() != [batchSize] or t.elementType() != UNSIGNED_INT:
        got = f"{t.elementType()} {t.shape()}" if isinstance(t, Tensor) else type(t).__name__
        raise PoplibsError(f"{what} must be an UNSIGNED_INT [{batchSize}] tensor, got {got}")
    return t


def check_data(data: Any, p: Plan, logits: bool, what: str) -> list[int]:
    """``data`` must be the plan's ``[maxTime, batchSize, numClasses]`` of its inType; returns the shape."""
    shape = [p.maxTime, p.batchSize, p.numClasses]
    if not isinstance(data, Tensor) or data.shape() != shape or data.elementType() != p.inType:
        got = f"{data.elementType()} {data.shape()}" if isinstance(data, Tensor) else type(data).__name__
        raise PoplibsError(f"{what}: {'logits' if logits else 'logProbs'} must be {p.inType} {shape} (the "
                           f"plan's), got {got}")
    return shape


def check_blank(blankClass: Any, p: Plan, what: str) -> None:
    if isinstance(blankClass, bool) or not isinstance(blankClass, int) or not 0 <= blankClass < p.numClasses:
        raise PoplibsError(f"{what}: blankClass must be a class in [0, {p.numClasses}), got "
                           f"{blankClass!r:.40}")


def _bool_option(options: dict, key: str, default: bool, what: str) -> bool:
    value = str(options.get(key, default)).lower()
    if value not in ("true", "false"):
        raise PoplibsError(f"{what}: option {key} must be true or false, got {options[key]!r}")
    return value == "true"


def _loss(graph: Graph, outType: Any, data: Tensor, labels: Tensor, dataLengths: Tensor, labelLengths: Tensor,
          prog: prog_.Sequence, blankClass: int, p: Plan, debugContext: Any, options: dict | None,
          logits: bool, what: str) -> tuple[Tensor, Tensor]:
    check_plan(p, what)
    name = debug_name(debugContext, f"{what}: debugContext") or f"ctc/{what}"
    options = checkOptions(options, LOSS_OPTIONS, what)
    softmax_grad = _bool_option(options, "includeSoftmaxGradient", True, what)
    zero_inf = _bool_option(options, "zeroInfinity", False, what)
    out_type = float_type(outType, f"{what}: outType")
    if not isinstance(prog, prog_.Sequence):
        raise PoplibsArgumentError(f"{what}: prog must be a program Sequence, got {type(prog).__name__}")
    shape = check_data(data, p, logits, what)
    lab_shape = [p.batchSize, p.maxLabelLength]
    if not isinstance(labels, Tensor) or labels.shape() != lab_shape or labels.elementType() != UNSIGNED_INT:
        got = f"{labels.elementType()} {labels.shape()}" if isinstance(labels,
                                                                       Tensor) else type(labels).__name__
        raise PoplibsError(f"{what}: labels must be UNSIGNED_INT {lab_shape}, got {got}")
    check_lengths(dataLengths, p.batchSize, f"{what}: dataLengths")
    check_lengths(labelLengths, p.batchSize, f"{what}: labelLengths")
    check_blank(blankClass, p, what)
    if logits:
        data = logSoftmax(graph, data, prog, f"{name}/logSoftmax")
    width = 2 * p.maxLabelLength + 1
    grad = graph.addVariable(out_type, shape, f"{name}/gradient")
    loss = graph.addVariable(out_type, [p.batchSize], f"{name}/loss")
    tables = graph.addVariable(FLOAT, [2, p.batchSize, p.maxTime * width], f"{name}/alphaBeta")
    vertex = templateVertex("popnn::CTCLossAndGradient", p.inType, out_type)
    registerDefaultEstimator(graph, vertex, ctcLossEstimator)
    cs = graph.addComputeSet(f"{name}/lossAndGradient")
    for b in range(p.batchSize):
        tile = p.tileOf(b)
        for t in (grad[:, b], loss[b], tables[:, b]):
            graph.setTileMapping(t, tile)
        v = graph.addVertex(cs, vertex, {"logProbs": data[:, b], "labels": labels[b],
                                         "dataLength": dataLengths[b],
                                         "labelLength": labelLengths[b], "loss": loss[b], "grad": grad[:, b],
                                         "alpha": tables[0, b], "beta": tables[1, b]})
        graph.setInitialValue(v["blankClass"], blankClass)
        graph.setInitialValue(v["softmaxGrad"], softmax_grad)
        graph.setInitialValue(v["zeroInfinity"], zero_inf)
        graph.setTileMapping(v, tile)
    prog.add(prog_.Execute(cs))
    return loss, grad


def calcLossAndGradientLogProbabilities(graph: Graph, outType: Any, logProbs: Tensor, labels: Tensor,
                                        dataLengths: Tensor, labelLengths: Tensor, prog: prog_.Sequence,
                                        blankClass: int, plan: Plan, debugContext: Any = "",
                                        options: dict | None = None) -> tuple[Tensor, Tensor]:
    """``(loss [batchSize], gradient [maxTime, batchSize, numClasses])`` of ``outType`` from
    log probabilities; one vertex per batch entry on its planned tile."""
    return _loss(graph, outType, logProbs, labels, dataLengths, labelLengths, prog, blankClass, plan,
                 debugContext, options, False, "calcLossAndGradientLogProbabilities")


def calcLossAndGradientLogits(graph: Graph, outType: Any, logits: Tensor, labels: Tensor, dataLengths: Tensor,
                              labelLengths: Tensor, prog: prog_.Sequence, blankClass: int, plan: Plan,
                              debugContext: Any = "", options: dict | None = None) -> tuple[Tensor, Tensor]:
    """As ``calcLossAndGradientLogProbabilities`` after a ``logSoftmax`` of ``logits`` over the classes."""
    return _loss(graph, outType, logits, labels, dataLengths, labelLengths, prog, blankClass, plan,
                 debugContext, options, True, "calcLossAndGradientLogits")


def calcCTCLossLogProbabilities(graph: Graph, outType: Any, logProbs: Tensor, labels: Tensor,
                                dataLengths: Tensor,
                                labelLengths: Tensor, prog: prog_.Sequence, blankClass: int, plan: Plan,
                                debugContext: Any = "", options: dict | None = None) -> Tensor:
    """The loss ``[batchSize]`` only (the same vertices; their gradient is discarded)."""
    return _loss(graph, outType, logProbs, labels, dataLengths, labelLengths, prog, blankClass, plan,
                 debugContext, options, False, "calcCTCLossLogProbabilities")[0]


def calcCTCLossLogits(graph: Graph, outType: Any, logits: Tensor, labels: Tensor, dataLengths: Tensor,
                      labelLengths: Tensor, prog: prog_.Sequence, blankClass: int, plan: Plan,
                      debugContext: Any = "", options: dict | None = None) -> Tensor:
    """The loss ``[batchSize]`` from logits (a ``logSoftmax`` first)."""
    return _loss(graph, outType, logits, labels, dataLengths, labelLengths, prog, blankClass, plan,
                 debugContext, options, True, "calcCTCLossLogits")[0]
