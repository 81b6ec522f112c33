"""poputil GraphFunction.hpp (graphfn): a body built once on parameter clones and called on several
tensors with copies in and out; VoidFunction, TensorFunction, ProgramFunction, inlined bodies,
created arguments, results against numpy."""

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import popops, poputil
from poplibs_py.poputil import PoplibsArgumentError, PoplibsError, graphfn


def test_void_function_called_twice(harness):
    h = harness(4)
    x, y = np.arange(12, dtype=np.float32).reshape(3, 4), np.full((3, 4), 10, np.float32)
    a, b = h.tensor(x), h.tensor(y)
    c, d = h.graph.clone(a, "c"), h.graph.clone(a, "d")
    sig = [graphfn.input(a, "x"), graphfn.input(b, "y"), graphfn.output(c, "z")]
    fn = graphfn.VoidFunction(h.graph, sig, lambda args, seq: popops.addWithOutput(
        h.graph, args[0], args[1], args[2], seq))
    built = h.graph.getNumVertices()
    fn([a, b, c], h.seq)        # c = a + b
    fn([c, b, d], h.seq)        # d = c + b
    assert h.graph.getNumVertices() == built  # calls add copies, not vertices
    assert fn.params[0].shape() == [3, 4]
    assert h.graph.getTileMapping(fn.params[0]) == h.graph.getTileMapping(a)
    got_c, got_d = h.run(c, d)
    np.testing.assert_array_equal(got_c, x + y)
    np.testing.assert_array_equal(got_d, x + 2 * y)


def test_inout_and_inlined(harness):
    h = harness(2)
    x = np.arange(8, dtype=np.int32)
    a = h.tensor(x)
    b = h.tensor(x + 1)
    for inlined in (False, True):
        double = graphfn.VoidFunction(h.graph, [graphfn.inout(a, "acc")],
                                      lambda args, seq: popops.addInPlace(h.graph, args[0], args[0], seq),
                                      inlined)
        double([a], h.seq)
        double([b], h.seq)
    got_a, got_b = h.run(a, b)
    np.testing.assert_array_equal(got_a, 4 * x)
    np.testing.assert_array_equal(got_b, 4 * (x + 1))


def test_tensor_function_returns_new_tensors(harness):
    h = harness(4)
    x, y = np.arange(6, dtype=np.float32), np.linspace(1, 2, 6).astype(np.float32)
    a, b = h.tensor(x), h.tensor(y)
    seen = []

    def body(args, seq, dnai):
        seen.append((len(args), dnai))
        return popops.mul(h.graph, args[0], args[1], seq, poplar.DebugContext(dnai, "mul"))

    mul = graphfn.TensorFunction(h.graph, [graphfn.input(a), graphfn.input(b)], body, False, "mulFn")
    assert seen[0][0] == 2 and seen[0][1].getPathName() == "mulFn"
    args = [a, b]
    r1 = mul(args, h.seq)
    r2 = mul([r1, b], h.seq, "second")
    assert args == [a, b] and r1.shape() == [6] and not r1.intersectsWith(r2)
    got1, got2 = h.run(r1, r2)
    np.testing.assert_allclose(got1, x * y)
    np.testing.assert_allclose(got2, x * y * y, rtol=1e-6)


def test_program_function_and_created_arguments(harness):
    h = harness(2)
    x = np.arange(5, dtype=np.float32)
    a = h.tensor(x)
    out = h.graph.clone(a, "out")

    def negate(args):
        seq = prog.Sequence()
        popops.negInPlace(h.graph, args[0], seq)
        return seq

    pf = graphfn.ProgramFunction(h.graph, [graphfn.inout(a)], negate)
    p = pf([a])
    assert isinstance(p, prog.Sequence)
    h.seq.add(p)

    def make(args, seq):
        args[1] = popops.add(h.graph, args[0], args[0], seq)

    vf = graphfn.VoidFunction(h.graph, [graphfn.input(a), graphfn.created("twice")], make)
    slots = [a, None]
    vf(slots, h.seq)
    assert isinstance(slots[1], poplar.Tensor) and slots[1].shape() == [5]
    h.seq.add(prog.Copy(slots[1], out))
    got_a, got_out = h.run(a, out)
    np.testing.assert_array_equal(got_a, -x)
    np.testing.assert_array_equal(got_out, -2 * x)


def test_signature_and_call_errors():
    model = poplar.IPUModel()
    model.tilesPerIPU = 2
    g = poplar.Graph(model.createDevice())
    popops.addCodelets(g)
    a = g.addVariable(poplar.FLOAT, [4], "a")
    poputil.mapTensorLinearly(g, a)
    with pytest.raises(PoplibsArgumentError, match=r"list of graphfn\.ArgSig"):
        graphfn.VoidFunction(g, [a], lambda args, seq: None)
    with pytest.raises(PoplibsArgumentError, match="needs a tensor"):
        graphfn.input(None, "x")
    with pytest.raises(PoplibsError, match=r"created argument 1 \('r'\)"):
        graphfn.VoidFunction(g, [graphfn.input(a), graphfn.created("r")], lambda args, seq: None)
    with pytest.raises(PoplibsError, match="must return the tensor"):
        graphfn.TensorFunction(g, [graphfn.input(a)], lambda args, seq: None)
    with pytest.raises(PoplibsError, match="must return a program"):
        graphfn.ProgramFunction(g, [graphfn.input(a)], lambda args: None)
    fn = graphfn.VoidFunction(g, [graphfn.input(a, "x")], lambda args, seq: None)
    seq = prog.Sequence()
    with pytest.raises(PoplibsArgumentError, match="2 arguments for a signature of 1"):
        fn([a, a], seq)
    with pytest.raises(PoplibsError, match=r"argument 0 \('x'\).*does not match"):
        fn([g.addVariable(poplar.INT, [4], "i")], seq)
    with pytest.raises(PoplibsArgumentError, match="updated in place"):
        fn((a,), seq)
    with pytest.raises(PoplibsArgumentError, match="seq must be a program Sequence"):
        fn([a], None)
    assert graphfn.ArgType.InputArg is graphfn.InputArg
    assert repr(graphfn.created("r")) == "ArgSig(CreatedArg, 'r')"
