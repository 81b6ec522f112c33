"""Poplar's CSRFunctions: the tiles' floating-point control words set by program steps,
stochastic rounding of half results from the workers' hardware generators, floating-point
exceptions, in both codelet modes; and misuse."""

import numpy as np
import pytest
from support import make_graph

import poplar_py as poplar
from poplar_py import FLOAT, HALF, Input, MultiVertex, Output, Vector, Vertex
from poplar_py import program as prog
from poplar_py.csr_functions import CSR_CYCLES
from poplibs_py import popops

MODES = ("native", "interpreter")


class CastToHalf(Vertex):
    src: Input[Vector[FLOAT]]
    dst: Output[Vector[HALF]]

    def compute(self):
        for i in range(len(self.dst)):
            self.dst[i] = HALF(self.src[i])
        return True


class HalfOps(MultiVertex):
    """Worker w computes element w of each row: a + b, a * b (half) and a / b (float)."""

    a: Input[Vector[HALF]]
    b: Input[Vector[HALF]]
    total: Output[Vector[HALF]]
    product: Output[Vector[HALF]]
    x: Input[Vector[FLOAT]]
    y: Input[Vector[FLOAT]]
    quotient: Output[Vector[FLOAT]]

    def compute(self, w):
        for i in range(w, len(self.a), 6):
            self.total[i] = self.a[i] + self.b[i]
            self.product[i] = self.a[i] * self.b[i]
        for i in range(w, len(self.x), 6):
            self.quotient[i] = self.x[i] / self.y[i]
        return True


def _engine(g, programs, mode, seed=0, options=None):
    return poplar.Engine(g, programs, {"codelets.mode": mode, "random.seed": str(seed), **(options or {})})


def _cast_graph(n=1200, vertices=4):
    """A graph casting ``src`` (float) to half into ``dst`` on tiles 0 and 1."""
    device, g = make_graph(2)
    g.addCodelets(CastToHalf)
    src, dst = g.addVariable(FLOAT, [n], "src"), g.addVariable(HALF, [n], "dst")
    cs = g.addComputeSet("cast")
    step = n // vertices
    for k in range(vertices):
        tile = k % 2
        g.setTileMapping(src[k * step:(k + 1) * step], tile)
        g.setTileMapping(dst[k * step:(k + 1) * step], tile)
        piece = slice(k * step, (k + 1) * step)
        v = g.addVertex(cs, "CastToHalf", {"src": src[piece], "dst": dst[piece]})
        g.setTileMapping(v, tile)
    g.createHostWrite("src", src)
    g.createHostRead("dst", dst)
    return device, g, cs, dst


def _cast(mode, sr=True, seed=0, x=1.0 + 2.0**-12, n=1200):
    device, g, cs, _ = _cast_graph(n)
    seq = prog.Sequence()
    poplar.setStochasticRounding(g, seq, sr)
    seq.add(prog.Execute(cs))
    e = _engine(g, seq, mode, seed)
    e.load(device)
    e.writeTensor("src", np.full(n, x, np.float32))
    e.run()
    return e.readTensor("dst")


@pytest.mark.parametrize("mode", MODES)
def test_stochastic_cast_is_unbiased_and_differs_from_nearest(mode):
    """1 + 2**-12 lies a quarter of the way from 1 to the next half (1 + 2**-10): rounding to
    nearest gives 1 every time, stochastic rounding the upper one a quarter of the time."""
    x = 1.0 + 2.0**-12
    nearest = _cast(mode, sr=False, x=x)
    np.testing.assert_array_equal(nearest, np.full_like(nearest, np.float16(x)))
    r = _cast(mode, x=x)
    assert set(np.unique(r).tolist()) == {1.0, 1.0 + 2.0**-10}
    up = np.mean(r == np.float16(1.0 + 2.0**-10))
    assert abs(up - 0.25) < 4 * np.sqrt(0.25 * 0.75 / r.size)  # within four standard deviations
    assert abs(r.astype(np.float64).mean() - x) < 2.0**-10 * 4 * np.sqrt(0.25 * 0.75 / r.size)
    exact = _cast(mode, x=1.5)  # a half: never moved
    np.testing.assert_array_equal(exact, np.full_like(exact, 1.5))


def test_same_seed_same_result_in_both_modes_other_seed_differs():
    a, b = _cast("native", seed=7, x=3.0 + 2.0**-10), _cast("interpreter", seed=7, x=3.0 + 2.0**-10)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, _cast("native", seed=7, x=3.0 + 2.0**-10))
    assert not np.array_equal(a, _cast("native", seed=8, x=3.0 + 2.0**-10))


@pytest.mark.parametrize("mode", MODES)
def test_half_arithmetic_rounds_stochastically_multivertex(mode):
    """a + b and a * b (halves) round stochastically from each worker's generator; with the flag
    off they are numpy's; float division is not rounded to half."""
    n = 600
    device, g = make_graph(1)
    g.addCodelets(HalfOps)
    names = ["a", "b", "total", "product"]
    t = {name: g.addVariable(HALF, [n], name) for name in names}
    t.update({name: g.addVariable(FLOAT, [n], name) for name in ("x", "y", "quotient")})
    cs = g.addComputeSet("ops")
    v = g.addVertex(cs, "HalfOps", t)
    g.setTileMapping(v, 0)
    for name, tensor in t.items():
        g.setTileMapping(tensor, 0)
        (g.createHostWrite if name in ("a", "b", "x", "y") else g.createHostRead)(name, tensor)
    on, off = prog.Sequence(), prog.Sequence()
    poplar.setStochasticRounding(g, on, True)
    poplar.setStochasticRounding(g, off, False)
    e = _engine(g, [on, off, prog.Execute(cs)], mode, seed=1)
    e.load(device)
    a = np.full(n, 1.0, np.float16)
    b = np.full(n, 2.0**-12, np.float16)  # 1 + 2**-12 and 2**-12 * 1: exact sums between halves
    x, y = np.linspace(1, 2, n, dtype=np.float32), np.linspace(3, 7, n, dtype=np.float32)
    for name, values in (("a", a), ("b", b), ("x", x), ("y", y)):
        e.writeTensor(name, values)
    e.run(2)
    np.testing.assert_array_equal(e.readTensor("total"), a + b)
    e.run(0)
    e.run(2)  # the word persists from run to run
    total = e.readTensor("total").astype(np.float64)
    assert set(np.unique(total).tolist()) == {1.0, 1.0 + 2.0**-10}
    assert abs(total.mean() - (1.0 + 2.0**-12)) < 2.0**-10 * 4 * np.sqrt(0.25 * 0.75 / n)
    np.testing.assert_array_equal(e.readTensor("product"), a * b)  # exact: no rounding
    np.testing.assert_array_equal(e.readTensor("quotient"), x / y)
    first = total.copy()
    e.run(2)
    assert not np.array_equal(e.readTensor("total").astype(np.float64), first)  # the generators moved on
    e.run(1)
    e.run(2)
    np.testing.assert_array_equal(e.readTensor("total"), a + b)
    e.load(device)  # loading resets the word (and the generators)
    for name, values in (("a", a), ("b", b), ("x", x), ("y", y)):
        e.writeTensor(name, values)
    e.run(2)
    np.testing.assert_array_equal(e.readTensor("total"), a + b)


def test_enable_and_disable_in_one_sequence():
    device, g, cs, dst = _cast_graph()
    out = g.addVariable(HALF, [1200], "out")
    g.setTileMapping(out, 0)
    g.createHostRead("out", out)
    seq = prog.Sequence()
    poplar.setFloatingPointBehaviour(g, seq, poplar.FloatingPointBehaviour(False, False, False, True, False))
    seq.add(prog.Execute(cs))
    seq.add(prog.Copy(dst, out))
    poplar.setStochasticRounding(g, seq, False)
    seq.add(prog.Execute(cs))
    e = _engine(g, seq, "native")
    e.load(device)
    e.writeTensor("src", np.full(1200, 1.0 + 2.0**-12, np.float32))
    e.run()
    assert len(np.unique(e.readTensor("out"))) == 2
    np.testing.assert_array_equal(e.readTensor("dst"), np.full(1200, 1.0, np.float16))
    steps = e.getExecutionProfile()["steps"]  # each control step: a sync and CSR_CYCLES on its tiles
    control = [s for s in steps if s["name"] in ("setFloatingPointBehaviour", "setStochasticRounding")]
    assert [(s["type"], s["compute"]) for s in control] == [("OnTileExecute", CSR_CYCLES)] * 2


class Arith(Vertex):
    x: Input[Vector[FLOAT]]
    y: Input[Vector[FLOAT]]
    out: Output[Vector[FLOAT]]
    h: Output[Vector[HALF]]

    def compute(self):
        for i in range(len(self.out)):
            self.out[i] = self.x[i] / self.y[i]
            self.h[i] = self.x[i] * self.y[i]
        return True


def _arith(mode, behaviour, x, y, options=None):
    """Run Arith (one vertex on tile 1) on ``x``, ``y`` under ``behaviour`` (None: no step);
    returns (out, h) or raises."""
    device, g = make_graph(2)
    g.addCodelets(Arith)
    n = len(x)
    t = {"x": g.addVariable(FLOAT, [n], "x"), "y": g.addVariable(FLOAT, [n], "y"),
         "out": g.addVariable(FLOAT, [n], "out"), "h": g.addVariable(HALF, [n], "h")}
    cs = g.addComputeSet("arith")
    v = g.addVertex(cs, "Arith", t)
    g.setTileMapping(v, 1)
    for name, tensor in t.items():
        g.setTileMapping(tensor, 1)
        (g.createHostWrite if name in "xy" else g.createHostRead)(name, tensor)
    seq = prog.Sequence()
    if behaviour is not None:
        poplar.setFloatingPointBehaviour(g, seq, behaviour)
    seq.add(prog.Execute(cs))
    e = _engine(g, seq, mode, options=options)
    e.load(device)
    e.writeTensor("x", np.asarray(x, np.float32))
    e.writeTensor("y", np.asarray(y, np.float32))
    e.run()
    return e.readTensor("out"), e.readTensor("h")


OFF = poplar.FloatingPointBehaviour(False, False, False, False, False)
CASES = [  # x, y, the flag that makes it raise, its kind
    ([2.0, 0.0], [1.0, 0.0], "inv", "invalid operation"),  # 0 / 0
    ([np.nan], [1.0], "inv", "invalid operation"),  # a NaN operand
    ([2.0, 1.0], [4.0, 0.0], "div0", "division by zero"),
    ([3e38], [0.5], "oflo", "overflow"),  # 6e38: float overflow
    ([7e4], [1.0], "oflo", "overflow"),  # the product stored as half overflows
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("x,y,flag,kind", CASES)
def test_exception_raised_when_enabled_only(mode, x, y, flag, kind):
    with np.errstate(all="ignore"):
        want_out = np.float32(x) / np.float32(y)
        want_h = (np.float32(x) * np.float32(y)).astype(np.float16)
    out, h = _arith(mode, OFF, x, y)  # off: IEEE results, as without the step
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(h, want_h)
    flags = ("inv", "div0", "oflo")
    others = poplar.FloatingPointBehaviour(**{f: f != flag for f in flags}, esr=False, nanoo=False)
    _arith(mode, others, x, y)
    with pytest.raises(poplar.VertexError) as info:
        _arith(mode, poplar.FloatingPointBehaviour(**{f: f == flag for f in flags}, esr=False, nanoo=False),
               x, y)
    message = str(info.value)
    assert f"floating-point exception: {kind} ({flag})" in message
    assert "on tile 1" in message and "Arith.compute" in message and "compute set 'arith'" in message
    assert "test_csr_functions.py:" in message


@pytest.mark.parametrize("mode", MODES)
def test_nan_on_overflow(mode):
    """nanoo: a half overflow is NaN, an invalid operation (raised with inv); off: infinity."""
    nanoo = poplar.FloatingPointBehaviour(False, False, False, False, True)
    _, h = _arith(mode, nanoo, [7e4, 1.0], [1.0, 2.0])
    assert np.isnan(h[0]) and h[1] == 2.0
    _, h = _arith(mode, OFF, [7e4], [1.0])
    assert h[0] == np.inf
    with pytest.raises(poplar.VertexError, match="invalid operation"):
        _arith(mode, poplar.FloatingPointBehaviour(True, False, False, False, True), [7e4], [1.0])


def test_engine_options_enable_exceptions_at_load():
    with pytest.raises(poplar.VertexError, match="invalid operation"):
        _arith("native", None, [0.0], [0.0], {"debug.floatPointOpException": "true"})
    with pytest.raises(poplar.VertexError, match="division by zero"):
        _arith("interpreter", None, [1.0], [0.0], {"debug.divideByZeroException": "true"})
    _, h = _arith("native", None, [7e4], [1.0], {"debug.nanOverflowException": "true"})
    assert np.isnan(h[0])
    out, _ = _arith("native", None, [1.0], [0.0])  # by default none
    assert out[0] == np.inf


@pytest.mark.parametrize("mode", MODES)
def test_get_modify_and_restore(mode):
    device, g = make_graph(2)
    g.addCodelets(Arith)
    t = {name: g.addVariable(FLOAT if name != "h" else HALF, [1], name) for name in ("x", "y", "out", "h")}
    cs = g.addComputeSet("arith")
    g.setTileMapping(g.addVertex(cs, "Arith", t), 0)
    for tensor in t.values():
        g.setTileMapping(tensor, 0)
    g.setInitialValue(t["x"], [1.0])
    g.setInitialValue(t["y"], [0.0])
    modify, restore = prog.Sequence(), prog.Sequence()
    saved = poplar.getAndModifyFloatingPointBehaviour(
        g, modify, poplar.FloatingPointBehaviour(False, False, False, True, False),  # clears esr only
        poplar.FloatingPointBehaviour(False, True, False, False, False), "modify")  # sets div0
    assert saved.shape() == [2] and saved.elementType() == poplar.UNSIGNED_INT
    poplar.restoreFloatingPointBehaviour(g, restore, saved)
    g.createHostRead("saved", saved)
    e = _engine(g, [modify, prog.Execute(cs), restore], mode, options={"debug.floatPointOpException": "true"})
    e.load(device)
    e.run(1)  # inv and oflo (the option) but not div0: 1 / 0 is inf
    e.run(0)
    np.testing.assert_array_equal(e.readTensor("saved"), [1 | 4, 1 | 4])  # inv | oflo on both tiles
    with pytest.raises(poplar.VertexError, match="division by zero"):
        e.run(1)
    e.run(2)
    e.run(1)


def test_popops_cast_rounds_stochastically():
    device, g = make_graph(2)
    popops.addCodelets(g)
    n = 1000
    src = g.addVariable(FLOAT, [n], "src")
    g.setTileMapping(src[:500], 0)
    g.setTileMapping(src[500:], 1)
    seq = prog.Sequence()
    poplar.setStochasticRounding(g, seq, True)
    dst = popops.cast(g, src, HALF, seq)
    g.setInitialValue(src, np.full(n, 1.0 + 2.0**-11, np.float32))  # halfway between two halves
    g.createHostRead("dst", dst)
    e = _engine(g, seq, "native", seed=5)
    e.load(device)
    e.run()
    r = e.readTensor("dst").astype(np.float64)
    assert set(np.unique(r).tolist()) == {1.0, 1.0 + 2.0**-10}
    assert abs(np.mean(r > 1.0) - 0.5) < 4 * np.sqrt(0.25 / n)


def test_virtual_graph_sets_its_tiles_only():
    device, g, cs, _ = _cast_graph()  # tiles 0 and 1
    seq = prog.Sequence()
    poplar.setStochasticRounding(g.createVirtualGraph(1, 2), seq, True)
    seq.add(prog.Execute(cs))
    e = _engine(g, seq, "native")
    e.load(device)
    e.writeTensor("src", np.full(1200, 1.0 + 2.0**-12, np.float32))
    e.run()
    r = e.readTensor("dst").reshape(4, 300)  # vertex k on tile k % 2
    np.testing.assert_array_equal(r[0::2], np.ones((2, 300), np.float16))
    assert len(np.unique(r[1::2])) == 2


def test_behaviour_struct():
    b = poplar.FloatingPointBehaviour()
    assert (b.inv, b.div0, b.oflo, b.esr, b.nanoo) == (True,) * 5  # Poplar's defaults
    off = ~b
    assert (off.inv, off.div0, off.oflo, off.esr, off.nanoo) == (False,) * 5
    assert ~off == b and off != b
    assert "esr=False" in repr(off)


def test_bad_arguments_name_the_argument():
    _, g = make_graph(2)
    seq = prog.Sequence()
    with pytest.raises(poplar.InvalidArgumentError, match=r"setStochasticRounding: prog must be a program\."):
        poplar.setStochasticRounding(g, prog.Execute(g.addComputeSet("cs")), True)
    with pytest.raises(poplar.InvalidArgumentError, match="setStochasticRounding: enable must be a bool"):
        poplar.setStochasticRounding(g, seq, 1)
    with pytest.raises(poplar.InvalidArgumentError, match="setFloatingPointBehaviour: graph must be a Graph"):
        poplar.setFloatingPointBehaviour(seq, seq, poplar.FloatingPointBehaviour())
    with pytest.raises(poplar.InvalidArgumentError, match="behaviour must be a FloatingPointBehaviour"):
        poplar.setFloatingPointBehaviour(g, seq, True)
    with pytest.raises(poplar.InvalidArgumentError, match="FloatingPointBehaviour: oflo must be a bool"):
        poplar.FloatingPointBehaviour(oflo="yes")
    with pytest.raises(poplar.InvalidArgumentError, match="clear must be a FloatingPointBehaviour"):
        poplar.getAndModifyFloatingPointBehaviour(g, seq, None, poplar.FloatingPointBehaviour())
    wrong = g.addVariable(FLOAT, [2], "wrong")
    with pytest.raises(poplar.InvalidArgumentError, match="tensor 'wrong' must be UNSIGNED_INT of shape"):
        poplar.restoreFloatingPointBehaviour(g, seq, wrong)
    with pytest.raises(poplar.InvalidArgumentError, match="restoreFloatingPointBehaviour: behaviour must be"):
        poplar.restoreFloatingPointBehaviour(g, seq, [1, 2])
    assert seq.isEmpty()


class SpinHalf(Vertex):
    out: Output[HALF]
    n: int

    def compute(self):
        s = HALF(0.0)
        while self.n > 0:
            s = s + HALF(1.0)
        self.out = s


def test_floating_point_kernels_are_held_to_the_cycle_budget():
    device, g = make_graph(2)
    g.addCodelets(SpinHalf)
    out = g.addVariable(HALF, [], "out")
    g.setTileMapping(out, 1)
    cs = g.addComputeSet("spin")
    v = g.addVertex(cs, "SpinHalf", {"out": out})
    g.setInitialValue(v["n"], 1)
    g.setTileMapping(v, 1)
    seq = prog.Sequence()
    poplar.setStochasticRounding(g, seq, True)
    seq.add(prog.Execute(cs))
    e = _engine(g, seq, "native", options={"codelets.cycleBudget": "100000"})
    e.load(device)
    with pytest.raises(poplar.VertexError, match=r"SpinHalf runs past the cycle budget of 100000 cycles"):
        e.run()
