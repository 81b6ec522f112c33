"""``math.*`` in codelets: precision rule (float32 arguments -> float32 libm), IEEE results, fast math."""

from __future__ import annotations

import ctypes
import ctypes.util
import math

import numpy as np
import pytest
from codelet_harness import (  # noqa: F401
    MODES,
    STRICT,
    isolated_cache,
    load_module,
    optimised_ir,
    run_one,
    same_bits,
)

from poplar_py.codelet.codelet_compiler import KernelOptions
from poplar_py.codelet.codelet_compiler import _typed as typed_of

UNARY = [
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "sin", "cos", "tan", "asin",
    "acos", "atan", "sinh", "cosh", "tanh", "erf", "erfc", "fabs",
]  # fmt: skip
BINARY = ["pow", "fmod", "atan2", "hypot", "copysign"]
VALUES = np.array(
    [0.0, -0.0, 0.5, -0.75, 1.0, 2.0, 3.14159, -10.5, 88.7, 100.0, 1e-40, 1e30, np.inf, -np.inf, np.nan],
    np.float32,
)


def _libm() -> ctypes.CDLL:
    process = ctypes.CDLL(None)
    return process if hasattr(process, "expf") else ctypes.CDLL(ctypes.util.find_library("m"))


LIBM = _libm()


def libm_single(name: str, *args: float) -> np.float32:
    """The C library's single-precision ``<name>f`` (what C++ and numba call for float arguments)."""
    f = getattr(LIBM, name + "f")
    f.restype, f.argtypes = ctypes.c_float, [ctypes.c_float] * len(args)
    return np.float32(f(*(float(a) for a in args)))


def test_math_result_types_follow_cpp_overloads(tmp_path):
    module = load_module(
        tmp_path,
        """
class T(Vertex):
    f: Input[FLOAT]
    h: Input[HALF]
    i: Input[INT]
    o: Output[FLOAT]

    def compute(self):
        a = math.exp(self.f)
        b = math.sqrt(self.h)
        c = math.pow(self.f, self.h)
        d = math.pow(self.f, 2.0)
        e = math.exp(self.i)
        g = math.floor(self.f)
        n = math.isnan(self.f)
        l1 = math.log(self.f, self.f)
        l2 = math.log(self.f, 2)
        x = math.exp(float(self.f))
        y = math.exp(self.f) * 1e-3
        self.o = a
""",
    )
    types = {k: str(t) for k, t in typed_of(module.T).compute.locals.items()}
    assert types == {
        "a": "float32",
        "b": "float32",
        "c": "float32",
        "d": "Python float",  # a Python float argument: double, as C++'s pow(float, double)
        "e": "Python float",
        "g": "Python int",
        "n": "bool",
        "l1": "float32",
        "l2": "Python float",
        "x": "Python float",
        "y": "float32",  # a strong float32: the weak literal does not widen it
    }


def _single_codelet(tmp_path):
    fields = [f"    u_{fn}: Output[Vector[FLOAT]]" for fn in UNARY]
    fields += [f"    b_{fn}: Output[Vector[FLOAT]]" for fn in BINARY]
    body = [f"            self.u_{fn}[k] = math.{fn}(v)" for fn in UNARY]
    body += [f"            self.b_{fn}[k] = math.{fn}(v, w)" for fn in BINARY]
    source = (
        "class S(Vertex):\n    x: Input[Vector[FLOAT]]\n    y: Input[Vector[FLOAT]]\n"
        + "\n".join(fields)
        + "\n\n    def compute(self):\n        for k in range(len(self.x)):\n"
        + "            v, w = self.x[k], self.y[k]\n"
        + "\n".join(body)
        + "\n"
    )
    return load_module(tmp_path, source).S


@pytest.mark.parametrize("mode", MODES)
def test_float32_arguments_call_the_single_precision_libm(mode, tmp_path):
    cls = _single_codelet(tmp_path)
    x = np.concatenate([VALUES, np.random.default_rng(0).uniform(-5, 5, 200).astype(np.float32)])
    y = np.roll(x, 3)
    outputs = {f"u_{fn}": np.zeros_like(x) for fn in UNARY} | {f"b_{fn}": np.zeros_like(x) for fn in BINARY}
    r = run_one(cls, mode, STRICT, x=x, y=y, **outputs)
    assert r.err is None
    got = r.fields[0]
    for fn in UNARY:
        assert same_bits(got[f"u_{fn}"], [libm_single(fn, v) for v in x]), fn
    for fn in BINARY:
        assert same_bits(got[f"b_{fn}"], [libm_single(fn, v, w) for v, w in zip(x, y)]), fn


HALF_AND_DOUBLE = """
class H(Vertex):
    h: Input[Vector[HALF]]
    f: Input[Vector[FLOAT]]
    single: Output[Vector[FLOAT]]
    double: Output[Vector[FLOAT]]
    floors: Output[Vector[INT]]

    def compute(self):
        for k in range(len(self.h)):
            self.single[k] = math.exp(self.h[k]) + math.sqrt(self.h[k]) * math.sin(self.f[k])
            self.double[k] = math.exp(float(self.f[k])) + math.log(self.f[k], 10.0)
            self.floors[k] = math.floor(self.h[k]) + math.ceil(self.f[k])
"""


@pytest.mark.parametrize("mode", MODES)
def test_half_computes_in_float32_and_python_floats_in_double(mode, tmp_path):
    cls = load_module(tmp_path, HALF_AND_DOUBLE).H
    f = np.array([0.5, 1.5, 2.25, 7.0, 11.125], np.float32)
    h = f.astype(np.float16)
    r = run_one(cls, mode, STRICT, h=h, f=f, single=np.zeros_like(f), double=np.zeros_like(f), floors=[0] * 5)
    got = r.fields[0]
    with np.errstate(invalid="ignore"):
        single = [
            libm_single("exp", a) + libm_single("sqrt", a) * libm_single("sin", c) for a, c in zip(h, f)
        ]
        double = [np.float32(math.exp(c) + math.log(c) / math.log(10.0)) for c in f]
    assert same_bits(got["single"], np.array(single, np.float32))
    assert same_bits(got["double"], np.array(double, np.float32))
    assert list(got["floors"]) == [math.floor(a) + math.ceil(b) for a, b in zip(h, f)]


LOG_BASE = """
class L(Vertex):
    x: Input[Vector[FLOAT]]
    b: Input[Vector[FLOAT]]
    single: Output[Vector[FLOAT]]
    double: Output[Vector[FLOAT]]

    def compute(self):
        for k in range(len(self.x)):
            self.single[k] = math.log(self.x[k], self.b[k])
            self.double[k] = math.log(float(self.x[k]), float(self.b[k]))
"""


@pytest.mark.parametrize("mode", MODES)
def test_log_with_a_base(mode, tmp_path):
    cls = load_module(tmp_path, LOG_BASE).L
    x = np.array([8.0, 100.0, 0.5, 5.0, 1.0, 0.0, -1.0, 3.0], np.float32)
    b = np.array([2.0, 10.0, 4.0, 1.0, 1.0, 2.0, 2.0, 0.0], np.float32)
    r = run_one(cls, mode, STRICT, x=x, b=b, single=np.zeros_like(x), double=np.zeros_like(x))
    assert r.err is None
    with np.errstate(all="ignore"):
        single = [libm_single("log", v) / libm_single("log", w) for v, w in zip(x, b)]
        double = np.log(x.astype(np.float64)) / np.log(b.astype(np.float64))
    assert same_bits(r.fields[0]["single"], np.array(single, np.float32))
    assert same_bits(r.fields[0]["double"], double.astype(np.float32))
    assert list(r.fields[0]["double"][:4]) == [3.0, 2.0, -0.5, np.inf]  # CPython raises for base 1.0


FAST_FUNCTIONS = {"exp": np.exp, "log": np.log, "tanh": np.tanh}


def fast_vertex(tmp_path, name: str) -> type:
    source = f"""
class Fast(Vertex):
    x: Input[Vector[float]]
    y: Output[Vector[float]]

    def compute(self):
        for i in range(len(self.x)):
            self.y[i] = math.{name}(self.x[i])
"""
    return load_module(tmp_path, source).Fast


@pytest.mark.parametrize("name", sorted(FAST_FUNCTIONS))
def test_fast_float32_functions_are_accurate_and_handle_specials(name, tmp_path):
    rng = np.random.default_rng(1)
    x = np.concatenate(
        [
            rng.integers(0, 2**32, 100_000, dtype=np.uint64).astype(np.uint32).view(np.float32),
            np.linspace(-110, 100, 20001, dtype=np.float32),
            np.linspace(0.5, 2.0, 20001, dtype=np.float32),
            np.array(
                [np.nan, np.inf, -np.inf, 0.0, -0.0, 88.72, 88.73, -87.3, -103.0, 1e-45, 0.6], np.float32
            ),
        ]
    )
    r = run_one(fast_vertex(tmp_path, name), "native", KernelOptions(checked=False), x=x, y=np.zeros_like(x))
    got = r.fields[0]["y"]
    with np.errstate(all="ignore"):
        ref = FAST_FUNCTIONS[name](x.astype(np.float64)).astype(np.float32)
    same = (got == ref) | (np.isnan(got) & np.isnan(ref))
    ulps = np.abs(got.view(np.int32).astype(np.int64) - ref.view(np.int32).astype(np.int64))
    assert np.all(same | (ulps <= 2)), x[~(same | (ulps <= 2))][:10]
    assert same_bits(got[-11:-2], ref[-11:-2])  # NaN, inf, zeros and the extremes exactly


@pytest.mark.parametrize("name", sorted(FAST_FUNCTIONS))
def test_fast_float32_function_loops_vectorise(name, tmp_path):
    cls = fast_vertex(tmp_path, name)
    libm_calls = (f"@{name}f(", f"@llvm.{name}.")
    fast = optimised_ir(cls, KernelOptions(checked=False))
    assert "x float>" in fast and not any(c in fast for c in libm_calls)
    strict = optimised_ir(cls, KernelOptions(checked=False, fast_math=False))
    assert any(c in strict for c in libm_calls)


MATH_CODELET = """
from math import log, sqrt

class M(Vertex):
    x: Input[Vector[FLOAT]]
    o: Output[Vector[FLOAT]]

    def compute(self):
        k = 0
        for v in self.x:
            self.o[k] = log(v) + sqrt(v) + math.exp(v) + math.fmod(v, 2.0) + math.pow(v, 0.5)
            self.o[k + 1] = math.tanh(v) * math.sin(v) + math.atan2(v, 1.0) + int(math.isinf(v))
            k += 2
"""


@pytest.mark.parametrize("mode", MODES)
def test_math_functions_give_ieee_results(mode, tmp_path):
    module = load_module(tmp_path, MATH_CODELET)
    x = np.array([0.0, -1.0, 1000.0, np.inf, -np.inf, np.nan, 0.5, 2.0], np.float32)
    r = run_one(module.M, mode, x=x, o=np.zeros(2 * len(x), np.float32))
    assert r.err is None
    with np.errstate(all="ignore"):
        v = x.astype(np.float64)
        first = np.log(v) + np.sqrt(v) + np.exp(v) + np.fmod(v, 2.0) + np.power(v, 0.5)
        second = np.tanh(v) * np.sin(v) + np.arctan2(v, 1.0) + np.isinf(v)
    expect = np.stack([first, second], axis=1).reshape(-1).astype(np.float32)
    assert np.allclose(r.fields[0]["o"], expect, rtol=1e-6, equal_nan=True), (r.fields[0]["o"], expect)
