"""popops histogram: counts between levels, as numpy's searchsorted gives them."""

import numpy as np
import pytest

import poplar_py as poplar
from poplibs_py import popops
from poplibs_py.poputil import PoplibsError


def _counts(x, levels):
    return np.bincount(np.searchsorted(levels, x, side="right"), minlength=len(levels) + 1)


def _data():
    x = np.random.default_rng(7).standard_normal((5, 23)).astype(np.float32)
    x[0, :3] = [-0.5, 0.0, 0.5]  # on the levels: counted above them
    return x, np.array([-0.5, 0.0, 0.5, 1.5], np.float32)


def test_histogram_counts_and_accumulates(harness):
    h = harness(4)
    x, levels = _data()
    xt, lt = h.tensor(x), h.tensor(levels, mapping=0)
    counts = popops.histogram(h.graph, xt, lt, False, h.seq, "hist")
    absolute = popops.histogram(h.graph, xt, lt, True, h.seq)
    acc = h.tensor(np.arange(5, dtype=np.uint32), mapping=1)
    popops.histogram(h.graph, xt, acc, True, lt, False, h.seq, "acc")
    assert counts.elementType() == poplar.UNSIGNED_INT
    got = h.run(counts, absolute, acc)
    want = _counts(x.ravel(), levels)
    np.testing.assert_array_equal(got[0], want)
    np.testing.assert_array_equal(got[1], _counts(np.abs(x).ravel(), levels))
    np.testing.assert_array_equal(got[2], want + np.arange(5))


@pytest.mark.parametrize("mode", ["interpreter"])  # the codelets run natively above: compile no more
def test_histogram_float_arithmetic(harness):
    h = harness(4)
    x, levels = _data()
    xt, lt = h.tensor(x), h.tensor(levels, mapping=0)
    acc = h.tensor(np.arange(5, dtype=np.uint32), mapping=1)
    popops.histogram(h.graph, xt, acc, True, lt, False, h.seq, "acc",
                     {"useFloatArithmeticWithUnsignedIntOutput": "true"})
    floats = popops.histogram(h.graph, xt, lt, False, h.seq, options={"useFloatArithmetic": "true"})
    assert floats.elementType() == poplar.FLOAT
    got = h.run(acc, floats)
    want = _counts(x.ravel(), levels)
    np.testing.assert_array_equal(got[0], want + np.arange(5))
    np.testing.assert_array_equal(got[1], want.astype(np.float32))


def test_histogram_arguments():
    model = poplar.IPUModel()
    model.tilesPerIPU = 2
    graph = poplar.Graph(model.createDevice())
    popops.addCodelets(graph)
    x = graph.addVariable(poplar.FLOAT, [4], "x")
    graph.setTileMapping(x, 0)
    seq = poplar.program.Sequence()
    with pytest.raises(PoplibsError, match="levels"):
        popops.histogram(graph, x, graph.addVariable(poplar.HALF, [2], "l"), False, seq)
    levels = graph.addVariable(poplar.FLOAT, [2], "levels")
    with pytest.raises(poplar.InvalidOptionError, match="cannot both"):
        popops.histogram(graph, x, levels, False, seq, "h",
                         {"useFloatArithmetic": "true", "useFloatArithmeticWithUnsignedIntOutput": "true"})
    with pytest.raises(PoplibsError, match="output tensor 'o'"):
        out = graph.addVariable(poplar.UNSIGNED_INT, [2], "o")
        popops.histogram(graph, x, out, False, levels, False, seq)
