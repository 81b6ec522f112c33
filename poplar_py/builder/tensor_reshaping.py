"""Tensor's reshaping and element rearrangement: ``reshape``, ``flatten``, ``dimShuffle`` and
friends, ``expand``, ``squeeze``, ``broadcast``, ``upsample``, ``subSample``, ``reverse``,
``reinterpret``."""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..checks.arguments import checked_ints, checked_shape
from ..errors import PoplarTypeError
from ..types import Type, asType
from . import box_views as bx
from . import strided_block
from .view_names import shape_str

if TYPE_CHECKING:  # (tensor.Tensor is made of this mixin)
    from ..tensor import Tensor


class UpsampleMethod(enum.Enum):
    REPEAT = "REPEAT"


class TensorReshaping:
    """The reshaping and rearranging part of :class:`~poplar_py.tensor.Tensor`, a mixin."""

    def reshape(self, shape: Sequence[int]) -> Tensor:
        new = checked_ints(shape, f"reshape of tensor '{self.name}'")
        if any(d < 0 for d in new) or math.prod(new) != self.numElements():
            raise self._error(f"cannot reshape {self.numElements()} elements to {shape_str(new)}")
        return self._reshaped(new, self._op_name(f"reshape({shape_str(new)})"))

    def _reshaped(self, new: tuple[int, ...], name: str | tuple) -> Tensor:
        if self._var >= 0:
            strides = strided_block.nocopy_strides(self._shape, self._strides, new)
            if strides is not None:
                return self._block_view(new, self._offset, strides, name)
        if len(new) <= 1:
            view = type(self).from_runs(self._vars, self._type, new, self.runs(), name)
        else:
            view = self._general_view(new, bx.from_runs(self.runs(), new), name)
        return view._reordering(self)

    def _element(self, i: int, name: str | tuple) -> Tensor:
        """Element ``i`` of a tensor of rank 1 held as runs, as a scalar view."""
        runs = self._runs
        starts = runs.starts()
        k = int(np.searchsorted(starts, i, side="right")) - 1
        offset = int(runs.offset[k]) + (i - int(starts[k])) * int(runs.stride[k])
        return type(self)(self._vars, self._type, (), int(runs.var[k]), offset, (), name)

    def reshapePartial(self, begin: int, end: int, newDims: Sequence[int]) -> Tensor:
        newDims = checked_shape(newDims, f"reshapePartial of tensor '{self.name}'")
        b, e = self._int(begin, "reshapePartial begin"), self._int(end, "reshapePartial end")
        if not 0 <= b <= e <= self.rank():
            raise self._error(f"reshapePartial dims [{begin}, {end}) are out of range")
        old = self.shape()
        if math.prod(old[begin:end]) != math.prod(newDims):
            raise self._error(f"reshapePartial cannot turn dims {old[begin:end]} into {list(newDims)}")
        return self.reshape(old[:begin] + list(newDims) + old[end:])

    def flatten(self, dimBegin: int | None = None, dimEnd: int | None = None) -> Tensor:
        if dimBegin is None:
            return self._reshaped((self.numElements(),), self._op_name("flatten()"))
        b, e = self._int(dimBegin, "flatten dimBegin"), self._int(dimEnd, "flatten dimEnd")
        if not 0 <= b < e <= self.rank():
            raise self._error(f"flatten dims [{dimBegin}, {dimEnd}) are out of range")
        s = self.shape()
        return self.reshape(s[:dimBegin] + [math.prod(s[dimBegin:dimEnd])] + s[dimEnd:])

    def _permuted(self, perm: list[int], name: str | tuple) -> Tensor:
        shape = tuple(self._shape[p] for p in perm)
        if self._var >= 0:
            return self._block_view(shape, self._offset, tuple(self._strides[p] for p in perm), name)
        return self._general_view(shape, bx.permute(self._as_boxes(), perm), name)._reordering(self)

    def _reordering(self, source: Tensor) -> Tensor:
        """This view, made of ``source``'s elements in another order (as a view of several blocks)."""
        if self._var < 0:
            self._same_elements = source
        return self

    def dimShuffle(self, permutation: Sequence[int]) -> Tensor:
        """Output dim ``i`` is input dim ``permutation[i]``."""
        perm = list(checked_ints(permutation, f"dimShuffle of tensor '{self.name}'"))
        if sorted(perm) != list(range(self.rank())):
            raise self._error(f"{perm} is not a permutation of the {self.rank()} dimensions")
        return self._permuted(perm, self._op_name(f"dimShuffle({perm})"))

    def dimShufflePartial(self, source: Sequence[int], destination: Sequence[int]) -> Tensor:
        what = f"dimShufflePartial of tensor '{self.name}'"
        src, dst = list(checked_ints(source, what)), list(checked_ints(destination, what))
        if len(src) != len(dst) or len(set(src)) != len(src) or len(set(dst)) != len(dst) \
                or any(not 0 <= d < self.rank() for d in src + dst):
            raise self._error(f"dimShufflePartial({src}, {dst}) names invalid dimensions")
        perm = [d for d in range(self.rank()) if d not in src]
        for d, s in sorted(zip(dst, src)):
            perm.insert(d, s)
        return self._permuted(perm, self._op_name(f"dimShufflePartial({src},{dst})"))

    def dimRoll(self, dimIdx: int, newIdx: int = 0) -> Tensor:
        return self.dimShufflePartial([dimIdx], [newIdx])

    def transpose(self) -> Tensor:
        if self.rank() != 2:
            raise self._error("transpose() needs a rank-2 tensor; use dimShuffle")
        return self._permuted([1, 0], self._op_name("transpose()"))

    def expand(self, indices: Sequence[int]) -> Tensor:
        """Insert a size-1 dimension before each listed (original) dimension index."""
        idx = sorted(checked_ints(indices, f"expand of tensor '{self.name}'"))
        if any(not 0 <= i <= self.rank() for i in idx):
            raise self._error(f"expand indices {list(indices)} must lie in [0, {self.rank()}]")
        positions = [i + k for k, i in enumerate(idx)]
        shape, strides = list(self._shape), list(self._strides)
        for p in positions:
            shape.insert(p, 1)
            strides.insert(p, 0)
        name = self._op_name(f"expand({list(indices)})")
        if self._var >= 0:
            return self._block_view(tuple(shape), self._offset, tuple(strides), name)
        return self._general_view(tuple(shape), bx.insert(self._as_boxes(), positions), name)

    def squeeze(self, indices: Sequence[int]) -> Tensor:
        idx = list(checked_ints(indices, f"squeeze of tensor '{self.name}'"))
        if len(set(idx)) != len(idx):
            raise self._error(f"squeeze indices {idx} repeat a dimension")
        for i in idx:
            if not 0 <= i < self.rank() or self._shape[i] != 1:
                raise self._error(f"cannot squeeze dimension {i}: only existing dimensions of size 1")
        keep = [d for d in range(self.rank()) if d not in idx]
        shape = tuple(self._shape[d] for d in keep)
        name = self._op_name(f"squeeze({idx})")
        if self._var >= 0:
            return self._block_view(shape, self._offset, tuple(self._strides[d] for d in keep), name)
        return self._general_view(shape, bx.drop(self._as_boxes(), idx), name)

    # ---- element rearrangement ---------------------------------------------------------------
    def _with_dim(self, dim: int, size: int, stride: int, name: str | tuple) -> Tensor:
        """This block with dimension ``dim`` holding ``size`` elements ``stride`` apart."""
        shape = self._shape[:dim] + (size,) + self._shape[dim + 1:]
        strides = self._strides[:dim] + (stride if size > 1 else 0,) + self._strides[dim + 1:]
        return self._block_view(shape, self._offset, strides, name)

    def broadcast(self, N: int, dim: int) -> Tensor:
        """Repeat the whole tensor N times along ``dim`` (the result aliases itself)."""
        dim = self._check_dim(dim)
        if self._int(N, "broadcast factor") < 0:
            raise self._error(f"broadcast factor must be non-negative, got {N}")
        n, extent = int(N), self._shape[dim]
        self._check_size(n * extent, dim, f"broadcast({N}, {dim})")
        name = self._op_name(f"broadcast({N},{dim})")
        if self._var >= 0 and (extent == 1 or n <= 1):
            return self._with_dim(dim, n * extent, 0 if extent == 1 else self._strides[dim], name)
        shape = self._shape[:dim] + (n * extent,) + self._shape[dim + 1:]
        return self._general_view(shape, bx.coalesce(bx.tile(self._as_boxes(), dim, n, extent)), name)

    def upsample(self, scale: int, dim: int, method: UpsampleMethod = UpsampleMethod.REPEAT) -> Tensor:
        dim = self._check_dim(dim)
        if self._int(scale, "upsample scale") < 0:
            raise self._error(f"upsample scale must be non-negative, got {scale}")
        k, extent = int(scale), self._shape[dim]
        self._check_size(k * extent, dim, f"upsample({scale}, {dim})")
        name = self._op_name(f"upsample({scale},{dim})")
        if self._var >= 0 and (k <= 1 or extent == 1):
            return self._with_dim(dim, k * extent, self._strides[dim] if k == 1 else 0, name)
        shape = self._shape[:dim] + (k * extent,) + self._shape[dim + 1:]
        boxes = bx.repeat(self._as_boxes(), dim, k) if k != 1 else self._as_boxes()
        return self._general_view(shape, boxes, name)

    def subSample(self, stride: int, dim: int) -> Tensor:
        dim = self._check_dim(dim)
        if self._int(stride, "subSample stride") < 1:
            raise self._error(f"subSample stride must be at least 1, got {stride}")
        k = int(stride)
        return self._select([0] * dim, list(self._shape[:dim]), [1] * dim + [k], [],
                            self._op_name(f"subSample({stride},{dim})"))

    def reverse(self, dim: int) -> Tensor:
        dim = self._check_dim(dim)
        name = self._op_name(f"reverse({dim})")
        extent = self._shape[dim]
        if self._var >= 0:
            s = self._strides[dim]
            return self._block_view(self._shape, self._offset + max(extent - 1, 0) * s,
                                    self._strides[:dim] + (-s,) + self._strides[dim + 1:], name)
        return self._general_view(self._shape, bx.reverse(self._as_boxes(), dim, extent), name)

    def reinterpret(self, type_: Type) -> Tensor:
        """The same elements read as another type of the same size."""
        new = asType(type_)
        if new.size != self._type.size:
            raise PoplarTypeError(
                f"tensor '{self.name}': cannot reinterpret {self._type} ({self._type.size} bytes) "
                f"as {new} ({new.size} bytes)")
        name = self._op_name(f"reinterpret({new})")
        if self._var >= 0:
            t = self._block_view(self._shape, self._offset, self._strides, name, new)
        else:
            t = type(self).from_boxes(self._vars, new, self._shape, self._as_boxes(), name)
        if hasattr(self, "_runs"):
            t._runs = self._runs
        return t
