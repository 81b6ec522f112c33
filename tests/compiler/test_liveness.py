"""Program liveness (intervals of program points) and the layout that packs variables whose
lives do not meet."""

import numpy as np
import pytest
from liveness_codelets import AddInto, Twice
from lives import random_lives

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.compiler.liveness import analyse_liveness


def _graph(tiles=1):
    m = poplar.IPUModel()
    m.tilesPerIPU = tiles
    device = m.createDevice()
    graph = poplar.Graph(device)
    graph.addCodelets([Twice, AddInto])
    return device, graph


def _vars(graph, *names, n=1000):
    out = []
    for name in names:
        v = graph.addVariable(poplar.FLOAT, [n], name)
        graph.setTileMapping(v, 0)
        out.append(v)
    return out


def test_always_live_and_interference_over_sequences_loops_branches_and_calls():
    _, graph = _graph()
    a, t1, t2, t3, t4, _ = _vars(graph, "a", "t1", "t2", "t3", "t4", "flag")
    graph.createHostWrite("a", a)
    body = graph.addFunction(prog.Sequence([prog.Copy(a, t4), prog.Copy(t4, a)]))
    seq = prog.Sequence([
        prog.Copy(a, t1), prog.Copy(t1, a),                                   # t1 lives here only
        prog.Repeat(3, prog.Sequence([prog.Copy(a, t2), prog.Copy(t2, a)])),  # t2 here only
        prog.Copy(t3, a),                                                     # t3: read, never written
        prog.Call(body),
    ])
    lv = analyse_liveness(graph.freeze(), [seq])
    always = dict(zip(["a", "t1", "t2", "t3", "t4", "flag"], lv.always.tolist()))
    # a: host handle; t3: read before written; flag: never used
    assert always == {"a": True, "t1": False, "t2": False, "t3": True, "t4": False, "flag": True}
    assert not lv.interfere(1, 2) and not lv.interfere(1, 4) and not lv.interfere(2, 4)


def test_a_copy_through_strided_views_writes_whole_only_when_it_covers_every_element():
    """A Copy into ``t.transpose()`` (runs of one step), into both strided halves of ``t``, or
    into runs of steps 1 and 2 that cover ``t`` starts t's life; one element short, it does not."""
    _, graph = _graph()
    (a,) = _vars(graph, "a", n=24)
    graph.createHostWrite("a", a)
    ts = [graph.addVariable(poplar.FLOAT, [4, 6], n) for n in ("w", "h", "m", "s")]
    for t in ts:
        graph.setTileMapping(t, 0)
    w, h, m, s = ts
    h, m, s = (t.flatten() for t in (h, m, s))

    def steps_1_and_2(t, end):  # t[0:12] by ones, then t[12:24] by twos, the odd ones up to end
        return poplar.concat([t.slice(0, 12), t.slice(12, 24).subSample(2, 0),
                              t.slice(13, end).subSample(2, 0)])

    into = {"w": w.transpose(), "h": poplar.concat([h.subSample(2, 0), h[1::2]]), "m": steps_1_and_2(m, 24),
            "s": steps_1_and_2(s, 23)}
    steps = []
    for name, t in zip(into, ts):
        dst = into[name]
        steps += [prog.Copy(a.slice(0, dst.numElements()).reshape(dst.shape()), dst),
                  prog.Copy(t.flatten(), a)]
    lv = analyse_liveness(graph.freeze(), [prog.Sequence(steps)])
    always = dict(zip(["a", "w", "h", "m", "s"], lv.always.tolist()))
    assert always == {"a": True, "w": False, "h": False, "m": False, "s": True}


def test_a_value_carried_around_a_loop_is_live_for_the_whole_loop():
    _, graph = _graph()
    a, acc, tmp = _vars(graph, "a", "acc", "tmp")
    graph.createHostWrite("a", a)
    cs = graph.addComputeSet("accumulate")
    graph.setTileMapping(graph.addVertex(cs, "AddInto", {"inp": tmp, "acc": acc}), 0)
    loop = prog.Sequence([
        prog.Copy(a, acc),
        prog.Repeat(4, prog.Sequence([prog.Copy(a, tmp), prog.Execute(cs)])),
        prog.Copy(acc, a),
    ])
    lv = analyse_liveness(graph.freeze(), [loop])
    assert not lv.always[1] and not lv.always[2]
    assert lv.interfere(1, 2)  # acc lives across the loop, where tmp lives


def test_a_branch_frees_what_only_the_other_branch_reads():
    _, graph = _graph()
    a, t1, t2 = _vars(graph, "a", "t1", "t2")
    p = graph.addVariable(poplar.BOOL, [], "p")
    graph.setTileMapping(p, 0)
    graph.createHostWrite("a", a)
    graph.createHostWrite("p", p)
    seq = prog.Sequence([prog.Copy(a, t1),
                         prog.If(p, prog.Copy(t1, a), prog.Sequence([prog.Copy(a, t2), prog.Copy(t2, a)]))])
    lv = analyse_liveness(graph.freeze(), [seq])
    # t1 is live up to the If and into its true branch; the false branch never reads it again
    assert not lv.always[1] and not lv.always[2] and not lv.interfere(1, 2)
    lv = analyse_liveness(graph.freeze(), [prog.Sequence([seq, prog.Copy(t1, a)])])
    assert lv.interfere(1, 2)  # now t1 is read after the If: live through the false branch too


def _two_phase_program(graph, n):
    """Two 400 KB temporaries on tile 0, each computed from ``a`` and added into ``out`` in its
    own phase."""
    a = graph.addVariable(poplar.FLOAT, [n], "a")
    out = graph.addVariable(poplar.FLOAT, [n], "out")
    t1 = graph.addVariable(poplar.FLOAT, [100_000], "t1")
    t2 = graph.addVariable(poplar.FLOAT, [100_000], "t2")
    for v in (a, out, t1, t2):
        graph.setTileMapping(v, 0)
    steps = []
    for t in (t1, t2):
        make, add = graph.addComputeSet(f"make {t.name}"), graph.addComputeSet(f"add {t.name}")
        graph.setTileMapping(graph.addVertex(make, "Twice", {"inp": a, "out": t[:n]}), 0)
        graph.setTileMapping(graph.addVertex(make, "Twice", {"inp": a, "out": t[n:2 * n]}), 0)
        graph.setTileMapping(graph.addVertex(add, "AddInto", {"inp": t[n:2 * n], "acc": out}), 0)
        steps += [prog.WriteUndef(t), prog.Execute(make), prog.Execute(add)]
    graph.createHostWrite("a", a)
    graph.createHostWrite("out", out)
    graph.createHostRead("out result", out)
    return prog.Sequence(steps)


def test_temporaries_used_in_different_phases_share_a_tile_and_the_results_do_not_change():
    device, graph = _graph(tiles=2)
    n = 1000
    program = _two_phase_program(graph, n)
    engine = poplar.Engine(graph, program)  # 800 KB of temporaries on a 624 KB tile: fits packed
    engine.load(device)
    a = np.arange(n, dtype=np.float32)
    engine.writeTensor("a", a)
    engine.writeTensor("out", np.ones(n, np.float32))
    engine.run()
    np.testing.assert_array_equal(engine.readTensor("out result"), 1 + 4 * a)
    memory = engine.getProfile()["compilation"]["tiles"][0]["memory"]["byCategory"]
    assert memory["variables"] == 2 * 4 * n + 400_000  # a and out, then the two temporaries in one place


def test_temporaries_that_live_at_once_still_run_out_of_memory():
    _, graph = _graph(tiles=2)
    t1, t2 = (graph.addVariable(poplar.FLOAT, [100_000], name) for name in ("t1", "t2"))
    for t in (t1, t2):
        graph.setTileMapping(t, 0)
    graph.createHostRead("t1", t1)
    with pytest.raises(poplar.GraphMemoryAllocationError, match="tile 0"):
        poplar.Engine(graph, prog.Sequence([prog.Copy(t1, t2), prog.Copy(t2, t1)]))


def test_exchange_buffers_of_different_compute_sets_share_one_region():
    device, graph = _graph(tiles=2)
    a = graph.addVariable(poplar.FLOAT, [1000], "a")
    graph.setTileMapping(a, 0)
    outs = [graph.addVariable(poplar.FLOAT, [1000], f"out{k}") for k in range(2)]
    steps = []
    for k, out in enumerate(outs):
        graph.setTileMapping(out, 1)
        cs = graph.addComputeSet(f"twice{k}")
        graph.setTileMapping(graph.addVertex(cs, "Twice", {"inp": a, "out": out}), 1)  # a: through a buffer
        steps.append(prog.Execute(cs))
    graph.createHostWrite("a", a)
    for k, out in enumerate(outs):
        graph.createHostRead(f"out{k}", out)
    engine = poplar.Engine(graph, prog.Sequence(steps))
    memory = engine.getProfile()["compilation"]["tiles"][1]["memory"]["byCategory"]
    assert memory["exchange buffers"] == 4000  # one compute set's buffer: the two take turns
    engine.load(device)
    values = np.arange(1000, dtype=np.float32)
    engine.writeTensor("a", values)
    engine.run()
    for k in range(2):
        np.testing.assert_array_equal(engine.readTensor(f"out{k}"), 2 * values)


@pytest.mark.parametrize("seed", range(5))
def test_pairwise_meet_and_hulls_agree_with_meets(seed):
    rng = np.random.default_rng(seed)
    live = random_lives(rng, 12, 40)
    bounds, lo, hi = live.bounds, live.lo, live.hi
    counts = np.diff(bounds)
    variables = rng.permutation(12)[:9]
    expected = np.stack([live.meets(int(v), variables) for v in variables])
    a, b = (x.ravel() for x in np.meshgrid(variables, variables, indexing="ij"))
    assert (live.meet(a, b).reshape(9, 9) == expected).all()
    assert expected.any() and not expected.all()
    hulls = live.hulls(variables)
    for v, (first, last) in zip(variables.tolist(), hulls.T.tolist()):
        assert (first, last) == ((lo[bounds[v]], hi[bounds[v + 1] - 1]) if counts[v] else (0, 0))
    assert (live.interval_counts(variables) == counts[variables]).all()
