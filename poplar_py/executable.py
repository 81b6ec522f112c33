"""Compiled executables: ``compileGraph`` ahead of time, ``serialize`` to a file, ``deserialize``
in another process, ``Engine(exe)``, as Poplar has them.

An executable is the frozen graph IR and what the compiler passes made of it: the memory
layout, the exchange plans, the vertex state tables and the lowered programs. A file holds
them pickled, behind a header (magic, format version, length and CRC-32 of the payload, which
finds corruption and truncation) that is checked before anything is unpickled; what is
unpickled is checked against the structure of an executable before it is used. What belongs
to one process is left out and rebuilt on loading: the tile memories (zeroed), the native
kernels (from the on-disk kernel cache, or compiled again) and the addresses in the state
tables (moved to the new memories).
Codelet classes loaded from a ``.py`` file travel as that file's source; classes of the
program's ``__main__`` as the source of what they need from it (:mod:`poplar_py.vertex_types.inline`);
template instances as their template and arguments; classes of importable modules by name.
"""

from __future__ import annotations

import importlib
import io
import os
import pickle
import struct
import sys
import types
import zlib
from collections.abc import Callable, Sequence
from typing import IO, Any

import numpy as np

from . import program as prog
from .checks.annotations import mismatch
from .compiler.graph_compiler import CompiledGraph, compile_graph
from .debug import debug_name
from .errors import ExecutableError, InvalidArgumentError
from .graph import Graph
from .ir import GraphIR
from .options import EngineOptions, parseEngineOptions
from .runtime.host_memory import release_freed_heap
from .vertex_types.inline import inline_source, is_inline, module_name
from .vertex_types.loading import codelet_source, import_codelet_source

_MAGIC = b"POPLAR_PY_EXECUTABLE\n"
#: 2: one compiled replica for every replica; 3: liveness as intervals, value constants in the IR;
#: 4: shared exchange buffers (list entries flagged), cross-replica copies by replica pairs;
#: 5: remote buffers (their declarations, and remote copy steps);
#: 6: steps as data, compute sets as ComputeSetTables, the cycle model in poplar_py.cycles
FORMAT_VERSION = 6
_HEADER = struct.Struct("<IIQ")  # format version, CRC-32 of the payload, payload length

File = str | os.PathLike | IO[bytes]


class Executable:
    """A compiled graph and its programs, ready for ``Engine(exe)``."""

    def __init__(self, ir: GraphIR, compiled: CompiledGraph, options: EngineOptions) -> None:
        self.ir, self.compiled, self.options = ir, compiled, options
        self.taken = False  # an Engine owns the compiled graph and its tile memories

    def take(self) -> CompiledGraph:
        """The compiled graph, for the one Engine that may use it (Poplar moves an executable
        into its Engine): a second Engine would share its tile memories."""
        if self.taken:
            raise ExecutableError("this Executable already built an Engine; deserialize it again or compile "
                                  "again for another Engine")
        self.taken = True
        return self.compiled

    def serialize(self, file: File) -> None:
        """Write the executable to ``file`` (a path or a binary file object). A wrong kind of
        ``file`` raises InvalidArgumentError; a file that cannot be written, ExecutableError."""
        name = _file_name(file, "write", "Executable.serialize")
        buffer = io.BytesIO()
        # The engine reads the IR for its profile only.
        _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump((self.ir.compiled(), self.compiled,
                                                                 self.options))
        payload = buffer.getvalue()
        data = _MAGIC + _HEADER.pack(FORMAT_VERSION, zlib.crc32(payload), len(payload)) + payload
        try:
            if isinstance(file, (str, os.PathLike)):
                with open(file, "wb") as f:
                    f.write(data)
            else:
                file.write(data)  # type: ignore[union-attr]
        except TypeError as exc:  # a file object that takes no bytes
            raise InvalidArgumentError(f"Executable.serialize: file '{name}' does not take bytes ({exc}): "
                                       "open it in binary mode") from None
        except (OSError, ValueError) as exc:  # (ValueError: a closed file)
            raise ExecutableError(f"cannot write the executable '{name}': {exc}") from None

    @staticmethod
    def deserialize(file: File) -> Executable:
        """Read an executable written by :meth:`serialize` from ``file`` (a path or a binary file
        object). A wrong kind of ``file`` raises InvalidArgumentError; a file that cannot be
        read, is not an executable, or is corrupt, truncated or followed by other bytes raises
        ExecutableError naming it."""
        name = _file_name(file, "read", "Executable.deserialize")
        try:
            if isinstance(file, (str, os.PathLike)):
                with open(file, "rb") as f:
                    data = f.read()
            else:
                data = file.read()  # type: ignore[union-attr]
        except (OSError, ValueError) as exc:  # (ValueError: a closed file)
            raise ExecutableError(f"cannot read the executable '{name}': {exc}") from None
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise InvalidArgumentError(f"Executable.deserialize: file '{name}' gave {type(data).__name__}, "
                                       "not bytes: open it in binary mode")
        payload = _payload(memoryview(data), name)
        try:
            loaded = pickle.loads(payload)
        except ExecutableError:
            raise
        except Exception as exc:
            raise ExecutableError(f"'{name}' could not be loaded: {type(exc).__name__}: {exc}") from exc
        ir, compiled, options = _checked_parts(loaded, name)
        for tables in compiled.lowered.tables:
            tables.rebase(compiled.layout.arena.ctypes.data, compiled.layout.shared.ctypes.data)
        return Executable(ir, compiled, options)


def compileGraph(graph: Graph, programs: prog.Program | Sequence[prog.Program],
                 options: dict[str, Any] | None = None,
                 progressCallback: Callable[[int, int], object] | None = None,
                 debugContext: object = "") -> Executable:
    """Compile ``graph`` with ``programs`` (one or a list) as an Engine would, without building
    one: the passes run on the frozen graph, and the codelets' kernels are compiled. As Poplar's
    ``ProgressFunc``, ``progressCallback(done, total)`` is called before each compiler pass with
    the passes done so far, and with ``(total, total)`` at the end."""
    if not isinstance(graph, Graph):
        raise InvalidArgumentError(f"compileGraph needs a Graph, got {type(graph).__name__} {graph!r:.40}")
    checked_progress(progressCallback, "compileGraph")
    debug_name(debugContext, "compileGraph: debugContext")
    parsed = parseEngineOptions(options)
    entries = list(programs) if isinstance(programs, (list, tuple)) else [programs]
    # (the edges go on the way)
    ir, compiled = compile_graph(_dumped(graph.freeze()), entries, parsed, progressCallback)
    executable = Executable(ir, compiled, parsed)
    release_freed_heap()  # the passes' working data: the Engine's memory is what it keeps
    return executable


def checked_progress(callback: object, what: str) -> None:
    """A progress callback is None or callable; InvalidArgumentError naming ``what`` otherwise."""
    if callback is not None and not callable(callback):
        raise InvalidArgumentError(f"{what}: progressCallback must be callable as callback(done, total), "
                                   f"got {type(callback).__name__} {callback!r:.40}")


def _dumped(ir: GraphIR) -> GraphIR:
    """``ir``, written as text to ``$POPLAR_PY_DUMP_IR`` when that is set."""
    dump = os.environ.get("POPLAR_PY_DUMP_IR")
    if dump:
        with open(dump, "w") as f:
            f.write(ir.text())
    return ir


def _payload(data: memoryview, name: str) -> memoryview:
    """The checked payload of an executable file's bytes (a view: no copy of a large file)."""
    if bytes(data[: len(_MAGIC)]) != _MAGIC:
        raise ExecutableError(f"'{name}' is not a poplar-py executable (no {_MAGIC.strip().decode()} header)")
    head = len(_MAGIC)
    if len(data) < head + _HEADER.size:
        raise ExecutableError(f"'{name}' is truncated: its header is incomplete")
    version, digest, length = _HEADER.unpack_from(data, head)
    if version != FORMAT_VERSION:
        raise ExecutableError(f"'{name}' is an executable of format {version}; this poplar-py reads "
                              f"format {FORMAT_VERSION}: compile it again")
    payload = data[head + _HEADER.size:]
    if len(payload) < length:
        raise ExecutableError(f"'{name}' is truncated: {len(payload)} of {length} bytes")
    if len(payload) > length:
        raise ExecutableError(f"'{name}' has {len(payload) - length} trailing bytes after its {length}-byte "
                              "payload")
    if zlib.crc32(payload) != digest:
        raise ExecutableError(f"'{name}' is corrupt: its checksum does not match")
    return payload


def _file_name(file: Any, method: str, what: str) -> str:
    """The name of ``file`` for messages, once it is known to be a path or a binary file object
    with the method ``method``; InvalidArgumentError naming the argument otherwise."""
    if isinstance(file, (str, os.PathLike)):
        return os.fsdecode(os.fspath(file))
    kind = f"{type(file).__name__} {file!r:.40}"
    if isinstance(file, (bytes, bytearray, memoryview)):
        raise InvalidArgumentError(f"{what}: file must be a path or a binary file object, got {kind} "
                                   "(bytes holding an executable go in an io.BytesIO)")
    if isinstance(file, io.TextIOBase):
        raise InvalidArgumentError(f"{what}: file {kind} is a text-mode file: open it in binary mode")
    if not callable(getattr(file, method, None)):
        raise InvalidArgumentError(f"{what}: file must be a path or a binary file object (with {method}()), "
                                   f"got {kind}")
    return str(getattr(file, "name", "<stream>"))


def _checked_parts(loaded: Any, name: str) -> tuple[GraphIR, CompiledGraph, EngineOptions]:
    """The (IR, compiled graph, options) a payload unpickled to, once it is known to be one: each
    object holding fields of their declared types (:mod:`.checks.annotations`), the tile memory there."""
    parts = tuple[GraphIR, CompiledGraph, EngineOptions]
    problem = mismatch(loaded, parts, "payload")
    if problem is None and not isinstance(loaded[1].layout.arena, np.ndarray):
        problem = "its compiled graph has no tile memory"
    if problem is not None:
        raise ExecutableError(f"'{name}' does not hold an executable: {problem}")
    return loaded


class _Pickler(pickle.Pickler):
    """Pickles classes by the source of their codelet file, or as template instances."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, types.MappingProxyType):
            return _mapping_proxy, (dict(obj),)
        if isinstance(obj, types.ModuleType):  # a module an inline codelet uses
            return importlib.import_module, (obj.__name__,)
        if not isinstance(obj, type):
            return NotImplemented
        args = obj.__dict__.get("templateArgs")
        if args is not None:
            return _instance, (obj.__mro__[1], args)
        source = codelet_source(obj.__module__)
        if source is not None:
            return _codelet_class, (obj.__module__, source, obj.__qualname__)
        if is_inline(obj):
            return _inline_class, (*inline_source(obj), obj.__qualname__)
        module = sys.modules.get(obj.__module__)
        if module is None or getattr(module, "__spec__", None) is None:
            raise ExecutableError(f"cannot serialize class {obj.__qualname__} of module {obj.__module__}: "
                                  "put codelets in a .py file given to graph.addCodelets(path), in an "
                                  "importable module or in the program's __main__")
        return NotImplemented


def _mapping_proxy(values: dict) -> types.MappingProxyType:
    return types.MappingProxyType(values)


def _codelet_class(module: str, source: str, qualname: str, namespace: dict[str, Any] | None = None) -> type:
    """A class of a codelet file, from the file's source (run with ``namespace`` set)."""
    obj: Any = import_codelet_source(module, source, namespace)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _inline_class(source: str, namespace: dict[str, Any], qualname: str) -> type:
    """A class of the program's ``__main__``, from the source :func:`inline_source` made."""
    return _codelet_class(module_name(source, namespace), source, qualname, namespace)


def _instance(template: Any, args: tuple) -> type:
    """A template vertex class bound to its arguments (the same class object on every call)."""
    return template.instantiate(*args)
