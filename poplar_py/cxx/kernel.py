"""A compiled C++ vertex class as the engine uses it: its batch runner, its state record and
code size for planning, and the message of a failed vertex."""

from __future__ import annotations

import ctypes
import functools

import numpy as np

from ..codelet.codegen import state_layout
from ..codelet.codelet_compiler import NO_BUDGET, KernelOptions
from ..codelet.type_rules import ERR_DTYPE
from . import instrument
from .module import CxxVertex

#: (states, n, slots, sums, err, replica offset, buffers' offset) -> status, as the Python kernels'
_RUN_TYPE = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
                             ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


class CxxCompiled:
    """A C++ vertex class compiled with one set of options: its batch runner (the interface of
    the Python codelets' CompiledCodelet the engine calls)."""

    def __init__(self, cls: type[CxxVertex], options: KernelOptions) -> None:
        self.cls, self.options = cls, options
        self.state_dtype: np.dtype = state_layout(cls.fields)[0]
        self._fn = _RUN_TYPE(cls.cxxFile.addresses(options)[cls.cxxSymbol])

    def run(
        self,
        states_addr: int,
        n: int,
        slots_addr: int,
        sums_addr: int,
        err_addr: int,
        offset: int = 0,
        buffers: int = 0,
        budget: int = NO_BUDGET,
    ) -> int:
        """Run compute() for n state records in one native call (see CompiledCodelet.run; C++
        kernels are not held to a cycle budget, nor stopped by Ctrl-C: ``budget`` is ignored)."""
        return self._fn(states_addr, n, slots_addr or None, sums_addr or None, err_addr, offset, buffers)


class CxxInfo:
    """What planning needs of a C++ vertex class: its state record and its code size."""

    def __init__(self, cls: type[CxxVertex]) -> None:
        self.cls = cls
        self.state_dtype: np.dtype = state_layout(cls.fields)[0]
        self.code_bytes = instrument.code_bytes(cls.cxxFile.ir, f"{cls.cxxSymbol}_entry")

    @functools.cached_property
    def _checked(self) -> CxxCompiled:
        return CxxCompiled(self.cls, KernelOptions())

    def run_interpreted(
        self,
        states: np.ndarray,
        memory: np.ndarray,
        cycles: np.ndarray | None,
        state_memory: np.ndarray | None = None,
        offset: int = 0,
        buffers: int = 0,
    ) -> np.void | None:
        """C++ codelets have no interpreter: in interpreter mode they run compiled (checked)."""
        err = np.zeros(1, ERR_DTYPE)
        code = self._checked.run(states.ctypes.data, len(states), 0, 0, err.ctypes.data, offset, buffers)
        return err[0] if code else None


def error_message(cls: type[CxxVertex], err: np.void, vertex_desc: str) -> str:
    """What failed in a C++ vertex: the vertex, the field, the index, the size, file:line."""
    code, line = int(err["code"]), int(err["line"])
    file = cls.cxxFile.file
    where = f"{file}:{line}" if line > 0 else file
    method = f"{cls.cxxRecord.name}::compute"
    if code == instrument.ERR_RETURNED_FALSE:
        return f"{vertex_desc}: {method} returned false ({file})"
    if code == instrument.ERR_OUT_OF_BOUNDS:
        offset = int(err["field"])
        field = next((m.name for m in cls.cxxRecord.members if m.offset == offset), f"at byte {offset}")
        return (
            f"{vertex_desc}: index {int(err['index'])} is out of bounds for field '{field}' of size "
            f"{int(err['size'])} in {method} ({where})"
        )
    if code == instrument.ERR_ASSERTION:
        return f"{vertex_desc}: assertion failed in {method} ({where})"
    if code == instrument.ERR_DIVIDE:
        return (
            f"{vertex_desc}: integer division by zero (or of the most negative value by -1) in "
            f"{method} ({where})"
        )
    return f"{vertex_desc}: {method} called abort(), exit() or a trap ({where})"
