"""poplar.DebugInfo with its JSON streamer, SourceLocation, ProfileValue and DebugSerializationFormat."""

import json

import pytest

import poplar_py as poplar


def test_debug_infos_are_streamed_as_json(tmp_path):
    path = str(tmp_path / "debug.json")
    poplar.DebugInfo("before", "user")  # not collected: no streamer yet
    poplar.DebugInfo.initializeStreamer(path, poplar.DebugSerializationFormat.JSON)
    info = poplar.DebugInfo(poplar.DebugContext("model", "layer1"), "user")
    assert info.setValue("api", "dense") and info.setValue("shape", [4, 8])
    assert not info.setValue("api", "again")  # a value is set once, as Poplar
    assert info.setValue("args", poplar.ProfileValue({"k": 2.5, "on": True}))
    child = poplar.DebugInfo(info.context(), "popops")
    poplar.DebugInfo.closeStreamer()
    poplar.DebugInfo("after", "user")
    with open(path) as f:
        contexts = json.load(f)["contexts"]
    assert [c["name"] for c in contexts] == ["model/layer1", "model/layer1"]
    first = contexts[0]
    assert first["layer"] == "user" and first["api"] == "dense" and first["shape"] == [4, 8]
    assert first["args"] == {"k": 2.5, "on": True} and first["id"] == info.getId() != child.getId()
    assert first["location"]["fileName"] == __file__
    assert first["location"]["functionName"] == "test_debug_infos_are_streamed_as_json"
    assert info.getPathName() == "model/layer1" and info.getValue("shape").asVector()[1].asInt() == 8


def test_source_location_and_profile_values():
    here = poplar.SourceLocation.Current()
    assert here.getFunctionName() == "test_source_location_and_profile_values" and here.isValid()
    assert here.getFileName() == __file__ and here.getLineNumber() > 0
    assert not poplar.SourceLocation().isValid()
    value = poplar.ProfileValue({"a": [1, "x"], "b": -3})
    assert value.asMap()["a"].asVector()[1].asString() == "x"
    assert value.asMap()["b"].asInt() == -3 and value.asMap()["b"].asDouble() == -3.0
    with pytest.raises(poplar.InvalidArgumentError, match="is negative"):
        value.asMap()["b"].asUint()
    with pytest.raises(poplar.InvalidArgumentError, match="is not a string"):
        value.asString()
    with pytest.raises(poplar.InvalidArgumentError, match="cannot hold object"):
        poplar.ProfileValue(object())
    assert poplar.DebugNameAndId("n").getPathName() == "n"


def test_streamer_arguments():
    with pytest.raises(poplar.InvalidArgumentError, match="JSON only"):
        poplar.DebugInfo.initializeStreamer("x.cbor", poplar.DebugSerializationFormat.CBOR)
    with pytest.raises(poplar.InvalidArgumentError, match="fileName must be a path"):
        poplar.DebugInfo.initializeStreamer("")
    with pytest.raises(poplar.InvalidArgumentError, match="layer must be a string"):
        poplar.DebugInfo("x", 3)
    poplar.DebugInfo.closeStreamer()  # nothing to write


def test_debug_context_forms():
    assert str(poplar.DebugContext("model", "layer1")) == "model/layer1"  # C++ makes "model" a parent
    assert str(poplar.DebugContext("here", poplar.SourceLocation.Current())) == "here"
    with pytest.raises(poplar.InvalidArgumentError, match=r"the location must be a poplar\.SourceLocation"):
        poplar.DebugContext("here", 3)
