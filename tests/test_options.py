"""Engine options: Poplar's names, values checked, misspellings named, simulator-free ones accepted."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.errors import InvalidOptionError, OptionTypeError
from poplar_py.options import IGNORED, parseEngineOptions

GOOD = {"bool": ["true", "FALSE", True], "int": ["4", "0x400", 7], "float": ["300.00", "0", "1e3"],
        "str": ["x", "vars.capnp"], "int|auto": ["auto", "8"], "int|unlimited": ["unlimited", "0x10"]}
BAD = {"bool": ["yes", "1"], "int": ["-1", "0x", "4.5", "many"], "float": ["soon", "-3", "1e"],
       "int|auto": ["automatic", "-2"], "int|unlimited": ["none", "2.0"]}


@pytest.mark.parametrize("name", sorted(IGNORED))
def test_options_without_meaning_here_are_accepted_and_checked(name):
    kind = IGNORED[name]
    for value in [kind[0], kind[-1].upper()] if isinstance(kind, tuple) else GOOD[kind]:
        text = str(value).lower() if isinstance(value, bool) or kind == "bool" or isinstance(kind, tuple) \
            else str(value)
        assert parseEngineOptions({name: value})[name] == text
    for value in ["bogus"] if isinstance(kind, tuple) else BAD.get(kind, []):
        with pytest.raises(InvalidOptionError, match=re.escape(f"'{name}' must be")):
            parseEngineOptions({name: value})


def test_the_options_real_programs_pass_are_accepted():
    # from ported programs: hexadecimal stack sizes, profiler v3, thread counts as numbers
    options = {
        "target.saveArchive": "archive.a", "debug.instrument": "true", "debug.instrumentCompute": "true",
        "debug.loweredVarDumpFile": "vars.capnp", "debug.instrumentControlFlow": "true",
        "debug.computeInstrumentationLevel": "tile", "debug.outputAllSymbols": "true",
        "autoReport.outputSerializedGraph": "true", "debug.retainDebugInformation": "true",
        "target.workerStackSizeInBytes": "0x8000", "target.supervisorStackSizeInBytes": "0x80",
        "opt.maxCompilationThreads": 40, "profiler.format": "v3", "profiler.includeCycleEstimates": "true",
        "streamCallbacks.multiThreadMode": "singleThread", "prng.enable": "true", "prng.seed": "1"}
    device = poplar.IPUModel().createDevice()
    engine = poplar.Engine(poplar.Graph(device), prog.Sequence(), options)  # would raise on any of them
    engine.load(device)
    engine.run(0)
    assert parseEngineOptions(options)["target.workerStackSizeInBytes"] == "0x8000"


@pytest.mark.parametrize("wrong,meant", [("codelet.fastMath", "codelets.fastMath"),
                                         ("autoreport.all", "autoReport.all"),
                                         ("target.deterministicWorker", "target.deterministicWorkers"),
                                         ("exchange.enablePrefetching", "exchange.enablePrefetch")])
def test_misspelled_options_name_the_right_one(wrong, meant):
    with pytest.raises(InvalidOptionError, match=f"did you mean '{meant}'"):
        parseEngineOptions({wrong: "true"})


@pytest.mark.parametrize("options", [["codelets.mode"], "codelets.mode", {1: "true"}, {"codelets.mode": None},
                                     {"codelets.mode": ["native"]}])
def test_options_of_the_wrong_type_are_both_option_and_type_errors(options):
    with pytest.raises(OptionTypeError) as info:
        parseEngineOptions(options)
    assert isinstance(info.value, InvalidOptionError) and isinstance(info.value, TypeError)


def test_a_report_directory_that_is_a_file_is_refused_when_the_engine_is_built(tmp_path):
    (tmp_path / "taken").write_text("x")
    graph = poplar.Graph(poplar.IPUModel().createDevice())
    options = {"autoReport.all": "true", "autoReport.directory": str(tmp_path / "taken")}
    with pytest.raises(InvalidOptionError, match=r"taken.*is a file"):
        poplar.Engine(graph, prog.Sequence(), options)


def test_the_options_reference_lists_every_option_accepted_without_effect():
    page = (Path(__file__).resolve().parents[1] / "docs" / "reference" / "options.md").read_text()
    paragraph = " ".join(page[page.index("- **Engine options**"):].split())
    for name in IGNORED:
        group, option = name.split(".", 1)
        section = paragraph[paragraph.index(f"`{group}.`"):]
        assert f"`{option}`" in section.split(";")[0], name
