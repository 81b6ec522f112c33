"""Cold compile time of the PopLibs kernels, as an Engine compiles them by default.

    python benchmarks/bench_compile.py

The vertices are those some PopLibs operations add (matMul, reductions, softmax, poprand). Each
is compiled with the Engine's default options (strict IEEE, bounds checked, lockstep
lanes) in a fresh process with the kernel cache off, so every row is a cold compile: typing,
LLVM IR generation, LLVM's optimisation and code emission. The JIT is set up first by compiling a
trivial codelet, so its one-off cost is not charged to the first row. Target: the largest at most
1 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import poplar_py as poplar
from poplar_py import Vertex
from poplar_py import program as prog
from poplar_py.codelet.codelet_compiler import KernelOptions, compile_codelet
from poplibs_py import poplin, popnn, popops, poprand, poputil

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 1.0


def _vertex_classes() -> dict[str, type]:
    """Every vertex class (by name) some PopLibs operations use: matMul (float, and half into float), the
    reductions, softmax and a random generator."""
    graph = poplar.Graph(poplar.IPUModel().createDevice().getTarget())
    for library in (popops, poplin, popnn, poprand):
        library.addCodelets(graph)
    seq = prog.Sequence()
    for dtype in (poplar.FLOAT, poplar.HALF):
        a = poplin.createMatMulInputLHS(graph, dtype, [512, 512], [512, 512], "A")
        b = poplin.createMatMulInputRHS(graph, dtype, [512, 512], [512, 512], "B")
        poplin.matMul(graph, a, b, seq, poplar.FLOAT, debugName="C")
    x = graph.addVariable(poplar.FLOAT, [256, 300], "x")
    poputil.mapTensorLinearly(graph, x)
    for op in (popops.Operation.ADD, popops.Operation.MAX, popops.Operation.SQUARE_ADD):
        for dim in (0, 1):
            popops.reduce(graph, x, [dim], op, seq)
    popnn.nonLinearity(graph, popnn.NonLinearityType.SOFTMAX, x, seq)
    poprand.uniform(graph, None, 0, x, poplar.FLOAT, 0.0, 1.0, seq)
    return {cls.vertexName: cls for cls in graph.freeze().vertices.classes}


def _child(name: str) -> None:
    cls = _vertex_classes()[name]  # the same graph again: generated codelets too

    class Warm(Vertex):
        def compute(self):
            return True

    compile_codelet(Warm, KernelOptions())  # the JIT's one-off set-up
    start = time.perf_counter()
    compile_codelet(cls, KernelOptions(checked=True, fast_math=False, lanes=True))
    print(json.dumps({"seconds": time.perf_counter() - start}))


def main() -> None:
    env = dict(os.environ, POPLAR_PY_CACHE="0", PYTHONPATH=str(ROOT))
    worst = 0.0
    print(f"{'vertex':58} {'cold compile s':>14}")
    for name in sorted(_vertex_classes()):
        out = subprocess.run(["taskset", "-c", "0", sys.executable, __file__, "--child", name], env=env,
                             capture_output=True, text=True, check=True)
        seconds = json.loads(out.stdout.strip().splitlines()[-1])["seconds"]
        worst = max(worst, seconds)
        print(f"{name:58} {seconds:14.2f}")
    print(f"largest: {worst:.2f} s (target <= {TARGET_S} s)")


if __name__ == "__main__":
    if "--child" in sys.argv:
        _child(sys.argv[sys.argv.index("--child") + 1])
    else:
        main()
