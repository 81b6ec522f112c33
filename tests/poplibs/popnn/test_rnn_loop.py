"""popnn.rnn's generic loop (Rnn.hpp): a tanh cell run by ``rnn.Rnn`` against numpy, forwards
over two shards, in reverse, and with per-batch time-step limits."""

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import poplin, popnn, popops
from poplibs_py.popnn import rnn
from poplibs_py.poputil import PoplibsError

T, B, IN, H = 4, 2, 3, 2


def _graph():
    model = poplar.IPUModel()
    model.tilesPerIPU = 4
    device = model.createDevice()
    g = poplar.Graph(device)
    for lib in (popops, poplin, popnn):
        lib.addCodelets(g)
    return device, g


def _run(device, g, seq, writes, reads):
    for name, t in reads.items():
        g.createHostRead(name, t)
    for name, t in writes.items():
        g.createHostWrite(name, t[0])
    engine = poplar.Engine(g, seq)
    engine.load(device)
    for name, (_, value) in writes.items():
        engine.writeTensor(name, value)
    engine.run()
    return {name: engine.readTensor(name) for name in reads}


def _cell(w, u, masked):
    """A loop body: ``h = tanh(x @ w + h @ u)`` (held where the mask is 0), output h."""
    def body(graph, time, flags, state, slice_, created, init_prog, name):
        step = prog.Sequence()
        h = state[0][0]
        z = poplin.matMul(graph, slice_.inputs[0], w, step, debugName=f"{name}/x")
        poplin.matMulAcc(graph, z, 1.0, h, u, step, debugName=f"{name}/h")
        popops.tanhInPlace(graph, z, step, f"{name}/tanh")
        if masked:
            assert flags.valid()
            popops.mapInPlace(graph, popops.expr._1 * popops.expr._3 + popops.expr._2 * popops.expr._4,
                              [h, z, flags.inverse.expand([1]), flags.mask.expand([1])], step, f"{name}/hold")
        else:
            assert not flags.valid()
            step.add(prog.Copy(z, h))
        step.add(prog.Copy(h, slice_.outputs[0][0]))
        created[0] = graph.clone(slice_.outputs[0], f"{name}/double")
        step.add(prog.Copy(h, created[0][0]))
        popops.scaledAddTo(graph, created[0][0], h, 1.0, step, debugName=f"{name}/double")
        return step
    return body


def _reference(x, w, u, h0, limits=None, reverse=False):
    h, outs = h0.copy(), np.zeros((T, B, H))
    for t in (reversed(range(T)) if reverse else range(T)):
        new = np.tanh(x[t] @ w + h @ u)
        keep = (limits > t)[:, None] if limits is not None else True
        h = np.where(keep, new, h)
        outs[t] = h
    return outs, h


@pytest.mark.parametrize("reverse, shards, limits", [(False, 2, None), (True, 1, None), (False, 1, [2, 4])])
def test_rnn_loop_runs_a_cell_per_step(reverse, shards, limits):
    device, g = _graph()
    rng = np.random.default_rng(0)
    x, w, u, h0 = (rng.standard_normal(s).astype(np.float32) for s in ((T, B, IN), (IN, H), (H, H), (1, B,
                                                                                                     H)))
    var = None
    writes = {}
    if limits is not None:
        var = g.addVariable(poplar.UNSIGNED_INT, [B], "limits")
        g.setTileMapping(var, 0)
        writes["limits"] = (var, np.array(limits, np.uint32))
        params = rnn.RnnParams(poplar.FLOAT, B, T, var, [IN, H])
        assert params.variableTimeSteps() and params.batchVariableTimeSteps()
    else:
        params = rnn.RnnParams(poplar.FLOAT, B, T, [IN, H])
    seq = prog.Sequence()
    xs = rnn.createInputTensor(g, params, shards)
    init = rnn.createInitialState(g, params, True, 1, shards)
    wt = poplin.createMatMulInputRHS(g, poplar.FLOAT, [B, IN], [IN, H], "w")
    ut = poplin.createMatMulInputRHS(g, poplar.FLOAT, [B, H], [H, H], "u")
    out = rnn.createOutputTensor(g, params, shards)
    doubled = rnn.createOutputTensor(g, params, 1, shards)
    states = rnn.createRecurrentTensor(g, params, H, shards)
    assert xs.shape() == [T, B, IN] and out.shape() == [T, B, H] and init.shape() == [1, B, H]
    writes.update(x=(xs, x), w=(wt, w), u=(ut, u), h0=(init, h0))
    final = rnn.Rnn(g, params, reverse, [init], rnn.StateSequence(states, 0), [xs], None, None, [out],
                    [doubled],
                    seq, _cell(wt, ut, limits is not None), shards)
    got = _run(device, g, seq, writes, {"out": out, "final": final[0], "states": states, "doubled": doubled})
    want, last = _reference(x, w, u, h0[0], None if limits is None else np.array(limits), reverse)
    np.testing.assert_allclose(got["out"], want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["states"], want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["doubled"], 2 * want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["final"][0], last, rtol=1e-5, atol=1e-5)


def test_shift_rnn_tensor_and_bad_arguments():
    device, g = _graph()
    params = rnn.RnnParams(poplar.FLOAT, B, T, [IN, H])
    seq = prog.Sequence()
    base = rnn.createRecurrentTensor(g, params, H, 1)
    single = rnn.createInitialState(g, params, True, 1, 1)
    shifted = rnn.shiftRnnTensor(g, params, base, single, seq, 1)
    vb = np.arange(T * B * H, dtype=np.float32).reshape(T, B, H)
    vs = -np.ones((1, B, H), np.float32)
    got = _run(device, g, seq, {"base": (base, vb), "single": (single, vs)}, {"shifted": shifted})
    np.testing.assert_array_equal(got["shifted"], np.concatenate([vs, vb[:-1]]))
    with pytest.raises(PoplibsError, match="batchSize must be a positive integer"):
        rnn.RnnParams(poplar.FLOAT, 0, T, [IN, H])
    with pytest.raises(PoplibsError, match="numShards"):
        rnn.createInputTensor(g, params, 0)
    with pytest.raises(PoplibsError, match=r"Rnn: inputs\[0\] must be"):
        rnn.Rnn(g, params, False, [single], None, [single], None, None, [], [], seq, _cell(None, None, False))
