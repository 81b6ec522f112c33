"""Graph.add_vertices: many vertices of one class, their list and vector fields from arrays."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import Input, MultiVertex, Output, Vector, VectorList, Vertex
from poplar_py import program as prog
from poplar_py.builder.bulk_vertices import Rows
from poplar_py.errors import (
    GraphConnectionError,
    InvalidArgumentError,
    InvalidTileMappingError,
    PoplarTypeError,
    UnknownFieldError,
)


class RowSums(Vertex):
    """``out[r] = scale * sum(rows[r])``."""

    rows: Input[VectorList[float]]
    out: Output[Vector[float]]
    scale: float

    def compute(self):
        for r in range(len(self.rows)):
            s = 0.0
            for x in self.rows[r]:
                s += x
            self.out[r] = s * self.scale


class Doubles(MultiVertex):
    """Worker ``w`` writes row ``w`` of ``src``, doubled, into row ``w`` of ``dst``."""

    src: Input[VectorList[float]]
    dst: Output[VectorList[float]]

    def compute(self, workerId):
        if workerId < len(self.dst):
            src = self.src[workerId]
            dst = self.dst[workerId]
            for i in range(len(dst)):
                dst[i] = 2.0 * src[i]


class AddScalar(Vertex):
    """``out = x + k``."""

    x: Input[Vector[float]]
    k: Input[float]
    out: Output[Vector[float]]

    def compute(self):
        for i in range(len(self.x)):
            self.out[i] = self.x[i] + self.k


def _setup(tiles: int = 4):
    m = poplar.IPUModel()
    m.tilesPerIPU = tiles
    device = m.createDevice()
    graph = poplar.Graph(device)
    graph.addCodelets([RowSums, Doubles, AddScalar])
    return device, graph


def _run(device, graph, cs, reads, writes):
    for name, (t, _) in writes.items():
        graph.createHostWrite(name, t)
    for name, t in reads.items():
        graph.createHostRead(name, t)
    engine = poplar.Engine(graph, prog.Execute(cs))
    engine.load(device)
    for name, (_, value) in writes.items():
        engine.writeTensor(name, value)
    engine.run()
    return {name: engine.readTensor(name) for name in reads}


def test_rows_of_views_connect_like_addvertex():
    device, graph = _setup()
    x = graph.addVariable(poplar.FLOAT, [6, 5], "x")
    graph.setTileMapping(x, 1)
    out = graph.addVariable(poplar.FLOAT, [6], "out")
    graph.setTileMapping(out, 2)
    xt = x.transpose()  # [5, 6]: its flat ranges are strided runs of x
    # vertex 0 sums rows [0:6] and [6:12] + [24:30] of xt; vertex 1 sums [12:24]
    rows = Rows(np.array([2, 1]), np.array([0, 6, 24, 12]), np.array([6, 12, 30, 24]), np.array([0, 1, 1, 2]))
    outs = Rows(np.array([1, 1]), np.array([0, 2]), np.array([2, 3]), np.array([0, 1]))
    cs = graph.addComputeSet("sums")
    vids = graph.add_vertices(cs, "RowSums", np.array([3, 0]), {"rows": (xt, rows), "out": (out, outs)},
                              state={"scale": 2.0})
    assert list(vids) == [0, 1] and graph.getNumVertices() == 2
    host = np.arange(30, dtype=np.float32).reshape(6, 5)
    got = _run(device, graph, cs, {"out": out}, {"x": (x, host)})["out"]
    flat = host.T.reshape(-1)
    expected = 2 * np.array([flat[0:6].sum(), flat[6:12].sum() + flat[24:30].sum(), flat[12:24].sum()])
    np.testing.assert_allclose(got[:3], expected)


def test_multivertex_rows_per_worker():
    device, graph = _setup()
    src = graph.addVariable(poplar.FLOAT, [40], "src")
    dst = graph.addVariable(poplar.FLOAT, [40], "dst")
    for t in (src, dst):
        graph.setTileMapping(t.slice(0, 20), 0)
        graph.setTileMapping(t.slice(20, 40), 1)
    # tile 0: rows [0, 7) and [7, 20); tile 1: rows [30, 40) + [20, 25) and [25, 30)
    rows = Rows(np.array([2, 2]), np.array([0, 7, 30, 20, 25]), np.array([7, 20, 40, 25, 30]),
                np.array([0, 1, 2, 2, 3]))
    reversed_src = src.reverse(0).reverse(0)  # a view (the same elements)
    cs = graph.addComputeSet("copy")
    graph.add_vertices(cs, "Doubles", np.array([0, 1]), {"src": (reversed_src, rows), "dst": (dst, rows)})
    host = np.arange(40, dtype=np.float32)
    got = _run(device, graph, cs, {"dst": dst}, {"src": (src, host)})["dst"]
    np.testing.assert_array_equal(got, 2 * host)


@pytest.mark.parametrize("case", ["unknown", "type", "constant", "tile", "state", "vector rows"])
def test_bad_input_raises_and_leaves_the_graph_as_it_was(case):
    _, graph = _setup()
    x = graph.addVariable(poplar.FLOAT, [4], "x")
    c = graph.addConstant(poplar.FLOAT, [4], np.zeros(4), "c")
    i = graph.addVariable(poplar.INT, [4], "i")
    rows = Rows(np.array([1, 1]), np.array([0, 2]), np.array([2, 4]), np.array([0, 1]))
    cs = graph.addComputeSet("cs")
    lists = {"rows": (x, rows), "out": (x, rows)}
    kwargs = {"state": {"scale": 1.0}}
    tiles = np.array([0, 1])
    error = {"unknown": UnknownFieldError, "type": PoplarTypeError, "constant": GraphConnectionError,
             "tile": InvalidTileMappingError, "state": UnknownFieldError,
             "vector rows": GraphConnectionError}[case]
    if case == "unknown":
        lists["nope"] = (x, rows)
    elif case == "type":
        lists["rows"] = (i, rows)
    elif case == "constant":
        lists["out"] = (c, rows)
    elif case == "tile":
        tiles = np.array([0, 4])
    elif case == "state":
        kwargs = {"state": {"scale": 1.0, "missing": 2}}
    else:
        lists["out"] = (x, Rows(np.array([2, 0]), rows.begin, rows.end, rows.row))
    edges_before = graph.getNumVertices()
    with pytest.raises(error):
        graph.add_vertices(cs, "RowSums", tiles, lists, **kwargs)
    assert graph.getNumVertices() == edges_before == 0
    graph.add_vertices(cs, "RowSums", np.array([0, 1]), {"rows": (x, rows), "out": (x, rows)},
                       state={"scale": 1.0})
    assert graph.getNumVertices() == 2


def _add_scalar_graph(bulk: bool, perf=(7, 0, 12), which=(1, 0, 1)):
    """Three AddScalar vertices, each on its own slice of x and reading one of two constants (on
    tiles 1 and 2): made with add_vertices (``bulk``) or addVertex and setPerfEstimate."""
    device, graph = _setup()
    x = graph.addVariable(poplar.FLOAT, [9], "x")
    out = graph.addVariable(poplar.FLOAT, [9], "out")
    for t in (x, out):
        graph.setTileMapping(t, 0)
    ks = [graph.addConstant(poplar.FLOAT, [], k, f"k{k}") for k in (10.0, 20.0)]
    graph.setTileMapping(ks[0], 1)
    graph.setTileMapping(ks[1], 2)
    tiles = np.array([0, 3, 3])
    cs = graph.addComputeSet("add")
    if bulk:
        rows = Rows(np.ones(3, np.int64), np.array([0, 3, 6]), np.array([3, 6, 9]), np.arange(3))
        graph.add_vertices(cs, "AddScalar", tiles, {"x": (x, rows), "out": (out, rows)},
                           each={"k": (ks, np.array(which))}, perf=np.array(perf))
    else:
        for v in range(3):
            ref = graph.addVertex(cs, "AddScalar", {"x": x[3 * v:3 * v + 3], "k": ks[which[v]],
                                                   "out": out[3 * v:3 * v + 3]})
            graph.setTileMapping(ref, int(tiles[v]))
            graph.setPerfEstimate(ref, perf[v])
    return device, graph, cs, x, out


def _serialized(graph) -> dict:
    f = io.StringIO()
    graph.serialize(f)
    return json.loads(f.getvalue())


def test_each_vertex_its_own_tensor_and_perf_estimate_as_addvertex_does():
    device, graph, cs, x, out = _add_scalar_graph(bulk=True)
    _, single, _, _, _ = _add_scalar_graph(bulk=False)
    got = _serialized(graph)
    assert got == _serialized(single)
    assert [v["perfEstimate"] for v in got["vertices"]] == [7, 0, 12]
    host = np.arange(9, dtype=np.float32)
    result = _run(device, graph, cs, {"out": out}, {"x": (x, host)})["out"]
    np.testing.assert_array_equal(result, host + np.repeat([20.0, 10.0, 20.0], 3))


_PERF_ERROR = (InvalidArgumentError, "perf must be 2 integers")
_WHICH_ERROR = (GraphConnectionError, "field 'k' must name one of its 2 tensors")


@pytest.mark.parametrize("bad,error", [
    ({"perf": np.array([1, 2, 3])}, _PERF_ERROR),
    ({"perf": np.array([1, -2])}, _PERF_ERROR),
    ({"perf": np.array([1.5, 2.0])}, _PERF_ERROR),
    ({"each": np.array([0])}, _WHICH_ERROR),
    ({"each": np.array([0, 2])}, _WHICH_ERROR),
    ({"each": np.array([0, 1])}, (PoplarTypeError, "cannot be connected to tensor 'i' of type int")),
])
def test_bad_each_or_perf_raises_and_leaves_the_graph_as_it_was(bad, error):
    _, graph = _setup()
    x = graph.addVariable(poplar.FLOAT, [4], "x")
    ks = [graph.addConstant(poplar.FLOAT, [], 1.0, "k"), graph.addConstant(poplar.INT, [], 1, "i")]
    rows = Rows(np.array([1, 1]), np.array([0, 2]), np.array([2, 4]), np.array([0, 1]))
    lists = {"x": (x, rows), "out": (x, rows)}
    cs = graph.addComputeSet("cs")
    good = {"each": np.array([0, 0]), "perf": np.array([1, 2])}
    args = good | bad
    with pytest.raises(error[0], match=error[1]):
        graph.add_vertices(cs, "AddScalar", np.array([0, 1]), lists, each={"k": (ks, args["each"])},
                           perf=args["perf"])
    assert graph.getNumVertices() == 0
    graph.add_vertices(cs, "AddScalar", np.array([0, 1]), lists, each={"k": (ks, good["each"])},
                       perf=good["perf"])
    assert graph.getNumVertices() == 2


def test_empty_rows_connect_empty_runs():
    """A vertex whose row (of a list, or its vector) covers no elements is connected to nothing,
    as ``connect`` connects an empty tensor: it compiles and sums nothing."""
    device, graph = _setup()
    x = graph.addVariable(poplar.FLOAT, [6], "x")
    out = graph.addVariable(poplar.FLOAT, [4], "out")
    graph.setTileMapping(x, 0)
    graph.setTileMapping(out, 1)
    # vertex 0: rows [0:3], (empty), [3:6]; vertex 1: one empty row; vertex 2: no rows at all
    rows = Rows(np.array([3, 1, 0]), np.array([0, 3]), np.array([3, 6]), np.array([0, 2]))
    outs = Rows(np.array([1, 1, 1]), np.array([0, 3]), np.array([3, 4]), np.array([0, 1]))
    cs = graph.addComputeSet("sums")
    graph.add_vertices(cs, "RowSums", np.array([0, 1, 2]), {"rows": (x, rows), "out": (out, outs)},
                       state={"scale": 1.0})
    host = np.arange(6, dtype=np.float32) + 1
    writes = {"x": (x, host), "o": (out, np.full(4, 9, np.float32))}
    got = _run(device, graph, cs, {"out": out}, writes)["out"]
    np.testing.assert_array_equal(got, [6, 0, 15, 0])


def test_map_intervals_maps_like_per_tile_lists():
    _, graph = _setup(8)
    m = graph.addVariable(poplar.FLOAT, [4, 6], "m")
    view = m.transpose()
    graph.map_intervals(view, np.array([0, 4, 10, 2]), np.array([8, 10, 24, 6]), np.array([1, 2, 3, 5]))
    other = graph.addVariable(poplar.FLOAT, [4, 6], "other")
    graph.setTileMapping(other.transpose(), [[], [(0, 2)], [(6, 10)], [(10, 24)], [], [(2, 6)]])
    assert graph.getTileMapping(m) == graph.getTileMapping(other)  # later intervals win on overlap
    virtual = graph.createVirtualGraph(4, 8)
    v = virtual.addVariable(poplar.FLOAT, [10], "v")
    virtual.map_intervals(v, np.array([0, 5]), np.array([5, 10]), np.array([3, 0]))
    assert [[(iv.begin(), iv.end()) for iv in ivs] for ivs in graph.getTileMapping(v)][4:] == \
        [[(5, 10)], [], [], [(0, 5)]]


@pytest.mark.parametrize("begin,end,tile,message", [
    (3, 11, 0, r"tensor 'v': interval \[3, 11\) is outside its 10 elements"),
    (-1, 2, 0, r"interval \[-1, 2\)"),
    (5, 4, 0, r"interval \[5, 4\)"),
    (0, 2, 8, r"tensor 'v': tile 8 is out of range"),
])
def test_map_intervals_bad_input(begin, end, tile, message):
    _, graph = _setup(8)
    v = graph.addVariable(poplar.FLOAT, [10], "v")
    with pytest.raises(InvalidTileMappingError, match=message):
        graph.map_intervals(v, np.array([0, begin]), np.array([1, end]), np.array([0, tile]))
    per_tile = [[(0, 1)]] + [[] for _ in range(tile)]
    per_tile[tile].append((begin, end))
    with pytest.raises(InvalidTileMappingError, match=message):  # the list form goes the same way
        graph.setTileMapping(v, per_tile)
