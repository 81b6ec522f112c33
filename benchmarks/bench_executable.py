"""Building an Engine from a deserialized executable against compiling the graph.

    python benchmarks/bench_executable.py [--quick]

For tutorial 7's matrix-vector program (10000x1000) and a poplin.matMul (512^3): the time of
``Engine(graph, programs)`` (freeze and every compiler pass), of ``compileGraph`` +
``serialize``, and of ``Executable.deserialize`` + ``Engine(exe)``, the ratio of the first to
the last (target: at least 10x), the file's size and the peak RSS. Kernels come from the warm
disk cache in both cases (the first build fills it). Measure on one core:
``taskset -c 0 env POPLAR_PY_THREADS=1 python benchmarks/bench_executable.py``.
"""

from __future__ import annotations

import contextlib
import io
import resource
import runpy
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import poplin

ROOT = Path(__file__).resolve().parents[1]


def _tut7(quick: bool) -> tuple[poplar.Graph, prog.Program]:
    rows, cols = (2500, 1000) if quick else (10000, 1000)
    ns = runpy.run_path(str(ROOT / "tutorials" / "tut7_matrix_vector_opt" / "tut7.py"), run_name="tut7")
    graph = poplar.Graph(poplar.IPUModel().createDevice())
    graph.addCodelets(str(ROOT / "tutorials" / "tut7_matrix_vector_opt" / "matrix_mul_codelets.py"))
    matrix = graph.addVariable(poplar.FLOAT, [rows, cols], "matrix")
    vector = graph.addVariable(poplar.FLOAT, [cols], "in")
    out = graph.addVariable(poplar.FLOAT, [rows], "out")
    with contextlib.redirect_stdout(io.StringIO()):
        program = ns["buildMultiplyProgram"](graph, matrix, vector, out)
    graph.createHostWrite("matrix", matrix)
    graph.createHostRead("out", out)
    return graph, program


def _matmul(quick: bool) -> tuple[poplar.Graph, prog.Program]:
    size = 256 if quick else 512
    graph = poplar.Graph(poplar.IPUModel().createDevice())
    poplin.addCodelets(graph)
    seq = prog.Sequence()
    a = poplin.createMatMulInputLHS(graph, poplar.FLOAT, [size, size], [size, size], "A")
    b = poplin.createMatMulInputRHS(graph, poplar.FLOAT, [size, size], [size, size], "B")
    poplin.matMul(graph, a, b, seq, "C")
    return graph, seq


def _time(fn: Callable[[], object], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    quick = "--quick" in sys.argv
    print(f"{'workload':10} {'Engine(graph) s':>15} {'compile+save s':>15} {'load+Engine s':>14} "
          f"{'speed-up':>9} {'file MB':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, build in (("tut7", _tut7), ("matmul", _matmul)):
            graph, program = build(quick)
            poplar.Engine(graph, program)  # fills the kernel cache
            direct = _time(lambda g=graph, p=program: poplar.Engine(g, p))
            path = Path(tmp) / f"{name}.exe"
            save = _time(lambda g=graph, p=program, f=path: poplar.compileGraph(g, p).serialize(f), 1)
            load = _time(lambda f=path: poplar.Engine(poplar.Executable.deserialize(f)))
            print(f"{name:10} {direct:15.3f} {save:15.3f} {load:14.3f} {direct / load:8.1f}x "
                  f"{path.stat().st_size / 1e6:8.1f}  (target >= 10x)")
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
