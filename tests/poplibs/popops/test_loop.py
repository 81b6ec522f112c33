"""popops countedLoop: the induction variable counts on the device (PopLibs' LoopTest cases)."""

import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import popops
from poplibs_py.poputil import PoplibsError


def _sum_loop(h, *args):
    """acc += counter in every pass; returns acc and the counter seen in the last pass."""
    acc = h.graph.addVariable(poplar.UNSIGNED_INT, [1], "acc")
    last = h.graph.addVariable(poplar.UNSIGNED_INT, [1], "last")
    h.graph.setTileMapping(acc, 1)
    h.graph.setTileMapping(last, 1)
    zero = h.graph.addConstant(poplar.UNSIGNED_INT, [1], 0, "zero")
    h.graph.setTileMapping(zero, 1)
    h.seq.add(prog.Copy(zero, acc))

    def body(i):
        s = prog.Sequence()
        popops.addInPlace(h.graph, acc, i, s)
        s.add(prog.Copy(i, last))
        return s

    h.seq.add(popops.countedLoop(h.graph, *args, body))
    return acc, last


@pytest.mark.parametrize(("args", "total", "last"), [
    ((1, 10, 1), 45, 9), ((1, 10, 2), 25, 9), ((7, 23, 4), 7 + 11 + 15 + 19, 19), ((5,), 10, 4),
])
def test_counted_loop_sums(harness, args, total, last):
    h = harness(2)
    acc, seen = _sum_loop(h, *args)
    got, got_last = h.run(acc, seen)
    assert int(got[0]) == total and int(got_last[0]) == last


def test_counter_is_on_tile_0_and_bad_arguments(harness):
    h = harness(2)
    seen = []
    popops.countedLoop(h.graph, 3, lambda i: seen.append(i) or prog.Sequence())
    assert seen[0].shape() == [1] and seen[0].elementType() == poplar.UNSIGNED_INT
    assert h.graph.getTileMapping(seen[0])[0]
    with pytest.raises(PoplibsError, match="step must be greater than zero"):
        popops.countedLoop(h.graph, 0, 4, 0, lambda i: prog.Sequence())
    with pytest.raises(PoplibsError, match=r"begin \(4\) must be less than end \(4\)"):
        popops.countedLoop(h.graph, 4, 4, 1, lambda i: prog.Sequence())
    with pytest.raises(PoplibsError, match="must return a Program"):
        popops.countedLoop(h.graph, 2, lambda i: None)
    with pytest.raises(PoplibsError, match="count must be a non-negative integer"):
        popops.countedLoop(h.graph, -1, lambda i: prog.Sequence())
