"""Splitting work along a tensor's mapped regions (PopLibs' splitRegions family, Util.hpp).

Vertices are built tile by tile from the intervals of a tensor that live on each
tile, and a tile's elements are shared out between its worker threads. Both overloads of
PopLibs are here: a list of intervals is cut into partitions (lists of intervals); a list of
interval *sequences* (each a list of intervals worked on as one region) into partitions of
sequences.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from poplar_py import Interval, Target

from .errors import PoplibsArgumentError

__all__ = ["intervalSequenceNumElements", "isIntervalSequenceList", "splitRegions",
           "splitRegionsBetweenWorkers"]

UINT_MAX = 2**32 - 1


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _interval(iv: Any, what: str) -> Interval:
    """``iv`` as an Interval: an Interval or a pair ``(begin, end)`` of integers, begin <= end."""
    if isinstance(iv, Interval):
        return iv
    try:
        b, e = iv
        if isinstance(b, (bool, np.bool_)) or isinstance(e, (bool, np.bool_)):
            raise TypeError
        b, e = int(b), int(e)
        if b != iv[0] or e != iv[1]:
            raise TypeError
    except (TypeError, ValueError):
        raise PoplibsArgumentError(f"{what}: an interval must be an Interval or a pair (begin, end) of "
                                   f"integers, got {iv!r:.60}") from None
    if not 0 <= b <= e:
        raise PoplibsArgumentError(f"{what}: interval [{b}, {e}) must have 0 <= begin <= end")
    return Interval(b, e)


def _is_interval(x: Any) -> bool:
    """An Interval, or a pair of integers written as a tuple, a list or an array."""
    return isinstance(x, Interval) or (isinstance(x, (tuple, list, np.ndarray)) and len(x) == 2
                                       and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                               for v in x))


def isIntervalSequenceList(regions: Any) -> bool:
    """Whether ``regions`` is a list of interval sequences (lists of intervals) rather than a
    list of intervals: what picks the overload of splitRegions and mergeAdjacentRegions."""
    for item in regions:
        return not _is_interval(item)
    return False


def intervals(regions: Any, what: str) -> list[Interval]:
    """A list of intervals, checked."""
    if isinstance(regions, (str, bytes)) or not isinstance(regions, (Sequence, np.ndarray)):
        raise PoplibsArgumentError(f"{what}: regions must be a list of intervals, got "
                                   f"{type(regions).__name__} {regions!r:.60}")
    return [_interval(iv, what) for iv in regions]


def sequences(regions: Any, what: str) -> list[list[Interval]]:
    """A list of interval sequences (lists of intervals), checked."""
    if isinstance(regions, (str, bytes)) or not isinstance(regions, (Sequence, np.ndarray)):
        raise PoplibsArgumentError(f"{what}: regions must be a list of interval lists, got "
                                   f"{type(regions).__name__} {regions!r:.60}")
    return [intervals(seq, what) for seq in regions]


def _split(items: list[Any], size: Callable[[Any], int], extend: Callable[[list[Any], Any, int, int], None],
           grainSize: Any, maxPartitions: Any, minElementsPerPartition: Any, maxElementsPerPartition: Any,
           maxElementsPerRegion: Any, what: str) -> list[list[Any]]:
    """The partitions of ``items`` (regions, or sequences of regions): at most ``maxPartitions``
    of one size (a multiple of the grain) filled in order, the last shorter; items are cut where
    a partition ends and into pieces of at most ``maxElementsPerRegion`` elements."""
    values = {}
    for name, value in (("grainSize", grainSize), ("maxPartitions", maxPartitions),
                        ("minElementsPerPartition", minElementsPerPartition),
                        ("maxElementsPerPartition", maxElementsPerPartition),
                        ("maxElementsPerRegion", maxElementsPerRegion)):
        if value is None and name.startswith("max") and name != "maxPartitions":
            value = UINT_MAX
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 0:
            raise PoplibsArgumentError(f"{what}: {name} must be a non-negative integer, got {value!r:.40}")
        values[name] = int(value)
    grain = max(values["grainSize"], 1)
    max_region = values["maxElementsPerRegion"]
    if max_region >= grain:  # pieces keep to whole grains, as PopLibs'
        max_region = grain * (max_region // grain)
    max_region = max(max_region, 1)
    total = sum(size(item) for item in items)
    if total == 0 or values["maxPartitions"] < 1:
        return []
    grains = _ceil_div(total, grain)
    per = _ceil_div(grains, values["maxPartitions"])
    min_grains = _ceil_div(values["minElementsPerPartition"], grain)
    if min_grains:
        per = max(per, _ceil_div(grains, max(1, grains // min_grains)))
    per = max(1, min(per, max(values["maxElementsPerPartition"] // grain, 1)))
    partitions: list[list[Any]] = []
    budget = per * grain
    current: list[Any] = []
    room = budget
    for item in items:
        offset, n = 0, size(item)
        while offset < n:
            take = min(n - offset, room, max_region)
            extend(current, item, offset, take)
            offset += take
            room -= take
            if room == 0:
                partitions.append(current)
                current, room = [], budget
    if current:
        partitions.append(current)
    return partitions


def _extend_interval(part: list[Interval], iv: Interval, offset: int, n: int) -> None:
    part.append(Interval(iv.begin() + offset, iv.begin() + offset + n))


def _sequence_size(seq: list[Interval]) -> int:
    return sum(iv.size() for iv in seq)


def _extend_sequence(part: list[list[Interval]], seq: list[Interval], offset: int, n: int) -> None:
    piece: list[Interval] = []
    for iv in seq:
        if offset >= iv.size():
            offset -= iv.size()
            continue
        take = min(iv.size() - offset, n)
        if take:
            piece.append(Interval(iv.begin() + offset, iv.begin() + offset + take))
        n -= take
        offset = 0
        if n == 0:
            break
    part.append(piece)


def splitRegions(regions: Sequence[Any], grainSize: int, maxPartitions: int,
                 minElementsPerPartition: int = 0, maxElementsPerPartition: int | None = None,
                 maxElementsPerRegion: int | None = None) -> list[list[Any]]:
    """Cut ``regions`` into at most ``maxPartitions`` partitions of nearly equal size.

    ``regions`` is a list of intervals (each an Interval or a pair ``(begin, end)``): the result
    is a list of partitions, each a list of intervals. Or it is a list of interval sequences
    (lists of intervals, each a region made of pieces): each partition is then a list of interval
    sequences.

    Partition sizes are multiples of ``grainSize`` (except where the regions end), at least
    ``minElementsPerPartition`` elements where possible (fewer partitions then) and at most
    ``maxElementsPerPartition`` (a multiple of the grain); partitions are filled in order, all of
    one size but the last; regions are split as needed, and no piece is longer than
    ``maxElementsPerRegion`` (rounded down to whole grains). Empty partitions are dropped.
    """
    what = "splitRegions"
    if isIntervalSequenceList(regions):
        return _split(sequences(regions, what), _sequence_size, _extend_sequence, grainSize, maxPartitions,
                      minElementsPerPartition, maxElementsPerPartition, maxElementsPerRegion, what)
    return _split(intervals(regions, what), Interval.size, _extend_interval, grainSize, maxPartitions,
                  minElementsPerPartition, maxElementsPerPartition, maxElementsPerRegion, what)


def splitRegionsBetweenWorkers(target: Target, regions: Sequence[Any], grainSize: int,
                               minElementsPerPartition: int = 0, maxElementsPerPartition: int | None = None,
                               maxElementsPerRegion: int | None = None) -> list[list[Any]]:
    """``splitRegions`` over the tile's worker contexts (at most ``target.getNumWorkerContexts()``
    partitions): either overload, intervals or interval sequences."""
    if not isinstance(target, Target):
        raise PoplibsArgumentError(f"splitRegionsBetweenWorkers: target must be a poplar Target, got "
                                   f"{type(target).__name__} {target!r:.40}")
    return splitRegions(regions, grainSize, target.getNumWorkerContexts(), minElementsPerPartition,
                        maxElementsPerPartition, maxElementsPerRegion)


def intervalSequenceNumElements(seq: Sequence[Sequence[Any]]) -> int:
    """The number of elements in a list of interval sequences."""
    return sum(_sequence_size(s) for s in sequences(seq, "intervalSequenceNumElements"))
