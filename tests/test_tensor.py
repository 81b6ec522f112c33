"""Tensor views against numpy: every view is a numpy operation on the array of element ids."""

from __future__ import annotations

import random

import numpy as np
import pytest
from support import element_ids, make_graph

import poplar_py as poplar
from poplar_py import Interval
from poplar_py.builder import box_views as bx

# ---- helpers ---------------------------------------------------------------------------------


def variable(shape, type_=poplar.FLOAT, name="x", tiles=8):
    _, graph = make_graph(tiles)
    graph.addVariable(poplar.INT, [7], "before")  # so ids do not start at 0
    t = graph.addVariable(type_, shape, name)
    return graph, t


def check(view: poplar.Tensor, expected: np.ndarray) -> None:
    assert view.shape() == list(expected.shape)
    assert view.rank() == expected.ndim
    assert view.numElements() == expected.size
    np.testing.assert_array_equal(element_ids(view), expected)


def test_ids_are_a_row_major_arange():
    graph, t = variable([3, 4, 5])
    base = element_ids(graph.addVariable(poplar.FLOAT, [1], "after"))[0] - 60
    np.testing.assert_array_equal(element_ids(t), np.arange(base, base + 60).reshape(3, 4, 5))


# ---- every view op against numpy ---------------------------------------------------------------

def _expand_np(a, idx):
    shape = list(a.shape)
    for offset, i in enumerate(sorted(idx)):
        shape.insert(i + offset, 1)
    return a.reshape(shape)


VIEWS = [
    # (name, shape, tensor op, numpy op on the id array)
    ("index0", [5], lambda t: t[0], lambda a: a[0]),
    ("index-last", [5], lambda t: t[4], lambda a: a[4]),
    ("index-negative", [5, 3], lambda t: t[-1], lambda a: a[-1]),
    ("index2d", [4, 6], lambda t: t[2], lambda a: a[2]),
    ("index-index", [4, 6], lambda t: t[2][5], lambda a: a[2][5]),
    ("index-index-3d", [3, 4, 5], lambda t: t[1][3], lambda a: a[1][3]),
    ("pyslice", [10], lambda t: t[2:7], lambda a: a[2:7]),
    ("pyslice-open", [10], lambda t: t[:4], lambda a: a[:4]),
    ("pyslice-open-end", [10], lambda t: t[6:], lambda a: a[6:]),
    ("pyslice-step", [10], lambda t: t[1:9:3], lambda a: a[1:9:3]),
    ("pyslice-step-only", [11], lambda t: t[::2], lambda a: a[::2]),
    ("pyslice-negative", [10], lambda t: t[-4:-1], lambda a: a[-4:-1]),
    ("pyslice-empty", [10], lambda t: t[5:5], lambda a: a[5:5]),
    ("pyslice-2d", [6, 7], lambda t: t[1:5], lambda a: a[1:5]),
    ("tuple-int-int", [4, 6], lambda t: t[1, 2], lambda a: a[1, 2]),
    ("tuple-slice-int", [4, 6], lambda t: t[1:3, 2], lambda a: a[1:3, 2]),
    ("tuple-int-slice", [4, 6], lambda t: t[3, ::2], lambda a: a[3, ::2]),
    ("tuple-slices", [4, 6, 5], lambda t: t[::2, 1:5:2, 4], lambda a: a[::2, 1:5:2, 4]),
    ("tuple-all", [4, 6], lambda t: t[:, 3], lambda a: a[:, 3]),
    ("slice-b-e", [8, 3], lambda t: t.slice(2, 6), lambda a: a[2:6]),
    ("slice-b-e-dim1", [8, 5], lambda t: t.slice(1, 4, 1), lambda a: a[:, 1:4]),
    ("slice-b-e-dim2", [2, 3, 7], lambda t: t.slice(3, 7, 2), lambda a: a[:, :, 3:7]),
    ("slice-empty", [8, 5], lambda t: t.slice(5, 5, 1), lambda a: a[:, 5:5]),
    ("slice-full", [8, 5], lambda t: t.slice(0, 8), lambda a: a),
    ("slice-multi", [4, 4], lambda t: t.slice([1, 1], [2, 4]), lambda a: a[1:2, 1:4]),
    ("slice-multi-3d", [4, 5, 6], lambda t: t.slice([1, 0, 2], [3, 5, 5]), lambda a: a[1:3, 0:5, 2:5]),
    ("slice-multi-leading", [4, 5, 6], lambda t: t.slice([2, 1], [4, 3]), lambda a: a[2:4, 1:3]),
    ("slice-multi-tuple", [4, 5], lambda t: t.slice((0, 2), (3, 5)), lambda a: a[0:3, 2:5]),
    ("slice-interval", [9, 2], lambda t: t.slice(Interval(2, 7)), lambda a: a[2:7]),
    ("slice-interval-dim", [3, 9], lambda t: t.slice(Interval(2, 7), 1), lambda a: a[:, 2:7]),
    ("slice-interval-kw", [3, 9], lambda t: t.slice(Interval(0, 3), dim=1), lambda a: a[:, 0:3]),
    ("slices-0", [9, 2], lambda t: t.slices([Interval(0, 2), Interval(5, 9)])[1], lambda a: a[5:9]),
    ("slices-dim", [3, 9], lambda t: t.slices([(1, 2), (3, 6)], 1)[1], lambda a: a[:, 3:6]),
    ("slices-seq", [9, 2], lambda t: t.slices([[(0, 2), (5, 7)]])[0],
     lambda a: np.concatenate([a[0:2], a[5:7]])),
    ("slices-indices", [9, 2], lambda t: t.slices([7, 2])[0], lambda a: a[7:8]),  # Poplar's index overload
    ("slices-indices-dim", [3, 9], lambda t: t.slices(np.array([4, 8]), 1)[1], lambda a: a[:, 8:9]),
    ("slices-mixed", [9, 2], lambda t: t.slices([3, Interval(4, 6), [(0, 1), [8, 9]]])[2],
     lambda a: np.concatenate([a[0:1], a[8:9]])),
    ("index-list", [3, 4, 5], lambda t: t.index([2, 1]), lambda a: a[2, 1]),
    ("index-all", [3, 4, 5], lambda t: t.index([2, 1, 4]), lambda a: a[2, 1, 4]),
    ("index-none", [3, 4], lambda t: t.index([]), lambda a: a),
    ("reshape", [4, 6], lambda t: t.reshape([3, 8]), lambda a: a.reshape(3, 8)),
    ("reshape-3d", [24], lambda t: t.reshape([2, 3, 4]), lambda a: a.reshape(2, 3, 4)),
    ("reshape-scalar", [1], lambda t: t.reshape([]), lambda a: a.reshape(())),
    ("reshape-of-transpose", [4, 6], lambda t: t.transpose().reshape([24]), lambda a: a.T.reshape(24)),
    ("reshapePartial", [2, 6, 5], lambda t: t.reshapePartial(1, 2, [3, 2]), lambda a: a.reshape(2, 3, 2, 5)),
    ("reshapePartial-merge", [2, 3, 4, 5], lambda t: t.reshapePartial(1, 3, [12]),
     lambda a: a.reshape(2, 12, 5)),
    ("reshapePartial-insert", [2, 3], lambda t: t.reshapePartial(1, 1, [1, 1]),
     lambda a: a.reshape(2, 1, 1, 3)),
    ("reshapePartial-end", [2, 6], lambda t: t.reshapePartial(1, 2, [2, 3]), lambda a: a.reshape(2, 2, 3)),
    ("flatten", [3, 4, 5], lambda t: t.flatten(), lambda a: a.reshape(-1)),
    ("flatten-transposed", [3, 4], lambda t: t.transpose().flatten(), lambda a: a.T.reshape(-1)),
    ("flatten-b-e", [3, 4, 5, 2], lambda t: t.flatten(1, 3), lambda a: a.reshape(3, 20, 2)),
    ("flatten-b-e-all", [3, 4, 5], lambda t: t.flatten(0, 3), lambda a: a.reshape(60)),
    ("flatten-b-e-one", [3, 4, 5], lambda t: t.flatten(2, 3), lambda a: a),
    ("dimShuffle", [2, 3, 4], lambda t: t.dimShuffle([2, 0, 1]), lambda a: a.transpose(2, 0, 1)),
    ("dimShuffle-id", [2, 3, 4], lambda t: t.dimShuffle([0, 1, 2]), lambda a: a),
    ("dimShuffle-4d", [2, 3, 4, 5], lambda t: t.dimShuffle([3, 1, 0, 2]), lambda a: a.transpose(3, 1, 0, 2)),
    ("dimShufflePartial", [2, 3, 4, 5], lambda t: t.dimShufflePartial([0], [3]),
     lambda a: np.moveaxis(a, 0, 3)),
    ("dimShufflePartial-2", [2, 3, 4, 5], lambda t: t.dimShufflePartial([3, 0], [1, 2]),
     lambda a: np.moveaxis(a, [3, 0], [1, 2])),
    ("dimRoll", [2, 3, 4], lambda t: t.dimRoll(2), lambda a: np.moveaxis(a, 2, 0)),
    ("dimRoll-to", [2, 3, 4], lambda t: t.dimRoll(0, 2), lambda a: np.moveaxis(a, 0, 2)),
    ("transpose", [3, 5], lambda t: t.transpose(), lambda a: a.T),
    ("transpose-twice", [3, 5], lambda t: t.transpose().transpose(), lambda a: a),
    ("broadcast", [3], lambda t: t.broadcast(4, 0), lambda a: np.concatenate([a] * 4)),
    ("broadcast-dim1", [2, 3], lambda t: t.broadcast(3, 1), lambda a: np.concatenate([a] * 3, axis=1)),
    ("broadcast-1", [2, 3], lambda t: t.broadcast(1, 0), lambda a: a),
    ("broadcast-0", [2, 3], lambda t: t.broadcast(0, 1), lambda a: a[:, :0]),
    ("broadcast-singleton", [1, 4], lambda t: t.broadcast(5, 0), lambda a: np.repeat(a, 5, axis=0)),
    ("expand", [3, 4], lambda t: t.expand([0]), lambda a: a[None]),
    ("expand-end", [3, 4], lambda t: t.expand([2]), lambda a: a[:, :, None]),
    ("expand-middle", [3, 4], lambda t: t.expand([1]), lambda a: a[:, None]),
    ("expand-many", [3, 4], lambda t: t.expand([0, 2]), lambda a: _expand_np(a, [0, 2])),
    ("expand-repeated", [3, 4], lambda t: t.expand([1, 1]), lambda a: a.reshape(3, 1, 1, 4)),
    ("expand-repeated-unsorted", [3, 4], lambda t: t.expand([2, 0, 2]), lambda a: a.reshape(1, 3, 4, 1, 1)),
    ("expand-scalar", [3], lambda t: t[1].expand([0]), lambda a: a[1:2]),
    ("squeeze", [3, 1, 4], lambda t: t.squeeze([1]), lambda a: a.reshape(3, 4)),
    ("squeeze-many", [1, 3, 1, 4, 1], lambda t: t.squeeze([0, 4, 2]), lambda a: a.reshape(3, 4)),
    ("squeeze-none", [3, 4], lambda t: t.squeeze([]), lambda a: a),
    ("squeeze-to-scalar", [1, 1], lambda t: t.squeeze([0, 1]), lambda a: a.reshape(())),
    ("reverse", [6], lambda t: t.reverse(0), lambda a: a[::-1]),
    ("reverse-dim1", [3, 6], lambda t: t.reverse(1), lambda a: np.flip(a, 1)),
    ("reverse-twice", [3, 6], lambda t: t.reverse(0).reverse(0), lambda a: a),
    ("subSample", [10], lambda t: t.subSample(3, 0), lambda a: a[::3]),
    ("subSample-dim1", [3, 10], lambda t: t.subSample(4, 1), lambda a: a[:, ::4]),
    ("subSample-1", [3, 10], lambda t: t.subSample(1, 1), lambda a: a),
    ("subSample-big", [3, 10], lambda t: t.subSample(20, 1), lambda a: a[:, :1]),
    ("upsample", [1, 3], lambda t: t.upsample(2, 1), lambda a: np.repeat(a, 2, axis=1)),
    ("upsample-dim0", [3, 2], lambda t: t.upsample(3, 0), lambda a: np.repeat(a, 3, axis=0)),
    ("upsample-1", [3, 2], lambda t: t.upsample(1, 0), lambda a: a),
    ("upsample-0", [3, 2], lambda t: t.upsample(0, 1), lambda a: a[:, :0]),
    ("upsample-method", [4], lambda t: t.upsample(2, 0, poplar.UpsampleMethod.REPEAT),
     lambda a: np.repeat(a, 2)),
    ("reinterpret", [3, 4], lambda t: t.reinterpret(poplar.INT), lambda a: a),
    ("concat-list", [4, 3], lambda t: poplar.concat([t[0:1], t[2:4], t[1:2]]),
     lambda a: np.concatenate([a[0:1], a[2:4], a[1:2]])),
    ("concat-list-dim1", [4, 3], lambda t: poplar.concat([t.slice(2, 3, 1), t.slice(0, 2, 1)], 1),
     lambda a: np.concatenate([a[:, 2:3], a[:, 0:2]], axis=1)),
    ("concat-two", [4, 3], lambda t: poplar.concat(t[2:], t[:2]), lambda a: np.concatenate([a[2:], a[:2]])),
    ("concat-two-dim", [4, 3], lambda t: poplar.concat(t.slice(1, 3, 1), t.slice(0, 1, 1), 1),
     lambda a: np.concatenate([a[:, 1:3], a[:, 0:1]], axis=1)),
    ("concat-one", [4, 3], lambda t: poplar.concat([t]), lambda a: a),
    ("concat-self", [4], lambda t: poplar.concat([t, t, t]), lambda a: np.concatenate([a, a, a])),
    ("append", [4, 3], lambda t: poplar.append(t, t[1]), lambda a: np.concatenate([a, a[1:2]])),
    ("append-dim1", [4, 3], lambda t: poplar.append(t, t[:, 0], 1),
     lambda a: np.concatenate([a, a[:, 0:1]], axis=1)),
    ("append-1d", [5], lambda t: poplar.append(t[:3], t[4]), lambda a: np.concatenate([a[:3], a[4:5]])),
]


@pytest.mark.parametrize("name,shape,op,ref", VIEWS, ids=[v[0] for v in VIEWS])
def test_view_matches_numpy(name, shape, op, ref):
    _, t = variable(shape)
    view = op(t)
    check(view, ref(element_ids(t)))
    assert view.elementType() == (poplar.INT if name == "reinterpret" else poplar.FLOAT)


def test_views_never_copy_and_share_the_table():
    _, t = variable([4, 6])
    before = t.variables.num_elements
    views = [t[1], t.transpose(), t.broadcast(3, 0), t.reshape([24]), t.reverse(1), t.upsample(2, 0)]
    assert t.variables.num_elements == before
    for v in views:
        assert v.variables is t.variables
        assert np.isin(element_ids(v), element_ids(t)).all()


def test_index_of_1d_gives_scalar():
    _, t = variable([5])
    s = t[3]
    assert s.shape() == [] and s.rank() == 0 and s.numElements() == 1
    assert int(element_ids(s)) == int(element_ids(t)[3])


def test_len_and_iteration():
    _, t = variable([3, 2])
    assert len(t) == 3
    rows = list(t)
    assert len(rows) == 3
    for i, r in enumerate(rows):
        check(r, element_ids(t)[i])
    with pytest.raises(TypeError):
        len(t[0][0])


def test_slice_with_numpy_integers():
    _, t = variable([6, 4])
    check(t.slice(np.int64(1), np.int32(3), np.int64(1)), element_ids(t)[:, 1:3])
    check(t[np.int64(2)], element_ids(t)[2])


# ---- random chains of operations ---------------------------------------------------------------

class _Chain:
    """Applies the same random view op to a tensor and to the numpy id array."""

    def __init__(self, rng: random.Random, t: poplar.Tensor) -> None:
        self.rng = rng
        self.t = t
        self.a = element_ids(t).copy()
        self.log: list[str] = []

    def _dim(self) -> int:
        return self.rng.randrange(self.a.ndim)

    def step(self) -> None:
        rng, a = self.rng, self.a
        ops = ["reshape", "dimShuffle", "reverse", "expand", "flatten", "dimRoll"]
        if a.ndim >= 1:
            ops += ["slice", "pyslice", "subSample", "reverse", "concat"]
            if a.size * 3 <= 3000:
                ops += ["broadcast", "upsample"]
            if a.shape[0] > 0 and a.ndim >= 2:
                ops.append("index")
        if a.ndim == 2:
            ops.append("transpose")
        if 1 in a.shape:
            ops.append("squeeze")
        if a.ndim >= 2:
            ops.append("flattenRange")
        op = rng.choice(ops)
        t = self.t
        if op == "index":
            i = rng.randrange(a.shape[0])
            t, a = t[i], a[i]
        elif op == "slice":
            d = self._dim()
            n = a.shape[d]
            b = rng.randrange(n) if n else 0
            e = rng.randint(min(b + 1, n), n)  # non-empty unless the dim is
            op = f"slice({b},{e},{d})"
            t, a = t.slice(b, e, d), np.take(a, range(b, e), axis=d)
        elif op == "pyslice":
            n = a.shape[0]
            b, step = rng.randint(0, max(n - 1, 0)), rng.randint(1, 3)
            op = f"[{b}::{step}]"
            t, a = t[b::step], a[b::step]
        elif op == "subSample":
            d, k = self._dim(), rng.randint(1, 3)
            op = f"subSample({k},{d})"
            t, a = t.subSample(k, d), a[(slice(None),) * d + (slice(None, None, k),)]
        elif op == "reverse":
            d = self._dim() if a.ndim else None
            if d is None:
                return
            op = f"reverse({d})"
            t, a = t.reverse(d), np.flip(a, d)
        elif op == "reshape":
            flat = a.size
            divisors = [k for k in range(1, flat + 1) if flat % k == 0] or [1]
            k = rng.choice(divisors)
            shape = [k, flat // k] if flat else [0, 3]
            if flat == 0:
                shape = [0]
            op = f"reshape({shape})"
            t, a = t.reshape(shape), a.reshape(shape)
        elif op == "dimShuffle":
            perm = list(range(a.ndim))
            rng.shuffle(perm)
            op = f"dimShuffle({perm})"
            t, a = t.dimShuffle(perm), a.transpose(perm)
        elif op == "dimRoll":
            if a.ndim == 0:
                return
            i, j = self._dim(), self._dim()
            op = f"dimRoll({i},{j})"
            t, a = t.dimRoll(i, j), np.moveaxis(a, i, j)
        elif op == "transpose":
            t, a = t.transpose(), a.T
        elif op == "expand":
            i = rng.randint(0, a.ndim)
            op = f"expand([{i}])"
            t, a = t.expand([i]), np.expand_dims(a, i)
        elif op == "squeeze":
            i = a.shape.index(1)
            op = f"squeeze([{i}])"
            t, a = t.squeeze([i]), np.squeeze(a, axis=i)
        elif op == "flatten":
            t, a = t.flatten(), a.reshape(-1)
        elif op == "flattenRange":
            b = rng.randrange(a.ndim - 1)
            e = rng.randint(b + 1, a.ndim)
            op = f"flatten({b},{e})"
            t, a = t.flatten(b, e), a.reshape(a.shape[:b] + (int(np.prod(a.shape[b:e])),) + a.shape[e:])
        elif op == "broadcast":
            d, n = self._dim(), rng.randint(1, 3)
            op = f"broadcast({n},{d})"
            t, a = t.broadcast(n, d), np.concatenate([a] * n, axis=d)
        elif op == "upsample":
            d, n = self._dim(), rng.randint(1, 3)
            op = f"upsample({n},{d})"
            t, a = t.upsample(n, d), np.repeat(a, n, axis=d)
        elif op == "concat":
            d = self._dim()
            op = f"concat(self.reverse, self, {d})"
            t, a = poplar.concat([t.reverse(d), t], d), np.concatenate([np.flip(a, d), a], axis=d)
        self.log.append(op)
        self.t, self.a = t, a


@pytest.mark.parametrize("seed", range(60))
def test_random_chains_match_numpy(seed):
    rng = random.Random(seed)
    shape = [rng.randint(1, 5) for _ in range(rng.randint(1, 4))]
    _, t = variable(shape)
    chain = _Chain(rng, t)
    for _ in range(rng.randint(5, 12)):
        chain.step()
        assert chain.t.shape() == list(chain.a.shape), chain.log
        np.testing.assert_array_equal(element_ids(chain.t), chain.a, err_msg=str(chain.log))
    # The queries agree with numpy on the final id array too.
    flat = chain.a.reshape(-1)
    assert chain.t.containsAliases() == (np.unique(flat).size != flat.size)
    assert chain.t.isContiguous() == (flat.size > 0 and bool((np.diff(flat) == 1).all()))
    regions = chain.t.getContiguousRegions()
    assert sum(r.size() for r in regions) == flat.size
    for r in regions:
        assert (np.diff(flat[r.begin():r.end()]) == 1).all()


@pytest.mark.parametrize("seed", range(60))
def test_random_chains_of_views_of_several_blocks(seed):
    """The same chains from a concatenation of two variables: views of several blocks."""
    rng = random.Random(1000 + seed)
    shape = [rng.randint(1, 4) for _ in range(rng.randint(1, 3))]
    d = rng.randrange(len(shape))
    graph, x = variable(shape, name="x")
    graph.addVariable(poplar.FLOAT, [3], "spacer")  # x and y must not be neighbours in id space
    other = list(shape)
    other[d] = rng.randint(1, 4)
    y = graph.addVariable(poplar.FLOAT, other, "y")
    t = poplar.concat([x, y], d)
    chain = _Chain(rng, t)
    chain.a = np.concatenate([element_ids(x), element_ids(y)], axis=d)
    np.testing.assert_array_equal(element_ids(t), chain.a)
    for _ in range(rng.randint(5, 12)):
        chain.step()
        assert chain.t.shape() == list(chain.a.shape), chain.log
        np.testing.assert_array_equal(element_ids(chain.t), chain.a, err_msg=str(chain.log))
    flat = chain.a.reshape(-1)
    assert chain.t.containsAliases() == (np.unique(flat).size != flat.size)
    assert chain.t.isContiguous() == (flat.size > 0 and bool((np.diff(flat) == 1).all()))


def test_views_cost_regions_not_elements():
    """Metadata grows with regions: a transposed block is one block; its runs are its columns."""
    _, t = variable([400, 300])
    assert t.transpose().block is not None and t.slice(10, 20, 1).transpose().block is not None
    assert len(t.transpose().runs()) == 300
    assert len(t.slice(5, 9, 1).runs()) == 400
    assert len(t.flatten().runs()) == 1 and len(t[7].runs()) == 1
    rows = poplar.concat([t[i] for i in range(0, 400, 2)])  # every other row: one strided run each
    assert len(rows.runs()) == 200 and rows.numElements() == 60000
    # A broadcast scalar is one run of stride 0, whatever its length.
    assert len(t[3][4].expand([0]).broadcast(10**6, 0).runs()) == 1


def test_rank_one_views_of_several_runs():
    _, t = variable([6, 5])
    v = poplar.concat([t[4], t[1].reverse(0), t.transpose()[2]])  # 5 + 5 + 6 elements
    ids = np.concatenate([element_ids(t)[4], element_ids(t)[1][::-1], element_ids(t)[:, 2]])
    np.testing.assert_array_equal(element_ids(v), ids)
    for i in (0, 4, 5, 9, 10, 15, -1, -16):
        assert int(element_ids(v[i])) == int(ids[i])
    for b, e in ((0, 16), (3, 12), (5, 10), (10, 16), (7, 7)):
        np.testing.assert_array_equal(element_ids(v.slice(b, e)), ids[b:e])
    np.testing.assert_array_equal(element_ids(v[2:14:3]), ids[2:14:3])
    np.testing.assert_array_equal(element_ids(v.reshape([4, 4])), ids.reshape(4, 4))
    square = v.reshape([4, 4]).transpose().flatten()
    np.testing.assert_array_equal(element_ids(square), ids.reshape(4, 4).T.ravel())
    assert v.slice(0, 5).isContiguous() and not v.slice(4, 6).isContiguous()


# ---- queries -----------------------------------------------------------------------------------

def test_shape_queries():
    _, t = variable([3, 4, 5], poplar.HALF)
    assert t.shape() == [3, 4, 5]
    assert [t.dim(i) for i in range(3)] == [3, 4, 5]
    assert t.rank() == 3
    assert t.numElements() == 60
    assert t.elementType() == poplar.HALF
    assert t[0].shape() == [4, 5] and t[0][0][0].rank() == 0


@pytest.mark.parametrize("type_", [poplar.FLOAT, poplar.HALF, poplar.INT, poplar.UNSIGNED_INT, poplar.SHORT,
                                   poplar.UNSIGNED_SHORT, poplar.CHAR, poplar.SIGNED_CHAR,
                                   poplar.UNSIGNED_CHAR, poplar.BOOL])
def test_element_type_kept_by_views(type_):
    _, t = variable([4, 2], type_)
    for v in (t[1], t.transpose(), t.reshape([8]), t.broadcast(2, 0), poplar.concat([t, t])):
        assert v.elementType() == type_


CONTIGUOUS = [
    ("whole", lambda t: t, True),
    ("outer-slice", lambda t: t.slice(1, 3), True),
    ("row", lambda t: t[2], True),
    ("element", lambda t: t[2][3], True),
    ("flatten", lambda t: t.flatten(), True),
    ("reshape", lambda t: t.reshape([6, 4]), True),
    ("expand", lambda t: t.expand([0, 2]), True),
    ("inner-slice", lambda t: t.slice(1, 3, 1), False),
    ("inner-slice-one-row", lambda t: t[1:2].slice(1, 3, 1), True),
    ("transpose", lambda t: t.transpose(), False),
    ("reverse", lambda t: t.reverse(0), False),
    ("reverse-row", lambda t: t[1].reverse(0), False),
    ("broadcast", lambda t: t.broadcast(2, 0), False),
    ("subSample", lambda t: t.subSample(2, 0), False),
    ("upsample", lambda t: t.upsample(2, 1), False),
    ("concat-adjacent", lambda t: poplar.concat([t[0:2], t[2:4]]), True),
    ("concat-swapped", lambda t: poplar.concat([t[2:4], t[0:2]]), False),
    ("empty", lambda t: t.slice(1, 1), False),
]


@pytest.mark.parametrize("name,op,expected", CONTIGUOUS, ids=[c[0] for c in CONTIGUOUS])
def test_is_contiguous(name, op, expected):
    _, t = variable([4, 6])
    assert op(t).isContiguous() is expected


def test_contiguous_regions_and_var_regions():
    graph, t = variable([4, 6], name="m")
    other = graph.addVariable(poplar.FLOAT, [5], "other")
    view = poplar.concat([t[1].slice(2, 6), other.slice(0, 3), t[0].reverse(0).slice(0, 2)])
    assert view.getContiguousRegions() == [Interval(0, 4), Interval(4, 7), Interval(7, 8), Interval(8, 9)]
    regions = view.getVarRegions()
    names = [r[0].name for r in regions]
    assert names == ["m", "other", "m", "m"]
    assert [r[1] for r in regions] == [(8, 12), (0, 3), (5, 6), (4, 5)]
    assert regions[0][0] == regions[2][0] and regions[0][0] != regions[1][0]
    col = t.transpose()[1]
    assert col.getContiguousRegions() == [Interval(i, i + 1) for i in range(4)]
    assert t.getContiguousRegions() == [Interval(0, 24)]
    assert t.getVarRegions() == [(poplar.VariableRef(regions[0][0].index, "m"), Interval(0, 24))]


def test_regions_split_at_variable_boundaries():
    """Two variables created one after the other have consecutive ids, but are two regions."""
    graph, a = variable([3], name="a")
    b = graph.addVariable(poplar.FLOAT, [3], "b")
    assert int(element_ids(b)[0]) == int(element_ids(a)[-1]) + 1
    both = poplar.concat([a, b])
    assert both.getContiguousRegions() == [Interval(0, 3), Interval(3, 6)]
    assert not both.isContiguous()
    assert [r[0].name for r in both.getVarRegions()] == ["a", "b"]


def test_aliases_and_constants():
    graph, t = variable([3, 4])
    c = graph.addConstant(poplar.FLOAT, [4], 1.0)
    graph.setTileMapping(c, 0)
    assert not t.containsAliases() and not t.containsConstant() and t.isParallelWriteable()
    for aliased in (t.broadcast(2, 0), t[0].upsample(2, 0), poplar.concat([t, t]),
                    poplar.concat([t[1], t[1]]), t[0].expand([0]).broadcast(3, 0),
                    poplar.concat([t[0:2], t[1:3]])):
        assert aliased.containsAliases()
        assert not aliased.containsConstant()
        assert not aliased.isParallelWriteable()
        # reordered (the answer comes from the tensor they reorder), still aliased
        square = aliased.flatten().reshape([2, aliased.numElements() // 2])
        assert square.containsAliases() and square.transpose().containsAliases()
    blocks = poplar.concat([t[:, 2:], t[:, :2]], 1)  # reordered, distinct elements
    assert not blocks.reshape([4, 3]).transpose().containsAliases()
    # one strided block over overlapping rows (rows 0-1 and 1-2 of t, as [2, 8] with rows 4 apart)
    overlapping = poplar.concat([t[0:2], t[1:3]]).flatten().reshape([2, 8])
    assert overlapping.containsAliases() and not overlapping.isParallelWriteable()
    # Size-1 broadcasts and upsample by 1 are not aliases.
    assert not t.broadcast(1, 0).containsAliases()
    assert not t.upsample(1, 1).containsAliases()
    mixed = poplar.concat([t[0], c])
    assert mixed.containsConstant() and not mixed.containsAliases() and not mixed.isParallelWriteable()
    assert c.containsConstant() and c[2].containsConstant()
    assert not mixed.slice(0, 4).containsConstant()
    assert mixed.slice(3, 5).containsConstant()


def test_intersects_with():
    graph, t = variable([4, 4])
    other = graph.addVariable(poplar.FLOAT, [4], "o")
    assert t.intersectsWith(t)
    assert t[1].intersectsWith(t.transpose()[2])
    assert not t[1].intersectsWith(t[2])
    assert not t.slice(0, 2, 1).intersectsWith(t.slice(2, 4, 1))
    assert t.slice(0, 3, 1).intersectsWith(t.slice(2, 4, 1))
    assert not t.intersectsWith(other)
    assert poplar.concat([t[0], other]).intersectsWith(other[3])
    assert t.reverse(0)[0].intersectsWith(t[3])
    _, foreign = variable([4, 4])
    assert not t.intersectsWith(foreign)


def test_equality_is_view_identity():
    _, t = variable([4, 6])
    assert t == t
    assert t[1] == t[1]
    assert t.transpose().transpose() == t
    assert t.reshape([24]) == t.flatten()
    assert t.slice(0, 4) == t
    assert poplar.concat([t[:2], t[2:]]) == t
    assert t.reverse(0).reverse(0) == t
    assert t[1] != t[2]
    assert t.reshape([6, 4]) != t  # same elements, other shape
    assert t.reinterpret(poplar.INT) != t  # same elements, other type
    assert t.transpose() != t.reshape([6, 4])
    assert t != element_ids(t)
    _, same_shape = variable([4, 6])
    assert t != same_shape


# ---- misuse: the right error class, naming the tensor and the bad argument ---------------------

ERRORS = [
    # (name, shape, op, error class, words the message must contain)
    ("index-too-big", [4, 3], lambda t: t[4], poplar.TensorCreationError, ["4", "dimension 0"]),
    ("index-too-negative", [4, 3], lambda t: t[-5], poplar.TensorCreationError, ["-5"]),
    ("index-dim1", [4, 3], lambda t: t[1, 3], poplar.TensorCreationError, ["3", "dimension 1"]),
    ("index-index", [4, 3], lambda t: t[1][7], poplar.TensorCreationError, ["7"]),
    ("index-scalar", [4], lambda t: t[1][0], poplar.TensorCreationError, ["too many"]),
    ("too-many-indices", [4, 3], lambda t: t[1, 2, 0], poplar.TensorCreationError, ["3"]),
    ("index-float", [4], lambda t: t[1.0], poplar.TensorCreationError, ["1.0"]),
    ("index-bool", [4], lambda t: t[True], poplar.TensorCreationError, ["True"]),
    ("index-list", [4], lambda t: t[[0, 1]], poplar.TensorCreationError, ["[0, 1]"]),
    ("negative-step", [4], lambda t: t[::-1], poplar.TensorCreationError, ["-1"]),
    ("zero-step", [4], lambda t: t[::0], poplar.TensorCreationError, ["0"]),
    ("index-method", [4, 3], lambda t: t.index([1, 5]), poplar.TensorCreationError, ["5"]),
    ("slice-end", [4, 3], lambda t: t.slice(1, 5), poplar.TensorCreationError, ["[1, 5)"]),
    ("slice-reversed", [4, 3], lambda t: t.slice(3, 1), poplar.TensorCreationError, ["[3, 1)"]),
    ("slice-negative", [4, 3], lambda t: t.slice(-1, 2), poplar.TensorCreationError, ["-1"]),
    ("slice-dim", [4, 3], lambda t: t.slice(0, 1, 2), poplar.TensorCreationError, ["2"]),
    ("slice-dim-end", [4, 3], lambda t: t.slice(0, 4, 1), poplar.TensorCreationError, ["[0, 4)", "1"]),
    ("slice-interval", [4, 3], lambda t: t.slice(Interval(2, 6)), poplar.TensorCreationError, ["[2, 6)"]),
    ("slice-no-end", [4, 3], lambda t: t.slice(2), poplar.TensorArgumentError, ["slice end", "None"]),
    ("slice-float", [4, 3], lambda t: t.slice(0.5, 2), poplar.TensorCreationError, ["0.5"]),
    ("slice-multi-end", [4, 3], lambda t: t.slice([0, 0], [2, 4]), poplar.TensorCreationError, ["[0, 4)"]),
    ("slice-multi-lengths", [4, 3], lambda t: t.slice([0, 0], [2]), poplar.TensorCreationError, ["[0, 0]"]),
    ("slice-multi-rank", [4, 3], lambda t: t.slice([0, 0, 0], [1, 1, 1]), poplar.TensorCreationError,
     ["rank 2"]),
    ("dim", [4, 3], lambda t: t.dim(2), poplar.TensorCreationError, ["2"]),
    ("reshape-count", [4, 3], lambda t: t.reshape([5, 2]), poplar.TensorCreationError, ["12", "{5,2}"]),
    ("reshape-negative", [4, 3], lambda t: t.reshape([-4, -3]), poplar.TensorCreationError, ["{-4,-3}"]),
    ("reshapePartial-count", [4, 3], lambda t: t.reshapePartial(0, 1, [3]), poplar.TensorCreationError,
     ["[4]", "[3]"]),
    ("reshapePartial-range", [4, 3], lambda t: t.reshapePartial(1, 3, [3]), poplar.TensorCreationError,
     ["[1, 3)"]),
    ("flatten-range", [4, 3], lambda t: t.flatten(1, 3), poplar.TensorCreationError, ["[1, 3)"]),
    ("flatten-reversed", [4, 3, 2], lambda t: t.flatten(2, 1), poplar.TensorCreationError, ["[2, 1)"]),
    ("dimShuffle-dup", [4, 3, 2], lambda t: t.dimShuffle([0, 0, 1]), poplar.TensorCreationError,
     ["[0, 0, 1]"]),
    ("dimShuffle-short", [4, 3, 2], lambda t: t.dimShuffle([1, 0]), poplar.TensorCreationError, ["[1, 0]"]),
    ("dimShuffle-range", [4, 3], lambda t: t.dimShuffle([0, 2]), poplar.TensorCreationError, ["[0, 2]"]),
    ("dimShufflePartial", [4, 3], lambda t: t.dimShufflePartial([0], [2]), poplar.TensorCreationError,
     ["[0]", "[2]"]),
    ("dimShufflePartial-lengths", [4, 3], lambda t: t.dimShufflePartial([0, 1], [1]),
     poplar.TensorCreationError, ["[0, 1]"]),
    ("dimRoll", [4, 3], lambda t: t.dimRoll(5), poplar.TensorCreationError, ["5"]),
    ("transpose-3d", [4, 3, 2], lambda t: t.transpose(), poplar.TensorCreationError, ["transpose"]),
    ("transpose-1d", [4], lambda t: t.transpose(), poplar.TensorCreationError, ["transpose"]),
    ("expand", [4, 3], lambda t: t.expand([3]), poplar.TensorCreationError, ["[3]"]),
    ("squeeze-non-1", [4, 1], lambda t: t.squeeze([0]), poplar.TensorCreationError, ["dimension 0"]),
    ("squeeze-range", [4, 1], lambda t: t.squeeze([2]), poplar.TensorCreationError, ["dimension 2"]),
    ("squeeze-repeated", [1, 4], lambda t: t.squeeze([0, 0]), poplar.TensorCreationError, ["[0, 0]"]),
    ("broadcast-dim", [4, 3], lambda t: t.broadcast(2, 2), poplar.TensorCreationError, ["2"]),
    ("broadcast-negative", [4, 3], lambda t: t.broadcast(-1, 0), poplar.TensorCreationError, ["-1"]),
    ("upsample-dim", [4, 3], lambda t: t.upsample(2, 3), poplar.TensorCreationError, ["3"]),
    ("upsample-negative", [4, 3], lambda t: t.upsample(-2, 0), poplar.TensorCreationError, ["-2"]),
    ("subSample-zero", [4, 3], lambda t: t.subSample(0, 0), poplar.TensorCreationError, ["0"]),
    ("subSample-dim", [4, 3], lambda t: t.subSample(2, 4), poplar.TensorCreationError, ["4"]),
    ("reverse-dim", [4, 3], lambda t: t.reverse(2), poplar.TensorCreationError, ["2"]),
    ("reverse-negative", [4, 3], lambda t: t.reverse(-1), poplar.TensorCreationError, ["-1"]),
    ("reinterpret-size", [4, 3], lambda t: t.reinterpret(poplar.HALF), poplar.PoplarTypeError,
     ["float", "half"]),
    ("reinterpret-size-char", [4, 3], lambda t: t.reinterpret(poplar.CHAR), poplar.PoplarTypeError,
     ["float", "char"]),
]


@pytest.mark.parametrize("name,shape,op,error,words", ERRORS, ids=[e[0] for e in ERRORS])
def test_misuse_raises(name, shape, op, error, words):
    _, t = variable(shape, name="badtensor")
    with pytest.raises(error) as info:
        op(t)
    assert isinstance(info.value, poplar.PoplarError)
    message = str(info.value)
    assert "badtensor" in message
    for w in words:
        assert w in message, message


def test_reinterpret_same_size_is_allowed():
    _, t = variable([4], poplar.HALF)
    assert t.reinterpret(poplar.SHORT).elementType() == poplar.SHORT
    assert t.reinterpret(poplar.UNSIGNED_SHORT).reinterpret(poplar.HALF) == t
    _, c = variable([4], poplar.UNSIGNED_CHAR)
    assert c.reinterpret(poplar.BOOL).elementType() == poplar.BOOL


CONCAT_ERRORS = [
    ("shape", lambda a, b, h: poplar.concat([a, b.slice(0, 2, 1)]), poplar.TensorCreationError,
     ["{3,4}", "{3,2}"]),
    ("shape-dim1", lambda a, b, h: poplar.concat([a, b[:2]], 1), poplar.TensorCreationError, ["{2,4}"]),
    ("type", lambda a, b, h: poplar.concat([a, h]), poplar.PoplarTypeError, ["half", "float"]),
    ("type-two", lambda a, b, h: poplar.concat(a, h, 0), poplar.PoplarTypeError, ["half"]),
    ("type-1d", lambda a, b, h: poplar.concat([a[0], h[1]]), poplar.PoplarTypeError, ["half", "float"]),
    ("rank", lambda a, b, h: poplar.concat([a, b[0]]), poplar.TensorCreationError, ["rank 1", "rank 2"]),
    ("dim", lambda a, b, h: poplar.concat([a, b], 2), poplar.TensorCreationError, ["dimension 2"]),
    ("empty", lambda a, b, h: poplar.concat([]), poplar.TensorCreationError, ["at least one"]),
    ("scalar", lambda a, b, h: poplar.concat([a[0][0], b[0][0]]), poplar.TensorCreationError, ["rank 0"]),
    ("append-rank", lambda a, b, h: poplar.append(a, b), poplar.TensorCreationError, ["rank"]),
    ("append-shape", lambda a, b, h: poplar.append(a, b[0][:3]), poplar.TensorCreationError, ["{1,3}"]),
]


@pytest.mark.parametrize("name,op,error,words", CONCAT_ERRORS, ids=[c[0] for c in CONCAT_ERRORS])
def test_concat_misuse(name, op, error, words):
    graph, a = variable([3, 4], name="lhs")
    b = graph.addVariable(poplar.FLOAT, [3, 4], "rhs")
    h = graph.addVariable(poplar.HALF, [3, 4], "halfs")
    with pytest.raises(error) as info:
        op(a, b, h)
    message = str(info.value)
    for w in words:
        assert w in message, message
    if name not in ("empty", "dim", "scalar"):
        assert "lhs" in message or "rhs" in message or "halfs" in message


def _small_view(rng, x, y):
    """A random small view of ``x`` or ``y`` (a block, or several blocks after a concat)."""
    t = rng.choice([x, y])
    a = element_ids(t)
    for _ in range(rng.randint(0, 3)):
        d = rng.randrange(t.rank())
        op = rng.choice(["slice", "step", "reverse", "transpose", "concat"])
        n = t.dim(d)
        if op == "slice" and n > 1:
            b = rng.randrange(n)
            e = rng.randint(b + 1, n)
            t, a = t.slice(b, e, d), np.take(a, range(b, e), axis=d)
        elif op == "step" and n > 2:
            t, a = t.subSample(2, d), np.take(a, range(0, n, 2), axis=d)
        elif op == "reverse":
            t, a = t.reverse(d), np.flip(a, d)
        elif op == "transpose" and t.rank() == 2:
            t, a = t.transpose(), a.T
        elif op == "concat":
            t, a = poplar.concat([t, t.reverse(d)], d), np.concatenate([a, np.flip(a, d)], axis=d)
    return t, a


@pytest.mark.parametrize("seed", range(40))
def test_concat_of_few_views_matches_numpy_and_the_box_path(seed):
    """Concatenations of a few views are joined in Python: the elements numpy gives, and one block
    exactly when the numpy path on boxes makes one."""
    rng = random.Random(7000 + seed)
    shape = [rng.randint(1, 4) for _ in range(rng.randint(1, 3))]
    graph, x = variable(shape, name="x")
    y = graph.addVariable(poplar.FLOAT, shape, "y")
    parts, arrays = zip(*[_small_view(rng, x, y) for _ in range(rng.randint(1, 4))])
    d = rng.randrange(len(shape))
    # same shapes but along d: cut every part to the smallest extents elsewhere
    least = [min(p.dim(k) for p in parts) for k in range(len(shape))]
    cut = [p.slice([0] * len(shape), [least[k] if k != d else p.dim(k) for k in range(len(shape))])
           for p in parts]
    want = np.concatenate([a[tuple(slice(0, least[k]) if k != d else slice(None) for k in range(len(shape)))]
                           for a in arrays], axis=d)
    t = poplar.concat(cut, d)
    check(t, want)
    flat = want.reshape(-1)
    assert t.containsAliases() == (np.unique(flat).size != flat.size)
    if len(shape) > 1 and all(p.block is not None for p in cut):
        boxes = bx.concat([bx.block(*p.block[:2], p.shape(), p.block[2]) for p in cut], d,
                          [p.dim(d) for p in cut])
        assert (t.block is not None) == (bx.as_block(boxes, t.shape()) is not None)


@pytest.mark.parametrize("seed", range(10))
def test_indexing_by_integers_and_slices_matches_numpy(seed):
    rng = random.Random(8000 + seed)
    _, t = variable([5, 4, 3])
    a = element_ids(t)
    for _ in range(20):
        key = tuple(rng.choice([rng.randint(-n, n - 1), slice(rng.choice([None, rng.randint(-7, 7)]),
                                                               rng.choice([None, rng.randint(-7, 7)]))])
                    for n in a.shape[:rng.randint(1, 3)])
        check(t[key], a[key])
        check(t[key[0]], a[key[0]])


def test_concat_of_blocks_that_continue_each_other_is_one_block():
    _, t = variable([6, 5])
    for parts, d in (([t[1:2], t[2:4]], 0), ([t[1:2], t[4:5]], 0), ([t[0:1], t[0:1]], 0),
                     ([t.slice(0, 2, 1), t.slice(2, 5, 1)], 1), ([t[3:4].reverse(0), t[0:0], t[2:3]], 0)):
        joined = poplar.concat(parts, d)
        assert joined.block is not None
        check(joined, np.concatenate([element_ids(p) for p in parts], axis=d))
    assert poplar.concat([t[1:2], t[3:5]]).block is None  # steps of 2 rows, then 1
    assert poplar.concat([t.slice(0, 1, 1), t.slice(0, 1, 1)], 1).block is not None  # one column twice


def test_concat_of_aliases_and_constants():
    graph, t = variable([4, 3])
    both = poplar.concat([t[1:2], t[1:2], t[0:1]])
    check(both, element_ids(t)[[1, 1, 0]])
    assert both.containsAliases() and not both.isParallelWriteable()
    spread = poplar.concat([t[2].expand([0]).broadcast(2, 0), t[0:1]], 0)
    check(spread, element_ids(t)[[2, 2, 0]])
    assert spread.containsAliases()
    c = graph.addConstant(poplar.FLOAT, [1, 3], [1.0, 2.0, 3.0], "c")
    mixed = poplar.concat([t[0:1], c])
    check(mixed, np.concatenate([element_ids(t)[0:1], element_ids(c)]))
    assert mixed.containsConstant() and not poplar.concat([t[0:1], t[3:4]]).containsConstant()
    assert poplar.concat([c, c]).containsConstant() and poplar.concat([c[0], c[0]]).containsAliases()


def test_concat_names_are_made_when_asked_for():
    _, t = variable([6, 5], name="img")
    assert poplar.concat([t[0:1], t[3:4]]).name == "concat(img[0:1],img[3:4])"
    assert poplar.concat([t[i] for i in range(5)]).name == "concat(img[0],img[1],img[2],img[3],...)"
    inner = poplar.concat([t[:, :1], t], 1)
    assert poplar.concat([inner, inner], 0).name == "concat(concat(img.[:,:1],img),concat(img.[:,:1],img))"


def test_concat_across_graphs():
    _, a = variable([3])
    _, b = variable([3])
    with pytest.raises(poplar.TensorCreationError, match="another graph"):
        poplar.concat([a, b])


@pytest.mark.parametrize("shape", [[-1], [3, -2], [0, -1]])
def test_negative_variable_shape(shape):
    _, graph = make_graph(4)
    with pytest.raises(poplar.TensorCreationError, match="negative") as info:
        graph.addVariable(poplar.FLOAT, shape, "neg")
    assert "neg" in str(info.value)


def test_zero_sized_tensors():
    _, t = variable([0, 3])
    assert t.numElements() == 0 and t.shape() == [0, 3]
    assert t.getContiguousRegions() == []
    assert not t.containsAliases()
    check(t.transpose(), element_ids(t).T)
    check(t.reshape([3, 0]), element_ids(t).reshape(3, 0))


def test_interval():
    iv = Interval(2, 7)
    assert iv.begin() == 2 and iv.end() == 7 and iv.size() == 5
    assert iv == (2, 7)
    assert Interval(1, 2) < Interval(1, 3)
