"""Virtual graphs: views of some tiles, with relative tile ids, sharing the top-level graph."""

from __future__ import annotations

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.errors import InvalidArgumentError, InvalidTileMappingError
from poplibs_py import poplin, popops


@pytest.fixture
def device():
    m = poplar.IPUModel()
    m.numIPUs, m.tilesPerIPU = 4, 8
    return m.createDevice()


def _used(graph: poplar.Graph, t: poplar.Tensor) -> list[int]:
    return [tile for tile, intervals in enumerate(graph.getTileMapping(t)) if intervals]


def test_the_three_forms_and_their_targets(device):
    g = poplar.Graph(device)
    first = g.createVirtualGraph(2)  # the first 2 tiles of each of the 4 IPUs
    assert (first.getTarget().getNumIPUs(), first.getTarget().getTilesPerIPU()) == (4, 2)
    ipu2 = g.createVirtualGraph(16, 24)
    assert (ipu2.getTarget().getNumIPUs(), ipu2.getTarget().getNumTiles()) == (1, 8)
    some = g.createVirtualGraph([5, 3, 30])
    assert some.getTarget().getNumTiles() == 3
    for v in (first, ipu2, some):
        assert v.getTopLevelGraph() is g
    nested = ipu2.createVirtualGraph([1, 2])  # relative to ipu2: tiles 17 and 18
    t = nested.addVariable(poplar.FLOAT, [4], poplar.VariableMappingMethod.LINEAR, "t")
    assert _used(g, t) == [17, 18]
    assert _used(nested, t) == [0, 1]
    x = first.addVariable(poplar.FLOAT, [8], poplar.VariableMappingMethod.LINEAR, "x")
    assert _used(g, x) == [0, 1, 8, 9, 16, 17, 24, 25]
    y = some.addVariable(poplar.FLOAT, [3], "y")
    some.setTileMapping(y, [[(0, 1)], [(1, 2)], [(2, 3)]])
    assert _used(g, y) == [3, 5, 30]


def test_tiles_outside_a_virtual_graph_are_errors(device):
    g = poplar.Graph(device)
    ipu1 = g.createVirtualGraph(8, 16)
    t = ipu1.addVariable(poplar.FLOAT, [4], "t")
    with pytest.raises(InvalidTileMappingError, match="tile 8 is out of range"):
        ipu1.setTileMapping(t, 8)
    u = g.addVariable(poplar.FLOAT, [4], "u")
    g.setTileMapping(u, 0)
    with pytest.raises(InvalidTileMappingError, match=r"'u'.*virtual graph"):
        ipu1.getTileMapping(u)
    with pytest.raises(InvalidArgumentError, match="distinct"):
        g.createVirtualGraph([1, 1])
    with pytest.raises(InvalidTileMappingError):
        g.createVirtualGraph(30, 40)
    with pytest.raises(InvalidArgumentError, match="tiles per IPU"):
        g.createVirtualGraph(9)


def test_poplibs_run_on_a_virtual_graph(device):
    g = poplar.Graph(device)
    popops.addCodelets(g)
    poplin.addCodelets(g)
    ipu3 = g.createVirtualGraph(16, 24)
    seq = prog.Sequence()
    a = poplin.createMatMulInputLHS(ipu3, poplar.FLOAT, [12, 10], [10, 6], "a")
    b = poplin.createMatMulInputRHS(ipu3, poplar.FLOAT, [12, 10], [10, 6], "b")
    c = poplin.matMul(ipu3, a, b, seq, "c")
    d = popops.add(ipu3, c, c, seq, "d")
    for t in (a, b, c, d):
        assert set(_used(g, t)) <= set(range(16, 24))
    g.createHostWrite("a", a)
    g.createHostWrite("b", b)
    g.createHostRead("d", d)
    engine = poplar.Engine(g, seq)
    engine.load(device)
    rng = np.random.default_rng(0)
    ha, hb = rng.standard_normal((12, 10)).astype(np.float32), rng.standard_normal((10, 6)).astype(np.float32)
    engine.writeTensor("a", ha)
    engine.writeTensor("b", hb)
    engine.run()
    np.testing.assert_allclose(engine.readTensor("d"), 2 * (ha @ hb), rtol=1e-5, atol=1e-5)


def test_a_virtual_graph_shares_everything_with_its_parent(device):
    g = poplar.Graph(device)
    v = g.createVirtualGraph(8, 16)
    popops.addCodelets(v)
    assert g.hasCodelet("popops::Fill<float>")
    cs = v.addComputeSet("cs")
    t = g.addVariable(poplar.FLOAT, [4], "t")
    v.setTileMapping(t, 0)
    assert _used(g, t) == [8]
    vertex = g.addVertex(cs, "popops::Fill<float>", {"out": t})
    v.setTileMapping(vertex, 1)
    g.setInitialValue(vertex["value"], 2.5)
    g.createHostRead("t", t)
    engine = poplar.Engine(v, prog.Execute(cs))  # an engine of a virtual graph compiles the whole graph
    engine.load(device)
    engine.run()
    np.testing.assert_array_equal(engine.readTensor("t"), np.full(4, 2.5, np.float32))
