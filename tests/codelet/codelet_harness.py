"""Test helpers for the codelet compiler: build vertex state tables in a numpy arena and run them.

There is no engine here: fields are placed in one uint8 arena (as the engine does) and the state
records hold absolute addresses into it, so the same table drives ``run`` and ``run_interpreted``.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llvmlite.binding as llvm
import numpy as np
from support import isolated_cache  # noqa: F401 - re-exported: an autouse fixture for the tests

from poplar_py.codelet import jit
from poplar_py.codelet.codelet_compiler import (
    ERR_DTYPE,
    VECTOR_LIST_ENTRY_DTYPE,
    CodeletInfo,
    KernelOptions,
    codelet_info,
    compile_codelet,
)
from poplar_py.vertex import Direction, FieldKind

STRICT = KernelOptions(fast_math=False)
MODES = ("native", "interp")
_counter = itertools.count()


PRELUDE = (
    "import math\n"
    "from poplar_py.types import *\n"
    "from poplar_py.vertex import Vertex, MultiVertex, Input, Output, InOut, Vector, VectorList\n"
)


def load_module(directory: Path, source: str, prelude: bool = True) -> Any:
    """Write ``source`` to a fresh .py file and import it (codelets need a real source file)."""
    name = f"codelet_test_{os.getpid()}_{next(_counter)}"
    path = directory / f"{name}.py"
    path.write_text((PRELUDE if prelude else "") + source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class Arena:
    """One uint8 buffer; every allocation is 64-byte aligned."""

    def __init__(self, nbytes: int) -> None:
        self.memory = np.zeros(nbytes, np.uint8)
        self.used = 0

    def alloc(self, values: Any, dtype: np.dtype) -> tuple[int, np.ndarray]:
        data = np.asarray(values, dtype=dtype).reshape(-1)
        start = (self.used + 63) // 64 * 64
        end = start + data.nbytes
        assert end <= self.memory.size, "test arena too small"
        self.used = end
        view = self.memory[start:end].view(dtype)
        view[:] = data
        return self.memory.ctypes.data + start, view


@dataclass
class Run:
    """The result of running a table of vertices: the error record (or None), cycles and field views."""

    err: np.void | None
    cycles: np.ndarray
    fields: list[dict[str, Any]]  # per vertex: field name -> numpy view (scalar edges: 1 element)


def build(
    compiled: CodeletInfo, vertices: list[dict[str, Any]], arena: Arena
) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """The state table for ``vertices`` (field name -> value / array / list of arrays)."""
    cls = compiled.cls
    states = np.zeros(len(vertices), compiled.state_dtype)
    views: list[dict[str, Any]] = []
    for i, values in enumerate(vertices):
        mine: dict[str, Any] = {}
        for name, spec in cls.fields.items():
            value, dt = values[name], spec.type.dtype
            if spec.kind is FieldKind.SCALAR and spec.direction is Direction.STATE \
                    and name not in compiled.written_state:
                states[i][name] = value
                mine[name] = value
            elif spec.kind is FieldKind.SCALAR:
                states[i][name], mine[name] = arena.alloc([value], dt)
            elif spec.kind is FieldKind.VECTOR:
                addr, mine[name] = arena.alloc(value, dt)
                states[i][f"{name}.ptr"], states[i][f"{name}.size"] = addr, mine[name].size
            else:
                rows = [arena.alloc(row, dt) for row in value]
                table = np.array([(addr, v.size) for addr, v in rows], VECTOR_LIST_ENTRY_DTYPE)
                states[i][f"{name}.ptr"] = arena.alloc(table, VECTOR_LIST_ENTRY_DTYPE)[0]
                states[i][f"{name}.size"] = len(rows)
                mine[name] = [v for _, v in rows]
        views.append(mine)
    return states, views


def _nbytes(value: Any) -> int:
    """A generous arena size for one field value (each allocation may waste 63 bytes)."""
    if isinstance(value, list) and value and isinstance(value[0], np.ndarray):
        return sum(_nbytes(row) for row in value) + 16 * len(value) + 128
    return np.asarray(value).size * 8 + 128


def run(
    cls: type, vertices: list[dict[str, Any]], mode: str = "native", options: KernelOptions = STRICT
) -> Run:
    """Run ``cls`` on ``vertices``: compiled natively, or in the interpreter (no LLVM)."""
    info = codelet_info(cls)
    arena = Arena(sum(_nbytes(v) for values in vertices for v in values.values()))
    states, views = build(info, vertices, arena)
    cycles = np.zeros(len(vertices), np.uint64)
    if mode == "native":
        compiled = compile_codelet(cls, options)
        err = np.zeros(1, ERR_DTYPE)
        slots, sums = np.arange(len(vertices), dtype=np.int64), np.zeros(len(vertices), np.int64)
        status = compiled.run(states.ctypes.data, len(vertices), slots.ctypes.data, sums.ctypes.data,
                              err.ctypes.data)
        return Run(err[0] if status else None, sums.astype(np.uint64), views)
    return Run(info.run_interpreted(states, arena.memory, cycles), cycles, views)


def run_one(cls: type, mode: str = "native", options: KernelOptions = STRICT, **values: Any) -> Run:
    return run(cls, [values], mode, options)


def same_bits(a: Any, b: Any) -> bool:
    """Equal element for element, NaN equal to NaN (payloads ignored)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        both_nan = np.isnan(a) & np.isnan(b)
        return bool(np.all(both_nan | (a.view(f"u{a.itemsize}") == b.view(f"u{b.itemsize}"))))
    return bool(np.array_equal(a, b))


def optimised_ir(cls: type, options: KernelOptions) -> str:
    """The kernel's IR after the optimisation pipeline jit.compile_ir runs (to look for vector code)."""
    compiled = compile_codelet(cls, options)
    with jit._LOCK:
        mod = llvm.parse_assembly(compiled.ir)
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pto.loop_vectorization = pto.slp_vectorization = True
        pb = llvm.create_pass_builder(jit._get().tm, pto)
        pb.getModulePassManager().run(mod, pb)
        return str(mod)
