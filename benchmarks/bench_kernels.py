"""Compiled codelet kernels vs numpy (and numba, if it happens to be installed): prints ratios.

    python benchmarks/bench_kernels.py

Workloads: a dot product and an elementwise exp over 1M float32 elements in one vertex, and a
batch of 100k small vertices (4-element sums) run by one native call. numba is not a dependency
of the project; its column is skipped when it cannot be imported.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
from timing import best

from poplar_py.codelet.codelet_compiler import ERR_DTYPE, KernelOptions, compile_codelet
from poplar_py.vertex import Input, Output, Vector, Vertex

N = 1 << 20
SMALL_VERTICES = 100_000


class Dot(Vertex):
    a: Input[Vector[float]]
    b: Input[Vector[float]]
    out: Output[float]

    def compute(self):
        s = 0.0
        for i in range(len(self.a)):
            s += self.a[i] * self.b[i]
        self.out = s


class Exp(Vertex):
    x: Input[Vector[float]]
    y: Output[Vector[float]]

    def compute(self):
        for i in range(len(self.x)):
            self.y[i] = math.exp(self.x[i])


class Sum4(Vertex):
    x: Input[Vector[float]]
    out: Output[float]

    def compute(self):
        s = 0.0
        for v in self.x:
            s += v
        self.out = s


def py_dot(a, b):
    s = np.float32(0.0)
    for i in range(len(a)):
        s += a[i] * b[i]
    return s


def py_exp(x, y):
    for i in range(len(x)):
        y[i] = math.exp(x[i])



def numba_jit(fast: bool) -> Callable | None:
    try:
        import numba
    except ImportError:
        return None
    return numba.njit(fastmath=fast)


def main() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)
    x, y, out = rng.uniform(-10, 10, N).astype(np.float32), np.zeros(N, np.float32), np.zeros(1, np.float32)
    err = np.zeros(1, ERR_DTYPE)
    header = ("workload", "ours ms", "numpy ms", "numba ms", "numpy/ours", "ours/numba")
    print(f"{header[0]:42} {header[1]:>9} {header[2]:>9} {header[3]:>9} {header[4]:>11} {header[5]:>11}")
    # Like against like: strict IEEE (the engine's default) against numba's default, fast math
    # (engine option codelets.fastMath) against numba's fastmath=True.
    for fast, checked in ((False, False), (False, True), (True, False), (True, True)):
        jit = numba_jit(fast)
        numba_dot, numba_exp = (jit(py_dot), jit(py_exp)) if jit else (None, None)
        options = KernelOptions(checked=checked, fast_math=fast)
        label = ("checked" if checked else "unchecked") + (", fast" if fast else ", strict")
        dot = compile_codelet(Dot, options)
        st = np.zeros(1, dot.state_dtype)
        st["a.ptr"], st["a.size"], st["b.ptr"], st["b.size"], st["out"] = (
            a.ctypes.data,
            N,
            b.ctypes.data,
            N,
            out.ctypes.data,
        )
        args = (st.ctypes.data, 1, 0, 0, err.ctypes.data)  # no cycles counted
        ours = best(lambda dot=dot, args=args: dot.run(*args))
        row(
            f"dot 1M float32 ({label})",
            ours,
            best(lambda: np.dot(a, b)),
            best(lambda f=numba_dot: f(a, b)) if numba_dot else None,
        )
        exp = compile_codelet(Exp, options)
        st = np.zeros(1, exp.state_dtype)
        st["x.ptr"], st["x.size"], st["y.ptr"], st["y.size"] = x.ctypes.data, N, y.ctypes.data, N
        args = (st.ctypes.data, 1, 0, 0, err.ctypes.data)  # no cycles counted
        ours = best(lambda exp=exp, args=args: exp.run(*args))
        row(
            f"exp 1M float32 ({label})",
            ours,
            best(lambda: np.exp(x, out=y)),
            best(lambda f=numba_exp: f(x, y)) if numba_exp else None,
        )
    sum4 = compile_codelet(Sum4, KernelOptions())
    data = rng.standard_normal(4 * SMALL_VERTICES).astype(np.float32)
    outs = np.zeros(SMALL_VERTICES, np.float32)
    slots, cycles = np.arange(SMALL_VERTICES, dtype=np.int64), np.zeros(SMALL_VERTICES, np.int64)
    st = np.zeros(SMALL_VERTICES, sum4.state_dtype)
    st["x.ptr"] = data.ctypes.data + 16 * np.arange(SMALL_VERTICES, dtype=np.uint64)
    st["x.size"] = 4
    st["out"] = outs.ctypes.data + 4 * np.arange(SMALL_VERTICES, dtype=np.uint64)
    args = (st.ctypes.data, SMALL_VERTICES, slots.ctypes.data, cycles.ctypes.data, err.ctypes.data)
    ours = best(lambda: sum4.run(*args))
    assert np.allclose(outs, data.reshape(-1, 4).sum(axis=1), atol=1e-5)
    print(
        f"batched 4-element sums, checked, counting cycles: {ours / SMALL_VERTICES * 1e9:.1f} ns per vertex "
        f"({SMALL_VERTICES} vertices in one call, {ours * 1e3:.2f} ms)"
    )
    start = time.perf_counter()
    compile_codelet(Sum4, KernelOptions(opt_level=2))
    print(f"compile time (cold or disk cache, O2): {(time.perf_counter() - start) * 1e3:.1f} ms")


def row(name: str, ours: float, numpy_s: float, numba_s: float | None) -> None:
    numba_text = f"{numba_s * 1e3:9.3f}" if numba_s is not None else f"{'n/a':>9}"
    ratio = f"{ours / numba_s:11.2f}" if numba_s is not None else f"{'n/a':>11}"
    print(f"{name:42} {ours * 1e3:9.3f} {numpy_s * 1e3:9.3f} {numba_text} {numpy_s / ours:11.2f} {ratio}")


if __name__ == "__main__":
    main()
