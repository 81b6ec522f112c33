"""Tensors: views of variable elements that never copy data.

A tensor is an element type, a shape and a description of which variable elements it
views, in order. Nearly every view is one strided block of one variable (an offset and
a stride per dimension, as a numpy view is), and views of it are plain arithmetic.
Concatenations and a few other views are a set of blocks (:mod:`poplar_py.builder.box_views`).
What needs the elements in flattened order gets them as runs
(:class:`~poplar_py.regions.runs.Runs`): metadata grows with regions, never with elements.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from .builder import box_views as bx
from .builder import strided_block
from .builder.tensor_indexing import TensorIndexing
from .builder.tensor_reshaping import TensorReshaping, UpsampleMethod
from .builder.variable_table import VariableRef, VariableTable
from .builder.view_names import CONCAT, OP, resolve_name, shape_str
from .checks.arguments import is_int
from .errors import InvalidArgumentError, PoplarTypeError, TensorArgumentError, TensorCreationError
from .interval import Interval
from .regions.arrays import union, unique_sorted
from .regions.runs import SMALL_RUNS, Runs, merge_rows
from .types import Type

__all__ = ["Interval", "Tensor", "UpsampleMethod", "VariableRef", "VariableTable", "append", "concat"]


class Tensor(TensorIndexing, TensorReshaping):
    """A view of variable elements with a shape and an element type.

    Views never copy data: ``t[i]``, slices, ``reshape``, ``dimShuffle``,
    ``broadcast``... all describe (possibly repeated) elements of variables that
    live in tile memory.
    """

    __slots__ = ("_aliases", "_boxes", "_name", "_offset", "_runs", "_same_elements", "_shape", "_strides",
                 "_type", "_var", "_vars")

    def __init__(self, variables: VariableTable, type_: Type, shape: tuple[int, ...], var: int, offset: int,
                 strides: tuple[int, ...], name: str | tuple) -> None:
        """One strided block of variable ``var`` (``var`` -1: see :meth:`from_boxes`); ``name`` a
        string, or a view's name to be made when asked for (see ``resolve_name``)."""
        self._vars = variables
        self._type = type_
        self._shape = shape
        self._var = var
        self._offset = offset
        self._strides = strides
        self._name = name
        # Set when needed: _runs and _aliases (caches), _boxes (views of several blocks of rank
        # 2 and more; views of rank 0 and 1 that are not one block are their runs), and
        # _same_elements (a view of several blocks that a reshape or dimShuffle made: the tensor
        # it reorders, which answers containsAliases without the reordered runs)

    @staticmethod
    def from_boxes(variables: VariableTable, type_: Type, shape: tuple[int, ...], boxes: bx.Boxes,
                   name: str | tuple) -> Tensor:
        """The tensor of ``shape`` the boxes describe (one block when they are one)."""
        single = bx.as_block(boxes, shape)
        if single is not None:
            return Tensor(variables, type_, shape, *single, name)
        if len(shape) <= 1:
            return Tensor.from_runs(variables, type_, shape, bx.to_runs(boxes, shape), name)
        t = Tensor(variables, type_, shape, -1, 0, (), name)
        t._boxes = boxes
        return t

    @staticmethod
    def from_runs(variables: VariableTable, type_: Type, shape: tuple[int, ...], runs: Runs,
                  name: str | tuple) -> Tensor:
        """The tensor of rank 0 or 1 and ``shape`` whose elements are these (merged) runs."""
        if len(runs) == 1 and (shape or runs.count[0] == 1):
            return Tensor(variables, type_, shape, int(runs.var[0]), int(runs.offset[0]),
                          (int(runs.stride[0]),) if shape else (), name)
        t = Tensor(variables, type_, shape, -1, 0, (), name)
        t._runs = runs
        return t

    # ---- internals ---------------------------------------------------------------------------
    def _op_name(self, op: str) -> tuple:
        return (self._name, OP, op)

    def _block_view(self, shape: tuple[int, ...], offset: int, strides: tuple[int, ...], name: str | tuple,
                    type_: Type | None = None) -> Tensor:
        return Tensor(self._vars, type_ or self._type, shape, self._var, offset, strides, name)

    def _general_view(self, shape: tuple[int, ...], boxes: bx.Boxes, name: str | tuple) -> Tensor:
        return Tensor.from_boxes(self._vars, self._type, shape, boxes, name)

    def _as_boxes(self) -> bx.Boxes:
        if self._var >= 0:
            return bx.block(self._var, self._offset, self._shape, self._strides)
        if len(self._shape) <= 1:
            return bx.from_runs(self._runs, self._shape)
        return self._boxes

    def _error(self, message: str,
               kind: type[TensorCreationError] = TensorCreationError) -> TensorCreationError:
        return kind(f"tensor '{self.name}' (shape {shape_str(self._shape)}): {message}")

    def _int(self, value: object, what: str) -> int:
        """An integer argument of a view; TensorArgumentError naming it otherwise."""
        if not is_int(value):
            raise self._error(f"{what} must be an integer, got {type(value).__name__} {value!r:.40}",
                              TensorArgumentError)
        return int(value)  # type: ignore[call-overload]

    def _check_size(self, extent: int, dim: int, what: str) -> None:
        """A view of more elements than the whole target holds bytes cannot be used: refuse it
        before building its regions."""
        n = math.prod(self._shape[:dim]) * extent * math.prod(self._shape[dim + 1:])
        if n > self._vars.capacity:
            raise self._error(f"{what} would view {n} elements, more than the target's "
                              f"{self._vars.capacity} bytes of tile memory")

    def _check_dim(self, dim: object, what: str = "dim") -> int:
        d = self._int(dim, what)
        if not 0 <= d < len(self._shape):
            raise self._error(f"{what} {dim} is out of range for a rank-{len(self._shape)} tensor")
        return d

    # ---- what the compiler reads --------------------------------------------------------------
    @property
    def variables(self) -> VariableTable:
        """The variable table of the graph the tensor belongs to."""
        return self._vars

    @property
    def name(self) -> str:
        name = self._name
        if type(name) is not str:
            name = self._name = resolve_name(name)
        return name

    @property
    def block(self) -> tuple[int, int, tuple[int, ...]] | None:
        """``(var, offset, strides)`` when the view is one strided block, else None."""
        return None if self._var < 0 else (self._var, self._offset, self._strides)

    def as_run(self) -> tuple[int, int, int, int] | None:
        """``(var, offset, count, stride)`` when the view is a scalar or a 1-D block, else None."""
        if self._var < 0 or len(self._shape) > 1:
            return None
        if self._shape:
            return self._var, self._offset, self._shape[0], self._strides[0]
        return self._var, self._offset, 1, 1

    def edge_run(self, variables: VariableTable, type_: Type, rank: int,
                 writes: bool) -> tuple[int, int, int, int] | None:
        """``(var, offset, count, stride)`` when the view can be connected as it is to a vertex
        field of this type and rank (0 or 1) of the graph owning ``variables`` (a field that
        writes: no constants, no aliases); else None, and the caller finds out why."""
        if self._var < 0 or self._vars is not variables or len(self._shape) != rank \
                or (self._type is not type_ and self._type != type_):
            return None
        if rank == 0:
            run = (self._var, self._offset, 1, 1)
        elif rank == 1:
            run = (self._var, self._offset, self._shape[0], self._strides[0])
            if writes and run[2] > 1 and run[3] == 0:
                return None
        else:
            return None
        if writes and run[2] and variables.is_constant[self._var]:
            return None
        return run

    def runs(self) -> Runs:
        """The elements in flattened order, as merged runs."""
        try:
            return self._runs
        except AttributeError:
            if self._var >= 0:
                self._runs = strided_block.block_runs(self._var, self._offset, self._shape, self._strides)
            else:
                self._runs = bx.to_runs(self._boxes, self._shape)
            return self._runs

    # ---- queries -----------------------------------------------------------------------------
    def shape(self) -> list[int]:
        return list(self._shape)

    def dim(self, i: int) -> int:
        return self._shape[self._check_dim(i)]

    def rank(self) -> int:
        return len(self._shape)

    def numElements(self) -> int:
        return math.prod(self._shape)

    def elementType(self) -> Type:
        return self._type

    def valid(self) -> bool:
        return True

    def hasMetadata(self) -> bool:
        """True for a QUARTER tensor whose variables were made with a QUARTER_METADATA tensor."""
        return self._type.requiresMetadata() and any(v in self._vars.metadata for v in self._var_set())

    def getMetadata(self) -> Tensor:
        """The QUARTER_METADATA tensor giving this QUARTER tensor's format and scale (one for all
        its variables)."""
        if not self.hasMetadata():
            raise TensorArgumentError(f"tensor '{self.name}' ({self._type}) has no metadata: only QUARTER "
                                      "tensors made with a QUARTER_METADATA tensor carry one")
        found: list[Tensor] = []
        for v in self._var_set():
            md = self._vars.metadata.get(v)
            if md is None or not any(md == f for f in found):
                found.append(md)  # type: ignore[arg-type]
        if len(found) > 1:
            raise TensorArgumentError(f"tensor '{self.name}' views QUARTER variables of different metadata "
                                      "(or none): it has no single metadata tensor")
        return found[0]

    def _var_set(self) -> list[int]:
        return [self._var] if self._var >= 0 else np.unique(self.runs().var).tolist()

    def getDebugStr(self) -> str:
        return f"{self.name}: {self._type} {shape_str(self._shape)}"

    def getVarStr(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<Tensor {self.getDebugStr()}>"

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError(f"tensor '{self.name}' is a scalar and has no len()")
        return self._shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def containsAliases(self) -> bool:
        """Does some element appear twice in the view?"""
        try:
            return self._aliases
        except AttributeError:
            if self._var >= 0:
                self._aliases = self._block_aliases()
            elif hasattr(self, "_same_elements"):
                self._aliases = self._same_elements.containsAliases()
            else:
                runs = self.runs()
                if bool(((runs.stride == 0) & (runs.count > 1)).any()):
                    self._aliases = True
                else:
                    lo, hi, _ = runs.unit_intervals(self._vars.bases)
                    ulo, uhi = union(lo, hi)
                    self._aliases = int((uhi - ulo).sum()) < runs.num_elements
            return self._aliases

    def _block_aliases(self) -> bool:
        """Whether this strided block holds an element twice: not when each dimension's step
        passes everything the shorter steps reach (rows apart, as almost every view); else (a
        reshape of overlapping rows, say) its elements are counted."""
        reach = 1
        for step, size in sorted((abs(s), d) for d, s in zip(self._shape, self._strides) if d > 1):
            if step < reach:
                offset = self.runs().elements()[1]
                return unique_sorted(offset).size < offset.size
            reach += step * (size - 1)
        return False

    def containsConstant(self) -> bool:
        if self._var >= 0:
            return bool(self._vars.constant[self._var]) and self.numElements() > 0
        return bool(self._vars.constant[self.runs().var].any())

    def isParallelWriteable(self) -> bool:
        return not (self.containsAliases() or self.containsConstant())

    def _region_starts(self) -> tuple[Runs, np.ndarray]:
        """Flat positions where a run of consecutive elements of one variable starts."""
        runs = self.runs()
        if len(runs) == 0:
            return runs, np.zeros(0, np.int64)
        starts = runs.starts()
        cont = (runs.var[1:] == runs.var[:-1]) & (runs.offset[1:] == runs.last()[:-1] + 1)
        first = starts[np.concatenate(([True], ~cont))]
        inner = np.flatnonzero((runs.stride != 1) & (runs.count > 1))
        if inner.size:
            counts = runs.count[inner] - 1
            owner = np.repeat(inner, counts)
            within = np.arange(owner.size) - np.repeat(np.cumsum(counts) - counts, counts)
            first = unique_sorted(np.concatenate((first, starts[owner] + within + 1)))
        return runs, first

    def region_starts(self) -> np.ndarray:
        """Where ``getContiguousRegions``' intervals start, as an array."""
        return self._region_starts()[1]

    def getContiguousRegions(self) -> list[Interval]:
        """Intervals of the flattened view whose elements are consecutive in one variable."""
        starts = self.region_starts()
        ends = np.append(starts[1:], self.numElements())
        return [Interval(b, e) for b, e in zip(starts.tolist(), ends.tolist())]

    def isContiguous(self) -> bool:
        return self.numElements() > 0 and self._region_starts()[1].size == 1

    def getVarRegions(self) -> list[tuple[VariableRef, Interval]]:
        """The runs of the view as (variable, interval in that variable's elements)."""
        runs, starts = self._region_starts()
        if not starts.size:
            return []
        ends = np.append(starts[1:], self.numElements())
        run = np.searchsorted(runs.starts(), starts, side="right") - 1
        offset = runs.offset[run] + (starts - runs.starts()[run]) * runs.stride[run]
        rows = zip(runs.var[run].tolist(), offset.tolist(), starts.tolist(), ends.tolist())
        return [(self._vars.ref(v), Interval(o, o + e - b)) for v, o, b, e in rows]

    def intersectsWith(self, other: Tensor) -> bool:
        if not isinstance(other, Tensor):
            raise self._error(f"intersectsWith needs a tensor, got {type(other).__name__} {other!r:.40}",
                              TensorArgumentError)
        if other._vars is not self._vars or not self.numElements() or not other.numElements():
            return False
        a_lo, a_hi = union(*self.runs().unit_intervals(self._vars.bases)[:2])
        b_lo, b_hi = union(*other.runs().unit_intervals(self._vars.bases)[:2])
        k = np.searchsorted(b_hi, a_lo, side="right")  # first b ending after each a starts
        inside = k < b_lo.size
        return bool((b_lo[k[inside]] < a_hi[inside]).any())

    def __eq__(self, other: object) -> bool:
        if not (isinstance(other, Tensor) and other._vars is self._vars and other._type == self._type
                and other._shape == self._shape):
            return False
        if self.block is not None and self.block == other.block:
            return True
        a, b = self.runs(), other.runs()
        if len(a) == len(b) and all(np.array_equal(getattr(a, f), getattr(b, f))
                                    for f in ("var", "offset", "count", "stride")):
            return True
        return all(np.array_equal(x, y) for x, y in zip(a.elements(), b.elements()))

    def __hash__(self) -> int:
        return id(self)

    def slices(self, intervals: Iterable, dim: int = 0) -> list[Tensor]:
        """Slices along ``dim``, one per item: an interval (``Interval`` or ``(begin, end)``), a list
        of intervals (their slices concatenated) or an index (a slice of size 1), as Poplar's
        overloads."""
        if isinstance(intervals, (str, bytes)) or not isinstance(intervals, Iterable):
            raise self._error(f"slices needs a list of intervals or indices, got {type(intervals).__name__} "
                              f"{intervals!r:.40}", TensorArgumentError)
        dim = self._check_dim(dim)
        return [self._slice_of(item, dim) for item in intervals]

    def _slice_of(self, item: object, dim: int) -> Tensor:
        if is_int(item):
            return self.slice(item, item + 1, dim)  # type: ignore[operator]
        if isinstance(item, list) and item and all(_is_pair(x) for x in item):
            return concat([self.slice(Interval(*x), dim) for x in item], dim)
        if not _is_pair(item):
            raise self._error(f"slices: {item!r:.40} is not an interval (begin, end), a list of them or an "
                              "index", TensorArgumentError)
        return self.slice(Interval(*item), dim)  # type: ignore[misc]

def _is_pair(x: object) -> bool:
    """An interval as ``(begin, end)``: a pair of integers (an Interval is one)."""
    return isinstance(x, (tuple, list)) and len(x) == 2 and is_int(x[0]) and is_int(x[1])


def concat(tensors: Sequence[Tensor] | Tensor, dim: int | Tensor = 0, dim2: int = 0) -> Tensor:
    """Join tensors along ``dim`` without copying: ``concat([a, b], d)`` or ``concat(a, b, d)``."""
    if isinstance(tensors, Tensor):
        if not isinstance(dim, Tensor):
            raise TensorCreationError("concat(a, b, dim) needs two tensors")
        tensors, dim = [tensors, dim], dim2
    if not isinstance(tensors, (list, tuple)):
        raise InvalidArgumentError(f"concat needs a list of tensors, got {type(tensors).__name__}")
    ts = list(tensors)
    if not ts:
        raise TensorCreationError("concat needs at least one tensor")
    for k, t in enumerate(ts):
        if not isinstance(t, Tensor):
            raise InvalidArgumentError(f"concat: item {k} is a {type(t).__name__}, not a Tensor")
    if not is_int(dim):
        raise TensorArgumentError(f"concat: the dimension must be an integer, got {dim!r:.40}")
    first = ts[0]
    d, variables, type_, shape = int(dim), first._vars, first._type, first._shape  # type: ignore[arg-type]
    for t in ts[1:]:
        if t._vars is not variables:
            raise TensorCreationError(f"concat: tensor '{t.name}' belongs to another graph")
        if t._type is not type_ and t._type != type_:
            raise PoplarTypeError(f"concat: tensor '{t.name}' is {t._type} but '{first.name}' is {type_}")
        if len(t._shape) != len(shape):
            raise TensorCreationError(f"concat: tensor '{t.name}' has rank {t.rank()}, "
                                      f"'{first.name}' has rank {first.rank()}")
    if not 0 <= d < len(shape):
        raise TensorCreationError(f"concat: dimension {d} is out of range for rank {first.rank()}")
    for t in ts[1:]:
        if t._shape[:d] != shape[:d] or t._shape[d + 1:] != shape[d + 1:]:
            raise TensorCreationError(
                f"concat along dimension {d}: tensor '{t.name}' has shape {shape_str(t._shape)}, "
                f"incompatible with '{first.name}' of shape {shape_str(shape)}")
    name = (first._name, CONCAT, *(t._name for t in ts[1:4]), len(ts) > 4)
    extents = [t._shape[d] for t in ts]
    shape = shape[:d] + (sum(extents),) + shape[d + 1:]
    if len(shape) == 1:  # one after the other: the runs, joined
        return _concat_runs(ts, variables, type_, shape, name)
    blocks = all(t._var >= 0 for t in ts)
    if blocks:
        joined = strided_block.join([(t._var, t._offset, t._shape, t._strides) for t in ts], d)
        if joined is not None:
            return Tensor(variables, type_, shape, *joined, name)
    if len(ts) <= _FEW_BOXES and sum(1 if t._var >= 0 else len(t._boxes) for t in ts) <= _FEW_BOXES:
        rows = bx.concat_rows([bx.block_rows(t._var, t._offset, t._shape, t._strides) if t._var >= 0
                               else bx.rows_of(t._boxes) for t in ts], d, extents, len(shape), blocks)
        boxes = bx.from_rows(rows, len(shape))
    else:
        boxes = bx.concat([t._as_boxes() for t in ts], d, extents)
    return Tensor.from_boxes(variables, type_, shape, boxes, name)


_FEW_BOXES = 32  # concatenations of this many boxes or fewer are joined in Python


def _concat_runs(ts: list[Tensor], variables: VariableTable, type_: Type, shape: tuple[int, ...],
                 name: str | tuple) -> Tensor:
    """Tensors of rank 1 one after the other; a few blocks joined in Python."""
    rows = [t.as_run() for t in ts]
    if None in rows:
        runs = Runs.concat([t.runs() for t in ts]).merged()
    else:
        rows = [(v, o, c, s if c > 1 else 1) for v, o, c, s in rows if c]  # as block_runs gives them
        if len(rows) > SMALL_RUNS:
            runs = Runs.from_rows(rows).merged()
        else:
            rows = merge_rows(rows)[0]
            if len(rows) == 1:
                return Tensor(variables, type_, shape, rows[0][0], rows[0][1], (rows[0][3],), name)
            runs = Runs.from_rows(rows)
    return Tensor.from_runs(variables, type_, shape, runs, name)


def append(a: Tensor, b: Tensor, dim: int = 0) -> Tensor:
    """``concat(a, b.expand([dim]), dim)``: b has one dimension fewer than a."""
    return concat([a, b.expand([dim])], dim)
