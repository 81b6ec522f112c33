"""Freezing a graph into its IR: edge rows in (compute set, vertex, field, row) order, a list
row connected again keeping its last connection."""

from __future__ import annotations

import numpy as np
import pytest
from support import make_graph

import poplar_py as poplar
from poplar_py import Input, Output, VectorList, Vertex
from poplar_py import program as prog
from poplar_py.ir import edge_order


class SumRows(Vertex):
    rows: Input[VectorList[poplar.FLOAT]]
    out: Output[poplar.FLOAT]

    def compute(self):
        s = 0.0
        for r in range(len(self.rows)):
            for i in range(len(self.rows[r])):
                s += self.rows[r][i] * (r + 1)
        self.out = s
        return True


def test_a_list_row_connected_again_keeps_its_last_connection():
    device, graph = make_graph(4)
    graph.addCodelets(SumRows)
    a = graph.addConstant(poplar.FLOAT, [3], [1.0, 2.0, 3.0], "a")
    b = graph.addConstant(poplar.FLOAT, [2], [10.0, 20.0], "b")
    out = graph.addVariable(poplar.FLOAT, [2], "out")
    cs = graph.addComputeSet("cs")
    for k in range(2):  # vertex 0's rows reconnected after vertex 1 is built
        v = graph.addVertex(cs, "SumRows", {"out": out[k]})
        graph.setFieldSize(v["rows"], 2)
        graph.connect(v["rows"][0], a)
        graph.connect(v["rows"][1], a[:2])
        graph.setTileMapping(v, k)
        if k == 0:
            first = v
    graph.connect(first["rows"][0], b)
    graph.connect(first["rows"][1], b[1:])
    for t in (a, b, out):
        graph.setTileMapping(t, 0)
    graph.createHostRead("out", out)
    engine = poplar.Engine(graph, prog.Execute(cs))
    engine.load(device)
    engine.run()
    got = np.empty(2, np.float32)
    engine.readTensor("out", got)
    assert got.tolist() == [30.0 + 2 * 20.0, 6.0 + 2 * 3.0]


def _reference(vertex, field, row, connection, vertex_cs):
    """edge_order by brute force: every key's rows of its last connection, keys sorted."""
    last = {}
    for k in range(vertex.size):
        key = (int(vertex_cs[vertex[k]]), int(vertex[k]), int(field[k]), int(row[k]))
        last[key] = max(last.get(key, -1), int(connection[k]))
    keep = [k for k in range(vertex.size)
            if last[(int(vertex_cs[vertex[k]]), int(vertex[k]), int(field[k]), int(row[k]))] == connection[k]]
    return sorted(keep, key=lambda k: (vertex_cs[vertex[k]], vertex[k], field[k], row[k], k))


@pytest.mark.parametrize("seed", range(8))
def test_edge_order_sorts_and_keeps_last_connections(seed):
    rng = np.random.default_rng(seed)
    n = 300
    vertex_cs = rng.integers(0, 4, 40)
    if seed % 4 == 2:  # compute sets in vertex order, as bulk-built graphs have them
        vertex_cs.sort()
    if seed % 4 == 3:  # compute set ids far apart
        vertex_cs = vertex_cs * 2**60
    vertex, field = rng.integers(0, 40, n), rng.integers(0, 3, n)
    row = np.where(rng.random(n) < 0.3, -1, rng.integers(0, 5, n))
    calls = np.sort(rng.integers(0, n, n // 3))  # a call's rows share its first row's offset
    connection = calls[np.searchsorted(calls, np.arange(n), side="right") - 1].clip(0) * 64
    if seed % 2:  # rows already in order: only duplicates go, or nothing
        by = np.lexsort((row, field, vertex, vertex_cs[vertex]))
        vertex, field, row, connection = vertex[by], field[by], row[by], connection[by]
    order = edge_order(vertex, field, vertex_cs, (row, connection))
    got = np.arange(n) if order is None else order
    assert got.tolist() == _reference(vertex, field, row, connection, vertex_cs)


@pytest.mark.parametrize("seed", range(4))
def test_edge_order_of_vertices_built_in_bulk_sorts_by_compute_set_only(seed):
    """Each vertex's rows once, field by field in order, vertices in blocks (add_vertices calls)
    whose compute sets interleave."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 6, 12)
    vertex_cs = np.repeat(rng.integers(0, 3, sizes.size), sizes)
    if seed % 2:
        vertex_cs.sort()
    rows_of = rng.integers(0, 4, (vertex_cs.size, 2))  # list rows of fields 0 and 1
    vertex = np.repeat(np.arange(vertex_cs.size), rows_of.sum(axis=1))
    field = np.concatenate([np.repeat([0, 1], r) for r in rows_of])
    row = np.concatenate([np.concatenate([np.arange(r[0]), np.arange(r[1])]) for r in rows_of])
    connection = np.zeros(vertex.size, np.int64)
    order = edge_order(vertex, field, vertex_cs, None)
    got = np.arange(vertex.size) if order is None else order
    assert got.tolist() == _reference(vertex, field, row, connection, vertex_cs)
    assert (order is None) == bool((np.diff(vertex_cs) >= 0).all())
