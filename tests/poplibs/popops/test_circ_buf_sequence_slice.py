"""popops CircBuf and sequenceSlice against numpy."""

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import popops
from poplibs_py.poputil import PoplibsError


def test_circular_buffer_keeps_the_last_entries(harness):
    h = harness(4)
    buf = popops.CircBuf(h.graph, poplar.HALF, 3, [2, 3], "cb")
    assert buf.size() == 3 and buf.getIndex().shape() == [1] and buf.graph is h.graph
    xs = np.arange(4 * 6, dtype=np.float16).reshape(4, 2, 3)
    x = h.tensor(xs)
    for k in range(4):  # the fourth add overwrites the first entry
        buf.add(x[k], h.seq)
    newest, oldest = buf.prev(0, h.seq), buf.prev(2, h.seq)
    assert newest.shape() == [2, 3]
    got_new, got_old, index = h.run(newest, oldest, buf.getIndex())
    np.testing.assert_array_equal(got_new, xs[3])
    np.testing.assert_array_equal(got_old, xs[1])
    assert index.tolist() == [1]
    with pytest.raises(PoplibsError, match="i must be in"):
        buf.prev(3, h.seq)


def test_sequence_slice_copies_clipped_runs(harness):
    h = harness(4)
    src = np.arange(8 * 2 * 3, dtype=np.float32).reshape(8, 2, 3)
    dst0 = np.full((6, 6), -1, np.float32)
    t_in = h.tensor(src)
    outs = [h.tensor(dst0), h.tensor(dst0)]
    n = h.tensor(np.array([2, 3, 0, 4], np.uint32), mapping=0)
    src_off = h.tensor(np.array([1, 5, 0, 6], np.uint32), mapping=0)
    dst_off = h.tensor(np.array([0, 2, 5, 4], np.uint32), mapping=0)  # the last run is clipped to 2 rows
    popops.sequenceSlice(h.graph, t_in, outs[0], n, src_off, dst_off, False, h.seq)
    popops.sequenceSlice(h.graph, t_in, outs[1], n, src_off, dst_off, True, h.seq, "zeroed")
    got = h.run(*outs)
    flat = src.reshape(8, 6)
    for zero, g in zip((False, True), got):
        want = np.zeros_like(dst0) if zero else dst0.copy()
        for k, s, d in zip([2, 3, 0, 4], [1, 5, 0, 6], [0, 2, 5, 4]):
            k = min(k, 8 - s, 6 - d)
            want[d:d + k] = flat[s:s + k]
        np.testing.assert_array_equal(g, want)


def test_sequence_slice_arguments():
    model = poplar.IPUModel()
    model.tilesPerIPU = 2
    graph = poplar.Graph(model.createDevice())
    a = graph.addVariable(poplar.FLOAT, [4, 2], "a")
    n = graph.addVariable(poplar.UNSIGNED_INT, [2], "n")
    with pytest.raises(poplar.GraphConnectionError, match="tInOffset"):
        popops.sequenceSlice(graph, a, a, n, graph.addVariable(poplar.UNSIGNED_INT, [3], "o"), n, False,
                             prog.Sequence())
    with pytest.raises(poplar.GraphConnectionError, match="incompatible"):
        b = graph.addVariable(poplar.FLOAT, [4, 3], "b")
        popops.sequenceSlice(graph, a, b, n, n, n, False, prog.Sequence())
