"""poplar.OptionFlags, readJSON and readJSONFromEnv; ArrayRef, StringRef, equivalent_device_type
and Poplar's spellings of the error classes: the names ported C++ uses."""

import io

import numpy as np
import pytest
from support import make_graph

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import poplin


def test_option_flags_set_at_remove_and_iterate():
    flags = poplar.OptionFlags([("debug.instrument", "true")])
    flags.set("target.syncMethod", "polling")
    flags.set({"a": "1", "b": "2"})
    assert flags.at("a") == "1" and flags.get("missing") is None
    flags.remove("b")
    flags.remove("b")
    assert list(flags.begin()) == [("debug.instrument", "true"), ("target.syncMethod", "polling"), ("a", "1")]
    assert list(flags.end()) == []
    with pytest.raises(poplar.InvalidOptionError, match="option 'b' is not set"):
        flags.at("b")
    with pytest.raises(poplar.InvalidArgumentError, match="names and values are strings"):
        flags.set("x", 3)
    with pytest.raises(poplar.InvalidArgumentError, match="is not a \\(name, value\\) pair"):
        flags.set([("x", "1", "2")])
    flags.clear()
    assert flags == {}


def test_option_flags_are_taken_wherever_options_are():
    device, g = make_graph(4)
    poplin.addCodelets(g)
    a = poplin.createMatMulInputLHS(g, poplar.FLOAT, [4, 4], [4, 4], "a",
                                    poplar.OptionFlags({"availableMemoryProportion": "0.3"}))
    seq = prog.Sequence()
    poplin.matMul(g, a, a, seq, "c", poplar.OptionFlags({"partialsType": "float"}))
    poplar.Engine(g, seq, poplar.OptionFlags({"debug.instrument": "true"})).load(device)
    with pytest.raises(poplar.InvalidOptionError):
        poplar.Engine(g, seq, poplar.OptionFlags({"no.such": "1"}))


def test_read_json(monkeypatch):
    flags = poplar.OptionFlags()
    poplar.readJSON('{"opt": "v", "count": 4, "on": true}', flags)
    poplar.readJSON(io.StringIO('{"more": 0.5}'), flags)
    assert flags == {"opt": "v", "count": "4", "on": "true", "more": "0.5"}
    with pytest.raises(poplar.InvalidOptionError, match="not valid JSON"):
        poplar.readJSON("{", flags)
    with pytest.raises(poplar.InvalidOptionError, match="a JSON object"):
        poplar.readJSON("[1]", flags)
    with pytest.raises(poplar.InvalidOptionError, match="option 'x' has a value that is not"):
        poplar.readJSON('{"x": [1]}', flags)
    with pytest.raises(poplar.InvalidArgumentError, match=r"flags must be a poplar\.OptionFlags"):
        poplar.readJSON("{}", {})
    monkeypatch.setenv("MY_OPTIONS", '{"from.env": "yes"}')
    monkeypatch.delenv("NO_OPTIONS", raising=False)
    assert poplar.readJSONFromEnv("MY_OPTIONS", flags) and flags["from.env"] == "yes"
    assert not poplar.readJSONFromEnv("NO_OPTIONS", flags)


def test_array_and_string_refs_and_device_types():
    assert poplar.ArrayRef([1, 2, 3]) == (1, 2, 3) and poplar.ArrayRef(7) == (7,)
    assert poplar.ArrayRef([4, 5]).size() == 2 and poplar.ArrayRef().empty()
    assert poplar.StringRef("name") == "name" and poplar.StringRef("").empty()
    with pytest.raises(poplar.InvalidArgumentError, match="StringRef: expected a string"):
        poplar.StringRef(3)
    with pytest.raises(poplar.InvalidArgumentError, match="ArrayRef: expected a sequence"):
        poplar.ArrayRef("abc")
    assert poplar.equivalent_device_type(np.float32).value == poplar.FLOAT
    assert poplar.equivalent_device_type(int).value == poplar.INT
    assert poplar.equivalent_device_type(np.uint16).value == poplar.UNSIGNED_SHORT
    with pytest.raises(poplar.InvalidArgumentError):
        poplar.equivalent_device_type(object)


def test_poplar_spellings_of_the_errors():
    assert poplar.poplar_error is poplar.PoplarError
    assert poplar.graph_memory_allocation_error is poplar.GraphMemoryAllocationError
    assert poplar.invalid_option is poplar.InvalidOptionError
    assert issubclass(poplar.VertexError, poplar.application_runtime_error)
    assert issubclass(poplar.application_runtime_error, poplar.runtime_error)
    with pytest.raises(poplar.invalid_option):
        poplar.Engine(make_graph(1)[1], prog.Sequence(), {"bogus": "1"})
    error = poplar.recoverable_runtime_error("link down", poplar.RecoveryAction.LINK_RESET)
    assert error.getRecoveryAction() is poplar.RecoveryAction.LINK_RESET
