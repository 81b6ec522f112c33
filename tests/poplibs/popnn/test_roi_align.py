"""popnn.experimental ROIAlign forward and input gradient against a numpy reference."""

import numpy as np
import pytest

import poplar_py as poplar
from poplibs_py import popnn
from poplibs_py.popnn import experimental
from poplibs_py.poputil import PoplibsError

N, C, H, W, PH, PW, GRID, SCALE = 2, 2, 5, 6, 2, 3, 2, 0.5


def _samples(roi, aligned):
    """For every bin, the (row, column, weight) corners of its samples, weights / samples."""
    half = 0.5 if aligned else 0.0
    x0, y0, x1, y1 = (v * SCALE - half for v in roi)
    least = 0.0 if aligned else 1.0
    bh, bw = max(y1 - y0, least) / PH, max(x1 - x0, least) / PW
    bins = {}
    for ph in range(PH):
        for pw in range(PW):
            corners = []
            for iy in range(GRID):
                y = y0 + (ph + (iy + 0.5) / GRID) * bh
                for ix in range(GRID):
                    x = x0 + (pw + (ix + 0.5) / GRID) * bw
                    if y > H or x > W:
                        continue
                    yc, xc = min(max(y, 0), H - 1), min(max(x, 0), W - 1)
                    yl, xl = int(yc), int(xc)
                    yh, xh = min(yl + 1, H - 1), min(xl + 1, W - 1)
                    ly, lx = yc - yl, xc - xl
                    corners += [(yl, xl, (1 - ly) * (1 - lx)), (yl, xh, (1 - ly) * lx),
                                (yh, xl, ly * (1 - lx)), (yh, xh, ly * lx)]
            bins[ph, pw] = [(r, c, wgt / GRID ** 2) for r, c, wgt in corners]
    return bins


@pytest.mark.parametrize("aligned", [False, True])
def test_roi_align_forward_and_gradient_match_numpy(harness, aligned):
    h = harness(4)
    popnn.addCodelets(h.graph)
    rng = np.random.default_rng(0)
    data = rng.normal(size=[N, C, H, W]).astype(np.float32)
    rois = np.array([[0, 0, 8, 6], [2.5, 1, 11, 9.5], [4, 3, 4.5, 3.2]], np.float32)
    index = np.array([1, 0, 1], np.int32)
    top = rng.normal(size=[3, C, PH, PW]).astype(np.float32)
    td, tr, ti, tt = h.tensor(data), h.tensor(rois), h.tensor(index), h.tensor(top)
    params = experimental.roiAlignParams(GRID, PH, PW, aligned, SCALE)
    out = experimental.roiAlignFwd(h.graph, h.seq, td, tr, ti, params)
    grads = experimental.roiAlignInputGradient(h.graph, h.seq, td, tr, ti, tt, params)
    got_out, got_grads = h.run(out, grads)
    want_out, want_grads = np.zeros([3, C, PH, PW]), np.zeros(data.shape)
    for r, roi in enumerate(rois):
        for (ph, pw), corners in _samples(roi, aligned).items():
            for y, x, wgt in corners:
                want_out[r, :, ph, pw] += wgt * data[index[r], :, y, x]
                want_grads[index[r], :, y, x] += wgt * top[r, :, ph, pw]
    np.testing.assert_allclose(got_out, want_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_grads, want_grads, rtol=1e-5, atol=1e-6)


def test_roi_align_bad_arguments(harness):
    h = harness(4)
    data = h.graph.addVariable(poplar.FLOAT, [N, C, H, W], "data")
    rois = h.graph.addVariable(poplar.FLOAT, [3, 5], "rois")
    index = h.graph.addVariable(poplar.INT, [3], "index")
    with pytest.raises(PoplibsError, match=r"bottomRois must be \[numRois, 4\]"):
        experimental.roiAlignFwd(h.graph, h.seq, data, rois, index,
                                 experimental.roiAlignParams(1, 2, 2, False, 1.0))
    with pytest.raises(PoplibsError, match="samplingRatio must be greater than 0"):
        experimental.roiAlignFwd(h.graph, h.seq, data, rois[:, :4], index,
                                 experimental.roiAlignParams(0, 2, 2, False, 1.0))
