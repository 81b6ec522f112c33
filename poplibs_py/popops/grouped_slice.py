"""popops grouped multi-slice and multi-update (DynamicSlice.hpp): ``groupSize`` independent
lookups of the same size at once.

``t`` is ``[groupSize, ...]``, ``offsets`` ``[groupSize, numLookups, 1]`` and the slices
``[groupSize, numLookups, *slice]``; ``dims`` index the dims of one group. Group g's
lookups are those multiSlice/multiUpdate make of ``t[g]`` with ``offsets[g]``: its columns'
vertices (``MultiSlice``, ``MultiUpdate``, ``MultiUpdateAdd``, ``MultiUpdateMax``) run on the
tiles holding them, and every group's vertices share one compute set, so the groups run in
parallel. A plan from ``embedding.plan`` with the group size is required, as in PopLibs; it
lays out groupedMultiSlice's result. Out-of-range offsets (PopLibs: undefined) are skipped
by the updates and give zeros in the slices.
"""

from __future__ import annotations

from collections.abc import Sequence

from poplar_py import UNSIGNED_INT, Graph, Tensor
from poplar_py import program as prog_
from poplar_py.debug import debug_name

from ..poputil import PoplibsError, checkOptions, templateVertex
from ._common import SLICE_OPTIONS, check_slice_args, check_update, to_2d
from .multi_slice import add_lookup_vertices, scale_tensor
from .perf_estimation import registerDefaultEstimator
from .slice_cycles import multiUpdateOpEstimator
from .slice_plan import SlicePlan, map_planned

__all__ = ["groupedMultiSlice", "groupedMultiUpdate", "groupedMultiUpdateAdd", "groupedMultiUpdateMax"]


def _args(t: Tensor, offsets: Tensor, dims: int | Sequence[int], sizes: Sequence[int] | None,
          plan: object, what: str) -> int:
    """Check a grouped call's arguments; the sliced dim of a group."""
    if not isinstance(t, Tensor) or t.rank() < 2 or t.dim(0) == 0:
        raise PoplibsError(f"{what}: t must be a tensor of rank >= 2 with at least one group (groups first)")
    dims = [dims] if isinstance(dims, int) else list(dims)
    dims, sizes = check_slice_args(t[0], dims, [1] * len(dims) if sizes is None else sizes, what)
    if len(dims) != 1 or sizes != [1]:
        raise PoplibsError(f"{what}: exactly one dim can be sliced, by slices of size 1; got dims {dims}, "
                           f"sizes {sizes}")
    if not isinstance(offsets, Tensor) or offsets.elementType() != UNSIGNED_INT:
        raise PoplibsError(f"{what}: offsets must be an UNSIGNED_INT tensor")
    if offsets.rank() != 3 or offsets.dim(0) != t.dim(0) or offsets.dim(2) != 1:
        raise PoplibsError(f"{what}: offsets tensor '{offsets.name}' must have shape "
                           f"[{t.dim(0)}, numLookups, 1], not {offsets.shape()}")
    if not isinstance(plan, SlicePlan):
        raise PoplibsError(f"{what}: plan must be a SlicePlan, got {type(plan).__name__}")
    plan.check(what, t.elementType(), t.shape(), dims, True)
    return dims[0]


def _slices_2d(s: Tensor, dim: int) -> Tensor:
    """A group's ``[numLookups, *slice]`` slices as ``[numLookups, columns]``."""
    n = s.dim(0)
    return s.squeeze([dim + 1]).reshape([n, s.numElements() // n]) if n else s.reshape([0, 0])


def _slice_shape(t: Tensor, dim: int, n: int) -> list[int]:
    shape = t.shape()
    shape[dim + 1] = 1
    return [shape[0], n, *shape[1:]]


def _build(graph: Graph, vertex: str, t: Tensor, sub: Tensor, offsets: Tensor, dim: int,
           prog: prog_.Sequence, name: str, scale: Tensor | None = None) -> None:
    """One compute set: each group's lookups on the tiles holding the group's columns."""
    if t.numElements() == 0 or sub.numElements() == 0:
        return
    cs = graph.addComputeSet(name)
    for g in range(t.dim(0)):
        add_lookup_vertices(graph, cs, vertex, to_2d(t[g], dim), _slices_2d(sub[g], dim),
                            offsets[g].flatten(), scale)
    prog.add(prog_.Execute(cs))


def groupedMultiSlice(graph: Graph, t: Tensor, offsets: Tensor, dims: int | Sequence[int],
                      sizes: Sequence[int] | None, prog: prog_.Sequence, plan: SlicePlan,
                      options: dict | None = None, debugContext: object = "") -> Tensor:
    """A new ``[groupSize, numLookups, *slice]`` tensor: ``out[g, i]`` is ``t[g]`` at
    ``offsets[g, i]`` along dim (zeros when out of range). One compute set; the result is
    mapped by the plan."""
    checkOptions(options, SLICE_OPTIONS, "groupedMultiSlice")
    name = debug_name(debugContext, "groupedMultiSlice: debugContext") or "groupedMultiSlice"
    dim = _args(t, offsets, dims, sizes, plan, name)
    out = graph.addVariable(t.elementType(), _slice_shape(t, dim, offsets.dim(1)), name)
    if out.numElements():
        for g in range(t.dim(0)):
            map_planned(graph, _slices_2d(out[g], dim), plan, g)
    _build(graph, templateVertex("popops::MultiSlice", t.elementType()), t, out, offsets, dim, prog, name)
    return out


def _update(graph: Graph, kind: str, t: Tensor, s: Tensor, offsets: Tensor, dims: int | Sequence[int],
            sizes: Sequence[int] | None, prog: prog_.Sequence, plan: SlicePlan, options: dict | None,
            debugContext: object, scale: Tensor | float | None = None) -> None:
    what = f"groupedMulti{kind}"
    checkOptions(options, SLICE_OPTIONS, what)
    name = debug_name(debugContext, f"{what}: debugContext") or what
    dim = _args(t, offsets, dims, sizes, plan, name)
    check_update(t, s, _slice_shape(t, dim, offsets.dim(1)), name)
    type_ = t.elementType()
    if kind == "UpdateAdd":
        scale = scale_tensor(graph, scale, type_, name)
        vertex = templateVertex("popops::MultiUpdateAdd", type_, scale.elementType())
    else:
        vertex = templateVertex(f"popops::Multi{kind}", type_)
    if kind == "UpdateMax":
        registerDefaultEstimator(graph, vertex, multiUpdateOpEstimator(type_))
    _build(graph, vertex, t, s, offsets, dim, prog, name, scale)


def groupedMultiUpdate(graph: Graph, t: Tensor, s: Tensor, offsets: Tensor, dims: int | Sequence[int],
                       sizes: Sequence[int] | None, prog: prog_.Sequence, plan: SlicePlan,
                       options: dict | None = None, debugContext: object = "") -> None:
    """``t[g, offsets[g, i]] = s[g, i]`` along dim, in order of i; one compute set on the
    tiles holding ``t``."""
    _update(graph, "Update", t, s, offsets, dims, sizes, prog, plan, options, debugContext)


def groupedMultiUpdateAdd(graph: Graph, t: Tensor, s: Tensor, offsets: Tensor, scale: Tensor | float,
                          dims: int | Sequence[int], sizes: Sequence[int] | None, prog: prog_.Sequence,
                          plan: SlicePlan, options: dict | None = None, debugContext: object = "") -> None:
    """``t[g, offsets[g, i]] += scale * s[g, i]``; repeated offsets accumulate. ``scale`` as
    multiUpdateAdd's."""
    _update(graph, "UpdateAdd", t, s, offsets, dims, sizes, prog, plan, options, debugContext, scale)


def groupedMultiUpdateMax(graph: Graph, t: Tensor, s: Tensor, offsets: Tensor, dims: int | Sequence[int],
                          sizes: Sequence[int] | None, prog: prog_.Sequence, plan: SlicePlan,
                          options: dict | None = None, debugContext: object = "") -> None:
    """``t[g, offsets[g, i]] = max(t[g, offsets[g, i]], s[g, i])`` for every i."""
    _update(graph, "UpdateMax", t, s, offsets, dims, sizes, prog, plan, options, debugContext)
