"""Compiler passes that name themselves: their errors, POPLAR_PY_DUMP_AFTER, POPLAR_PY_CHECK_PASSES."""

import dataclasses
import sys

import numpy as np
import pytest
from support import make_graph

import poplar_py as poplar
from poplar_py import Input, Output, Vector, Vertex
from poplar_py import program as prog
from poplar_py.compiler import computeset, graph_compiler, lower
from poplar_py.compiler.passes import dumped_passes
from poplar_py.options import parseEngineOptions


class Twice(Vertex):
    x: Input[Vector[float]]
    y: Output[Vector[float]]

    def compute(self):
        for i in range(len(self.x)):
            self.y[i] = 2 * self.x[i]
        return True


def build():
    """A graph of two variables on tiles 0 and 1, a compute set 'double' and a copy 'back'."""
    _, graph = make_graph(4)
    graph.addCodelets(Twice)
    x = graph.addVariable(poplar.FLOAT, [4], "x")
    y = graph.addVariable(poplar.FLOAT, [4], "y")
    graph.setTileMapping(x, 0)
    graph.setTileMapping(y, 1)
    cs = graph.addComputeSet("double")
    graph.setTileMapping(graph.addVertex(cs, "Twice", {"x": x, "y": y}), 1)
    return graph, prog.Sequence([prog.Execute(cs), prog.Copy(y, x, name="back")])


def test_unexpected_error_names_the_pass_and_the_compute_set(monkeypatch):
    def broken(*args):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(computeset, "check_races", broken)
    graph, program = build()
    with pytest.raises(poplar.CompilerPassError, match="internal error in compiler pass 'plan compute sets', "
                       "while planning compute set 'double': ZeroDivisionError") as info:
        poplar.Engine(graph, program)
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert info.value.passName == "plan compute sets"
    assert info.value.subject == "planning compute set 'double'"
    assert isinstance(info.value, poplar.PoplarError)


def test_unexpected_error_names_the_program_being_lowered(monkeypatch):
    def broken(lw, p):
        raise KeyError("oops")

    monkeypatch.setitem(lower.STEPS, prog.Copy, broken)
    graph, program = build()
    with pytest.raises(poplar.CompilerPassError, match="compiler pass 'lower programs', while lowering "
                       "Copy 'back': KeyError"):
        poplar.Engine(graph, program)


def test_deliberate_error_keeps_its_class_and_message():
    graph, _ = build()
    cs = graph.addComputeSet("open")
    graph.addVertex(cs, "Twice", {"x": graph.addVariable(poplar.FLOAT, [2], "z")})
    with pytest.raises(poplar.GraphConnectionError, match=r"field 'y'.* is not connected") as info:
        poplar.Engine(graph, prog.Execute(cs))
    if sys.version_info >= (3, 11):
        note = "(in compiler pass 'plan compute sets', while planning compute set 'open')"
        assert info.value.__notes__ == [note]


def test_dump_after_named_passes(monkeypatch, capsys):
    monkeypatch.setenv("POPLAR_PY_DUMP_AFTER", "Plan-Compute-Sets, lay_out_variables,complete tile mapping")
    graph, program = build()
    poplar.Engine(graph, program)
    err = capsys.readouterr().err
    assert "after pass 'complete tile mapping':" in err and "variable 'x' float [4]: [0,4)->0" in err
    assert "after pass 'lay out variables':\nmemory layout: 2 intervals on 4 tiles" in err
    assert "after pass 'plan compute sets':\ncompute sets planned: 1\n  0 'double': 1 vertices on 1 tiles " \
           "(Twice x1)" in err
    assert "after pass 'lower programs'" not in err


def test_dump_after_all_and_unknown_names(monkeypatch, capsys):
    monkeypatch.setenv("POPLAR_PY_DUMP_AFTER", "all")
    graph, program = build()
    poplar.Engine(graph, program)
    err = capsys.readouterr().err
    assert err.count("[poplar-py] after pass") == len(graph_compiler.PASSES)
    assert "lowered: 1 programs, 0 functions, 2 leaf steps, 1 compute sets" in err
    monkeypatch.setenv("POPLAR_PY_DUMP_AFTER", "plan compute set")
    with pytest.raises(poplar.InvalidOptionError, match=r"no compiler pass: 'plan compute set'; the passes "
                       r"are 'complete tile mapping', 'analyse liveness', .*'lower programs' \(or 'all'\)"):
        poplar.Engine(*build())
    assert dumped_passes(["a b"], "") == set()


def compile_with(monkeypatch, name, corrupt):
    """Compile with ``graph_compiler.<name>``'s result passed through ``corrupt``, the passes checked."""
    monkeypatch.setenv("POPLAR_PY_CHECK_PASSES", "1")
    original = getattr(graph_compiler, name)

    def corrupted(*args):
        out = original(*args)
        corrupt(out)
        return out

    monkeypatch.setattr(graph_compiler, name, corrupted)
    graph, program = build()
    poplar.Engine(graph, program)


def test_checks_catch_a_mapping_off_the_target(monkeypatch):
    def off(mapping):
        mapping.tiles[0] = 99

    with pytest.raises(poplar.CompilerPassError, match=r"result of compiler pass 'complete tile mapping' is "
                       r"invalid .*tile out of range \[0, 4\) \(first at 0\)"):
        compile_with(monkeypatch, "complete_mapping", off)


def test_checks_catch_overlapping_and_misaligned_layouts(monkeypatch):
    def overlap(layout):
        layout.tile[1] = 0  # y (packed: not always live) onto x's bytes

    match = r"'lay out variables' is invalid .*packed interval overlaps an always-live one"
    with pytest.raises(poplar.CompilerPassError, match=match) as info:
        compile_with(monkeypatch, "layout_memory", overlap)
    assert info.value.passName == "lay out variables"

    def misalign(layout):
        layout.offset[1] += 2

    with pytest.raises(poplar.CompilerPassError, match=r"interval misaligned \(first at 4\)"):
        compile_with(monkeypatch, "layout_memory", misalign)


def test_checks_catch_a_plan_off_its_tile(monkeypatch):
    def far(plans):
        plans.plans[0].segments.offset[:] = 1 << 20

    with pytest.raises(poplar.CompilerPassError, match=r"'plan compute sets' is invalid .*compute set "
                       r"'double': a field's data outside its vertex's tile"):
        compile_with(monkeypatch, "plan_compute_sets", far)


def test_checks_catch_a_broken_frozen_ir(monkeypatch):
    monkeypatch.setenv("POPLAR_PY_CHECK_PASSES", "1")
    graph, program = build()
    ir = graph.freeze()
    bad = dataclasses.replace(ir, vertices=dataclasses.replace(ir.vertices, tile=np.asarray([7])))
    with pytest.raises(poplar.CompilerPassError, match=r"frozen graph IR given to the compiler is invalid .*"
                       r"vertex tile out of range"):
        graph_compiler.compile_graph(bad, [program], parseEngineOptions({}))



def test_checks_catch_packed_variables_live_at_once_sharing_bytes(monkeypatch):
    monkeypatch.setenv("POPLAR_PY_CHECK_PASSES", "1")
    graph, _ = build()
    x, y = graph.getVariable(0), graph.getVariable(1)
    t = graph.addVariable(poplar.FLOAT, [4], "t")  # written and read while y is live
    graph.setTileMapping(t, 1)
    cs = graph.addComputeSet("again")
    graph.setTileMapping(graph.addVertex(cs, "Twice", {"x": x, "y": t}), 1)
    program = prog.Sequence([prog.Execute(cs), prog.Copy(x, y), prog.Copy(t, x), prog.Copy(y, x)])
    original = graph_compiler.layout_memory

    def shared(*args):
        layout = original(*args)
        layout.offset[2] = layout.offset[1]  # t onto y's bytes
        return layout

    monkeypatch.setattr(graph_compiler, "layout_memory", shared)
    with pytest.raises(poplar.CompilerPassError, match="packed intervals of variables live at once share"):
        poplar.Engine(graph, program)
