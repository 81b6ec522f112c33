"""gcl.getMinIoTiles and gcl.perIPUTiles: I/O and compute tiles, as the overlapped-I/O programs split them."""

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import gcl, popops
from poplibs_py.poputil import PoplibsArgumentError


def _device(tiles: int = 1472, ipus: int = 1) -> poplar.Device:
    model = poplar.IPUModel()
    model.tilesPerIPU, model.numIPUs = tiles, ipus
    return model.createDevice()


def _graph(tiles: int = 1472, ipus: int = 1) -> poplar.Graph:
    return poplar.Graph(_device(tiles, ipus))


def test_io_and_compute_tiles_split_an_ipu():
    g = _graph()
    n = gcl.getMinIoTiles(g)
    assert n == 32
    io = gcl.perIPUTiles(g, 0, n)
    compute = gcl.perIPUTiles(g, n, 1472 - n)
    assert io == sorted(io) and compute == sorted(compute)
    assert sorted(io + compute) == list(range(1472))
    # whole pairs, one from each exchange block span of 92 tiles
    assert all(t % 2 == 0 and t + 1 in io for t in io[::2])
    assert sorted({t // 92 for t in io}) == list(range(16))


def test_a_prefix_of_the_order_spreads_over_the_spans():
    g = _graph()
    order = gcl.perIPUTiles(g, 0, 1472, sorted=False)
    assert order[:4] == [0, 1, 92, 93]
    assert len(set(order)) == 1472
    single = gcl.perIPUTiles(g, 0, 16, sorted=False, tilePairs=False)
    assert single == [92 * k for k in range(16)]
    assert gcl.perIPUTiles(g, 16, 16, sorted=False, tilePairs=False) == [92 * k + 1 for k in range(16)]


def test_small_ipu_model_and_several_ipus():
    g = _graph(tiles=16, ipus=2)
    assert gcl.getMinIoTiles(g) == 8
    io = gcl.perIPUTiles(g, 0, 8)
    assert io == [0, 1, 4, 5, 8, 9, 12, 13]
    assert gcl.perIPUTiles(g, 8, 8) == [2, 3, 6, 7, 10, 11, 14, 15]


def test_virtual_graphs_from_the_tiles_run_a_program():
    g = _graph(tiles=64)
    popops.addCodelets(g)
    n = gcl.getMinIoTiles(g)
    io_graph = g.createVirtualGraph(gcl.perIPUTiles(g, 0, n))
    compute_graph = g.createVirtualGraph(gcl.perIPUTiles(g, n, 64 - n))
    buffer = io_graph.addVariable(poplar.FLOAT, [n * 4], "inbox")
    io_graph.setTileMapping(buffer, 0)
    x = compute_graph.addVariable(poplar.FLOAT, [n * 4], "x")
    compute_graph.setTileMapping(x, 0)
    seq = prog.Sequence([prog.Copy(g.addHostToDeviceFIFO("in", poplar.FLOAT, n * 4), buffer),
                         prog.Copy(buffer, x)])
    popops.mulInPlace(compute_graph, x, 2.0, seq)
    g.createHostRead("x", x)
    e = poplar.Engine(g, seq)
    e.load(_device(tiles=64))
    data = np.arange(n * 4, dtype=np.float32)
    e.connectStream("in", data)
    e.run()
    np.testing.assert_array_equal(e.readTensor("x"), 2 * data)
    assert g.getTileMapping(buffer)[gcl.perIPUTiles(g, 0, n)[0]]
    assert not g.getTileMapping(x)[gcl.perIPUTiles(g, 0, n)[0]]


@pytest.mark.parametrize("call, match", [
    (lambda g: gcl.perIPUTiles(g, -1, 4), "offset must be a non-negative integer"),
    (lambda g: gcl.perIPUTiles(g, 0, 2.5), "count must be a non-negative integer"),
    (lambda g: gcl.perIPUTiles(g, 10, 10), "offset 10 \\+ count 10 is more than the 16 tiles"),
    (lambda g: gcl.perIPUTiles(g, 0, 2, sorted="yes"), "sorted must be a bool"),
    (lambda g: gcl.perIPUTiles(g, 0, 2, True, 1), "tilePairs must be a bool"),
    (lambda g: gcl.getMinIoTiles(g.getTarget()), "graph must be a poplar.Graph"),
])
def test_bad_arguments(call, match):
    with pytest.raises(PoplibsArgumentError, match=match):
        call(_graph(tiles=16))
