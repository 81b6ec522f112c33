"""popops reductions (PopLibs' Reduce.hpp): reduce, reduceWithOutput, reduceMany.

The input is viewed as a matrix ``[outputs, reduced elements]`` (``dimShuffle`` to kept
dimensions first, then ``reshape``) and reduced where it lives, as PopLibs does:

* stage 1, on every tile holding input: for each output, the elements that tile holds are
  reduced into one partial (float for half data). An output whose elements all live on one
  tile is finished here, with the scale and update applied.
* stage 2, on the tile of each remaining output: its partials, one per stage-1 tile, are
  reduced into the output. Outputs with many partials that would crowd that stage onto their
  few tiles get an intermediate stage first, spread over the source tiles (``reduce_plan``).

The plan (``reduce_plan``) is computed with numpy from the input's tile mapping, on runs
rather than elements where it can; each tile's work is split over its worker contexts, one
vertex per worker, each vertex reducing many output regions from lists of contiguous pieces
(``codelets/popops/reduce.py``). In a column reduction a stage-1 region adds a tile's row
segments into a partial row; in stage 2 the pieces of a region (one per source tile) are
one entry, a few strided views of the partials, so each region has one exchange buffer.

``reduceMany`` plans the reductions of one kind (operation, types, scale, update) as one: their
matrices one after another, read from one source, outputs numbered across them, so a tile's
vertices reduce regions of all of them and the host work grows with their regions, not their
number.

A new output is mapped like the first element of each input row (each output lives with its
data, so rows held by one tile need no exchange) unless that would crowd the outputs onto a
few tiles, as in a column reduction; then it is mapped linearly.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from poplar_py import BOOL, FLOAT, HALF, INT, UNSIGNED_INT, ComputeSet, Graph, Tensor, Type, concat
from poplar_py import program as prog
from poplar_py.builder.bulk_vertices import Rows
from poplar_py.checks.arguments import is_int
from poplar_py.debug import debug_name
from poplar_py.regions.arrays import expand_ranges
from poplar_py.types import asType

from ..poputil import (
    PoplibsError,
    checkOptions,
    computeWithOutput,
    templateVertex,
    tensorArgument,
    trailingArguments,
)
from .perf_estimation import registerDefaultEstimator
from .reduce_cycles import reduceEstimator
from .reduce_mapping import map_runs, output_tiles, partial_tiles, source_layout
from .reduce_plan import (
    Regions,
    assign_partials,
    fill_regions,
    intermediate_group,
    plan_stage1,
    plan_stage2,
    sources_per_output,
    split_for_workers,
)

__all__ = ["Operation", "ReduceParams", "SingleReduceOp", "reduce", "reduceMany", "reduceWithOutput"]


class Operation(enum.Enum):
    """How a reduction combines elements (PopLibs' ``popops::Operation``)."""

    ADD = "Add"
    MUL = "Mul"
    MIN = "Min"
    MAX = "Max"
    LOGICAL_AND = "LogicalAnd"
    LOGICAL_OR = "LogicalOr"
    SQUARE_ADD = "SquareAdd"  # sum of squares
    LOG_ADD = "LogAdd"  # log(sum(exp(x))), accumulated as a + log(1 + exp(b - a))


_SCALABLE = (Operation.ADD, Operation.SQUARE_ADD, Operation.LOG_ADD)
_NUMERIC = (FLOAT, HALF, INT, UNSIGNED_INT)
_IN_TYPES = {Operation.LOGICAL_AND: (BOOL,), Operation.LOGICAL_OR: (BOOL,), Operation.LOG_ADD: (FLOAT, HALF)}


@dataclass
class ReduceParams:
    """The operation, whether to add into the output (``update``) and an optional ``scale``
    (a FLOAT 0-D tensor or a number) multiplying the result; both only for ADD, SQUARE_ADD and
    LOG_ADD (for LOG_ADD values are logarithms: the scale is added, the update log-adds)."""

    op: Operation
    update: bool = False
    scale: Tensor | float | None = None

    @property
    def useScale(self) -> bool:
        return self.scale is not None


@dataclass
class SingleReduceOp:
    """One reduction of ``reduceMany``; ``outType`` None keeps the input's type."""

    input: Tensor
    dims: list[int]
    params: ReduceParams | Operation
    outType: Type | None = None
    debugName: str = ""


#: PopLibs' reduction options (the accumulation types of the two stages), checked by name
OPTIONS = ("accumType.interTile", "accumType.inVertex")


def reduce(graph: Graph, t: Tensor, *args: Any, debugName: str = "", options: dict | None = None) -> Tensor:
    """Reduce ``t`` over ``dims`` into a new tensor (shape: ``t``'s without ``dims``).

    ``reduce(graph, t, dims, params, prog[, debugName[, options]])`` or, with an explicit
    output type, ``reduce(graph, t, outType, dims, params, prog[, debugName[, options]])``;
    ``params`` is a ReduceParams or an Operation. Adds one or two compute sets to ``prog`` (a
    Sequence, or a list of ComputeSets as in ``reduceMany``); every element is reduced by
    vertices on the tiles that hold it (see the module docstring). ``options`` are checked by
    name (PopLibs' ``accumType.interTile`` and ``accumType.inVertex``; the accumulation type here
    is always the one the module docstring gives).
    """
    out_type = None
    if args and isinstance(args[0], (Type, str, type, np.dtype)):
        out_type, args = asType(args[0]), args[1:]
    if len(args) < 3:
        raise PoplibsError("reduce(graph, t, [outType,] dims, params, prog[, debugName[, options]])")
    dims, params, program = args[0], args[1], args[2]
    debugName, options = trailingArguments("reduce", args[3:], {"debugName": debugName, "options": options})
    name = debug_name(debugName, "reduce")
    outputs: list[Tensor] = []
    reduceMany(graph, [SingleReduceOp(t, dims, params, out_type, name)], outputs, program, name, options)
    return outputs[0]


def reduceWithOutput(graph: Graph, t: Tensor, out: Tensor, dims: list[int],
                     params: ReduceParams | Operation, program: prog.Sequence | list[ComputeSet],
                     debugName: str = "", options: dict | None = None) -> None:
    """Reduce ``t`` over ``dims`` into ``out`` (which must have the output's shape); with
    ``params.update`` the result is added to ``out``. An incompletely mapped ``out`` is mapped
    as ``reduce`` maps a new output. Vertices run as in ``reduce``; an ``out`` that overlaps ``t``
    gets the result through a temporary."""
    checkOptions(options, OPTIONS, "reduceWithOutput")

    def compute(dst: Tensor) -> None:
        reduceMany(graph, [SingleReduceOp(t, dims, params, out.elementType(), debugName)], [dst],
                   program, debugName)

    full = params if isinstance(params, ReduceParams) else ReduceParams(params)
    computeWithOutput(graph, out, [t, full.scale], program, debugName or "reduceWithOutput", compute,
                      readsOutput=full.update)


def reduceMany(graph: Graph, reductions: list[SingleReduceOp], outputs: list[Tensor],
               program: prog.Sequence | list[ComputeSet], debugName: str = "",
               options: dict | None = None) -> None:
    """Several reductions sharing compute sets (all first stages in one, all second stages
    in another). If ``outputs`` is empty the outputs are created and appended to it;
    otherwise ``outputs[i]`` receives reduction ``i``.

    Reductions of one kind (operation, types, scale and update) are planned together, as one
    reduction of their matrices one after another: a tile's vertices reduce regions of all of
    them, and the host work grows with their elements and regions, not with their number.

    ``program`` is a Sequence, which gets an Execute of each compute set, or (PopLibs'
    ``std::vector<ComputeSet> &css`` form) a list of compute sets: stage ``i`` adds its
    vertices to ``program[i]``, and stages beyond the list's end append new compute sets to
    it, for the caller to execute in order. ``options`` are checked as ``reduce``'s."""
    checkOptions(options, OPTIONS, "reduceMany")
    if not isinstance(program, (prog.Sequence, list)) or (
            isinstance(program, list) and not all(isinstance(c, ComputeSet) for c in program)):
        raise PoplibsError(f"reduce: expected a Sequence or a list of ComputeSets to add to, got "
                           f"{type(program).__name__}")
    if outputs and len(outputs) != len(reductions):
        raise PoplibsError(f"reduceMany: {len(reductions)} reductions but {len(outputs)} outputs")
    given = list(outputs)
    css: list[ComputeSet] = program if isinstance(program, list) else []
    name = debugName or "reduce"
    scales: dict[float, Tensor] = {}
    kinds: dict[tuple, _Kind] = {}
    for i, op in enumerate(reductions):
        out, job = _prepare(graph, op, given[i] if given else None, css, op.debugName or name, scales)
        if not given:
            outputs.append(out)
        if job is not None:
            kinds.setdefault(job.kind.key, job.kind).jobs.append(job)
    for kind in kinds.values():
        _reduce_kind(graph, kind, kind.jobs, css)
    if isinstance(program, prog.Sequence):
        for cs in css:
            program.add(prog.Execute(cs))


# ---- one reduction ------------------------------------------------------------------------------

def _params(p: ReduceParams | Operation) -> ReduceParams:
    params = ReduceParams(p) if isinstance(p, Operation) else p
    if not isinstance(params, ReduceParams):
        raise PoplibsError(f"reduce: expected ReduceParams or Operation, got {p!r}")
    if (params.update or params.useScale) and params.op not in _SCALABLE:
        raise PoplibsError(f"reduce: scale and update can only be used with ADD, LOG_ADD or "
                           f"SQUARE_ADD, not {params.op.name}")
    if isinstance(params.scale, Tensor) and (params.scale.elementType() != FLOAT or params.scale.rank()):
        raise PoplibsError(f"reduce: the scale must be a 0-D FLOAT tensor, got '{params.scale.name}' "
                           f"of type {params.scale.elementType()} and shape {params.scale.shape()}")
    return params


def _types(op: Operation, in_type: Type, out_type: Type) -> Type:
    """Check the input and output types; return the accumulator type."""
    allowed = _IN_TYPES.get(op, _NUMERIC)
    floats = (FLOAT, HALF)
    ok = in_type in allowed and (out_type == in_type or (
        in_type in floats and out_type in floats and op not in (Operation.MIN, Operation.MAX)))
    if not ok:
        raise PoplibsError(f"reduce: operation {op.name} does not support input type {in_type} with "
                           f"output type {out_type}")
    if HALF in (in_type, out_type) and op in (Operation.ADD, Operation.SQUARE_ADD, Operation.MUL,
                                              Operation.LOG_ADD):
        return FLOAT
    return out_type


def _identity(op: Operation, acc: Type) -> Any:
    if op in (Operation.LOGICAL_AND, Operation.LOGICAL_OR):
        return op is Operation.LOGICAL_AND
    if op in (Operation.MIN, Operation.MAX):
        if acc.dtype.kind == "f":
            return np.inf if op is Operation.MIN else -np.inf
        info = np.iinfo(acc.dtype)
        return info.max if op is Operation.MIN else info.min
    return {Operation.MUL: 1, Operation.LOG_ADD: -np.inf}.get(op, 0)


def _check_dims(t: Tensor, dims: list[int]) -> list[int]:
    if not isinstance(dims, (list, tuple)) or not all(is_int(d) for d in dims):
        raise PoplibsError(f"reduce: the dimensions of tensor '{t.name}' must be a list of integers, "
                           f"got {dims!r:.60}")
    dims = [int(d) for d in dims]
    bad = [d for d in dims if not 0 <= d < t.rank()]
    if bad:
        raise PoplibsError(f"reduce: invalid dimension {bad[0]} for tensor '{t.name}' of rank {t.rank()}")
    if len(set(dims)) != len(dims):
        raise PoplibsError(f"reduce: dimensions {dims} contain a repeat")
    return dims


@dataclass
class _Kind:
    """Reductions that vertices of one type can do: the operation, scale and update, and types."""

    params: ReduceParams
    in_type: Type
    acc: Type
    out_type: Type
    jobs: list[_Job] = field(default_factory=list)

    @property
    def key(self) -> tuple:
        scale = self.params.scale
        return (self.params.op, self.params.update, id(scale), self.in_type, self.acc, self.out_type)


@dataclass
class _Job:
    """One reduction to plan: its input as a matrix ``[outputs, reduced]`` and its flattened output."""

    input: Tensor
    matrix: Tensor
    out: Tensor
    new: bool  # the output was made here (not mapped yet)
    name: str
    kind: _Kind


def _prepare(graph: Graph, op: SingleReduceOp, out: Tensor | None, css: list[ComputeSet], name: str,
             scales: dict[float, Tensor]) -> tuple[Tensor, _Job | None]:
    """Check one reduction and make its output; the job left to plan, if any (an empty reduction
    fills its output with the identity here)."""
    t = tensorArgument(graph, op.input, "reduce: the input")
    if out is not None:
        tensorArgument(graph, out, "reduce: the output")
    params = _params(op.params)
    dims = _check_dims(t, op.dims)
    out_type = op.outType if op.outType is not None else t.elementType()
    acc = _types(params.op, t.elementType(), out_type)
    kept = [d for d in range(t.rank()) if d not in dims]
    out_shape = [t.dim(d) for d in kept]
    num_out = math.prod(out_shape)
    size = math.prod(t.dim(d) for d in dims)
    new = out is None
    if out is None:
        out = graph.addVariable(out_type, out_shape, name + "/out")
    elif out.shape() != out_shape or out.elementType() != out_type:
        raise PoplibsError(f"reduceWithOutput: output '{out.name}' has shape {out.shape()} and type "
                           f"{out.elementType()}; reducing {t.shape()} over {dims} gives {out_shape}")
    if num_out == 0 or (size == 0 and params.update):
        return out, None  # nothing to write
    if params.update and not params.useScale:  # ScaledReduce vertices update: scale by one
        params = ReduceParams(params.op, True, 0.0 if params.op is Operation.LOG_ADD else 1.0)
    if params.useScale and not isinstance(params.scale, Tensor):
        value = float(params.scale)
        if value not in scales:  # one constant per value for the reductions built together
            scales[value] = graph.addConstant(FLOAT, [], value, name + "/scale")
            graph.setTileMapping(scales[value], 0)
        params = ReduceParams(params.op, params.update, scales[value])
    out_flat = out if out.rank() == 1 else out.reshape([num_out])
    if size == 0:
        regions = fill_regions(output_tiles(graph, [out_flat], None, [new]))
        _add_vertices(graph, _stage(graph, css, 0, name), regions, t.flatten(), out_flat, params,
                      t.elementType(), acc, out_type)
        return out, None
    matrix = t if kept + dims == list(range(t.rank())) else t.dimShuffle(kept + dims)
    matrix = matrix if matrix.shape() == [num_out, size] else matrix.reshape([num_out, size])
    return out, _Job(t, matrix, out_flat, new, name, _Kind(params, t.elementType(), acc, out_type))


def _reduce_kind(graph: Graph, kind: _Kind, jobs: list[_Job], css: list[ComputeSet]) -> None:
    """Plan reductions of one kind together and add their vertices. An intermediate stage is
    decided per reduction: one whose outputs have many partials (64 or more, so that it may
    need one) is planned alone."""
    layout, source = source_layout(graph, [job.matrix for job in jobs], [job.input for job in jobs])
    stage1 = plan_stage1(layout)
    num_out = int(layout.outputs.sum())
    if len(jobs) > 1 and (~stage1.final).any():
        most = np.maximum.reduceat(sources_per_output(stage1, num_out), layout.first_output)
        alone = most >= 64
        if alone.any():
            for k in np.flatnonzero(alone).tolist():
                _reduce_kind(graph, kind, [jobs[k]], css)
            rest = [job for job, a in zip(jobs, alone.tolist()) if not a]
            if rest:
                _reduce_kind(graph, kind, rest, css)
            return
    name, params = jobs[0].name, kind.params
    in_type, acc, out_type = kind.in_type, kind.acc, kind.out_type
    out_flat = jobs[0].out if len(jobs) == 1 else concat([job.out for job in jobs])
    row_starts = np.repeat(layout.reduced, layout.outputs)
    row_starts = np.cumsum(row_starts) - row_starts
    owner = output_tiles(graph, [job.out for job in jobs], layout.tiles[row_starts],
                          [job.new for job in jobs])
    partials = None
    num_partials = assign_partials(stage1)
    if num_partials:
        partials = graph.addVariable(acc, [num_partials], name + "/partials")
        map_runs(graph, partials, partial_tiles(stage1))
        stage2 = plan_stage2(stage1, owner)
    _add_vertices(graph, _stage(graph, css, 0, name), stage1, source, out_flat, params, in_type, acc,
                  out_type, partials)
    if partials is None:
        return
    second = ReduceParams(Operation.ADD if params.op is Operation.SQUARE_ADD else params.op,
                          params.update, params.scale)
    group = intermediate_group(stage1, stage2, graph.getTarget().getNumTiles())
    if group:  # reduce blocks of sources' partials first, spread over those sources' tiles
        middle = plan_stage2(stage1, owner, group)
        middle.final[:] = False
        between = graph.addVariable(acc, [assign_partials(middle)], name + "/intermediatePartials")
        map_runs(graph, between, partial_tiles(middle))
        _add_vertices(graph, _stage(graph, css, 1, name), middle, partials, out_flat,
                      ReduceParams(second.op), acc, acc, acc, between, merge=True)
        stage2, partials = plan_stage2(middle, owner), between
    _add_vertices(graph, _stage(graph, css, 2 if group else 1, name), stage2, partials, out_flat, second,
                  acc, acc, out_type, merge=True)


def _stage(graph: Graph, css: list[ComputeSet], i: int, name: str) -> ComputeSet:
    """Compute set ``i`` of the reductions being built together (created on first use)."""
    while len(css) <= i:
        css.append(graph.addComputeSet(f"{name}/stage{len(css) + 1}"))
    return css[i]


def _add_vertices(graph: Graph, cs: ComputeSet, regions: Regions, source: Tensor, out_flat: Tensor,
                  params: ReduceParams, in_type: Type, acc: Type, out_type: Type,
                  partials: Tensor | None = None, merge: bool = False) -> None:
    """One vertex per (tile, worker) for the final regions, and one for the partial regions
    (writing ``partials`` in the accumulator type, without scale or update), built in bulk.

    With ``merge`` (for pieces that are not on the vertex's tile anyway, as in stage 2) the
    pieces of a region become one entry, their concatenation: one exchange buffer per region
    instead of one per piece (the codelet reads an entry ``k * width`` long as ``k`` pieces)."""
    workers = graph.getTarget().getNumWorkerContexts()
    worker = split_for_workers(regions, workers, max(1, 8 // in_type.size))
    scaled = params.useScale
    op = f"popops::Reduce{params.op.value}"
    final = (templateVertex("popops::ScaledReduce", op, in_type, acc, out_type, params.update) if scaled
             else templateVertex("popops::Reduce", op, in_type, acc, out_type))
    names = {True: final, False: templateVertex("popops::Reduce", op, in_type, acc, acc)}
    if params.op is Operation.ADD:  # outputs of the accumulator's type are accumulated in place
        names[False] = templateVertex("popops::ReduceAddInPlace", in_type, acc)
        if out_type == acc and not scaled:
            names[True] = names[False]
    final_out = acc if names[True] == names[False] else out_type
    for is_final, (out, update) in {True: (final_out, scaled and params.update), False: (acc, False)}.items():
        estimator = reduceEstimator(in_type, out, params.op.value, update)
        registerDefaultEstimator(graph, names[is_final], estimator)
    identity = _identity(params.op, acc)
    vertex = np.concatenate(([0], np.cumsum((regions.tile[1:] != regions.tile[:-1])
                                            | (worker[1:] != worker[:-1])))) if worker.size else worker
    for final in (True, False):
        sel = np.flatnonzero(regions.final == final)
        if not sel.size:
            continue
        dst = out_flat if final else partials
        assert dst is not None
        # the selected regions' vertices, numbered from 0 in (tile, worker) order; a worker's
        # single outputs from one piece each go to one vertex per piece length, as PopLibs'
        # ContinuousReduce takes runs of one length
        scalar = (regions.width[sel] == 1) & (regions.count[sel] == 1)
        length = np.zeros(sel.size, np.int64)
        length[scalar] = regions.length[regions.first_piece[sel][scalar]]
        key = vertex[sel] * (int(length.max(initial=0)) + 1) + length
        order = np.argsort(key, kind="stable")
        sel, key = sel[order], key[order]
        keys, owner = np.unique(key, return_inverse=True)
        tiles = regions.tile[sel][np.searchsorted(owner, np.arange(keys.size))]
        per_vertex = np.bincount(owner, minlength=keys.size)
        count = regions.count[sel]
        piece = expand_ranges(regions.first_piece[sel], count)[1]
        begin = regions.pos[piece]
        if merge:  # one entry per region with pieces, its pieces back to back
            row = np.repeat(np.cumsum(count > 0) - 1, count)
            entries = Rows(np.bincount(owner, weights=count > 0, minlength=keys.size).astype(np.int64),
                           begin, begin + np.repeat(regions.width[sel], count), row)
            counts = np.minimum(count, 1)
        else:  # one entry per piece
            entries = Rows(np.bincount(owner, weights=count, minlength=keys.size).astype(np.int64),
                           begin, begin + regions.length[piece], np.arange(piece.size))
            counts = count
        dst0 = regions.dst0[sel]
        outs = Rows(per_vertex, dst0, dst0 + regions.width[sel], np.arange(sel.size))
        graph.add_vertices(cs, names[final], tiles, {"partials": (source, entries), "out": (dst, outs)},
                           shared={"k": params.scale} if final and scaled else None,
                           state={"identity": identity}, vector_state={"numPartials": (counts, per_vertex)})
