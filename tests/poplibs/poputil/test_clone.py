"""poputil duplicate, cloneToGraph, cloneToIpu and copyToIpu: values copied on the device and
tile mappings kept (relative to a virtual graph, or per tile of another IPU)."""

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import popops, poputil
from poplibs_py.poputil import PoplibsError


def tiles_of(graph, t):
    return [[(iv.begin(), iv.end()) for iv in ivs] for ivs in graph.getTileMapping(t)]


def _device(ipus, tiles):
    model = poplar.IPUModel()
    model.numIPUs, model.tilesPerIPU = ipus, tiles
    device = model.createDevice()
    graph = poplar.Graph(device)
    popops.addCodelets(graph)
    return device, graph


def _run(device, graph, seq, writes, reads, mode):
    for name, t in reads.items():
        graph.createHostRead(name, t)
    for name, (t, _) in writes.items():
        graph.createHostWrite(name, t)
    engine = poplar.Engine(graph, seq, {"codelets.mode": mode})
    engine.load(device)
    for name, (_, a) in writes.items():
        engine.writeTensor(name, a)
    engine.run()
    return {name: engine.readTensor(name) for name in reads}


def test_duplicate_keeps_mapping_and_copies(harness):
    h = harness(4)
    a = np.arange(40, dtype=np.float32).reshape(5, 8)
    t = h.tensor(a, name="t")
    d = poputil.duplicate(h.graph, t, h.seq, "dup")
    zeros = h.graph.addConstant(poplar.FLOAT, [5, 8], 0.0, "z")
    h.graph.setTileMapping(zeros, 0)
    h.seq.add(prog.Copy(zeros, t))  # the clone is a separate variable
    assert tiles_of(h.graph, d) == tiles_of(h.graph, t)
    dup, orig = h.run(d, t)
    np.testing.assert_array_equal(dup, a)
    np.testing.assert_array_equal(orig, 0)
    assert d.name == "dup"


def test_duplicate_of_an_aliasing_view(harness):
    h = harness(2)
    t = h.tensor(np.array([1, 2, 3], np.int32))
    view = poplar.concat([t, t.slice(0, 2)])
    d = poputil.duplicate(h.graph, view, h.seq)
    assert not d.containsAliases() and d.shape() == [5]
    (got,) = h.run(d)
    np.testing.assert_array_equal(got, [1, 2, 3, 1, 2])


def test_clone_to_virtual_graph_keeps_relative_tiles(mode):
    device, graph = _device(1, 16)
    src = graph.createVirtualGraph(4, 8)
    dst = graph.createVirtualGraph(10, 16)
    t = src.addVariable(poplar.FLOAT, [6, 5], "t")
    src.setTileMapping(t.slice(0, 2), 3)
    src.setTileMapping(t.slice(2, 6), 1)
    c = poputil.cloneToGraph(src, dst, t, "c")
    assert tiles_of(dst, c) == tiles_of(src, t)[:4] + [[], []]
    assert [bool(ivs) for ivs in graph.getTileMapping(c)] == [k in (11, 13) for k in range(16)]
    seq = prog.Sequence([prog.Copy(t, c)])
    a = np.arange(30, dtype=np.float32).reshape(6, 5)
    out = _run(device, graph, seq, {"t": (t, a)}, {"c": c}, mode)
    np.testing.assert_array_equal(out["c"], a)


def test_clone_to_graph_errors():
    _, graph = _device(1, 16)
    small = graph.createVirtualGraph(0, 2)
    t = graph.addVariable(poplar.FLOAT, [4], "big")
    graph.setTileMapping(t, 9)
    with pytest.raises(PoplibsError, match=r"tensor 'big' uses tile 9 .* only 2 tiles"):
        poputil.cloneToGraph(graph, small, t)
    u = graph.addVariable(poplar.FLOAT, [4], "unmapped")
    with pytest.raises(PoplibsError, match="'unmapped' must be completely mapped"):
        poputil.cloneToGraph(graph, small, u)
    _, other = _device(1, 16)
    with pytest.raises(PoplibsError, match="top-level graph"):
        poputil.cloneToGraph(graph, other, t)


def test_clone_and_copy_to_ipu(mode):
    device, graph = _device(3, 8)
    t = graph.addVariable(poplar.FLOAT, [10, 3], "t")
    graph.setTileMapping(t.slice(0, 4), 2)        # IPU 0, tile 2
    graph.setTileMapping(t.slice(4, 7), 8 + 5)    # IPU 1, tile 5
    graph.setTileMapping(t.slice(7, 10), 16 + 2)  # IPU 2, tile 2
    seq = prog.Sequence()
    c = poputil.copyToIpu(graph, t, seq, 1, "onIpu1")
    mapping = graph.getTileMapping(c)
    assert [tile for tile, ivs in enumerate(mapping) if ivs] == [8 + 2, 8 + 5]
    assert [(iv.begin(), iv.end()) for iv in mapping[8 + 2]] == [(0, 12), (21, 30)]
    c0 = poputil.cloneToIpu(graph, t, 0)
    assert [tile for tile, ivs in enumerate(graph.getTileMapping(c0)) if ivs] == [2, 5]
    a = np.random.default_rng(0).standard_normal((10, 3)).astype(np.float32)
    out = _run(device, graph, seq, {"t": (t, a)}, {"c": c}, mode)
    np.testing.assert_array_equal(out["c"], a)


def test_clone_to_ipu_errors():
    _, graph = _device(2, 4)
    t = graph.addVariable(poplar.FLOAT, [4], "x")
    graph.setTileMapping(t, 1)
    with pytest.raises(PoplibsError, match="dstIPU 2 for tensor 'x'"):
        poputil.cloneToIpu(graph, t, 2)
    with pytest.raises(PoplibsError, match="must be a tensor"):
        poputil.copyToIpu(graph, "x", prog.Sequence(), 1)
    with pytest.raises(PoplibsError, match="prog must be a program Sequence"):
        poputil.duplicate(graph, t, None)


def test_create_ipu_copy_leaves_the_copy_to_the_caller(mode):
    device, graph = _device(2, 4)
    t = graph.addVariable(poplar.INT, [4, 6], "t")
    poputil.mapTensorLinearly(graph, t, 6, 1)            # rows on tiles 0-3 of IPU 0
    view = t.transpose()                                  # a block layout: the clone keeps its order
    clone, src, dst = poputil.createIpuCopy(graph, view, 1, "moved")
    assert clone.name == "moved" and clone.shape() == [6, 4]
    assert [tile for tile, ivs in enumerate(graph.getTileMapping(clone)) if ivs] == [4, 5, 6, 7]
    assert src == view and dst == clone and not clone.intersectsWith(t)
    seq = prog.Sequence([prog.Copy(src, dst)])
    a = np.arange(24, dtype=np.int32).reshape(4, 6)
    out = _run(device, graph, seq, {"t": (t, a)}, {"c": clone}, mode)
    np.testing.assert_array_equal(out["c"], a.T)


def test_clone_and_expand_aliasing(mode):
    device, graph = _device(1, 8)
    t = graph.addVariable(poplar.FLOAT, [4, 32], "t")
    poputil.mapTensorLinearly(graph, t, 32, 32)          # row r on tile r
    plain, offset = poputil.cloneAndExpandAliasing(graph, t, 5)
    assert offset == 5 and graph.getTileMapping(plain) == graph.getTileMapping(t)
    aliased = poplar.concat([t[0], t[1], t[0], t[0].broadcast(1, 0)])   # row 0 three times
    c, offset = poputil.cloneAndExpandAliasing(graph, aliased, 6, "expanded")
    assert c.shape() == [128] and not c.containsAliases() and c.name == "expanded"
    by_position = np.empty(128, int)
    for tile, ivs in enumerate(graph.getTileMapping(c)):
        for iv in ivs:
            by_position[iv.begin():iv.end()] = tile
    assert (by_position[:32] == 0).all() and (by_position[32:64] == 1).all()
    # the 64 aliased elements (two more copies of row 0) go linearly from tile 6: 32 floats a tile
    assert (by_position[64:96] == 6).all() and (by_position[96:] == 7).all() and offset == 0
    seq = prog.Sequence([prog.Copy(aliased, c)])
    a = np.arange(128, dtype=np.float32).reshape(4, 32)
    out = _run(device, graph, seq, {"t": (t, a)}, {"c": c}, mode)
    np.testing.assert_array_equal(out["c"], np.concatenate([a[0], a[1], a[0], a[0]]))
    with pytest.raises(PoplibsError, match="offset must be"):
        poputil.cloneAndExpandAliasing(graph, t, -1)
