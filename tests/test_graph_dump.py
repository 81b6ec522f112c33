"""Graph dumps (outputVertexGraph, outputComputeGraph, serialize) and the Engine's profile parts."""

from __future__ import annotations

import io
import json
import zlib

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import InOut, Input, Vector, Vertex
from poplar_py import program as prog


class Axpy(Vertex):
    a: Input[Vector[float]]
    b: InOut[Vector[float]]
    k: float

    def compute(self):
        for i in range(len(self.a)):
            self.b[i] += self.a[i] * self.k


def _graph():
    """Two Axpy vertices (tiles 0 and 1) adding 2 * x to each row of y, and an empty compute set."""
    m = poplar.IPUModel()
    m.tilesPerIPU = 2
    device = m.createDevice()
    g = poplar.Graph(device)
    g.addCodelets(Axpy)
    x = g.addConstant(poplar.FLOAT, [2], [1.0, 2.0], "x")
    y = g.addVariable(poplar.FLOAT, [2, 2], "y")
    g.setTileMapping(x, 0)
    g.setTileMapping(y[0], 0)
    g.setTileMapping(y[1], 1)
    g.setInitialValue(y, [10.0, 20.0, 30.0, 40.0])
    cs = g.addComputeSet("axpy")
    other = g.addComputeSet("other")
    for tile in range(2):
        v = g.addVertex(cs, "Axpy", {"a": x, "b": y[tile]})
        g.setTileMapping(v, tile)
        g.setInitialValue(v["k"], 2.0)
    g.setPerfEstimate(v, 7)
    g.createHostRead("y", y)
    return device, g, cs, other


VERTEX_GRAPH = """digraph vertexGraph {
  node [fontsize=10];
  subgraph "cluster_cs0" {
    label="axpy";
    v0 [shape=box, label="Axpy\\ntile 0"];
    v1 [shape=box, label="Axpy\\ntile 1"];
  }
  subgraph "cluster_cs1" {
    label="other";
  }
  var0 [label="x\\nfloat [2]", style=dashed];
  var1 [label="y\\nfloat [2, 2]"];
  var0 -> v0 [label="a"];
  v0 -> var1 [label="b", dir=both];
  var0 -> v1 [label="a"];
  v1 -> var1 [label="b", dir=both];
}
"""

COMPUTE_GRAPH = """digraph computeGraph {
  node [fontsize=10];
  cs0 [shape=box, label="axpy\\n2 vertices"];
  var0 [label="x\\nfloat [2]", style=dashed];
  var1 [label="y\\nfloat [2, 2]"];
  var0 -> cs0;
  var1 -> cs0;
  cs0 -> var1;
}
"""


def test_vertex_graph_is_graphviz_dot(tmp_path):
    _, g, _, _ = _graph()
    g.outputVertexGraph(tmp_path / "v.dot")
    assert (tmp_path / "v.dot").read_text() == VERTEX_GRAPH
    out = io.BytesIO()
    g.outputVertexGraph(out)
    assert out.getvalue().decode() == VERTEX_GRAPH


def test_compute_graph_keeps_what_the_programs_execute():
    _, g, cs, other = _graph()
    f = g.addFunction(prog.Execute(cs))
    out = io.StringIO()
    g.outputComputeGraph(out, [prog.Sequence([prog.Call(f)])])  # reached through a call
    assert out.getvalue() == COMPUTE_GRAPH
    out = io.StringIO()
    g.outputComputeGraph(out, prog.Execute(other))
    assert out.getvalue() == "digraph computeGraph {\n  node [fontsize=10];\n  cs1 [shape=box, " \
                             "label=\"other\\n0 vertices\"];\n}\n"


def test_the_serialized_graph_reproduces_the_computation():
    device, g, cs, other = _graph()
    out = io.StringIO()
    g.serialize(out, [prog.Sequence([prog.Execute(cs), prog.Repeat(2, prog.Execute(other))])])
    doc = json.loads(out.getvalue())
    assert (doc["format"], doc["version"], doc["replicationFactor"]) == ("poplar-py graph", 1, 1)
    assert doc["target"] == {"arch": "ipu2", "numIPUs": 1, "tilesPerIPU": 2, "bytesPerTile": 638_976,
                             "numWorkerContexts": 6}
    assert [v["name"] for v in doc["variables"]] == ["x", "y"]
    assert doc["variables"][1]["mapping"] == [[0, 2, 0], [2, 4, 1]]
    assert doc["computeSets"] == [{"name": "axpy", "vertices": [0, 1]}, {"name": "other", "vertices": []}]
    assert [(v["tile"], v["perfEstimate"]) for v in doc["vertices"]] == [(0, None), (1, 7)]
    assert doc["hostHandles"] == [{"name": "y", "write": False, "type": "float", "shape": [2, 2]}]
    assert doc["programs"] == [{"type": "Sequence", "name": "", "children": [
        {"type": "Execute", "name": "", "computeSet": 0},
        {"type": "Repeat", "name": "", "count": 2,
         "children": [{"type": "Execute", "name": "", "computeSet": 1}]}]}]
    # run the document's vertices on the host with numpy, and the graph on the tiles
    memory = [np.array(v["initialValue"], np.float32) for v in doc["variables"]]
    for vertex in doc["vertices"]:
        fields = {name: (var, np.arange(offset, offset + count * stride, stride))
                  for name, _, var, offset, count, stride in vertex["edges"]}
        (a_var, a_at), (b_var, b_at) = fields["a"], fields["b"]
        memory[b_var][b_at] += memory[a_var][a_at] * np.float32(vertex["state"]["k"][0])
    engine = poplar.Engine(g, prog.Execute(cs))
    engine.load(device)
    engine.run(0)
    np.testing.assert_array_equal(engine.readTensor("y").reshape(-1), memory[1])
    np.testing.assert_array_equal(memory[1], [12, 24, 32, 44])


def test_the_binary_format_is_the_json_compressed(tmp_path):
    _, g, _, _ = _graph()
    g.serialize(tmp_path / "g.bin", poplar.SerializationFormat.Binary)
    text = io.StringIO()
    g.serialize(text, poplar.SerializationFormat.JSON)
    assert zlib.decompress((tmp_path / "g.bin").read_bytes()).decode() == text.getvalue()


@pytest.mark.parametrize("call,culprit", [
    (lambda g: g.serialize(3), "serialize: expected a path or an open file"),
    (lambda g: g.serialize(io.StringIO(), "json"), "SerializationFormat"),
    (lambda g: g.serialize(io.StringIO(), poplar.SerializationFormat.Binary), "Binary format"),
    (lambda g: g.outputVertexGraph(None), "outputVertexGraph: expected a path"),
    (lambda g: g.outputComputeGraph(io.StringIO(), [prog.Sequence(), 3]), "outputComputeGraph"),
])
def test_dump_arguments_are_checked(call, culprit):
    _, g, _, _ = _graph()
    with pytest.raises(poplar.InvalidArgumentError, match=culprit):
        call(g)


def test_graph_and_execution_profiles_are_the_report_parts():
    device, g, cs, _ = _graph()
    engine = poplar.Engine(g, prog.Execute(cs))
    engine.load(device)
    assert engine.getExecutionProfile()["totalCycles"] == 0
    engine.run(0)
    report = engine.getProfile()
    assert engine.getGraphProfile() == report["compilation"]
    assert engine.getExecutionProfile() == report["execution"]
    assert engine.getGraphProfile()["graph"]["numVertices"] == 2
    assert engine.getExecutionProfile()["runs"] == [{"program": 0}]
    assert engine.getExecutionProfile()["totalCycles"] > 0
