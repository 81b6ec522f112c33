"""The source layout keeps the stages apart (docs/reference/source_layout.md), read from the
imports themselves (``ast``), not from what a run happens to load:

* ``poplar_py/compiler/`` imports nothing from ``poplar_py/runtime/``: the compiler emits data
  (steps, plans, tables) that the runtime runs;
* ``poplar_py/runtime/`` imports nothing from the graph builder's user API (``graph``, ``tensor``,
  ``vertex``, ``program``): it runs a compiled program, whatever built it;
* the top level of ``poplar_py/`` holds only the modules that mirror Poplar's headers, plus ``ir``
  and ``cli``; everything else lives in a package named for its stage;
* no module is over 500 lines, but for the few listed, each one concern.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "poplar_py"

#: the top-level modules: Poplar's headers (include/poplar/*.hpp) and the frozen IR and the command
TOP_LEVEL = {
    "__init__",
    "array_ref",  # ArrayRef.hpp, StringRef.hpp
    "cli",  # the poplar-py command
    "constraints",  # Vertex.hpp's poplar::constraint
    "csr_functions",  # CSRFunctions.hpp
    "cycle_count",  # CycleCount.hpp
    "debug",  # DebugContext.hpp: DebugContext, DebugNameAndId
    "debug_info",  # DebugContext.hpp, ProfileValue.hpp: DebugInfo
    "device_manager",  # DeviceManager.hpp
    "engine",  # Engine.hpp
    "errors",  # exceptions.hpp
    "executable",  # Executable.hpp
    "graph",  # Graph.hpp
    "handles",  # GraphElements.hpp: ComputeSet, Function, DataStream, VertexRef, FieldRef
    "host_function",  # HostFunctionCallback.hpp
    "host_half",  # Target.hpp's copyFloatToDeviceHalf family
    "interval",  # Interval.hpp
    "introspector",  # VertexIntrospector.hpp
    "ir",  # the frozen graph IR
    "option_flags",  # OptionFlags.hpp
    "options",  # the Engine's options (Engine.hpp)
    "perf_estimate",  # PerfEstimateFunc.hpp
    "program",  # Program.hpp
    "quarter",  # Quarter.hpp
    "random_seed",  # RandomSeed.hpp
    "short_vectors",  # the codelets' float2, half4... (ipu_vector_math)
    "streams",  # DataStream.hpp, StreamCallback.hpp
    "target",  # IPUModel.hpp, Target.hpp, Device.hpp
    "templates",  # template vertices' parameters (Vertex.hpp)
    "tensor",  # Tensor.hpp
    "types",  # Type.hpp
    "vector_layout",  # VectorLayout.hpp
    "version",  # version.hpp
    "vertex",  # Vertex.hpp
}

USER_API = {"poplar_py.graph", "poplar_py.tensor", "poplar_py.vertex", "poplar_py.program"}

MAX_LINES = 500
#: modules over MAX_LINES that each hold one concern (a pass of the codelet compiler)
LONG_MODULES = {
    "codelet/exprs.py",  # LLVM IR of a typed codelet's expressions
    "codelet/frontend.py",  # the codelet subset's check and name resolution
}


def _modules() -> dict[str, Path]:
    """Every module of the package, by dotted name."""
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imports(name: str, path: Path) -> set[str]:
    """The modules (or packages) ``name`` imports, as dotted names."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            out.add(module)
            out.update(f"{module}.{a.name}" for a in node.names)
    return out


def _importers(prefix: str) -> dict[str, set[str]]:
    return {name: _imports(name, path) for name, path in _modules().items()
            if name == prefix or name.startswith(prefix + ".")}


def test_compiler_imports_nothing_from_the_runtime():
    bad = {name: sorted(i for i in imports if i.startswith("poplar_py.runtime"))
           for name, imports in _importers("poplar_py.compiler").items()}
    assert not {k: v for k, v in bad.items() if v}


def test_runtime_imports_nothing_from_the_graph_builder():
    bad = {name: sorted(i for i in imports if any(i == m or i.startswith(m + ".") for m in USER_API))
           for name, imports in _importers("poplar_py.runtime").items()}
    assert not {k: v for k, v in bad.items() if v}


def test_top_level_holds_poplar_headers_ir_and_cli():
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    assert modules == TOP_LEVEL, f"not in TOP_LEVEL: {sorted(modules - TOP_LEVEL)}; " \
                                 f"gone: {sorted(TOP_LEVEL - modules)}"


def test_no_long_module_but_the_listed_ones():
    long = {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
            if len(p.read_text().splitlines()) > MAX_LINES}
    assert long <= LONG_MODULES, f"over {MAX_LINES} lines: {sorted(long - LONG_MODULES)}"
