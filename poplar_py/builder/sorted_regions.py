"""Graph.getSortedContiguousRegions: intervals of a tensor grouped by where they lie in memory.

A variable's elements lie in memory in row-major order, each tile's part of it in one block; so
elements that are consecutive in one variable are consecutive in memory wherever they are on
one tile. Libraries use the groups to give a vertex few, long regions to walk.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..checks.arguments import checked_bool, checked_intervals
from ..errors import InvalidArgumentError
from ..interval import Interval
from ..regions.arrays import expand_ranges
from ..tensor import Tensor

_I64 = np.int64


def sorted_contiguous_regions(t: Tensor, regions: Any, removeAliasedIntervals: Any = False,
                              aliases: list[int] | None = None) -> list[list[Interval]]:
    """The elements of ``t`` (flattened) that ``regions`` name, as sequences of intervals of
    ``t``, each sequence's elements consecutive in one variable (so in memory), the sequences
    in memory order (by variable, then position in it). ``removeAliasedIntervals``: an element of
    memory named more than once (an aliased element of ``t``, or regions overlapping) appears
    once, where ``t`` names it first (its lowest flattened index); ``aliases``, given a list, is
    filled with, for each interval so removed (in memory order), the index (counting the
    result's intervals in order) of the interval holding the first element it aliases. Without
    it, the further namings form sequences of their own, after the first's."""
    what = "getSortedContiguousRegions"
    remove = checked_bool(removeAliasedIntervals, f"{what}: removeAliasedIntervals")
    if aliases is not None and not isinstance(aliases, list):
        raise InvalidArgumentError(f"{what}: aliases must be a list to fill, got {type(aliases).__name__} "
                                   f"{aliases!r:.40}")
    pairs = checked_intervals([regions], f"{what}: regions")[0]
    n = t.numElements()
    begin = np.asarray([b for b, _ in pairs], _I64).reshape(-1)
    end = np.asarray([e for _, e in pairs], _I64).reshape(-1)
    bad = np.flatnonzero((begin < 0) | (begin > end) | (end > n))
    if bad.size:
        raise InvalidArgumentError(f"{what}: the region {pairs[int(bad[0])]} is not an interval of tensor "
                                   f"'{t.name}' (of {n} elements)")
    pos = expand_ranges(begin, end - begin)[1]
    var, offset = t.runs().elements()
    var, offset = var[pos], offset[pos]
    gid = t.variables.bases[var] + offset
    order = np.lexsort((pos, gid))  # memory order; an element named twice, first where t names it first
    pos, var, gid = pos[order], var[order], gid[order]
    first = np.ones(pos.size, bool)
    first[1:] = gid[1:] != gid[:-1]
    # the k-th naming of each element: layer k, whose elements are distinct
    layer = np.arange(pos.size) - np.maximum.accumulate(np.where(first, np.arange(pos.size), 0))
    kept = _sequences(pos[first], var[first], gid[first])
    out = [seq for _, seq in kept]
    if not remove:
        for k in range(1, int(layer.max(initial=0)) + 1):
            mine = layer == k
            kept += _sequences(pos[mine], var[mine], gid[mine])
        kept.sort(key=lambda pair: pair[0])  # (stable: a first naming before the repeats)
        out = [seq for _, seq in kept]
    if aliases is not None:
        aliases.clear()
        if remove and not first.all():
            # the result's intervals by their first elements' ids (increasing: memory order)
            gid_at = dict(zip(pos[first].tolist(), gid[first].tolist()))
            starts = np.asarray([gid_at[iv.begin()] for seq in out for iv in seq], _I64)
            again = ~first
            r_pos, r_gid = pos[again], gid[again]
            breaks = (r_pos[1:] != r_pos[:-1] + 1) | (r_gid[1:] != r_gid[:-1] + 1)
            aliased = r_gid[np.flatnonzero(np.concatenate(([True], breaks)))]
            aliases.extend((np.searchsorted(starts, aliased, side="right") - 1).tolist())
    return out


def _sequences(pos: np.ndarray, var: np.ndarray, gid: np.ndarray) -> list[tuple[int, list[Interval]]]:
    """Distinct elements in memory order (positions in t, variables, global ids) as sequences of
    intervals of t, each with its first element's id: a sequence breaks where memory does (another
    variable, or a gap), an interval also where t's positions do."""
    new_seq = np.ones(pos.size, bool)
    new_seq[1:] = (var[1:] != var[:-1]) | (gid[1:] != gid[:-1] + 1)
    new_iv = new_seq.copy()
    new_iv[1:] |= pos[1:] != pos[:-1] + 1
    starts = np.flatnonzero(new_iv)
    ends = np.append(starts[1:], pos.size)
    seq_of = np.cumsum(new_seq)[starts] - 1
    out: list[tuple[int, list[Interval]]] = [(int(g), []) for g in gid[new_seq].tolist()]
    for k, a, b in zip(seq_of.tolist(), starts.tolist(), ends.tolist()):
        out[k][1].append(Interval(int(pos[a]), int(pos[b - 1]) + 1))
    return out
