"""Loop versioning of checked kernels (codelet/loop_versioning.py): exact errors, the fast path, cycles."""

import re

import numpy as np
import pytest
from codelet_harness import MODES, STRICT, isolated_cache, load_module, optimised_ir, run_one  # noqa: F401

from poplar_py.codelet.codelet_compiler import ERR_OUT_OF_BOUNDS, KernelOptions, compile_codelet

UNCHECKED = KernelOptions(checked=False, fast_math=False)

# y[i] is always in bounds; x[2 * i + off] and (with a second read through a local) the failing
# access; ``base`` exercises a local assigned in the loop from an affine expression
STRIDED = """
class V(Vertex):
    x: Input[Vector[float]]
    y: Output[Vector[float]]
    a: Input[int]
    b: Input[int]
    off: Input[int]

    def compute(self):
        off = self.off
        b = self.b
        for i in range(self.a, b, STEP):
            base = 2 * i + off
            self.y[i] = self.x[base] + 1.0  # ACCESS
        return True
"""
X_SIZE = 64
ITERATIONS = 7
A = {1: 40, 3: 30, -1: 60, -2: 70}  # first value of i (y has 100 elements)


def strided(tmp_path, step):
    cls = load_module(tmp_path, STRIDED.replace("STEP", str(step))).V
    assert re.search(r"^ver\.fast[.0-9]*:", compile_codelet(cls, STRICT).ir, re.M)  # versioned
    return cls


def first_failure(a, step, off):
    """(iteration, index) of the first out-of-bounds x access, or None."""
    for t in range(ITERATIONS):
        index = 2 * (a + t * step) + off
        if not 0 <= index < X_SIZE:
            return t, index
    return None


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("step", [1, 3, -1, -2])
def test_out_of_bounds_in_a_versioned_loop_gives_the_exact_record(tmp_path, mode, step):
    cls = strided(tmp_path, step)
    a = A[step]
    b = a + ITERATIONS * step
    line = next(k for k, t in enumerate(STRIDED.splitlines(), 4) if "# ACCESS" in t)  # prelude: 3 lines
    cases = {}
    for off in range(-2 * a - 80, -2 * a + 120):
        hit = first_failure(a, step, off)
        if hit is not None and hit[0] in (0, ITERATIONS // 2, ITERATIONS - 1):
            cases.setdefault((hit[0], hit[1] < 0), (off, hit))
    assert len(cases) >= 4  # first/middle/last, negative and too large, as the direction allows
    x = np.arange(X_SIZE, dtype=np.float32)
    for off, (t, index) in cases.values():
        results = {}
        for options in (STRICT, KernelOptions(fast_math=True)):
            r = run_one(cls, mode, options, x=x, y=np.zeros(100, np.float32), a=a, b=b, off=off)
            assert r.err is not None
            rec = (int(r.err["code"]), int(r.err["field"]), int(r.err["index"]), int(r.err["size"]))
            assert rec == (ERR_OUT_OF_BOUNDS, 0, index, X_SIZE)
            assert int(r.err["line"]) == line
            results[options] = (r.fields[0]["y"].copy(), int(r.cycles[0]) if mode == "native" else 0)
        y = results[STRICT][0]
        assert np.count_nonzero(y) == t  # the iterations before the failing one ran
        assert all(np.array_equal(v[0], y) for v in results.values())


@pytest.mark.parametrize("step", [1, 3, -1, -2])
def test_in_bounds_results_and_cycles_match_unchecked_and_interpreter(tmp_path, step):
    cls = strided(tmp_path, step)
    a = A[step]
    values = {"x": np.arange(200, dtype=np.float32), "y": np.zeros(200, np.float32),
              "a": a, "b": a + ITERATIONS * step, "off": 3}
    runs = [run_one(cls, "native", STRICT, **values), run_one(cls, "native", UNCHECKED, **values),
            run_one(cls, "interp", STRICT, **values)]
    assert all(r.err is None for r in runs)
    assert all(np.array_equal(r.fields[0]["y"], runs[0].fields[0]["y"]) for r in runs)
    assert int(runs[0].cycles[0]) == int(runs[1].cycles[0]) > 0  # the path does not change the count
    assert np.count_nonzero(runs[0].fields[0]["y"]) == ITERATIONS


def test_empty_and_reversed_ranges_run_nothing(tmp_path):
    cls = strided(tmp_path, 1)
    for a, b in ((5, 5), (9, 2)):
        values = {"x": np.ones(4, np.float32), "y": np.zeros(4, np.float32), "a": a, "b": b, "off": -100}
        r = run_one(cls, "native", STRICT, **values)
        assert r.err is None and not r.fields[0]["y"].any()


AXPY = """
class Axpy(Vertex):
    a: Input[Vector[float]]
    b: Input[Vector[float]]
    out: InOut[Vector[float]]
    n: Input[int]

    def compute(self):
        n = len(self.out)
        for k in range(len(self.a)):
            x = self.a[k]
            base = k * n
            for j in range(n):
                self.out[j] += x * self.b[base + j]
        return True
"""


def test_checked_hot_loop_is_vectorised(tmp_path):
    cls = load_module(tmp_path, AXPY).Axpy
    checked = optimised_ir(cls, STRICT)
    assert re.search(r"fmul <\d+ x float>", checked)  # the fast path of the j loop
    assert "ver.fast" in compile_codelet(cls, STRICT).ir


def test_checked_axpy_errors_and_matches(tmp_path):
    cls = load_module(tmp_path, AXPY).Axpy
    rng = np.random.default_rng(1)
    a, out = rng.standard_normal(5).astype(np.float32), rng.standard_normal(8).astype(np.float32)
    b_ok, b_short = rng.standard_normal(40).astype(np.float32), rng.standard_normal(37).astype(np.float32)
    results = [run_one(cls, mode, options, a=a, b=b_ok, out=out, n=0)
               for mode, options in (("native", STRICT), ("native", UNCHECKED), ("interp", STRICT))]
    assert all(r.err is None for r in results)
    assert all(np.array_equal(r.fields[0]["out"], results[0].fields[0]["out"]) for r in results)
    assert int(results[0].cycles[0]) == int(results[1].cycles[0]) > 0
    for mode in MODES:
        r = run_one(cls, mode, STRICT, a=a, b=b_short, out=out, n=0)
        assert r.err is not None
        assert (int(r.err["field"]), int(r.err["index"]), int(r.err["size"])) == (1, 37, 37)  # k=4, j=5


REGION = """
class Tail(Vertex):
    x: Input[Vector[float]]
    out: Output[Vector[float]]
    j: Input[int]

    def compute(self):
        j = self.j
        self.out[j] = self.x[j]
        self.out[j + 1] = self.x[j + 1]
        self.out[j + 2] = self.x[j + 2]
        return True
"""


@pytest.mark.parametrize("mode", MODES)
def test_straight_line_region_keeps_exact_records(tmp_path, mode):
    cls = load_module(tmp_path, REGION).Tail
    assert "ver.fast" in compile_codelet(cls, STRICT).ir
    x = np.arange(1, 6, dtype=np.float32)
    r = run_one(cls, mode, STRICT, x=x, out=np.zeros(4, np.float32), j=2)
    assert r.err is not None
    assert (int(r.err["field"]), int(r.err["index"]), int(r.err["size"])) == (1, 4, 4)
    assert r.fields[0]["out"].tolist() == [0, 0, 3, 4]  # the stores before the failing one happened
    r = run_one(cls, mode, STRICT, x=x, out=np.zeros(4, np.float32), j=1)
    assert r.err is None and r.fields[0]["out"].tolist() == [0, 2, 3, 4]



# n is an i64 (the index arithmetic loop versioning covers); MOVE may make the loop assign it
SPAN = """
class Span(Vertex):
    a: Input[Vector[float]]
    out: Output[Vector[float]]

    def compute(self):
        n = len(self.a) - 3
        s = 0.0
        t = 0.0
        for k in range(len(self.a)):
            s += self.a[k]
            t += self.a[k] * 2.0
            MOVE
        self.out[n] = s
        self.out[n + 1] = t
        return True
"""


def versions(cls) -> int:
    return len(re.findall(r"^ver\.fast[.0-9]*:", compile_codelet(cls, STRICT).ir, re.M))


@pytest.mark.parametrize("mode", MODES)
def test_loop_and_the_region_after_it_share_one_guard(tmp_path, mode):
    cls = load_module(tmp_path, SPAN.replace("MOVE", "pass")).Span
    assert versions(cls) == 1
    a = np.arange(1, 5, dtype=np.float32)
    r = run_one(cls, mode, STRICT, a=a, out=np.zeros(3, np.float32))
    assert r.err is None and r.fields[0]["out"].tolist() == [0, 10, 20]
    r = run_one(cls, mode, STRICT, a=a, out=np.zeros(2, np.float32))  # out[n + 1] fails
    assert (int(r.err["field"]), int(r.err["index"]), int(r.err["size"])) == (1, 2, 2)
    assert r.fields[0]["out"].tolist() == [0, 10]  # the loop and the store before the failing one ran


@pytest.mark.parametrize("mode", MODES)
def test_region_reading_what_the_loop_assigns_keeps_its_own_guard(tmp_path, mode):
    cls = load_module(tmp_path, SPAN.replace("MOVE", "n = k")).Span
    assert versions(cls) == 2
    a = np.arange(1, 5, dtype=np.float32)
    r = run_one(cls, mode, STRICT, a=a, out=np.zeros(5, np.float32))  # n is 3 after the loop
    assert r.err is None and r.fields[0]["out"].tolist() == [0, 0, 0, 10, 20]
    r = run_one(cls, mode, STRICT, a=a, out=np.zeros(4, np.float32))
    assert (int(r.err["field"]), int(r.err["index"]), int(r.err["size"])) == (1, 4, 4)


# the k loop's body unrolls (c); a guard failing on it means an access fails, so its checked copy
# is the rolled loop, with acc copied to an array of its own
ROLLED = """
from poplar_py import LocalArray


class Tile(Vertex):
    a: Input[Vector[float]]
    out: Output[Vector[float]]
    extra: Input[int]

    def compute(self):
        acc = LocalArray(float, 4)
        for k in range(len(self.a) // 4 + self.extra):
            for c in range(4):
                acc[c] += self.a[k * 4 + c]  # ACCESS
        for c in range(4):
            self.out[c] = acc[c]
        return True
"""


@pytest.mark.parametrize("mode", MODES)
def test_certain_failure_takes_the_rolled_copy_with_the_exact_record(tmp_path, mode):
    cls = load_module(tmp_path, ROLLED).Tile
    assert "llvm.loop.unroll.disable" in compile_codelet(cls, STRICT).ir
    a = np.arange(12, dtype=np.float32)
    line = next(k for k, t in enumerate(ROLLED.splitlines(), 4) if "# ACCESS" in t)
    r = run_one(cls, mode, STRICT, a=a, out=np.zeros(4, np.float32), extra=1)
    record = (int(r.err["field"]), int(r.err["index"]), int(r.err["size"]), int(r.err["line"]))
    assert record == (0, 12, 12, line)
    assert r.fields[0]["out"].tolist() == [0, 0, 0, 0]
    r = run_one(cls, mode, STRICT, a=a, out=np.zeros(4, np.float32), extra=0)
    assert r.err is None and r.fields[0]["out"].tolist() == [12, 15, 18, 21]
    if mode == "native":
        unchecked = run_one(cls, mode, UNCHECKED, a=a, out=np.zeros(4, np.float32), extra=0)
        assert int(r.cycles[0]) == int(unchecked.cycles[0]) > 0


def test_fast_math_leaves_an_unrolled_body_to_slp(tmp_path):
    """With fastMath, the loop vectoriser would treat each of acc's sums as a reduction (a
    matMul register tile spilled: 6x slower); the loop holding unrolled copies is kept from it."""
    cls = load_module(tmp_path, ROLLED).Tile
    assert '"llvm.loop.vectorize.enable", i1 false' in compile_codelet(cls, KernelOptions(fast_math=True)).ir
    assert "llvm.loop.vectorize.enable" not in compile_codelet(cls, STRICT).ir
    r = run_one(cls, "native", KernelOptions(fast_math=True), a=np.arange(12, dtype=np.float32),
                out=np.zeros(4, np.float32), extra=0)
    assert r.err is None and r.fields[0]["out"].tolist() == [12, 15, 18, 21]
