"""The reduction vertices' cycle estimates against PopLibs' formulas
(``CycleEstimationFunctions.cpp``), one per specialisation the work's shape selects."""

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import popops
from poplibs_py.popops.reduce_cycles import reduceCycles


@pytest.fixture
def target():
    return poplar.IPUModel("ipu21").createDevice().getTarget()


@pytest.mark.parametrize("n,outputs,dtype,per_loop", [(128, 8, poplar.HALF, 4), (768, 3, poplar.FLOAT, 2),
                                                      (129, 2, poplar.HALF, 4)])
def test_single_outputs_from_runs_of_one_length_are_a_continuous_reduce(target, n, outputs, dtype, per_loop):
    # getCycleEstimateReduceAllRegionsContinuous: the partials at the accumulators' width limited
    # by the 64-bit data path, 12 cycles an output, 2 more for an odd run, 17 of set-up and call
    expected = outputs * (n // per_loop) + (2 if n % 2 else 0) + 12 * outputs + 10 + 7
    for op in ("Add", "SquareAdd", "Max"):
        assert reduceCycles([n] * outputs, [1] * outputs, [1] * outputs, dtype, dtype, op, False,
                            target) == expected
    assert reduceCycles([n] * outputs, [1] * outputs, [1] * outputs, dtype, dtype, "Add", True,
                        target) == expected + 1


def test_a_row_reduction_costs_a_cycle_a_vector_not_one_an_element(target):
    # 128 halves into one output each: the general vertex would loop over width-1 regions, an
    # element a pass (about 6 cycles each)
    continuous = reduceCycles([128] * 6, [1] * 6, [1] * 6, poplar.HALF, poplar.HALF, "Add", False, target)
    general = reduceCycles([128, 64], [1, 1], [1, 1], poplar.HALF, poplar.HALF, "Add", False, target)
    assert continuous == 6 * (32 + 12) + 17
    assert general > 6 * 192  # two outputs of different runs stay on the general vertex


def test_row_pieces_of_several_lengths_on_a_tile_are_continuous_reduces():
    # tile 0 holds the first 16 columns of the even rows and the first 8 of the odd ones, tile 1 the
    # rest: the rows' partial sums on tile 0 come from runs of 16 and 8 in turn, one
    # ContinuousReduce vertex per length
    # (on the general vertex, each element would take a pass of about 6 cycles)
    model = poplar.IPUModel("ipu21")
    model.tilesPerIPU = 2
    device = model.createDevice()
    g = poplar.Graph(device)
    popops.addCodelets(g)
    x = g.addVariable(poplar.HALF, [32, 24], "x")
    g.setTileMapping(x, 0)
    for row in range(32):
        g.setTileMapping(x[row].slice(8 if row % 2 else 16, 24), 1)
    seq = prog.Sequence()
    out = popops.reduce(g, x, [1], popops.Operation.ADD, seq, "rowSums")
    g.createHostWrite("x", x)
    g.createHostRead("out", out)
    engine = poplar.Engine(g, seq)
    engine.load(device)
    values = np.random.default_rng(0).integers(-4, 5, [32, 24]).astype(np.float16)
    engine.writeTensor("x", values)
    engine.run()
    expected = values.astype(np.float32).sum(1).astype(np.float16)
    np.testing.assert_array_equal(engine.readTensor("out"), expected)
    stage1 = next(s for s in engine.getProfile()["execution"]["steps"] if s["name"] == "rowSums/stage1")
    # each of the 6 contexts runs a vertex or two of about 5 outputs at 4 halves and 12 cycles an
    # output (the general vertex: about 6 cycles an element, 4,482 cycles here)
    assert stage1["compute"] < 2_000
