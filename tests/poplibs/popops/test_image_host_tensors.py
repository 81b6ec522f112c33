"""popops normaliseImage against numpy, and the layouts of host-transferable tensors."""

import numpy as np
import pytest

import poplar_py as poplar
from poplibs_py import popops
from poplibs_py.popops import _common
from poplibs_py.poputil import PoplibsError


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_normalise_image(harness, dtype):
    h = harness(4)
    type_ = poplar.UNSIGNED_CHAR if dtype == np.uint8 else poplar.FLOAT
    out_np = np.float16 if dtype == np.uint8 else np.float32
    img = np.random.default_rng(3).integers(0, 255, (2, 5, 3)).astype(dtype)
    t = h.write(popops.createNormaliseImageInput(h.graph, type_, [2, 5, 3], "img"), img)
    assert all(iv.size() % 3 == 0 for ivs in h.graph.getTileMapping(t) for iv in ivs)
    offsets = h.tensor(np.array([0.5, 0.25, 0.0], out_np), mapping=0)
    scales = h.tensor(np.array([2.0, 1.0, 0.5], out_np), mapping=0)
    out = popops.normaliseImage(h.graph, h.seq, t, 1 / 255, offsets, scales, "norm")
    assert out.shape() == [2, 5, 4]
    assert out.elementType() == (poplar.HALF if dtype == np.uint8 else poplar.FLOAT)
    (got,) = h.run(out)
    x = img.astype(out_np)
    want = np.zeros((2, 5, 4), out_np)
    offs, scl = np.array([0.5, 0.25, 0.0], out_np), np.array([2.0, 1.0, 0.5], out_np)
    want[..., :3] = (x * out_np(1 / 255) - offs) * scl
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)


def test_host_sliceable_tensors_are_spread_in_packets():
    model = poplar.IPUModel()
    model.tilesPerIPU = 4
    graph = poplar.Graph(model.createDevice())
    res = popops.createHostSliceableTensor(graph, poplar.FLOAT, [3, 600], True, "h")
    assert res.tensor.shape() == [3, 600] and res.indices.shape() == [3]
    tiles = _common.element_tiles(graph, res.tensor).reshape(3, 600)
    # 256 floats a packet: packets of 256, 256 and 88 a row, 9 over 4 tiles: 2 each, the extra to tile 0
    assert np.bincount(tiles.ravel(), minlength=4).tolist() == [600, 512, 344, 344]
    assert _common.element_tiles(graph, res.indices).tolist() == [int(tiles[r, 0]) for r in range(3)]
    t = popops.createHostTransferableTensor(graph, poplar.HALF, [4, 300], False, 2048, "x")
    assert t.shape() == [4, 300]
    assert sum(1 for ivs in graph.getTileMapping(t) if ivs) == 3  # 1200 halves: 3 packets
    with pytest.raises(PoplibsError, match="rank 2"):
        popops.createHostSliceableTensor(graph, poplar.FLOAT, [3], True)
