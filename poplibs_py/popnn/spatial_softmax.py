"""popnn's SpatialSoftMax.hpp: the expected (row, column) coordinates of 2-D fields.

``spatialSoftMax2D`` divides the fields ``[F, H, W]`` by a trainable scalar temperature (a
variable on tile 0 starting at the given value), takes a softmax over each field's H x W
elements (``nonLinearity`` SOFTMAX_STABLE on the tiles), and multiplies the ``[F, H*W]``
result by a constant ``[H*W, 2]`` grid of coordinates (rows and columns each spread evenly
over [-1, 1]) with one ``poplin.matMul``: row f is field f's expected (y, x). PopLibs' code
flattens all fields into one softmax and then drops its result (a new tensor it never uses);
we apply the per-field softmax the header describes, so every field's coordinates are an
expectation. ``disableSoftmax`` multiplies the scaled fields as they are.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from poplar_py import FLOAT, HALF, Graph, Tensor
from poplar_py import program as prog_
from poplar_py.debug import debug_name

from .. import poplin, popops
from ..popops import expr as pe
from ..poputil import PoplibsError, mapTensorLinearly
from .nonlinearity import NonLinearityType, nonLinearity

__all__ = ["spatialSoftMax2D"]


def spatialSoftMax2D(graph: Graph, prog: prog_.Sequence, fields: Tensor, temperature: float,
                     disableSoftmax: bool = False, debugContext: Any = "") -> tuple[Tensor, Tensor]:
    """``(coordinates [F, 2], temperature [])``: column 0 the expected row (y), column 1 the
    expected column (x) of each field, in [-1, 1]."""
    name = debug_name(debugContext, "spatialSoftMax2D: debugContext") or "spatialSoftMax2D"
    if not isinstance(fields, Tensor) or fields.rank() != 3 or fields.elementType() not in (FLOAT, HALF):
        got = f"{fields.elementType()} {fields.shape()}" if isinstance(fields, Tensor) \
            else type(fields).__name__
        raise PoplibsError(f"spatialSoftMax2D: fields must be a FLOAT or HALF tensor of rank 3 [F, H, W], "
                           f"got {got}")
    try:
        initial = float(temperature)
    except (TypeError, ValueError):
        raise PoplibsError(f"spatialSoftMax2D: temperature must be a number, got "
                           f"{temperature!r:.40}") from None
    type_ = fields.elementType()
    f, h, w = fields.shape()
    temp = graph.addVariable(type_, [], f"{name}/temperature")
    graph.setTileMapping(temp, 0)
    graph.setInitialValue(temp, initial)
    flat = fields.reshape([f, h * w])
    scaled = popops.map(graph, pe._1 / pe._2, [flat, temp.reshape([1, 1])], prog, f"{name}/scaled")
    if not disableSoftmax:
        scaled = nonLinearity(graph, NonLinearityType.SOFTMAX_STABLE, scaled, prog, f"{name}/softmax")
    ys, xs = np.meshgrid(np.linspace(-1.0, 1.0, h), np.linspace(-1.0, 1.0, w), indexing="ij")
    grid = graph.addConstant(type_, [h * w, 2], np.stack([ys.ravel(), xs.ravel()], 1), f"{name}/grid")
    mapTensorLinearly(graph, grid)
    return poplin.matMul(graph, scaled, grid, prog, debugName=f"{name}/expectations"), temp
