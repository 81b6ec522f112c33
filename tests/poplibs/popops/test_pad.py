"""popops pad against numpy's pad: constant (number or tensor), EDGE and REFLECT, truncation,
and where the padding constants are mapped."""

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import popops
from poplibs_py.popops import padding
from poplibs_py.poputil import PoplibsError

A = np.arange(1, 13, dtype=np.float32).reshape(3, 4)


def _read(h, view):
    """Copy the padded view into a fresh variable (a view may alias) and read it back."""
    out = h.graph.clone(view.elementType(), view, "copy") if not view.containsAliases() else None
    if out is None:
        out = h.graph.addVariable(view.elementType(), view.shape(), "copy")
        h.graph.setTileMapping(out, 0)
    h.seq.add(prog.Copy(view, out))
    return out


def test_constant_number_and_tensor(harness):
    h = harness(4)
    t = h.tensor(A)
    v = h.graph.addConstant(poplar.FLOAT, [1], [-7.5], "v")
    h.graph.setTileMapping(v, 2)
    outs = [popops.pad(h.graph, t, [1, 0], [2, 3], 0.5),
            popops.pad(h.graph, t, [0, 2], [1, 0], v),
            popops.pad(h.graph, t, [1, -1], [-2, 1]),              # truncation
            popops.pad(h.graph, t, 2, 1, 1, val=9.0)]              # one dim
    got = h.run(*[_read(h, o) for o in outs])
    np.testing.assert_array_equal(got[0], np.pad(A, [(1, 2), (0, 3)], constant_values=0.5))
    np.testing.assert_array_equal(got[1], np.pad(A, [(0, 1), (2, 0)], constant_values=-7.5))
    np.testing.assert_array_equal(got[2], np.pad(A[:1, 1:], [(1, 0), (0, 1)]))
    np.testing.assert_array_equal(got[3], np.pad(A, [(0, 0), (2, 1)], constant_values=9))


@pytest.mark.parametrize("kind", [padding.Type.EDGE, padding.Type.REFLECT])
def test_edge_and_reflect_are_views(harness, kind):
    h = harness(4)
    a = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    t = h.tensor(a)
    lower, upper = [1, 2, 0], [0, 1, 3]
    view = popops.pad(t, lower, upper, kind)
    also = popops.pad(h.graph, t, lower, upper, kind)
    assert view.shape() == [3, 6, 7] and not view.containsConstant()
    (got, got2) = h.run(_read(h, view), _read(h, also))
    want = np.pad(a, list(zip(lower, upper)), mode=kind.value)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got2, want)


def test_mapping_methods(harness):
    h = harness(4)
    t = h.graph.addVariable(poplar.FLOAT, [4, 2], "t")
    for r in range(4):
        h.graph.setTileMapping(t[r], r)
    zero = popops.pad(h.graph, t, [0, 1], [0, 2], 0.0)
    edge = popops.pad(h.graph, t, [0, 1], [0, 2], 0.0, padding.MappingMethod.EDGE)
    tiles_zero = [[tile for tile, ivs in enumerate(h.graph.getTileMapping(zero[r])) if ivs] for r in range(4)]
    tiles_edge = [[tile for tile, ivs in enumerate(h.graph.getTileMapping(edge[r])) if ivs] for r in range(4)]
    assert tiles_zero == [[0], [0, 1], [0, 2], [0, 3]]
    assert tiles_edge == [[0], [1], [2], [3]]       # each row's padding beside the row
    none = popops.pad(h.graph, t, [1, 0], [0, 0], 0.0, padding.MappingMethod.NONE)
    assert h.graph.getTileMapping(none.slice(0, 1), False) == [[]] * 4


def test_bad_arguments(harness):
    h = harness(2)
    t = h.tensor(A, name="a")
    with pytest.raises(PoplibsError, match="one entry per dimension of tensor 'a'"):
        popops.pad(h.graph, t, [1], [1])
    with pytest.raises(PoplibsError, match=r"REFLECT padding .* tensor 'a'"):
        popops.pad(t, [3, 0], [0, 0], padding.Type.REFLECT)
    with pytest.raises(PoplibsError, match="truncates more than"):
        popops.pad(h.graph, t, [-2, 0], [-2, 0])
    with pytest.raises(PoplibsError, match=r"needs a padding\.Type"):
        popops.pad(t, [1, 1], [1, 1])
    i = h.graph.addConstant(poplar.INT, [], 1, "i")
    with pytest.raises(PoplibsError, match="padding value tensor 'i'"):
        popops.pad(h.graph, t, [1, 1], [1, 1], i)
    with pytest.raises(PoplibsError, match="must be a number"):
        popops.pad(h.graph, t, [1, 1], [1, 1], "zero")
