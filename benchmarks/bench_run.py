"""Run time of compute-heavy programs against numpy, by codelet mode and thread count.

    python benchmarks/bench_run.py [--quick] [tut7|vertices|matmul ...]

Workloads:

* ``tut7``: tutorial 7's matrix-vector program at 10000x1000 (its own codelets, default
  tiles), ``engine.run()`` against ``matrix @ vector`` in numpy (float32);
* ``vertices``: one compute set of 1M vertices summing 4 floats each;
* ``matmul``: poplin.matMul 1024^3, operands from createMatMulInputLHS/RHS, against numpy.

Each row is measured in a child process pinned to its cores, with ``POPLAR_PY_THREADS`` and
``OPENBLAS_NUM_THREADS`` set: strict (the default, bounds checked), strict unchecked and
``codelets.fastMath`` on one core; and strict on two threads, whose speed-up over one thread
is printed. Times are the best of several runs (the machine is shared and noisy).

The last line is the ceiling for any memory-bound speed-up: how much faster two threads read a
64 MB array than one does (numpy reductions, one half per thread), on the same two cores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MODES = {"strict, checked": {}, "strict": {"codelets.checkBounds": "false"},
         "fast": {"codelets.fastMath": "true", "codelets.checkBounds": "false"}}
TARGETS = {("tut7", "strict, checked"): 2.0, ("tut7", "fast"): 1.2}


def _tut7(options: dict, quick: bool) -> tuple[float, float]:
    import numpy as np
    from timing import best
    from workloads import tut7

    engine, m, v = tut7(*((2500, 1000) if quick else (10000, 1000)), options)
    run = best(engine.run, 5)
    np.testing.assert_allclose(engine.readTensor("out"), m @ v, rtol=1e-4, atol=1e-3)
    return run, best(lambda: m @ v, 20)


def _vertices(options: dict, quick: bool) -> tuple[float, float]:
    import numpy as np
    from timing import best

    import poplar_py as poplar
    from poplar_py import Input, Output, Vector, Vertex
    from poplar_py import program as prog

    class SumVertex(Vertex):
        inp: Input[Vector[float]]
        out: Output[float]

        def compute(self):
            s = 0.0
            for v in self.inp:
                s += v
            self.out = s

    n = 200_000 if quick else 1_000_000
    device = poplar.IPUModel().createDevice()
    graph = poplar.Graph(device)
    graph.addCodelets(SumVertex)
    tiles = device.getTarget().getNumTiles()
    x = graph.addVariable(poplar.FLOAT, [n, 4], "x")
    y = graph.addVariable(poplar.FLOAT, [n], "y")
    bounds = [t * n // tiles for t in range(tiles + 1)]
    graph.setTileMapping(x, [[(4 * bounds[t], 4 * bounds[t + 1])] for t in range(tiles)])
    graph.setTileMapping(y, [[(bounds[t], bounds[t + 1])] for t in range(tiles)])
    cs = graph.addComputeSet("sums")
    for t in range(tiles):
        for i in range(bounds[t], bounds[t + 1]):
            graph.setTileMapping(graph.addVertex(cs, "SumVertex", {"inp": x[i], "out": y[i]}), t)
    graph.createHostWrite("x", x)
    graph.createHostRead("y", y)
    engine = poplar.Engine(graph, prog.Execute(cs), options)
    engine.load(device)
    host = np.random.default_rng(0).standard_normal((n, 4)).astype(np.float32)
    engine.writeTensor("x", host)
    run = best(engine.run, 5)
    np.testing.assert_allclose(engine.readTensor("y"), host.sum(axis=1), rtol=1e-5, atol=1e-5)
    return run, best(lambda: host.sum(axis=1), 20)


def _matmul(options: dict, quick: bool) -> tuple[float, float]:
    import numpy as np
    from timing import best
    from workloads import matmul

    engine, ha, hb = matmul(512 if quick else 1024, options)
    run = best(engine.run, 3)
    np.testing.assert_allclose(engine.readTensor("c"), ha @ hb, rtol=1e-3, atol=1e-3)
    return run, best(lambda: ha @ hb, 5)


WORKLOADS = {"tut7": _tut7, "vertices": _vertices, "matmul": _matmul}


def _bandwidth() -> tuple[float, float]:
    """Read bandwidth in bytes/s with one thread and with two (the memory system's scaling)."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    from timing import best

    x = np.ones(16 << 20, np.float32)
    low, high = np.array_split(x, 2)
    with ThreadPoolExecutor(1) as pool:
        def both() -> None:
            other = pool.submit(np.add.reduce, high)
            np.add.reduce(low)
            other.result()

        return x.nbytes / best(lambda: np.add.reduce(x), 20), x.nbytes / best(both, 20)


def _child(workload: str, mode: str, quick: bool) -> None:
    sys.path.insert(0, str(HERE))
    if workload == "bandwidth":
        one, two = _bandwidth()
        print(json.dumps({"one": one, "two": two}))
    else:
        run, ref = WORKLOADS[workload](MODES[mode], quick)
        print(json.dumps({"run": run, "numpy": ref}))


def measure(workload: str, mode: str, threads: int, quick: bool) -> dict:
    env = dict(os.environ, POPLAR_PY_THREADS=str(threads), OPENBLAS_NUM_THREADS="1",
               OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    cores = ",".join(str(c) for c in range(threads))
    cmd = ["taskset", "-c", cores, sys.executable, __file__, "--child", workload, mode]
    out = subprocess.run(cmd + (["--quick"] if quick else []), env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    quick = "--quick" in sys.argv
    chosen = [w for w in WORKLOADS if w in sys.argv[1:]] or list(WORKLOADS)
    print(f"{'workload':10} {'mode':16} {'run ms':>9} {'numpy ms':>9} {'ratio':>7} {'target':>7}")
    for workload in chosen:
        rows = {}
        for mode in MODES:
            r = rows[mode] = measure(workload, mode, 1, quick)
            target = TARGETS.get((workload, mode))
            print(f"{workload:10} {mode:16} {r['run'] * 1e3:9.2f} {r['numpy'] * 1e3:9.2f} "
                  f"{r['run'] / r['numpy']:6.2f}x {'' if target is None else f'<= {target}x':>7}")
        one = rows["strict, checked"]
        print(f"{workload:10} {'checks':16} {one['run'] / rows['strict']['run']:6.2f}x the unchecked run "
              f"(target <= 1.1x on matmul)")
        two = measure(workload, "strict, checked", 2, quick)
        print(f"{workload:10} {'2 threads':16} {two['run'] * 1e3:9.2f} {'':9} "
              f"{one['run'] / two['run']:6.2f}x faster than 1 thread (target >= 1.8x)")
    bw = measure("bandwidth", "strict", 2, quick)
    print(f"memory read bandwidth: 1 thread {bw['one'] / 1e9:.1f} GB/s, 2 threads {bw['two'] / 1e9:.1f} GB/s "
          f"({bw['two'] / bw['one']:.2f}x: the ceiling for a memory-bound speed-up)")
    from resource import RUSAGE_CHILDREN, getrusage
    print(f"peak RSS of the largest child: {getrusage(RUSAGE_CHILDREN).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    if "--child" in sys.argv:
        i = sys.argv.index("--child")
        _child(sys.argv[i + 1], sys.argv[i + 2], "--quick" in sys.argv)
    else:
        main()
