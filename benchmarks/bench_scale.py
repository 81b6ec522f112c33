"""How the core's cost grows with the work: graph build, Engine build, run time and peak RSS.

    python benchmarks/bench_scale.py [--workload matmul|tut7|vertices|bert|mulT ...] [--quick]

Five workloads, each at a few sizes, each size in a fresh process (so peak RSS is that
run's own), pinned to one core with ``POPLAR_PY_THREADS=1`` and ``OPENBLAS_NUM_THREADS=1``:

* ``matmul``: ``poplin.matMul`` of two n x n float operands mapped linearly
  (n = 128 ... 1024); build = graph plus Engine. Targets at 1024: build <= 2 s,
  peak RSS <= 600 MB.
* ``tut7``: tutorial 7 run as a user runs it (rows x 1000, rows = 1250 ... 10000), timed
  per vertex. Targets at 10000 x 1000: graph <= 10 us/vertex, Engine <= 5 us/vertex,
  peak RSS of the whole run <= 400 MB.
* ``vertices``: one compute set of small vertices, each summing 4 floats of its own tile
  (125k ... 1M). Targets at 1M: graph <= 8 us/vertex, Engine <= 3 us/vertex,
  peak RSS <= 1 GB.
* ``bert``: the BERT-base encoder layer of ``workloads.bert_layer`` (forward, a weight gradient
  averaged over replicas, an SGD step), checked against numpy, at 1 replica. Targets: graph
  <= 3 s, Engine <= 3 s, peak RSS <= 800 MB.
* ``mulT``: ``popops.mul`` of a transposed linearly mapped n x n matrix by itself (n = 128 ...
  512; graph = the mul alone). Target at 256: graph <= 0.5 s.

The kernel cache is warmed by an unreported run first. Sizes are printed side by side,
with the growth from one size to the next (x2 work should cost about x2).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import os
import resource
import runpy
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZES = {"matmul": [128, 256, 512, 1024], "tut7": [1250, 2500, 5000, 10000],
         "vertices": [125_000, 250_000, 500_000, 1_000_000], "bert": [1], "mulT": [128, 256, 512]}
TARGETS = {"matmul": "build <= 2 s, RSS <= 600 MB at 1024",
           "tut7": "graph <= 10 us/v, Engine <= 5 us/v, RSS <= 400 MB at 10000",
           "vertices": "graph <= 8 us/v, Engine <= 3 us/v, RSS <= 1 GB at 1M",
           "bert": "graph <= 3 s, Engine <= 3 s, RSS <= 800 MB at 1 replica",
           "mulT": "graph <= 0.5 s at 256"}


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _matmul(n: int) -> dict:
    import numpy as np

    import poplar_py as poplar
    from poplar_py import program as prog
    from poplibs_py import poplin, popops, poputil

    device = poplar.IPUModel().createDevice()
    graph = poplar.Graph(device)
    popops.addCodelets(graph)
    poplin.addCodelets(graph)
    start = time.perf_counter()
    a = graph.addVariable(poplar.FLOAT, [n, n], "a")
    b = graph.addVariable(poplar.FLOAT, [n, n], "b")
    poputil.mapTensorLinearly(graph, a)
    poputil.mapTensorLinearly(graph, b)
    seq = prog.Sequence()
    out = poplin.matMul(graph, a, b, seq, "c")
    graph.createHostWrite("a", a)
    graph.createHostWrite("b", b)
    graph.createHostRead("c", out)
    graph_s = time.perf_counter() - start
    start = time.perf_counter()
    engine = poplar.Engine(graph, seq)
    engine_s = time.perf_counter() - start
    engine.load(device)
    rng = np.random.default_rng(0)
    ha = rng.standard_normal((n, n)).astype(np.float32)
    hb = rng.standard_normal((n, n)).astype(np.float32)
    engine.writeTensor("a", ha)
    engine.writeTensor("b", hb)
    start = time.perf_counter()
    engine.run()
    run_s = time.perf_counter() - start
    np.testing.assert_allclose(engine.readTensor("c"), ha @ hb, rtol=1e-3, atol=1e-3)
    return {"graph_s": graph_s, "engine_s": engine_s, "run_s": run_s, "vertices": graph.getNumVertices()}


def _tut7(rows: int) -> dict:
    """Tutorial 7 exactly as ``poplar-py run`` runs it, with its two builds timed."""
    import poplar_py as poplar

    path = ROOT / "tutorials" / "tut7_matrix_vector_opt" / "tut7.py"
    namespace = runpy.run_path(str(path), run_name="tut7")
    times: dict = {}
    build, engine_class = namespace["buildMultiplyProgram"], poplar.Engine

    def timed_build(graph, *args):
        start = time.perf_counter()
        result = build(graph, *args)
        times["graph_s"] = time.perf_counter() - start
        times["vertices"] = graph.getNumVertices()
        return result

    class TimedEngine(engine_class):
        def __init__(self, *args, **kwargs):
            start = time.perf_counter()
            super().__init__(*args, **kwargs)
            times["engine_s"] = time.perf_counter() - start

        def run(self, *args, **kwargs):
            start = time.perf_counter()
            super().run(*args, **kwargs)
            times["run_s"] = time.perf_counter() - start

    namespace["main"].__globals__["buildMultiplyProgram"] = timed_build
    poplar.Engine = TimedEngine  # this process only runs the tutorial
    sys.argv = [str(path), str(rows), "1000"]
    cwd = os.getcwd()
    os.chdir(path.parent)
    try:
        with contextlib.redirect_stdout(io.StringIO()) as out:
            status = namespace["main"]()
    finally:
        os.chdir(cwd)
    if status != 0 or "Multiplication result OK" not in out.getvalue():
        raise RuntimeError(f"tutorial 7 failed:\n{out.getvalue()[-2000:]}")
    return times


def _vertices(n: int) -> dict:
    import numpy as np

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

    device = poplar.IPUModel().createDevice()
    graph = poplar.Graph(device)
    graph.addCodelets(SumVertex)
    tiles = device.getTarget().getNumTiles()
    start = time.perf_counter()
    x = graph.addVariable(poplar.FLOAT, [n, 4], "x")
    y = graph.addVariable(poplar.FLOAT, [n], "y")
    poplar_rows = [(t * n // tiles, (t + 1) * n // tiles) for t in range(tiles)]
    graph.setTileMapping(x, [[(4 * b, 4 * e)] for b, e in poplar_rows])
    graph.setTileMapping(y, [[(b, e)] for b, e in poplar_rows])
    cs = graph.addComputeSet("sums")
    for tile, (b, e) in enumerate(poplar_rows):
        for i in range(b, e):
            v = graph.addVertex(cs, "SumVertex", {"inp": x[i], "out": y[i]})
            graph.setTileMapping(v, tile)
    graph.createHostWrite("x", x)
    graph.createHostRead("y", y)
    graph_s = time.perf_counter() - start
    start = time.perf_counter()
    engine = poplar.Engine(graph, prog.Execute(cs))
    engine_s = time.perf_counter() - start
    engine.load(device)
    host = np.random.default_rng(0).standard_normal((n, 4)).astype(np.float32)
    engine.writeTensor("x", host)
    start = time.perf_counter()
    engine.run()
    run_s = time.perf_counter() - start
    np.testing.assert_allclose(engine.readTensor("y"), host.sum(axis=1), rtol=1e-5, atol=1e-5)
    return {"graph_s": graph_s, "engine_s": engine_s, "run_s": run_s, "vertices": n}


def _bert(replicas: int) -> dict:
    """The BERT-base encoder layer of ``workloads.bert_layer`` on ``replicas`` IPUs, checked."""
    import poplar_py as poplar

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from workloads import bert_layer

    model = poplar.IPUModel()
    model.numIPUs = replicas
    device = model.createDevice()
    start = time.perf_counter()
    layer = bert_layer(device.getTarget(), replicas)
    graph_s = time.perf_counter() - start
    result = _engine_run(device, layer.graph, layer.program, layer.write, layer.check)
    return {"graph_s": graph_s, **result}


def _mul_transposed(n: int) -> dict:
    """``popops.mul(g, a.transpose(), a.transpose(), seq)`` on a linearly mapped n x n ``a``."""
    import numpy as np

    import poplar_py as poplar
    from poplar_py import program as prog
    from poplibs_py import popops, poputil

    device = poplar.IPUModel().createDevice()
    graph = poplar.Graph(device)
    popops.addCodelets(graph)
    a = graph.addVariable(poplar.FLOAT, [n, n], "a")
    poputil.mapTensorLinearly(graph, a)
    seq = prog.Sequence()
    start = time.perf_counter()
    out = popops.mul(graph, a.transpose(), a.transpose(), seq)
    graph_s = time.perf_counter() - start
    graph.createHostWrite("a", a)
    graph.createHostRead("out", out)
    host = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)

    def check(engine):
        np.testing.assert_array_equal(engine.readTensor("out"), host.T * host.T)

    result = _engine_run(device, graph, seq, lambda engine: engine.writeTensor("a", host), check)
    return {"graph_s": graph_s, **result}


def _engine_run(device, graph, program, write, check) -> dict:
    """Build the Engine and run it once, timed; ``write(engine)`` feeds it, ``check(engine)`` checks."""
    import poplar_py as poplar

    start = time.perf_counter()
    engine = poplar.Engine(graph, program)
    engine_s = time.perf_counter() - start
    engine.load(device)
    write(engine)
    start = time.perf_counter()
    engine.run()
    run_s = time.perf_counter() - start
    check(engine)
    return {"engine_s": engine_s, "run_s": run_s, "vertices": graph.getNumVertices()}


WORKLOADS = {"matmul": _matmul, "tut7": _tut7, "vertices": _vertices, "bert": _bert, "mulT": _mul_transposed}


def _child(workload: str, size: int) -> None:
    result = WORKLOADS[workload](size)
    result["rss_mb"] = _peak_rss_mb()
    print(json.dumps(result))


def _measure(workload: str, size: int) -> dict:
    env = dict(os.environ, POPLAR_PY_THREADS="1", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, __file__, "--child", workload, str(size)]
    if hasattr(os, "sched_setaffinity"):
        cmd = ["taskset", "-c", "0", *cmd]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{workload} {size} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _report(workload: str, sizes: list[int]) -> None:
    _measure(workload, sizes[0])  # warms the kernel cache
    rows = [_measure(workload, s) for s in sizes]
    per_vertex = workload not in ("matmul", "bert", "mulT")
    print(f"\n{workload} ({TARGETS[workload]})")
    print(f"  {'size':<22}" + "".join(f"{s:>14,}" for s in sizes))
    print(f"  {'vertices':<22}" + "".join(f"{r['vertices']:>14,}" for r in rows))

    def line(label: str, values: list[float], fmt: str) -> None:
        growth = "  growth " + " ".join(f"x{b / a:.2f}" if a else "-" for a, b in itertools.pairwise(values))
        print(f"  {label:<22}" + "".join(format(v, fmt) for v in values) + growth)

    if per_vertex:
        line("graph us/vertex", [r["graph_s"] / r["vertices"] * 1e6 for r in rows], ">14.2f")
        line("Engine us/vertex", [r["engine_s"] / r["vertices"] * 1e6 for r in rows], ">14.2f")
    line("graph s", [r["graph_s"] for r in rows], ">14.3f")
    line("Engine s", [r["engine_s"] for r in rows], ">14.3f")
    if not per_vertex:
        line("graph + Engine s", [r["graph_s"] + r["engine_s"] for r in rows], ">14.3f")
    line("run s", [r["run_s"] for r in rows], ">14.3f")
    line("peak RSS MB", [r["rss_mb"] for r in rows], ">14.0f")


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        _child(sys.argv[2], int(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workload", choices=sorted(WORKLOADS), action="append")
    parser.add_argument("--quick", action="store_true", help="the two smallest sizes only")
    args = parser.parse_args()
    for workload in args.workload or list(WORKLOADS):
        sizes = SIZES[workload][:2] if args.quick else SIZES[workload]
        _report(workload, sizes)


if __name__ == "__main__":
    main()
