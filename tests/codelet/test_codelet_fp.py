"""Floating-point control words in codelets (codelet.fp_rules, codelet.fp_ops): stochastic
rounding against an independent numpy reference, and the floating-point kernels against the
interpreter (same results, same generator states, same exceptions), without an engine."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest
from codelet_harness import STRICT, Arena, build, load_module

from poplar_py.codelet.codelet_compiler import ERR_DTYPE, KernelOptions, codelet_info, compile_codelet
from poplar_py.codelet.fp_rules import (
    DIV0,
    ERR_FP_EXCEPTION,
    ESR,
    FP_ENV_DTYPE,
    INV,
    NANOO,
    OFLO,
    kernel_features,
    round_half_stochastic,
)

M64 = (1 << 64) - 1


def reference_round(x: float, r: int) -> np.float16:
    """Stochastic rounding of x to half from numpy's half neighbours of x."""
    if np.isnan(x):
        return np.float16(np.nan)
    a = abs(x)
    with np.errstate(over="ignore"):
        near = np.float16(a)
        lo = near if float(near) <= a else np.nextafter(near, np.float16(0))
        hi = np.nextafter(lo, np.float16(np.inf))
    step = 32.0 if lo == np.float16(65504) else float(hi) - float(lo)  # past the largest half: 65536
    up = r / 2.0**32 < (a - float(lo)) / step
    out = np.float16(np.inf) if up and lo == np.float16(65504) else (hi if up else lo)
    return np.float16(np.copysign(np.float64(out), x))


def test_stochastic_rounding_picks_a_neighbour_with_the_right_odds():
    rng = np.random.default_rng(1)
    xs = np.concatenate([rng.uniform(-4, 4, 300), rng.uniform(-1e-5, 1e-5, 200),  # half subnormals
                         rng.uniform(6e4, 65535.9, 100), [0.0, -0.0, 1.0, 65504.0, 65519.0, 70000.0, np.inf,
                                                        -np.inf, 2.0**-25, 3 * 2.0**-26]])
    rs = rng.integers(0, 2**32, xs.size)
    for x, r in zip(xs.tolist(), rs.tolist()):
        got, want = round_half_stochastic(x, r), reference_round(x, r)
        assert got.tobytes() == want.tobytes(), (x, r, got, want)
    assert np.isnan(round_half_stochastic(float("nan"), 5))
    # the probability of rounding up is the fraction of the ulp: r below 2**32 / 4 rounds 1 + 2**-12 up
    assert round_half_stochastic(1.0 + 2.0**-12, 2**30 - 1) == np.float16(1.0 + 2.0**-10)
    assert round_half_stochastic(1.0 + 2.0**-12, 2**30) == np.float16(1.0)


def next_random(state: list[int]) -> int:
    """xoroshiro128+ written out again: the test's own reference."""
    s0, s1 = state
    t = s0 ^ s1
    state[0] = ((s0 << 24 | s0 >> 40) ^ t ^ (t << 16)) & M64
    state[1] = (t << 37 | t >> 27) & M64
    return (s0 + s1) & M64


SOURCE = '''
class Mixed(Vertex):
    a: Input[Vector[HALF]]
    b: Input[Vector[HALF]]
    f: Input[Vector[FLOAT]]
    n: Input[Vector[INT]]
    out: Output[Vector[HALF]]
    acc: InOut[Vector[HALF]]
    q: Output[Vector[FLOAT]]

    def compute(self):
        for i in range(len(self.out)):
            t: HALF = self.f[i] * 0.5
            self.out[i] = self.a[i] + self.b[i] * self.a[i] - t
            self.acc[i] += self.f[i]
            self.acc[i] = HALF(self.acc[i] / self.b[i]) + HALF(self.n[i]) + HALF(self.f[i] * 3.0)
            self.q[i] = self.f[i] / self.b[i]
            self.out[i] += self.a[i] // self.b[i] + self.a[i] % self.b[i] + self.a[i] ** self.b[i]
        return True


class Workers(MultiVertex):
    x: Input[Vector[FLOAT]]
    y: Output[Vector[HALF]]

    def compute(self, w):
        for i in range(w, len(self.x), 6):
            self.y[i] = self.x[i]
        return True
'''


@pytest.fixture(scope="module")
def codelets(tmp_path_factory: Any) -> Any:
    return load_module(tmp_path_factory.mktemp("fp"), SOURCE)


def _run(cls: type, vertices: list[dict[str, Any]], mode: str, ctl: int, seeds: np.ndarray
         ) -> tuple[np.void | None, list[dict[str, Any]], np.ndarray]:
    """Run with control word ``ctl``, vertex i drawing from ``seeds[i]`` (6 workers' states);
    returns the error record, the field views and the generator states after."""
    info = codelet_info(cls)
    arena = Arena(1 << 16)
    states, views = build(info, vertices, arena)
    rng_addr, rng = arena.alloc(seeds, np.uint64)
    env = np.zeros(len(vertices), FP_ENV_DTYPE)
    env["ctl"] = ctl
    env["rng"] = rng_addr + 96 * np.arange(len(vertices))
    if mode == "native":
        compiled = compile_codelet(cls, KernelOptions(fast_math=False, fp=kernel_features(env["ctl"]) or ESR))
        err = np.zeros(1, ERR_DTYPE)
        status = compiled.run(states.ctypes.data, len(vertices), 0, 0, err.ctypes.data, 0, 0,
                              env_addr=env.ctypes.data)
        return (err[0] if status else None), views, rng.copy()
    return info.run_interpreted(states, arena.memory, None, fp_env=env), views, rng.copy()


def _seeds(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(1, 2**63, (n, 6, 2), dtype=np.uint64).reshape(-1)


def _mixed_vertices(rng: np.random.Generator, n: int) -> list[dict[str, Any]]:
    def halves(lo: float, hi: float) -> np.ndarray:
        return rng.uniform(lo, hi, n).astype(np.float16)

    return [{"a": halves(-3, 3), "b": halves(0.5, 2), "f": rng.uniform(-100, 100, n).astype(np.float32),
             "n": rng.integers(-3000, 3000, n).astype(np.int32), "out": np.zeros(n), "acc": halves(-9, 9),
             "q": np.zeros(n)} for _ in range(3)]


@pytest.mark.parametrize("ctl", [ESR, 0, NANOO])
def test_fp_kernel_and_interpreter_agree(codelets: Any, ctl: int):
    """Every half operation and explicit conversion of Mixed rounds stochastically under ESR:
    both modes give the same values and leave the generators in the same state; without ESR
    the floating-point kernel gives the plain kernel's (numpy's) values and draws nothing."""
    vertices = _mixed_vertices(np.random.default_rng(2), 40)
    seeds = _seeds(3, 3)
    err_n, native, rng_n = _run(codelets.Mixed, [dict(v) for v in vertices], "native", ctl, seeds)
    err_i, interp, rng_i = _run(codelets.Mixed, [dict(v) for v in vertices], "interp", ctl, seeds)
    assert err_n is None and err_i is None
    for a, b in zip(native, interp):
        for name in ("out", "acc", "q"):
            np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    np.testing.assert_array_equal(rng_n, rng_i)
    plain_info = codelet_info(codelets.Mixed)
    arena = Arena(1 << 16)
    states, views = build(plain_info, [dict(v) for v in vertices], arena)
    err = np.zeros(1, ERR_DTYPE)
    assert not compile_codelet(codelets.Mixed, STRICT).run(states.ctypes.data, 3, 0, 0, err.ctypes.data)
    if ctl & ESR:
        moved = (rng_n != seeds).reshape(3, 6, 2).any(axis=2)
        assert moved[:, 0].all() and not moved[:, 1:].any()  # each (plain) vertex drew from worker 0's
        assert any(not np.array_equal(v["out"], p["out"]) for v, p in zip(native, views))
    else:
        np.testing.assert_array_equal(rng_n, seeds)
        for v, p in zip(native, views):
            for name in ("out", "acc", "q"):
                np.testing.assert_array_equal(v[name], p[name], err_msg=name)


@pytest.mark.parametrize("mode", ["native", "interp"])
def test_multivertex_workers_draw_from_their_own_generators(codelets: Any, mode: str):
    """Worker w of the vertex rounds element w, w + 6, ... with generator w: the reference
    draws them in that order."""
    n = 60
    x = np.random.default_rng(4).uniform(-2, 2, n).astype(np.float32)
    seeds = _seeds(1, 5)
    err, views, after = _run(codelets.Workers, [{"x": x, "y": np.zeros(n)}], mode, ESR, seeds)
    assert err is None
    state = [[int(seeds[2 * w]), int(seeds[2 * w + 1])] for w in range(6)]
    want = [reference_round(float(x[i]), next_random(state[i % 6]) >> 32) for i in range(n)]
    np.testing.assert_array_equal(views[0]["y"], np.asarray(want, np.float16))
    np.testing.assert_array_equal(after, np.asarray(state, np.uint64).reshape(-1))


EXCEPTIONS = [  # a, b (halves), f: the inputs of one element; the word; (kind, statement) or None
    (1.0, 0.0, 1.0, INV | DIV0, (1, "acc")),  # acc / b: division by zero
    (1.0, 1.0, np.nan, INV, (0, "t")),  # f * 0.5 with f NaN
    (1.0, 1.0, np.nan, DIV0 | OFLO, None),
    (1.0, 1.0, 2e5, OFLO, (2, "t")),  # f * 0.5 stored into the half t
    (1.0, 1.0, 2e5, NANOO, None),
    (1.0, 1.0, 2e5, NANOO | INV, (0, "t")),
    (60000.0, 2.0, 1.0, OFLO | ESR, (2, "out")),  # a + b * a
]


@pytest.mark.parametrize("a,b,f,ctl,raised", EXCEPTIONS)
def test_exceptions_agree(codelets: Any, a: float, b: float, f: float, ctl: int, raised: Any):
    vertex = {"a": [0.5, a], "b": [1.0, b], "f": [1.0, f], "n": [1, 1], "out": [0, 0], "acc": [1.0, 1.0],
              "q": [0, 0]}
    lines, first = inspect.getsourcelines(codelets.Mixed.compute)
    results = [_run(codelets.Mixed, [dict(vertex)], mode, ctl, _seeds(1, 6)) for mode in ("native", "interp")]
    for err, _, _ in results:
        if raised is None:
            assert err is None
            continue
        assert err is not None and int(err["code"]) == ERR_FP_EXCEPTION
        kind, target = raised
        line = next(first + k for k, text in enumerate(lines) if text.strip().startswith(f"{target}") or
                    text.strip().startswith(f"self.{target}[i] ="))
        assert (int(err["field"]), int(err["line"])) == (kind, line)
    np.testing.assert_array_equal(results[0][1][0]["out"], results[1][1][0]["out"])
