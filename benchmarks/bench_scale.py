"""How the core's cost grows with the work: graph build, Engine build, run time and peak RSS.

    python benchmarks/bench_scale.py [--workload matmul|tut7|vertices|... ...] [--quick]

Eleven workloads, each at a few sizes, each size in a fresh process (so peak RSS is that
run's own), pinned to one core with ``POPLAR_PY_THREADS=1`` and ``OPENBLAS_NUM_THREADS=1``.
The children import poplar_py from ``PYTHONPATH`` first, so a checkout of another commit
there is measured with the same workloads.

* ``matmul``: ``poplin.matMul`` of two n x n float operands mapped linearly
  (n = 128 ... 1024); build = graph plus Engine. Targets at 1024: build <= 2 s,
  peak RSS <= 600 MB.
* ``tut7``: tutorial 7 run as a user runs it (rows x 1000, rows = 1250 ... 10000), timed
  per vertex. Targets at 10000 x 1000: graph <= 10 us/vertex, Engine <= 5 us/vertex,
  peak RSS of the whole run <= 400 MB.
* ``vertices``: one compute set of small vertices, each summing 4 floats of its own tile
  (125k ... 1M). Targets at 1M: graph <= 8 us/vertex, Engine <= 3 us/vertex,
  peak RSS <= 1 GB.
* ``constants``: one compute set of vertices each reading its own one-element constant
  (8k ... 64k). Target at 64k: Engine <= 1.5 s.
* ``values``: the same with each vertex's field connected to a number (``{"a": 7.0}``) and
  the vertex mapped after (8k ... 64k): value connections in bulk, each constant on its
  vertex's tile.
* ``parents``: one Sequence of 10 compute sets (a vertex per tile each, reading its own
  constant) placed in 25 ... 200 parent Sequences. Target at 100: Engine <= 5 s.
* ``concat``: vertices connecting a 102x102 concat of nine views (a window with its halo) to a
  VectorList field (304 ... 2,432); graph time is the views and the connections.
* ``bert``: the BERT-base encoder layer of ``workloads.bert_layer`` (forward, a weight gradient
  averaged over replicas, an SGD step), checked against numpy, at 1 replica. Targets: graph
  <= 3 s, Engine <= 3 s, peak RSS <= 800 MB.
* ``mulT``: ``popops.mul`` of a transposed linearly mapped n x n matrix by itself (n = 128 ...
  512; graph = the mul alone). Target at 256: graph <= 0.5 s.
* ``concat2``: ``concat`` of two rows ``[1, 160]`` of a linearly mapped variable, n times
  (5,000 ... 20,000). Target: <= 20 us a call.
* ``reduceMany``: ``popops.reduceMany`` of n single-row sums (rows of 160 floats of a linearly
  mapped variable, each to a scalar) into a Sequence (750 ... 3,000; the codelets instantiated
  first). Target: <= 100 us a reduction at 3000.

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
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SIZES = {"matmul": [128, 256, 512, 1024], "tut7": [1250, 2500, 5000, 10000],
         "vertices": [125_000, 250_000, 500_000, 1_000_000], "constants": [8000, 16000, 32000, 64000],
         "values": [8000, 16000, 32000, 64000], "parents": [25, 50, 100, 200],
         "concat": [304, 608, 1216, 2432], "bert": [1], "mulT": [128, 256, 512],
         "concat2": [5000, 10000, 20000], "reduceMany": [750, 1500, 3000]}
TARGETS = {"matmul": "build <= 2 s, RSS <= 600 MB at 1024",
           "tut7": "graph <= 10 us/v, Engine <= 5 us/v, RSS <= 400 MB at 10000",
           "vertices": "graph <= 8 us/v, Engine <= 3 us/v, RSS <= 1 GB at 1M",
           "constants": "Engine <= 1.5 s at 64000", "values": "value connections in bulk",
           "parents": "Engine <= 5 s at 100 parents", "concat": "connect at the cost of the regions",
           "bert": "graph <= 3 s, Engine <= 3 s, RSS <= 800 MB at 1 replica", "mulT": "graph <= 0.5 s at 256",
           "concat2": "<= 20 us/call", "reduceMany": "<= 100 us/call (a reduction) at 3000"}
PER_VERTEX = ("tut7", "vertices", "constants", "values", "concat")  # reported per vertex too


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _build_and_run(device: Any, graph: Any, program: Any, start: float, inputs: dict, output: str
                   ) -> tuple[Any, dict]:
    """The graph's build time (since ``start``), then the Engine's build time and one run's on
    ``inputs`` (handle: array); returns what handle ``output`` reads and the three times."""
    import poplar_py as poplar

    graph_s = time.perf_counter() - start
    start = time.perf_counter()
    engine = poplar.Engine(graph, program)
    engine_s = time.perf_counter() - start
    engine.load(device)
    for handle, values in inputs.items():
        engine.writeTensor(handle, values)
    start = time.perf_counter()
    engine.run()
    run_s = time.perf_counter() - start
    return engine.readTensor(output), {"graph_s": graph_s, "engine_s": engine_s, "run_s": run_s}


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
    rng = np.random.default_rng(0)
    ha = rng.standard_normal((n, n)).astype(np.float32)
    hb = rng.standard_normal((n, n)).astype(np.float32)
    got, times = _build_and_run(device, graph, seq, start, {"a": ha, "b": hb}, "c")
    np.testing.assert_allclose(got, ha @ hb, rtol=1e-3, atol=1e-3)
    return {**times, "vertices": graph.getNumVertices()}


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
    host = np.random.default_rng(0).standard_normal((n, 4)).astype(np.float32)
    got, times = _build_and_run(device, graph, prog.Execute(cs), start, {"x": host}, "y")
    np.testing.assert_allclose(got, host.sum(axis=1), rtol=1e-5, atol=1e-5)
    return {**times, "vertices": n}


def _add_constant_graph():
    """A device, a graph with a vertex adding a one-element input ``a`` to ``x``, and the
    blocks of rows of each tile for ``n`` vertices."""
    import poplar_py as poplar
    from poplar_py import Input, Output, Vertex

    class AddConstant(Vertex):
        a: Input[float]
        x: Input[float]
        out: Output[float]

        def compute(self):
            self.out = self.x + self.a

    device = poplar.IPUModel().createDevice()
    graph = poplar.Graph(device)
    graph.addCodelets(AddConstant)
    return device, graph


def _one_per_vertex(n: int, values: bool) -> dict:
    """n vertices, each adding its own constant (made with addConstant and mapped, or a number
    connected to the field, the vertex mapped after) to one element of x."""
    import numpy as np

    import poplar_py as poplar
    from poplar_py import program as prog

    device, graph = _add_constant_graph()
    tiles = device.getTarget().getNumTiles()
    start = time.perf_counter()
    x = graph.addVariable(poplar.FLOAT, [n], "x")
    y = graph.addVariable(poplar.FLOAT, [n], "y")
    blocks = [(t * n // tiles, (t + 1) * n // tiles) for t in range(tiles)]
    graph.setTileMapping(x, [[block] for block in blocks])
    graph.setTileMapping(y, [[block] for block in blocks])
    cs = graph.addComputeSet("add constants")
    for tile, (b, e) in enumerate(blocks):
        for i in range(b, e):
            if values:
                v = graph.addVertex(cs, "AddConstant", {"a": float(i), "x": x[i], "out": y[i]})
            else:
                c = graph.addConstant(poplar.FLOAT, [], float(i))
                graph.setTileMapping(c, tile)
                v = graph.addVertex(cs, "AddConstant", {"a": c, "x": x[i], "out": y[i]})
            graph.setTileMapping(v, tile)
    graph.createHostWrite("x", x)
    graph.createHostRead("y", y)
    host = np.arange(n, dtype=np.float32)
    got, times = _build_and_run(device, graph, prog.Execute(cs), start, {"x": host}, "y")
    np.testing.assert_array_equal(got, 2 * host)
    return {**times, "vertices": n}


def _parents(parents: int) -> dict:
    """One Sequence of 10 compute sets (a vertex per tile each, adding its own constant 1.0 to
    x into y, then y into x) placed in ``parents`` parent Sequences."""
    import numpy as np

    import poplar_py as poplar
    from poplar_py import program as prog

    device, graph = _add_constant_graph()
    tiles = device.getTarget().getNumTiles()
    start = time.perf_counter()
    x = graph.addVariable(poplar.FLOAT, [tiles], "x")
    y = graph.addVariable(poplar.FLOAT, [tiles], "y")
    graph.setTileMapping(x, [[(t, t + 1)] for t in range(tiles)])
    graph.setTileMapping(y, [[(t, t + 1)] for t in range(tiles)])
    inner = prog.Sequence()
    for k in range(10):
        cs = graph.addComputeSet(f"step {k}")
        src, dst = (x, y) if k % 2 == 0 else (y, x)
        for t in range(tiles):
            c = graph.addConstant(poplar.FLOAT, [], 1.0)
            graph.setTileMapping(c, t)
            graph.setTileMapping(graph.addVertex(cs, "AddConstant", {"a": c, "x": src[t], "out": dst[t]}), t)
        inner.add(prog.Execute(cs))
    program = prog.Sequence([prog.Sequence([inner]) for _ in range(parents)])
    graph.createHostWrite("x", x)
    graph.createHostRead("x result", x)
    got, times = _build_and_run(device, graph, program, start, {"x": np.zeros(tiles, np.float32)}, "x result")
    np.testing.assert_array_equal(got, np.full(tiles, 10.0 * parents))
    return {**times, "vertices": 10 * tiles}


def _concat(n: int) -> dict:
    """n vertices, each connecting the 102x102 window of a 100x100 chunk with its periodic halo
    from the 8 neighbouring chunks (a concat of nine views of nine variables, as a
    lattice-Boltzmann solver has it) to a VectorList field."""
    import poplar_py as poplar
    from poplar_py import Input, Output, VectorList, Vertex
    from poplibs_py import poputil

    class WindowSum(Vertex):
        rows: Input[VectorList[float]]
        out: Output[float]

        def compute(self):
            s = 0.0
            for r in range(len(self.rows)):
                for v in self.rows[r]:
                    s += v
            self.out = s

    device = poplar.IPUModel().createDevice()
    graph = poplar.Graph(device)
    graph.addCodelets(WindowSum)
    tiles, side, grid = device.getTarget().getNumTiles(), 100, 8
    start = time.perf_counter()
    chunks = [[graph.addVariable(poplar.FLOAT, [side, side], f"f{i}.{j}") for j in range(grid)]
              for i in range(grid)]
    for i, j in itertools.product(range(grid), range(grid)):
        graph.setTileMapping(chunks[i][j], i * grid + j)
    out = graph.addVariable(poplar.FLOAT, [n], "out")
    poputil.mapTensorLinearly(graph, out)

    def window(i: int, j: int) -> poplar.Tensor:
        edge = [slice(side - 1, side), slice(0, side), slice(0, 1)]  # what each neighbour gives
        bands = [poplar.concat([chunks[(i + di) % grid][(j + dj) % grid][edge[di + 1], edge[dj + 1]]
                                for dj in (-1, 0, 1)], 1) for di in (-1, 0, 1)]
        return poplar.concat(bands, 0)

    windows = [window(k // grid, k % grid) for k in range(grid * grid)]
    cs = graph.addComputeSet("windows")
    for i in range(n):
        v = graph.addVertex(cs, "WindowSum")
        graph.connect(v["rows"], windows[i % len(windows)])
        graph.connect(v["out"], out[i])
        graph.setTileMapping(v, i % tiles)
    graph_s = time.perf_counter() - start
    assert windows[0].shape() == [side + 2, side + 2] and windows[0].block is None
    return {"graph_s": graph_s, "vertices": n}


def _bert(replicas: int) -> dict:
    """The BERT-base encoder layer of ``workloads.bert_layer`` on ``replicas`` IPUs, checked."""
    import numpy as np

    import poplar_py as poplar

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from workloads import bert_layer

    model = poplar.IPUModel()
    model.numIPUs = replicas
    device = model.createDevice()
    start = time.perf_counter()
    layer = bert_layer(device.getTarget(), replicas)
    inputs = {**layer.weights, **layer.inputs[0]}
    out, times = _build_and_run(device, layer.graph, layer.program, start, inputs, "out")
    np.testing.assert_allclose(out, layer.reference()[0][0], rtol=2e-3, atol=2e-3)
    return {**times, "vertices": layer.graph.getNumVertices()}


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
    graph.createHostWrite("a", a)
    graph.createHostRead("out", out)
    host = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    got, times = _build_and_run(device, graph, seq, start, {"a": host}, "out")
    np.testing.assert_array_equal(got, host.T * host.T)
    return {**times, "vertices": graph.getNumVertices()}


def _concat_two(n: int) -> dict:
    """``concat`` of two small tensors (rows of a mapped variable), n times."""
    import poplar_py as poplar
    from poplibs_py import poputil

    device = poplar.IPUModel().createDevice()
    graph = poplar.Graph(device)
    x = graph.addVariable(poplar.FLOAT, [256, 160], "x")
    poputil.mapTensorLinearly(graph, x)
    rows = [x[i:i + 1] for i in range(256)]
    start = time.perf_counter()
    for i in range(n):
        joined = poplar.concat([rows[i % 256], rows[(i + 7) % 256]])
    graph_s = time.perf_counter() - start
    assert joined.shape() == [2, 160]
    return {"graph_s": graph_s, "vertices": 0, "calls": n}


def _reduce_many(n: int) -> dict:
    """``popops.reduceMany`` of n single-row sums to scalars, into a Sequence."""
    import poplar_py as poplar
    from poplar_py import program as prog
    from poplibs_py import popops, poputil

    device = poplar.IPUModel().createDevice()
    graph = poplar.Graph(device)
    popops.addCodelets(graph)
    x = graph.addVariable(poplar.FLOAT, [n, 160], "x")
    poputil.mapTensorLinearly(graph, x)
    popops.reduce(graph, x, [1], popops.Operation.ADD, prog.Sequence())  # rows across tiles: both stages
    before = graph.getNumVertices()  # the codelets are instantiated: what follows is the build
    start = time.perf_counter()
    outputs: list = []
    ops = [popops.SingleReduceOp(x[i], [0], popops.Operation.ADD) for i in range(n)]
    popops.reduceMany(graph, ops, outputs, prog.Sequence(), "sums")
    graph_s = time.perf_counter() - start
    assert len(outputs) == n and outputs[0].shape() == []
    return {"graph_s": graph_s, "vertices": graph.getNumVertices() - before, "calls": n}


WORKLOADS = {"matmul": _matmul, "tut7": _tut7, "vertices": _vertices,
             "constants": lambda n: _one_per_vertex(n, values=False),
             "values": lambda n: _one_per_vertex(n, values=True), "parents": _parents, "concat": _concat,
             "bert": _bert, "mulT": _mul_transposed, "concat2": _concat_two, "reduceMany": _reduce_many}


def _child(workload: str, size: int) -> None:
    result = WORKLOADS[workload](size)
    result["rss_mb"] = _peak_rss_mb()
    print(json.dumps(result))


def _measure(workload: str, size: int) -> dict:
    env = dict(os.environ, POPLAR_PY_THREADS="1", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), str(ROOT)) if p))
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
    per_vertex = workload in PER_VERTEX
    print(f"\n{workload} ({TARGETS[workload]})")
    print(f"  {'size':<22}" + "".join(f"{s:>14,}" for s in sizes))
    if any(r["vertices"] for r in rows):
        print(f"  {'vertices':<22}" + "".join(f"{r['vertices']:>14,}" for r in rows))

    def line(label: str, values: list[float], fmt: str) -> None:
        growth = "  growth " + " ".join(f"x{b / a:.2f}" if a else "-" for a, b in itertools.pairwise(values))
        print(f"  {label:<22}" + "".join(format(v, fmt) for v in values) + growth)

    timed = [(name, key) for name, key in (("graph", "graph_s"), ("Engine", "engine_s")) if key in rows[0]]
    if "calls" in rows[0]:
        line("graph us/call", [r["graph_s"] / r["calls"] * 1e6 for r in rows], ">14.2f")
    if per_vertex:
        for name, key in timed:
            line(f"{name} us/vertex", [r[key] / r["vertices"] * 1e6 for r in rows], ">14.2f")
    for name, key in timed:
        line(f"{name} s", [r[key] for r in rows], ">14.3f")
    if not per_vertex and "engine_s" in rows[0]:
        line("graph + Engine s", [r["graph_s"] + r["engine_s"] for r in rows], ">14.3f")
    if "run_s" in rows[0]:
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
