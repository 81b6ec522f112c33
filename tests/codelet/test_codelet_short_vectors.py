"""Short vector types (float2, half4...) in codelets: numpy references, both modes, errors."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import numpy as np
import pytest
from codelet_harness import MODES, STRICT, isolated_cache, load_module, run, run_one, same_bits  # noqa: F401

import poplar_py as poplar
from poplar_py import float2, half4, int2, ushort4
from poplar_py import program as prog
from poplar_py.codelet.codelet_compiler import KernelOptions, check_codelet, compile_codelet
from poplar_py.errors import CodeletCompileError, InvalidArgumentError
from poplar_py.types import FLOAT, HALF
from poplar_py.vertex import InOut, Input, Output, Vector, Vertex


class Axpy2(Vertex):
    """y = a * x + y, two floats at a time."""

    x: Input[Vector[float]]
    y: InOut[Vector[float]]
    a: float

    def compute(self):
        for i in range(len(self.x) // 2):
            v = float2.load(self.x, i) * self.a + float2.load(self.y, i)
            float2.store(self.y, i, v)


class Axpy4(Vertex):
    """y = a * x + y in half, four at a time; the tail (len % 4) one by one."""

    x: Input[Vector[HALF]]
    y: InOut[Vector[HALF]]
    a: HALF

    def compute(self):
        n = len(self.x) // 4
        av = half4(self.a)
        for i in range(n):
            float_free = av * half4.load(self.x, i)
            half4.store(self.y, i, float_free + half4.load(self.y, i))
        for j in range(4 * n, len(self.x)):
            self.y[j] = self.a * self.x[j] + self.y[j]


def swap(v):
    """A helper taking a short vector: its parameter is a vector register."""
    return float2(v[1], v[0])


class Mixed(Vertex):
    """Construction, elements, every operator, scalars on either side, unary minus, helpers."""

    x: Input[Vector[float]]
    out: Output[Vector[float]]
    k: Input[Vector[int]]
    kout: Output[Vector[int]]
    s: Output[Vector[HALF]]

    def compute(self):
        p = float2(self.x[0], self.x[1])
        q = float2(3)
        r = (p + q) * 2 - p / q
        r = -r + 1.5
        r = 10 / r if self.x[2] > 0 else swap(r)
        r += self.x[0] * p
        float2.store(self.out, 0, r)
        self.out[2] = r[0] * r[1]
        w = int2(self.k[0], self.k[1]) * 3 + int2(2147483647, -5)
        int2.store(self.kout, 0, w - self.k[2])
        h = half4(1, 2, 3, self.x[0])
        half4.store(self.s, 0, h / 3 + 0.1)
        return True


def _mixed_reference(x: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    f = np.float32
    p, q = x[:2].astype(f), np.full(2, f(3))
    r = (p + q) * f(2) - p / q
    r = -r + f(1.5)
    r = f(10) / r if x[2] > 0 else r[::-1].copy()
    r += x[0] * p
    out = np.array([r[0], r[1], r[0] * r[1]], f)
    with np.errstate(over="ignore"):
        w = k[:2].astype(np.int32) * np.int32(3) + np.array([2147483647, -5], np.int32)
        kout = w - np.int32(k[2])
    h = np.array([1, 2, 3, x[0]], np.float16)
    s = h / np.float16(3) + np.float16(0.1)
    return out, kout, s


@pytest.mark.parametrize("mode", MODES)
def test_float2_axpy_matches_numpy(mode):
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(10).astype(np.float32), rng.standard_normal(10).astype(np.float32)
    a = np.float32(0.75)
    res = run_one(Axpy2, mode, x=x, y=y.copy(), a=a)
    assert res.err is None
    assert same_bits(res.fields[0]["y"], a * x + y)


@pytest.mark.parametrize("mode", MODES)
def test_half4_axpy_matches_numpy(mode):
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal(11).astype(np.float16), rng.standard_normal(11).astype(np.float16)
    a = np.float16(1.5)
    res = run_one(Axpy4, mode, x=x, y=y.copy(), a=a)
    assert res.err is None
    assert same_bits(res.fields[0]["y"], a * x + y)  # each operation rounds to half, as numpy's


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("x2", [1.0, -1.0])
def test_every_short_vector_operation_matches_numpy(mode, x2):
    x = np.array([0.5, -2.25, x2], np.float32)
    k = np.array([7, -3, 4], np.int32)
    res = run_one(Mixed, mode, x=x, out=np.zeros(3, np.float32), k=k, kout=np.zeros(2, np.int32),
                  s=np.zeros(4, np.float16))
    assert res.err is None
    out, kout, s = _mixed_reference(x, k)
    got = res.fields[0]
    assert same_bits(got["out"], out) and same_bits(got["kout"], kout) and same_bits(got["s"], s)


def test_vertices_in_lockstep_lanes_load_and_store_their_own_vectors():
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal(6).astype(np.float32) for _ in range(3)]
    ys = [rng.standard_normal(6).astype(np.float32) for _ in range(3)]
    lanes = KernelOptions(fast_math=False, lanes=True)
    assert "_compute_lanes" in compile_codelet(Axpy2, lanes).ir
    a = np.float32(0.5)  # alike shapes and state: the first two run as lanes, the third alone
    res = run(Axpy2, [{"x": x, "y": y.copy(), "a": a} for x, y in zip(xs, ys)], "native", lanes)
    assert res.err is None
    for k, (x, y) in enumerate(zip(xs, ys)):
        assert same_bits(res.fields[k]["y"], a * x + y)


def test_short_vectors_are_llvm_vectors():
    ir_text = compile_codelet(Axpy2, STRICT).ir
    assert "<2 x float>" in ir_text
    assert "<4 x half>" in compile_codelet(Axpy4, STRICT).ir


class Outside(Vertex):
    x: Input[Vector[float]]
    out: Output[Vector[float]]
    i: int

    def compute(self):
        float2.store(self.out, 0, float2.load(self.x, self.i))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("i, last", [(1, 3), (-1, -1)])
def test_a_vector_partly_out_of_bounds_is_an_error(mode, i, last):
    res = run_one(Outside, mode, x=np.zeros(3, np.float32), out=np.zeros(2, np.float32), i=i)
    assert res.err is not None
    assert (int(res.err["field"]), int(res.err["index"]), int(res.err["size"])) == (0, last, 3)


def test_float2_axpy_in_an_engine_in_both_modes():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(8).astype(np.float32)
    y = rng.standard_normal(8).astype(np.float32)
    for mode in ("native", "interpreter"):
        device = poplar.IPUModel().createDevice()
        graph = poplar.Graph(device)
        graph.addCodelets(Axpy2)
        tx, ty = graph.addVariable(FLOAT, [8], "x"), graph.addVariable(FLOAT, [8], "y")
        graph.setTileMapping(tx, 0)
        graph.setTileMapping(ty, 0)
        graph.setInitialValue(tx, x)
        graph.setInitialValue(ty, y)
        cs = graph.addComputeSet("axpy")
        v = graph.addVertex(cs, "Axpy2", {"x": tx, "y": ty})
        graph.setInitialValue(v["a"], 2.0)
        graph.setTileMapping(v, 0)
        graph.createHostRead("y", ty)
        engine = poplar.Engine(graph, prog.Execute(cs), {"codelets.mode": mode})
        engine.load(device)
        engine.run()
        assert same_bits(engine.readTensor("y"), np.float32(2) * x + y)


def test_host_values_follow_the_same_rules():
    assert same_bits((float2(1, 2) * 0.5 + 1).data, np.float32([1.5, 2.0]))
    assert same_bits((int2(2**31 - 1, 0) + 1).data, np.int32([-(2**31), 1]))  # wraps
    assert same_bits(ushort4(70000.0).data, np.full(4, 65535, np.uint16))  # saturates
    assert same_bits((np.float64(2) * float2(1, 3)).data, np.float32([2, 6]))  # the vector's type wins
    assert same_bits((np.float16(3) - half4(1)).data, np.full(4, 2, np.float16))
    with pytest.raises(InvalidArgumentError, match="float2\\(\\) takes 1 or 2 numbers, got 3"):
        float2(1, 2, 3)


BAD = """
def two(v):
    return v  # RETURN

class Bad(Vertex):
    x: Input[Vector[float]]
    h: Input[Vector[HALF]]
    out: Output[Vector[float]]
    c: Input[Vector[float]]

    def compute(self):
        {body}
"""


@pytest.mark.parametrize("body, message", [
    ("v = float2(1, 2) + half4(1)  # HERE", "operator '+' needs two float2 or a float2 and a number, "
                                            "not float2 and half4"),
    ("v = float2.load(self.h, 0)  # HERE", "float2.load() needs a vector of float32, not a vector of "
                                           "float16"),
    ("half4.store(self.h, 0, half4(1))  # HERE", "cannot write to Input field 'h'"),
    ("float2.store(self.out, 0, half4(1))  # HERE", "float2.store() stores a float2, not a half4"),
    ("v = float2(1, 2)\nx = v[self.out[0] > 0]  # HERE", "needs a constant index in 0..1"),
    ("v = float2(1, 2)\nx = v[2]  # HERE", "needs a constant index in 0..1"),
    ("v = float2(1, 2)\nv[0] = 3.0  # HERE", "a float2 is a value: its elements cannot be assigned"),
    ("v = int2(1, 2) / 2  # HERE", "operator '/' is not supported for int2"),
    ("v = float2(1, 2) // 2  # HERE", "operator '//' is not supported for float2"),
    ("v = float2(1, 2, 3)  # HERE", "float2() takes 1 or 2 argument"),
    ("v = float2(self.x[0] > 0)  # HERE", "float2() takes numbers, not bools"),
    ("self.out[0] = float2(1)  # HERE", "cannot store a float2 into a field element"),
    ("v = float2(1) < float2(2)  # HERE", "expected a number, not a float2"),
    ("x = two(self.x)  # HERE", "helpers can only return numbers and short vectors"),
    ("v = float2.fill(1)  # HERE", "float2.fill() is not supported"),
    ("v = float2  # HERE", "'float2' can only be called"),
])
def test_mismatched_short_vectors_name_file_and_line(tmp_path: Path, body: str, message: str):
    code = body.replace("\n", "\n        ")
    source = "from poplar_py import float2, half4, int2\n" + textwrap.dedent(BAD).replace("{body}", code)
    module = load_module(tmp_path, source)
    marker = "# RETURN" if "two(" in body else "# HERE"  # (a helper's error is at its own line)
    line = next(i + 1 for i, text in enumerate(Path(module.__file__).read_text().splitlines())
                if marker in text)
    with pytest.raises(CodeletCompileError, match=re.escape(message)) as info:
        check_codelet(module.Bad)
    assert str(info.value).startswith(f"{module.__file__}:") and f":{line}: " in str(info.value)
