"""Per-tile vertices of element-wise operations: worker rows, vertex counts, views and cycles."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import poplar_py as poplar
from poplibs_py import popops
from poplibs_py.popops.tile_rows import workerRows
from poplibs_py.poputil import splitRegionsBetweenWorkers


def _graph(tiles: int) -> tuple[poplar.Device, poplar.Graph]:
    model = poplar.IPUModel()
    model.tilesPerIPU = tiles
    device = model.createDevice()
    return device, poplar.Graph(device)


def _rows_as_lists(tiles, rows):
    """``workerRows``' result as ``[(tile, [[(begin, end), ...] per row])]``."""
    out, r0 = [], 0
    for v, tile in enumerate(tiles.tolist()):
        parts = []
        for r in range(r0, r0 + int(rows.per_vertex[v])):
            sel = rows.row == r
            parts.append(list(zip(rows.begin[sel].tolist(), rows.end[sel].tolist())))
        r0 += int(rows.per_vertex[v])
        out.append((tile, parts))
    return out


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("grain", [1, 2, 4])
def test_worker_rows_split_as_split_regions_between_workers(seed, grain):
    rng = np.random.default_rng(seed)
    device, graph = _graph(8)
    n = int(rng.integers(1, 400))
    t = graph.addVariable(poplar.FLOAT, [n], "t")
    cuts = np.sort(rng.choice(np.arange(1, n), size=min(n - 1, int(rng.integers(0, 25))), replace=False))
    bounds = [0, *cuts.tolist(), n]
    for b, e in itertools.pairwise(bounds):
        graph.setTileMapping(t.slice(b, e), int(rng.integers(0, 8)))
    expected = [(tile, [[(iv.begin(), iv.end()) for iv in part]
                        for part in splitRegionsBetweenWorkers(device.getTarget(), intervals, grain)])
                for tile, intervals in enumerate(graph.getTileMapping(t)) if intervals]
    assert _rows_as_lists(*workerRows(graph, t, grain)) == expected


@pytest.mark.parametrize("pieces", [4, 8])
def test_a_concatenation_on_a_tile_is_worked_on_in_place(harness, pieces):
    # a tile holding four variables' elements: its workers take their pieces as rows of their own
    # (some workers two), each contiguous in memory, so nothing is gathered into exchange buffers;
    # holding eight, the pieces would cost more as rows: a row a worker, as for one variable
    h = harness(2)
    x = np.arange(pieces * 6 * 10, dtype=np.float32).reshape(pieces, 6, 10)
    parts = [h.tensor(x[k], mapping=0) for k in range(pieces)]
    joined = poplar.concat(parts, 1)  # [6, 10 * pieces]: rows interleave the variables
    tiles, rows = workerRows(h.graph, joined.flatten(), 1)
    assert tiles.tolist() == [0]
    out = popops.mul(h.graph, joined, joined, h.seq, "square")
    (got,) = h.run(out)
    np.testing.assert_array_equal(got, np.concatenate(x, 1) ** 2)
    memory = h.engine.getProfile()["compilation"]["tiles"][0]["memory"]["byCategory"]
    if pieces == 4:
        # four variables of 60 elements in six partitions of 40: two partitions meet two of them
        assert rows.num_rows == 6 + 2
        assert memory.get("exchange buffers", 0) == 0
    else:
        assert rows.num_rows == 6


def test_element_wise_operations_add_one_vertex_per_tile(harness):
    h = harness(16)
    x = np.arange(40 * 30, dtype=np.float32).reshape(40, 30)
    a, b = h.tensor(x), h.tensor(x[0])
    before = h.graph.getNumVertices()
    for op in (lambda: popops.add(h.graph, a, b, h.seq), lambda: popops.cast(h.graph, a, poplar.INT, h.seq),
               lambda: popops.zero(h.graph, h.graph.clone(a), h.seq),
               lambda: popops.scaledAddTo(h.graph, a, a, 0.5, h.seq)):
        op()
        assert h.graph.getNumVertices() - before == 16  # a is spread over all 16 tiles
        before = h.graph.getNumVertices()


def test_operations_on_transposed_and_concatenated_views(harness):
    h = harness(8)
    x = np.random.default_rng(0).standard_normal((24, 24)).astype(np.float32)
    a = h.tensor(x)
    t = a.transpose()
    prod = popops.mul(h.graph, t, t, h.seq)
    joined = poplar.concat([t.slice(0, 10, 0), a.slice(10, 24, 0)], 0)
    summed = popops.add(h.graph, joined, joined.reverse(1), h.seq)
    got_prod, got_sum = h.run(prod, summed)
    np.testing.assert_array_equal(got_prod, x.T * x.T)
    j = np.concatenate([x.T[:10], x[10:]])
    np.testing.assert_array_equal(got_sum, j + j[:, ::-1])


def _add_cycles(n: int) -> int:
    device, graph = _graph(1)
    popops.addCodelets(graph)
    a = graph.addVariable(poplar.FLOAT, [n], "a")
    graph.setTileMapping(a, 0)
    seq = poplar.program.Sequence()
    popops.addInPlace(graph, a, a, seq)
    engine = poplar.Engine(graph, seq)
    engine.load(device)
    engine.run()
    return next(s for s in engine.getProfile()["execution"]["steps"] if s["name"] == "add")["compute"]


def test_compute_cycles_are_six_times_the_slowest_worker():
    # the tile's one MultiVertex is costed as PopLibs' BinaryOp1DInPlace (float ADD: 58 per
    # worker, 1 + 2 cycles per 2-float vector) over its slowest worker's row, six workers, 11
    # for the supervisor
    def expected(row: int) -> int:
        return 6 * (58 + 3 * -(-row // 2)) + 11

    assert [_add_cycles(6 * k) for k in (2, 4, 8)] == [expected(k) for k in (2, 4, 8)]
    # 13 elements: worker 0 takes 4 (the grain is 2 floats), the slowest; 12 elements: 2 each
    assert (_add_cycles(13), _add_cycles(12)) == (expected(4), expected(2))
