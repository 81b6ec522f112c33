"""popops' slicing vertices, each alone on a tile, against numpy: MultiSlice, MultiUpdate,
MultiUpdateAdd, MultiUpdateMax, DynamicSlice1D, DynamicUpdateSlice1D, SequenceSlice,
XlaWindowOffsets, SelectScalarFromRows and UpdateScalarInRows (codelets/popops/dynamic_slice.py,
multi_update_op.py, sequence_slice.py, xla.py, select_scalar.py).

``baseT`` holds a run of ``regionSize`` columns of ``numBaseElements`` rows, flattened; ``subT``
one run per lookup or slice row."""

import itertools
import math

import numpy as np
import pytest

import poplar_py as poplar
from poplibs_py.poputil import templateVertex

OUT = 0xFFFFFFFF  # an out-of-range offset, and MASKED_LABEL_CODE
nan = math.nan

# (numBaseElements, regionSize, offsets): offsets past the end, repeated ones, none at all
LOOKUPS = [(5, 3, [4, 0, 5, 2, OUT, 4]), (4, 1, [3, 3, 1]), (3, 2, [])]


def multi_slice(base, sub, offsets, scale):
    for i, off in enumerate(offsets):
        sub[i] = base[off] if off < len(base) else 0
    return sub


def multi_update(base, sub, offsets, scale):
    for i, off in enumerate(offsets):
        if off < len(base):
            base[off] = sub[i]
    return base


def multi_update_add(base, sub, offsets, scale):
    for i, off in enumerate(offsets):
        if off < len(base):
            base[off] += scale * sub[i]
    return base


def multi_update_max(base, sub, offsets, scale):
    for i, off in enumerate(offsets):
        if off < len(base):
            base[off] = np.maximum(base[off], sub[i])  # NaN in either gives NaN
    return base


# vertex: (reference, its output field, template argument lists)
MULTI = {
    "MultiSlice": (multi_slice, "subT", [(poplar.FLOAT,), (poplar.HALF,), (poplar.INT,)]),
    "MultiUpdate": (multi_update, "baseT", [(poplar.FLOAT,), (poplar.UNSIGNED_INT,)]),
    "MultiUpdateAdd": (multi_update_add, "baseT",
                       [(poplar.FLOAT, poplar.FLOAT), (poplar.HALF, poplar.FLOAT), (poplar.INT, poplar.INT)]),
    "MultiUpdateMax": (multi_update_max, "baseT", [(poplar.FLOAT,), (poplar.INT,)]),
}


def rows_of(t: poplar.Type, n: int, r: int, first: float) -> np.ndarray:
    """``[n, r]`` distinct values exact in ``t`` (a NaN in the float ones)."""
    a = (first + np.arange(n * r) * (1.5 if t.dtype.kind == "f" else 3)).reshape(n, r)
    if t.dtype.kind == "f" and a.size > 1:
        a.flat[1] = nan
    return a.astype(t.dtype)


@pytest.mark.parametrize("vertex", MULTI)
def test_multi_slice_and_update_vertices(vertices, vertex):
    reference, output, instances = MULTI[vertex]
    h = vertices()
    cases = h.cases
    for types in instances:
        t = types[0]
        for k, (n, r, offsets) in enumerate(LOOKUPS):
            base, sub = rows_of(t, n, r, 10 - 4 * k), rows_of(t, len(offsets), r, 1 + k)
            scale = np.array(0.5 if t.dtype.kind == "f" else 3, (types[-1]).dtype)
            fields = {"offsets": np.array(offsets, np.uint32), "baseT": base.ravel(), "subT": sub.ravel()}
            if vertex == "MultiUpdateAdd":
                fields["scale"] = scale
            v = h.vertex(templateVertex(f"popops::{vertex}", *types), tile=k, initial={"numBaseElements": n},
                         **fields)
            want = reference(base.copy(), sub.copy(), offsets, scale)
            cases[f"{vertex}<{','.join(map(str, types))}> offsets {offsets}"] = (v[output], want.ravel())
    h.check()


# (numBaseElements, numSubElements, regionSize, offset): windows wrap past the last row, and an
# offset past the end starts at row 0
DYNAMIC = [(5, 4, 2, 3), (5, 2, 1, 7), (4, 4, 3, 0), (3, 1, 2, 2)]


@pytest.mark.parametrize("update", [False, True], ids=["DynamicSlice1D", "DynamicUpdateSlice1D"])
def test_dynamic_slice_vertices(vertices, update):
    h = vertices()
    cases = h.cases
    for t in (poplar.FLOAT, poplar.HALF):
        for k, (n, m, r, offset) in enumerate(DYNAMIC):
            base, sub = rows_of(t, n, r, 2), rows_of(t, m, r, 100)
            rows = [((offset if offset < n else 0) + s) % n for s in range(m)]
            vertex = "popops::DynamicUpdateSlice1D" if update else "popops::DynamicSlice1D"
            v = h.vertex(templateVertex(vertex, t), tile=k, offset=np.array(offset, np.uint32),
                         baseT=base.ravel(), subT=sub.ravel(),
                         initial={"numBaseElements": n, "numSubElements": m})
            if update:
                base[rows] = sub
            want = base if update else base[rows]
            cases[f"<{t}> {n} rows, {m} from {offset}"] = (v["baseT" if update else "subT"], want.ravel())
    h.check()


def test_sequence_slice_clips_each_run(vertices):
    """Runs (src, dst, n) of rows: within both, cut by the source's end, by the destination's
    end, starting past either end (nothing), empty; three runs a vertex."""
    runs = [(0, 1, 2), (3, 0, 4), (1, 3, 3), (5, 0, 1), (0, 4, 1), (2, 2, 0)]
    h = vertices()
    cases = h.cases
    for tile, (t, mine) in enumerate(itertools.product((poplar.FLOAT, poplar.INT), (runs[:3], runs[3:]))):
        src, dst = rows_of(t, 5, 2, 1), rows_of(t, 4, 2, 50)
        v = h.vertex(templateVertex("popops::SequenceSlice", t), tile=tile,
                     srcT=src.ravel(), dstT=dst.ravel(),
                     srcOffsetT=np.array([s for s, _, _ in mine], np.uint32),
                     dstOffsetT=np.array([d for _, d, _ in mine], np.uint32),
                     nElementsT=np.array([n for _, _, n in mine], np.uint32),
                     initial={"numSrcElements": 5, "numDstElements": 4, "regionSize": 2})
        for s, d, n in mine:
            n = min(n, 5 - s, 4 - d) if s < 5 and d < 4 else 0
            dst[d:d + n] = src[s:s + n]
        cases[f"SequenceSlice<{t}> runs {mine}"] = (v["dstT"], dst.ravel())
    h.check()


def test_xla_window_offsets(vertices):
    """Windows of 3 rows (offsets 0, 1, 5 from the start row) over 2 indexed dimensions (limits 3
    and 4, strides 5 and 1): starts inside, at the limit, negative and past it; clamped (gather)
    or marked out of range (scatter). An UNSIGNED_INT index of 2**32 - 1 is past the limit."""
    limits, strides, window = [3, 4], [5, 1], [0, 1, 5]
    starts = [(1, 2), (-1, 2), (3, 4), (4, 0), (0, -3)]
    h = vertices()
    cases = h.cases
    for t in (poplar.INT, poplar.UNSIGNED_INT):
        indices = np.array(starts, np.int64).astype(t.dtype)
        for clamp in (0, 1):
            want = []
            for w in indices.tolist():
                fits = all(0 <= s <= lim for s, lim in zip(w, limits))
                row = sum(min(max(s, 0), lim) * st for s, lim, st in zip(w, limits, strides))
                want += [row + e if fits or clamp else OUT for e in window]
            v = h.vertex(templateVertex("popops::XlaWindowOffsets", t), indices=indices.ravel(),
                         offsets=np.zeros(len(want), np.uint32),
                         initial={"limits": np.array(limits, np.uint32), "clamp": clamp,
                                "strides": np.array(strides, np.uint32),
                                "windowOffsets": np.array(window, np.uint32)})
            cases[f"<{t}> clamp={clamp}"] = (v["offsets"], np.array(want, np.uint32))
    h.check()


# rows (their widths differ) and each row's index: inside, masked, one past the end, into an empty row
SCALAR_ROWS = [([1.5, -2.0, 3.0, 4.5], 2), ([7.0, 8.0], OUT), ([1.0, 2.0, 3.0], 3), ([], 0), ([6.0], 0)]


def test_select_and_update_scalar_in_rows(vertices):
    h = vertices()
    cases = h.cases
    halves = (slice(0, 3), slice(3, None))  # rows of a vertex
    for tile, (t, part) in enumerate(itertools.product((poplar.FLOAT, poplar.HALF), halves)):
        rows = [np.array(r, t.dtype) for r, _ in SCALAR_ROWS[part]]
        indices = np.array([i for _, i in SCALAR_ROWS[part]], np.uint32)
        select = h.vertex(templateVertex("popops::SelectScalarFromRows", t), tile=tile, params=rows,
                          indices=indices, out=np.zeros(len(rows), t.dtype))
        update = h.vertex(templateVertex("popops::UpdateScalarInRows", t), tile=tile, params=rows,
                          indices=indices)
        picked, updated = [], []
        for row, i in zip(rows, indices):
            picked.append(0 if i == OUT else row[i] if i < len(row) else nan)
            new = row.copy()
            if i < len(row):
                new[i] -= 1
            elif i != OUT:
                new[:] = nan
            updated.append(new)
        cases[f"SelectScalarFromRows<{t}> rows {part}"] = (select["out"], np.array(picked, t.dtype))
        cases[f"UpdateScalarInRows<{t}> rows {part}"] = (update["params"], updated)
    h.check()
