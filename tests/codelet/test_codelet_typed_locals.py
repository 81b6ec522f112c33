"""Annotated locals (``acc: HALF = 0``) convert every assignment, in both modes, bit for bit."""

import bdb
import inspect
import linecache
import sys
import traceback

import numpy as np
import pytest
from codelet_harness import MODES, isolated_cache, run_one, same_bits  # noqa: F401

from poplar_py.codelet.codelet_compiler import ERR_OUT_OF_BOUNDS, _typed, compile_codelet
from poplar_py.codelet.interpreter import Interpreter
from poplar_py.codelet.type_rules import cast_value
from poplar_py.types import CHAR, FLOAT, HALF, INT, LONGLONG, UNSIGNED_CHAR, UNSIGNED_INT
from poplar_py.vertex import InOut, Input, MultiVertex, Output, Vector, Vertex


def half_mix(x, y):
    s = x * 3  # x is already half here: a declared parameter converts on entry
    x: HALF = s + y
    x += y / 7
    return x


def wrap_add(a, b):
    s: INT = a
    s += b
    return s


def read_half(v, i):
    r: HALF = 0
    r = v[i] * 1.0001
    return r


class Typed(Vertex):
    x: Input[Vector[FLOAT]]
    big: Input[Vector[LONGLONG]]
    h: Output[Vector[FLOAT]]
    f: Output[Vector[FLOAT]]
    i: Output[Vector[LONGLONG]]
    u: Output[Vector[LONGLONG]]
    t: Output[Vector[FLOAT]]
    hp: Output[Vector[FLOAT]]
    w: Output[Vector[LONGLONG]]
    loop: Output[LONGLONG]

    def compute(self):
        acc: HALF = 0.0
        lo: HALF = 0.0
        hi: CHAR = 0
        for k in range(len(self.x)):
            v = self.x[k]
            acc += v
            acc = acc * 1.001 + v / 3
            self.h[k] = acc
            y: FLOAT = float(v) / 3.0
            self.f[k] = (float(y) - float(v) / 3.0) * 1e8
            n: INT = self.big[k]
            n += 2147483647
            self.i[k] = n
            q: UNSIGNED_INT = v * 1000.0
            q -= 1
            self.u[k] = q
            lo, hi = v, v * 7.0
            self.t[k] = lo + hi
            self.hp[k] = half_mix(v, v)
            self.w[k] = wrap_add(n, self.big[k])
        c: LONGLONG = 0
        j: UNSIGNED_CHAR = 0
        for j in range(250, 260):
            c = c * 300 + j
        self.loop = c


class Weak(Vertex):
    a: Input[Vector[FLOAT]]
    u: Input[Vector[UNSIGNED_INT]]
    f: Output[Vector[FLOAT]]
    n: Output[Vector[LONGLONG]]
    b: Output[Vector[LONGLONG]]

    def compute(self):
        for k in range(len(self.a)):
            x: float = self.a[k]
            self.f[k] = x * 0.1
            m: int = self.u[k]
            m -= 1
            self.n[k] = m // 2
            flag: bool = self.a[k]
            self.b[k] = int(flag)


class Multi(MultiVertex):
    x: InOut[Vector[FLOAT]]

    def compute(self, workerId):
        s: HALF = workerId
        for i in range(workerId, len(self.x), self.numWorkers()):
            s += self.x[i]
            s = s * 1.001
            self.x[i] = s


class OutOfBounds(Vertex):
    x: Input[Vector[FLOAT]]
    i: Input[INT]
    out: Output[FLOAT]

    def compute(self):
        t: FLOAT = 0
        t += read_half(self.x, self.i)
        t += self.x[self.i + 1]
        self.out = t


def plain_helper(v, i):
    return v[i] + 1


class Plain(Vertex):
    x: Input[Vector[FLOAT]]
    out: Output[FLOAT]

    def compute(self):
        self.out = plain_helper(self.x, 0) + read_half(self.x, 1)


class Raises(Vertex):
    i: Input[INT]
    out: Output[LONGLONG]

    def compute(self):
        n: int = self.i
        n = 7 // n
        self.out = n


def line_of(func, text):
    lines, start = inspect.getsourcelines(func)
    return start + next(i for i, t in enumerate(lines) if text in t)


def _floats(n, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(np.float32)
    x[-8:] = [0.0, -0.0, 1e-8, 65519.0, 1e9, -np.inf, np.inf, np.nan]  # edges last: half sums go inf
    return x


def _both(cls, **values):
    native = run_one(cls, "native", **{k: np.copy(v) for k, v in values.items()})
    interp = run_one(cls, "interp", **{k: np.copy(v) for k, v in values.items()})
    assert native.err is None and interp.err is None
    return native.fields[0], interp.fields[0]


def _same(native, interp):
    for name, got in interp.items():
        assert same_bits(native[name], got), (name, native[name], got)


@pytest.mark.parametrize("seed", [0, 1])
def test_poplar_typed_locals_convert_every_assignment(seed):
    x = _floats(64, seed)
    big = np.random.default_rng(seed).integers(-(2**62), 2**62, 64)
    big[:3] = [0, 2**31, -(2**63)]
    outs = {k: np.zeros(64, np.float32) for k in ("h", "f", "t", "hp")}
    outs.update({k: np.zeros(64, np.int64) for k in ("i", "u", "w")})
    native, interp = _both(Typed, x=x, big=big, loop=np.int64(0), **outs)
    _same(native, interp)
    # what the compiled semantics say, step by step
    with np.errstate(all="ignore"):
        acc, expect_h = np.float16(0), []
        for v in x:
            acc = np.float16(acc + v)
            acc = np.float16(acc * 1.001 + v / 3)
            expect_h.append(np.float32(acc))
        assert same_bits(interp["h"], np.array(expect_h, np.float32))
        y = x.astype(np.float64) / 3.0
        assert same_bits(interp["f"], ((y.astype(np.float32) - y) * 1e8).astype(np.float32))
        n = big.astype(np.int32) + np.int32(2**31 - 1)
        assert list(interp["i"]) == list(n)
        q = np.array([cast_value(v * np.float32(1000.0), np.dtype(np.uint32)) for v in x]) - np.uint32(1)
        assert list(interp["u"]) == list(q)
        assert list(interp["w"]) == [cast_value(int(a) + int(b), np.dtype(np.int32)) for a, b in zip(n, big)]
    assert int(interp["loop"][0]) == _loop_expected()


def _loop_expected():
    c = 0
    for j in range(250, 260):
        c = int(cast_value(c * 300 + (j & 0xFF), np.dtype(np.int64)))
    return c


def test_weak_annotations_hold_python_floats_and_ints():
    a = _floats(256, 2)
    u = np.arange(256, dtype=np.uint32) * 7919
    zeros = {"f": np.zeros(256, np.float32), "n": np.zeros(256, np.int64), "b": np.zeros(256, np.int64)}
    native, interp = _both(Weak, a=a, u=u, **zeros)
    _same(native, interp)
    with np.errstate(all="ignore"):
        assert same_bits(interp["f"], (a.astype(np.float64) * 0.1).astype(np.float32))  # in double
    assert list(interp["n"]) == [(int(v) - 1) // 2 for v in u]  # u = 0 gives -1, not a wrapped uint32
    assert list(interp["b"]) == [int(v != 0) for v in a]  # NaN is True


def test_multivertex_typed_local():
    x = _floats(40, 3)
    native, interp = _both(Multi, x=x)
    _same(native, interp)
    with np.errstate(all="ignore"):
        for w in range(6):
            s = np.float16(w)
            for i in range(w, 40, 6):
                s = np.float16(np.float16(s + x[i]) * 1.001)
                assert same_bits(interp["x"][i], np.float32(s))


@pytest.mark.parametrize("mode", MODES)
def test_out_of_bounds_line_in_functions_with_typed_locals(mode):
    x = np.array([1.0, 2.0, 3.0], np.float32)
    r = run_one(OutOfBounds, mode, x=x, i=1, out=0.0)
    assert r.err is None
    assert r.fields[0]["out"][0] == np.float32(np.float16(np.float16(2.0) * 1.0001)) + 3.0
    r = run_one(OutOfBounds, mode, x=x, i=3, out=0.0)
    assert (r.err["code"], r.err["field"], r.err["index"], r.err["size"]) == (ERR_OUT_OF_BOUNDS, 0, 3, 3)
    assert r.err["line"] == line_of(read_half, "r = v[i]")
    r = run_one(OutOfBounds, mode, x=x, i=2, out=0.0)
    assert (r.err["code"], r.err["index"]) == (ERR_OUT_OF_BOUNDS, 3)
    assert r.err["line"] == line_of(OutOfBounds.compute, "self.x[self.i + 1]")


def test_tracebacks_point_at_the_file_line_and_columns():
    assert run_one(Raises, "native", i=0, out=0).fields[0]["out"][0] == 0
    with pytest.raises(ZeroDivisionError) as info:  # Python ints raise in the interpreter
        run_one(Raises, "interp", i=0, out=0)
    frame = traceback.extract_tb(info.value.__traceback__)[-1]
    assert frame.filename == Raises.compute.__code__.co_filename
    assert frame.lineno == line_of(Raises.compute, "n = 7 // n")
    assert frame.name == "compute" and frame.line == "n = 7 // n"
    source = linecache.getline(frame.filename, frame.lineno).rstrip("\n")
    assert (frame.colno, frame.end_colno) == (source.index("7 // n"), len(source))  # the carets


def test_breakpoints_by_line_stop_in_the_converting_copy():
    line = line_of(Typed.compute, "self.h[k] = acc")
    file = Typed.compute.__code__.co_filename

    class Recorder(bdb.Bdb):
        def __init__(self):
            super().__init__()
            self.seen = []

        def user_line(self, frame):
            if frame.f_code.co_filename == file and frame.f_lineno == line:
                self.seen.append(type(frame.f_locals["acc"]))
            self.set_continue()

    compile_codelet(Typed)  # outside the debugger
    dbg = Recorder()
    assert dbg.set_break(file, line) is None
    x = np.array([1.5, 2.5], np.float32)
    outs = {k: np.zeros(2, np.float32) for k in ("h", "f", "t", "hp")}
    outs.update({k: np.zeros(2, np.int64) for k in ("i", "u", "w")})
    try:
        dbg.runcall(run_one, Typed, "interp", x=x, big=np.zeros(2, np.int64), loop=0, **outs)
    finally:
        sys.settrace(None)
    assert dbg.seen == [np.float16, np.float16]


def test_only_functions_with_annotations_run_a_copy():
    interp = Interpreter(_typed(Plain).parsed)
    assert interp.compute.__code__ is Plain.compute.__code__
    assert plain_helper.__code__ in interp.codes and read_half.__code__ not in interp.codes
    copy = next(c for c in interp.codes if c.co_name == "read_half")
    assert (copy.co_filename, copy.co_firstlineno) == (__file__, read_half.__code__.co_firstlineno)
    interp = Interpreter(_typed(Typed).parsed)
    code = interp.compute.__code__
    assert code is not Typed.compute.__code__ and code in interp.codes
    original = Typed.compute.__code__
    assert (code.co_filename, code.co_firstlineno, code.co_qualname) == (
        original.co_filename,
        original.co_firstlineno,
        original.co_qualname,
    )
    assert {c.co_name for c in interp.codes} == {"compute", "half_mix", "wrap_add"}
    assert not {half_mix.__code__, wrap_add.__code__, original} & interp.codes
