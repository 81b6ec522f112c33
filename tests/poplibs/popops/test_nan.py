"""NaN in max and min, element-wise and in reductions: as numpy's maximum/minimum and max/min
(NaN wins), whatever the argument order, in both codelet modes."""

from __future__ import annotations

import numpy as np
import pytest

from poplibs_py import popops


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_max_and_min_propagate_nan_in_either_argument(harness, dtype):
    h = harness()
    a = np.array([np.nan, 1, np.nan, 2, -0.5, np.inf], dtype)
    b = np.array([1, np.nan, np.nan, 1, np.nan, 3], dtype)
    ta, tb = h.tensor(a), h.tensor(b)
    outs = [popops.max(h.graph, ta, tb, h.seq), popops.max(h.graph, tb, ta, h.seq),
            popops.min(h.graph, ta, tb, h.seq), popops.min(h.graph, tb, ta, h.seq)]
    got = h.run(*outs)
    for value, want in zip(got, [np.maximum(a, b), np.maximum(b, a), np.minimum(a, b), np.minimum(b, a)]):
        np.testing.assert_array_equal(value, want)


@pytest.mark.parametrize("position", [0, 5, 999])
@pytest.mark.parametrize("op", [popops.Operation.MAX, popops.Operation.MIN])
def test_reductions_keep_a_nan_wherever_it_is(harness, op, position):
    h = harness()
    x = np.random.default_rng(position).standard_normal((4, 1000)).astype(np.float32)
    x[1, position] = np.nan
    t = h.tensor(x)
    (rows,) = h.run(popops.reduce(h.graph, t, [1], op, h.seq))
    reference = np.max(x, axis=1) if op is popops.Operation.MAX else np.min(x, axis=1)
    np.testing.assert_array_equal(rows, reference)
    assert np.isnan(rows[1]) and not np.isnan(rows[[0, 2, 3]]).any()
