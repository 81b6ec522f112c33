"""The codelet back ends behind one interface: Python classes (:mod:`codelet.codelet_compiler`)
and C++ files (:mod:`cxx.module`). Planning, the engine and executables ask this module for a vertex
class's state record, code size, kernel and error messages, whatever language it was written in.
"""

from __future__ import annotations

import numpy as np

from ..codelet import codelet_compiler
from ..codelet.codelet_compiler import CodeletInfo, CompiledCodelet, KernelOptions
from ..cxx.kernel import CxxCompiled, CxxInfo
from ..cxx.kernel import error_message as cxx_error_message
from ..cxx.module import CxxVertex

Info = CodeletInfo | CxxInfo
Compiled = CompiledCodelet | CxxCompiled

DEFAULT = KernelOptions()
_infos: dict[type, CxxInfo] = {}
_compiled: dict[tuple[type, KernelOptions], CxxCompiled] = {}


def is_cxx(cls: type) -> bool:
    """Whether ``cls`` is a vertex of a C++ codelet file."""
    return issubclass(cls, CxxVertex)


def check_codelet(cls: type) -> None:
    """Check a vertex class now (a C++ file's classes were checked when it was compiled)."""
    if not is_cxx(cls):
        codelet_compiler.check_codelet(cls)


def codelet_info(cls: type) -> Info:
    """The class's state record and code size (memoised)."""
    if not is_cxx(cls):
        return codelet_compiler.codelet_info(cls)
    info = _infos.get(cls)
    if info is None:
        info = _infos[cls] = CxxInfo(cls)
    return info


def written_state(cls: type) -> tuple[str, ...]:
    """The vertex state fields the class's compute writes, kept in tile memory (each replica its
    own copy) for the next run. A C++ vertex's state is its record: none here."""
    return () if is_cxx(cls) else codelet_compiler.codelet_info(cls).written_state


def compile_codelet(cls: type, options: KernelOptions = DEFAULT) -> Compiled:
    """The class's native batch runner (memoised in-process and on disk)."""
    if not is_cxx(cls):
        return codelet_compiler.compile_codelet(cls, options)
    done = _compiled.get((cls, options))
    if done is None:
        done = _compiled[(cls, options)] = CxxCompiled(cls, options)
    return done


def codelet_fingerprint(cls: type) -> str:
    """Everything the class's code depends on, as text."""
    if is_cxx(cls):
        return f"C++ {cls.cxxFile.digest} {cls.cxxSymbol}"
    return codelet_compiler.codelet_fingerprint(cls)


def error_message(cls: type, err_record: np.void, vertex_desc: str) -> str:
    """A message for a failed vertex naming the vertex, the field, the index and the line."""
    if is_cxx(cls):
        return cxx_error_message(cls, err_record, vertex_desc)
    return codelet_compiler.error_message(cls, err_record, vertex_desc)
