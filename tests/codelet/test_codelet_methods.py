"""Ports of C++ vertex code: methods of the vertex class as helpers (``self.helper(x)``), helpers
that fill a ``LocalArray`` passed to them, and C's truncating integer division (``cdiv``,
``cmod``): exact results in both codelet modes, and the misuse each raises."""

from __future__ import annotations

import numpy as np
import pytest
from codelet_harness import MODES, isolated_cache, load_module, run_one  # noqa: F401

import poplar_py as poplar
from poplar_py import cdiv, cmod
from poplar_py.codelet.codelet_compiler import check_codelet
from poplar_py.errors import CodeletCompileError
from poplar_py.types import INT, SHORT, UNSIGNED_INT
from poplar_py.vertex import InOut, Input, LocalArray, MultiVertex, Output, Vector, Vertex


def fill_pair(out, x):
    """A C++ out-parameter: the caller's array is filled."""
    out[0] = x * 2
    out[1] = x * 3


class Stencil(Vertex):
    """A port of a C++ vertex with member functions: one reads fields through ``self``, one fills a
    ``std::array`` out-parameter, one calls another, one writes a field."""

    x: Input[Vector[float]]
    scale: float
    out: Output[Vector[float]]
    count: InOut[int]

    def at(self, i):
        if i < 0 or i >= len(self.x):
            return 0.0
        return self.x[i] * self.scale

    def neighbours(self, i, pair):
        pair[0] = self.at(i - 1)
        pair[1] = self.at(i + 1)

    def smooth(self, i):
        pair = LocalArray(float, 2)
        self.neighbours(i, pair)
        return (pair[0] + self.at(i) + pair[1]) / 3.0

    def tally(self):
        self.count += 1

    def compute(self):
        for i in range(len(self.out)):
            self.out[i] = self.smooth(i)
            self.tally()
        pair = LocalArray(int, 2)
        fill_pair(pair, self.count)
        self.count += pair[0] + pair[1]


class Base(Vertex):
    """A method of a base class calls the subclass's override, as Python does."""

    out: Output[int]

    def value(self):
        return 1

    def compute(self):
        self.out = self.value() * 10


class Derived(Base):
    def value(self):
        return 7


class Workers(MultiVertex):
    out: InOut[Vector[int]]

    def bump(self, k, by):
        self.out[k] += by

    def compute(self, workerId):
        self.bump(workerId, workerId + self.numWorkers())


class CDivision(Vertex):
    a: Input[Vector[INT]]
    b: Input[Vector[INT]]
    q: Output[Vector[INT]]
    r: Output[Vector[INT]]
    uq: Output[Vector[UNSIGNED_INT]]
    small: Output[Vector[SHORT]]
    consts: Output[Vector[int]]

    def compute(self):
        for i in range(len(self.a)):
            self.q[i] = cdiv(self.a[i], self.b[i])
            self.r[i] = poplar.cmod(self.a[i], self.b[i])
            self.uq[i] = cdiv(UNSIGNED_INT(self.a[i]), UNSIGNED_INT(self.b[i]))
            self.small[i] = cmod(SHORT(self.a[i]), SHORT(self.b[i]))
        self.consts[0] = cdiv(-7, 2)
        self.consts[1] = cmod(-7, 2)
        self.consts[2] = cdiv(7, -2)


def c_divmod(a: int, b: int) -> tuple[int, int]:
    """The C reference on Python ints: truncation toward zero, 0 for b == 0."""
    if b == 0:
        return 0, 0
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    return q, a - b * q


@pytest.mark.parametrize("mode", MODES)
def test_methods_read_fields_and_fill_arrays(mode):
    x = np.array([1.0, 2.0, 4.0, 8.0], np.float32)
    r = run_one(Stencil, mode, x=x, scale=2.0, out=np.zeros(4, np.float32), count=5)
    assert r.err is None
    padded = np.concatenate([[0.0], x * 2.0, [0.0]])
    expected = (padded[:-2] + padded[1:-1] + padded[2:]) / 3.0
    np.testing.assert_allclose(r.fields[0]["out"], expected, rtol=1e-6)
    count = 5 + 4
    assert r.fields[0]["count"][0] == count + 2 * count + 3 * count


@pytest.mark.parametrize("mode", MODES)
def test_methods_dispatch_on_the_vertex_class(mode):
    assert run_one(Base, mode, out=0).fields[0]["out"][0] == 10
    assert run_one(Derived, mode, out=0).fields[0]["out"][0] == 70


@pytest.mark.parametrize("mode", MODES)
def test_multivertex_methods(mode):
    r = run_one(Workers, mode, out=np.zeros(6, np.int32))
    assert r.fields[0]["out"].tolist() == [w + 6 for w in range(6)]


@pytest.mark.parametrize("mode", MODES)
def test_cdiv_cmod_truncate_like_c(mode):
    pairs = [(-7, 2), (7, -2), (-7, -2), (7, 2), (6, 3), (-6, 3), (5, 0), (-(2**31), -1), (0, -5), (-1, 7)]
    a = np.array([p[0] for p in pairs], np.int32)
    b = np.array([p[1] for p in pairs], np.int32)
    n = len(pairs)
    r = run_one(CDivision, mode, a=a, b=b, q=np.zeros(n, np.int32), r=np.zeros(n, np.int32),
                uq=np.zeros(n, np.uint32), small=np.zeros(n, np.int16), consts=np.zeros(3, np.int64))
    assert r.err is None
    f = r.fields[0]
    ref = [c_divmod(int(x), int(y)) for x, y in pairs]
    ref[7] = (-(2**31), 0)  # INT_MIN / -1 wraps in 32 bits (C leaves it undefined)
    assert f["q"].tolist() == [q for q, _ in ref]
    assert f["r"].tolist() == [m for _, m in ref]
    au, bu = a.astype(np.uint32), b.astype(np.uint32)
    assert f["uq"].tolist() == [int(x) // int(y) if y else 0 for x, y in zip(au, bu)]
    a16, b16 = a.astype(np.int16), b.astype(np.int16)
    assert f["small"].tolist() == [c_divmod(int(x), int(y))[1] for x, y in zip(a16, b16)]
    assert f["consts"].tolist() == [-3, -1, -3]


def test_cdiv_cmod_on_the_host_keep_the_type():
    assert (cdiv(-7, 2), cmod(-7, 2), cdiv(7, 0), cmod(7, 0)) == (-3, -1, 0, 0)
    q = cdiv(np.int32(-9), np.int32(4))
    assert q == -2 and q.dtype == np.int32
    assert cmod(np.uint8(250), np.uint8(7)) == 250 % 7


BAD = """
class V(Vertex):
    x: Input[Vector[float]]
    out: Output[float]
    helper_value = 3

    @staticmethod
    def static(v):
        return v

    def method(self, v):
        return v + self.x[0]

    def compute(self):
        {line}
"""


@pytest.mark.parametrize("line, message", [
    ("self.out = self.nope(1.0)", "V has no method 'nope'"),
    ("self.out = self.static(1.0)", "V has no method 'static'"),
    ("self.out = self.x(1.0)", "'x' is a field of V, not a method"),
    ("self.out = self.method(1.0, 2.0)", "'V.method' takes 1 argument"),
    ("self.compute()", "compute\\(\\) cannot be called"),
    ("self.out = cdiv(1.0, 2)", "cdiv\\(\\) needs two integers"),
    ("self.out = cmod(1)", "cmod\\(\\) takes exactly two arguments"),
    ("self.out = poplar.LocalArray(int, 1)[0]", "poplar_py.LocalArray\\(\\) cannot be called through the "
     "module in codelets \\(only cdiv and cmod\\); import the name"),
    ("f = cdiv", "'cdiv' can only be called"),
])
def test_misuse_is_rejected_with_the_line(tmp_path, line, message):
    module = load_module(tmp_path, "import poplar_py as poplar\nfrom poplar_py import cdiv, cmod\n"
                         + BAD.format(line=line))
    with pytest.raises(CodeletCompileError, match=rf"{module.__file__}:\d+: .*{message}"):
        check_codelet(module.V)
