"""Template constants, operation policies, casts to type parameters and local arrays, in both modes."""

from __future__ import annotations

import re
import textwrap

import llvmlite.binding as llvm
import numpy as np
import pytest
import template_codelets as tc
from codelet_harness import isolated_cache, load_module  # noqa: F401

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.codelet import jit
from poplar_py.codelet.codelet_compiler import KernelOptions, check_codelet, compile_codelet
from poplar_py.templates import TemplateParam

MODES = ("native", "interpreter")


def line_of(path, text):
    with open(path) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


def run(vertices, inputs, outputs, mode):
    """One compute set on tile 0: ``vertices`` is a list of (vertex name, connections builder,
    initial state); returns the outputs read back and the engine."""
    device = poplar.IPUModel().createDevice()
    graph = poplar.Graph(device)
    graph.addCodelets(tc)
    tensors = {}
    for name, (type_, values) in {**inputs, **outputs}.items():
        tensors[name] = graph.addVariable(type_, list(np.shape(values)), name)
        graph.setTileMapping(tensors[name], 0)
    cs = graph.addComputeSet("cs")
    for vertex, connect, state in vertices:
        v = graph.addVertex(cs, vertex, connect(tensors))
        for field, value in state.items():
            graph.setInitialValue(v[field], value)
        graph.setTileMapping(v, 0)
    for name in inputs:
        graph.createHostWrite(name, tensors[name])
    for name in outputs:
        graph.createHostRead(name, tensors[name])
    engine = poplar.Engine(graph, prog.Execute(cs), {"codelets.mode": mode})
    engine.load(device)
    for name, (_, values) in inputs.items():
        engine.writeTensor(name, np.asarray(values))
    engine.run()
    return {name: engine.readTensor(name) for name in outputs}, engine


def test_template_parameters_in_order_of_appearance():
    assert tc.Columns.templateParams == (TemplateParam("T", None), TemplateParam("W", int),
                                         TemplateParam("Op", tc.Combine))
    cls = tc.Columns.instantiate(poplar.FLOAT, 8, tc.Max)
    assert cls.vertexName == "test::Columns<float,8,test::Max>"
    assert cls.templateParams == () and cls.constants["W"] == 8 and cls.W == 8
    assert tc.Columns.instantiate("float", 8, tc.Max) is cls
    narrow = tc.Narrow.instantiate(poplar.FLOAT, poplar.HALF, True)
    assert narrow.vertexName == "test::Narrow<float,half,true>"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("width", [4, 8])
def test_one_vertex_serves_every_policy(mode, width):
    data = np.random.default_rng(width).standard_normal(6 * width).astype(np.float32)
    vertices = [(f"test::Columns<float,{width},{op}>", lambda t, i=i: {"x": t["x"], "out": t["out"][i]}, {})
                for i, op in enumerate(["test::Add", "test::Max"])]
    got, _ = run(vertices, {"x": (poplar.FLOAT, data)}, {"out": (poplar.FLOAT, np.zeros((2, width)))}, mode)
    rows = data.reshape(6, width)
    sums = rows[0].copy()
    for r in rows[1:]:
        sums += r  # in row order, in float32: the vertex's order
    np.testing.assert_array_equal(got["out"], np.stack([sums, rows.max(axis=0)]))


@pytest.mark.parametrize("mode", MODES)
def test_a_helper_is_specialised_for_each_constant(mode):
    data = np.arange(1.0, 9.0)
    outputs = {"two": (poplar.FLOAT, np.zeros(7)), "three": (poplar.FLOAT, np.zeros(6))}
    got, _ = run([("Windows", lambda t: {"x": t["x"], "two": t["two"], "three": t["three"]}, {})],
                 {"x": (poplar.FLOAT, data)}, outputs, mode)
    np.testing.assert_array_equal(got["two"], data[:-1] + data[1:])
    np.testing.assert_array_equal(got["three"], data[:-2] + data[1:-1] + data[2:])


@pytest.mark.parametrize("mode", MODES)
def test_cast_to_a_type_parameter_rounds_like_numpy(mode):
    data = (np.random.default_rng(0).standard_normal(16) * 1000).astype(np.float32)
    vertices = [("test::Narrow<float,half,false>", lambda t: {"x": t["x"], "out": t["once"]}, {}),
                ("test::Narrow<float,half,true>", lambda t: {"x": t["x"], "out": t["twice"]}, {})]
    outputs = {"once": (poplar.HALF, np.zeros(16)), "twice": (poplar.HALF, np.zeros(16))}
    got, _ = run(vertices, {"x": (poplar.FLOAT, data)}, outputs, mode)
    half = data.astype(np.float16)
    np.testing.assert_array_equal(got["once"], half)
    np.testing.assert_array_equal(got["twice"], half + half)


@pytest.mark.parametrize("mode", MODES)
def test_local_array_indices_are_checked(mode):
    data = np.array([0, 1, 5, 7, 3, 3], np.int32)
    connect = lambda t: {"x": t["x"], "out": t["out"]}  # noqa: E731
    got, _ = run([("Counts", connect, {"index": 3})], {"x": (poplar.INT, data)},
                 {"out": (poplar.INT, np.zeros(4))}, mode)
    np.testing.assert_array_equal(got["out"], np.bincount(data % 4, minlength=4))
    line = line_of(tc.__file__, "hist[self.index] += 0")
    message = rf"index 4 is out of bounds for local array 'hist' \(made at line {line - 3}\) of size 4 "
    with pytest.raises(poplar.VertexError, match=message + rf".*template_codelets.py:{line}"):
        run([("Counts", connect, {"index": 4})], {"x": (poplar.INT, data)},
            {"out": (poplar.INT, np.zeros(4))}, mode)


@pytest.mark.parametrize("mode", MODES)
def test_only_the_branch_a_constant_selects_is_compiled(mode):
    flags = np.array([False, True, True, False, True])
    vertices = [("test::ArgBest<bool,true>", lambda t: {"x": t["flags"], "out": t["first"]}, {})]
    got, _ = run(vertices, {"flags": (poplar.BOOL, flags)}, {"first": (poplar.INT, np.zeros(()))}, mode)
    assert got["first"] == 1
    with pytest.raises(poplar.CodeletCompileError, match="arithmetic on bool"):
        check_codelet(tc.ArgBest.instantiate(poplar.BOOL, False))
    data = np.array([3.0, -1.0, 7.0, -1.0], np.float32)
    for flag, want in (("true", 2), ("false", 1)):
        vertices = [(f"test::ArgBest<float,{flag}>", lambda t: {"x": t["x"], "out": t["at"]}, {})]
        got, _ = run(vertices, {"x": (poplar.FLOAT, data)}, {"at": (poplar.INT, np.zeros(()))}, mode)
        assert got["at"] == want


@pytest.mark.parametrize("mode", MODES)
def test_types_compared_when_compiling_select_one_side(mode):
    for size, type_, kind in ((8, poplar.FLOAT, 4), (7, poplar.FLOAT, 2), (8, poplar.INT, 1),
                              (8, poplar.UNSIGNED_INT, 2)):
        data = np.arange(size).astype(type_.dtype)
        vertices = [(f"test::Widest<{type_}>", lambda t: {"x": t["x"], "out": t["out"]}, {})]
        got, _ = run(vertices, {"x": (type_, data)}, {"out": (type_, np.zeros(2))}, mode)
        assert got["out"].tolist() == [data.sum(), kind]


def test_unrolled_loops_count_the_cycles_of_the_loop():
    data = np.arange(8.0)
    cycles = []
    for known in ("true", "false"):
        got, engine = run([(f"test::Rolled<8,{known}>", lambda t: {"x": t["x"], "out": t["out"]}, {"n": 8})],
                          {"x": (poplar.FLOAT, data)}, {"out": (poplar.FLOAT, np.zeros(()))}, "native")
        assert got["out"] == data.sum() - data[5]
        cycles.append(engine.getProfile()["execution"]["totalCycles"])
    assert cycles[0] == cycles[1]


def test_local_arrays_become_registers():
    """Once the loops over it unroll, no local array is left in memory (LLVM's SROA)."""
    compiled = compile_codelet(tc.Columns.instantiate(poplar.FLOAT, 8, tc.Add), KernelOptions())
    module = llvm.parse_assembly(compiled.ir)
    options = llvm.create_pipeline_tuning_options(speed_level=3)
    builder = llvm.create_pass_builder(jit._get().tm, options)
    builder.getModulePassManager().run(module, builder)
    assert "alloca [8 x float]" in compiled.ir and "alloca" not in str(module)


def test_template_argument_errors_name_what_is_expected():
    graph = poplar.Graph(poplar.IPUModel().createDevice())
    graph.addCodelets(tc)
    cs = graph.addComputeSet()
    with pytest.raises(poplar.UnknownVertexTypeError, match=r"Op needs a Combine \(test::Add, test::Max\), "
                                                            r"got 'test::Min'"):
        graph.addVertex(cs, "test::Columns<float,4,test::Min>")
    with pytest.raises(poplar.UnknownVertexTypeError, match="W needs a 64-bit integer, got 'four'"):
        graph.addVertex(cs, "test::Columns<float,four,test::Add>")
    with pytest.raises(poplar.UnknownVertexTypeError, match="twice needs a bool, got 'maybe'"):
        graph.addVertex(cs, "test::Narrow<float,half,maybe>")
    with pytest.raises(poplar.UnknownVertexTypeError, match=r"is a template: name its arguments, as in "
                                                            r"'test::Columns<float,4,\.\.\.>'"):
        graph.addVertex(cs, "test::Columns")
    with pytest.raises(poplar.CodeletCompileError, match="needs a bool, got 3"):
        tc.Narrow.instantiate(poplar.FLOAT, poplar.HALF, 3)


BAD_ARRAYS = {
    "size_from_data": ("a = LocalArray(FLOAT, len(self.x))  # HERE", "must be an integer known when"),
    "size_negative": ("a = LocalArray(FLOAT, -1)  # HERE", "holds 0 to 65536 elements, not -1"),
    "type_value": ("a = LocalArray(self.x, 4)  # HERE", "element type of a LocalArray"),
    "arity": ("a = LocalArray(FLOAT)  # HERE", "LocalArray(type, size) takes two arguments"),
    "cast_arity": ("a = FLOAT(1, 2)  # HERE", "takes exactly one argument"),
    "type_as_value": ("a = FLOAT  # HERE", "'FLOAT' can only be called"),
    "reassigned": ("a = LocalArray(FLOAT, 2)\na = LocalArray(FLOAT, 3)  # HERE", "local 'a'"),
    "field_call": ("self.x.update(1)  # HERE", "and policy functions can be called"),
    "not_a_policy": ("v = self.x\nv.update(1)  # HERE", "has no functions (only operation policies do)"),
    "type_order": ("a = FLOAT < HALF  # HERE", "a type compares to another type only, with == or !="),
    "type_to_number": ("a = FLOAT == 3  # HERE", "a type compares to another type only"),
    "type_chain": ("a = FLOAT == HALF == FLOAT  # HERE", "a type compares to another type only"),
}


@pytest.mark.parametrize("case", sorted(BAD_ARRAYS))
def test_bad_local_arrays_and_casts_name_the_line(case, tmp_path):
    body, expected = BAD_ARRAYS[case]
    source = ("from poplar_py import LocalArray\n\nclass V(Vertex):\n    x: Input[Vector[float]]\n\n"
              "    def compute(self):\n" + textwrap.indent(body, " " * 8) + "\n")
    module = load_module(tmp_path, source)
    line = line_of(module.__file__, "# HERE")
    with pytest.raises(poplar.CodeletCompileError, match=f":{line}: V.compute: .*{re.escape(expected)}"):
        check_codelet(module.V)
