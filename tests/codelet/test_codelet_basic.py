"""Codelets that use each supported construct, run natively and in the interpreter."""

from __future__ import annotations

import math
import sys
from math import sqrt

import numpy as np
import pytest
from codelet_harness import MODES, isolated_cache, run, run_one  # noqa: F401

from poplar_py.codelet.codelet_compiler import KernelOptions, check_codelet, compile_codelet
from poplar_py.types import HALF, INT, UNSIGNED_INT
from poplar_py.vertex import InOut, Input, MultiVertex, Output, Vector, VectorList, Vertex

SCALE = 3


def clamp(x, lo, hi):
    """A helper: compiled per argument types and inlined."""
    if x < lo:
        return lo
    return hi if x > hi else x


def add_into(v, k, x):
    v[k] += x


class SumVertex(Vertex):
    x: Input[Vector[float]]
    out: Output[float]

    def compute(self):
        """Docstrings are allowed."""
        s = 0.0
        for v in self.x:
            s += v
        self.out = s
        return True


class Dot(Vertex):
    a: Input[Vector[float]]
    b: Input[Vector[float]]
    out: Output[float]

    def compute(self):
        s = 0.0
        for i in range(len(self.a)):
            s += self.a[i] * self.b[i]
        self.out = s


class Control(Vertex):
    x: Input[Vector[int]]
    out: Output[Vector[int]]
    n: InOut[int]

    def compute(self):
        i = 0
        found = 0
        while True:
            if i >= len(self.x):
                break
            v = self.x[i]
            i += 1
            if v < 0:
                continue
            elif v == 0:
                pass
            else:
                found += 1
        for k in range(len(self.out) - 1, -1, -2):
            self.out[k] = k * SCALE
        a, b = found, i
        a, b = b, a
        self.n += a * 100 + b
        return found >= 0


class Helpers(Vertex):
    x: Input[Vector[float]]
    out: Output[Vector[float]]
    acc: InOut[Vector[INT]]

    def compute(self):
        for i in range(len(self.x)):
            self.out[i] = clamp(self.x[i], 0.0, 1.0) + sqrt(4.0) + math.floor(2.5)
            add_into(self.acc, i % len(self.acc), clamp(i, 1, 3))


class Lists(Vertex):
    rows: Input[VectorList[float]]
    sums: Output[Vector[float]]
    total: Output[float]

    def compute(self):
        t = 0.0
        k = 0
        for row in self.rows:
            s = 0.0
            for e in row:
                s += e
            self.sums[k] = s
            k += 1  # noqa: SIM113 - codelet code: enumerate() is not supported
        for j in range(len(self.rows)):
            r = self.rows[j]
            if len(r) > 0:
                t += r[len(r) - 1] + self.rows[j][0]
        self.total = t


class Multi(MultiVertex):
    x: InOut[Vector[float]]
    scale: float

    def compute(self, workerId):
        for i in range(workerId, len(self.x), self.numWorkers()):
            self.x[i] = self.x[i] * self.scale + workerId


class Typed(Vertex):
    h: InOut[Vector[HALF]]
    u: InOut[Vector[UNSIGNED_INT]]
    out: Output[float]

    def compute(self):
        acc: float = 0
        for i in range(len(self.h)):
            self.h[i] = self.h[i] * 0.5 + self.h[i]
            acc += self.h[i]
        for i in range(len(self.u)):
            self.u[i] = self.u[i] - 1
        self.out = acc if acc > 0 else -acc


class Exprs(Vertex):
    x: Input[float]
    i: Input[int]
    out: Output[Vector[float]]

    def compute(self):
        x, i = self.x, self.i
        self.out[0] = max(x, 2.0, -1.0)
        self.out[1] = min(i, 3) if 0 < i < 10 else abs(-x)
        self.out[2] = float(int(x * 10.0) // 3) + (i % 4) + (i**2) + x**2
        self.out[3] = 1.0 if (x > 1.0 and not i == 0) or x != x else 0.0  # noqa: SIM201 - tests 'not'
        self.out[4] = (i << 2 | 1) ^ (i >> 1) & ~i
        self.out[5] = math.exp(x) + math.log(x) + math.tanh(x) + math.pi + math.copysign(1.0, -x)
        self.out[6] = int(bool(x)) + int(math.isnan(x)) + int(math.isfinite(x))


@pytest.mark.parametrize("mode", MODES)
def test_sum_and_dot(mode):
    x = np.arange(10, dtype=np.float32)
    r = run_one(SumVertex, mode, x=x, out=0)
    assert r.err is None and r.fields[0]["out"][0] == 45
    r = run_one(Dot, mode, a=x, b=x * 2, out=0)
    assert r.fields[0]["out"][0] == np.dot(x, x * 2)


@pytest.mark.parametrize("mode", MODES)
def test_control_flow(mode):
    r = run_one(Control, mode, x=[3, -1, 0, 5, 7], out=[0] * 6, n=1)
    assert r.err is None
    assert list(r.fields[0]["out"]) == [0, 3, 0, 9, 0, 15]
    assert r.fields[0]["n"][0] == 1 + 5 * 100 + 3


@pytest.mark.parametrize("mode", MODES)
def test_helpers_and_imported_math(mode):
    r = run_one(Helpers, mode, x=[-1.0, 0.5, 2.0], out=[0.0] * 3, acc=[0, 0])
    assert list(r.fields[0]["out"]) == [4.0, 4.5, 5.0]
    assert list(r.fields[0]["acc"]) == [1 + 2, 1]


@pytest.mark.parametrize("mode", MODES)
def test_vector_lists(mode):
    rows = [np.array([1.0, 2.0], np.float32), np.array([], np.float32), np.array([5.0], np.float32)]
    r = run_one(Lists, mode, rows=rows, sums=[0.0] * 3, total=0.0)
    assert list(r.fields[0]["sums"]) == [3.0, 0.0, 5.0]
    assert r.fields[0]["total"][0] == 2.0 + 1.0 + 5.0 + 5.0


@pytest.mark.parametrize("mode", MODES)
def test_multivertex_runs_six_workers(mode):
    verts = [
        {"x": np.arange(8, dtype=np.float32), "scale": 2.0},
        {"x": np.ones(3, np.float32), "scale": -1.0},
    ]
    r = run(Multi, verts, mode)
    assert r.err is None
    assert list(r.fields[0]["x"]) == [0, 3, 6, 9, 12, 15, 12, 15]
    assert list(r.fields[1]["x"]) == [-1, 0, 1]


@pytest.mark.parametrize("mode", MODES)
def test_half_and_unsigned(mode):
    h = np.array([1.0, 0.1, 65504.0, -3.0], np.float16)
    r = run_one(Typed, mode, h=h, u=np.array([0, 5], np.uint32), out=0.0)
    with np.errstate(over="ignore"):
        expect = h * np.float16(0.5) + h
    assert np.array_equal(r.fields[0]["h"], expect)
    assert list(r.fields[0]["u"]) == [2**32 - 1, 4]
    assert r.fields[0]["out"][0] == np.float32(np.inf)


@pytest.mark.parametrize("mode", MODES)
def test_expressions(mode):
    r = run_one(Exprs, mode, options=KernelOptions(fast_math=False), x=2.5, i=6, out=[0.0] * 7)
    x, i = np.float32(2.5), 6
    out = r.fields[0]["out"]
    assert out[0] == 2.5 and out[1] == 3
    assert out[2] == np.float32(float(int(x * 10) // 3) + 2 + 36 + x * x)
    assert out[3] == 1.0
    assert out[4] == ((i << 2 | 1) ^ (i >> 1) & ~i)
    # float32 math (expf, logf, tanhf) summed in float32; copysign of a Python float is double
    assert out[5] == pytest.approx(math.exp(x) + math.log(x) + math.tanh(x) + math.pi - 1.0, rel=1e-6)
    assert out[6] == 2.0


def test_interpreter_runs_the_real_compute_so_breakpoints_work():
    seen = []

    def tracer(frame, event, arg):
        if frame.f_code is SumVertex.compute.__code__ and event == "line":
            seen.append(frame.f_lineno)
        return tracer

    sys.settrace(tracer)
    try:
        r = run_one(SumVertex, "interp", x=np.ones(3, np.float32), out=0)
    finally:
        sys.settrace(None)
    assert r.fields[0]["out"][0] == 3.0
    assert seen and all(line > SumVertex.compute.__code__.co_firstlineno for line in seen)


def test_check_is_fast_and_compile_is_memoised():
    import time

    start = time.perf_counter()
    check_codelet(Exprs)
    assert time.perf_counter() - start < 0.5
    assert compile_codelet(Dot) is compile_codelet(Dot)
    assert compile_codelet(Dot).object_size > 0
    assert "define" in compile_codelet(Dot).ir
