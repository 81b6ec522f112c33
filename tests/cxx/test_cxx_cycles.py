"""The cycles a C++ vertex counts: the Python codelets' per-operation model on clang's IR, so a C++
vertex and its Python twin count the same; perf estimates override the count as for Python."""

from __future__ import annotations

import numpy as np
import pytest
from cxx_harness import Vertex, run, write_source

import poplar_py as poplar
from poplar_py.types import FLOAT

DOT_CPP = """
class Dot : public Vertex {
public:
  Input<Vector<float>> a;
  Input<Vector<float>> b;
  Output<float> out;
  bool compute() {
    float s = 0;
    for (unsigned i = 0; i < a.size(); ++i) s += a[i] * b[i];
    *out = s;
    return true;
  }
};
"""
DOT_PY = """from poplar_py import Input, Output, Vector, Vertex


class DotPy(Vertex):
    a: Input[Vector[float]]
    b: Input[Vector[float]]
    out: Output[float]

    def compute(self):
        s = 0.0
        for i in range(len(self.a)):
            s += self.a[i] * self.b[i]
        self.out = s
        return True
"""


@pytest.mark.parametrize("n", [0, 1, 7, 64])
def test_a_cxx_vertex_counts_what_its_python_twin_counts(tmp_path, n):
    py = tmp_path / "dot_py.py"
    py.write_text(DOT_PY)
    x = np.arange(n, dtype=np.float32)
    got = run([write_source(tmp_path, DOT_CPP), py],
              [Vertex("Dot", {"a": x, "b": x}, {"out": ((), FLOAT)}),
               Vertex("DotPy", {"a": x, "b": x}, {"out": ((), FLOAT)}, tile=1)])
    # 10 + n + 1 tests + n x (the step, and two loads issued beside the multiply and add) + the store
    assert got.cycles["Dot"] == got.cycles["DotPy"] == 12 + 4 * n
    assert got.outputs[0]["out"] == got.outputs[1]["out"] == np.dot(x, x)


@pytest.mark.parametrize(("statement", "cost"), [
    ("*out = x[0] + x[1];", 3),          # two loads and a store; the add issues beside them
    ("*out = x[0] / x[1];", 10),         # a division costs 10, beside the loads and the store
    ("*out = std::sqrt(x[0]);", 10),     # sqrt costs 10, as math.sqrt
    ("*out = std::exp(x[0]);", 20),      # other maths 20
    ("if (x[0] < x[1]) *out = 1.0f;", 4),  # loads and branch (the compare beside them), the store
    ("int k = int(x[0]); *out = x[k] + x[1] * x[1];", 5),  # four loads, the store; 3 float ops beside
    ("float a = x[0], b = x[1]; *out = a * b + a * b - b * b + a * a;", 7),  # 7 float ops; 3 beside them
])
def test_per_operation_costs(tmp_path, statement, cost):
    src = write_source(tmp_path, "#include <cmath>\n" + f"""
class Op : public Vertex {{
public:
  Input<Vector<float>> x;
  Output<float> out;
  bool compute() {{ {statement} return true; }}
}};
""")
    got = run(src, [Vertex("Op", {"x": np.arange(2, dtype=np.float32)}, {"out": ((), FLOAT)})])
    assert got.cycles["Op"] == 10 + cost


def test_multivertex_takes_six_times_its_slowest_worker(tmp_path):
    src = write_source(tmp_path, """
class Spin : public MultiVertex {
public:
  InOut<Vector<float>> v;
  bool compute(unsigned w) {
    if (w == 0) for (unsigned i = 0; i < v.size(); ++i) v[i] += 1;
    return true;
  }
};
""")
    got = run(src, [Vertex("Spin", {"v": np.zeros(10, np.float32)})])
    # worker 0: 10 + compare and branch 2 + the loop (11 tests, 10 x (the step, the load and the
    # store, the add beside them)) = 10 + 2 + 11 + 30
    assert got.cycles["Spin"] == 6 * (10 + 2 + 11 + 30)


SUM_CPP = """
class Sum : public Vertex {
public:
  Input<Vector<float>> x;
  Output<float> out;
  bool compute() {
    float s = 0;
    for (unsigned i = 0; i < COUNT; ++i) s += x[i];
    *out = s;
    return true;
  }
};
"""
SUM_PY = """from poplar_py import Input, Output, Vector, Vertex


class SumPy(Vertex):
    x: Input[Vector[float]]
    out: Output[float]

    def compute(self):
        s = 0.0
        for i in range(COUNT):
            s += self.x[i]
        self.out = s
        return True
"""


@pytest.mark.parametrize(("count", "cycles"), [
    (64, 10 + 1 + 64 + 1),  # rpt: 1 to start, then each turn the load with the add beside it
    (4095, 10 + 1 + 4095 + 1),  # the most turns rpt counts
    (4096, 10 + 4097 + 4096 * 2 + 1),  # brnzdec: a test each turn, and the step beside the load
])
def test_a_loop_of_a_constant_count_repeats(tmp_path, count, cycles):
    py = tmp_path / "sum_py.py"
    py.write_text(SUM_PY.replace("COUNT", str(count)))
    x = np.ones(count, dtype=np.float32)
    got = run([write_source(tmp_path, SUM_CPP.replace("COUNT", str(count))), py],
              [Vertex("Sum", {"x": x}, {"out": ((), FLOAT)}),
               Vertex("SumPy", {"x": x}, {"out": ((), FLOAT)}, tile=1)])
    assert got.cycles["Sum"] == got.cycles["SumPy"] == cycles
    assert got.outputs[0]["out"] == got.outputs[1]["out"] == count


def test_perf_estimates_override_the_count(tmp_path):
    src = write_source(tmp_path, DOT_CPP)
    model = poplar.IPUModel()
    model.tilesPerIPU = 2
    device = model.createDevice()
    graph = poplar.Graph(device.getTarget())
    graph.addCodelets(str(src))
    cs = graph.addComputeSet("cs")
    x = graph.addVariable(FLOAT, [8], "x")
    graph.setTileMapping(x, 0)
    outs = graph.addVariable(FLOAT, [2], "outs")
    graph.setTileMapping(outs, 0)
    for k in range(2):
        v = graph.addVertex(cs, "Dot", {"a": x, "b": x, "out": outs[k]})
        graph.setTileMapping(v, 0)
        if k == 1:
            graph.setPerfEstimate(v, 1000)
    graph.registerPerfEstimator("Dot", lambda vertex, target: 7 * vertex.getFieldInfo("a").size())
    engine = poplar.Engine(graph, poplar.program.Execute(cs))
    engine.load(device)
    engine.run()
    types = {v["type"]: v["cycles"] for v in engine.getProfile()["execution"]["vertexTypes"]}
    assert types["Dot"] == 7 * 8 + 1000
