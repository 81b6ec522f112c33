"""Lockstep lanes: vertices whose shapes agree run together, each exactly as it would alone."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from codelet_harness import STRICT, isolated_cache, load_module, run  # noqa: F401

from poplar_py.codelet.codelet_compiler import KernelOptions, codelet_info, compile_codelet
from poplar_py.codelet.lanes import LANES, lockstep_ok

LANED = KernelOptions(fast_math=False, lanes=True)  # what a compute set of LANES or more vertices asks for

SOURCE = """
from poplar_py import LocalArray

def scaled(x, k):
    return x * k if k > 0 else -x

class Dot(Vertex):
    a: Input[Vector[float]]
    b: Input[Vector[float]]
    out: Output[float]
    k: float

    def compute(self):
        s = 0.0
        for i in range(len(self.a)):
            s += self.a[i] * scaled(self.b[i], self.k)
        self.out = s + math.sqrt(abs(s))
        return True

class Ring(Vertex):
    x: InOut[Vector[float]]
    shift: int

    def compute(self):
        n = len(self.x)
        tmp = LocalArray(FLOAT, 4)
        for i in range(n):
            tmp[i % 4] = self.x[(i + self.shift) % n]
            self.x[i] = self.x[i] + tmp[i % 4] * 0.5

class Branchy(Vertex):
    x: Input[Vector[float]]
    out: Output[float]

    def compute(self):
        s = 0.0
        for v in self.x:
            if v > 0:
                s += v
        self.out = s

class Rows(Vertex):
    rows: Input[VectorList[float]]
    out: Output[Vector[float]]

    def compute(self):
        for r in range(len(self.rows)):
            s = 0.0
            for v in self.rows[r]:
                s += v
            self.out[r] = s
"""


@pytest.fixture(scope="module")
def codelets(tmp_path_factory):
    return load_module(tmp_path_factory.mktemp("lanes"), textwrap.dedent(SOURCE))


def test_only_classes_whose_control_cannot_diverge_go_in_lockstep(codelets):
    verdict = {name: lockstep_ok(codelet_info(getattr(codelets, name)).typed)
               for name in ("Dot", "Ring", "Branchy", "Rows")}
    # Branchy branches on data; Rows loops over rows whose lengths differ between vertices
    assert verdict == {"Dot": True, "Ring": True, "Branchy": False, "Rows": False}


def test_the_lockstep_path_is_built_only_when_asked_for_in_strict_mode(codelets):
    def has_lanes(options):
        return "_compute_lanes" in compile_codelet(codelets.Dot, options).ir

    assert has_lanes(LANED)
    assert not has_lanes(STRICT)
    assert not has_lanes(KernelOptions(fast_math=True, lanes=True))


def _dots(rng, sizes, k=1.5):
    return [{"a": rng.standard_normal(n).astype(np.float32), "b": rng.standard_normal(n).astype(np.float32),
             "out": np.zeros(1, np.float32), "k": k} for n in sizes]


@pytest.mark.parametrize("sizes", [[37] * (2 * LANES + 3), [37] * 5 + [36] + [37] * (LANES + 2)])
def test_lanes_give_each_vertex_its_own_bits_and_cycles(codelets, sizes):
    """Groups of LANES agreeing vertices (and the rest alone) against every vertex run alone."""
    vertices = _dots(np.random.default_rng(len(sizes)), sizes)
    together = run(codelets.Dot, vertices, "native", LANED)
    alone = [run(codelets.Dot, [v], "native", STRICT) for v in vertices]
    interpreted = run(codelets.Dot, vertices, "interp", STRICT)
    assert together.err is None
    for k, one in enumerate(alone):
        assert together.fields[k]["out"].tobytes() == one.fields[0]["out"].tobytes()
        assert together.fields[k]["out"].tobytes() == interpreted.fields[k]["out"].tobytes()
        assert together.cycles[k] == one.cycles[0]


def test_lanes_keep_local_arrays_and_in_place_updates(codelets):
    rng = np.random.default_rng(1)
    vertices = [{"x": rng.standard_normal(11).astype(np.float32), "shift": 3} for _ in range(LANES)]
    expected = []
    for v in vertices:
        x, tmp = v["x"].copy(), np.zeros(4, np.float32)
        for i in range(11):
            tmp[i % 4] = x[(i + 3) % 11]
            x[i] = np.float32(x[i] + tmp[i % 4] * np.float32(0.5))
        expected.append(x)
    got = run(codelets.Ring, vertices, "native", LANED)
    for view, want in zip(got.fields, expected):
        np.testing.assert_array_equal(view["x"], want)


def test_a_failure_in_lockstep_names_the_first_vertex_as_alone(codelets):
    """Lanes fail alike (their indices and lengths agree): the first vertex of the group reports."""
    vertices = _dots(np.random.default_rng(2), [12] * (LANES + 4))
    for v in vertices[LANES:]:
        v["b"] = v["b"][:5]  # shorter b: the group of the last vertices fails at b[5]
    for v in vertices[:LANES]:
        v["b"] = v["b"][:5]
    together = run(codelets.Dot, vertices, "native", LANED)
    alone = run(codelets.Dot, vertices[:1], "native", STRICT)
    assert together.err is not None and int(together.err["vertex"]) == 0
    for field in ("code", "field", "index", "size", "line"):
        assert together.err[field] == alone.err[field]
