"""Runs and interval maps against per-element references."""

from __future__ import annotations

import numpy as np
import pytest

from poplar_py.regions.arrays import first_alike, first_equal, paint, union, union_grouped, unique_sorted
from poplar_py.regions.interval_map import IntervalMap
from poplar_py.regions.runs import Runs, arithmetic_groups


def random_runs(rng: np.random.Generator, n: int, strides=(-3, -1, 0, 1, 1, 1, 2, 5)) -> Runs:
    var = rng.integers(0, 3, n)
    count = rng.integers(1, 6, n)
    stride = rng.choice(strides, n)
    offset = rng.integers(0, 40, n) + np.where(stride < 0, -stride * (count - 1), 0)
    return Runs.make(var, offset, count, stride)


def elements(runs: Runs) -> list[tuple[int, int]]:
    var, offset = runs.elements()
    return list(zip(var.tolist(), offset.tolist()))


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("n", [3, 40])  # the one-by-one path for few runs, arrays for many
def test_merged_keeps_elements_and_joins_arithmetic_sequences(seed, n):
    rng = np.random.default_rng(seed)
    runs = random_runs(rng, n)
    merged = runs.merged()
    assert elements(merged) == elements(runs)
    assert len(merged) <= len(runs)
    assert (merged.stride[merged.count == 1] == 1).all()
    # Any arithmetic sequence of one variable, however it is cut, becomes one run.
    start, step, total = int(rng.integers(0, 50)), int(rng.integers(-3, 4)), int(rng.integers(2, 30))
    cuts = np.sort(rng.choice(np.arange(1, total), size=min(n, total - 1) // 2, replace=False))
    bounds = np.concatenate(([0], cuts, [total]))
    pieces = Runs.make(np.zeros(bounds.size - 1), start + bounds[:-1] * step + 100, np.diff(bounds),
                       np.full(bounds.size - 1, step))
    assert len(pieces.merged()) == 1


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("n", [3, 40])
def test_take_is_a_slice_of_the_elements(seed, n):
    rng = np.random.default_rng(seed)
    runs = random_runs(rng, n).merged()
    every = elements(runs)
    for _ in range(20):
        b = int(rng.integers(0, len(every) + 1))
        e = int(rng.integers(b, len(every) + 1))
        assert elements(runs.take(b, e)) == every[b:e]
    begin = np.sort(rng.integers(0, len(every), 6))
    end = np.minimum(begin + rng.integers(0, 9, 6), len(every))
    taken, owner = runs.take_ranges(begin, end)
    expected = [x for b, e in zip(begin.tolist(), end.tolist()) for x in every[b:e]]
    assert elements(taken) == expected
    sizes = np.bincount(owner, weights=taken.count, minlength=begin.size)
    np.testing.assert_array_equal(sizes, end - begin)


@pytest.mark.parametrize("seed", range(10))
def test_unit_intervals_cover_the_elements(seed):
    rng = np.random.default_rng(seed)
    runs = random_runs(rng, 30)
    bases = np.array([0, 1000, 2000])
    lo, hi, owner = runs.unit_intervals(bases)
    got = sorted(g for a, b in zip(lo.tolist(), hi.tolist()) for g in range(a, b))
    var, offset = runs.elements()
    run_of = np.repeat(np.arange(len(runs)), runs.count)
    # every element once per run (a broadcast run's repeated element once)
    expected = sorted({(int(k), int(g)) for k, g in zip(run_of, bases[var] + offset)})
    assert got == sorted(g for _, g in expected)
    assert (np.diff(owner) >= 0).all()


@pytest.mark.parametrize("seed", range(10))
def test_union_paint_and_unique(seed):
    rng = np.random.default_rng(seed)
    lo = rng.integers(0, 100, 40)
    hi = lo + rng.integers(0, 10, 40)
    ulo, uhi = union(lo, hi)
    covered = np.zeros(120, bool)
    for a, b in zip(lo, hi):
        covered[a:b] = True
    expected = np.zeros(120, bool)
    for a, b in zip(ulo, uhi):
        assert not expected[a:b].any()  # disjoint
        expected[a:b] = True
    np.testing.assert_array_equal(covered, expected)
    assert (ulo[1:] > uhi[:-1]).all()  # touching intervals are joined
    # union within groups
    group = rng.integers(0, 3, 40)
    g, glo, ghi = union_grouped(group, lo, hi)
    for k in range(3):
        mine = np.zeros(120, bool)
        for a, b in zip(lo[group == k], hi[group == k]):
            mine[a:b] = True
        theirs = np.zeros(120, bool)
        for a, b in zip(glo[g == k], ghi[g == k]):
            theirs[a:b] = True
        np.testing.assert_array_equal(mine, theirs)
    # paint: later intervals win
    value = rng.integers(0, 5, 40)
    plo, phi, pval = paint(lo, hi, value)
    painted = np.full(120, -1)
    for a, b, v in zip(lo, hi, value):
        painted[a:b] = v
    got = np.full(120, -1)
    for a, b, v in zip(plo, phi, pval):
        got[a:b] = v
    np.testing.assert_array_equal(got, painted)
    np.testing.assert_array_equal(unique_sorted(value), np.unique(value))


@pytest.mark.parametrize("seed", range(10))
def test_paint_of_mostly_disjoint_intervals_paints_only_the_overlapping_ones_in_order(seed):
    rng = np.random.default_rng(seed)
    lo = np.sort(rng.choice(5000, 300, replace=False)) * 2
    hi = lo + 2
    crowd = rng.choice(300, 20, replace=False)  # a few stretch over their neighbours
    hi[crowd] += rng.integers(1, 9, 20)
    order = rng.permutation(300)
    lo, hi, value = lo[order], hi[order], rng.integers(0, 3, 300)
    plo, phi, pval = paint(lo, hi, value)
    painted, got = np.full(10_020, -1), np.full(10_020, -1)
    for a, b, v in zip(lo, hi, value):
        painted[a:b] = v
    for a, b, v in zip(plo, phi, pval):
        assert (got[a:b] == -1).all()  # disjoint
        got[a:b] = v
    np.testing.assert_array_equal(got, painted)
    assert not ((plo[1:] == phi[:-1]) & (pval[1:] == pval[:-1])).any()  # equal neighbours joined


@pytest.mark.parametrize("seed", range(15))
def test_split_cuts_runs_at_interval_boundaries(seed):
    rng = np.random.default_rng(seed)
    runs = random_runs(rng, 25, strides=(-7, -1, 0, 1, 2, 3, 11))
    bases = np.array([0, 100, 200])
    starts = np.unique(np.concatenate(([0], rng.integers(1, 300, int(rng.integers(1, 60))))))
    imap = IntervalMap(starts, 300)
    pieces = imap.split(runs, bases)
    var, offset = runs.elements()
    gids = bases[var] + offset
    expected_interval = np.searchsorted(starts, gids, side="right") - 1
    # Each piece covers consecutive elements of one run, all in its interval.
    got = np.empty(gids.size, np.int64)
    run_start = runs.starts()
    rows = zip(pieces.run, pieces.position, pieces.count, pieces.interval, pieces.gid, pieces.step)
    for r, p, c, k, g, s in rows:
        first = run_start[r] + p
        got[first:first + c] = k
        np.testing.assert_array_equal(gids[first:first + c], g + s * np.arange(c))
    np.testing.assert_array_equal(got, expected_interval)
    assert int(pieces.count.sum()) == gids.size


def test_arithmetic_groups_never_join_across_a_break():
    offset = np.array([0, 3, 6, 10, 11, 50])
    count = np.array([3, 1, 1, 1, 4, 1])
    stride = np.array([1, 1, 1, 1, 1, 1])
    linked = np.array([True, True, True, True, False])
    first, counts, strides = arithmetic_groups(offset, count, stride, linked)
    # 0,1,2 | 3 (step 1 from 2) | 6 ... : 0..3 join, 6 and 10 and 11.. follow their own steps
    sequence = [int(o) + i * int(s) for f, c, s in zip(first, counts, strides)
                for o in [offset[f]] for i in range(c)]
    expected = [x for o, c in zip(offset, count) for x in range(o, o + c)]
    assert sequence == expected


@pytest.mark.parametrize("seed", range(5))
def test_first_alike_finds_the_first_equal_row_of_different_lengths(seed):
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 4, 300)
    values = rng.integers(-2, 2, int(counts.sum()))
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    rows = [tuple(values[a:a + n]) for a, n in zip(starts, counts)]
    assert first_alike(values, counts).tolist() == [rows.index(r) for r in rows]


@pytest.mark.parametrize("wide", [False, True])
def test_first_equal_finds_the_first_equal_row(wide):
    """Columns that fit side by side in one integer, and columns that do not (hashed)."""
    rng = np.random.default_rng(int(wide))
    columns = [rng.integers(-3, 3, 400), rng.integers(0, 2, 400)]
    if wide:
        columns.append(rng.choice([0, 2**62 - 1, -2**62], 400))
    rows = list(zip(*(c.tolist() for c in columns)))
    assert first_equal(columns).tolist() == [rows.index(r) for r in rows]
