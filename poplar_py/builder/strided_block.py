"""One strided block of one variable: the arithmetic of the common views.

Nearly every view is a block: an offset and one stride per dimension, as a numpy view
is. These functions work on its ``(shape, strides)`` alone: the strides of a new
variable, whether a reshape keeps it one block, its elements as runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..regions.runs import Runs
from . import box_views as bx


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The strides of a whole variable of ``shape`` (row-major; 0 on dimensions of size 1)."""
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step if d > 1 else 0)
        step *= d
    return tuple(reversed(strides))


def nocopy_strides(old: Sequence[int], strides: Sequence[int], new: Sequence[int]) -> tuple[int, ...] | None:
    """Strides viewing a block of shape ``old`` as shape ``new`` without copying, or None
    (numpy's rule: merged dimensions must continue each other in memory)."""
    if math.prod(new) == 0:
        return (0,) * len(new)
    dims = [(d, s) for d, s in zip(old, strides) if d != 1]
    if [d for d in new if d != 1] == [d for d, _ in dims]:  # dimensions of size 1 added or dropped
        kept = iter(dims)
        return tuple(next(kept)[1] if d != 1 else 0 for d in new)
    out = [0] * len(new)
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < len(new) and oi < len(dims):
        np_, op = new[ni], dims[oi][0]
        while np_ != op:
            if np_ < op:
                np_ *= new[nj]
                nj += 1
            else:
                op *= dims[oj][0]
                oj += 1
        for k in range(oi, oj - 1):
            if dims[k][1] != dims[k + 1][0] * dims[k + 1][1]:
                return None
        out[nj - 1] = dims[oj - 1][1]
        for k in range(nj - 1, ni, -1):
            out[k - 1] = out[k] * new[k]
        ni, nj, oi, oj = nj, nj + 1, oj, oj + 1
    return tuple(s if d != 1 else 0 for d, s in zip(new, out))


def join(blocks: Sequence[tuple[int, int, tuple[int, ...], tuple[int, ...]]],
         d: int) -> tuple[int, int, tuple[int, ...]] | None:
    """``(var, offset, strides)`` of the one block that blocks ``(var, offset, shape, strides)``
    of one shape but along ``d`` make one after the other along ``d`` (rows ``3:4`` and ``4:6``,
    or ``3:4`` and ``7:8`` of a matrix: its elements along ``d`` one arithmetic sequence of one
    variable, the other strides alike), or None."""
    parts = [b for b in blocks if 0 not in b[2]]
    if not parts:
        return None
    var, offset, shape, strides = parts[0]
    others = [k for k, n in enumerate(shape) if n > 1 and k != d]
    steps = set()
    last = None
    for v, o, sh, st in parts:
        if v != var or any(st[k] != strides[k] for k in others):
            return None
        if last is not None:
            steps.add(o - last)
        n = sh[d]
        if n > 1:
            steps.add(st[d])
        last = o + (n - 1) * st[d]
    if len(steps) > 1:
        return None
    step = steps.pop() if steps else 0
    joined = shape[:d] + (sum(b[2][d] for b in parts),) + shape[d + 1:]
    return var, offset, tuple(step if k == d else strides[k] if n > 1 else 0 for k, n in enumerate(joined))


def block_runs(var: int, offset: int, shape: tuple[int, ...], strides: tuple[int, ...]) -> Runs:
    """The runs of one strided block, in flattened order: trailing dimensions that continue
    each other in memory form one run, the leading ones enumerate the runs."""
    n = len(shape)
    if n == 0:
        return Runs.single(var, offset, 1, 1)
    if math.prod(shape) == 0:
        return Runs.single(var, offset, 0, 1)
    k, count, stride = n - 1, shape[-1], strides[-1]
    while k > 0:
        size, s = shape[k - 1], strides[k - 1]
        if size != 1 and count != 1 and s != count * stride:
            break
        if count == 1:
            stride = s
        count *= size
        k -= 1
    lead = math.prod(shape[:k])
    if lead == 1:
        return Runs.single(var, offset, count, stride)
    if lead > 256:
        return bx.to_runs(bx.block(var, offset, shape, strides), shape)
    offsets = [offset]
    for size, s in zip(shape[:k], strides[:k]):
        offsets = [o + i * s for o in offsets for i in range(size)]
    stride = stride if count > 1 else 1
    return Runs.make(np.full(lead, var), offsets, np.full(lead, count), np.full(lead, stride))
