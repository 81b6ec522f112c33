"""C++ vertices in lockstep lanes (strict mode): vertices whose sizes and state agree run two at a
time; results and cycles are those of each vertex alone, and a failing lane names its own vertex."""

from __future__ import annotations

import numpy as np
import pytest
from cxx_harness import Vertex, run, write_source

from poplar_py import VertexError
from poplar_py.cxx import instrument, lanes, module
from poplar_py.types import FLOAT

DOT = """
class Dot : public Vertex {
public:
  Input<Vector<float>> a;
  Input<Vector<float>> b;
  Output<float> out;
  float scale;
  bool compute() {
    float s = 0;
    for (unsigned i = 0; i < a.size(); ++i) s += a[i] * b[i];
    *out = s * scale;
    return true;
  }
};
"""
BRANCHY = """
class Clip : public Vertex {
public:
  InOut<Vector<float>> v;
  bool compute() {
    for (unsigned i = 0; i < v.size(); ++i)
      if (v[i] > 1.0f) v[i] = 1.0f;   // a branch on data: lanes could diverge
    return true;
  }
};
"""


def _lanes_of(path) -> dict[str, bool]:
    classes = module.load(str(path), None, "")
    cxx = classes[0].cxxFile
    text = instrument.instrument(cxx.ir, cxx.entries(), cxx.file, checked=True)
    return {c.vertexName: f"@{c.cxxSymbol}_has_lanes = constant i8 1" in text for c in classes}


def test_uniform_control_flow_gets_lanes_data_branches_do_not(tmp_path):
    assert _lanes_of(write_source(tmp_path, DOT)) == {"Dot": True}
    assert _lanes_of(write_source(tmp_path, BRANCHY)) == {"Clip": False}


@pytest.mark.parametrize("sizes", [[8] * 6, [8, 8, 5, 5, 5, 9, 9], [3, 4, 3, 4, 3]])
def test_lanes_give_each_vertex_its_own_results_and_cycles(tmp_path, sizes):
    src = write_source(tmp_path, DOT)
    rng = np.random.default_rng(len(sizes))
    vertices, expected = [], []
    for k, n in enumerate(sizes):
        a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        scale = 2.0 if k % 3 else 0.5
        vertices.append(Vertex("Dot", {"a": a, "b": b}, {"out": ((), FLOAT)}, {"scale": scale}))
        s = np.float32(0)
        for x, y in zip(a, b):  # the strict sequential sum
            s = np.float32(s + np.float32(x * y))
        expected.append(np.float32(s * np.float32(scale)))
    got = run(src, vertices)
    assert [float(o["out"]) for o in got.outputs] == [float(e) for e in expected]
    # each vertex: 10 + the loop (n + 1 tests, n x (the step, two loads issued beside the multiply
    # and add)) + the multiply by scale issued beside the store
    assert got.cycles["Dot"] == sum(10 + (n + 1) + 3 * n + 2 for n in sizes)


def test_a_failing_lane_names_its_own_vertex(tmp_path):
    src = write_source(tmp_path, """
class Pick : public Vertex {
public:
  Input<Vector<float>> v;
  Input<Vector<int>> at;
  Output<float> out;
  bool compute() { *out = v[at[0]]; return true; }
};
""")
    assert _lanes_of(src) == {"Pick": True}
    v = np.arange(4, dtype=np.float32)
    vertices = [Vertex("Pick", {"v": v, "at": np.array([k], np.int32)}, {"out": ((), FLOAT)}, tile=k % 2)
                for k in (0, 1, 2, 9)]
    with pytest.raises(VertexError, match=r"index 9 is out of bounds for field 'v' of size 4") as err:
        run(src, vertices, tiles=2)
    assert "on tile 1" in str(err.value)


def test_lanes_count(tmp_path):
    assert lanes.LANES == 2  # the Python codelets' measured figure, which the runner shares
