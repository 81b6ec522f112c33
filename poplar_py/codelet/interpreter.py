"""Interpreter mode: run the user's real ``compute()`` on numpy views of the engine's memory.

``self`` is a proxy: scalar fields read as numpy scalars of the field's type (so arithmetic follows
numpy rules) and assignment writes through (vertex state that compute writes too: it is in tile
memory, like an edge, not in the state record); vector fields are bounds-checked views; vector lists
give such views per row; the methods compute calls are bound to it. ``compute`` and its helpers run
as Python functions (same code objects, so breakpoints work) whose globals see ``math`` functions
with IEEE results instead of Python's exceptions (libm called directly, the same functions the
native kernels call: ``expf`` when every argument is a numpy float32 or half, returning np.float32,
else ``exp``) and a saturating ``int()``: the same semantics as compiled kernels (see
:mod:`poplar_py.codelet.type_rules`), and a ``print`` that hands its text to the compute set's output
with the vertex and worker printing (:mod:`poplar_py.codelet.prints`), as a compiled kernel's
print does.

Annotated locals: a function (``compute`` or a helper) with a local declared ``x: HALF = ...``
(any poplar type, or ``float``, ``int``, ``bool``) runs as a copy of its code in which every store
to such a local converts, as the compiled kernels do (:mod:`~poplar_py.codelet.typed_locals`): ``x = v``,
``x: T = v``, ``x += v`` (``x = conv(x + v)``), ``for x in ...`` and a declared parameter on entry.
Poplar types and ``bool`` convert with ``cast_value`` to the type's numpy dtype (``acc: HALF``
rounds every intermediate to half; float -> int truncates and saturates, NaN -> 0; int -> int
wraps); ``float`` gives a Python float and ``int`` a Python int wrapped to 64 bits (the weak f64
and i64 the kernel holds, so ``x: float = f32_value; x * 0.1`` multiplies in double, and
``n: int = u32_value; n - 1`` can be negative, in both modes). The copy is compiled from the same
file name with the original line (and column) numbers, so tracebacks, the error records' lines,
``sys.settrace`` and pdb breakpoints by ``file:line`` behave as for the original; only its code
object differs (``Interpreter.compute.__code__``, not ``Cls.compute.__code__``). Functions with no
annotated local run their original code object.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import operator
import os
import sys
import types
from typing import Any

import numpy as np

from ..short_vectors import ShortVector, VectorValue
from ..types import Type
from ..vertex import Direction, FieldKind
from . import prints
from .fp_rules import ERR_FP_EXCEPTION, FP_ENV_DTYPE, FP_GLOBAL, RNG_BYTES, FpRewrite, FpRun, FpTrapError
from .source import (
    MATH_CONSTANTS,
    MATH_FUNCTIONS,
    FunctionSource,
    ParsedCodelet,
    Resolved,
    helper_key,
)
from .type_rules import (
    BUFFER_ENTRY,
    ERR_ASSERTION,
    ERR_DTYPE,
    ERR_OUT_OF_BOUNDS,
    ERR_RANGE_STEP,
    ERR_RETURNED_FALSE,
    VECTOR_LIST_ENTRY_DTYPE,
    cast_value,
)
from .typed_locals import typed_function

_I64 = np.dtype(np.int64)
_SINGLE = (np.float32, np.float16)  # math arguments that select the float32 libm functions
_ZERO_STEP = "range() arg 3 must not be zero"  # Python's ValueError: ERR_RANGE_STEP, as compiled


def _libm() -> ctypes.CDLL:
    process = ctypes.CDLL(None)
    return process if hasattr(process, "exp") else ctypes.CDLL(ctypes.util.find_library("m"))


def _saturating_int(x: Any) -> int:
    """int() as compiled: floats truncate, saturate to int64 and map NaN to 0."""
    if isinstance(x, (float, np.floating)):
        return int(cast_value(x, _I64))
    return int(x)


def _libm_function(libm: ctypes.CDLL, name: str, ctype: Any, arity: int) -> Any:
    f = getattr(libm, name)
    f.restype, f.argtypes = ctype, [ctype] * arity
    return f


def _math_shim() -> types.SimpleNamespace:
    libm = _libm()
    ns: dict[str, Any] = dict(MATH_CONSTANTS)
    for name, arity in MATH_FUNCTIONS.items():
        if name in ("isnan", "isinf", "isfinite"):
            ns[name] = getattr(math, name)
        elif name in ("floor", "ceil", "trunc"):
            ns[name] = _to_int(_libm_function(libm, name, ctypes.c_double, 1))
        else:
            double = _libm_function(libm, name, ctypes.c_double, arity)
            single = _libm_function(libm, name + "f", ctypes.c_float, arity)
            ns[name] = _by_precision(double, single, arity)
    ns["log"] = _log_with_base(ns["log"])
    return types.SimpleNamespace(**ns)


def _to_int(double: Any) -> Any:
    """floor/ceil/trunc: a saturated Python int (the double function is exact for float32 too)."""
    return lambda x: _saturating_int(double(float(x))) if isinstance(x, (float, np.floating)) else int(x)


def _by_precision(double: Any, single: Any, arity: int) -> Any:
    """Python's math signature over libm: ``single`` (expf...) when every argument is a numpy
    float32/half, returning np.float32; else ``double``, returning a Python float."""
    if arity == 1:
        return lambda x: np.float32(single(float(x))) if isinstance(x, _SINGLE) else double(float(x))
    return lambda x, y: (
        np.float32(single(float(x), float(y)))
        if isinstance(x, _SINGLE) and isinstance(y, _SINGLE)
        else double(float(x), float(y))
    )


def _log_with_base(log: Any) -> Any:
    """math.log(x[, base]): log(x) / log(base) in the precision of the arguments."""

    def log_(x: Any, base: Any = None) -> Any:
        if base is None:
            return log(x)
        if isinstance(x, _SINGLE) and isinstance(base, _SINGLE):
            return log(x) / log(base)  # float32 division: IEEE under the run's errstate
        return float(np.float64(log(float(x))) / log(float(base)))  # IEEE, not ZeroDivisionError

    return log_


_MATH = _math_shim()


class _BoundsError(Exception):
    def __init__(self, field: int, index: int, size: int) -> None:
        super().__init__(field, index, size)
        self.field, self.index, self.size = field, index, size


Cast = Any  # (value, dtype) -> the value converted: cast_value, or FpRun.narrow


class _Vector:
    """A bounds-checked vector field (or row of a vector list); stores convert with ``cast``."""

    __slots__ = ("_a", "_cast", "_field")

    def __init__(self, array: np.ndarray, field: int, cast: Cast = cast_value) -> None:
        self._a, self._field, self._cast = array, field, cast

    def _check(self, i: Any) -> int:
        k = operator.index(i)
        if not 0 <= k < len(self._a):
            raise _BoundsError(self._field, k, len(self._a))
        return k

    def __len__(self) -> int:
        return len(self._a)

    def __getitem__(self, i: Any) -> Any:
        return self._a[self._check(i)]

    def __setitem__(self, i: Any, value: Any) -> None:
        self._a[self._check(i)] = self._cast(value, self._a.dtype)

    def __iter__(self) -> Any:
        for k in range(len(self._a)):
            yield self._a[k]


class _VectorList:
    """A bounds-checked list of vectors: ``l[k]`` is a :class:`_Vector`."""

    __slots__ = ("_cast", "_dtype", "_field", "_mem", "_rows")

    def __init__(self, rows: np.ndarray, field: int, mem: _Memory, dtype: np.dtype, cast: Cast) -> None:
        self._rows, self._field, self._mem, self._dtype, self._cast = rows, field, mem, dtype, cast

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, i: Any) -> _Vector:
        k = operator.index(i)
        if not 0 <= k < len(self._rows):
            raise _BoundsError(self._field, k, len(self._rows))
        row = self._rows[k]
        return _Vector(self._mem.view(self._mem.row_address(int(row["ptr"])), self._dtype, int(row["size"])),
                       self._field, self._cast)

    def __iter__(self) -> Any:
        for k in range(len(self._rows)):
            yield self[k]


class _Memory:
    """Views of the engine's arena at absolute addresses (a list entry's ``offset`` bytes on, or
    ``buffers`` for a row in an exchange buffer)."""

    def __init__(self, memory: np.ndarray, offset: int = 0, buffers: int = 0) -> None:
        self.memory = memory.view(np.uint8).reshape(-1)
        self.base = self.memory.ctypes.data
        self.offset, self.buffers = offset, buffers

    def row_address(self, ptr: int) -> int:
        """Where a list entry's row is."""
        return ptr - BUFFER_ENTRY + self.buffers if ptr & BUFFER_ENTRY else ptr + self.offset

    def view(self, addr: int, dtype: np.dtype, count: int) -> np.ndarray:
        off = addr - self.base
        end = off + count * dtype.itemsize
        if count and not (off >= 0 and end <= self.memory.size):
            raise ValueError(f"address {addr:#x} (+{count} x {dtype}) is outside the memory array")
        return self.memory[off:end].view(dtype) if count else np.zeros(0, dtype)


class _Self:
    """``self`` inside an interpreted compute(): field reads and writes go to the engine's memory."""

    __slots__ = ("_cast", "_get", "_set")

    def __init__(self, get: dict[str, Any], set_: dict[str, np.ndarray], cast: Cast) -> None:
        object.__setattr__(self, "_get", get)
        object.__setattr__(self, "_set", set_)
        object.__setattr__(self, "_cast", cast)

    def __getattr__(self, name: str) -> Any:
        try:
            value = self._get[name]
        except KeyError:
            raise AttributeError(name) from None
        return value[0] if isinstance(value, np.ndarray) else value  # scalar edges: read now

    def __setattr__(self, name: str, value: Any) -> None:
        target = self._set[name]
        target[0] = self._cast(value, target.dtype)

    def numWorkers(self) -> int:
        return 6


class _ShortVectorType:
    """A short vector type named in codelet code: builds values as the type does on the host, and
    loads and stores them in the bounds-checked vectors of the interpreter."""

    def __init__(self, vector: ShortVector) -> None:
        self.vector = vector

    def __call__(self, *values: Any) -> VectorValue:
        return self.vector(*values)

    def _first(self, v: _Vector, index: Any) -> int:
        i, width = operator.index(index), self.vector.width
        if not 0 <= i < len(v) // width:
            raise _BoundsError(v._field, width * i + width - 1, len(v))
        return width * i

    def load(self, v: _Vector, index: Any) -> VectorValue:
        first = self._first(v, index)
        return VectorValue(self.vector, v._a[first:first + self.vector.width].copy())

    def store(self, v: _Vector, index: Any, value: VectorValue) -> None:
        first = self._first(v, index)
        v._a[first:first + self.vector.width] = value.data


class _Cast:
    """A type named in codelet code (a poplar type or a bound type parameter): ``T(x)`` converts by
    the codelet rules; ``LocalArray(T, n)`` reads its dtype."""

    def __init__(self, type_: Type, cast: Cast) -> None:
        self.type, self.dtype, self.cast = type_, type_.dtype, cast

    def __call__(self, value: Any) -> np.generic:
        return self.cast(value, self.dtype)

    def __eq__(self, other: object) -> bool:  # T == FLOAT
        return isinstance(other, _Cast) and other.type == self.type

    def __hash__(self) -> int:
        return hash(self.type)


class Interpreter:
    """Runs one codelet class's compute() in Python over a table of vertex states; given ``fp``,
    under the floating-point control words of :mod:`codelet.fp_rules` (arithmetic rewritten to
    call it, conversions through ``fp.narrow``)."""

    def __init__(self, parsed: ParsedCodelet, written: tuple[str, ...] = (), fp: FpRun | None = None) -> None:
        self.parsed = parsed
        self.written = written  # state fields compute writes: their records hold tile-memory addresses
        self.fp = fp
        self.cast: Cast = cast_value if fp is None else fp.narrow
        self._module_globals: dict[int, dict[str, Any]] = {}
        self._policies: dict[type, types.SimpleNamespace] = {}
        self._arrays = {(os.path.realpath(f), line): len(parsed.fields) + k
                        for k, (f, line, _) in enumerate(parsed.arrays)}
        # Each function runs with a copy of its module's globals in which the names it uses mean
        # what they mean in compiled code; the copies are filled once every function exists.
        self.helpers = {key: self._rebind(fn, self._globals(fn), method=fn.method)
                        for key, fn in parsed.helpers.items()}
        self.methods = {name: self.helpers[key] for name, key in parsed.methods.items()}
        self.compute = self._rebind(parsed.compute, self._globals(parsed.compute), method=True)
        for fn in [parsed.compute, *parsed.helpers.values()]:
            g = self._globals(fn)
            for name, r in fn.globals_used.items():
                meaning = self._meaning(r)
                if meaning is not None:
                    g[name] = meaning
        self.constants = {name: self._policy(v) if isinstance(v, type) else v
                          for name, v in parsed.constants.items() if not isinstance(v, Type)}
        self.codes = {f.__code__ for f in [*self.helpers.values(), self.compute]}
        self._printing = (0, 0)  # the state record's address and the worker running

    def _globals(self, fn: FunctionSource) -> dict[str, Any]:
        module = fn.func.__globals__
        g = self._module_globals.get(id(module))
        if g is None:
            g = self._module_globals[id(module)] = dict(module)
            g["int"] = _saturating_int  # shadows the builtin for the codelet's code only
            g["print"] = self._print
            if self.fp is not None:
                g[FP_GLOBAL] = self.fp
        return g

    def _meaning(self, r: Resolved) -> Any:
        """What a global name means for the interpreter when not what Python gives it, else None."""
        if r.kind == "math_module":
            return _MATH
        if r.kind == "math":
            return getattr(_MATH, r.value)
        if r.kind == "helper":
            return self.helpers[r.value]
        if r.kind == "type":
            return _Cast(r.value, self.cast)
        if r.kind == "short_vector":
            return _ShortVectorType(r.value)
        if r.kind == "policy":
            return self._policy(r.value)
        if r.kind == "builtin" and r.value == "LocalArray":
            return self._local_array
        return None

    def _print(self, *args: Any, sep: str = " ", end: str = "\n") -> None:
        prints.emit(*self._printing, sep.join(map(str, args)) + end)

    def _policy(self, cls: type) -> types.SimpleNamespace:
        """A policy as the interpreter calls it: its functions rebound like helpers, its constants."""
        ns = self._policies.get(cls)
        if ns is None:
            members = {}
            for name in dir(cls):
                value = getattr(cls, name)
                if isinstance(value, types.FunctionType):
                    members[name] = self.helpers.get(helper_key(value), value)
                elif isinstance(value, (bool, int, float)) and not name.startswith("__"):
                    members[name] = value
            ns = self._policies[cls] = types.SimpleNamespace(**members)
        return ns

    def _local_array(self, type_: Any, size: int) -> _Vector:
        """``LocalArray(T, n)``: a zeroed, bounds-checked array (numbered as the compiler numbers it)."""
        caller = sys._getframe(1)
        index = self._arrays[(os.path.realpath(caller.f_code.co_filename), caller.f_lineno)]
        dtype = type_.dtype if isinstance(type_, _Cast) else np.dtype(np.int64) \
            if type_ is _saturating_int else np.dtype(type_)
        return _Vector(np.zeros(int(size), dtype), index, self.cast)

    def _rebind(self, fn: FunctionSource, g: dict[str, Any], method: bool) -> types.FunctionType:
        """``fn`` with globals ``g``: the same code object, or a copy whose stores to annotated
        locals convert (see :mod:`~poplar_py.codelet.typed_locals`), and under a control word, whose
        arithmetic goes through it."""
        typed = typed_function(fn, g, method, None if self.fp is None else FpRewrite(), self.cast)
        if typed is not None:
            return typed
        func = fn.func
        return types.FunctionType(func.__code__, g, func.__name__, func.__defaults__, func.__closure__)

    def run(self, states: np.ndarray, memory: np.ndarray, cycles: np.ndarray | None,
            state_memory: np.ndarray | None = None, offset: int = 0, buffers: int = 0,
            fp_env: np.ndarray | None = None) -> np.void | None:
        """Run compute() for every record of ``states``: edges in ``memory``, list tables and state
        vectors in ``state_memory`` (by default ``memory``), list entries ``offset`` bytes short
        of their rows (a replica's offset; ``buffers`` for rows in exchange buffers); an
        interpreter made with ``fp`` takes each vertex's control word and generator from
        ``fp_env`` (FP_ENV_DTYPE records)."""
        mem = _Memory(memory, offset, buffers)
        tables = mem if state_memory is None else _Memory(state_memory)
        workers = range(6) if self.parsed.is_multi else [None]
        if cycles is not None:
            cycles[:] = 0  # only native kernels count cycles
        with np.errstate(all="ignore"):
            for i in range(len(states)):
                proxy = self._proxy(states[i], mem, tables)
                for w in workers:
                    self._printing = (states.ctypes.data + i * states.itemsize, w or 0)
                    if self.fp is not None and fp_env is not None:
                        self._enter(fp_env[i], w or 0, mem)
                    err = self._call(proxy, w)
                    if err is not None:
                        err["vertex"] = i
                        return err
        return None

    def _enter(self, env: np.void, worker: int, mem: _Memory) -> None:
        """Run the next call under a vertex's control word and its worker's generator."""
        assert self.fp is not None and env.dtype == FP_ENV_DTYPE
        rng = int(env["rng"])
        state = mem.view(rng + RNG_BYTES * worker, np.dtype(np.uint64), 2) if rng else None
        self.fp.enter(int(env["ctl"]), state)

    def _proxy(self, record: np.void, mem: _Memory, tables: _Memory) -> _Self:
        get: dict[str, Any] = dict(self.constants)
        set_: dict[str, np.ndarray] = {}
        for index, (name, spec) in enumerate(self.parsed.fields.items()):
            dt = spec.type.dtype
            in_record = spec.direction is Direction.STATE and name not in self.written
            if spec.kind is FieldKind.SCALAR:
                if in_record:
                    get[name] = record[name]
                else:
                    get[name] = set_[name] = mem.view(int(record[name]), dt, 1)
            elif spec.kind is FieldKind.VECTOR:
                where = tables if in_record else mem
                get[name] = _Vector(
                    where.view(int(record[f"{name}.ptr"]), dt, int(record[f"{name}.size"])), index, self.cast
                )
            else:
                rows = tables.view(
                    int(record[f"{name}.ptr"]), VECTOR_LIST_ENTRY_DTYPE, int(record[f"{name}.size"])
                )
                get[name] = _VectorList(rows, index, mem, dt, self.cast)
        proxy = _Self(get, set_, self.cast)
        for name, method in self.methods.items():  # self.helper(x): bound to this vertex
            get[name] = types.MethodType(method, proxy)
        return proxy

    def _call(self, proxy: _Self, worker: int | None) -> np.void | None:
        code = self.compute.__code__
        line = [-1]

        def on_return(frame: types.FrameType, event: str, arg: Any) -> None:
            if event == "return" and frame.f_code is code:
                line[0] = frame.f_lineno  # the line of the return statement that ran

        previous = sys.getprofile()
        sys.setprofile(on_return)
        try:
            result = self.compute(proxy) if worker is None else self.compute(proxy, worker)
        except _BoundsError as exc:
            return self._error(ERR_OUT_OF_BOUNDS, exc.field, exc.index, exc.size, self._user_line(exc))
        except FpTrapError as exc:
            return self._error(ERR_FP_EXCEPTION, exc.kind, -1, -1, self._user_line(exc))
        except AssertionError as exc:
            line = self._innermost_line(exc)
            if line is None:  # not raised by an assert of the codelet
                raise
            return self._error(ERR_ASSERTION, -1, -1, -1, line)
        except ValueError as exc:
            at = self._innermost_line(exc)
            if at is None or str(exc) != _ZERO_STEP:  # not the codelet's range()
                raise
            return self._error(ERR_RANGE_STEP, -1, 0, 0, at)
        finally:
            sys.setprofile(previous)
        if result is not None and not result:
            return self._error(ERR_RETURNED_FALSE, -1, -1, -1, line[0])
        return None

    def _user_line(self, exc: BaseException) -> int:
        """The line of the innermost frame of the codelet's own code (compute or a helper)."""
        line = -1
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code in self.codes:
                line = tb.tb_lineno
            tb = tb.tb_next
        return line

    def _innermost_line(self, exc: BaseException) -> int | None:
        """The line that raised ``exc`` (a failed assert, range()), if the innermost frame is
        codelet code."""
        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        if tb is None or tb.tb_frame.f_code not in self.codes:
            return None
        return tb.tb_lineno

    @staticmethod
    def _error(code: int, field: int, index: int, size: int, line: int) -> np.void:
        err = np.zeros(1, ERR_DTYPE)[0]
        err["code"], err["field"], err["index"], err["size"], err["line"] = code, field, index, size, line
        return err
