"""Host ends of streams: circular arrays with an end, functions, and StreamCallback with prefetch
(a port of Graphcore's prefetch example)."""

from __future__ import annotations

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import Input, Output, Vector, Vertex
from poplar_py import program as prog
from poplar_py.errors import StreamError

PREFETCH = {"exchange.streamBufferOverlap": "none", "exchange.enablePrefetch": "true"}


class Increment(Vertex):
    x: Input[Vector[float]]
    y: Output[Vector[float]]

    def compute(self):
        for i in range(len(self.x)):
            self.y[i] = self.x[i] + 1.0


def _engine(options: dict | None = None, elements: int = 8,
            repeat: int = 5) -> tuple[poplar.Engine, np.ndarray]:
    """The prefetch example's program: repeat (in -> t, t += 1, t -> out)."""
    device = poplar.IPUModel().createDevice()
    graph = poplar.Graph(device)
    graph.addCodelets(Increment)
    t = graph.addVariable(poplar.FLOAT, [elements], "data")
    graph.setTileMapping(t, 0)
    cs = graph.addComputeSet("cs")
    v = graph.addVertex(cs, "Increment")
    graph.setTileMapping(v, 0)
    y = graph.addVariable(poplar.FLOAT, [elements], "y")
    graph.setTileMapping(y, 0)
    graph.connect(v["x"], t)
    graph.connect(v["y"], y)
    inp = graph.addHostToDeviceFIFO("in", poplar.FLOAT, elements)
    out = graph.addDeviceToHostFIFO("out", poplar.FLOAT, elements)
    engine = poplar.Engine(graph, prog.Repeat(repeat, prog.Sequence([prog.Copy(inp, t), prog.Execute(cs),
                                                                     prog.Copy(y, out)])), options)
    engine.load(device)
    host_out = np.zeros(elements, np.float32)
    engine.connectStream("out", host_out)
    return engine, host_out


class Fill(poplar.StreamCallback):
    """The example's FillCallback, recording what Poplar asks of it."""

    def __init__(self, value: float, log: list, available: bool = True) -> None:
        self.value, self.log, self.available = value, log, available

    def prefetch(self, p):
        self.log.append(("prefetch", self.value))
        if not self.available:
            return poplar.StreamCallback.Result.NotAvailable
        p[:] = self.value
        return poplar.StreamCallback.Result.Success

    def fetch(self, p):
        self.log.append(("fetch", self.value))
        p[:] = self.value

    def complete(self):
        self.log.append(("complete", self.value))

    def invalidatePrefetched(self):
        self.log.append(("invalidate", self.value))


def test_the_prefetch_example_fetches_once_per_callback_and_prefetches_the_rest():
    engine, out = _engine(PREFETCH)
    log: list = []
    previous = None
    for value in (1.0, 3.0, 3.0, 9.0, 9.0):
        if value != previous:
            engine.connectStreamToCallback("in", Fill(value, log))
        engine.run(0)
        np.testing.assert_array_equal(out, np.full(8, value + 1))
        previous = value
    calls = [kind for kind, _ in log]
    assert calls.count("fetch") == 3  # once per callback: every other transfer was prefetched
    assert calls.count("complete") == 25 and calls.count("prefetch") == 25
    assert [v for kind, v in log if kind == "invalidate"] == [1.0, 3.0]  # replaced with data prefetched
    assert log[:4] == [("fetch", 1.0), ("complete", 1.0), ("prefetch", 1.0), ("complete", 1.0)]


def test_a_prefetch_that_is_not_available_falls_back_to_fetch():
    engine, out = _engine(PREFETCH, repeat=3)
    log: list = []
    engine.connectStreamToCallback("in", Fill(2.0, log, available=False))
    engine.run(0)
    np.testing.assert_array_equal(out, np.full(8, 3.0))
    assert [kind for kind, _ in log] == ["fetch", "complete", "prefetch"] * 3


def test_without_the_prefetch_options_every_transfer_is_fetched():
    engine, _ = _engine(repeat=3)
    log: list = []
    engine.connectStreamToCallback("in", Fill(2.0, log))
    engine.run(0)
    assert [kind for kind, _ in log] == ["fetch", "complete"] * 3


def test_device_to_host_callbacks_get_the_data_read_only():
    engine, _ = _engine(repeat=2)
    engine.connectStream("in", np.arange(16, dtype=np.float32))
    seen = []

    class Take(poplar.StreamCallback):
        def fetch(self, p):
            seen.append(p.copy())
            assert not p.flags.writeable

    engine.connectStreamToCallback("out", Take())
    engine.run(0)
    np.testing.assert_array_equal(np.concatenate(seen), np.arange(16, dtype=np.float32) + 1)


def test_connect_stream_honours_its_end():
    engine, _ = _engine(repeat=3)
    data = np.arange(24, dtype=np.float32)
    engine.connectStream("in", data, 12)  # a circular buffer of the first 12 elements
    seen = []
    engine.connectStreamToCallback("out", lambda p: seen.append(p.copy()))
    engine.run(0)
    expected = np.concatenate([data[0:8], np.r_[data[8:12], data[0:4]], data[4:12]]) + 1
    np.testing.assert_array_equal(np.concatenate(seen), expected)
    with pytest.raises(StreamError, match="end"):
        engine.connectStream("in", data, 25)
    with pytest.raises(StreamError, match="StreamCallback or a function"):
        engine.connectStreamToCallback("in", 3)


def test_stream_options_are_checked():
    with pytest.raises(poplar.InvalidOptionError, match="streamBufferOverlap"):
        _engine({"exchange.streamBufferOverlap": "sometimes"})
