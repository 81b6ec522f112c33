"""poplin.fc: the products a fully-connected layer plans, and preplanning them."""

import pytest

import poplar_py as poplar
from poplibs_py import poplin
from poplibs_py.poplin import fc
from poplibs_py.poputil import PoplibsError


def test_pre_plan_parameters_of_each_pass():
    layer = fc.FullyConnectedParams(numGroups=2, batchSize=4, inputSize=5, outputSize=3)
    train = fc.getMatMulPrePlanParameters(layer, {"partialsType": "float"}, poplar.HALF, False)
    assert [(p.aShape, p.bShape) for p, _ in train] == [((2, 4, 5), (2, 5, 3)), ((2, 4, 3), (2, 3, 5)),
                                                        ((2, 5, 4), (2, 4, 3))]
    assert [o["fullyConnectedPass"] for _, o in train] == ["TRAINING_FWD", "TRAINING_BWD", "TRAINING_WU"]
    assert all(o["partialsType"] == "float" and p.inputType == p.outputType == poplar.HALF for p, o in train)
    (infer,) = fc.getMatMulPrePlanParameters(layer, None, poplar.FLOAT, True)
    assert infer[1] == {"fullyConnectedPass": "INFERENCE_FWD"} and infer[0].aShape == (2, 4, 5)
    # the plans a layer's products then find in the cache
    target = poplar.Graph(poplar.IPUModel().createDevice()).getTarget()
    cache = poplin.PlanningCache()
    poplin.preplanMatMuls([(target, p, o) for p, o in train], cache)
    assert cache.size() == 3
    wu_options = {"partialsType": "float"}
    poplin.getMatMulPlan(target, poplar.HALF, [2, 5, 4], [2, 4, 3], poplar.HALF, wu_options, cache)
    assert cache.size() == 3


def test_misuse():
    with pytest.raises(PoplibsError, match="batchSize must be a non-negative int"):
        fc.FullyConnectedParams(1, -1, 2, 3)
    layer = fc.FullyConnectedParams(1, 1, 2, 3)
    with pytest.raises(PoplibsError, match=r"parameters must be a poplin\.fc\.FullyConnectedParams"):
        fc.getMatMulPrePlanParameters((1, 1, 2, 3), None, poplar.FLOAT, True)
    with pytest.raises(PoplibsError, match="unrecognised option 'bogus'"):
        fc.getMatMulPrePlanParameters(layer, {"bogus": 1}, poplar.FLOAT, True)
    with pytest.raises(PoplibsError, match="type must be a poplar element type"):
        fc.getMatMulPrePlanParameters(layer, None, "quad", True)
