"""MatMul.hpp's remaining names: the grouped and output creators, pre-arranged operands, the plan
reports and the preplanners, against numpy and the plans the products use."""

import io

import numpy as np
import pytest

import poplar_py as poplar
from poplibs_py import poplin
from poplibs_py.poputil import PoplibsError


@pytest.fixture
def mode():
    """Native codelets only: the products are those test_matmul runs in both modes."""
    return "native"


@pytest.fixture
def make(harness):
    def build(tiles=8):
        h = harness(tiles)
        poplin.addCodelets(h.graph)
        return h
    return build


def tiles_of(graph, t):
    return {tile for tile, intervals in enumerate(graph.getTileMapping(t)) if intervals}


def test_grouped_creators_and_output_run_the_product(make):
    h = make()
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 5, 7)).astype(np.float32)
    b = rng.standard_normal((2, 7, 3)).astype(np.float32)
    A = poplin.createMatMulGroupedInputLHS(h.graph, poplar.FLOAT, poplar.FLOAT, [2, 5, 7], [2, 7, 3], "A")
    B = poplin.createMatMulGroupedInputRHS(h.graph, poplar.FLOAT, poplar.FLOAT, [2, 5, 7], [2, 7, 3], "B")
    C = poplin.createMatMulGroupedOutput(h.graph, poplar.FLOAT, poplar.FLOAT, [2, 5, 7], [2, 7, 3], "C")
    assert (A.shape(), B.shape(), C.shape()) == ([2, 5, 7], [2, 7, 3], [2, 5, 3])
    assert len(tiles_of(h.graph, C)) > 1  # the output's blocks lie where they are computed
    h.write(A, a), h.write(B, b)
    poplin.matMulGroupedWithOutput(h.graph, A, B, C, h.seq)
    (c,) = h.run(C)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_output_and_pre_arranged_rhs(make):
    h = make()
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((6, 9)).astype(np.float32), rng.standard_normal((9, 4)).astype(np.float32)
    B = h.tensor(b, mapping=0)  # all on tile 0: not the plan's layout
    arranged = poplin.preArrangeMatMulInputRHS(h.graph, [6, 9], B, h.seq, poplar.FLOAT, "pre")
    assert arranged.shape() == [9, 4] and len(tiles_of(h.graph, arranged)) > 1
    C = poplin.createMatMulOutput(h.graph, poplar.FLOAT, [6, 9], [9, 4], "C")
    poplin.matMulWithOutput(h.graph, h.tensor(a), arranged, C, h.seq)
    (c,) = h.run(C)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_a_created_output_holds_each_block_in_one_region(make):
    h = make(16)
    C = poplin.createMatMulOutput(h.graph, poplar.FLOAT, [40, 64], [64, 96], "C")
    plan = poplin.getMatMulPlan(h.graph.getTarget(), poplar.FLOAT, [40, 64], [64, 96])
    assert C.shape() == [40, 96] and C.name.startswith("C") and plan.splitN > 1  # blocks cut rows
    for im in range(plan.splitM):
        for jn in range(plan.splitN):
            (m0, m1), (n0, n1) = plan.ranges(plan.m, plan.splitM, im), plan.ranges(plan.n, plan.splitN, jn)
            block = C.slice(m0, m1, 0).slice(n0, n1, 1)
            assert block.numElements() == 0 or block.isContiguous()
            assert tiles_of(h.graph, block) <= {plan.tile(0, im, jn, ik) for ik in range(plan.splitK)}


def test_creator_misuse(make):
    h = make(4)
    with pytest.raises(PoplibsError, match="aShape and bShape must be 3-D"):
        poplin.createMatMulGroupedInputLHS(h.graph, poplar.FLOAT, poplar.FLOAT, [5, 7], [7, 3], "A")
    with pytest.raises(PoplibsError, match="Inner dimensions"):
        poplin.createMatMulGroupedInputRHS(h.graph, poplar.FLOAT, poplar.FLOAT, [1, 5, 7], [1, 6, 3], "B")
    with pytest.raises(PoplibsError, match="createMatMulOutput: outputType must be a poplar element type"):
        poplin.createMatMulOutput(h.graph, poplar.FLOAT, "oops", [7, 3], "C")
    with pytest.raises(PoplibsError, match="createMatMulOutput: aShape must be a list of ints"):
        poplin.createMatMulOutput(h.graph, poplar.FLOAT, [None], [7, 3], "C")
    with pytest.raises(PoplibsError, match="preArrangeMatMulGroupedInputRHS: B"):
        poplin.preArrangeMatMulGroupedInputRHS(h.graph, [1, 2, 3], "B", h.seq)
    with pytest.raises(PoplibsError, match="Unrecognised matmul option 'bogus'"):
        poplin.createMatMulOutput(h.graph, poplar.FLOAT, [5, 7], [7, 3], "C", {"bogus": 1})


def test_report_plan_writes_the_plan_used(make):
    h = make()
    plan = poplin.getMatMulPlan(h.graph.getTarget(), poplar.FLOAT, [40, 30], [30, 20])
    out = io.StringIO()
    poplin.matMulReportPlan(out, h.graph, poplar.FLOAT, poplar.FLOAT, [40, 30], [30, 20])
    text = out.getvalue()
    assert f"split: M {plan.splitM}, N {plan.splitN}, K {plan.splitK}" in text
    assert f"total {plan.estimatedCycles}" in text
    out = io.StringIO()
    poplin.matMulGroupedReportPlan(out, h.graph, poplar.HALF, poplar.FLOAT, [3, 4, 5], [3, 5, 6])
    assert out.getvalue().startswith("MatMul plan: 3 x [4, 5] x [5, 6]") and "input half" in out.getvalue()
    with pytest.raises(PoplibsError, match="must be 2-D"):
        poplin.matMulReportPlan(io.StringIO(), h.graph, poplar.FLOAT, poplar.FLOAT, [1, 4, 5], [1, 5, 6])
    with pytest.raises(PoplibsError, match="out must be a text stream"):
        poplin.matMulReportPlan(None, h.graph, poplar.FLOAT, poplar.FLOAT, [4, 5], [5, 6])


def test_preplan_fills_the_cache(make):
    h = make()
    target = h.graph.getTarget()
    cache = poplin.PlanningCache()
    params = {poplin.MatMulParams(poplar.FLOAT, poplar.FLOAT, [4, 5], [5, 6]),
              poplin.MatMulParams(poplar.FLOAT, poplar.FLOAT, (4, 5), (5, 6)),  # the same
              poplin.MatMulParams(poplar.HALF, poplar.HALF, [2, 4, 5], [2, 5, 6])}
    assert len(params) == 2 and sorted(params)[0].inputType == poplar.FLOAT
    poplin.preplanMatMuls({(target, p, None) for p in params}, cache)
    assert cache.size() == 2
    conv = poplin.ConvParams(poplar.FLOAT, 1, [5, 5], [3, 3], 2, 4)
    poplin.preplan([(target, conv, {"pass": "TRAINING_FWD"})], [], cache)
    assert cache.size() == 3
    poplin.createWeights(h.graph, conv, "w", {}, cache)  # found there: no new plan
    poplin.createMatMulOutput(h.graph, poplar.FLOAT, poplar.FLOAT, [4, 5], [5, 6], "C", {}, cache)
    assert cache.size() == 3
    poplin.matmulValidateOptions({"partialsType": "half"})
    with pytest.raises(PoplibsError, match="partialsType"):
        poplin.matmulValidateOptions({"partialsType": "int"})
    with pytest.raises(PoplibsError, match=r"cache must be a poplin\.PlanningCache to hold"):
        poplin.preplanMatMuls([], None)
    with pytest.raises(PoplibsError, match=r"\(target, MatMulParams, options\)"):
        poplin.preplanMatMuls([(target, conv, None)], cache)
    with pytest.raises(PoplibsError, match="Inner dimensions"):
        poplin.MatMulParams(poplar.FLOAT, poplar.FLOAT, [4, 5], [4, 6])


def test_acc_with_a_tensor_scale(make):
    h = make(4)
    rng = np.random.default_rng(5)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (4, 5), (3, 5)))
    ga, gb, gc = (rng.standard_normal(s).astype(np.float32) for s in ((2, 3, 4), (2, 4, 5), (2, 3, 5)))
    k = h.tensor(np.array([-0.5], np.float32))
    C, GC = h.tensor(c), h.tensor(gc)
    poplin.matMulAcc(h.graph, C, k, h.tensor(a), h.tensor(b), h.seq)
    poplin.matMulGroupedAcc(h.graph, GC, k, h.tensor(ga), h.tensor(gb), h.seq, "acc")
    out, gout = h.run(C, GC)
    np.testing.assert_allclose(out, c - 0.5 * (a @ b), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gout, gc - 0.5 * (ga @ gb), rtol=1e-5, atol=1e-5)
    with pytest.raises(PoplibsError, match=r"matMulAcc: the scale k '.*' must be one floating-point"):
        poplin.matMulAcc(h.graph, C, h.tensor(np.ones(2, np.float32)), h.tensor(a), h.tensor(b), h.seq)
    with pytest.raises(PoplibsError, match="matMulGroupedAcc: C"):
        poplin.matMulGroupedAcc(h.graph, None, 1.0, h.tensor(ga), h.tensor(gb), h.seq)
