"""Engine: copies between views on many tiles, streams, host reads and writes, options, checks."""

from __future__ import annotations

import ctypes
import inspect
import os
import re
import signal
import threading
import time

import numpy as np
import pytest
from support import IdModel, make_device, make_graph

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.codelet.interrupts import stop_address

# ---- copies between views on many tiles --------------------------------------------------------

TILES = 64


def random_mapping(graph: poplar.Graph, t: poplar.Tensor, rng: np.random.Generator, tiles: int) -> None:
    """Runs of 1..9 elements on random tiles."""
    flat, pos, n = t.flatten(), 0, t.numElements()
    while pos < n:
        k = int(rng.integers(1, 10))
        graph.setTileMapping(flat.slice(pos, min(pos + k, n)), int(rng.integers(0, tiles)))
        pos += k


SOURCES = [
    ("whole", lambda s: s),
    ("transpose", lambda s: s.transpose()),
    ("row-slice", lambda s: s.slice(3, 9)),
    ("col-slice", lambda s: s.slice(5, 17, 1)),
    ("reverse0", lambda s: s.reverse(0)),
    ("reverse1", lambda s: s.reverse(1)),
    ("broadcast", lambda s: s[4].broadcast(6, 0)),
    ("upsample", lambda s: s.slice(0, 8, 1).upsample(3, 1)),
    ("subSample", lambda s: s.subSample(2, 0).subSample(2, 1)),
    ("transpose-slice", lambda s: s.transpose().slice(2, 14, 1)),
    ("concat", lambda s: poplar.concat([s[7:9], s[0:1], s[15:16].reverse(1)])),
    ("dimShuffle", lambda s: s.reshape([4, 4, 24]).dimShuffle([2, 0, 1])),
    ("scalar", lambda s: s[3][4]),
]

DESTS = [
    ("flat", lambda d, n: d.flatten().slice(0, n)),
    ("2d", lambda d, n: d.flatten().slice(0, n).reshape([n // 2, 2]) if n % 2 == 0 else d.flatten()[:n]),
    ("offset", lambda d, n: d.flatten().slice(7, 7 + n)),
    ("reversed", lambda d, n: d.flatten().reverse(0).slice(0, n)),
    ("strided", lambda d, n: d.flatten().subSample(2, 0).slice(0, n)),
    ("transposed", lambda d, n: d.transpose().flatten().slice(3, 3 + n)),
    ("dimShuffled", lambda d, n: d.reshape([3, 10, 30]).dimShuffle([2, 0, 1]).flatten().slice(0, n)),
]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("dname,dview", DESTS, ids=[d[0] for d in DESTS])
@pytest.mark.parametrize("sname,sview", SOURCES, ids=[s[0] for s in SOURCES])
def test_copy_views_on_many_tiles(seed, sname, sview, dname, dview):
    device, graph = make_graph(TILES)
    rng = np.random.default_rng(seed)
    src = graph.addVariable(poplar.FLOAT, [16, 24], "src")
    dst = graph.addVariable(poplar.FLOAT, [30, 30], "dst")
    random_mapping(graph, src, rng, TILES)
    random_mapping(graph, dst, rng, TILES)
    s = sview(src)
    d = dview(dst, s.numElements())
    if dname == "2d" and s.numElements() % 2 == 0:
        assert d.shape() != s.shape() or s.rank() != 2
    graph.createHostWrite("src", src)
    graph.createHostWrite("dst", dst)
    graph.createHostRead("dst-read", dst)
    engine = poplar.Engine(graph, prog.Copy(s, d))
    engine.load(device)
    src_values = rng.standard_normal((16, 24)).astype(np.float32)
    dst_values = rng.standard_normal((30, 30)).astype(np.float32)
    engine.writeTensor("src", src_values)
    engine.writeTensor("dst", dst_values)
    engine.run(0)
    model = IdModel(graph)
    model.write(src, src_values)
    model.write(dst, dst_values)
    model.copy(s, d)
    np.testing.assert_array_equal(engine.readTensor("dst-read"), model.read(dst).astype(np.float32))


@pytest.mark.parametrize("type_", [poplar.HALF, poplar.INT, poplar.UNSIGNED_CHAR, poplar.BOOL, poplar.SHORT,
                                   poplar.UNSIGNED_INT])
def test_copy_element_types(type_):
    device, graph = make_graph(16)
    rng = np.random.default_rng(3)
    a = graph.addVariable(type_, [9, 7], "a")
    b = graph.addVariable(type_, [7, 9], "b")
    random_mapping(graph, a, rng, 16)
    random_mapping(graph, b, rng, 16)
    graph.createHostWrite("a", a)
    graph.createHostRead("b", b)
    engine = poplar.Engine(graph, prog.Copy(a.transpose(), b))
    engine.load(device)
    values = (rng.integers(0, 100, size=(9, 7)) % (2 if type_ == poplar.BOOL else 100)).astype(type_.dtype)
    engine.writeTensor("a", values)
    engine.run(0)
    got = engine.readTensor("b")
    assert got.dtype == type_.dtype
    np.testing.assert_array_equal(got, values.T)


def test_copy_reinterpreted_bits():
    device, graph = make_graph(4)
    f = graph.addVariable(poplar.FLOAT, [3], poplar.VariableMappingMethod.LINEAR, "f")
    i = graph.addVariable(poplar.INT, [3], poplar.VariableMappingMethod.LINEAR, "i")
    graph.setInitialValue(f, [1.0, -2.5, 3.0])
    graph.createHostRead("i", i)
    engine = poplar.Engine(graph, prog.Copy(f.reinterpret(poplar.INT), i))
    engine.load(device)
    engine.run(0)
    expected = np.array([1.0, -2.5, 3.0], np.float32).view(np.int32)
    np.testing.assert_array_equal(engine.readTensor("i"), expected)


def test_tutorial1_slice_copy():
    device, graph = make_graph(4)
    v1 = graph.addVariable(poplar.FLOAT, [4], "v1")
    v3 = graph.addVariable(poplar.FLOAT, [4, 4], "v3")
    graph.setTileMapping(v1, 0)
    graph.setTileMapping(v3, 0)
    graph.setInitialValue(v1, [1.0, 1.5, 2.0, 2.5])
    graph.createHostRead("v3", v3)
    engine = poplar.Engine(graph, prog.Copy(v1.slice(0, 3), v3.slice([1, 1], [2, 4])))
    engine.load(device)
    engine.run(0)
    expected = np.zeros((4, 4), np.float32)
    expected[1, 1:] = [1.0, 1.5, 2.0]
    np.testing.assert_array_equal(engine.readTensor("v3"), expected)


def test_empty_copies_and_prints():
    device, graph = make_graph(4)
    v = graph.addVariable(poplar.INT, [4], poplar.VariableMappingMethod.LINEAR, "v")
    graph.setInitialValue(v, [1, 2, 3, 4])
    graph.createHostRead("v", v)
    engine = poplar.Engine(graph, (prog.Copy(v.slice(0, 0), v.slice(4, 4)), prog.Copy(v[2:2], v[:0])))
    engine.load(device)
    engine.run(0)
    engine.run(1)
    np.testing.assert_array_equal(engine.readTensor("v"), [1, 2, 3, 4])


def test_copy_across_ipus():
    m = poplar.IPUModel()
    m.numIPUs = 2
    m.tilesPerIPU = 4
    device = m.createDevice()
    graph = poplar.Graph(device)
    a = graph.addVariable(poplar.FLOAT, [8], "a")
    b = graph.addVariable(poplar.FLOAT, [8], "b")
    graph.setTileMapping(a, [[(0, 4)], [], [], [(4, 8)]])  # IPU 0
    graph.setTileMapping(b, [[], [], [], [], [(0, 2)], [], [], [(2, 8)]])  # IPU 1
    graph.setInitialValue(a, np.arange(8))
    graph.createHostRead("b", b)
    engine = poplar.Engine(graph, [prog.Copy(a.reverse(0), b), prog.Copy(b, a)])
    engine.load(device)
    engine.run(0)
    np.testing.assert_array_equal(engine.readTensor("b"), np.arange(8)[::-1])


# ---- overlapping copies: read everything, then write ---------------------------------------------

OVERLAPS = [
    ("shift-right", lambda v: (v[:-1], v[1:])),
    ("shift-left", lambda v: (v[1:], v[:-1])),
    ("shift-by-3", lambda v: (v[:-3], v[3:])),
    ("rotate-right", lambda v: (poplar.concat([v[-1:], v[:-1]]), v)),
    ("rotate-left", lambda v: (poplar.concat([v[1:], v[:1]]), v)),
    ("reverse", lambda v: (v.reverse(0), v)),
    ("transpose-in-place", lambda v: (v.reshape([6, 6]).transpose(), v.reshape([6, 6]))),
    ("swap-halves", lambda v: (poplar.concat([v[18:], v[:18]]), v)),
    ("evens-from-odds", lambda v: (v[1::2], v[::2])),
    ("broadcast-head", lambda v: (v[0:1].broadcast(36, 0), v)),
    ("overlap-strided", lambda v: (v[0:30:2], v[1:31:2])),
]


@pytest.mark.parametrize("tiles,mapping", [(1, "one"), (8, "linear"), (8, "random"), (8, "interleaved")])
@pytest.mark.parametrize("name,op", OVERLAPS, ids=[o[0] for o in OVERLAPS])
def test_overlapping_copy_within_one_variable(name, op, tiles, mapping):
    device, graph = make_graph(tiles)
    v = graph.addVariable(poplar.INT, [36], "v")
    if mapping == "one":
        graph.setTileMapping(v, 0)
    elif mapping == "linear":
        graph.setTileMapping(v, [[(k * 5, min(k * 5 + 5, 36))] for k in range(8)])
    elif mapping == "random":
        random_mapping(graph, v, np.random.default_rng(7), tiles)
    else:
        for k in range(36):
            graph.setTileMapping(v[k], k % tiles)
    initial = np.arange(36) * 10 + 1
    graph.setInitialValue(v, initial)
    graph.createHostRead("v", v)
    src, dst = op(v)
    engine = poplar.Engine(graph, prog.Copy(src, dst))
    engine.load(device)
    model = IdModel(graph)
    model.write(v, initial)
    for _ in range(3):
        engine.run(0)
        model.copy(src, dst)
        np.testing.assert_array_equal(engine.readTensor("v"), model.read(v))


def test_overlapping_copy_examples_by_hand():
    device, graph = make_graph(4)
    v = graph.addVariable(poplar.INT, [6], poplar.VariableMappingMethod.LINEAR, "v")
    graph.setInitialValue(v, [0, 1, 2, 3, 4, 5])
    graph.createHostRead("v", v)
    engine = poplar.Engine(graph, [prog.Copy(v[:-1], v[1:]), prog.Copy(poplar.concat([v[1:], v[:1]]), v)])
    engine.load(device)
    engine.run(0)
    np.testing.assert_array_equal(engine.readTensor("v"), [0, 0, 1, 2, 3, 4])
    engine.run(1)
    np.testing.assert_array_equal(engine.readTensor("v"), [0, 1, 2, 3, 4, 0])


def test_copy_between_variables_in_both_directions():
    """Two adjacent variables: copies across the boundary of their arena regions."""
    device, graph = make_graph(2)
    a = graph.addVariable(poplar.FLOAT, [8], "a")
    b = graph.addVariable(poplar.FLOAT, [8], "b")
    graph.setTileMapping(a, 0)
    graph.setTileMapping(b, 0)
    graph.setInitialValue(a, np.arange(8))
    graph.setInitialValue(b, np.arange(8) + 100)
    both = poplar.concat([a, b])
    graph.createHostRead("both", both)
    engine = poplar.Engine(graph, prog.Copy(both[4:12], both[0:8]))
    engine.load(device)
    engine.run(0)
    np.testing.assert_array_equal(engine.readTensor("both"),
                                  [4, 5, 6, 7, 100, 101, 102, 103, 100, 101, 102, 103, 104, 105, 106, 107])


# ---- streams -----------------------------------------------------------------------------------

@pytest.mark.parametrize("buffer,copy_size,copies", [(30, 10, 7), (25, 10, 6), (10, 10, 3), (7, 3, 9),
                                                      (45, 10, 10)])
def test_host_to_device_stream_wraps(buffer, copy_size, copies):
    device, graph = make_graph(4)
    v = graph.addVariable(poplar.INT, [copy_size], poplar.VariableMappingMethod.LINEAR, "v")
    s = graph.addHostToDeviceFIFO("in", poplar.INT, copy_size)
    out = graph.addDeviceToHostFIFO("out", poplar.INT, copy_size)
    engine = poplar.Engine(graph, prog.Repeat(copies, prog.Sequence([prog.Copy(s, v), prog.Copy(v, out)])))
    engine.load(device)
    data = np.arange(buffer, dtype=np.int32) + 100
    engine.connectStream("in", data)
    got = []
    engine.connectStreamToCallback("out", lambda a: got.append(a.copy()))
    engine.run(0)
    expected = data[np.arange(copies * copy_size) % buffer]
    np.testing.assert_array_equal(np.concatenate(got), expected)


def test_tutorial1_stream_twice():
    device, graph = make_graph(4)
    v4 = graph.addVariable(poplar.INT, [10], "v4")
    graph.setTileMapping(v4, 0)
    s = graph.addHostToDeviceFIFO("v4-input-stream", poplar.INT, 10)
    graph.createHostRead("v4", v4)
    engine = poplar.Engine(graph, [prog.Copy(s, v4)])
    engine.load(device)
    engine.connectStream("v4-input-stream", np.arange(30, dtype=np.int32))
    for k in range(4):
        engine.run(0)
        np.testing.assert_array_equal(engine.readTensor("v4"), np.arange(10) + 10 * (k % 3))


@pytest.mark.parametrize("buffer,copy_size,copies", [(30, 10, 3), (30, 10, 5), (25, 10, 4), (4, 4, 2)])
def test_device_to_host_stream_into_connected_array(buffer, copy_size, copies):
    device, graph = make_graph(8)
    v = graph.addVariable(poplar.FLOAT, [copy_size], poplar.VariableMappingMethod.LINEAR, "v")
    inc = graph.addHostToDeviceFIFO("in", poplar.FLOAT, copy_size)
    out = graph.addDeviceToHostFIFO("out", poplar.FLOAT, copy_size)
    engine = poplar.Engine(graph, prog.Repeat(copies, prog.Sequence([prog.Copy(inc, v), prog.Copy(v, out)])))
    engine.load(device)
    source = np.arange(copies * copy_size, dtype=np.float32) * 0.5
    engine.connectStream("in", source)
    host = np.full(buffer, -1.0, dtype=np.float32)
    engine.connectStream("out", host)
    engine.run(0)
    expected = np.full(buffer, -1.0, dtype=np.float32)
    positions = np.arange(copies * copy_size) % buffer
    for k, p in enumerate(positions):  # later writes win
        expected[p] = source[k]
    np.testing.assert_array_equal(host, expected)


def test_stream_into_views():
    """A stream copy fills the destination view in its flattened order."""
    device, graph = make_graph(8)
    m = graph.addVariable(poplar.INT, [4, 6], "m")
    graph.setTileMapping(m, [[(k * 3, k * 3 + 3)] for k in range(8)])
    s = graph.addHostToDeviceFIFO("in", poplar.INT, 12)
    out = graph.addDeviceToHostFIFO("out", poplar.INT, 8)
    graph.createHostRead("m", m)
    view = m.transpose().slice(1, 3, 1).reverse(0)
    engine = poplar.Engine(graph, [prog.Copy(s, view), prog.Copy(m.slice(2, 4, 1), out)])
    engine.load(device)
    data = np.arange(12, dtype=np.int32) + 1
    engine.connectStream("in", data)
    host = np.zeros(8, dtype=np.int32)
    engine.connectStream("out", host)
    engine.run(0)
    expected = np.zeros((4, 6), dtype=np.int32)
    np.flip(expected.T[:, 1:3], 0)[...] = data.reshape(6, 2)
    np.testing.assert_array_equal(engine.readTensor("m"), expected)
    engine.run(1)
    np.testing.assert_array_equal(host, expected[:, 2:4].reshape(-1))


def test_connect_stream_to_callback_both_directions():
    device, graph = make_graph(4)
    v = graph.addVariable(poplar.INT, [3], poplar.VariableMappingMethod.LINEAR, "v")
    inc = graph.addHostToDeviceFIFO("in", poplar.INT, 3)
    out = graph.addDeviceToHostFIFO("out", poplar.INT, 3)
    body = prog.Sequence([prog.Copy(inc, v), prog.Copy(v.reverse(0), out)])
    engine = poplar.Engine(graph, prog.Repeat(3, body))
    engine.load(device)
    calls = {"n": 0}

    def fill(a: np.ndarray) -> None:
        assert a.shape == (3,) and a.dtype == np.int32
        a[...] = np.arange(3) + 10 * calls["n"]
        calls["n"] += 1

    received = []
    engine.connectStreamToCallback("in", fill)
    engine.connectStreamToCallback("out", lambda a: received.append(a.tolist()))
    engine.run(0)
    assert received == [[2, 1, 0], [12, 11, 10], [22, 21, 20]]
    # Reconnecting replaces the callback by a buffer.
    engine.connectStream("in", np.array([7, 8, 9], dtype=np.int32))
    engine.run(0)
    assert received[-1] == [9, 8, 7]


# ---- engine state, programs, host access --------------------------------------------------------

def test_runs_keep_state():
    device, graph = make_graph(8)
    v = graph.addVariable(poplar.INT, [8], poplar.VariableMappingMethod.LINEAR, "v")
    graph.setInitialValue(v, np.arange(8))
    graph.createHostRead("v", v)
    engine = poplar.Engine(graph, prog.Copy(poplar.concat([v[1:], v[:1]]), v))
    engine.load(device)
    for k in range(1, 11):
        engine.run()
        np.testing.assert_array_equal(engine.readTensor("v"), np.roll(np.arange(8), -k))


def test_multiple_programs_by_index():
    device, graph = make_graph(8)
    v = graph.addVariable(poplar.FLOAT, [4], poplar.VariableMappingMethod.LINEAR, "v")
    c = [graph.addConstant(poplar.FLOAT, [4], float(k), f"c{k}") for k in range(3)]
    for k in range(3):
        graph.setTileMapping(c[k], k)
    graph.createHostRead("v", v)
    engine = poplar.Engine(graph, [prog.Copy(c[k], v) for k in range(3)])
    engine.load(device)
    for k in [2, 0, 1, 1, 2]:
        engine.run(k)
        np.testing.assert_array_equal(engine.readTensor("v"), [float(k)] * 4)


def test_write_and_read_tensor():
    device, graph = make_graph(8)
    m = graph.addVariable(poplar.FLOAT, [3, 5], "m")
    rng = np.random.default_rng(1)
    random_mapping(graph, m, rng, 8)
    graph.createHostWrite("m-t", m.transpose())
    graph.createHostRead("m", m)
    graph.createHostRead("m-row", m[1])
    engine = poplar.Engine(graph, prog.Sequence())
    engine.load(device)
    values = rng.standard_normal((5, 3)).astype(np.float32)
    engine.writeTensor("m-t", values)
    np.testing.assert_array_equal(engine.readTensor("m"), values.T)
    out = np.zeros(5, dtype=np.float32)
    assert engine.readTensor("m-row", out) is out
    np.testing.assert_array_equal(out, values.T[1])
    out2d = np.zeros((3, 5), dtype=np.float32)
    engine.readTensor("m", out2d)
    np.testing.assert_array_equal(out2d, values.T)
    engine.writeTensor("m-t", values.reshape(-1).tolist())  # any array-like of the right size
    np.testing.assert_array_equal(engine.readTensor("m"), values.T)
    got = engine.readTensor("m")
    got[...] = 0  # a copy, not device memory
    np.testing.assert_array_equal(engine.readTensor("m"), values.T)


def test_load_twice_resets_memory():
    device, graph = make_graph(4)
    v = graph.addVariable(poplar.INT, [2], poplar.VariableMappingMethod.LINEAR)
    graph.createHostWrite("w", v)
    graph.createHostRead("r", v)
    engine = poplar.Engine(graph, prog.Sequence())
    engine.load(device)
    engine.writeTensor("w", np.array([5, 6], dtype=np.int32))
    engine.load(device)
    np.testing.assert_array_equal(engine.readTensor("r"), [0, 0])


def test_load_and_run():
    device, graph = make_graph(4)
    v = graph.addVariable(poplar.INT, [2], poplar.VariableMappingMethod.LINEAR)
    c = graph.addConstant(poplar.INT, [2], [3, 4])
    graph.setTileMapping(c, 1)
    graph.createHostRead("r", v)
    engine = poplar.Engine(graph, [prog.Sequence(), prog.Copy(c, v)])
    engine.loadAndRun(device, 1)
    np.testing.assert_array_equal(engine.readTensor("r"), [3, 4])


# ---- misuse ------------------------------------------------------------------------------------

def _stream_engine():
    device, graph = make_graph(4)
    v = graph.addVariable(poplar.INT, [4], poplar.VariableMappingMethod.LINEAR, "v")
    s = graph.addHostToDeviceFIFO("in", poplar.INT, 4)
    o = graph.addDeviceToHostFIFO("out", poplar.INT, 4)
    graph.createHostWrite("w", v)
    graph.createHostRead("r", v)
    engine = poplar.Engine(graph, [prog.Copy(s, v), prog.Copy(v, o), prog.Sequence()])
    engine.load(device)
    return engine


def test_unconnected_stream_at_run():
    engine = _stream_engine()
    with pytest.raises(poplar.StreamError, match="'in'"):
        engine.run(0)
    with pytest.raises(poplar.StreamError, match="'out'"):
        engine.run(1)
    engine.run(2)  # programs without streams still run


@pytest.mark.parametrize("handle,array", [
    ("in", np.zeros(4, dtype=np.float64)),
    ("in", np.zeros(4, dtype=np.int64)),
    ("out", np.zeros(4, dtype=np.uint16)),
    ("in", np.zeros(4, dtype=np.complex64)),
    ("in", [0, 1, 2, 3]),
    ("out", np.zeros((4, 4), dtype=np.int32)[:, 0]),
    ("in", np.zeros(0, dtype=np.int32)),
])
def test_connect_stream_bad_array(handle, array):
    engine = _stream_engine()
    with pytest.raises(poplar.StreamError, match=re.escape(f"'{handle}'")):
        engine.connectStream(handle, array)


def test_connect_stream_read_only_output():
    engine = _stream_engine()
    ro = np.zeros(4, dtype=np.int32)
    ro.flags.writeable = False
    with pytest.raises(poplar.StreamError, match="'out'"):
        engine.connectStream("out", ro)
    engine.connectStream("in", ro)  # reading from a read-only buffer is fine


def test_unknown_stream_handle():
    engine = _stream_engine()
    with pytest.raises(poplar.StreamError, match="'nope'"):
        engine.connectStream("nope", np.zeros(4, dtype=np.int32))
    with pytest.raises(poplar.StreamError, match="'nope'"):
        engine.connectStreamToCallback("nope", print)
    with pytest.raises(poplar.StreamError, match="'w'"):  # a host write handle is not a stream
        engine.connectStream("w", np.zeros(4, dtype=np.int32))
    assert sorted(engine.listStreams()) == ["in", "out"]


def test_host_read_write_misuse():
    engine = _stream_engine()
    with pytest.raises(poplar.StreamError, match="'nope'"):
        engine.writeTensor("nope", np.zeros(4, dtype=np.int32))
    with pytest.raises(poplar.StreamError, match="'nope'"):
        engine.readTensor("nope")
    with pytest.raises(poplar.StreamError, match="'r'"):
        engine.writeTensor("r", np.zeros(4, dtype=np.int32))  # a read handle
    with pytest.raises(poplar.StreamError, match="'w'"):
        engine.readTensor("w")  # a write handle
    with pytest.raises(poplar.StreamError, match="'in'"):
        engine.readTensor("in")  # a stream
    with pytest.raises(poplar.StreamError) as info:
        engine.writeTensor("w", np.zeros(5, dtype=np.int32))
    assert "5" in str(info.value) and "4" in str(info.value)
    with pytest.raises(poplar.StreamError):
        engine.writeTensor("w", np.zeros(3, dtype=np.int32))
    with pytest.raises(poplar.StreamError, match=r"5 values \(20 bytes\).*4 elements \(16 bytes\)"):
        engine.writeTensor("w", np.zeros(5, dtype=np.float32))
    with pytest.raises(poplar.StreamError):
        engine.readTensor("r", np.zeros(5, dtype=np.int32))
    with pytest.raises(poplar.StreamError, match=r"4 int32 elements \(16 bytes\), got 4 float64"):
        engine.readTensor("r", np.zeros(4, dtype=np.float64))
    with pytest.raises(poplar.InvalidArgumentError, match=r"'r'.*numpy array"):
        engine.readTensor("r", [0, 0, 0, 0])
    for handle in (None, 3, ["w"]):
        with pytest.raises(poplar.InvalidArgumentError, match="handle"):
            engine.writeTensor(handle, np.zeros(4, dtype=np.int32))
        with pytest.raises(poplar.InvalidArgumentError, match="handle"):
            engine.readTensor(handle)


def test_host_buffers_of_another_type_are_raw_bytes():
    """As C++'s void*: a buffer of another element type with the tensor's bytes."""
    engine = _stream_engine()
    values = np.array([-1, 2, -3, 2**31 - 1], dtype=np.int32)
    engine.writeTensor("w", values.view(np.uint32))
    out = np.zeros(4, np.uint32)
    assert engine.readTensor("r", out) is out
    np.testing.assert_array_equal(out, values.view(np.uint32))
    floats = np.array([1.5, -2.0, 0.25, 3.0], np.float32)
    engine.writeTensor("w", floats)  # float32 into INT: the bits, not the values
    np.testing.assert_array_equal(engine.readTensor("r"), floats.view(np.int32))
    wide = np.zeros((2, 1), np.float64)  # 16 bytes of another shape and type
    engine.readTensor("r", wide)
    np.testing.assert_array_equal(wide.view(np.float32).reshape(-1), floats)
    engine.writeTensor("w", np.array([1, 2, 3, 4]))  # int64 values of the right count: converted
    np.testing.assert_array_equal(engine.readTensor("r"), [1, 2, 3, 4])
    with pytest.raises(poplar.StreamError, match="cannot convert float64"):
        engine.writeTensor("w", np.array([1.0, 2.0, 3.0, 4.0]))
    bits = np.array([1.0, 2.0], np.float64)  # 16 bytes of another count: raw bytes
    engine.writeTensor("w", bits)
    np.testing.assert_array_equal(engine.readTensor("r"), bits.view(np.int32))


def test_streams_take_their_data_stream_and_buffers_of_the_same_element_size():
    device, graph = make_graph(4)
    v = graph.addVariable(poplar.HALF, [4], poplar.VariableMappingMethod.LINEAR, "v")
    s = graph.addHostToDeviceFIFO("in", poplar.HALF, 4)
    o = graph.addDeviceToHostFIFO("out", poplar.HALF, 4)
    engine = poplar.Engine(graph, prog.Sequence([prog.Copy(s, v), prog.Copy(v, o)]))
    engine.load(device)
    host_in = np.array([0.5, -1.0, 2.0, 65504.0], np.float16)
    engine.connectStream(s, host_in.view(np.uint16))  # the DataStream, bit patterns as uint16
    got = np.zeros(4, np.uint16)
    engine.connectStream(o, got)
    engine.run(0)
    np.testing.assert_array_equal(got.view(np.float16), host_in)
    seen = []
    engine.connectStreamToCallback(o, lambda p: seen.append(p.copy()))
    engine.run(0)
    np.testing.assert_array_equal(seen[0], host_in)
    other = poplar.Graph(device).addHostToDeviceFIFO("in", poplar.FLOAT, 4)
    with pytest.raises(poplar.StreamError, match="'in' of another graph"):
        engine.connectStream(other, np.zeros(4, np.float32))
    with pytest.raises(poplar.InvalidArgumentError, match="handle string or a DataStream"):
        engine.connectStream(4, np.zeros(4, np.float16))


def test_run_and_host_access_before_load():
    _, graph = make_graph(4)
    v = graph.addVariable(poplar.INT, [4], poplar.VariableMappingMethod.LINEAR)
    graph.createHostRead("r", v)
    graph.createHostWrite("w", v)
    engine = poplar.Engine(graph, prog.Sequence())
    for call in (lambda: engine.run(0), lambda: engine.readTensor("r"),
                 lambda: engine.writeTensor("w", np.zeros(4, np.int32))):
        with pytest.raises(poplar.PoplarError, match="load"):
            call()


@pytest.mark.parametrize("index", [1, 5, -1])
def test_run_index_out_of_range(index):
    device, graph = make_graph(4)
    engine = poplar.Engine(graph, prog.Sequence())
    engine.load(device)
    with pytest.raises(poplar.ProgramError, match=re.escape(str(index))):
        engine.run(index)


def test_load_on_a_device_with_other_tile_count():
    _, graph = make_graph(4)
    engine = poplar.Engine(graph, prog.Sequence())
    with pytest.raises(poplar.PoplarError, match="4"):
        engine.load(make_device(8))


# ---- options -----------------------------------------------------------------------------------

def _small_engine(options=None):
    _, graph = make_graph(4)
    v = graph.addVariable(poplar.INT, [4], poplar.VariableMappingMethod.LINEAR)
    return poplar.Engine(graph, prog.Copy(v.reverse(0), v), options)


@pytest.mark.parametrize("options", [
    {"bogus": "true"},
    {"debug.allowOutofmemory": "true"},
    {"tileMapping.strict": "true", "no.such.option": "1"},
])
def test_unknown_option(options):
    with pytest.raises(poplar.InvalidOptionError) as info:
        _small_engine(options)
    bad = next(k for k in options if k not in ("tileMapping.strict",))
    assert bad in str(info.value)


def test_unknown_option_suggests_close_name():
    with pytest.raises(poplar.InvalidOptionError, match=r"debug\.allowOutOfMemory"):
        _small_engine({"allowOutOfMemory": "true"})


@pytest.mark.parametrize("options", [
    {"debug.allowOutOfMemory": "maybe"},
    {"tileMapping.strict": "1"},
    {"codelets.mode": "fast"},
    {"autoReport.executionProfileProgramRunCount": "-3"},
    {"autoReport.executionProfileProgramRunCount": "many"},
    {"codelets.cycleBudget": "-1"},
    {"codelets.cycleBudget": "lots"},
])
def test_bad_option_value(options):
    with pytest.raises(poplar.InvalidOptionError) as info:
        _small_engine(options)
    name, value = next(iter(options.items()))
    assert name in str(info.value) and value in str(info.value)


@pytest.mark.parametrize("options", [
    {}, None, {"debug.allowOutOfMemory": "true"}, {"tileMapping.strict": "FALSE"},
    {"debug.allowOutOfMemory": True}, {"codelets.mode": "interpreter"},
    {"autoReport.executionProfileProgramRunCount": "5"}, {"codelets.cycleBudget": "0x1000"},
    {"codelets.cycleBudget": 10**30},
])
def test_good_options(options):
    _small_engine(options)


def test_options_from_environment(monkeypatch):
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", '{"bogus.option": "true"}')
    with pytest.raises(poplar.InvalidOptionError, match=r"bogus\.option"):
        _small_engine()
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", '{"debug.allowOutOfMemory": "perhaps"}')
    with pytest.raises(poplar.InvalidOptionError, match="perhaps"):
        _small_engine()
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", "{not json")
    with pytest.raises(poplar.InvalidOptionError, match="POPLAR_ENGINE_OPTIONS"):
        _small_engine()
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", '["a", "list"]')
    with pytest.raises(poplar.InvalidOptionError, match="POPLAR_ENGINE_OPTIONS"):
        _small_engine()
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", '{"debug.allowOutOfMemory": "true"}')
    _small_engine()


def test_environment_options_override_and_apply(monkeypatch):
    _, graph = make_graph(4)
    graph.addVariable(poplar.FLOAT, [4], "unmapped")
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", '{"tileMapping.strict": "true"}')
    with pytest.raises(poplar.InvalidTileMappingError, match="unmapped"):
        poplar.Engine(graph, prog.Sequence())
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", '{"tileMapping.strict": "false"}')
    poplar.Engine(graph, prog.Sequence(), {"tileMapping.strict": "true"})


# ---- tile mapping at compile time --------------------------------------------------------------

def test_strict_mapping_rejects_unmapped():
    _, graph = make_graph(8)
    ok = graph.addVariable(poplar.FLOAT, [4], poplar.VariableMappingMethod.LINEAR, "ok")
    partial = graph.addVariable(poplar.FLOAT, [4], "partial")
    graph.setTileMapping(partial[:2], 1)
    with pytest.raises(poplar.InvalidTileMappingError) as info:
        poplar.Engine(graph, prog.Copy(ok, partial), {"tileMapping.strict": "true"})
    assert "partial" in str(info.value) and "element 2" in str(info.value)
    constant = graph.addConstant(poplar.FLOAT, [2], 1.0, "unmappedconst")
    graph.setTileMapping(partial, 0)
    with pytest.raises(poplar.InvalidTileMappingError, match="unmappedconst"):
        poplar.Engine(graph, prog.Copy(constant, partial[:2]), {"tileMapping.strict": "true"})


def test_auto_mapping_when_not_strict():
    device, graph = make_graph(8)
    a = graph.addVariable(poplar.FLOAT, [300], "a")  # unmapped
    b = graph.addVariable(poplar.FLOAT, [300], "b")
    graph.setTileMapping(b[:100], 7)  # partly mapped
    c = graph.addConstant(poplar.FLOAT, [300], np.arange(300), "c")  # unmapped constant
    graph.createHostRead("b", b)
    engine = poplar.Engine(graph, prog.Sequence([prog.Copy(c, a), prog.Copy(a.reverse(0), b)]))
    engine.load(device)
    engine.run(0)
    np.testing.assert_array_equal(engine.readTensor("b"), np.arange(300)[::-1])
    # The user's mapping is not changed by compiling.
    assert graph.getTileMapping(b, False)[7] == [(0, 100)]
    assert graph.getTileMapping(a, False) == [[]] * 8


def test_many_small_unmapped_variables_spread():
    device, graph = make_graph(8)
    vs = [graph.addVariable(poplar.INT, [40], f"v{k}") for k in range(16)]
    graph.createHostRead("last", vs[-1])
    seq = prog.Sequence([prog.Copy(vs[k], vs[k + 1]) for k in range(15)])
    graph.setInitialValue(vs[0], np.arange(40))
    engine = poplar.Engine(graph, seq)
    engine.load(device)
    engine.run(0)
    np.testing.assert_array_equal(engine.readTensor("last"), np.arange(40))


# ---- tile memory -------------------------------------------------------------------------------

def test_out_of_memory():
    device, graph = make_graph(4)
    limit = device.getTarget().getBytesPerTile()
    big = graph.addVariable(poplar.FLOAT, [limit // 4 + 1000], "big")
    graph.setTileMapping(big, 2)
    small = graph.addVariable(poplar.FLOAT, [16], poplar.VariableMappingMethod.LINEAR, "small")
    with pytest.raises(poplar.GraphMemoryAllocationError) as info:
        poplar.Engine(graph, prog.Copy(small, big[:16]))
    message = str(info.value)
    assert "tile 2" in message and "debug.allowOutOfMemory" in message and f"{limit:,}" in message
    assert isinstance(info.value, poplar.PoplarError)
    engine = poplar.Engine(graph, prog.Copy(small, big[:16]), {"debug.allowOutOfMemory": "true"})
    engine.load(device)
    engine.run(0)


def test_out_of_memory_ipu1_and_exact_fit():
    m = poplar.IPUModel("ipu1")
    m.tilesPerIPU = 2
    device = m.createDevice()
    graph = poplar.Graph(device)
    # The program's control code takes 16 bytes on every tile; the variable fills the rest.
    v = graph.addVariable(poplar.FLOAT, [(262_144 - 16) // 4], "fits")
    graph.setTileMapping(v, 0)
    poplar.Engine(graph, prog.Sequence())
    w = graph.addVariable(poplar.CHAR, [1], "onemore")
    graph.setTileMapping(w, 0)
    with pytest.raises(poplar.GraphMemoryAllocationError, match="tile 0"):
        poplar.Engine(graph, prog.Sequence())
    graph.setTileMapping(w, 1)
    poplar.Engine(graph, prog.Sequence())


def test_memory_spread_over_tiles_fits():
    device, graph = make_graph(8)
    limit = device.getTarget().getBytesPerTile()
    v = graph.addVariable(poplar.FLOAT, [limit // 4 * 4], poplar.VariableMappingMethod.LINEAR, "spread")
    poplar.Engine(graph, prog.WriteUndef(v))


def test_cpu_device_runs_programs():
    device = poplar.Device.createCPUDevice()
    graph = poplar.Graph(device)
    v = graph.addVariable(poplar.FLOAT, [2, 3], "v")  # auto-mapped to the only tile
    assert graph.getTileMapping(v) == [[(0, 6)]]
    graph.setInitialValue(v, np.arange(6))
    out = graph.addVariable(poplar.FLOAT, [3, 2], "out")
    graph.createHostRead("out", out)
    engine = poplar.Engine(graph, prog.Copy(v.transpose(), out), {"tileMapping.strict": "true"})
    engine.load(device)
    engine.run(0)
    np.testing.assert_array_equal(engine.readTensor("out"), np.arange(6).reshape(2, 3).T)


def test_dump_ir_writes_the_frozen_graph(tmp_path, monkeypatch):
    _, graph = make_graph(4)
    t = graph.addVariable(poplar.FLOAT, [6], "dumped")
    graph.setTileMapping(t, 2)
    path = tmp_path / "ir.txt"
    monkeypatch.setenv("POPLAR_PY_DUMP_IR", str(path))
    poplar.Engine(graph, prog.WriteUndef(t))
    text = path.read_text()
    assert "variables: 1 (6 elements)" in text and "'dumped' float [6]: [0,6)->2" in text


# ---- vertices that would run on: zero range steps, the cycle budget, Ctrl-C --------------------

class Steps(poplar.Vertex):
    x: poplar.Input[poplar.Vector[float]]
    out: poplar.Output[float]
    step: int

    def compute(self):
        s = 0.0
        for i in range(len(self.x) - 1, -1, self.step):
            s += self.x[i]
        self.out = s


class Spin(poplar.Vertex):
    out: poplar.Output[float]
    n: int

    def compute(self):
        s = 0.0
        while self.n > 0:
            s += 1.0
        self.out = s


class Turns(poplar.Vertex):
    out: poplar.Output[float]
    n: int

    def compute(self):
        s = 0.0
        for _i in range(self.n):
            for _j in range(self.n):
                s += 1.0
        self.out = s


def _line(cls, text: str) -> int:
    lines, first = inspect.getsourcelines(cls)
    return first + next(k for k, line in enumerate(lines) if text in line)


def _vertex_engine(cls, values, options=None, tiles=(3,)):
    """An engine running one ``cls`` vertex per tile (its state fields set to ``values``), each
    summing into ``out``."""
    device, graph = make_graph(4)
    graph.addCodelets(cls)
    x = graph.addConstant(poplar.FLOAT, [5], [1.0, 2.0, 3.0, 4.0, 5.0])
    out = graph.addVariable(poplar.FLOAT, [len(tiles)], "out")
    cs = graph.addComputeSet("running")
    for k, tile in enumerate(tiles):
        graph.setTileMapping(out[k], tile)
        v = graph.addVertex(cs, cls.__name__, {"out": out[k], **({"x": x} if "x" in cls.fields else {})})
        graph.setTileMapping(v, tile)
        for name, value in values.items():
            graph.setInitialValue(v[name], value)
    graph.setTileMapping(x, tiles[0])
    graph.createHostRead("out", out)
    engine = poplar.Engine(graph, prog.Execute(cs), options)
    engine.load(device)
    return engine


@pytest.mark.parametrize("mode", ["native", "interpreter"])
def test_zero_range_step_at_run_time_names_vertex_tile_file_and_line(mode):
    for step, expected in ((-1, 15.0), (-2, 9.0), (-4, 6.0)):
        engine = _vertex_engine(Steps, {"step": step}, {"codelets.mode": mode})
        engine.run()
        assert engine.readTensor("out")[0] == expected
    engine = _vertex_engine(Steps, {"step": 0}, {"codelets.mode": mode})
    where = rf"Steps\.compute \({re.escape(__file__)}:{_line(Steps, 'for i in range')}\)"
    with pytest.raises(poplar.VertexError, match=rf"vertex 0 \(Steps, test_engine\.py:\d+\) on tile 3 in "
                       rf"compute set 'running': range\(\) arg 3 must not be zero in {where}"):
        engine.run()


@pytest.mark.parametrize("cls,line", [(Spin, "while self.n"), (Turns, "for _j in range")])
def test_vertex_past_the_cycle_budget_fails(cls, line):
    budget = 100_000
    engine = _vertex_engine(cls, {"n": 100_000}, {"codelets.cycleBudget": budget}, tiles=(1, 2, 3))
    start = time.perf_counter()
    with pytest.raises(poplar.VertexError) as info:
        engine.run()
    assert time.perf_counter() - start < 1.0
    message = str(info.value)
    assert re.match(rf"vertex 0 \({cls.__name__}, test_engine\.py:\d+\) on tile 1 in compute set 'running': "
                    rf"codelet {cls.__name__} runs past the cycle budget of {budget} cycles \(engine option "
                    rf"codelets\.cycleBudget\) in {cls.__name__}\.compute \({re.escape(__file__)}:"
                    rf"{_line(cls, line)}, having counted \d+\)", message), message
    counted = int(re.search(r"having counted (\d+)", message)[1])
    assert budget < counted < budget + 5 * 4096  # checked within a chunk of turns


def test_cycle_budget_holds_the_count_of_the_whole_vertex():
    # loops of 50 turns never check: the vertex's count is checked when it returns
    with pytest.raises(poplar.VertexError, match=r"budget of 5000 cycles") as info:
        _vertex_engine(Turns, {"n": 50}, {"codelets.cycleBudget": 5000}).run()
    assert f"Turns.compute ({__file__}:{_line(Turns, 'def compute')}, having counted" in str(info.value)
    counted = int(re.search(r"having counted (\d+)", str(info.value))[1])
    assert counted > 2 * 50 * 50  # each inner turn counts its test and its step at least
    engine = _vertex_engine(Turns, {"n": 50}, {"codelets.cycleBudget": counted})  # just enough
    engine.run()
    assert engine.readTensor("out")[0] == 2500.0
    with pytest.raises(poplar.VertexError, match=rf"budget of {counted - 1} cycles.*counted {counted}\)"):
        _vertex_engine(Turns, {"n": 50}, {"codelets.cycleBudget": counted - 1}).run()
    # the interpreter counts no cycles: no budget
    engine = _vertex_engine(Turns, {"n": 50}, {"codelets.mode": "interpreter", "codelets.cycleBudget": 10})
    engine.run()
    assert engine.readTensor("out")[0] == 2500.0


def test_ctrl_c_stops_a_vertex_that_never_returns():
    engine = _vertex_engine(Spin, {"n": 1})
    where = rf"Spin\.compute \({re.escape(__file__)}:{_line(Spin, 'while self.n')}\)"
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    start = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt, match=rf"Engine\.run: vertex 0 \(Spin, test_engine\.py:\d+\) "
                           rf"on tile 3 in compute set 'running': stopped by Ctrl-C in {where}"):
            engine.run()
    finally:
        timer.cancel()
    assert time.perf_counter() - start < 1.5
    assert ctypes.c_int64.from_address(stop_address()).value == 0  # kernels run after it go on
    # Python's own handling is back: the next Ctrl-C interrupts Python code
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)
