"""poputil DebugInfo.hpp: toProfileValue's overloads, PoplibsOpDebugInfo's api, args and outputs, and
the debug info used as a DebugNameAndId (names of what an operation creates)."""

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import poputil
from poplibs_py.poputil import PoplibsArgumentError


def _graph():
    return poplar.Graph(poplar.IPUModel().createDevice())


def test_to_profile_value_overloads():
    g = _graph()
    t = g.addVariable(poplar.HALF, [2, 3], "t")
    tv = poputil.toProfileValue
    assert tv(3) == 3 and tv(np.uint8(7)) == 7 and tv(2.5) == 2.5 and tv(True) is True and tv("x") == "x"
    assert tv(t) == {"shape": "[2, 3]", "type": "half"}
    assert tv(g.addVariable(poplar.FLOAT, [], "s")) == {"shape": "[]", "type": "float"}
    assert tv(poplar.INT) == "int"
    assert tv(poplar.TensorCloneMethod.CREATE_NEW_ORDER) == "CREATE_NEW_ORDER"
    cs = g.addComputeSet("cs")
    assert tv(cs) == cs.getId()
    assert tv(prog.Copy(t, g.clone(t))) == "<poplar::program::Copy>"
    assert tv(prog.Sequence()) == "<poplar::program::Sequence>"
    assert tv({"partialsType": "half", "n": 2, "flag": True}) == \
        {"partialsType": "half", "n": "2", "flag": "true"}
    assert tv([1, 2]) == {"0": 1, "1": 2}
    assert tv((t, 4)) == {"0": {"shape": "[2, 3]", "type": "half"}, "1": 4}
    assert tv(np.array([[1, 2], [3, 4]])) == [1, 2, 3, 4]
    assert tv(None) == "<nullptr>"
    assert tv(poplar.DebugContext("a")) == "a"


def test_poplibs_op_debug_info_records_api_args_and_output():
    g = _graph()
    t = g.addVariable(poplar.FLOAT, [4], "t")

    def myOperation():
        di = poputil.PoplibsOpDebugInfo("layer/op", poputil.DI_ARGS(t=t, scale=0.5))
        out = g.clone(t, poplar.DebugContext(di, "out"))
        di.addOutput(out)
        return di, out

    di, out = myOperation()
    assert di.getValue("api") == "myOperation"  # the calling function, as __builtin_FUNCTION()
    assert di.getValue("args") == {"t": {"shape": "[4]", "type": "float"}, "scale": 0.5}
    assert di.getValue("output") == {"shape": "[4]", "type": "float"}
    assert di.getLayer() == "poplibs" and di.getPathName() == "layer/op"
    assert out.name == "layer/op/out"
    assert isinstance(di, poplar.DebugNameAndId) and di.getId() != poputil.PoplibsOpDebugInfo("x").getId()
    di.addOutputs({"a": t, "b": 2})
    assert di.values["outputs"] == {"a": {"shape": "[4]", "type": "float"}, "b": 2}


def test_debug_info_from_contexts_and_as_names():
    g = _graph()
    parent = poplar.DebugContext(poplar.DebugContext("model"), "layer1")
    di = poputil.PoplibsOpDebugInfo(parent, {"n": 3}, api="fc")
    assert di.getPathName() == "model/layer1" and di.getValue("api") == "fc"
    assert str(poplar.DebugContext(di, "weights")) == "model/layer1/weights"
    v = g.addVariable(poplar.FLOAT, [2], di)
    assert v.name == "model/layer1"
    inner = poputil.PoplibsOpDebugInfo(poplar.DebugContext(di, "inner"))
    assert inner.getPathName() == "model/layer1/inner"
    assert poputil.PoplibsOpDebugInfo(None).getPathName() == ""
    assert "args" not in poputil.PoplibsOpDebugInfo("x").values  # no arguments, no "args"
    with pytest.raises(PoplibsArgumentError, match="debug name"):
        poputil.PoplibsOpDebugInfo(42)
    with pytest.raises(PoplibsArgumentError, match="ArgType or a"):
        poputil.PoplibsOpDebugInfo("x", [3])


def test_op_debug_info_add_and_arg_type():
    di = poputil.OpDebugInfo("ctx", "myApi")
    di.add("args", [poputil.ArgType("a", 1), poputil.ArgType.of("b", poplar.FLOAT)])
    di.add("extra", {"k": "v"})
    di.add("none", [])
    # an empty list of arguments adds nothing
    assert di.values == {"api": "myApi", "args": {"a": 1, "b": "float"}, "extra": {"k": "v"}}
    assert poputil.ArgType(("p", 2)).n == "p"
    with pytest.raises(PoplibsArgumentError, match="name must be a string"):
        poputil.ArgType(3, 4)


def test_library_operations_name_from_their_debug_context():
    model = poplar.IPUModel()
    model.tilesPerIPU = 4
    device = model.createDevice()
    g = poplar.Graph(device)
    t = g.addVariable(poplar.FLOAT, [8], "t")
    poputil.mapTensorLinearly(g, t)
    seq = prog.Sequence()
    d = poputil.duplicate(g, t, seq, poplar.DebugContext(poplar.DebugContext("blk"), "dup"))
    assert d.name == "blk/dup"
    clones = poputil.cloneN(g, t, 2, "copies")
    assert {ref.name for ref, _ in clones.flatten().getVarRegions()} == {"copies.clone0", "copies.clone1"}
