"""poputil's general helpers (Util.hpp): interval lists, flat indices, partitions of a range, N clones
of a tensor, casts to the device's half, factored dimensions, unshuffling intervals.

``duplicate`` is in :mod:`.clone`, ``splitRegions`` and ``intervalSequenceNumElements`` in
:mod:`.regions`. PopLibs' deprecated ``createConstantMetadataTensor`` and
``createVariableMetadataTensor`` are for QUARTER (fp8) tensors, a type poplar-py does not have.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from poplar_py import FLOAT, HALF, Graph, Interval, Target, Tensor, TensorCloneMethod, Type, concat

from .debug_info import PoplibsOpDebugInfo
from .errors import PoplibsArgumentError, PoplibsError, indexList, tensorArgument
from .regions import intervals, isIntervalSequenceList, sequences

__all__ = ["balancedPartition", "calculateUnshufflingIntervals", "castToDeviceHalfValue",
           "checkAccuracyWhenCast", "cloneN", "factorDims", "flattenIndex", "flattenIntervals",
           "mergeAdjacentRegions", "unfactorDims", "unflattenIndex"]


def _merged(regions: list[Interval], what: str) -> list[Interval]:
    out: list[Interval] = []
    for iv in sorted(regions):
        if iv.begin() == iv.end():
            continue
        if out and out[-1].end() > iv.begin():
            raise PoplibsError(f"{what}: intervals {out[-1]!r} and {iv!r} overlap")
        if out and out[-1].end() == iv.begin():
            out[-1] = Interval(out[-1].begin(), iv.end())
        else:
            out.append(iv)
    return out


def mergeAdjacentRegions(regions: list[Any]) -> list[Any]:
    """Sort a list of intervals, drop the empty ones and join those that touch; or do so for
    each list of a tile mapping (a list of interval lists). As in C++ the list is changed in
    place; it is also returned. Overlapping intervals raise PoplibsError."""
    what = "mergeAdjacentRegions"
    if not isinstance(regions, list):
        raise PoplibsArgumentError(f"{what}: regions must be a list (changed in place), got "
                                   f"{type(regions).__name__} {regions!r:.40}")
    if isIntervalSequenceList(regions):
        for i, tile in enumerate(sequences(regions, what)):
            if isinstance(regions[i], list):
                regions[i][:] = _merged(tile, what)
            else:
                regions[i] = _merged(tile, what)
    else:
        regions[:] = _merged(intervals(regions, what), what)
    return regions


def flattenIntervals(intervalLists: Sequence[Sequence[Any]]) -> list[Interval]:
    """The intervals of a list of interval lists, in order, as one list."""
    return [iv for seq in sequences(intervalLists, "flattenIntervals") for iv in seq]




def unflattenIndex(shape: Sequence[int], index: int) -> list[int]:
    """The indices, one per dimension of ``shape``, of element ``index`` of the flattened tensor
    (row-major, as numpy's ``unravel_index``)."""
    what = "unflattenIndex"
    dims = indexList(shape, f"{what}: shape")
    if isinstance(index, (bool, np.bool_)) or not isinstance(index, (int, np.integer)):
        raise PoplibsArgumentError(f"{what}: index must be an integer, got {type(index).__name__} "
                                   f"{index!r:.40}")
    n = int(np.prod(dims, dtype=object)) if dims else 1
    if not 0 <= index < n:
        raise PoplibsArgumentError(f"{what}: index {index} is outside a shape {dims} of {n} elements")
    coord, rest = [0] * len(dims), int(index)
    for i in range(len(dims) - 1, -1, -1):
        rest, coord[i] = divmod(rest, dims[i])
    return coord


def flattenIndex(shape: Sequence[int], indices: Sequence[int]) -> int:
    """The index in the flattened tensor of the element at ``indices`` of a tensor of ``shape``
    (row-major, as numpy's ``ravel_multi_index``)."""
    what = "flattenIndex"
    dims, idx = indexList(shape, f"{what}: shape"), indexList(indices, f"{what}: indices")
    if len(idx) != len(dims):
        raise PoplibsArgumentError(f"{what}: {len(idx)} indices {idx} for a shape {dims} of rank {len(dims)}")
    index = 0
    for d, (size, i) in enumerate(zip(dims, idx)):
        if i >= size:
            raise PoplibsArgumentError(f"{what}: index {i} of dimension {d} is outside its size {size} "
                                       f"(shape {dims})")
        index = index * size + i
    return index


def cloneN(graph: Graph, t: Tensor, N: int, debugContext: Any = "",
           method: TensorCloneMethod = TensorCloneMethod.PRESERVE_ORDER_UNLESS_ALIASES) -> Tensor:
    """A tensor of shape ``[N, *t.shape()]`` whose N slices are clones of ``t``: each mapped as
    ``t`` is (same tiles, same layout), each a variable of its own."""
    what = "cloneN"
    t = tensorArgument(graph, t, f"{what}: t")
    if isinstance(N, (bool, np.bool_)) or not isinstance(N, (int, np.integer)) or N < 0:
        raise PoplibsArgumentError(f"{what}: N must be a non-negative integer, got {N!r:.40}")
    if not isinstance(method, TensorCloneMethod):
        raise PoplibsArgumentError(f"{what}: method must be a TensorCloneMethod, got {method!r:.40}")
    di = PoplibsOpDebugInfo(debugContext, {"t": t, "N": int(N), "method": method}, what)
    base = di.getPathName() or t.name
    if N == 0:
        return graph.addVariable(t.elementType(), [0, *t.shape()], f"{base}.clones")
    result = concat([graph.clone(t, f"{base}.clone{i}", method).expand([0]) for i in range(int(N))], 0)
    di.addOutput(result)
    return result


def balancedPartition(rangeUpperBound: int, splitCount: int) -> list[int]:
    """The sizes of ``splitCount`` slices of ``[0, rangeUpperBound)`` as even as can be: the first
    ``rangeUpperBound % splitCount`` slices get one more."""
    what = "balancedPartition"
    for name, v in (("rangeUpperBound", rangeUpperBound), ("splitCount", splitCount)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 0:
            raise PoplibsArgumentError(f"{what}: {name} must be a non-negative integer, got {v!r:.40}")
    if splitCount == 0:
        raise PoplibsArgumentError(f"{what}: splitCount must be at least 1")
    q, r = divmod(int(rangeUpperBound), int(splitCount))
    return [q + 1 if i < r else q for i in range(int(splitCount))]


def castToDeviceHalfValue(target: Target, input: float) -> float:  # noqa: A002 (PopLibs' name)
    """``input`` as the device's HALF would hold it (rounded to float, then to half), as a float."""
    if not isinstance(target, Target):
        raise PoplibsArgumentError(f"castToDeviceHalfValue: target must be a poplar Target, got "
                                   f"{type(target).__name__}")
    if isinstance(input, (bool, np.bool_)) or not isinstance(input, (int, float, np.integer, np.floating)):
        raise PoplibsArgumentError(f"castToDeviceHalfValue: input must be a number, got {input!r:.40}")
    with np.errstate(over="ignore"):
        return float(np.float16(np.float32(input)))


def checkAccuracyWhenCast(target: Target, input: float, inputType: Type, outputType: Type,  # noqa: A002
                          tolerance: float) -> bool:
    """Whether casting ``input`` from ``inputType`` to ``outputType`` keeps it within the relative
    ``tolerance`` (FLOAT to HALF; HALF to FLOAT is always exact). Other pairs of types raise
    PoplibsError, as PopLibs."""
    if inputType == FLOAT and outputType == HALF:
        as_float = float(np.float32(input))
        as_half = castToDeviceHalfValue(target, as_float)
        return abs(as_float) * float(tolerance) > abs(as_half - as_float)
    if inputType == HALF and outputType == FLOAT:
        return True
    raise PoplibsError(f"checkAccuracyWhenCast: can only check the accuracy when casting float to half or "
                       f"half to float, not {inputType} to {outputType}")


def factorDims(t: Tensor, factors: Sequence[int], startDim: int = 0) -> Tensor:
    """Each dimension ``startDim + d`` of ``t`` split into ``size / factors[d]`` and ``factors[d]``,
    the outer parts first, then the factors: shape [4, 6, 4] with factors [1, 2] becomes
    [4, 3, 1, 2, 4]. A view of ``t``."""
    what = "factorDims"
    if not isinstance(t, Tensor):
        raise PoplibsArgumentError(f"{what}: t must be a tensor, got {type(t).__name__} {t!r:.40}")
    fs = indexList(factors, f"{what}: factors")
    start = indexList([startDim], f"{what}: startDim")[0]
    n = len(fs)
    if start + n > t.rank():
        raise PoplibsArgumentError(f"{what}: {n} factors from dimension {start} do not fit tensor "
                                   f"'{t.name}' of rank {t.rank()}")
    shape: list[int] = []
    for d, f in enumerate(fs):
        size = t.dim(start + d)
        if f == 0 or size % f:
            raise PoplibsError(f"{what}: factor {f} does not divide dimension {start + d} (size {size}) of "
                               f"tensor '{t.name}'")
        shape += [size // f, f]
    dest = list(range(start, start + 2 * n))
    source = [dest[2 * d] for d in range(n)] + [dest[2 * d + 1] for d in range(n)]
    return t.reshapePartial(start, start + n, shape).dimShufflePartial(source, dest)


def unfactorDims(t: Tensor, numDims: int, startDim: int = 0) -> Tensor:
    """The inverse of :func:`factorDims`: ``2 * numDims`` dimensions from ``startDim`` (the outer
    parts, then the factors) joined back into ``numDims``."""
    what = "unfactorDims"
    if not isinstance(t, Tensor):
        raise PoplibsArgumentError(f"{what}: t must be a tensor, got {type(t).__name__} {t!r:.40}")
    n, start = indexList([numDims, startDim], f"{what}: numDims and startDim")
    if start + 2 * n > t.rank():
        raise PoplibsArgumentError(f"{what}: {2 * n} dimensions from dimension {start} do not fit tensor "
                                   f"'{t.name}' of rank {t.rank()}")
    dest = list(range(start, start + 2 * n))
    source = [0] * (2 * n)
    for d in range(n):
        source[2 * d], source[2 * d + 1] = dest[d], dest[n + d]
    t = t.dimShufflePartial(source, dest)
    shape = [t.dim(start + 2 * d) * t.dim(start + 2 * d + 1) for d in range(n)]
    return t.reshapePartial(start, start + 2 * n, shape)


def calculateUnshufflingIntervals(shuffle: Sequence[Any]) -> list[Interval]:
    """The intervals that undo a shuffle: if ``s = concat(t.slices(shuffle))``, then
    ``concat(s.slices(calculateUnshufflingIntervals(shuffle)))`` is ``t`` again. The intervals of
    ``shuffle`` must not overlap and must together cover one interval."""
    ivs = intervals(shuffle, "calculateUnshufflingIntervals")
    order = sorted(range(len(ivs)), key=lambda i: ivs[i].begin())
    rank = [0] * len(ivs)
    for position, i in enumerate(order):
        rank[i] = position
    out: list[Interval] = [Interval(0, 0)] * len(ivs)
    start = 0
    for i, iv in enumerate(ivs):
        out[rank[i]] = Interval(start, start + iv.size())
        start += iv.size()
    return out
