"""popops topK, topKWithPermutation, topKKeyValue and createTopKInput against numpy.

The reference is a stable sort: NaN counts as larger than every number, and equal keys are
chosen and written in index order whatever the SortOrder.
"""

import numpy as np
import pytest
from support import spread

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import popops
from poplibs_py.poputil import PoplibsError

ORDERS = [popops.SortOrder.NONE, popops.SortOrder.ASCENDING, popops.SortOrder.DESCENDING]
TYPES = [np.float32, np.float16, np.int32, np.uint32]


def modes_and(values, native):
    """(mode, value) pairs: every value in the interpreter, those of ``native`` compiled too (each
    type compiles its own kernels: the suite keeps the compilations it needs)."""
    return [("native", v) for v in native] + [("interpreter", v) for v in values]




def sample(shape, dtype, seed=0):
    """Many ties, negative numbers and (for floats) NaN, infinities and zeros of both signs."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-6, 7, size=shape)
    if np.issubdtype(dtype, np.unsignedinteger):
        a = a + 6
    a = a.astype(dtype)
    if np.issubdtype(dtype, np.floating):
        flat = a.reshape(-1)
        flat[::7] = np.nan
        flat[3::11] = -np.inf
        flat[4::17] = np.inf
        flat[5::13] = 0.5
        flat[6::19] = -0.0
    return a


def stable_order(a, descending):
    """Indices sorting each row of ``a`` (NaN largest), equal keys in index order."""
    if not descending:
        return np.argsort(a, axis=-1, kind="stable")  # NaN last
    n = a.shape[-1]
    # ascending on the reversed rows puts equal keys in reverse index order and NaN last:
    # reversed back, keys descend, NaN first, equal keys in index order
    return n - 1 - np.argsort(a[..., ::-1], axis=-1, kind="stable")[..., ::-1]


def ref_topk(a, k, largest, order):
    """The indices of the top k of each row of ``a``, in ``order``."""
    top = np.sort(stable_order(a, largest)[..., :k], axis=-1)  # the chosen, in index order
    descending = largest if order == popops.SortOrder.NONE else order == popops.SortOrder.DESCENDING
    return np.take_along_axis(top, stable_order(np.take_along_axis(a, top, -1), descending), -1)


def check_top_k(h, a, t, params):
    values, indices = popops.topKWithPermutation(h.graph, h.seq, t, params)
    only = popops.topK(h.graph, h.seq, t, params)
    got_v, got_i, got_only = h.run(values, indices, only)
    idx = ref_topk(a, params.k, params.largest, params.sortOrder)
    np.testing.assert_array_equal(got_i, idx)
    np.testing.assert_array_equal(got_v, np.take_along_axis(a, idx, -1))
    np.testing.assert_array_equal(got_only, got_v)


# compiled for three key types (unsigned int only in the interpreter: its kernel is int's with
# unsigned compares, which the vertex-level tests compile in other vertices)
@pytest.mark.parametrize(("mode", "dtype"), modes_and(TYPES, [np.float32, np.float16, np.int32]))
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("largest", [True, False])
def test_top_k_of_short_rows(harness, dtype, order, largest):
    # a worker per row (rows split between tiles), one stage
    a = sample((6, 16), dtype, seed=order.value)
    h = harness(4)
    check_top_k(h, a, h.tensor(a, mapping=spread), popops.TopKParams(7, largest, order))
    stages = [s["name"] for s in h.engine.getProfile()["execution"]["steps"] if s["type"] == "OnTileExecute"]
    assert stages == ["topKWithPermutation/stage0", "topK/stage0"]


@pytest.mark.parametrize(("mode", "dtype"), modes_and(TYPES, [np.float32, np.float16]))
@pytest.mark.parametrize(("shape", "k", "largest", "order"), [
    ((1, 1000), 20, True, popops.SortOrder.NONE),        # 36 chunks: merges of 36, 18, 9 (one waits), ...
    ((2, 500), 200, False, popops.SortOrder.DESCENDING),  # chunks shorter than k
    ((2, 2, 150), 5, True, popops.SortOrder.ASCENDING),   # rank 3, 2 chunks a row
])
def test_top_k_of_long_rows_merges_chunks(harness, dtype, shape, k, largest, order):
    a = sample(shape, dtype, seed=k)
    h = harness(6)
    check_top_k(h, a, h.tensor(a), popops.TopKParams(k, largest, order))
    stages = [s["name"] for s in h.engine.getProfile()["execution"]["steps"] if s["type"] == "OnTileExecute"]
    assert "topKWithPermutation/stage1" in stages


@pytest.mark.parametrize(("k", "order"), [(1, popops.SortOrder.NONE), (300, popops.SortOrder.ASCENDING),
                                          (300, popops.SortOrder.NONE)])
def test_k_of_one_and_of_the_whole_row(harness, k, order):
    a = sample((2, 300), np.float32, seed=k)
    h = harness(5)
    check_top_k(h, a, h.tensor(a), popops.TopKParams(k, True, order))


# in the interpreter: compiled, on one tile, it would build a kernel of its own (a lone vertex),
# and the vertex-level tests check the order of equal keys on the compiled TopK vertices
@pytest.mark.parametrize("mode", ["interpreter"])
def test_equal_keys_keep_their_index_order_in_every_order(harness):
    a = np.array([[1, 2, 2, 3, 2, 0]], np.float32)
    h = harness(1)
    t = h.tensor(a)
    params = [popops.TopKParams(4, True, o) for o in ORDERS]
    outs = [popops.topKWithPermutation(h.graph, h.seq, t, p)[1] for p in params]
    got = h.run(*outs)
    np.testing.assert_array_equal(got[0], [[3, 1, 2, 4]])
    np.testing.assert_array_equal(got[1], [[1, 2, 4, 3]])
    np.testing.assert_array_equal(got[2], [[3, 1, 2, 4]])


def test_k_of_zero_gives_empty_results(harness):
    h = harness(2)
    t = h.tensor(np.zeros((3, 4), np.float32))
    values, indices = popops.topKWithPermutation(h.graph, h.seq, t, popops.TopKParams(0))
    ints = h.tensor(np.zeros((3, 4), np.int32))
    keys, vals = popops.topKKeyValue(h.graph, h.seq, t, ints, popops.TopKParams(0))
    assert values.shape() == indices.shape() == keys.shape() == vals.shape() == [3, 0]
    assert (indices.elementType(), vals.elementType()) == (poplar.UNSIGNED_INT, poplar.INT)


KEY_VALUE_TYPES = [(np.float32, np.int32), (np.float16, np.float32), (np.int32, np.float16),
                   (np.uint32, np.uint32)]


@pytest.mark.parametrize(("mode", "types"), modes_and(KEY_VALUE_TYPES, KEY_VALUE_TYPES[:1]))
@pytest.mark.parametrize(("shape", "k", "order"), [((4, 37), 6, popops.SortOrder.DESCENDING),
                                                   ((1, 700), 40, popops.SortOrder.ASCENDING)])
def test_top_k_key_value(harness, types, shape, k, order):
    ktype, vtype = types
    keys = sample(shape, ktype, seed=k)
    values = (np.arange(np.prod(shape)).reshape(shape) * 3 % 1000).astype(vtype)
    h = harness(4)
    kt, vt = h.tensor(keys, mapping=spread), h.tensor(values)
    outs = []
    for largest in (True, False):
        params = popops.TopKParams(k, largest, order)
        top_keys, top_values = popops.topKKeyValue(h.graph, h.seq, kt, vt, params)
        assert top_keys.shape() == top_values.shape() == [shape[0], k]
        assert top_values.elementType() == vt.elementType()
        outs += [top_keys, top_values]
    *got, kk, vv = h.run(*outs, kt, vt)
    for largest, got_k, got_v in zip((True, False), got[0::2], got[1::2]):
        idx = ref_topk(keys, k, largest, order)
        np.testing.assert_array_equal(got_k, np.take_along_axis(keys, idx, -1))
        np.testing.assert_array_equal(got_v, np.take_along_axis(values, idx, -1))
    np.testing.assert_array_equal(kk, keys)  # the inputs are left as they were
    np.testing.assert_array_equal(vv, values)


@pytest.mark.parametrize("mode", ["native"])  # a whole IPU: the interpreter would take minutes
@pytest.mark.parametrize(("op", "mapping"), [("topKWithPermutation", "linear"), ("topKKeyValue", "linear"),
                                             ("topKWithPermutation", 5)])
def test_a_row_of_100000_is_spread_over_the_tiles(harness, op, mapping):
    a = np.random.default_rng(7).standard_normal(100_000).astype(np.float32)
    a[::1000] = 3.0  # ties among the largest
    h = harness(1472)
    t = h.tensor(a, mapping=mapping)
    params = popops.TopKParams(50, True, popops.SortOrder.ASCENDING, stableSort=True)
    if op == "topKWithPermutation":
        values, second = popops.topKWithPermutation(h.graph, h.seq, t, params)
        want = ref_topk(a, 50, True, params.sortOrder)
    else:
        extra = (np.arange(a.size) % 1000).astype(np.int32)
        values, second = popops.topKKeyValue(h.graph, h.seq, t, h.tensor(extra), params)
        want = extra[ref_topk(a, 50, True, params.sortOrder)]
    got_v, got_2 = h.run(values, second)
    np.testing.assert_array_equal(got_2, want)
    np.testing.assert_array_equal(got_v, np.sort(a[np.argsort(-a, kind="stable")[:50]]))
    profile = h.engine.getProfile()
    memory = np.array([tile["memory"]["total"] for tile in profile["compilation"]["tiles"]])
    if mapping == 5:  # the row's tile holds the row (400 kB) and its share of the work
        assert memory[5] < a.nbytes + 16 * 1024
        memory[5] = 0
    assert memory.max() < 16 * 1024  # no tile holds a copy of the row or scratch the size of it
    compute = np.array(profile["execution"]["cyclesByTile"]["compute"])
    assert (compute > 0).sum() > 1400  # nearly every tile takes part


def test_create_top_k_input_puts_each_chunk_on_its_own_tile(harness):
    h = harness(8)
    params = popops.TopKParams(10, False)
    t = popops.createTopKInput(h.graph, poplar.HALF, [2, 400], params, "input")
    assert t.shape() == [2, 400] and t.elementType() == poplar.HALF
    mapping = h.graph.getTileMapping(t)
    assert all(sum(iv.size() for iv in intervals) == 100 for intervals in mapping)
    a = sample((2, 400), np.float16, seed=3)
    h.write(t, a)
    check_top_k(h, a, t, params)
    steps = {s["name"]: s for s in h.engine.getProfile()["execution"]["steps"]}
    assert steps["topKWithPermutation/stage0"]["exchange"] == 0  # each chunk's vertex on its tile


def test_bad_arguments_raise_naming_them(harness):
    h = harness(2)
    t = h.tensor(np.zeros((3, 4), np.float32), name="t")
    with pytest.raises(PoplibsError, match=r"k = 5 is larger than the innermost dim \(4\) of tensor 't'"):
        popops.topK(h.graph, h.seq, t, popops.TopKParams(5))
    with pytest.raises(PoplibsError, match=r"'v' \[4, 3\] differ in shape"):
        popops.topKKeyValue(h.graph, h.seq, t, h.tensor(np.zeros((4, 3), np.int32), name="v"),
                            popops.TopKParams(2))
    scalar = h.graph.addVariable(poplar.FLOAT, [], "s")
    with pytest.raises(PoplibsError, match="tensor 's' must have at least one dimension"):
        popops.topKWithPermutation(h.graph, h.seq, scalar, popops.TopKParams(0))
    flags = h.graph.addVariable(poplar.BOOL, [3, 4], "flags")
    with pytest.raises(PoplibsError, match="keys 'flags' is bool"):
        popops.topKKeyValue(h.graph, h.seq, flags, t, popops.TopKParams(1))
    shorts = h.graph.addVariable(poplar.SHORT, [3, 4], "shorts")
    with pytest.raises(PoplibsError, match="values 'shorts' is short"):
        popops.topKKeyValue(h.graph, h.seq, t, shorts, popops.TopKParams(1))
    with pytest.raises(PoplibsError, match="params must be a TopKParams"):
        popops.topK(h.graph, h.seq, t, 2)
    with pytest.raises(PoplibsError, match=r"params\.k must be an integer of at least 0, got -1"):
        popops.topK(h.graph, h.seq, t, popops.TopKParams(-1))
    with pytest.raises(PoplibsError, match=r"params\.sortOrder must be a SortOrder"):
        popops.topK(h.graph, h.seq, t, popops.TopKParams(1, True, "ASCENDING"))
    with pytest.raises(PoplibsError, match="prog must be a program Sequence"):
        popops.topK(h.graph, prog.Sequence().add, t, popops.TopKParams(1))
    with pytest.raises(PoplibsError, match="createTopKInput: type bool"):
        popops.createTopKInput(h.graph, poplar.BOOL, [3, 4], popops.TopKParams(1))
    with pytest.raises(PoplibsError, match=r"params\.k = 9 is larger"):
        popops.createTopKInput(h.graph, poplar.FLOAT, [3, 4], popops.TopKParams(9))
