"""poplin::fc (PopLibs' FullyConnected.hpp): the products a fully-connected layer runs.

A layer of ``numGroups`` independent groups maps ``[batchSize, inputSize]`` activations to
``[batchSize, outputSize]`` through ``[inputSize, outputSize]`` weights. Its forward pass is
the grouped product ``[g, batch, in] x [g, in, out]``; the backward pass swaps the input and
output sizes, ``[g, batch, out] x [g, out, in]``; the weight update swaps the input and batch
sizes, ``[g, in, batch] x [g, batch, out]``. ``getMatMulPrePlanParameters`` lists them, for
``preplanMatMuls``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from poplar_py.errors import InvalidArgumentError
from poplar_py.types import asType

from ..poputil import PoplibsArgumentError, checkOptions
from .matmul import MATMUL_OPTIONS, matmulValidateOptions
from .matmul_planning import MatMulParams

__all__ = ["FullyConnectedParams", "getMatMulPrePlanParameters"]


@dataclass(frozen=True)
class FullyConnectedParams:
    """A fully-connected layer: ``numGroups`` independent groups of ``batchSize`` samples, each
    mapping ``inputSize`` values to ``outputSize``."""

    numGroups: int
    batchSize: int
    inputSize: int
    outputSize: int

    def __post_init__(self) -> None:
        for name in ("numGroups", "batchSize", "inputSize", "outputSize"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise PoplibsArgumentError(f"FullyConnectedParams: {name} must be a non-negative int, got "
                                           f"{value!r:.20}")


def _params(g: int, batch: int, inner: int, out: int, type_: Any) -> MatMulParams:
    return MatMulParams(type_, type_, (g, batch, inner), (g, inner, out))


def getMatMulPrePlanParameters(parameters: FullyConnectedParams, matmulOptions: dict | None, type_: Any,
                               inferenceOnly: bool) -> list[tuple[MatMulParams, dict]]:
    """``(MatMulParams, options)`` of the layer's forward product, and with ``inferenceOnly`` false
    its backward and weight-update products; each options is ``matmulOptions`` with
    ``fullyConnectedPass`` set to the pass (INFERENCE_FWD or TRAINING_FWD, TRAINING_BWD,
    TRAINING_WU)."""
    what = "fc::getMatMulPrePlanParameters"
    if not isinstance(parameters, FullyConnectedParams):
        raise PoplibsArgumentError(f"{what}: parameters must be a poplin.fc.FullyConnectedParams, got "
                                   f"{type(parameters).__name__}")
    options = checkOptions(matmulOptions, MATMUL_OPTIONS, what)
    matmulValidateOptions(options)
    try:
        dtype = asType(type_)
    except InvalidArgumentError:
        raise PoplibsArgumentError(f"{what}: type must be a poplar element type, got {type_!r:.40}") from None
    g, b, i, o = parameters.numGroups, parameters.batchSize, parameters.inputSize, parameters.outputSize
    passes = [(_params(g, b, i, o, dtype), "INFERENCE_FWD" if inferenceOnly else "TRAINING_FWD")]
    if not inferenceOnly:
        passes += [(_params(g, b, o, i, dtype), "TRAINING_BWD"), (_params(g, i, b, o, dtype), "TRAINING_WU")]
    return [(params, {**options, "fullyConnectedPass": name}) for params, name in passes]
