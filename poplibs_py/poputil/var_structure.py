"""The structure of a tensor's variables (VarStructure.hpp): groupings detected from contiguity and
tile mapping, and tensors built so that each partition is one contiguous region.

A *grouping* of g in a dimension means the elements come in runs of g consecutive indices of that
dimension that lie together in memory and on one tile, as convolution layouts keep channels in
groups of 8 or 16. ``detectInnermostGrouping`` finds it for the innermost dimension;
``detectDimGroupings`` for every dimension in turn, innermost first.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from poplar_py import Graph, Tensor, concat
from poplar_py.types import asType

from .debug_info import PoplibsOpDebugInfo
from .errors import PoplibsArgumentError, PoplibsError, indexList, tensorArgument

__all__ = ["GroupingInfo", "createPartitionableTensor", "detectDimGroupings", "detectInnermostGrouping",
           "iterateTensorPartitions"]

GroupingInfo = tuple  # (dimension, grouping), as PopLibs' std::pair<unsigned, unsigned>




def detectInnermostGrouping(graph: Graph, t: Tensor) -> int:
    """The grouping of ``t``'s innermost dimension: the greatest common divisor of the longest
    contiguous run at the start of its first line and the longest interval on one tile, if it
    divides the dimension (else 1). 1 for no grouping (and for an empty tensor); a rank-0 tensor
    raises PoplibsError, as PopLibs."""
    what = "detectInnermostGrouping"
    t0 = tensorArgument(graph, t, f"{what}: t")
    if t0.rank() == 0:
        raise PoplibsError(f"{what}: cannot detect the grouping of the 0-rank tensor '{t0.name}'")
    if t0.numElements() == 0:
        return 1
    line = t0
    while line.rank() != 1:
        line = line[0]
    lower, upper = 1, line.numElements()  # the longest contiguous prefix, by binary search
    while lower != upper:
        mid = upper - (upper - lower) // 2
        if line.slice(0, mid).isContiguous():
            lower = mid
        else:
            upper = mid - 1
    begin, end, _ = graph.tile_intervals(line)
    longest = int((end - begin).max()) if begin.size else 0
    grouping = math.gcd(longest, upper)
    if grouping == 0 or line.numElements() % grouping:
        return 1
    return grouping


def detectDimGroupings(graph: Graph, t: Tensor) -> list[tuple[int, int]]:
    """Every grouping of ``t``, innermost first, as (dimension, grouping) pairs: the dimension
    whose grouping (with those found before) is largest, then again on the rest of that dimension,
    until none is left. The same dimension may appear more than once (channels grouped by 4 within
    groups of 16)."""
    what = "detectDimGroupings"
    t = tensorArgument(graph, t, f"{what}: t")
    if t.rank() == 0:
        raise PoplibsError(f"{what}: cannot detect the groupings of the 0-rank tensor '{t.name}'")
    info: list[tuple[int, int]] = []
    dims = t.rank()
    grouped = t
    total = 1
    while True:
        grouping, grouped_dim = 1, 0
        for d in range(dims):
            if grouped.dim(d) == 1:
                continue
            permutation = grouped.dimRoll(d, dims - 1).flatten(dims - 1, grouped.rank())
            g = detectInnermostGrouping(graph, permutation)
            this = 1 if g % total else g // total
            this = math.gcd(this, grouped.dim(d))
            if this > grouping:
                grouped_dim, grouping = d, this
        if grouping == 1:
            break
        info.append((grouped_dim, grouping))
        total *= grouping
        size = grouped.dim(grouped_dim)
        grouped = grouped.reshapePartial(grouped_dim, grouped_dim + 1, [size // grouping, grouping]) \
            .dimRoll(grouped_dim + 1, dims)
    return info


def _partition_bounds(size: int, parts: int) -> int:
    return -(-size // parts)


def createPartitionableTensor(graph: Graph, type: Any, shape: Sequence[int],  # noqa: A002 (PopLibs' name)
                              nPartitions: Sequence[int], debugContext: Any = "") -> Tensor:
    """A tensor of ``shape`` such that each partition of it (``nPartitions[d]`` parts of
    ``ceil(shape[d] / nPartitions[d])`` indices in each dimension d, the last ones shorter) is one
    contiguous region: as few variables as that allows (2 to the number of dimensions that do not
    divide evenly), each holding its partitions one after another. It has no tile mapping."""
    what = "createPartitionableTensor"
    dims = indexList(shape, f"{what}: shape")
    parts = indexList(nPartitions, f"{what}: nPartitions")
    type_ = asType(type)
    di = PoplibsOpDebugInfo(debugContext, {"type": type_, "shape": dims, "nPartitions": parts}, what)
    name = di.getPathName() or "partitionable"
    if len(dims) != len(parts):
        raise PoplibsError(f"{what}: shape {dims} has {len(dims)} dimensions but nPartitions {parts} has "
                           f"{len(parts)}")
    if any(d == 0 for d in dims):
        return graph.addVariable(type_, dims, name)
    if not dims:
        return graph.addVariable(type_, dims, name)
    for d, p in enumerate(parts):
        if p == 0:
            raise PoplibsError(f"{what}: nPartitions[{d}] is 0; each dimension needs at least one partition")
    var_sizes: list[list[int]] = []
    per_split: list[list[int]] = []
    for size, p in zip(dims, parts):
        each = _partition_bounds(size, p)
        rem = size % each
        var_sizes.append([size - rem] + ([rem] if rem else []))
        per_split.append([each] + ([rem] if rem else []))
    rank = len(dims)
    variables: list[Tensor] = []
    # every combination of the sizes, the first dimension's index changing fastest (PopLibs' order)
    for flat in range(math.prod(len(v) for v in var_sizes)):
        idx, rest = [], flat
        for v in var_sizes:
            rest, i = divmod(rest, len(v))
            idx.append(i)
        permuted = [var_sizes[d][idx[d]] for d in range(rank)]
        split_shape = [permuted[d] // per_split[d][idx[d]] for d in range(rank)] + \
                      [per_split[d][idx[d]] for d in range(rank)]
        inverse = [x for d in range(rank) for x in (d, rank + d)]
        v = graph.addVariable(type_, split_shape, f"{name}.part{flat}" if flat else name)
        variables.append(v.dimShuffle(inverse).reshape(permuted))
    dim, partials = rank - 1, len(variables)
    while True:  # join the pieces, innermost dimension first
        factor = len(var_sizes[dim])
        following = partials // factor
        for i in range(following):
            variables[i] = concat([variables[o * following + i] for o in range(factor)], dim)
        partials = following
        if partials == 1:
            break
        dim -= 1
    result = variables[0]
    di.addOutput(result)
    return result


def iterateTensorPartitions(t: Tensor, nPartitions: Sequence[int],
                            f: Callable[[list[int], Tensor], Any]) -> None:
    """Call ``f(indices, slice)`` for each partition of ``t`` (as in
    :func:`createPartitionableTensor`), the first dimension's index changing fastest."""
    what = "iterateTensorPartitions"
    if not isinstance(t, Tensor):
        raise PoplibsArgumentError(f"{what}: t must be a tensor, got {type(t).__name__} {t!r:.40}")
    parts = indexList(nPartitions, f"{what}: nPartitions")
    if t.rank() != len(parts):
        raise PoplibsError(f"{what}: tensor '{t.name}' has rank {t.rank()} but nPartitions {parts} has "
                           f"{len(parts)} entries")
    if not callable(f):
        raise PoplibsArgumentError(f"{what}: f must be callable, got {type(f).__name__}")
    for d, p in enumerate(parts):
        if p == 0:
            raise PoplibsError(f"{what}: nPartitions[{d}] is 0; each dimension needs at least one partition")
    shape = t.shape()
    for flat in range(math.prod(parts)):
        idx, rest = [], flat
        for p in parts:
            rest, i = divmod(rest, p)
            idx.append(i)
        piece = t
        for d, size in enumerate(shape):
            each = _partition_bounds(size, parts[d]) if size else 0
            piece = piece.slice(min(idx[d] * each, size), min((idx[d] + 1) * each, size), d)
        f(idx, piece)
