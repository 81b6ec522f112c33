"""Exchange plans: buffers filled with the same bytes are gathered once, then copied whole."""

from __future__ import annotations

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import Input, Output, Vector, Vertex
from poplar_py import program as prog
from poplar_py.compiler import exchange
from poplar_py.compiler.exchange import CopyPlan, SharedGather, TileTraffic, gather_into_buffers, traffic
from poplar_py.runtime.copies import execute


def _fill(memory: np.ndarray, plan) -> np.ndarray:
    out = memory.copy()
    execute(plan, out.ctypes.data, out.ctypes.data)
    return out


def test_shared_buffers_get_the_bytes_a_piece_by_piece_gather_gives():
    rng = np.random.default_rng(0)
    memory = rng.integers(0, 255, 1 << 16, dtype=np.uint8)
    buffers, pieces_per_buffer, size = 12, 10, 4
    sources = [rng.choice(np.arange(0, 8000, 8), pieces_per_buffer, replace=False) for _ in range(3)]
    src, dst, buffer, start = [], [], [], []
    for b in range(buffers):
        base = 40000 + b * 64
        chosen = sources[b % 3] if b != 5 else sources[0][::-1]  # 5: same sources, other order
        for k, s in enumerate(chosen):
            src.append(s)
            dst.append(base + k * size)
            buffer.append(b)
            start.append(base)
    n = len(src)
    args = [np.asarray(a, np.int64) for a in (src, dst)]
    ones = np.ones(n, np.int64)
    plan = gather_into_buffers(args[0], args[1], ones, ones * size, ones * size, np.asarray(buffer),
                               np.asarray(start), TileTraffic.empty(1))
    assert isinstance(plan, SharedGather)
    assert len(plan.replicate) == buffers - 4  # the first of each of the 3 patterns, and buffer 5
    naive = CopyPlan.build(args[0], args[1], ones, ones * size, ones * size, ones * size,
                           TileTraffic.empty(1))
    np.testing.assert_array_equal(_fill(memory, plan), _fill(memory, naive))


class Dot(Vertex):
    a: Input[Vector[float]]
    b: Input[Vector[float]]
    out: Output[float]

    def compute(self):
        s = 0.0
        for i in range(len(self.a)):
            s += self.a[i] * self.b[i]
        self.out = s


def _dots(rows: int = 32, cols: int = 24) -> tuple[np.ndarray, dict]:
    """Rows of a matrix dotted with one vector scattered over the tiles (each reader gathers
    ``cols`` pieces of it)."""
    model = poplar.IPUModel()
    model.tilesPerIPU = 16
    device = model.createDevice()
    graph = poplar.Graph(device)
    graph.addCodelets(Dot)
    m = graph.addVariable(poplar.FLOAT, [rows, cols], "m")
    v = graph.addVariable(poplar.FLOAT, [cols], "v")
    out = graph.addVariable(poplar.FLOAT, [rows], "out")
    for i in range(cols):
        graph.setTileMapping(v[i], i % 16)
    cs = graph.addComputeSet("dots")
    for r in range(rows):
        tile = r % 16
        graph.setTileMapping(m[r], tile)
        graph.setTileMapping(out[r], tile)
        graph.setTileMapping(graph.addVertex(cs, "Dot", {"a": m[r], "b": v, "out": out[r]}), tile)
    for name, t in (("m", m), ("v", v)):
        graph.createHostWrite(name, t)
    graph.createHostRead("out", out)
    engine = poplar.Engine(graph, prog.Execute(cs))
    engine.load(device)
    rng = np.random.default_rng(1)
    hm = rng.standard_normal((rows, cols)).astype(np.float32)
    hv = rng.standard_normal(cols).astype(np.float32)
    engine.writeTensor("m", hm)
    engine.writeTensor("v", hv)
    engine.run()
    np.testing.assert_allclose(engine.readTensor("out"), hm @ hv, rtol=1e-5, atol=1e-5)
    return engine.readTensor("out"), engine.getProfile()["execution"]


def test_a_vector_every_tile_reads_is_gathered_once_with_the_same_results_and_cycles(monkeypatch):
    shared, shared_cycles = _dots()
    monkeypatch.setattr(exchange, "_SHARE_PIECES", 10**9)
    alone, alone_cycles = _dots()
    assert shared.tobytes() == alone.tobytes()
    assert shared_cycles == alone_cycles


@pytest.mark.parametrize("seed", range(20))
def test_a_tile_sends_each_distinct_element_once_whatever_the_pieces_steps(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    tile = rng.integers(0, 3, n)
    count = rng.integers(1, 9, n)
    size = rng.choice([2, 4], n)
    gstep = rng.choice([0, 1, -1, 3, -3, 7, 16, 1000], n)
    gid = rng.integers(0, 200, n) + np.where(gstep < 0, (count - 1) * np.abs(gstep), 0)
    t = traffic(tile, (tile + 1) % 4, count, size, 4, gid, gstep)
    expected = np.zeros(4, np.int64)
    for k in range(4):
        sent = {(int(gid[p] + i * gstep[p]), int(size[p])) for p in np.flatnonzero(tile == k)
                for i in range(count[p])}
        expected[k] = sum(s for _, s in sent)
    assert t.bytes_out.tolist() == expected.tolist()
