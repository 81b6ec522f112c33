"""popops allTrue, hasNaN and hasNaNOrInf against numpy (0-D BOOL results on the device)."""

import numpy as np
import pytest

from poplibs_py import popops
from poplibs_py.poputil import PoplibsError


def test_all_true(harness):
    h = harness(4)
    cases = [np.ones((3, 50), bool), np.ones(7, bool), np.ones((2, 2), bool)]
    cases[1][6] = False
    cases[2][1, 0] = False
    outs = [popops.allTrue(h.graph, h.tensor(a), h.seq) for a in cases]
    got = h.run(*outs)
    assert [o.shape() for o in outs] == [[], [], []]
    assert [bool(g) for g in got] == [bool(a.all()) for a in cases]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_has_nan_and_inf(harness, dtype):
    h = harness(6)
    clean = np.linspace(-3, 3, 200).astype(dtype)
    nan = clean.copy()
    nan[137] = np.nan
    inf = clean.copy()
    inf[3] = -np.inf
    arrays = [clean, nan, inf]
    ts = [h.tensor(a.reshape(20, 10)) for a in arrays]
    outs = [popops.hasNaN(h.graph, t, h.seq) for t in ts]
    outs += [popops.hasNaNOrInf(h.graph, t, h.seq) for t in ts]
    got = [bool(g) for g in h.run(*outs)]
    assert got == [False, True, False, False, True, True]


def test_empty_tensors(harness):
    h = harness(2)
    e = h.graph.addVariable("float", [0, 3], "e")
    b = h.graph.addVariable("bool", [0], "b")
    got = h.run(popops.allTrue(h.graph, b, h.seq), popops.hasNaN(h.graph, e, h.seq))
    assert [bool(g) for g in got] == [True, False]


def test_bad_types(harness):
    h = harness(2)
    f = h.tensor(np.zeros(4, np.float32), name="floats")
    i = h.tensor(np.zeros(4, np.int32), name="ints")
    with pytest.raises(PoplibsError, match="'floats' must be BOOL"):
        popops.allTrue(h.graph, f, h.seq)
    with pytest.raises(PoplibsError, match="'ints' must be FLOAT or HALF"):
        popops.hasNaN(h.graph, i, h.seq)
    with pytest.raises(PoplibsError, match="must be a tensor"):
        popops.hasNaNOrInf(h.graph, [1.0], h.seq)
