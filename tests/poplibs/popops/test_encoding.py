"""popops iota and encodeOneHot (PopLibs' EncodingTest cases and numpy references)."""

import numpy as np
import pytest
from support import spread

import poplar_py as poplar
from poplibs_py import popops
from poplibs_py.poputil import PoplibsError


@pytest.mark.parametrize(("dtype", "n", "start"), [(np.uint32, 7, 0), (np.uint32, 40, 5), (np.int32, 8, -3),
                                                   (np.int32, 301, 1000)])
def test_iota(harness, dtype, n, start):
    h = harness(4)
    t = h.graph.addVariable(poplar.types.asType(dtype), [n], "t")
    spread(h.graph, t)
    popops.iota(h.graph, t, start, h.seq)
    (got,) = h.run(t)
    np.testing.assert_array_equal(got, np.arange(start, start + n, dtype=dtype))


def ref_one_hot(idx, cols, dtype, on=1, off=0):
    out = np.full((len(idx), cols), off, dtype=dtype)
    for i, j in enumerate(idx.astype(np.int64)):
        if 0 <= j < cols:
            out[i, j] = on
    return out


@pytest.mark.parametrize("out_type", [np.float32, np.float16, np.int32, np.uint32])
@pytest.mark.parametrize("index_type", [np.uint32, np.int32])
def test_encode_one_hot(harness, out_type, index_type):
    cols = 7
    idx = np.array([0, 6, 3, popops.MASKED_LABEL_CODE, 3, 9, 1, 6, 2, 5, 4], np.uint32).astype(index_type)
    if index_type == np.int32:
        idx[2] = -2
    h = harness(5)
    indices = h.tensor(idx, mapping=2)
    encoded = h.graph.addVariable(poplar.types.asType(out_type), [len(idx), cols], "encoded")
    spread(h.graph, encoded)
    popops.encodeOneHot(h.graph, indices, encoded, h.seq)
    (got,) = h.run(encoded)
    np.testing.assert_array_equal(got, ref_one_hot(idx, cols, out_type))


def test_encode_one_hot_custom_values(harness):
    idx = np.array([2, 0, popops.MASKED_LABEL_CODE, 1], dtype=np.uint32)
    h = harness(3)
    indices = h.tensor(idx)
    encoded = h.graph.addVariable(poplar.FLOAT, [4, 3], "encoded")
    h.graph.setTileMapping(encoded, 1)
    on = h.tensor(np.array(2.5, np.float32))
    off = h.tensor(np.array(-1.0, np.float32))
    popops.encodeOneHot(h.graph, indices, encoded, h.seq, on, off, "oneHot")
    (got,) = h.run(encoded)
    np.testing.assert_array_equal(got, ref_one_hot(idx, 3, np.float32, 2.5, -1.0))


def test_misuse_raises(harness):
    h = harness(2)
    g = h.graph
    indices = h.tensor(np.zeros(4, np.uint32))
    encoded = h.tensor(np.zeros((4, 3), np.float32))
    with pytest.raises(PoplibsError, match="shape"):
        popops.encodeOneHot(g, indices, h.tensor(np.zeros((3, 3), np.float32)), h.seq)
    with pytest.raises(PoplibsError, match="shape"):
        popops.encodeOneHot(g, indices, h.tensor(np.zeros(12, np.float32)), h.seq)
    with pytest.raises(PoplibsError, match="UNSIGNED_INT or INT"):
        popops.encodeOneHot(g, h.tensor(np.zeros(4, np.float32)), encoded, h.seq)
    with pytest.raises(PoplibsError, match="parallel"):
        popops.encodeOneHot(g, indices, encoded[0:1].broadcast(4, 0), h.seq)
    with pytest.raises(PoplibsError, match="'on'"):
        popops.encodeOneHot(g, indices, encoded, h.seq, h.tensor(np.zeros(1, np.int32)), None)
    with pytest.raises(PoplibsError, match="INT or UNSIGNED_INT"):
        popops.iota(g, h.tensor(np.zeros(3, np.float32)), 0, h.seq)
    with pytest.raises(PoplibsError, match="1-D"):
        popops.iota(g, h.tensor(np.zeros((2, 2), np.int32)), 0, h.seq)
    with pytest.raises(PoplibsError, match="negative"):
        popops.iota(g, h.tensor(np.zeros(3, np.uint32)), -1, h.seq)
    with pytest.raises(PoplibsError, match="parallel"):
        popops.iota(g, h.tensor(np.zeros(1, np.int32)).broadcast(3, 0), 0, h.seq)
