"""popops: multiSlice, multiUpdate, multiUpdateAdd (DynamicSlice.hpp): many lookups at once;
createSliceableTensor, a layout that slices without exchanging the sliced tensor.

``offsets`` is a ``[numLookups, 1]`` UNSIGNED_INT device tensor read on the tiles at run
time. The sliced tensor is viewed as ``[dimSize, columns]``; each column goes to the
tile that holds most of it, whose workers each take some columns and do every lookup
for them (``MultiSlice``, ``MultiUpdate``, ``MultiUpdateAdd`` vertices), so updates to
one element are never split between vertices and repeated offsets are applied in order.

Out-of-range offsets (>= the dimension's size) are skipped by the updates and give a
row of zeros in multiSlice (PopLibs leaves both unspecified). Only slices of size 1
are supported, as in PopLibs. A plan from ``embedding.plan`` is checked against the
tensors (its type and ``[numEntries, outputSize]`` shape) and lays out what the call
creates (``createSliceableTensor``'s tensor, ``multiSlice``'s result); the work follows
the sliced tensor's columns, which are the plan's when the tensor was made for it. The
options (PopLibs' slice options) are checked and change nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from poplar_py import FLOAT, HALF, UNSIGNED_INT, Graph, Tensor
from poplar_py import program as prog_
from poplar_py.debug import debug_name, isDebugName
from poplar_py.types import asType

from ..poputil import (
    PoplibsError,
    checkOptions,
    mapTensorLinearly,
    splitRegions,
    templateVertex,
    trailingArguments,
)
from ._common import (
    SLICE_OPTIONS,
    check_slice_args,
    check_update,
    columns_by_tile,
    map_columns,
    to_2d,
    worker_partitions,
)
from .perf_estimation import registerDefaultEstimator
from .slice_cycles import multiUpdateOpEstimator
from .slice_plan import SlicePlan, map_planned

__all__ = ["SlicePlan", "createSliceableTensor", "multiSlice", "multiUpdate", "multiUpdateAdd",
           "multiUpdateMax"]


def _args(t: Tensor, offsets: Tensor, dims: int | Sequence[int], sizes: Sequence[int] | None,
          what: str) -> int:
    """Check the arguments common to the multi-slice family; the sliced dim."""
    dims = [dims] if isinstance(dims, int) else list(dims)
    dims, sizes = check_slice_args(t, dims, [1] * len(dims) if sizes is None else sizes, what)
    if len(dims) != 1:
        raise PoplibsError(f"{what}: exactly one dim can be sliced, got dims {dims}")
    if sizes != [1]:
        raise PoplibsError(f"{what}: only slices of size 1 are supported, got sizes {sizes}")
    if not isinstance(offsets, Tensor):
        raise PoplibsError(f"{what}: offsets must be a Tensor, got {type(offsets).__name__}")
    if offsets.elementType() != UNSIGNED_INT:
        raise PoplibsError(f"{what}: offsets tensor '{offsets.name}' must be UNSIGNED_INT, "
                           f"not {offsets.elementType()}")
    if offsets.rank() != 2 or offsets.dim(1) != 1:
        raise PoplibsError(f"{what}: offsets tensor '{offsets.name}' must have shape [numLookups, 1], "
                           f"not {offsets.shape()}")
    return dims[0]


def _slices_2d(s: Tensor, dim: int) -> Tensor:
    """``[numLookups, *slice shape]`` as ``[numLookups, columns]`` (columns as in to_2d)."""
    return s.squeeze([dim + 1]).reshape([s.dim(0), s.numElements() // max(s.dim(0), 1)]) \
        if s.dim(0) else s.reshape([0, 0])


def add_lookup_vertices(graph: Graph, cs, vertex: str, base2d: Tensor, sub2d: Tensor, offsets: Tensor,
                        scale: Tensor | None = None, map_sub: bool = False) -> None:
    """Add to ``cs`` the vertices of one multi-slice or multi-update: ``base2d`` a
    ``[numBaseElements, columns]`` view, ``sub2d`` ``[numLookups, columns]``, ``offsets`` the
    flat lookups. Each run of columns goes to the tile holding most of it, shared between its
    workers; ``map_sub`` maps ``sub2d``'s columns there too."""
    if base2d.numElements() == 0 or sub2d.dim(0) == 0:
        return
    _, by_tile = columns_by_tile(graph, base2d)
    if map_sub:
        map_columns(graph, sub2d, by_tile)
    for tile, part in worker_partitions(graph.getTarget(), by_tile):
        for iv in part:  # one vertex per run of columns
            fields = {"offsets": offsets, "baseT": base2d.slice(iv.begin(), iv.end(), 1).flatten(),
                      "subT": sub2d.slice(iv.begin(), iv.end(), 1).flatten()}
            if scale is not None:
                fields["scale"] = scale
            v = graph.addVertex(cs, vertex, fields)
            graph.setInitialValue(v["numBaseElements"], base2d.dim(0))
            graph.setTileMapping(v, tile)


def _build(graph: Graph, vertex: str, t: Tensor, sub: Tensor, offsets: Tensor, dim: int,
           prog: prog_.Sequence, name: str, scale: Tensor | None = None, map_sub: bool = False) -> None:
    base2d = to_2d(t, dim)
    sub2d = _slices_2d(sub, dim)
    if base2d.numElements() == 0 or sub2d.dim(0) == 0:
        return
    cs = graph.addComputeSet(name)
    add_lookup_vertices(graph, cs, vertex, base2d, sub2d, offsets.flatten(), scale, map_sub)
    prog.add(prog_.Execute(cs))


def _planned(plan: SlicePlan | None, t: Tensor, dim: int, name: str) -> bool:
    """Check ``t`` against a plan; whether the plan lays things out."""
    if plan is None:
        return False
    if not isinstance(plan, SlicePlan):
        raise PoplibsError(f"{name}: plan must be a SlicePlan, got {type(plan).__name__}")
    plan.check(name, t.elementType(), t.shape(), [dim], False)
    return plan.isPlanned()


def _slice_shape(t: Tensor, dim: int, n: int) -> list[int]:
    shape = t.shape()
    shape[dim] = 1
    return [n, *shape]


def multiSlice(graph: Graph, t: Tensor, offsets: Tensor, dims: int | Sequence[int],
               sizes: Sequence[int] | None, prog: prog_.Sequence, plan: SlicePlan | None = None,
               options: dict | None = None, debugName: str = "") -> Tensor:
    """A new ``[numLookups, *slice shape]`` tensor: lookup i is ``t`` at ``offsets[i]`` in dim.

    One compute set; the result's columns are mapped on the tiles that gather them
    (the tiles holding most of the corresponding columns of ``t``), or on the plan's tiles
    with a plan from ``embedding.plan``. An out-of-range offset gives a slice of zeros.
    """
    checkOptions(options, SLICE_OPTIONS, "multiSlice")
    name = debug_name(debugName, "multiSlice: debugContext") or "multiSlice"
    dim = _args(t, offsets, dims, sizes, name)
    out = graph.addVariable(t.elementType(), _slice_shape(t, dim, offsets.dim(0)), name)
    planned = _planned(plan, t, dim, name)
    if planned and out.numElements():
        map_planned(graph, _slices_2d(out, dim), plan, 0)
    _build(graph, templateVertex("popops::MultiSlice", t.elementType()), t, out, offsets, dim, prog,
           name, map_sub=not planned)
    return out


def multiUpdate(graph: Graph, t: Tensor, s: Tensor, offsets: Tensor, dims: int | Sequence[int],
                sizes: Sequence[int] | None, prog: prog_.Sequence, plan: SlicePlan | None = None,
                options: dict | None = None, debugName: str = "") -> None:
    """``t[offsets[i]] = s[i]`` along dim, in order of i (the last repeat wins); one
    compute set on the tiles holding ``t``. Out-of-range offsets are skipped."""
    checkOptions(options, SLICE_OPTIONS, "multiUpdate")
    name = debug_name(debugName, "multiUpdate: debugContext") or "multiUpdate"
    dim = _args(t, offsets, dims, sizes, name)
    check_update(t, s, _slice_shape(t, dim, offsets.dim(0)), name)
    _planned(plan, t, dim, name)
    _build(graph, templateVertex("popops::MultiUpdate", t.elementType()), t, s, offsets, dim, prog, name)


def multiUpdateAdd(graph: Graph, t: Tensor, s: Tensor, offsets: Tensor, scale: Tensor | float,
                   dims: int | Sequence[int], sizes: Sequence[int] | None, prog: prog_.Sequence,
                   plan: SlicePlan | None = None, options: dict | None = None, debugName: str = "") -> None:
    """``t[offsets[i]] += scale * s[i]`` along dim; repeated offsets accumulate.

    ``scale`` is a 0-D tensor (FLOAT, or the type of ``t``) or a number (made a constant
    of FLOAT for float/half ``t``, of ``t``'s type otherwise). One compute set on the
    tiles holding ``t``; out-of-range offsets are skipped.
    """
    checkOptions(options, SLICE_OPTIONS, "multiUpdateAdd")
    name = debug_name(debugName, "multiUpdateAdd: debugContext") or "multiUpdateAdd"
    dim = _args(t, offsets, dims, sizes, name)
    check_update(t, s, _slice_shape(t, dim, offsets.dim(0)), name)
    _planned(plan, t, dim, name)
    scale = scale_tensor(graph, scale, t.elementType(), name)
    vertex = templateVertex("popops::MultiUpdateAdd", t.elementType(), scale.elementType())
    _build(graph, vertex, t, s, offsets, dim, prog, name, scale=scale)


def scale_tensor(graph: Graph, scale: Tensor | float, type_, name: str) -> Tensor:
    """A multi-update-add's ``scale`` as a 0-D tensor: a number becomes a constant on tile 0
    (FLOAT for float/half data, the data's type otherwise); a tensor must have one element
    of FLOAT or the data's type."""
    if not isinstance(scale, Tensor):
        scale = graph.addConstant(FLOAT if type_ in (FLOAT, HALF) else type_, [], scale, f"{name}/scale")
        graph.setTileMapping(scale, 0)
    if scale.numElements() != 1:
        raise PoplibsError(f"{name}: scale tensor '{scale.name}' must have one element, "
                           f"has shape {scale.shape()}")
    if scale.elementType() not in (FLOAT, type_):
        raise PoplibsError(f"{name}: scale tensor '{scale.name}' must be FLOAT or {type_}, "
                           f"not {scale.elementType()}")
    return scale.reshape([])


def multiUpdateMax(graph: Graph, t: Tensor, s: Tensor, offsets: Tensor, dims: int | Sequence[int],
                   sizes: Sequence[int] | None, prog: prog_.Sequence, plan: SlicePlan | None = None,
                   options: dict | None = None, debugName: str = "") -> None:
    """``t[offsets[i]] = max(t[offsets[i]], s[i])`` along dim, for every i (repeated offsets
    all count); one compute set of ``MultiUpdateMax`` vertices on the tiles holding ``t``.
    Out-of-range offsets are skipped; a NaN on either side gives NaN."""
    checkOptions(options, SLICE_OPTIONS, "multiUpdateMax")
    name = debug_name(debugName, "multiUpdateMax: debugContext") or "multiUpdateMax"
    dim = _args(t, offsets, dims, sizes, name)
    check_update(t, s, _slice_shape(t, dim, offsets.dim(0)), name)
    _planned(plan, t, dim, name)
    vertex = templateVertex("popops::MultiUpdateMax", t.elementType())
    registerDefaultEstimator(graph, vertex, multiUpdateOpEstimator(t.elementType()))
    _build(graph, vertex, t, s, offsets, dim, prog, name)


def createSliceableTensor(graph: Graph, type_, shape: Sequence[int], dims: Sequence[int],
                          sizes: Sequence[int], *args, debugContext: str = "",
                          options: dict | None = None) -> Tensor:
    """A new tensor laid out for dynamicSlice/multiSlice along ``dims``.

    ``createSliceableTensor(graph, type, shape, dims, sizes, minGrainSize=0, debugContext="")``,
    or ``createSliceableTensor(graph, type, shape, dims, sizes, plan, options, debugContext="")``
    (PopLibs' slice options, checked). Viewed as ``[sliced elements, columns]`` (``dims``
    first, the other dims flattened), whole columns are spread
    over the tiles in runs of at least ``minGrainSize`` columns, so every slice finds its
    elements on the tile that slices them and slicing needs no exchange of ``t``. Each column's
    elements are consecutive in the variable (``t`` is a ``dimShuffle`` of it), so a tile's
    columns are one region of its memory. When ``dims``
    cover every dimension (one column), the sliced elements are spread linearly instead. A plan
    from ``embedding.plan`` (checked against the type, shape and dims) puts the columns on its
    tiles; an empty ``SlicePlan()`` lays the tensor out as without one.
    """
    if args and isinstance(args[0], SlicePlan):
        min_grain = 0
        options, debugContext = trailingArguments("createSliceableTensor", args[1:],
                                                  {"options": options, "debugContext": debugContext})
    else:  # positionally, options come only after a plan, as in C++
        rest = [None, *args] if args and isDebugName(args[0]) else list(args)  # a name without minGrainSize
        min_grain, debugContext = trailingArguments("createSliceableTensor", rest,
                                                    {"minGrainSize": None, "debugContext": debugContext})
    checkOptions(options, SLICE_OPTIONS, "createSliceableTensor")
    plan = args[0] if args and isinstance(args[0], SlicePlan) and args[0].isPlanned() else None
    name = debug_name(debugContext, "createSliceableTensor: debugContext") or "sliceable"
    min_grain = 0 if min_grain is None else min_grain
    try:
        shape = [int(s) for s in shape]
        min_grain = int(min_grain)
    except (TypeError, ValueError) as e:
        raise PoplibsError(f"createSliceableTensor '{name}': shape and minGrainSize must be integers") from e
    what = f"createSliceableTensor '{name}'"
    if min(shape, default=0) < 0 or min_grain < 0:
        raise PoplibsError(f"{what}: negative shape {shape} or minGrainSize {min_grain}")
    dims = [int(dims)] if isinstance(dims, (int, np.integer)) else [int(d) for d in dims]
    sizes = [int(s) for s in sizes]
    if len(dims) != len(sizes) or len(set(dims)) != len(dims) or not dims:
        raise PoplibsError(f"{what}: dims {dims} and sizes {sizes} must be distinct dims, one size each")
    for d, size in zip(dims, sizes):
        if not 0 <= d < len(shape) or not 0 <= size <= shape[d]:
            raise PoplibsError(f"{what}: dim {d} (size {size}) does not fit shape {shape}")
    if plan is not None:
        plan.check(what, asType(type_), shape, dims, False)
    others = [d for d in range(len(shape)) if d not in dims]
    if plan is not None or not others:
        var = t = graph.addVariable(type_, shape, name)
    else:  # each column's elements consecutive in the variable: a tile's columns are one interval
        var = graph.addVariable(type_, [shape[d] for d in others + dims], name)
        t = var.dimShuffle([others.index(d) if d in others else len(others) + dims.index(d)
                            for d in range(len(shape))])
    if t.numElements() == 0:
        return t
    cols = int(np.prod([shape[d] for d in others], dtype=np.int64))
    view = t.dimShuffle(dims + others).reshape([t.numElements() // cols, cols])
    if plan is not None:
        map_planned(graph, view, plan, 0)
        return t
    if cols == 1:
        mapTensorLinearly(graph, view.flatten())
        return t
    rows, flat = view.dim(0), var.flatten()
    num_tiles = graph.getTarget().getNumTiles()
    for tile, part in enumerate(splitRegions([(0, cols)], max(min_grain, 1), num_tiles)):
        for iv in part:
            graph.setTileMapping(flat.slice(iv.begin() * rows, iv.end() * rows), tile)
    return t
