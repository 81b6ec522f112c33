"""popnn::ctc_infer: CTC beam search decoding (CTCInference.hpp).

``plan`` gives every batch entry a tile (``popnn.ctc.Plan.tileOf``); one ``popnn::CTCBeamSearch``
vertex per entry runs the prefix beam search over the entry's first ``dataLengths[b]`` steps
on that tile (codelets/popnn/ctc.py: candidates from every live beam, merging of equal
prefixes, the ``beamwidth`` most probable kept), with its beams in scratch tensors there, and
writes the ``topPaths`` best paths.
"""

from __future__ import annotations

from typing import Any

from poplar_py import FLOAT, UNSIGNED_INT, Graph, Tensor
from poplar_py import program as prog_
from poplar_py.debug import debug_name

from ..popops.perf_estimation import registerDefaultEstimator
from ..poputil import PoplibsArgumentError, PoplibsError, checkOptions, templateVertex
from .ctc import Plan, check_blank, check_data, check_lengths, check_plan, data_input, make_plan, positive
from .nonlinearity import logSoftmax
from .perf_estimation import ctcBeamSearchEstimator

__all__ = ["beamSearchDecoderLogProbabilities", "beamSearchDecoderLogits", "createDataInput", "plan"]

DECODER_OPTIONS = frozenset({"partialsType", "availableMemoryProportion"})


def plan(graph: Graph, inType: Any, batchSize: int, maxTime: int, numClasses: int, beamwidth: int,
         options: dict | None = None) -> Plan:
    """A plan for decoding ``batchSize`` entries of up to ``maxTime`` steps with ``beamwidth`` beams."""
    positive("ctc_infer::plan", beamwidth=beamwidth)
    return make_plan(graph, inType, inType, batchSize, maxTime, 0, numClasses, beamwidth, options,
                     "ctc_infer::plan")


def createDataInput(graph: Graph, type_: Any, batchSize: int, maxTime: int, numClasses: int, plan: Plan,
                    debugContext: Any = "") -> Tensor:
    """A new ``[maxTime, batchSize, numClasses]`` data tensor mapped as ``plan`` says."""
    name = debug_name(debugContext, "ctc_infer::createDataInput: debugContext") or "ctc_infer/data"
    return data_input(graph, type_, batchSize, maxTime, numClasses, plan, name, "ctc_infer::createDataInput")


def _decode(graph: Graph, data: Tensor, dataLengths: Tensor, prog: prog_.Sequence, blankClass: int,
            beamwidth: int, topPaths: int, p: Plan, debugContext: Any, options: dict | None, logits: bool,
            what: str) -> tuple[Tensor, Tensor, Tensor]:
    check_plan(p, what)
    name = debug_name(debugContext, f"{what}: debugContext") or f"ctc_infer/{what}"
    checkOptions(options, DECODER_OPTIONS, what)
    positive(what, beamwidth=beamwidth, topPaths=topPaths)
    if beamwidth != p.beamwidth:
        raise PoplibsError(f"{what}: beamwidth {beamwidth} differs from the plan's {p.beamwidth}")
    if topPaths > beamwidth:
        raise PoplibsError(f"{what}: topPaths ({topPaths}) must not exceed beamwidth ({beamwidth})")
    check_blank(blankClass, p, what)
    if not isinstance(prog, prog_.Sequence):
        raise PoplibsArgumentError(f"{what}: prog must be a program Sequence, got {type(prog).__name__}")
    check_data(data, p, logits, what)
    check_lengths(dataLengths, p.batchSize, f"{what}: dataLengths")
    if logits:
        data = logSoftmax(graph, data, prog, f"{name}/logSoftmax")
    b_size, w, t_max, classes = p.batchSize, beamwidth, p.maxTime, p.numClasses
    label_probs = graph.addVariable(p.inType, [b_size, topPaths], f"{name}/labelProbs")
    label_lengths = graph.addVariable(UNSIGNED_INT, [b_size, topPaths], f"{name}/labelLengths")
    decoded = graph.addVariable(UNSIGNED_INT, [b_size, topPaths, t_max], f"{name}/decodedLabels")
    scratch = {"prefix": graph.addVariable(UNSIGNED_INT, [b_size, 2 * w * t_max], f"{name}/prefix"),
               "length": graph.addVariable(UNSIGNED_INT, [b_size, 2 * w], f"{name}/length"),
               "prob": graph.addVariable(FLOAT, [b_size, 4 * w], f"{name}/prob"),
               "candBeam": graph.addVariable(UNSIGNED_INT, [b_size, w * classes], f"{name}/candBeam"),
               "candAddend": graph.addVariable(UNSIGNED_INT, [b_size, w * classes], f"{name}/candAddend"),
               "candProb": graph.addVariable(FLOAT, [b_size, 2 * w * classes], f"{name}/candProb")}
    vertex = templateVertex("popnn::CTCBeamSearch", p.inType)
    registerDefaultEstimator(graph, vertex, ctcBeamSearchEstimator)
    cs = graph.addComputeSet(f"{name}/beamSearch")
    for b in range(b_size):
        tile = p.tileOf(b)
        mine = {k: t[b] for k, t in scratch.items()}
        mine.update(labelProbs=label_probs[b], labelLengths=label_lengths[b], decoded=decoded[b])
        for t in mine.values():
            graph.setTileMapping(t, tile)
        v = graph.addVertex(cs, vertex, {"logProbs": data[:, b], "dataLength": dataLengths[b], **mine})
        graph.setInitialValue(v["blankClass"], blankClass)
        graph.setInitialValue(v["beamwidth"], beamwidth)
        graph.setTileMapping(v, tile)
    prog.add(prog_.Execute(cs))
    return label_probs, label_lengths, decoded


def beamSearchDecoderLogProbabilities(graph: Graph, logProbs: Tensor, dataLengths: Tensor,
                                      prog: prog_.Sequence,
                                      blankClass: int, beamwidth: int, topPaths: int, plan: Plan,
                                      debugContext: Any = "",
                                      options: dict | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """``(labelProbs [batchSize, topPaths]`` (log probability of each path, most probable
    first), ``labelLengths [batchSize, topPaths]``, ``decodedLabels [batchSize, topPaths,
    maxTime]`` (0 past each length)) from ``logProbs [maxTime, batchSize, numClasses]``."""
    return _decode(graph, logProbs, dataLengths, prog, blankClass, beamwidth, topPaths, plan, debugContext,
                   options, False, "beamSearchDecoderLogProbabilities")


def beamSearchDecoderLogits(graph: Graph, logits: Tensor, dataLengths: Tensor, prog: prog_.Sequence,
                            blankClass: int, beamwidth: int, topPaths: int, plan: Plan,
                            debugContext: Any = "",
                            options: dict | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """As ``beamSearchDecoderLogProbabilities`` after a ``logSoftmax`` of ``logits`` over the classes."""
    return _decode(graph, logits, dataLengths, prog, blankClass, beamwidth, topPaths, plan, debugContext,
                   options, True, "beamSearchDecoderLogits")
