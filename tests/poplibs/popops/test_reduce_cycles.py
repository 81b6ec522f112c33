"""The reduction vertices' cycle estimates against PopLibs' formulas
(``CycleEstimationFunctions.cpp``), one per specialisation the work's shape selects."""

import pytest

import poplar_py as poplar
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
