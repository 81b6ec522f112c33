"""popnn's Pooling, SumPoolingGrad, MaxPoolingGrad, ROIAlignForward, ROIAlignBackward,
ReduceArgRows and CalcAccuracy vertices, each alone on a tile, against numpy
(codelets/popnn/pooling.py, roi_align.py, loss.py)."""

import numpy as np
import pytest

import poplar_py as poplar
from poplibs_py.poputil import templateVertex

F, H = poplar.FLOAT, poplar.HALF
OUT = 0xFFFFFFFF  # MASKED_LABEL_CODE

# geom = [H, W, kH, kW, strideH, strideW, lowerH, lowerW, outH, outW]: padding above (lowerH 1),
# truncation on the left (lowerW -1) and a last column of windows wholly in the padding; and a
# plain 2x2 pooling with stride 2
GEOMS = [[5, 4, 3, 2, 2, 1, 1, -1, 3, 4], [4, 4, 2, 2, 2, 2, 0, 0, 2, 2]]
OPS = {0: "max", 1: "avg", 2: "sum"}


def span(first: int, size: int, end: int) -> slice:
    """``[first, first + size)`` cut to ``[0, end)`` (empty when outside)."""
    lo = max(first, 0)
    return slice(lo, max(min(first + size, end), lo))


def rows(x, t: poplar.Type = F) -> list:
    """An array's rows (after its first axis, flattened) as a VectorList field's entries."""
    x = np.asarray(x)
    return list(x.reshape(len(x), -1).astype(t.dtype))


def windows(geom):
    """``(oy, ox, rows, columns)`` of each output position: the slices of the plane its window
    covers, padding left out (possibly empty)."""
    h, w, kh, kw, sh, sw, lh, lw, oh, ow = geom
    for oy in range(oh):
        for ox in range(ow):
            y0, x0 = oy * sh - lh, ox * sw - lw
            yield oy, ox, span(y0, kh, h), span(x0, kw, w)


def planes_for(geom, rng, count=2):
    """Small integers: ties within windows."""
    return rng.integers(-3, 4, (count, geom[0], geom[1])).astype(np.float64)


def test_pooling_forward_and_gradients(vertices):
    """Max, average (over the non-padding positions) and sum; a window of padding only gives 0.
    Gradients: a window's gradient spread over its positions (divided between them when
    scaled), for max only to the positions equal to the pooled value."""
    h, rng = vertices("popnn"), np.random.default_rng(9)
    cases = h.cases
    for gi, geom in enumerate(GEOMS):
        planes, oh, ow = planes_for(geom, rng), geom[8], geom[9]
        pooled = {}
        for op, name in OPS.items():
            want = np.zeros((2, oh, ow))
            for p in range(2):
                for oy, ox, ys, xs in windows(geom):
                    win = planes[p, ys, xs]
                    if win.size:
                        want[p, oy, ox] = {"max": win.max, "avg": win.mean, "sum": win.sum}[name]()
            pooled[name] = want
            for t in (F, H) if op == 0 else (F,):
                v = h.vertex(templateVertex("popnn::Pooling", t), tile=gi, inp=rows(planes, t),
                             out=rows(np.full((2, oh * ow), 9), t),
                             initial={"geom": np.array(geom, np.int32), "op": op})
                cases[f"Pooling<{t}> {name} geom {gi}"] = (v["out"], rows(want, poplar.FLOAT), 1e-6)
        grad = rng.integers(-4, 5, (2, oh, ow)).astype(np.float64)
        for scaled in (False, True):
            for kind in ("Sum", "Max"):
                want = np.zeros_like(planes)
                for p in range(2):
                    for oy, ox, ys, xs in windows(geom):
                        win = planes[p, ys, xs]
                        share = win == pooled["max"][p, oy, ox] if kind == "Max" else np.full(win.shape, True)
                        if share.any():
                            want[p, ys, xs] += share * grad[p, oy, ox] / (share.sum() if scaled else 1)
                fields = {"outGrad": rows(grad), "inGrad": rows(np.full_like(planes, 9))}
                if kind == "Max":
                    fields.update(inp=rows(planes), pooled=rows(pooled["max"]))
                v = h.vertex(templateVertex(f"popnn::{kind}PoolingGrad", F, scaled), tile=2 + gi,
                             initial={"geom": np.array(geom, np.int32)}, **fields)
                cases[f"{kind}PoolingGrad scaled={scaled} geom {gi}"] = (v["inGrad"], rows(want), 1e-6)
    h.check()


def roi_align(plane: np.ndarray, roi, scale: float, aligned: bool, ah: int, aw: int, grid: int) -> np.ndarray:
    """``[ah, aw]`` bins of ``roi`` = (x1, y1, x2, y2): each the mean of grid x grid bilinear
    samples at its sub-cells' centres; a sample past the far edge (> H or > W) is 0, a
    coordinate below 0 is read at 0 and one in [size - 1, size] at size - 1."""
    hgt, wid = plane.shape
    half = 0.5 if aligned else 0.0
    x0, y0, x1, y1 = np.asarray(roi, np.float64) * scale - half
    bin_w, bin_h = max(x1 - x0, 0.0 if aligned else 1.0) / aw, max(y1 - y0, 0.0 if aligned else 1.0) / ah
    offsets = (np.arange(grid) + 0.5) / grid
    ys = (y0 + (np.arange(ah)[:, None] + offsets) * bin_h)[:, :, None, None]  # [ah, grid, 1, 1]
    xs = (x0 + (np.arange(aw)[:, None] + offsets) * bin_w)[None, None]  # [1, 1, aw, grid]
    ys, xs = np.broadcast_arrays(ys, xs)
    yc, xc = np.clip(ys, 0, hgt - 1), np.clip(xs, 0, wid - 1)
    yl, xl = yc.astype(int), xc.astype(int)
    yh, xh = np.minimum(yl + 1, hgt - 1), np.minimum(xl + 1, wid - 1)
    ly, lx = yc - yl, xc - xl
    v = (plane[yl, xl] * (1 - ly) * (1 - lx) + plane[yl, xh] * (1 - ly) * lx
         + plane[yh, xl] * ly * (1 - lx) + plane[yh, xh] * ly * lx)
    return np.where((ys <= hgt) & (xs <= wid), v, 0.0).mean(axis=(1, 3))


# regions (x1, y1, x2, y2) at spatial scale 0.5 on 5 x 6 planes, each with its batch element:
# inside, past the far edges, from negative coordinates, smaller than a pixel
ROIS = [((1, 2, 8, 7), 1), ((6, 4, 14, 12), 0), ((-3, -1, 4, 3), 1), ((4, 4, 4.5, 4.2), 0)]
ROI_STATE = {"height": 5, "width": 6, "alignedH": 2, "alignedW": 3, "grid": 2, "spatialScale": 0.5}


def roi_fields(rng, aligned: bool, batch=None):
    planes = rng.integers(-5, 6, (2, 5, 6)).astype(np.float64)
    rois = np.array([r for r, _ in ROIS], np.float32)
    index = np.array([b for _, b in ROIS] if batch is None else batch, np.int32)
    return planes, rois, index, {**ROI_STATE, "aligned": aligned}


def test_roi_align_forward_and_backward(vertices):
    """Forward against the bilinear samples; backward against the forward reference's transpose
    (each bin's gradient back through the same samples), both for aligned and not."""
    h, rng = vertices("popnn"), np.random.default_rng(10)
    cases = h.cases
    for tile, aligned in enumerate((False, True)):
        planes, rois, index, state = roi_fields(rng, aligned)
        forward = [roi_align(planes[b], r, 0.5, aligned, 2, 3, 2) for r, b in zip(rois, index)]
        v = h.vertex(templateVertex("popnn::ROIAlignForward", F), tile=tile, planes=rows(planes),
                     rois=list(rois), batchIndex=index, out=rows(np.full((len(ROIS), 6), 9)), initial=state)
        cases[f"ROIAlignForward aligned={aligned}"] = (v["out"], [f.ravel() for f in forward], 1e-5)
        top = rng.integers(-3, 4, (len(ROIS), 6)).astype(np.float64)
        unit = np.eye(30).reshape(30, 5, 6)
        want = np.zeros((2, 30))
        for r, (roi, b) in enumerate(zip(rois, index)):
            jacobian = np.array([roi_align(u, roi, 0.5, aligned, 2, 3, 2).ravel() for u in unit])  # [30, 6]
            want[b] += jacobian @ top[r]
        v = h.vertex(templateVertex("popnn::ROIAlignBackward", F), tile=2 + tile, topGrad=rows(top),
                     rois=list(rois), batchIndex=index, planeGrads=rows(np.full((2, 30), 9)), initial=state)
        cases[f"ROIAlignBackward aligned={aligned}"] = (v["planeGrads"], list(want), 1e-5)
    h.check(atol=1e-5)


@pytest.mark.parametrize(("vertex", "batch"), [("Forward", [0, 2, 1, 0]), ("Backward", [0, 1, -1, 1])])
def test_roi_align_batch_index_out_of_range_is_an_error(vertices, vertex, batch):
    h, rng = vertices("popnn"), np.random.default_rng(11)
    planes, rois, index, state = roi_fields(rng, False, batch)
    fields = ({"planes": rows(planes), "out": rows(np.zeros((4, 6)))} if vertex == "Forward" else
              {"topGrad": rows(np.ones((4, 6))), "planeGrads": rows(np.zeros((2, 30)))})
    for batch_index in (np.zeros_like(index), index):  # a good vertex beside the bad one
        h.vertex(templateVertex(f"popnn::ROIAlign{vertex}", F), rois=list(rois), batchIndex=batch_index,
                 initial=state, **fields)
    with pytest.raises(poplar.VertexError):
        h.run()


def test_arg_max_min_rows_and_accuracy(vertices):
    """ReduceArgRows: seven rows (worker 0 takes two), the first of equal extremes, NaN never
    taken over a number. CalcAccuracy adds the matches to ``numCorrect``; a masked (or negative)
    label never matches."""
    table = [[1, 5, 5, -2], [3, np.nan, 7, 7], [-4], [0, -1, np.nan, -1], [2, 2, 2], [9, -9, 8, -9],
             [3, 1, 4, 1, 5]]
    h = vertices("popnn")
    cases = h.cases
    for tile, (t, is_max) in enumerate([(F, True), (F, False), (H, True), (poplar.INT, False)]):
        for rows in (table, table[2:5]):  # two vertices of each
            data = [np.array(r, np.float64) for r in rows]
            if t == poplar.INT:
                data = [np.nan_to_num(r, nan=6) for r in data]
            pick = [int(np.nanargmax(r) if is_max else np.nanargmin(r)) for r in data]
            v = h.vertex(templateVertex("popnn::ReduceArgRows", t, is_max), tile=tile,
                         rows=[r.astype(t.dtype) for r in data],
                         index=np.full(len(data), 99, np.uint32), value=np.zeros(len(data), t.dtype))
            name = f"ReduceArgRows<{t},{is_max}> {len(data)} rows"
            cases[f"{name} index"] = (v["index"], pick)
            cases[f"{name} value"] = (v["value"], [r[k] for r, k in zip(data, pick)])
    for label_t, labels in [(poplar.UNSIGNED_INT, [3, 2, 0, OUT, 5, 4]), (poplar.INT, [3, 1, -1, 2, 4, -1])]:
        for n, before in ((6, 5), (3, 0)):
            max_index = np.array([3, 1, 0, 2, 5, OUT][:n], np.uint32)
            expected = np.array(labels[:n], np.int64).astype(label_t.dtype)
            v = h.vertex(templateVertex("popnn::CalcAccuracy", label_t), maxIndex=max_index,
                         expected=expected, numCorrect=np.array(before, np.uint32))
            matches = sum(0 <= int(e) != OUT and int(m) == int(e) for m, e in zip(max_index, expected))
            cases[f"CalcAccuracy<{label_t}> of {n}"] = (v["numCorrect"], before + matches)
    h.check()
