"""popops' Iota, EncodeOneHot, Histogram, NormaliseImage, CircBufIncrIndex, CircOffset and
ForLoopCounter vertices, each alone on a tile, against numpy (codelets/popops/encoding.py,
histogram.py, normalise_image.py, circ_buf.py, loop.py)."""

import itertools
import math

import numpy as np

import poplar_py as poplar
from poplibs_py.poputil import templateVertex

OUT = 0xFFFFFFFF  # MASKED_LABEL_CODE


def test_iota_segments_count_from_their_starts(vertices):
    """Segments (start, length) of any length (empty too) from their own starts; UNSIGNED_INT
    wraps. Two vertices of each type."""
    h = vertices()
    cases = h.cases
    vertex_segments = [(poplar.INT, [(-2, 3), (7, 0)]), (poplar.INT, [(100, 5)]),
                       (poplar.UNSIGNED_INT, [(OUT - 1, 4)]), (poplar.UNSIGNED_INT, [(3, 2)])]
    for tile, (t, segments) in enumerate(vertex_segments):
        v = h.vertex(templateVertex("popops::Iota", t), tile=tile,
                     out=[np.zeros(n, t.dtype) for _, n in segments],
                     initial={"starts": np.array([s for s, _ in segments], np.int64).astype(t.dtype)})
        want = [((s + np.arange(n)) % 2**32).astype(np.int64).astype(t.dtype) for s, n in segments]
        cases[f"Iota<{t}> {segments}"] = (v["out"], want)
    h.check()


# segments (index, first column, length): the index inside, before and after the segment, masked,
# negative (INT indices), an empty segment
ONE_HOT = [(2, 0, 4), (5, 4, 3), (1, 4, 3), (7, 4, 3), (OUT, 0, 4), (-1, 0, 2), (0, 0, 0)]


def test_encode_one_hot_marks_the_index_within_each_segment(vertices):
    """The segments on two vertices of each type."""
    h = vertices()
    cases = h.cases
    types = [(poplar.UNSIGNED_INT, poplar.FLOAT), (poplar.INT, poplar.HALF)]
    for tile, ((index_t, t), part) in enumerate(itertools.product(types, (ONE_HOT[:4], ONE_HOT[4:]))):
        indices = np.array([i for i, _, _ in part], np.int64).astype(index_t.dtype)
        v = h.vertex(templateVertex("popops::EncodeOneHot", index_t, t), tile=tile, indices=indices,
                     out=[np.full(n, 9, t.dtype) for _, _, n in part], on=np.array(2.5, t.dtype),
                     off=np.array(-1, t.dtype),
                     initial={"columns": np.array([c for _, c, _ in part], np.uint32)})
        want = []
        for i, c, n in part:
            row = np.full(n, -1.0)
            if index_t == poplar.INT or i != OUT:
                i = int(np.int64(i).astype(index_t.dtype))
                if c <= i < c + n:
                    row[i - c] = 2.5
            want.append(row)
        cases[f"EncodeOneHot<{index_t},{t}> {part}"] = (v["out"], want)
    h.check()


def test_histogram_counts_between_limits(vertices):
    """Bucket k counts limits[k-1] <= x < limits[k] (a value on a limit goes above it); NaN goes
    to bucket 0; ``absolute`` counts |x|. Data in several regions, one of them empty."""
    limits = np.array([-1.0, 0.0, 0.5, 2.0])
    data = np.array([-3.0, -1.0, -0.5, 0.0, 0.25, 0.5, 1.0, 2.0, 5.0, math.nan, -0.75, 2.0])
    h = vertices()
    cases = h.cases
    for tile, (t, out_t) in enumerate([(poplar.FLOAT, poplar.UNSIGNED_INT), (poplar.HALF, poplar.FLOAT)]):
        for absolute in (0, 1):
            x = np.abs(data) if absolute else data
            bucket = np.where(np.isnan(x), 0, np.searchsorted(limits, x, side="right"))
            v = h.vertex(templateVertex("popops::Histogram", t, out_t), tile=tile,
                         data=[data[:5].astype(t.dtype), data[5:5].astype(t.dtype), data[5:].astype(t.dtype)],
                         limits=limits.astype(t.dtype), histogram=np.full(5, 7, out_t.dtype),
                         initial={"absolute": absolute})
            want = np.bincount(bucket, minlength=5)
            cases[f"Histogram<{t},{out_t}> absolute={absolute}"] = (v["histogram"], want)
    h.check()


def test_normalise_image_scales_three_channels_into_four(vertices):
    """Pixel values (chosen exact in half) times inScale, less the channel's offset, times its
    scale; the fourth channel is 0. Two pixels a vertex."""
    pixels = np.array([[0, 255, 17], [128, 3, 64], [1, 2, 250], [90, 0, 7]])
    offsets, scales, in_scale = np.array([0.5, 0.25, -1.0]), np.array([2.0, 4.0, 0.5]), 1 / 256
    want = np.concatenate([(pixels * in_scale - offsets) * scales, np.zeros((4, 1))], axis=1)
    h = vertices()
    cases = h.cases
    for in_t, out_t in [(poplar.UNSIGNED_CHAR, poplar.HALF), (poplar.FLOAT, poplar.FLOAT),
                        (poplar.HALF, poplar.HALF)]:
        for part in (slice(0, 2), slice(2, 4)):
            v = h.vertex(templateVertex("popops::NormaliseImage", in_t, out_t),
                         inT=pixels[part].ravel().astype(in_t.dtype), out=np.full(8, 9, out_t.dtype),
                         scales=scales.astype(out_t.dtype), offsets=offsets.astype(out_t.dtype),
                         initial={"inScale": in_scale})
            cases[f"NormaliseImage<{in_t},{out_t}> pixels {part}"] = (v["out"], want[part].ravel())
    h.check()


def test_counters(vertices):
    """CircBufIncrIndex (index + 1, back to 0 at hSize), CircOffset ((indexIn + offset) mod hSize)
    and ForLoopCounter (count += increment, then count != limit; UNSIGNED_INT wraps)."""
    h = vertices()
    cases = h.cases
    for index, size in [(2, 5), (4, 5), (0, 1)]:
        v = h.vertex("popops::CircBufIncrIndex", index=np.array(index, np.uint32), initial={"hSize": size})
        cases[f"CircBufIncrIndex {index} of {size}"] = (v["index"], (index + 1) % size)
    for index, size, offset in [(3, 5, 4), (0, 5, 0), (1, 5, 3), (4, 5, 1)]:
        v = h.vertex("popops::CircOffset", indexIn=np.array(index, np.uint32),
                     indexOut=np.array(9, np.uint32), initial={"hSize": size, "offset": offset})
        cases[f"CircOffset {index} + {offset} of {size}"] = (v["indexOut"], (index + offset) % size)
    for t, count, limit, step in [(poplar.INT, 3, 5, 2), (poplar.INT, 5, 0, -1), (poplar.INT, -1, -3, -2),
                                  (poplar.UNSIGNED_INT, OUT, 0, 1), (poplar.UNSIGNED_INT, 0, 3, 1)]:
        v = h.vertex(templateVertex("popops::ForLoopCounter", t), count=np.array(count, t.dtype),
                     limit=np.array(limit, t.dtype), comparisonResult=np.array(7, np.uint32),
                     initial={"increment": step})
        after = np.array(count + step).astype(np.int64).astype(t.dtype)  # wraps as the type does
        label = f"ForLoopCounter<{t}> {count} + {step} vs {limit}"
        cases[f"{label}: count"] = (v["count"], after)
        cases[f"{label}: result"] = (v["comparisonResult"], int(after != np.array(limit, t.dtype)))
    h.check()
