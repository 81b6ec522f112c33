"""Tensor's indexing and slicing: ``t[...]``, ``index`` and ``slice``, each one strided block
when it can be (a view's arithmetic is :mod:`strided_block`'s), else boxes (:mod:`box_views`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..checks.arguments import checked_ints, is_int
from ..errors import TensorArgumentError
from ..interval import Interval
from . import box_views as bx
from .view_names import INDEX, RANGE, SLICE

if TYPE_CHECKING:  # (tensor.Tensor is made of this mixin)
    from ..tensor import Tensor

_BOUNDS = (int, type(None))  # the types of a slice's bounds that take the fast path


class TensorIndexing:
    """The indexing and slicing part of :class:`~poplar_py.tensor.Tensor`, a mixin."""

    def __getitem__(self, key: object) -> Tensor:
        shape = self._shape
        if type(key) is int and self._var >= 0 and shape and -shape[0] <= key < shape[0]:
            strides = self._strides  # the common case, fast
            return type(self)(self._vars, self._type, shape[1:], self._var,
                              self._offset + (key + shape[0] if key < 0 else key) * strides[0], strides[1:],
                              (self._name, INDEX, key))
        if type(key) is slice and self._var >= 0 and shape and key.step is None \
                and type(key.start) in _BOUNDS and type(key.stop) in _BOUNDS:  # rows: fast too
            begin, end, _ = key.indices(shape[0])
            size = max(end - begin, 0)
            strides = tuple(s if n > 1 else 0 for n, s in zip((size, *shape[1:]), self._strides))
            return type(self)(self._vars, self._type, (size, *shape[1:]), self._var,
                              self._offset + begin * self._strides[0], strides,
                              (self._name, RANGE, "" if key.start is None else key.start,
                               "" if key.stop is None else key.stop))
        if type(key) is tuple and self._var >= 0 and len(key) <= len(shape):
            view = self._block_index(key)
            if view is not None:
                return view
        if type(key) is int and self._var < 0 and len(shape) == 1 and -shape[0] <= key < shape[0]:
            return self._element(key + shape[0] if key < 0 else key, f"{self.name}[{key}]")
        keys = key if isinstance(key, tuple) else (key,)
        if len(keys) > len(self._shape):
            raise self._error(f"too many indices ({len(keys)}) for a rank-{len(self._shape)} tensor")
        lo, hi, steps, dropped, parts = [], [], [], [], []
        for axis, k in enumerate(keys):
            size = self._shape[axis]
            if is_int(k):
                i = int(k)  # type: ignore[call-overload]
                if not -size <= i < size:
                    raise self._error(f"index {i} is out of range for dimension {axis} of size {size}")
                i = i + size if i < 0 else i
                lo.append(i)
                hi.append(i + 1)
                steps.append(1)
                dropped.append(axis)
                parts.append(str(int(k)))  # type: ignore[call-overload]
            elif isinstance(k, slice):
                if not all(x is None or is_int(x) for x in (k.start, k.stop, k.step)):
                    raise TensorArgumentError(f"tensor '{self.name}': slice {k} needs integer bounds")
                if k.step is not None and k.step <= 0:
                    raise self._error(f"slice step must be positive, got {k.step}")
                start, stop, step = k.indices(size)
                count = len(range(start, stop, step))
                lo.append(start)
                hi.append(start + (count - 1) * step + 1 if count else start)
                steps.append(step)
                parts.append(f"{'' if k.start is None else k.start}:{'' if k.stop is None else k.stop}"
                             + ("" if k.step is None else f":{k.step}"))
            else:
                raise TensorArgumentError(f"tensor '{self.name}': cannot index with {k!r:.40}; "
                                           "use integers and slices")
        name = self._op_name("[" + ",".join(parts) + "]") if isinstance(key, tuple) else \
            (self._name, INDEX, parts[0])
        return self._select(lo, hi, steps, dropped, name)

    def _block_index(self, keys: tuple) -> Tensor | None:
        """``self[keys]`` of a block by integers in range and slices of step 1 (the common case,
        without the general path's lists), else None."""
        offset, shape, strides, parts = self._offset, [], [], []
        for k, n, s in zip(keys, self._shape, self._strides):
            if type(k) is int and -n <= k < n:
                offset += (k + n if k < 0 else k) * s
                parts.append(str(k))
            elif type(k) is slice and k.step is None and type(k.start) in _BOUNDS and type(k.stop) in _BOUNDS:
                begin, end, _ = k.indices(n)
                size = max(end - begin, 0)
                offset += begin * s
                shape.append(size)
                strides.append(s if size > 1 else 0)
                parts.append(f"{'' if k.start is None else k.start}:{'' if k.stop is None else k.stop}")
            else:
                return None
        rest = len(keys)
        shape += self._shape[rest:]
        strides += [s if n > 1 else 0 for n, s in zip(self._shape[rest:], self._strides[rest:])]
        return type(self)(self._vars, self._type, tuple(shape), self._var, offset, tuple(strides),
                          self._op_name("[" + ",".join(parts) + "]"))

    def _select(self, lo: list[int], hi: list[int], steps: list[int], dropped: list[int],
                name: str | tuple) -> Tensor:
        """Indices ``lo[d] <= i < hi[d]`` by ``steps[d]`` of the leading dimensions; the
        ``dropped`` ones (indexed by an integer) disappear."""
        n = len(self._shape)
        lo = lo + [0] * (n - len(lo))
        hi = hi + list(self._shape[len(hi):])
        steps = steps + [1] * (n - len(steps))
        sizes = [-(-(h - b) // k) for b, h, k in zip(lo, hi, steps)]
        keep = [d for d in range(n) if d not in dropped]
        shape = tuple(sizes[d] for d in keep)
        if self._var >= 0:
            offset = self._offset + sum(b * s for b, s in zip(lo, self._strides))
            strides = tuple(self._strides[d] * steps[d] if sizes[d] > 1 else 0 for d in keep)
            return self._block_view(shape, offset, strides, name)
        if sizes == list(self._shape) and n > 1:  # everything (dropping dimensions of size 1)
            return self._general_view(shape, bx.drop(self._boxes, dropped), name)
        if n == 1 and steps[0] == 1:  # a piece of runs
            if dropped:
                return self._element(lo[0], name)
            return type(self).from_runs(self._vars, self._type, shape, self._runs.take(lo[0], hi[0]), name)
        boxes = bx.window(self._as_boxes(), lo, hi)
        for d, k in enumerate(steps):
            if k > 1:
                boxes = bx.subsample(boxes, d, k)
        return self._general_view(shape, bx.drop(boxes, dropped), name)

    def index(self, indices: Sequence[int]) -> Tensor:
        t = self
        for i in checked_ints(indices, f"index of tensor '{self.name}'"):
            t = t[i]
        return t

    def slice(self, begin, end=None, dim: int = 0) -> Tensor:
        """``t.slice(b, e[, dim])``, ``t.slice(Interval[, dim])`` or ``t.slice([b0, b1], [e0, e1])``."""
        if type(begin) is int and type(end) is int and type(dim) is int and self._var >= 0 \
                and 0 <= dim < len(self._shape) and 0 <= begin <= end <= self._shape[dim]:
            shape = self._shape
            return type(self)(self._vars, self._type, shape[:dim] + (end - begin,) + shape[dim + 1:],
                              self._var, self._offset + begin * self._strides[dim], self._strides,
                              (self._name, SLICE, begin, end, dim))
        if isinstance(begin, Interval) and not isinstance(end, Interval):
            return self.slice(begin.begin(), begin.end(), dim if end is None else end)
        if isinstance(begin, (list, tuple)) or isinstance(end, (list, tuple)):
            what = f"slice of tensor '{self.name}'"
            begin, end = list(checked_ints(begin, what)), list(checked_ints(end, what))
            if len(begin) != len(end) or len(begin) > len(self._shape):
                raise self._error(f"slice begin {begin} and end {end} must have equal lengths "
                                  f"of at most the rank {len(self._shape)}")
            for d, (b, e) in enumerate(zip(begin, end)):
                self._check_bounds(b, e, d)
            return self._select([int(b) for b in begin], [int(e) for e in end], [], [],
                                self._op_name(f"slice({begin},{end})"))
        dim = self._check_dim(dim)
        self._check_bounds(begin, end, dim)
        b, e = int(begin), int(end)
        if self._var >= 0:
            size = e - b
            shape = self._shape[:dim] + (size,) + self._shape[dim + 1:]
            strides = self._strides if size > 1 or self._shape[dim] <= 1 else \
                self._strides[:dim] + (0,) + self._strides[dim + 1:]
            return self._block_view(shape, self._offset + b * self._strides[dim], strides,
                                    self._op_name(f"slice({begin},{end},{dim})"))
        lo = [0] * dim + [b]
        hi = list(self._shape[:dim]) + [e]
        return self._select(lo, hi, [], [], self._op_name(f"slice({begin},{end},{dim})"))

    def _check_bounds(self, begin: object, end: object, dim: int) -> None:
        size = self._shape[dim]
        if not 0 <= self._int(begin, "slice begin") <= self._int(end, "slice end") <= size:
            raise self._error(f"slice [{begin}, {end}) is out of range for dimension {dim} of size {size}")
