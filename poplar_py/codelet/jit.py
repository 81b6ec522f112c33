"""The process-wide LLVM JIT (ORC LLJIT) and the on-disk cache of compiled kernel objects.

Compiling a kernel: parse the IR text, verify it, optimise it with the new pass manager (loop and
SLP vectorisation on), emit an object file for the host CPU, and link that object into the LLJIT.
The object bytes are what the disk cache stores. All LLVM calls hold one lock: the global
LLVMContext is not thread-safe.

Cache: ``$POPLAR_PY_CACHE_DIR`` (default ``~/.cache/poplar_py/kernels``), one file per key,
``<key[:2]>/<key>.o``, holding a magic line, the sha256 of the object and the object. A file
that does not check out is ignored (and rewritten). ``POPLAR_PY_CACHE=0`` disables the cache.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llvmlite
import llvmlite.binding as llvm

from ..errors import CodeletCompileError
from . import prints

_LOCK = threading.RLock()
_MAGIC = b"POPLAR_PY_KERNEL 2\n"  # then the key (64 hex digits), sha256(key + object), the object


@dataclass
class _Jit:
    tm: Any
    lljit: Any
    fingerprint: str
    triple: str
    data_layout: str


_jit: _Jit | None = None
#: every linked object stays loaded for the life of the process: name -> (tracker, addresses)
_loaded: dict[str, tuple[Any, dict[str, int]]] = {}


def _get() -> _Jit:
    global _jit
    with _LOCK:
        if _jit is None:
            llvm.initialize_native_target()  # not llvm.initialize(): it raises since llvmlite 0.45
            llvm.initialize_native_asmprinter()
            triple = llvm.get_process_triple()
            cpu = llvm.get_host_cpu_name()
            try:
                features = llvm.get_host_cpu_features().flatten()
            except RuntimeError:  # some architectures cannot report features
                features = ""
            tm = llvm.Target.from_triple(triple).create_target_machine(
                cpu=cpu, features=features, opt=3, reloc="static", codemodel="jitdefault", jit=True
            )
            layout = str(tm.target_data)
            fingerprint = "|".join(
                [
                    llvmlite.__version__,
                    ".".join(map(str, llvm.llvm_version_info)),
                    triple,
                    layout,
                    cpu,
                    features,
                ]
            )
            _jit = _Jit(tm, llvm.create_lljit_compiler(tm), fingerprint, triple, layout)
        return _jit


def target_info() -> tuple[str, str]:
    """(triple, data layout) to put in generated modules."""
    j = _get()
    return j.triple, j.data_layout


def host_fingerprint() -> str:
    """llvmlite and LLVM versions, triple, data layout, CPU name and features (part of cache keys)."""
    return _get().fingerprint


def compile_ir(ir_text: str, opt_level: int) -> bytes:
    """IR text -> optimised native object bytes for this host."""
    j = _get()
    with _LOCK:
        try:
            mod = llvm.parse_assembly(ir_text)
            mod.verify()  # never let bad IR reach LLVM's assertions (they abort the process)
        except RuntimeError as exc:
            raise CodeletCompileError(f"internal compiler error: invalid LLVM IR: {exc}") from None
        pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
        pto.loop_vectorization = opt_level >= 2
        pto.slp_vectorization = opt_level >= 2
        pb = llvm.create_pass_builder(j.tm, pto)
        pb.getModulePassManager().run(mod, pb)
        return j.tm.emit_object(mod)


def run_passes(ir_text: str, passes: list[str]) -> str:
    """IR text after the module passes named (``ModulePassManager.add_<name>_pass``), for the
    host's target machine: a step before :func:`compile_ir` (the C++ codelets' inlining).
    Raises RuntimeError for IR that does not parse or verify."""
    j = _get()
    with _LOCK:
        mod = llvm.parse_assembly(ir_text)
        mod.verify()
        pb = llvm.create_pass_builder(j.tm, llvm.create_pipeline_tuning_options(speed_level=0))
        mpm = llvm.create_new_module_pass_manager()
        for name in passes:
            getattr(mpm, f"add_{name}_pass")()
        mpm.run(mod, pb)
        return str(mod)


def load_object(obj: bytes, name: str, symbol: str) -> int:
    """Link an object into the process's LLJIT and return the address of ``symbol``."""
    return load_symbols(obj, name, [symbol])[symbol]


def load_symbols(obj: bytes, name: str, symbols: list[str]) -> dict[str, int]:
    """Link an object into the process's LLJIT and return the addresses of ``symbols``."""
    j = _get()
    with _LOCK:
        if name not in _loaded:
            builder = llvm.JITLibraryBuilder().add_object_img(obj).add_current_process()
            builder.import_symbol(prints.CALLBACK_SYMBOL, prints.callback_address())
            for symbol in symbols:
                builder.export_symbol(symbol)
            tracker = builder.link(j.lljit, name)
            # the tracker owns the code: keep it alive
            _loaded[name] = (tracker, {symbol: tracker[symbol] for symbol in symbols})
        return _loaded[name][1]


def cache_dir() -> Path | None:
    """Where compiled kernels are cached, or None when the cache is disabled."""
    if os.environ.get("POPLAR_PY_CACHE", "1") == "0":
        return None
    base = os.environ.get("POPLAR_PY_CACHE_DIR")
    return Path(base) if base else Path.home() / ".cache" / "poplar_py" / "kernels"


def _cache_path(key: str) -> Path | None:
    d = cache_dir()
    return None if d is None else d / key[:2] / f"{key}.o"


def cache_read(key: str) -> bytes | None:
    """The cached object for ``key``, or None if absent, unreadable, corrupted or another key's."""
    path = _cache_path(key)
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head = len(_MAGIC)
    if not data.startswith(_MAGIC) or len(data) < head + 96:
        return None
    stored, digest, obj = data[head : head + 64], data[head + 64 : head + 96], data[head + 96 :]
    if stored != key.encode() or hashlib.sha256(stored + obj).digest() != digest:
        return None
    return obj


def cache_write(key: str, obj: bytes) -> None:
    """Store an object atomically (temporary file + os.replace); errors only lose the cache entry."""
    path = _cache_path(key)
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_MAGIC + key.encode() + hashlib.sha256(key.encode() + obj).digest() + obj)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass
