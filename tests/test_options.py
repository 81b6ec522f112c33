"""Engine options: Poplar's names, values checked, misspellings named, simulator-free ones accepted."""

from __future__ import annotations

import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.errors import InvalidOptionError, OptionTypeError
from poplar_py.options import IGNORED, parseEngineOptions


@pytest.mark.parametrize("name", sorted(IGNORED))
def test_options_without_meaning_here_are_accepted(name):
    kind = IGNORED[name]
    value = kind[0] if isinstance(kind, tuple) else {"bool": "true", "int": "4"}.get(kind, "x")
    assert parseEngineOptions({name: value})[name] == value


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
