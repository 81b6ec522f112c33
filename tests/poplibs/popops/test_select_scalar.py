"""popops selectScalarFromRows and updateScalarInRows against numpy, with PopLibs' masked
(MASKED_LABEL_CODE) and out-of-range index behaviour."""

import numpy as np
import pytest

from poplibs_py import popops
from poplibs_py.poputil import PoplibsError

M = popops.MASKED_LABEL_CODE


def ref_select(p, idx):
    out = np.empty(len(idx), p.dtype)
    for r, i in enumerate(idx):
        out[r] = 0 if i == M else (p[r, i] if i < p.shape[1] else np.nan)
    return out


def ref_update(p, idx):
    p = p.copy()
    for r, i in enumerate(idx):
        if i == M:
            continue
        if i < p.shape[1]:
            p[r, i] -= 1
        else:
            p[r] = np.nan
    return p


def spread(graph, t):
    """Rows split over tiles in pieces of 3 elements."""
    flat, tiles = t.flatten(), graph.getTarget().getNumTiles()
    for k, b in enumerate(range(0, t.numElements(), 3)):
        graph.setTileMapping(flat.slice(b, min(b + 3, t.numElements())), k % tiles)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_pytorch_style_3x3(harness, dtype):
    h = harness(4)
    p = np.arange(1, 10, dtype=dtype).reshape(3, 3)
    idx = np.array([0, 2, 2500], np.uint32)
    tp, ti = h.tensor(p), h.tensor(idx, mapping=3)
    sel = popops.selectScalarFromRows(h.graph, tp, ti, h.seq)
    popops.updateScalarInRows(h.graph, tp, ti, h.seq)
    got, updated = h.run(sel, tp)
    np.testing.assert_array_equal(got, [1, 6, np.nan])
    np.testing.assert_array_equal(updated, [[0, 2, 3], [4, 5, 5], [np.nan] * 3])


@pytest.mark.parametrize("mapping", ["linear", "spread"])
def test_random_rows(harness, mapping):
    rng = np.random.default_rng(5)
    h = harness(6)
    p = rng.standard_normal((40, 7)).astype(np.float32)
    idx = rng.integers(0, 7, 40).astype(np.uint32)
    idx[[3, 17]] = M
    idx[[5, 30]] = [7, 1000]
    tp = h.tensor(p, mapping=spread if mapping == "spread" else "linear")
    ti = h.tensor(idx)
    sel = popops.selectScalarFromRows(h.graph, tp, ti, h.seq)
    popops.updateScalarInRows(h.graph, tp, ti, h.seq)
    got, updated = h.run(sel, tp)
    np.testing.assert_array_equal(got, ref_select(p, idx))
    np.testing.assert_array_equal(updated, ref_update(p, idx))
    assert sum(1 for ivs in h.graph.getTileMapping(sel) if ivs) > 1


def test_bad_arguments(harness):
    h = harness(2)
    p = h.tensor(np.zeros((3, 4), np.float32), name="p")
    i = h.tensor(np.zeros(3, np.uint32), name="i")
    with pytest.raises(PoplibsError, match="params 'i' must be 2-D"):
        popops.selectScalarFromRows(h.graph, i, i, h.seq)
    with pytest.raises(PoplibsError, match="indices 'p' must be UNSIGNED_INT"):
        popops.selectScalarFromRows(h.graph, p, p, h.seq)
    with pytest.raises(PoplibsError, match=r"indices 'j' must have shape \[3\]"):
        popops.updateScalarInRows(h.graph, p, h.tensor(np.zeros(4, np.uint32), name="j"), h.seq)
    with pytest.raises(PoplibsError, match="params 'q' must be FLOAT or HALF"):
        popops.updateScalarInRows(h.graph, h.tensor(np.zeros((3, 4), np.int32), name="q"), i, h.seq)
    with pytest.raises(PoplibsError, match="cannot be written in parallel"):
        popops.updateScalarInRows(h.graph, p.broadcast(2, 1), i, h.seq)
