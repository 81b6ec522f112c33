"""popops countedLoop and countedForLoop: the counter counts on the device (PopLibs' LoopTest cases)."""

import numpy as np
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


def _for_loop(h, type_, initial, limit, step, own_count=True):
    """countedForLoop whose body adds the count to ``acc`` and 1 to ``passes`` (or only counts
    passes with the loop's own counter); returns acc, passes, count (None for the loop's own)."""
    acc = h.graph.addVariable(type_, [1], "acc")
    passes = h.graph.addVariable(poplar.UNSIGNED_INT, [1], "passes")
    one = h.graph.addConstant(poplar.UNSIGNED_INT, [1], 1, "one")
    zero = h.graph.addConstant(type_, [1], 0, "z")
    zero_u = h.graph.addConstant(poplar.UNSIGNED_INT, [1], 0, "zu")
    for t in (acc, passes, one, zero, zero_u):
        h.graph.setTileMapping(t, 1)
    h.seq.add(prog.Sequence([prog.Copy(zero, acc), prog.Copy(zero_u, passes)]))
    t_limit = h.tensor(np.array(limit, type_.dtype), name="limit", mapping=1)
    body = prog.Sequence()
    count = None
    if own_count:
        count = h.graph.addVariable(type_, [1], "count")
        h.graph.setTileMapping(count, 1)
        popops.addInPlace(h.graph, acc, count, body)
    popops.addInPlace(h.graph, passes, one, body)
    args = ([count] if own_count else []) + [initial, t_limit, step, body]
    h.seq.add(popops.countedForLoop(h.graph, *args))
    return acc, passes, count


@pytest.mark.parametrize(("type_", "initial", "limit", "step", "total", "n"), [
    (poplar.UNSIGNED_INT, 0, 10, 1, 45, 10), (poplar.UNSIGNED_INT, 3, 15, 4, 3 + 7 + 11, 3),
    (poplar.INT, -4, 2, 2, -4 - 2 + 0, 3), (poplar.INT, 5, -1, -2, 5 + 3 + 1, 3),
    (poplar.UNSIGNED_INT, 4, 4, 1, 0, 0),
])
def test_counted_for_loop_counts_on_the_device(harness, type_, initial, limit, step, total, n):
    h = harness(2)
    acc, passes, count = _for_loop(h, type_, initial, limit, step)
    got, got_n, got_count = h.run(acc, passes, count)
    assert (int(got[0]), int(got_n[0]), int(got_count[0])) == (total, n, limit)


def test_counted_for_loop_limit_is_read_at_run_time(harness):
    h = harness(2)
    _, passes, _ = _for_loop(h, poplar.INT, 0, 7, 1, own_count=False)
    (got,) = h.run(passes)
    assert int(got[0]) == 7
    h.engine.writeTensor("limit", np.array(3, np.int32))
    h.engine.run()
    assert int(h.engine.readTensor("out0")[0]) == 3


def test_counted_for_loop_bad_arguments(harness):
    h = harness(2)
    lim = h.tensor(np.array(4, np.int32), name="lim")
    cnt = h.tensor(np.array(0, np.uint32), name="cnt")
    with pytest.raises(PoplibsError, match=r"count 'cnt' .* and countLimit 'lim' .* must have the same type"):
        popops.countedForLoop(h.graph, cnt, 0, lim, 1, prog.Sequence())
    with pytest.raises(PoplibsError, match="countLimit 'f' must be INT or UNSIGNED_INT"):
        popops.countedForLoop(h.graph, 0, h.tensor(np.array(4, np.float32), name="f"), 1, prog.Sequence())
    with pytest.raises(PoplibsError, match="body must be a Program"):
        popops.countedForLoop(h.graph, 0, lim, 1, lambda: None)
    with pytest.raises(PoplibsError, match="countStep must be an integer"):
        popops.countedForLoop(h.graph, 0, lim, 1.5, prog.Sequence())
    with pytest.raises(PoplibsError, match="countLimit 'v' must have one element"):
        popops.countedForLoop(h.graph, 0, h.tensor(np.zeros(2, np.int32), name="v"), 1, prog.Sequence())
