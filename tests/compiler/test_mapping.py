"""Completing the tile mapping: the constants of fields connected to values go to the tile
their vertex finally runs on, however late the vertex is mapped."""

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import Input, Output, Vector, Vertex
from poplar_py import program as prog


class Weighted(Vertex):
    w: Input[Vector[float]]
    x: Input[Vector[float]]
    out: Output[float]

    def compute(self):
        s = 0.0
        t = 0.0
        for v in self.w:
            s += v
        for v in self.x:
            t += v
        self.out = s * t
        return True


class Constant(Vertex):
    k: Input[float]
    out: Output[float]

    def compute(self):
        self.out = self.k
        return True


def _graph(tiles):
    m = poplar.IPUModel()
    m.tilesPerIPU = tiles
    device = m.createDevice()
    graph = poplar.Graph(device)
    graph.addCodelets([Weighted, Constant])
    return device, graph


def _constant_bytes(engine):
    tiles = engine.getProfile()["compilation"]["tiles"]
    return [t["memory"]["byCategory"].get("constants", 0) for t in tiles]


def test_connected_first_and_mapped_after_the_values_live_on_their_vertices_tiles():
    """As C++ programs do (connect, then map): 64 vertices of 10 KB of weights each put 640 KB
    of constants on tile 0 (of 624 KB), which ran out of memory; each tile now holds its own
    vertices' weights."""
    tiles, n, width = 16, 64, 2560
    device, graph = _graph(tiles)
    x = graph.addVariable(poplar.FLOAT, [n], "x")
    out = graph.addVariable(poplar.FLOAT, [n], "out")
    cs = graph.addComputeSet("weighted")
    vertices = []
    for i in range(n):
        vertices.append(graph.addVertex(cs, "Weighted", {"w": np.full(width, float(i)), "x": x[i:i + 1],
                                                         "out": out[i]}))
    for i, v in enumerate(vertices):  # mapped only now
        tile = i * tiles // n
        graph.setTileMapping(v, tile)
        graph.setTileMapping(x[i], tile)
        graph.setTileMapping(out[i], tile)
    graph.createHostWrite("x", x)
    graph.createHostRead("out", out)
    engine = poplar.Engine(graph, prog.Execute(cs))
    per_tile = n // tiles * width * 4
    assert _constant_bytes(engine) == [per_tile] * tiles
    assert engine.getProfile()["compilation"]["autoMappedVariables"] == []
    engine.load(device)
    engine.writeTensor("x", np.ones(n, np.float32))
    engine.run()
    np.testing.assert_array_equal(engine.readTensor("out"), width * np.arange(n, dtype=np.float32))
    assert engine.getProfile()["execution"]["steps"][0]["exchange"] == 0  # every read is on its tile


def test_an_unmapped_vertex_and_its_values_go_where_most_of_its_data_is():
    device, graph = _graph(4)
    x = graph.addVariable(poplar.FLOAT, [4], "x")
    out = graph.addVariable(poplar.FLOAT, [2], "out")
    graph.setTileMapping(x, 3)
    graph.setTileMapping(out, [[(0, 1)], [], [(1, 2)], []])
    cs = graph.addComputeSet("weighted")
    graph.addVertex(cs, "Weighted", {"w": [1.0, 2.0, 3.0], "x": x[0:3], "out": out[0]})  # 3 floats on 3
    graph.addVertex(cs, "Weighted", {"w": [4.0], "x": x[3:4], "out": out[1]})  # one on 3, one on 2: 2
    graph.createHostWrite("x", x)
    graph.createHostRead("out", out)
    engine = poplar.Engine(graph, prog.Execute(cs))
    assert _constant_bytes(engine) == [0, 0, 4, 12]
    engine.load(device)
    engine.writeTensor("x", np.array([1.0, 0.5, 0.5, 3.0], np.float32))
    engine.run()
    np.testing.assert_array_equal(engine.readTensor("out"), [12.0, 12.0])


def test_values_need_no_mapping_in_strict_mode_and_are_not_reported_auto_mapped():
    _, graph = _graph(2)
    x = graph.addVariable(poplar.FLOAT, [1], "x")
    out = graph.addVariable(poplar.FLOAT, [1], "out")
    graph.setTileMapping(x, 1)
    graph.setTileMapping(out, 1)
    cs = graph.addComputeSet("weighted")
    graph.setTileMapping(graph.addVertex(cs, "Weighted", {"w": [0.5, 0.5], "x": x, "out": out[0]}), 1)
    engine = poplar.Engine(graph, prog.Execute(cs), {"tileMapping.strict": "true"})
    assert _constant_bytes(engine) == [0, 8]
    assert engine.getProfile()["compilation"]["autoMappedVariables"] == []


def test_a_vertex_whose_connection_fails_leaves_its_values_to_no_vertex():
    _, graph = _graph(4)
    x = graph.addVariable(poplar.FLOAT, [1], "x")
    cs = graph.addComputeSet("weighted")
    with pytest.raises(poplar.GraphConnectionError, match="field 'out'"):
        graph.addVertex(cs, "Weighted", {"w": [1.0], "x": x, "out": 2.0})  # an Output takes no value
    with pytest.raises(poplar.TensorCreationError, match=r"field 'k'.*scalar but 2 values"):
        graph.addVertex(cs, "Constant", {"k": [1.0, 2.0]})
    assert graph.freeze().value_constants.tolist() == [[1, -1]]  # the first vertex was removed
    engine = poplar.Engine(graph, prog.Sequence())  # a graph without vertices: the value on tile 0
    assert _constant_bytes(engine) == [4, 0, 0, 0]
