"""C++ codelets run on the engine: the field kinds Poplar's Vertex.hpp has, MultiVertex and
templates, half and short vectors, state, source text and flags; results against numpy."""

from __future__ import annotations

import io

import numpy as np
import pytest
from cxx_harness import Vertex, run, write_source

import poplar_py as poplar
from poplar_py.types import FLOAT, HALF, INT, UNSIGNED_INT

SUM = """
class SumVertex : public Vertex {
public:
  Input<Vector<float>> in;
  Output<float> out;
  bool compute() {
    float s = 0;
    for (unsigned i = 0; i < in.size(); ++i) s += in[i];
    *out = s;
    return true;
  }
};
"""


def test_vertex_sums_its_input(tmp_path):
    x = np.arange(1, 11, dtype=np.float32)
    got = run(write_source(tmp_path, SUM), [Vertex("SumVertex", {"in": x}, {"out": ((), FLOAT)})])
    assert got.outputs[0]["out"] == x.sum()


def test_multivertex_workers_split_the_work(tmp_path):
    src = write_source(tmp_path, """
class Scale : public MultiVertex {
public:
  InOut<Vector<float>> data;
  float factor;
  bool compute(unsigned workerId) {
    for (unsigned i = workerId; i < data.size(); i += numWorkers()) data[i] *= factor;
    return true;
  }
};
""")
    x = np.linspace(-3, 3, 37, dtype=np.float32)
    got = run(src, [Vertex("Scale", {"data": x}, {}, {"factor": 2.5})])
    assert got.cycles["Scale"] > 0


def test_inout_is_read_back(tmp_path):
    src = write_source(tmp_path, """
class Twice : public Vertex {
public:
  InOut<Vector<int>> v;
  InOut<unsigned> count;
  bool compute() { for (auto &x : v) x *= 2; *count += v.size(); return true; }
};
""")
    model = poplar.IPUModel()
    model.tilesPerIPU = 2
    device = model.createDevice()
    graph = poplar.Graph(device.getTarget())
    graph.addCodelets(str(src))
    v = graph.addVariable(INT, [5], "v")
    c = graph.addVariable(UNSIGNED_INT, [], "c")
    for t in (v, c):
        graph.setTileMapping(t, 1)
    cs = graph.addComputeSet("cs")
    vx = graph.addVertex(cs, "Twice", {"v": v, "count": c})
    graph.setTileMapping(vx, 1)
    graph.createHostWrite("v", v)
    graph.createHostWrite("c", c)
    graph.createHostRead("vr", v)
    graph.createHostRead("cr", c)
    engine = poplar.Engine(graph, poplar.program.Execute(cs))
    engine.load(device)
    engine.writeTensor("v", np.arange(5, dtype=np.int32))
    engine.writeTensor("c", np.array(7, np.uint32))
    engine.run()
    out, count = np.zeros(5, np.int32), np.zeros((), np.uint32)
    engine.readTensor("vr", out)
    engine.readTensor("cr", count)
    np.testing.assert_array_equal(out, np.arange(5) * 2)
    assert int(count) == 12


def test_templates_with_explicit_instantiation(tmp_path):
    src = write_source(tmp_path, """
template <typename T, unsigned K>
class AddK : public Vertex {
public:
  Input<Vector<T, VectorLayout::ONE_PTR>> a;
  Output<Vector<T>> out;
  bool compute() { for (unsigned i = 0; i < out.size(); ++i) out[i] = a[i] + T(K); return true; }
};
template class AddK<float, 3>;
template class AddK<int, 5>;
""")
    xf = np.arange(6, dtype=np.float32)
    xi = np.arange(6, dtype=np.int32)
    got = run(src, [Vertex("AddK<float,3>", {"a": xf}, {"out": (6, FLOAT)}),
                    Vertex("AddK<int,5>", {"a": xi}, {"out": (6, INT)}, tile=1)])
    np.testing.assert_array_equal(got.outputs[0]["out"], xf + 3)
    np.testing.assert_array_equal(got.outputs[1]["out"], xi + 5)
    # counted as the IPU stores it: a ONE_PTR pointer and a SPAN
    assert got.profile["compilation"]["tiles"][0]["memory"]["byCategory"]["vertex state"] == 4 + 8


def test_half_and_short_vectors(tmp_path):
    src = write_source(tmp_path, """
#include <poplar/HalfFloat.hpp>
class Axpy2 : public Vertex {
public:
  Input<Vector<float, VectorLayout::SPAN, 8>> x;
  InOut<Vector<float, VectorLayout::SPAN, 8>> y;
  float a;
  bool compute() {
    const float2 *x2 = reinterpret_cast<const float2 *>(&x[0]);
    float2 *y2 = reinterpret_cast<float2 *>(&y[0]);
    for (unsigned i = 0; i < y.size() / 2; ++i) y2[i] = a * x2[i] + y2[i];
    return true;
  }
};
class HalfScale : public Vertex {
public:
  Input<Vector<half, VectorLayout::ONE_PTR, 8>> in;
  Output<Vector<half, VectorLayout::SPAN, 8>> out;
  bool compute() {
    const half4 *in4 = reinterpret_cast<const half4 *>(&in[0]);
    half4 *out4 = reinterpret_cast<half4 *>(&out[0]);
    for (unsigned i = 0; i < out.size() / 4; ++i) out4[i] = in4[i] * (half)0.5 + (half)1;
    return true;
  }
};
""")
    x = np.arange(8, dtype=np.float32)
    y = np.ones(8, np.float32)
    h = np.linspace(-4, 4, 16).astype(np.float16)
    model = poplar.IPUModel()
    model.tilesPerIPU = 2
    device = model.createDevice()
    graph = poplar.Graph(device.getTarget())
    graph.addCodelets(str(src))
    tx, ty = graph.addVariable(FLOAT, [8], "x"), graph.addVariable(FLOAT, [8], "y")
    hi, ho = graph.addVariable(HALF, [16], "hi"), graph.addVariable(HALF, [16], "ho")
    for t in (tx, ty, hi, ho):
        graph.setTileMapping(t, 0)
    cs = graph.addComputeSet("cs")
    v1 = graph.addVertex(cs, "Axpy2", {"x": tx, "y": ty})
    graph.setInitialValue(v1["a"], 3.0)
    v2 = graph.addVertex(cs, "HalfScale", {"in": hi, "out": ho})
    for v in (v1, v2):
        graph.setTileMapping(v, 0)
    for name, t in (("x", tx), ("y", ty), ("hi", hi)):
        graph.createHostWrite(name, t)
    graph.createHostRead("yr", ty)
    graph.createHostRead("hr", ho)
    engine = poplar.Engine(graph, poplar.program.Execute(cs))
    engine.load(device)
    engine.writeTensor("x", x)
    engine.writeTensor("y", y)
    engine.writeTensor("hi", h)
    engine.run()
    ry, rh = np.zeros(8, np.float32), np.zeros(16, np.float16)
    engine.readTensor("yr", ry)
    engine.readTensor("hr", rh)
    np.testing.assert_array_equal(ry, 3 * x + y)
    np.testing.assert_array_equal(rh, h * np.float16(0.5) + np.float16(1))


def test_vector_lists_and_vectors_of_edges(tmp_path):
    src = write_source(tmp_path, """
class RowSums : public Vertex {
public:
  Vector<Input<Vector<float>>> rows;
  Input<VectorList<float, VectorListLayout::DELTANELEMENTS>> more;
  Output<Vector<float>> out;
  bool compute() {
    for (unsigned r = 0; r < rows.size(); ++r) {
      float s = 0;
      for (unsigned j = 0; j < rows[r].size(); ++j) s += rows[r][j];
      for (unsigned j = 0; j < more[r].size(); ++j) s += more[r][j];
      out[r] = s;
    }
    return true;
  }
};
""")
    rows = [np.arange(n, dtype=np.float32) for n in (3, 1, 5)]
    more = [np.full(n, 10, np.float32) for n in (2, 2, 1)]
    got = run(src, [Vertex("RowSums", {"rows": rows, "more": more}, {"out": (3, FLOAT)})])
    np.testing.assert_array_equal(got.outputs[0]["out"], [r.sum() + m.sum() for r, m in zip(rows, more)])


def test_state_vector_and_scalars(tmp_path):
    src = write_source(tmp_path, """
class Poly : public Vertex {
public:
  Input<Vector<float>> x;
  Output<Vector<float>> y;
  Vector<float> coeffs;
  unsigned short degree;
  bool compute() {
    for (unsigned i = 0; i < x.size(); ++i) {
      float acc = 0;
      for (int k = degree; k >= 0; --k) acc = acc * x[i] + coeffs[k];
      y[i] = acc;
    }
    return true;
  }
};
""")
    x = np.linspace(-1, 1, 9, dtype=np.float32)
    coeffs = np.array([1, -2, 0.5], np.float32)
    got = run(src, [Vertex("Poly", {"x": x}, {"y": (9, FLOAT)}, {"coeffs": coeffs, "degree": 2})])
    np.testing.assert_allclose(got.outputs[0]["y"], np.polyval(coeffs[::-1], x), rtol=1e-6)


def test_source_text_stringio_and_flags(tmp_path):
    text = "#include <poplar/Vertex.hpp>\nusing namespace poplar;\n" + SUM.replace("SumVertex", "FromText")
    with pytest.raises(poplar.PoplarError, match="codelet files are"):  # text is C++ only with CppSource
        run(text, [])
    model = poplar.IPUModel()
    graph = poplar.Graph(model.createDevice().getTarget())
    assert graph.addCodelets(text, poplar.CodeletFileType.CppSource)
    assert graph.hasCodelet("FromText")
    assert graph.addCodelets(io.StringIO(text.replace("FromText", "FromStream")))
    assert graph.hasCodelet("FromStream")
    scaled = write_source(tmp_path, """
class Scaled : public Vertex {
public:
  Output<float> out;
  bool compute() { *out = FACTOR * 2; return true; }
};
""")
    got = run(scaled, [Vertex("Scaled", {}, {"out": ((), FLOAT)})], flags="-DFACTOR=21")
    assert got.outputs[0]["out"] == 42


def test_one_module_per_file_macros_do_not_clash(tmp_path):
    a = write_source(tmp_path, "#define K 1\nclass A : public Vertex { public: Output<int> o; "
                               "bool compute() { *o = K; return true; } };\n")
    b = write_source(tmp_path, "#define K 2\nclass B : public Vertex { public: Output<int> o; "
                               "bool compute() { *o = K; return true; } };\n")
    got = run([a, b], [Vertex("A", {}, {"o": ((), INT)}), Vertex("B", {}, {"o": ((), INT)}, tile=1)])
    assert (got.outputs[0]["o"], got.outputs[1]["o"]) == (1, 2)


def test_cxx_and_python_codelets_in_one_graph(tmp_path):
    py = tmp_path / "py_codelets.py"
    py.write_text("from poplar_py import Input, Output, Vector, Vertex\n\n\n"
                  "class Double(Vertex):\n    x: Input[Vector[float]]\n    y: Output[Vector[float]]\n\n"
                  "    def compute(self):\n        for i in range(len(self.x)):\n"
                  "            self.y[i] = self.x[i] * 2\n")
    x = np.arange(4, dtype=np.float32)
    got = run([write_source(tmp_path, SUM), py], [Vertex("SumVertex", {"in": x}, {"out": ((), FLOAT)}),
                                                  Vertex("Double", {"x": x}, {"y": (4, FLOAT)}, tile=1)])
    assert got.outputs[0]["out"] == 6
    np.testing.assert_array_equal(got.outputs[1]["y"], x * 2)


def test_supervisor_vertex_runs_once(tmp_path):
    src = write_source(tmp_path, """
class Count : public SupervisorVertex {
public:
  InOut<int> n;
  __attribute__((target("supervisor"))) bool compute() { *n += 1; return true; }
};
""")
    got = run(src, [Vertex("Count", {"n": np.array(4, np.int32)}, {})])
    assert got.cycles["Count"] > 0


@pytest.mark.parametrize("checked", ["true", "false"])
def test_checked_and_unchecked_agree(tmp_path, checked):
    x = np.arange(100, dtype=np.float32)
    got = run(write_source(tmp_path, SUM), [Vertex("SumVertex", {"in": x}, {"out": ((), FLOAT)})],
              options={"codelets.checkBounds": checked})
    assert got.outputs[0]["out"] == x.sum()


def test_worker_ids_builtins_and_ipu_headers(tmp_path):
    src = write_source(tmp_path, """
#include <ipudef.h>
#include <ipu_vector_math>
#include <poplar/AvailableVTypes.h>
#include <poplar/Loops.hpp>
#include <poplar/StackSizeDefs.hpp>
#include <print.h>
class Ids : public MultiVertex {
public:
  Output<Vector<unsigned>> ids;
  Output<Vector<float>> maths;
  bool compute(unsigned workerId) {
    unsigned wid = __builtin_ipu_get(CSR_W_WSR__INDEX) & CSR_W_WSR__CTXTID_M1__MASK;
    ids[workerId] = wid * 10 + workerId;
    if (workerId == 0) {
      const rptsize_t n = 2;
      float2 v = ipu::sqrt(float2{4.0f, 9.0f});
      for (rptsize_t i = 0; i < n; ++i) maths[i] = v[i];
      maths[2] = __builtin_ipu_exp2(3.0f);
    }
    return true;
  }
};
""")
    got = run(src, [Vertex("Ids", {}, {"ids": (6, UNSIGNED_INT), "maths": (3, FLOAT)})])
    np.testing.assert_array_equal(got.outputs[0]["ids"], np.arange(6) * 11)
    np.testing.assert_array_equal(got.outputs[0]["maths"], [2, 3, 8])
