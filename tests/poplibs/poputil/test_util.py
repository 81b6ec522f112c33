"""poputil Util.hpp: flat indices against numpy, interval lists, both splitRegions overloads,
cloneN on the device, balancedPartition, half casts, factorDims/unfactorDims moving data as numpy
does, calculateUnshufflingIntervals."""

import itertools

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import Interval
from poplar_py import program as prog
from poplibs_py import poputil
from poplibs_py.poputil import PoplibsArgumentError, PoplibsError


def pairs(parts):
    return [[(iv.begin(), iv.end()) for iv in p] for p in parts]


@pytest.mark.parametrize("shape", [[7], [3, 4], [2, 3, 5], [1, 1, 6, 1], []])
def test_flatten_and_unflatten_index_match_numpy(shape):
    n = int(np.prod(shape))
    for i in range(n):
        coord = poputil.unflattenIndex(shape, i)
        assert coord == [int(c) for c in np.unravel_index(i, shape)] if shape else coord == []
        assert poputil.flattenIndex(shape, coord) == i


def test_index_errors_name_the_argument():
    with pytest.raises(PoplibsArgumentError, match="index 12 is outside"):
        poputil.unflattenIndex([3, 4], 12)
    with pytest.raises(PoplibsArgumentError, match="index 4 of dimension 1"):
        poputil.flattenIndex([3, 4], [0, 4])
    with pytest.raises(PoplibsArgumentError, match="2 indices"):
        poputil.flattenIndex([3, 4, 5], [0, 1])
    with pytest.raises(PoplibsArgumentError, match="shape"):
        poputil.unflattenIndex([3, -1], 0)
    with pytest.raises(PoplibsArgumentError, match="index must be an integer"):
        poputil.unflattenIndex([3], 1.0)


def test_merge_adjacent_regions_in_place():
    regions = [Interval(10, 12), (0, 4), (4, 4), (4, 10), (20, 25)]
    out = poputil.mergeAdjacentRegions(regions)
    assert out is regions and pairs([regions]) == [[(0, 12), (20, 25)]]
    mapping = [[(5, 6), (0, 5)], [], [(9, 10), (7, 9)]]
    poputil.mergeAdjacentRegions(mapping)
    assert pairs(mapping) == [[(0, 6)], [], [(7, 10)]]
    with pytest.raises(PoplibsError, match="overlap"):
        poputil.mergeAdjacentRegions([(0, 5), (3, 8)])
    with pytest.raises(PoplibsArgumentError, match="changed in place"):
        poputil.mergeAdjacentRegions(((0, 1),))


def test_flatten_intervals_and_sequence_sizes():
    seqs = [[(0, 3), (5, 6)], [], [(10, 14)]]
    assert [(iv.begin(), iv.end()) for iv in poputil.flattenIntervals(seqs)] == [(0, 3), (5, 6), (10, 14)]
    assert poputil.intervalSequenceNumElements(seqs) == 8
    with pytest.raises(PoplibsArgumentError, match="interval"):
        poputil.flattenIntervals([[(0, "a")]])


def test_split_regions_intervals():
    parts = poputil.splitRegions([(0, 10), (15, 20), (33, 60)], 4, 8, 6)
    flat = [iv for p in parts for iv in p]
    assert sum(iv.size() for iv in flat) == 42
    assert len(parts) == 4  # 11 grains, at least 2 a partition: 3 grains each
    assert [sum(iv.size() for iv in p) for p in parts] == [12, 12, 12, 6]
    assert pairs(parts)[0] == [(0, 10), (15, 17)]
    assert pairs(poputil.splitRegions([(0, 100)], 1, 4, maxElementsPerRegion=10))[0] == \
        [(0, 10), (10, 20), (20, 25)]
    assert poputil.splitRegions([], 1, 4) == []
    with pytest.raises(PoplibsArgumentError, match="grainSize"):
        poputil.splitRegions([(0, 4)], -1, 4)


def test_split_regions_sequences():
    seqs = [[(0, 3), (10, 13)], [(20, 30)], [(40, 41), (50, 55)]]
    parts = poputil.splitRegions(seqs, 1, 3)
    assert len(parts) == 3
    # each partition is a list of sequences; together they cover every element once, in order
    covered = [e for p in parts for s in p for iv in s for e in range(iv.begin(), iv.end())]
    assert covered == [e for s in seqs for b, e_ in s for e in range(b, e_)]
    assert [sum(iv.size() for s in p for iv in s) for p in parts] == [8, 8, 6]
    assert pairs(parts[0]) == [[(0, 3), (10, 13)], [(20, 22)]]
    target = poplar.IPUModel().createDevice().getTarget()
    workers = poputil.splitRegionsBetweenWorkers(target, seqs, 2)
    assert len(workers) <= target.getNumWorkerContexts()
    assert sum(iv.size() for p in workers for s in p for iv in s) == 22


def test_clone_n_copies_on_device(harness):
    h = harness(4)
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    t = h.tensor(x, name="t")
    clones = poputil.cloneN(h.graph, t, 3, "many")
    assert clones.shape() == [3, 4, 6]
    for i in range(3):
        assert h.graph.getTileMapping(clones[i]) == h.graph.getTileMapping(t)
        assert not clones[i].intersectsWith(t)
        h.seq.add(prog.Copy(t, clones[i]))
    assert not clones.containsAliases()
    (got,) = h.run(clones)
    np.testing.assert_array_equal(got, np.broadcast_to(x, (3, 4, 6)))
    assert poputil.cloneN(h.graph, t, 0).shape() == [0, 4, 6]
    with pytest.raises(PoplibsArgumentError, match="N must be"):
        poputil.cloneN(h.graph, t, -1)


def test_balanced_partition():
    assert poputil.balancedPartition(10, 3) == [4, 3, 3]
    assert poputil.balancedPartition(9, 3) == [3, 3, 3]
    assert poputil.balancedPartition(2, 4) == [1, 1, 0, 0]
    for n, k in itertools.product(range(20), range(1, 7)):
        parts = poputil.balancedPartition(n, k)
        assert sum(parts) == n and max(parts) - min(parts) <= 1
    with pytest.raises(PoplibsArgumentError, match="splitCount"):
        poputil.balancedPartition(4, 0)


def test_half_casts():
    target = poplar.IPUModel().createDevice().getTarget()
    assert poputil.castToDeviceHalfValue(target, 0.1) == float(np.float16(0.1))
    assert poputil.castToDeviceHalfValue(target, 1e6) == float("inf")
    assert poputil.checkAccuracyWhenCast(target, 1.0, poplar.FLOAT, poplar.HALF, 1e-3)
    assert not poputil.checkAccuracyWhenCast(target, 1.0001, poplar.FLOAT, poplar.HALF, 1e-5)
    assert poputil.checkAccuracyWhenCast(target, 1.0001, poplar.HALF, poplar.FLOAT, 0.0)
    with pytest.raises(PoplibsError, match="float to half or half to float"):
        poputil.checkAccuracyWhenCast(target, 1.0, poplar.INT, poplar.FLOAT, 0.1)


def test_factor_dims_moves_data_as_numpy(harness):
    h = harness(2)
    x = np.arange(4 * 6 * 4, dtype=np.int32).reshape(4, 6, 4)
    t = h.tensor(x)
    f = poputil.factorDims(t, [1, 2])
    assert f.shape() == [4, 3, 1, 2, 4]
    back = poputil.unfactorDims(f, 2)
    assert back.shape() == [4, 6, 4] and back == t
    g = poputil.factorDims(t, [3, 2], 1)
    assert g.shape() == [4, 2, 2, 3, 2]
    outs = [h.graph.clone(v) for v in (f, g)]
    for v, o in zip((f, g), outs):
        h.seq.add(prog.Copy(v, o))
    got_f, got_g = h.run(*outs)
    np.testing.assert_array_equal(got_f, x.reshape(4, 1, 3, 2, 4).transpose(0, 2, 1, 3, 4))
    np.testing.assert_array_equal(got_g, x.reshape(4, 2, 3, 2, 2).transpose(0, 1, 3, 2, 4))
    with pytest.raises(PoplibsError, match="factor 4 does not divide"):
        poputil.factorDims(t, [1, 4])
    with pytest.raises(PoplibsArgumentError, match="do not fit"):
        poputil.factorDims(t, [1, 1], 2)


def test_calculate_unshuffling_intervals(harness):
    shuffle = [(6, 10), (0, 2), (10, 12), (2, 6)]
    unshuffle = poputil.calculateUnshufflingIntervals(shuffle)
    x = np.arange(12)
    shuffled = np.concatenate([x[b:e] for b, e in shuffle])
    np.testing.assert_array_equal(np.concatenate([shuffled[iv.begin():iv.end()] for iv in unshuffle]), x)
    h = harness(2)
    t = h.tensor(x.astype(np.float32))
    s = poplar.concat(t.slices([Interval(b, e) for b, e in shuffle]))
    u = poplar.concat(s.slices(unshuffle))
    assert u == t
    out = h.graph.clone(t)
    h.seq.add(prog.Copy(u, out))
    (got,) = h.run(out)
    np.testing.assert_array_equal(got, x)
