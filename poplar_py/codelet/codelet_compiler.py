"""The codelet compiler: Python vertex classes -> native kernels (llvmlite), or the interpreter.

The pipeline is a visible list of passes, each taking and returning a small dataclass::

    frontend   parse_codelet(cls)            -> ParsedCodelet   (subset check, names resolved)
    typing     infer_types(parsed)           -> TypedCodelet    (every expression typed)
    assigned   check_assigned(typed)         -> None            (no read of a possibly unassigned local)
    cache key  kernel_key(typed, options)    -> KernelKey       (sha256 of all that the code depends on)
    codegen    generate_ir(typed, key, opts) -> KernelIR        (LLVM IR text)
    optimise   compile_ir(ir, opt_level)     -> object bytes    (or a disk-cache hit, skipping codegen)
    link       load_object(obj, ...)         -> address         (ORC LLJIT)

``check_codelet`` runs the first two (no LLVM), ``codelet_info`` adds the state record and the
modelled code size (:mod:`poplar_py.codelet.code_size`) that planning and the interpreter need;
``compile_codelet`` runs them all, memoised in the process and on disk (see :mod:`jit`).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ParamSpec, TypeVar

import numpy as np

from ..errors import CodeletCompileError
from . import interrupts, jit
from .budget import NO_BUDGET
from .code_size import code_bytes
from .codegen import KernelBuilder, state_layout
from .definite_assignment import check_assigned
from .fp_rules import ERR_FP_EXCEPTION, FpRun, describe
from .frontend import parse_codelet
from .inference import TypedCodelet, infer_types
from .interpreter import Interpreter
from .source import ParsedCodelet
from .type_rules import (
    BUFFER_ENTRY,
    ERR_ASSERTION,
    ERR_CYCLE_BUDGET,
    ERR_DTYPE,
    ERR_INTERRUPTED,
    ERR_OUT_OF_BOUNDS,
    ERR_RANGE_STEP,
    ERR_RETURNED_FALSE,
    VECTOR_LIST_ENTRY_DTYPE,
)

P = ParamSpec("P")
R = TypeVar("R")

__all__ = [
    "BUFFER_ENTRY",
    "COMPILER_VERSION",
    "ERR_ASSERTION",
    "ERR_CYCLE_BUDGET",
    "ERR_DTYPE",
    "ERR_INTERRUPTED",
    "ERR_OUT_OF_BOUNDS",
    "ERR_RANGE_STEP",
    "ERR_RETURNED_FALSE",
    "NO_BUDGET",
    "VECTOR_LIST_ENTRY_DTYPE",
    "CodeletInfo",
    "CompiledCodelet",
    "KernelOptions",
    "check_codelet",
    "codelet_info",
    "compile_codelet",
    "error_message",
]

#: part of every cache key, with the digest of the compiler's own source (:func:`compiler_digest`),
#: so that kernels of another version of the compiler (another checkout, another branch sharing
#: the cache) are never taken for this one's
COMPILER_VERSION = "17"


@functools.cache
def compiler_digest() -> str:
    """A digest of this package's source files: whatever generates code or models its size."""
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()

_RUN_TYPE = ctypes.CFUNCTYPE(
    ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
    ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p
)
#: a floating-point kernel's: one more argument, the vertices' FP_ENV_DTYPE records
_RUN_FP_TYPE = ctypes.CFUNCTYPE(
    ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
    ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p
)


@dataclass(frozen=True)
class KernelOptions:
    """How a codelet is compiled."""

    checked: bool = True  # bounds-check every vector index, hold vertices to the cycle budget
    fast_math: bool = True  # 'reassoc contract nsz arcp afn' (NaN/inf kept); False = strict IEEE
    opt_level: int = 3  # 0 for a debug build
    lanes: bool = False  # strict mode: also a lockstep path over LANES vertices (codelet/lanes.py)
    #: under floating-point control words (codelet_fp_ops): the control bits the kernel handles
    #: (fp_rules.kernel_features); 0: a plain kernel. Never with lanes
    fp: int = 0


@dataclass(frozen=True)
class KernelKey:
    """Output of the cache-key pass."""

    digest: str  # sha256 hex

    @property
    def symbol(self) -> str:
        return f"poplar_kernel_{self.digest[:24]}"


@dataclass(frozen=True)
class KernelIR:
    """Output of the codegen pass."""

    key: KernelKey
    text: str


#: Python frames the compiler passes may use: they recurse over the AST, and a chain of 1000
#: ``elif`` branches nests 1000 deep (pure-Python frames, so no C stack is at risk)
_RECURSION_LIMIT = 100_000


def _deep(fn: Callable[P, R]) -> Callable[P, R]:
    """Run a pass with room for deeply nested codelets; a codelet nested deeper still is a
    CodeletCompileError, never a RecursionError."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, _RECURSION_LIMIT))
        try:
            return fn(*args, **kwargs)
        except RecursionError:
            raise CodeletCompileError(f"{fn.__name__}: the codelet is nested too deeply to compile "
                                      f"(more than about {_RECURSION_LIMIT // 4} levels)") from None
        finally:
            sys.setrecursionlimit(old)

    return run


_checked: dict[type, TypedCodelet] = {}
_compiled: dict[tuple[type, KernelOptions], CompiledCodelet] = {}


@_deep
def _typed(cls: type) -> TypedCodelet:
    typed = _checked.get(cls)
    if typed is None:
        typed = infer_types(parse_codelet(cls))
        check_assigned(typed)
        _checked[cls] = typed
    return typed


def check_codelet(cls: type) -> None:
    """Parse, subset-check and type ``cls.compute`` (no LLVM). Raises CodeletCompileError."""
    _typed(cls)


class CodeletInfo:
    """What planning and the interpreter need of a codelet, without LLVM: its state record, the
    size of its code on a tile, and its interpreter."""

    def __init__(self, typed: TypedCodelet) -> None:
        self.cls: type = typed.parsed.cls
        self.typed = typed
        self.state_dtype: np.dtype = state_layout(typed.parsed.fields, typed.written)[0]
        #: the vertex state fields compute writes: kept in tile memory (one copy per replica),
        #: their record columns hold its address
        self.written_state: tuple[str, ...] = typed.written
        self.code_bytes = _code_bytes(typed)
        self._interpreter: Interpreter | None = None
        self._fp_interpreter: Interpreter | None = None

    def run_interpreted(self, states: np.ndarray, memory: np.ndarray, cycles: np.ndarray | None,
                        state_memory: np.ndarray | None = None, offset: int = 0, buffers: int = 0,
                        fp_env: np.ndarray | None = None) -> np.void | None:
        """Run the Python compute() itself on views of ``memory`` (list tables and state vectors in
        ``state_memory``, list entries ``offset`` bytes short, or ``buffers`` for rows in exchange
        buffers), under the vertices' floating-point control words ``fp_env`` if given; None or a
        filled ERR_DTYPE record."""
        if fp_env is not None:
            if self._fp_interpreter is None:
                self._fp_interpreter = Interpreter(self.typed.parsed, self.written_state, FpRun())
            return self._fp_interpreter.run(states, memory, cycles, state_memory, offset, buffers, fp_env)
        if self._interpreter is None:
            self._interpreter = Interpreter(self.typed.parsed, self.written_state)
        return self._interpreter.run(states, memory, cycles, state_memory, offset, buffers)


def _code_bytes(typed: TypedCodelet) -> int:
    """:func:`code_bytes`, kept beside the kernels in the disk cache (modelling it walks the
    unrolled compute body: a noticeable part of a fresh process's first Engine build)."""
    key = hashlib.sha256("\n".join(["code bytes", COMPILER_VERSION, compiler_digest(),
                                     typed.parsed.fingerprint()]).encode())
    cached = jit.cache_read(key.hexdigest())
    if cached is not None and cached.isdigit():
        return int(cached)
    n = code_bytes(typed)
    jit.cache_write(key.hexdigest(), str(n).encode())
    return n


_infos: dict[type, CodeletInfo] = {}


@_deep
def codelet_info(cls: type) -> CodeletInfo:
    """The codelet's :class:`CodeletInfo` (checking it first; memoised)."""
    info = _infos.get(cls)
    if info is None:
        info = _infos[cls] = CodeletInfo(_typed(cls))
    return info


def codelet_fingerprint(cls: type) -> str:
    """Everything a codelet's generated code depends on, as text (its normalised source, fields
    and the values its global names resolved to)."""
    return codelet_info(cls).typed.parsed.fingerprint()


def kernel_key(typed: TypedCodelet, options: KernelOptions) -> KernelKey:
    """The cache key: source (normalised AST with lines), fields, options, compiler, LLVM and CPU."""
    text = "\n".join([COMPILER_VERSION, compiler_digest(), typed.parsed.fingerprint(), repr(options),
                      jit.host_fingerprint()])
    return KernelKey(hashlib.sha256(text.encode()).hexdigest())


@_deep
def generate_ir(typed: TypedCodelet, key: KernelKey, options: KernelOptions) -> KernelIR:
    """The codegen pass: typed codelet -> LLVM IR text."""
    triple, layout = jit.target_info()
    builder = KernelBuilder(typed, key.symbol, options.checked, options.fast_math, triple, layout,
                            lanes=options.lanes, fp=options.fp)
    return KernelIR(key, builder.build())


@_deep
def compile_codelet(cls: type, options: KernelOptions = KernelOptions()) -> CompiledCodelet:
    """Compile ``cls`` to a native kernel (memoised in-process and on disk)."""
    done = _compiled.get((cls, options))
    if done is not None:
        return done
    typed = _typed(cls)
    key = kernel_key(typed, options)
    obj, ir_text, address = jit.cache_read(key.digest), "", None
    if obj is not None:
        try:
            address = jit.load_object(obj, f"lib_{key.digest}", key.symbol)
        except RuntimeError:  # an entry that passed its checks but does not link: a miss
            obj = None
    if obj is None:
        ir_text = generate_ir(typed, key, options).text
        obj = jit.compile_ir(ir_text, options.opt_level)
        jit.cache_write(key.digest, obj)
        address = jit.load_object(obj, f"lib_{key.digest}_{len(ir_text)}", key.symbol)
    compiled = CompiledCodelet(typed, options, key, address, len(obj), ir_text)
    compiled.cache_hit = not ir_text
    _compiled[(cls, options)] = compiled
    return compiled


class CompiledCodelet:
    """A compiled vertex class: its state record layout and the native batch runner."""

    def __init__(
        self,
        typed: TypedCodelet,
        options: KernelOptions,
        key: KernelKey,
        address: int,
        object_size: int,
        ir_text: str,
    ) -> None:
        self.cls: type = typed.parsed.cls
        self.typed, self.options, self.key = typed, options, key
        self.state_dtype: np.dtype = state_layout(typed.parsed.fields, typed.written)[0]
        self.object_size = object_size
        self.cache_hit = False  # True when the object came from the disk cache
        self._ir = ir_text
        self._fn = (_RUN_FP_TYPE if options.fp else _RUN_TYPE)(address)

    @property
    def ir(self) -> str:
        """The unoptimised LLVM IR (regenerated on first access after a cache hit)."""
        if not self._ir:
            self._ir = generate_ir(self.typed, self.key, self.options).text
        return self._ir

    def run(self, states_addr: int, n: int, slots_addr: int, sums_addr: int, err_addr: int,
            offset: int = 0, buffers: int = 0, budget: int = NO_BUDGET, env_addr: int = 0) -> int:
        """Run compute() for n state records at states_addr in one native call, adding vertex i's
        cycles to the int64 ``sums[slots[i]]`` (slots: int64, negative for none; 0 for no cycles);
        0 if all succeeded, else the error code after filling the ERR_DTYPE record at err_addr for
        the first failure. List entries hold addresses ``offset`` bytes short of their rows (those
        marked BUFFER_ENTRY, in exchange buffers, ``buffers`` bytes short). Checked, a vertex that
        counts more than ``budget`` cycles fails, and Ctrl-C stops the kernel (ERR_INTERRUPTED)
        inside ``interrupts.interruptible``. A floating-point kernel takes the vertices'
        FP_ENV_DTYPE records at ``env_addr``."""
        args = (states_addr, n, slots_addr or None, sums_addr or None, err_addr, offset, buffers, budget,
                interrupts.stop_address())
        return self._fn(*args, env_addr) if self.options.fp else self._fn(*args)


def error_message(cls: type, err_record: np.void, vertex_desc: str) -> str:
    """A human message for an error record: names the vertex, field, index, size and file:line."""
    parsed: ParsedCodelet = _typed(cls).parsed
    code, line = int(err_record["code"]), int(err_record["line"])
    where = f"{parsed.file}:{line}"
    if code == ERR_RETURNED_FALSE:
        return f"{vertex_desc}: {cls.__name__}.compute returned False ({where})"
    if code == ERR_ASSERTION:
        what = parsed.asserts.get(line, "assert")
        return f"{vertex_desc}: assertion failed in {cls.__name__}.compute: {what} ({where})"
    if code == ERR_OUT_OF_BOUNDS:
        field = parsed.describe_field(int(err_record["field"]))
        return (
            f"{vertex_desc}: index {int(err_record['index'])} is out of bounds for {field} "
            f"of size {int(err_record['size'])} in {cls.__name__}.compute ({where})"
        )
    if code == ERR_FP_EXCEPTION:
        return (f"{vertex_desc}: floating-point exception: {describe(int(err_record['field']))} in "
                f"{cls.__name__}.compute ({where})")
    if code == ERR_RANGE_STEP:
        return f"{vertex_desc}: range() arg 3 must not be zero in {cls.__name__}.compute ({where})"
    if code == ERR_CYCLE_BUDGET:
        budget, counted = int(err_record["size"]), int(err_record["index"])
        return (f"{vertex_desc}: codelet {cls.__name__} runs past the cycle budget of {budget} cycles "
                f"(engine option codelets.cycleBudget) in {cls.__name__}.compute ({where}, having counted "
                f"{counted}): a loop that never ends, or a budget too small for the vertex")
    if code == ERR_INTERRUPTED:
        return f"{vertex_desc}: stopped by Ctrl-C in {cls.__name__}.compute ({where})"
    return f"{vertex_desc}: {cls.__name__}.compute failed with error code {code} ({where})"
