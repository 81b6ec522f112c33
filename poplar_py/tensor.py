"""Tensors: views of variable elements that never copy data.

A tensor is an element type, a shape and a description of which variable elements it
views, in order. Nearly every view is one strided block of one variable (an offset and
a stride per dimension, as a numpy view is), and views of it are plain arithmetic.
Concatenations and a few other views are a set of blocks (:mod:`poplar_py.builder.box_views`).
What needs the elements in flattened order gets them as runs
(:class:`~poplar_py.regions.runs.Runs`): metadata grows with regions, never with elements.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Sequence

import numpy as np

from .builder import box_views as bx
from .builder import strided_block
from .builder.variable_table import VariableRef, VariableTable
from .checks.arguments import checked_ints, checked_shape, is_int
from .errors import InvalidArgumentError, PoplarTypeError, TensorArgumentError, TensorCreationError
from .regions.arrays import union, unique_sorted
from .regions.runs import SMALL_RUNS, Runs, merge_rows
from .types import Type, asType

__all__ = ["Interval", "Tensor", "UpsampleMethod", "VariableRef", "VariableTable", "append", "concat"]


class Interval(tuple):
    """Half-open interval ``[begin, end)``; compares equal to the tuple ``(begin, end)``."""

    def __new__(cls, begin: int, end: int) -> Interval:
        if not (is_int(begin) and is_int(end)):
            raise InvalidArgumentError(f"Interval(begin, end) takes integers, got ({begin!r:.30}, "
                                       f"{end!r:.30})")
        return super().__new__(cls, (int(begin), int(end)))

    def begin(self) -> int:
        return self[0]

    def end(self) -> int:
        return self[1]

    def size(self) -> int:
        return self[1] - self[0]

    def __repr__(self) -> str:
        return f"[{self[0]}, {self[1]})"


class UpsampleMethod(enum.Enum):
    REPEAT = "REPEAT"


# names of the fast views, made when asked for: (base name, format, arguments...); a
# concatenation's arguments are the names of its next three parts and whether more follow
_INDEX, _RANGE, _SLICE, _OP, _CONCAT = "{}[{}]", "{}[{}:{}]", "{}.slice({},{},{})", "{}.{}", "concat({})"
_BOUNDS = (int, type(None))


def _short(name: str) -> str:
    return name if len(name) < 120 else name[:117] + "..."


def _resolve_name(name: str | tuple) -> str:
    """The name of a view whose name was kept as (base, format, arguments...)."""
    chain = []
    while type(name) is not str:
        chain.append(name)
        name = name[0]
    for _, fmt, *args in reversed(chain):
        if fmt is _CONCAT:
            name = fmt.format(",".join([name, *map(_resolve_name, args[:-1])]) + (",..." if args[-1] else ""))
        else:
            name = fmt.format(name if fmt is _INDEX or fmt is _RANGE else _short(name), *args)
    return name


def _shape_str(shape: Sequence[int]) -> str:
    return "{" + ",".join(str(d) for d in shape) + "}"


class Tensor:
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
        string, or a view's name to be made when asked for (see ``_resolve_name``)."""
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
        return (self._name, _OP, op)

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
        return kind(f"tensor '{self.name}' (shape {_shape_str(self._shape)}): {message}")

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
            name = self._name = _resolve_name(name)
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
        return f"{self.name}: {self._type} {_shape_str(self._shape)}"

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

    # ---- indexing and slicing ----------------------------------------------------------------
    def __getitem__(self, key: object) -> Tensor:
        shape = self._shape
        if type(key) is int and self._var >= 0 and shape and -shape[0] <= key < shape[0]:
            strides = self._strides  # the common case, fast
            return Tensor(self._vars, self._type, shape[1:], self._var,
                          self._offset + (key + shape[0] if key < 0 else key) * strides[0], strides[1:],
                          (self._name, _INDEX, key))
        if type(key) is slice and self._var >= 0 and shape and key.step is None \
                and type(key.start) in _BOUNDS and type(key.stop) in _BOUNDS:  # rows: fast too
            begin, end, _ = key.indices(shape[0])
            size = max(end - begin, 0)
            strides = tuple(s if n > 1 else 0 for n, s in zip((size, *shape[1:]), self._strides))
            return Tensor(self._vars, self._type, (size, *shape[1:]), self._var,
                          self._offset + begin * self._strides[0], strides,
                          (self._name, _RANGE, "" if key.start is None else key.start,
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
            (self._name, _INDEX, parts[0])
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
        return Tensor(self._vars, self._type, tuple(shape), self._var, offset, tuple(strides),
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
            return Tensor.from_runs(self._vars, self._type, shape, self._runs.take(lo[0], hi[0]), name)
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
            return Tensor(self._vars, self._type, shape[:dim] + (end - begin,) + shape[dim + 1:], self._var,
                          self._offset + begin * self._strides[dim], self._strides,
                          (self._name, _SLICE, begin, end, dim))
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

    # ---- reshaping ---------------------------------------------------------------------------
    def reshape(self, shape: Sequence[int]) -> Tensor:
        new = checked_ints(shape, f"reshape of tensor '{self.name}'")
        if any(d < 0 for d in new) or math.prod(new) != self.numElements():
            raise self._error(f"cannot reshape {self.numElements()} elements to {_shape_str(new)}")
        return self._reshaped(new, self._op_name(f"reshape({_shape_str(new)})"))

    def _reshaped(self, new: tuple[int, ...], name: str | tuple) -> Tensor:
        if self._var >= 0:
            strides = strided_block.nocopy_strides(self._shape, self._strides, new)
            if strides is not None:
                return self._block_view(new, self._offset, strides, name)
        if len(new) <= 1:
            view = Tensor.from_runs(self._vars, self._type, new, self.runs(), name)
        else:
            view = self._general_view(new, bx.from_runs(self.runs(), new), name)
        return view._reordering(self)

    def _element(self, i: int, name: str | tuple) -> Tensor:
        """Element ``i`` of a tensor of rank 1 held as runs, as a scalar view."""
        runs = self._runs
        starts = runs.starts()
        k = int(np.searchsorted(starts, i, side="right")) - 1
        offset = int(runs.offset[k]) + (i - int(starts[k])) * int(runs.stride[k])
        return Tensor(self._vars, self._type, (), int(runs.var[k]), offset, (), name)

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
            t = Tensor.from_boxes(self._vars, new, self._shape, self._as_boxes(), name)
        if hasattr(self, "_runs"):
            t._runs = self._runs
        return t


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
                f"concat along dimension {d}: tensor '{t.name}' has shape {_shape_str(t._shape)}, "
                f"incompatible with '{first.name}' of shape {_shape_str(shape)}")
    name = (first._name, _CONCAT, *(t._name for t in ts[1:4]), len(ts) > 4)
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
