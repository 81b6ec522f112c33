"""Run-time behaviour: error records, state layout for every type, cycle counts, vectorisation."""

import inspect

import numpy as np
import pytest
from codelet_harness import MODES, STRICT, isolated_cache, optimised_ir, run, run_one  # noqa: F401

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py import types as T  # noqa: N812
from poplar_py.codelet.codelet_compiler import (
    ERR_ASSERTION,
    ERR_OUT_OF_BOUNDS,
    ERR_RETURNED_FALSE,
    KernelOptions,
    compile_codelet,
    error_message,
)
from poplar_py.vertex import Input, MultiVertex, Output, Vector, VectorList, Vertex


def helper_read(v, i):
    return v[i]


class ReadAt(Vertex):
    x: Input[Vector[float]]
    i: Input[int]
    out: Output[float]

    def compute(self):
        self.out = self.x[self.i]


class WriteAt(Vertex):
    i: Input[int]
    out: Output[Vector[float]]

    def compute(self):
        for k in range(len(self.out)):
            self.out[k] = 1.0
        self.out[self.i] = 2.0


class ListAt(Vertex):
    rows: Input[VectorList[int]]
    k: Input[int]
    j: Input[int]
    out: Output[int]

    def compute(self):
        self.out = helper_read(self.rows[self.k], self.j)


class Fails(Vertex):
    x: Input[int]

    def compute(self):
        if self.x > 2:
            return False
        return self.x >= 0


def line_of(code, text):
    """The line of ``text`` in a function, or in a vertex class's compute."""
    lines, start = inspect.getsourcelines(getattr(code, "compute", code))
    return start + next(i for i, t in enumerate(lines) if text in t)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("index", [-1, 3, 1000])
def test_out_of_bounds_read(mode, index):
    verts = [{"x": [1.0, 2.0, 3.0], "i": 0, "out": 0.0}, {"x": [1.0, 2.0, 3.0], "i": index, "out": 0.0}]
    r = run(ReadAt, verts, mode)
    assert r.err is not None
    assert (r.err["vertex"], r.err["code"], r.err["field"], r.err["index"], r.err["size"]) == (
        1,
        ERR_OUT_OF_BOUNDS,
        0,
        index,
        3,
    )
    assert r.err["line"] == line_of(ReadAt, "self.x[self.i]")
    assert r.fields[0]["out"][0] == 1.0  # the first vertex ran
    msg = error_message(ReadAt, r.err, "vertex 7 (ReadAt) on tile 3")
    assert "vertex 7 (ReadAt) on tile 3" in msg and "'x'" in msg and f"index {index}" in msg
    assert "size 3" in msg and f"test_codelet_runtime.py:{r.err['line']}" in msg


@pytest.mark.parametrize("mode", MODES)
def test_out_of_bounds_write_stops_after_earlier_writes(mode):
    r = run_one(WriteAt, mode, i=4, out=[0.0] * 4)
    assert r.err is not None and r.err["code"] == ERR_OUT_OF_BOUNDS
    assert (r.err["field"], r.err["index"], r.err["size"]) == (1, 4, 4)
    assert r.err["line"] == line_of(WriteAt, "self.out[self.i] = 2.0")
    assert list(r.fields[0]["out"]) == [1.0] * 4


@pytest.mark.parametrize("mode", MODES)
def test_out_of_bounds_in_list_and_helper(mode):
    rows = [np.array([1, 2], np.int32), np.array([3], np.int32)]
    r = run_one(ListAt, mode, rows=rows, k=1, j=0, out=0)
    assert r.err is None and r.fields[0]["out"][0] == 3
    r = run_one(ListAt, mode, rows=rows, k=2, j=0, out=0)
    assert (r.err["field"], r.err["index"], r.err["size"]) == (0, 2, 2)
    assert r.err["line"] == line_of(ListAt, "self.rows[self.k]")
    r = run_one(ListAt, mode, rows=rows, k=1, j=1, out=0)
    assert (r.err["field"], r.err["index"], r.err["size"]) == (0, 1, 1)
    assert r.err["line"] == inspect.getsourcelines(helper_read)[1] + 1


def test_unchecked_kernels_have_no_bounds_checks():
    checked = compile_codelet(ReadAt, STRICT)
    unchecked = compile_codelet(ReadAt, KernelOptions(checked=False, fast_math=False))
    assert "out_of_bounds" in checked.ir and "out_of_bounds" not in unchecked.ir
    r = run_one(ReadAt, "native", KernelOptions(checked=False, fast_math=False), x=[1.0, 2.0], i=1, out=0.0)
    assert r.err is None and r.fields[0]["out"][0] == 2.0


@pytest.mark.parametrize("mode", MODES)
def test_returned_false_names_the_first_failing_vertex(mode):
    r = run(Fails, [{"x": 1}, {"x": 2}, {"x": 5}, {"x": -1}], mode)
    assert r.err is not None
    assert (r.err["vertex"], r.err["code"], r.err["field"], r.err["index"]) == (2, ERR_RETURNED_FALSE, -1, -1)
    assert r.err["line"] == line_of(Fails, "return False")
    r = run(Fails, [{"x": 1}, {"x": -1}], mode)
    assert (r.err["vertex"], r.err["line"]) == (1, line_of(Fails, "return self.x >= 0"))
    assert "returned False" in error_message(Fails, r.err, "v1")


def positive(v):
    assert v >= 0, "helpers can assert too"
    return v


class Asserts(Vertex):
    x: Input[Vector[float]]
    out: Output[Vector[float]]

    def compute(self):
        for i in range(len(self.x)):
            self.out[i] = self.x[i] * 2.0
            assert self.x[i] == self.x[i]
            self.out[i] = positive(self.out[i])


@pytest.mark.parametrize("options", [STRICT, KernelOptions(checked=False)])
@pytest.mark.parametrize("mode", MODES)
def test_failed_assert_fails_the_vertex_with_its_line(mode, options):
    ok = {"x": np.array([1.0, 0.0], np.float32), "out": np.zeros(2, np.float32)}
    nan = {"x": np.array([1.0, np.nan, 2.0], np.float32), "out": np.zeros(3, np.float32)}
    r = run(Asserts, [ok, nan], mode, options)
    assert r.err is not None
    assert (r.err["vertex"], r.err["code"], r.err["field"]) == (1, ERR_ASSERTION, -1)
    assert r.err["line"] == line_of(Asserts, "assert self.x[i]")
    assert list(r.fields[0]["out"]) == [2.0, 0.0] and r.fields[1]["out"][0] == 2.0  # earlier work done
    message = error_message(Asserts, r.err, "v1")
    assert "assertion failed" in message and "self.x[i] == self.x[i]" in message
    r = run(Asserts, [ok, {"x": np.array([-1.0], np.float32), "out": np.zeros(1, np.float32)}], mode, options)
    assert (r.err["vertex"], r.err["code"]) == (1, ERR_ASSERTION)
    assert r.err["line"] == line_of(positive, "assert v >= 0")
    assert "v >= 0: helpers can assert too" in error_message(Asserts, r.err, "v1")


@pytest.mark.parametrize("mode", ["native", "interpreter"])
def test_failed_assert_raises_vertex_error_from_the_engine(mode):
    m = poplar.IPUModel()
    m.tilesPerIPU = 4
    device = m.createDevice()
    graph = poplar.Graph(device)
    graph.addCodelets(Asserts)
    x = graph.addConstant(poplar.FLOAT, [2], [3.0, -1.0])
    out = graph.addVariable(poplar.FLOAT, [2], "out")
    graph.setTileMapping(x, 3)
    graph.setTileMapping(out, 3)
    cs = graph.addComputeSet("asserting")
    graph.setTileMapping(graph.addVertex(cs, "Asserts", {"x": x, "out": out}), 3)
    engine = poplar.Engine(graph, prog.Execute(cs), {"codelets.mode": mode})
    engine.load(device)
    with pytest.raises(poplar.VertexError, match=r"Asserts.*tile 3.*assertion failed.*v >= 0"):
        engine.run()


ALL_TYPES = [
    T.FLOAT,
    T.HALF,
    T.INT,
    T.UNSIGNED_INT,
    T.SHORT,
    T.UNSIGNED_SHORT,
    T.CHAR,
    T.SIGNED_CHAR,
    T.UNSIGNED_CHAR,
    T.BOOL,
    T.LONGLONG,
    T.UNSIGNED_LONGLONG,
]


def state_codelet(t):
    """A codelet with state scalars and a state vector of type t between fields of other sizes."""

    class State(Vertex):
        c: T.CHAR
        s: t
        h: T.HALF
        v: Vector[t]
        d: T.LONGLONG
        s2: t
        out: Output[Vector[t]]

        def compute(self):
            self.out[0] = self.s
            self.out[1] = self.s2
            for k in range(len(self.v)):
                self.out[2 + k] = self.v[k]
            self.out[4] = self.c + self.h + self.d > 0

    return State


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("t", ALL_TYPES, ids=str)
def test_state_fields_of_every_type_match_the_numpy_layout(t, mode):
    cls = state_codelet(t)
    compiled = compile_codelet(cls, STRICT)
    names = compiled.state_dtype.names
    assert names == ("c", "s", "h", "v.ptr", "v.size", "d", "s2", "out.ptr", "out.size")
    info = np.iinfo(t.dtype) if t.dtype.kind in "iu" else None
    a = info.max if info is not None else (True if t.dtype.kind == "b" else 1.5)
    b = info.min if info is not None else (False if t.dtype.kind == "b" else -2.25)
    r = run_one(cls, mode, c=-1, s=a, h=0.5, v=[b, a], d=7, s2=b, out=np.zeros(5, t.dtype))
    assert r.err is None
    assert list(r.fields[0]["out"]) == list(np.array([a, b, b, a, 1], t.dtype))


class Counted(Vertex):
    x: Input[Vector[float]]
    out: Output[float]

    def compute(self):
        s = 0.0
        for i in range(len(self.x)):
            if self.x[i] > 0:
                s += self.x[i]
        self.out = s


class CountedMulti(MultiVertex):
    x: Input[Vector[float]]
    out: Output[Vector[float]]

    def compute(self, workerId):
        for i in range(workerId, len(self.x), 6):
            self.out[i] = self.x[i] * 2.0


def test_cycle_counts_follow_the_work_done():
    short = run_one(Counted, "native", x=np.ones(4, np.float32), out=0.0).cycles[0]
    long = run_one(Counted, "native", x=np.ones(40, np.float32), out=0.0).cycles[0]
    negative = run_one(Counted, "native", x=-np.ones(40, np.float32), out=0.0).cycles[0]
    assert 0 < short < negative < long
    assert (long - short) % 36 == 0  # the same cost for every iteration
    checked = run_one(Counted, "native", KernelOptions(), x=np.ones(40, np.float32), out=0.0).cycles[0]
    assert checked == long  # counts do not depend on the options
    # a MultiVertex reports its slowest worker: 7 elements -> worker 0 does 2, the others 1
    seven = run_one(CountedMulti, "native", x=np.ones(7, np.float32), out=np.zeros(7, np.float32)).cycles[0]
    six = run_one(CountedMulti, "native", x=np.ones(6, np.float32), out=np.zeros(6, np.float32)).cycles[0]
    assert seven > six > 0
    assert run_one(Counted, "interp", x=np.ones(4, np.float32), out=0.0).cycles[0] == 0


class DotProduct(Vertex):
    a: Input[Vector[float]]
    b: Input[Vector[float]]
    out: Output[float]

    def compute(self):
        s = 0.0
        for i in range(len(self.a)):
            s += self.a[i] * self.b[i]
        self.out = s


def test_dot_product_vectorises_with_cycle_counting():
    text = optimised_ir(DotProduct, KernelOptions(checked=False))
    assert "vector.body" in text and "x float>" in text
    x = np.arange(1000, dtype=np.float32)
    r = run_one(DotProduct, "native", KernelOptions(checked=False), a=x, b=x, out=0.0)
    assert r.fields[0]["out"][0] == pytest.approx(float(np.dot(x.astype(np.float64), x)), rel=1e-5)
    assert r.cycles[0] > 1000
