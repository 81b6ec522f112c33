"""popops sort and sortKeyValue against numpy (stable, NaN last)."""

import numpy as np
import pytest
from support import spread

from poplibs_py import popops
from poplibs_py.poputil import PoplibsError


def sample(shape, dtype, seed=0):
    """Duplicates, negative numbers and (for floats) NaN and infinities."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-6, 7, size=shape)
    if np.issubdtype(dtype, np.unsignedinteger):
        a = a + 6
    a = a.astype(dtype)
    if np.issubdtype(dtype, np.floating):
        flat = a.reshape(-1)
        flat[::7] = np.nan
        flat[3::11] = -np.inf
        flat[5::13] = 0.5
    return a


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.uint32])
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_sort_matches_numpy(harness, dtype, dim):
    a = sample((5, 9, 4), dtype, seed=dim)
    h = harness(6)
    t = h.tensor(a, mapping=spread)
    out = popops.sort(h.graph, t, dim, h.seq)
    got, unchanged = h.run(out, t)
    np.testing.assert_array_equal(got, np.sort(a, axis=dim))
    np.testing.assert_array_equal(unchanged, a)


def test_sort_in_place_long_row(harness):
    a = np.random.default_rng(5).standard_normal(1000).astype(np.float32)
    h = harness(4)
    t = h.tensor(a)
    popops.sortInPlace(h.graph, t, 0, h.seq)
    (got,) = h.run(t)
    np.testing.assert_array_equal(got, np.sort(a))


@pytest.mark.parametrize(("ktype", "vtype"), [(np.float32, np.int32), (np.int32, np.float16),
                                              (np.float16, np.uint32)])
def test_sort_key_value_is_stable(harness, ktype, vtype):
    keys = sample((6, 13), ktype, seed=3)
    values = np.arange(78).reshape(6, 13).astype(vtype)
    h = harness(5)
    k = h.tensor(keys, mapping=spread)
    v = h.tensor(values)
    out = popops.sortKeyValue(h.graph, k, v, 1, h.seq)
    k2, v2 = h.tensor(keys.T.copy()), h.tensor(values.T.copy())
    popops.sortKeyValueInPlace(h.graph, k2, v2, 0, h.seq)
    got, kk, sk, sv = h.run(out, k, k2, v2)
    order = np.argsort(keys, axis=1, kind="stable")
    np.testing.assert_array_equal(got, np.take_along_axis(values, order, 1))
    np.testing.assert_array_equal(kk, keys)
    np.testing.assert_array_equal(sk, np.take_along_axis(keys, order, 1).T)
    np.testing.assert_array_equal(sv, np.take_along_axis(values, order, 1).T)


def test_misuse_raises(harness):
    h = harness(2)
    t = h.tensor(np.zeros((3, 4), np.float32))
    with pytest.raises(PoplibsError, match="out of range"):
        popops.sort(h.graph, t, 2, h.seq)
    with pytest.raises(PoplibsError, match="parallel"):
        popops.sortInPlace(h.graph, t.broadcast(2, 0), 1, h.seq)
    with pytest.raises(PoplibsError, match="shape"):
        popops.sortKeyValue(h.graph, t, h.tensor(np.zeros((4, 3), np.float32)), 1, h.seq)
    with pytest.raises(PoplibsError, match="overlap"):
        popops.sortKeyValueInPlace(h.graph, t, t, 1, h.seq)
