"""C++ codelet files: clang -> LLVM IR -> counted and checked -> the JIT, as Python codelets run.

The passes, each on one file (one LLVM module per file, so two files' macros never meet)::

    layouts     clang -fsyntax-only, record layouts  -> VertexRecord per vertex class + the
                                                        files it read (cache validation)
    fields      records.field_spec / check_layout   -> FieldSpecs, offsets checked against the
                                                        engine's state record
    lower       clang -emit-llvm of a wrapper TU      -> IR: the file (its functions always_inline),
                                                        then POPLAR_PY_VERTEX(symbol, Class) each
    inline      LLVM always-inliner + SROA + DCE      -> each entry holds its whole compute
    instrument  instrument.instrument(checked)        -> cycle counts, checks, hooks replaced
    optimise    jit.compile_ir                        -> object (disk cache), linked in the LLJIT

The first three run when a file is added (their result, the inlined IR and the vertex records,
is cached on disk by a hash of the source, the files it includes, the flags and the toolchain);
the last two when an Engine first needs a kernel, once per kernel option set.
"""

from __future__ import annotations

import copyreg
import functools
import hashlib
import os
import re
import shlex
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import llvmlite

from ..codelet import jit
from ..codelet.codegen import state_layout
from ..codelet.codelet_compiler import KernelOptions
from ..errors import CodeletError
from ..vertex import Direction, FieldSpec, MultiVertex, Vertex
from . import instrument, manifest
from .records import VertexRecord, check_layout, field_spec, vertex_records
from .toolchain import INCLUDE_DIR, Clang, clang

#: part of every cache key (with the digest of this package's sources and headers)
VERSION = "1"
_STANDARD = "-std=c++17"
_CLANG_FLAGS = [
    "-fno-exceptions",
    "-fno-rtti",
    "-fno-threadsafe-statics",
    "-fno-math-errno",
    # floating point as the Engine's codelets.fastMath option says (added per kernel, as for
    # the Python codelets): strict IEEE by default, a * b + c rounded twice
    "-ffp-contract=off",
    "-Xclang",
    "-ffloat16-excess-precision=none",
    "-Wno-c++26-extensions",
    "-Wno-ignored-attributes",
    "-Wno-unknown-attributes",
]


@functools.cache
def _digest() -> str:
    """This package's code and shipped headers: a change to either is a new cache key."""
    h = hashlib.sha256(VERSION.encode())
    folder = Path(__file__).parent
    for path in sorted([*folder.glob("*.py"), *INCLUDE_DIR.rglob("*")]):
        if path.is_file():
            h.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


@dataclass
class CxxFile:
    """One added C++ codelet file: its vertex records and its inlined IR."""

    file: str  # the path as errors name it
    key: str  # the text, the flags, the toolchain
    made: manifest.Manifest
    origin: tuple[str, str, str, bool]  # (path, source text, flags, given as text): to load it again
    _kernels: dict[KernelOptions, dict[str, int]] = field(default_factory=dict, repr=False)

    @property
    def records(self) -> list[VertexRecord]:
        return self.made.records

    @property
    def symbols(self) -> list[str]:
        return self.made.symbols

    @property
    def ir(self) -> str:
        return self.made.ir

    @functools.cached_property
    def digest(self) -> str:
        """The source, flags and toolchain (``key``) and what the headers it includes made of it."""
        return hashlib.sha256(f"{self.key}\n{self.ir}".encode()).hexdigest()

    def entries(self) -> dict[str, int]:
        """Each vertex's entry function, with the stride of its records when it may run in
        lockstep lanes (see _entries)."""
        return _entries(self.symbols, self.records)

    def addresses(self, options: KernelOptions) -> dict[str, int]:
        """The batch runner of every vertex, compiled with ``options`` (cached on disk)."""
        options = KernelOptions(
            checked=options.checked, fast_math=options.fast_math, opt_level=options.opt_level
        )
        found = self._kernels.get(options)
        if found is not None:
            return found
        key = hashlib.sha256(
            "\n".join([self.digest, repr(options), jit.host_fingerprint()]).encode()
        ).hexdigest()
        obj = jit.cache_read(key)
        if obj is None:
            # strict IEEE only: with fast-math a vertex's own loops vectorise (as the Python codelets)
            entries = self.entries() if not options.fast_math else dict.fromkeys(self.entries(), 0)
            text = instrument.instrument(self.ir, entries, self.file, options.checked)
            if options.fast_math:
                text = _fast_math(text)
            obj = jit.compile_ir(text, options.opt_level)
            jit.cache_write(key, obj)
        found = self._kernels[options] = jit.load_symbols(obj, f"cxx_{key}", self.symbols)
        return found


class CxxVertexType(type):
    """The metaclass of C++ vertex classes: pickled as the file and vertex they came from."""


class CxxVertex(Vertex, metaclass=CxxVertexType):
    """Base of the vertex classes made for a C++ codelet file's vertices. Each has (unannotated:
    annotations of a vertex class declare fields) ``cxxFile`` (its CxxFile), ``cxxSymbol`` (its
    batch runner's name) and ``cxxRecord`` (clang's layout, whose ``base`` says which kind)."""


class CxxMultiVertex(CxxVertex, MultiVertex, metaclass=CxxVertexType):
    """Base of the classes made for C++ MultiVertex (and SupervisorVertex) classes."""


def _reduce(cls: CxxVertexType) -> tuple:
    if cls in (CxxVertex, CxxMultiVertex):
        return cls.__qualname__
    return vertex_class, (*cls.cxxFile.origin, cls.vertexName)


copyreg.pickle(CxxVertexType, _reduce)


def vertex_class(path: str, text: str, flags: str, as_text: bool, name: str) -> type[CxxVertex]:
    """The class of vertex ``name`` of a C++ file (an unpickled executable's): from the file when
    it still holds ``text`` (its own includes then resolve as before), else from the text."""
    if not as_text and manifest.file_digest(path) != hashlib.sha256(text.encode()).hexdigest():
        path, as_text = Path(path).name, True
    classes = load(path, text if as_text else None, flags)
    return next(c for c in classes if c.vertexName == name)


_loaded: dict[str, list[type[CxxVertex]]] = {}


def load(path: str, source: str | None, flags: str) -> list[type[CxxVertex]]:
    """The vertex classes of a C++ codelet file (``source`` given: a CppSource text, ``path`` its
    name in messages); the same classes for the same text and flags. Raises CodeletError naming
    the file and line for what cannot run."""
    cxx = _compile(path, source, flags)
    known = _loaded.get(cxx.digest)
    if known is not None:
        return known
    classes: list[type[CxxVertex]] = []
    for record, symbol in zip(cxx.records, cxx.symbols):
        classes.append(_make_class(cxx, record, symbol, _fields(record, cxx.file)))
    _loaded[cxx.digest] = classes
    return classes


def _fields(record: VertexRecord, file: str) -> dict[str, FieldSpec]:
    """The record's fields, their layout checked against the engine's state record."""
    fields = {m.name: field_spec(record, m, file) for m in record.members}
    check_layout(record, fields, state_layout(fields)[0], file)
    return fields


def _make_class(
    cxx: CxxFile, record: VertexRecord, symbol: str, fields: dict[str, FieldSpec]
) -> type[CxxVertex]:
    base = CxxVertex if record.base == "Vertex" else CxxMultiVertex
    safe = "".join(ch if ch.isalnum() else "_" for ch in record.name)
    cls = CxxVertexType(safe, (base,), {"__module__": __name__, "__qualname__": safe})
    cls.fields = fields
    cls.vertexName = record.name.replace(", ", ",")
    cls.sourceFile = cxx.file
    cls.cxxFile, cls.cxxSymbol, cls.cxxRecord = cxx, symbol, record
    return cls


# the passes ---------------------------------------------------------------------------------------
def _compile(path: str, source: str | None, flags: str) -> CxxFile:
    tool = clang()
    user = _split_flags(flags)
    text = source if source is not None else _read(path)
    file = path if source is None else _source_file(path, text)
    base = hashlib.sha256(
        "\n".join([_digest(), tool.version, llvmlite.__version__, file, text, *user]).encode()
    )
    key = base.hexdigest()
    origin = (path, text, flags, source is not None)
    cached = manifest.read(key)
    if cached is not None:
        return CxxFile(file, key, cached, origin)
    std = [] if any(f.startswith("-std=") for f in user) else [_STANDARD]
    with tempfile.TemporaryDirectory() as scratch:
        deps_file = Path(scratch) / "deps"
        dump = tool.run(
            [
                *std,
                *_CLANG_FLAGS,
                *user,
                "-fsyntax-only",
                "-MD",
                "-MF",
                str(deps_file),
                "-Xclang",
                "-fdump-record-layouts-complete",
                "-Xclang",
                "-fdump-record-layouts-canonical",
                file,
            ],
            f"addCodelets('{path}')",
        )
        rule = deps_file.read_text() if deps_file.exists() else ""
        deps = manifest.dependencies(rule, file, (str(INCLUDE_DIR), str(tool.lib)))
    records = vertex_records(dump, file)
    if not records:
        raise CodeletError(
            f"addCodelets('{path}'): {file} defines no vertex classes (classes deriving from "
            "poplar::Vertex, poplar::MultiVertex or poplar::SupervisorVertex; a template "
            "counts once explicitly instantiated: template class MyVertex<float>;)"
        )
    for r in records:
        if "(anonymous" in r.name or "(lambda" in r.name:
            raise CodeletError(
                f"{file}: vertex {r.name} has no name addVertex can use: declare it outside "
                "anonymous namespaces"
            )
    symbols = [f"__poplar_py_v{key[:16]}_{k}" for k in range(len(records))]
    wrapper = "\n".join(
        [
            "#pragma clang attribute push(__attribute__((always_inline)), apply_to = function)",
            f'#include "{file}"',
            "#pragma clang attribute pop",
            "#include <poplar_py/entry.hpp>",
            *(f"POPLAR_PY_VERTEX({s}, {_mask(r, file)}, ::{r.name})" for s, r in zip(symbols, records)),
            "",
        ]
    )
    ir_text = _lower(
        tool,
        file,
        [
            *std,
            *_CLANG_FLAGS,
            "-O2",  # not -O1: clang would mark every loop llvm.loop.unroll.disable
            "-Xclang",
            "-disable-llvm-passes",
            "-gline-tables-only",
            *user,
            "-S",
            "-emit-llvm",
            "-o",
            "-",
            "-x",
            "c++",
            "-",
        ],
        f"addCodelets('{path}')",
        wrapper,
    )
    made = manifest.Manifest(records, symbols, _inline(ir_text, file, symbols))
    instrument.instrument(made.ir, _entries(symbols, records), file, checked=True)  # refusals now
    manifest.write(key, deps, made)
    return CxxFile(file, key, made, origin)


def _entries(symbols: list[str], records: list[VertexRecord]) -> dict[str, int]:
    """Each vertex's entry function, with the stride of its records when it may run in lockstep
    lanes (a Vertex; 0 for a MultiVertex or SupervisorVertex, as in Python)."""
    return {f"{s}_entry": r.size if r.base == "Vertex" else 0 for s, r in zip(symbols, records)}


def _mask(record: VertexRecord, file: str) -> str:
    """A C string of the record's bytes lanes must agree on: 0xff for vector sizes and state
    scalars, 0 for pointers and padding (checking the fields first)."""
    fields = _fields(record, file)
    state = state_layout(fields)[0]
    mask = bytearray(max(record.size, state.itemsize))
    for column in state.names:
        spec = fields[column.split(".")[0]]
        pointer = column.endswith(".ptr") or (column in fields and spec.direction is not Direction.STATE)
        if not pointer:
            dtype, offset = state.fields[column][:2]
            mask[offset : offset + dtype.itemsize] = b"\xff" * dtype.itemsize
    return '"' + "".join(f"\\x{b:02x}" for b in mask) + '"'


def _lower(tool: Clang, file: str, args: list[str], what: str, wrapper: str) -> str:
    """clang's IR of the wrapper; a vertex class without the compute() its kind needs is named."""
    try:
        return tool.run(args, what, source=wrapper)
    except CodeletError as exc:
        missing = re.search(r"no member named 'compute' in '([^']+)'", str(exc))
        if missing is None and "needs bool compute" not in str(exc):
            raise
        name = missing[1] if missing else "a vertex class"
        raise CodeletError(
            f"{file}: vertex {name} has no usable compute(): a Vertex needs bool compute(), a "
            f"MultiVertex bool compute(unsigned workerId)\n{exc}"
        ) from None


def _inline(ir_text: str, file: str, symbols: list[str]) -> str:
    """The always-inliner, SROA and dead-code elimination: what is counted is the code as written,
    every call inlined, locals in registers. Only the vertices' entries and runners stay visible
    (an explicitly instantiated compute() is emitted for itself too: it goes once inlined)."""
    exported = {*symbols, *(f"{s}_entry" for s in symbols)}
    # the host's CPU (as for the Python kernels), not clang's generic x86-64: F16C for half, AVX
    ir_text = re.sub(r' "(target-cpu|target-features|tune-cpu)"="[^"]*"', "", ir_text)
    ir_text = _DEFINE.sub(lambda m: m[0] if m["name"] in exported else _internal(m), ir_text)
    try:
        return jit.run_passes(ir_text, ["always_inliner", "sroa", "dead_code_elimination",
                                        "global_dead_code_eliminate"])
    except RuntimeError as exc:
        raise CodeletError(f"{file}: clang's IR does not load into llvmlite: {exc}") from None


_DEFINE = re.compile(r"^define (?P<head>[^@]*)@(?P<name>[-\w.$]+)(?P<tail>\(.*)$", re.MULTILINE)
_NOT_INTERNAL = re.compile(
    r"\b(private|internal|available_externally|linkonce|weak|common|extern_weak|"
    r"linkonce_odr|weak_odr|external|dso_local|dso_preemptable|hidden|protected|"
    r"default|dllimport|dllexport) "
)


def _internal(m: re.Match) -> str:
    """A ``define`` line with internal linkage (and no comdat, which internal symbols need not)."""
    head = _NOT_INTERNAL.sub("", m["head"])
    tail = re.sub(r" comdat(\([^)]*\))?", "", m["tail"])
    return f"define internal {head}@{m['name']}{tail}"


def _fast_math(text: str) -> str:
    """The Engine's fast-math option on a C++ codelet: the same flags as the Python codelets'
    (reassociation, contraction, no signed zeros, reciprocals, approximate functions)."""
    return re.sub(
        r"= (fadd|fsub|fmul|fdiv|frem|fneg) (?!reassoc|fast)", r"= \1 reassoc contract nsz arcp afn ", text
    )


def _split_flags(flags: str) -> list[str]:
    try:
        return shlex.split(flags)
    except ValueError as exc:
        raise CodeletError(
            f"addCodelets: compileFlags {flags!r} cannot be split into arguments: {exc}"
        ) from None


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise CodeletError(f"addCodelets('{path}'): cannot read the file: {exc}") from None


def _source_file(name: str, text: str) -> str:
    """A CppSource text written to a file of its own (clang reads files, and messages name it)."""
    folder = (jit.cache_dir() or Path(os.environ.get("TMPDIR", "/tmp")) / "poplar_py") / "cxx_sources"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}_{hashlib.sha256(text.encode()).hexdigest()[:16]}.cpp"
    if not path.exists():  # atomically: MPI ranks adding the same text write the same file
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".cpp")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    return str(path)
