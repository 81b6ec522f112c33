"""GCL's multi-tensor collectives: a cross-replica collective given a list of tensors runs once,
on one joined tensor, and hands back one result per tensor, as GCL's overloads taking a
``std::vector<poplar::Tensor>`` do (one set of ring steps and cross-replica copies for all).

Joining adds nothing to the graph but views, except the zero padding a reduce-scatter needs to
give every tensor its own shards."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from poplar_py import Graph, Tensor, concat

from ..poputil import PoplibsArgumentError, PoplibsError, tensorArgument

__all__ = ["checked_destinations", "checked_list", "joined", "joined_rows", "split", "split_rows"]


def checked_list(graph: Graph, data: list | tuple, what: str, name: str = "data") -> list[Tensor]:
    """``data``, a non-empty list of tensors of ``graph`` of one element type (named ``name[i]``)."""
    if not data:
        raise PoplibsArgumentError(f"{what}: {name} is an empty list: give at least one tensor")
    tensors = [tensorArgument(graph, t, f"{what}: {name}[{i}]") for i, t in enumerate(data)]
    for i, t in enumerate(tensors[1:], 1):
        if t.elementType() != tensors[0].elementType():
            raise PoplibsError(f"{what}: {name}[{i}] '{t.name}' is of type {t.elementType()}, {name}[0] "
                               f"'{tensors[0].name}' of type {tensors[0].elementType()}: one collective "
                               "needs one element type")
    return tensors


def joined(tensors: list[Tensor]) -> Tensor:
    """The tensors flattened, one after another (a view)."""
    return concat([t.flatten() for t in tensors])


def split(flat: Tensor, tensors: list[Tensor]) -> list[Tensor]:
    """``flat`` (as ``joined(tensors)``) cut back into views shaped as each tensor."""
    bounds = itertools.pairwise(np.cumsum([0] + [t.numElements() for t in tensors]).tolist())
    return [flat.slice(a, b).reshape(t.shape()) for (a, b), t in zip(bounds, tensors)]


def joined_rows(graph: Graph, tensors: list[Tensor], rows: int, name: str) -> tuple[Tensor, list[int]]:
    """A ``[rows, C]`` view whose row p holds chunk p of each flattened tensor in turn, each tensor's
    chunks ``ceil(n / rows)`` wide (C their sum), and those widths: so a reduce-scatter of it gives
    every tensor its own shard. Where a tensor does not fill its chunks, a zero constant on the
    tile of its last element pads them."""
    widths = [-(-t.numElements() // rows) for t in tensors]
    blocks = []
    for t, width in zip(tensors, widths):
        flat, missing = t.flatten(), rows * width - t.numElements()
        if missing:
            pad = graph.addConstant(t.elementType(), [missing], 0, f"{name}/padding")
            tiles = graph.tile_intervals(flat, requireComplete=False)[2]
            graph.setTileMapping(pad, int(tiles[-1]) if tiles.size else 0)
            flat = concat([flat, pad])
        blocks.append(flat.reshape([rows, width]))
    return concat(blocks, 1), widths


def split_rows(row: Tensor, tensors: list[Tensor], widths: list[int]) -> list[Tensor]:
    """A row of ``joined_rows`` cut into each tensor's shard."""
    return [row.slice(a, b) for a, b in itertools.pairwise(np.cumsum([0, *widths]).tolist())]


def checked_destinations(graph: Graph, destination: Any, tensors: list[Tensor], what: str) -> list[Tensor]:
    """``destination``, a list with one tensor for each of ``tensors``."""
    if not isinstance(destination, (list, tuple)):
        raise PoplibsArgumentError(f"{what}: destination must be a list of tensors, one for each tensor "
                                   f"of data, got {type(destination).__name__}")
    if len(destination) != len(tensors):
        raise PoplibsError(f"{what}: {len(destination)} destination(s) for {len(tensors)} tensor(s) of data")
    return [tensorArgument(graph, d, f"{what}: destination[{i}]") for i, d in enumerate(destination)]
