"""print() in codelets: the same text in both modes, in program order, replicated; refused forms."""

import io

import numpy as np
import pytest
from support import make_graph

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.codelet.codelet_compiler import KernelOptions, check_codelet, compile_codelet
from poplar_py.errors import CodeletCompileError
from poplar_py.vertex import InOut, Input, MultiVertex, Output, Vector, Vertex

MODES = ["native", "interpreter"]


def show(x):
    print(f"  third={x:.2f}")


class PerWorker(MultiVertex):
    x: Input[Vector[poplar.FLOAT]]
    h: Input[poplar.HALF]

    def compute(self, workerId):
        if workerId < len(self.x):
            print(f"worker {workerId}: x={self.x[workerId]} h={self.h} ok={self.x[workerId] > 0.5}")
        return True


class Loop(Vertex):
    v: InOut[Vector[poplar.INT]]
    n: Input[poplar.UNSIGNED_INT]

    def compute(self):
        total = 0
        for i in range(len(self.v)):
            total += self.v[i]
            self.v[i] = total
            print("step", i, f"{total:>4}|", float(total) / 3.0, sep=",", end=";\n")
            show(total / 3)
        print(f"n={self.n} sqrt={(self.n + 0.0) ** 0.5:.3f}")


def build(replicas=1):
    m = poplar.IPUModel()
    m.numIPUs, m.tilesPerIPU = replicas, 4
    device = m.createDevice()
    graph = poplar.Graph(device, replication_factor=replicas)
    graph.addCodelets([PerWorker, Loop])
    x = graph.addConstant(poplar.FLOAT, [3], [0.1, 1.0, 2.5])
    h = graph.addConstant(poplar.HALF, [], [0.1])
    v = graph.addVariable(poplar.INT, [2, 3], "v")
    n = graph.addConstant(poplar.UNSIGNED_INT, [], [7])
    for t in (x, h, n):
        graph.setTileMapping(t, 0)
    graph.setTileMapping(v[0], 2)
    graph.setTileMapping(v[1], 1)
    first, second = graph.addComputeSet("first"), graph.addComputeSet("second")
    graph.setTileMapping(graph.addVertex(first, "PerWorker", {"x": x, "h": h}), 3)
    for row, tile in ((0, 2), (1, 1)):  # created tile 2 first: printed tile 1 first
        graph.setTileMapping(graph.addVertex(first, "Loop", {"v": v[row], "n": n}), tile)
    graph.setTileMapping(graph.addVertex(second, "Loop", {"v": v[1], "n": n}), 1)
    init = graph.addConstant(poplar.INT, [2, 3], [[1, 2, 3], [-4, 5, 6]])
    graph.setTileMapping(init, 0)
    return device, graph, prog.Sequence([prog.Copy(init, v), prog.Execute(first), prog.Execute(second)])


def printed(mode, replicas=1):
    device, graph, program = build(replicas)
    engine = poplar.Engine(graph, program, {"codelets.mode": mode})
    out = io.StringIO()
    engine.setPrintTensorStream(out)
    engine.load(device)
    engine.run()
    return out.getvalue()


def loop_lines(values, n=7):
    lines, total = [], 0
    for i, x in enumerate(values):
        total += x
        lines += [f"step,{i},{total:>4}|,{float(total) / 3.0};", f"  third={total / 3:.2f}"]
    return lines + [f"n={n} sqrt={n ** 0.5:.3f}"]


EXPECTED = "\n".join(
    loop_lines([-4, 5, 6])  # tile 1
    + loop_lines([1, 2, 3])  # tile 2
    # tile 3; as in Python, f"{x}" of a numpy float32 or half is the value as a double
    + [f"worker {w}: x={x} h=0.0999755859375 ok={float(x) > 0.5}"
       for w, x in enumerate(["0.10000000149011612", "1.0", "2.5"])]
    + loop_lines([-4, 1, 7])  # the second compute set: the first's results, summed again
) + "\n"


@pytest.mark.parametrize("mode", MODES)
def test_both_modes_print_the_same_text_in_program_order(mode):
    assert printed(mode) == EXPECTED


def test_replicas_each_print():
    text = printed("native", replicas=2)
    lines = EXPECTED.splitlines(keepends=True)
    first, second = lines[: -len(loop_lines([0, 0, 0]))], lines[-len(loop_lines([0, 0, 0])):]
    # compute set by compute set, each replica's lines in turn
    assert text == "".join(first * 2 + second * 2)


class Types(Vertex):
    f: Input[poplar.FLOAT]
    h: Input[poplar.HALF]
    u: Input[poplar.UNSIGNED_LONGLONG]
    c: Input[poplar.SIGNED_CHAR]
    b: Input[poplar.BOOL]

    def compute(self):
        print(self.f, self.h, self.u, self.c, self.b, self.f * 2, self.f > 0)
        print(f"{self.f}|{self.f!s}|{self.h!s:>6}|{self.u:x}|{self.c:+d}|{self.f:.3e}")
        print()
        print("a", "b", sep="", end="")


@pytest.mark.parametrize("mode", MODES)
def test_values_print_as_python_prints_numpy_scalars(mode):
    device, graph = make_graph(2)
    graph.addCodelets(Types)
    fields = {name: graph.addConstant(t, [], [v]) for name, t, v in [
        ("f", poplar.FLOAT, 0.1), ("h", poplar.HALF, 0.1), ("u", poplar.UNSIGNED_LONGLONG, 2**64 - 1),
        ("c", poplar.SIGNED_CHAR, -5), ("b", poplar.BOOL, True)]}
    cs = graph.addComputeSet("types")
    for t in [*fields.values(), graph.addVertex(cs, "Types", fields)]:
        graph.setTileMapping(t, 1)
    engine = poplar.Engine(graph, prog.Execute(cs), {"codelets.mode": mode})
    out = io.StringIO()
    engine.setPrintTensorStream(out)
    engine.load(device)
    engine.run()
    f = np.float32(0.1)
    assert out.getvalue() == (f"0.1 0.1 18446744073709551615 -5 True 0.2 True\n"
                              f"{float(f)}|0.1|   0.1|ffffffffffffffff|-5|{float(f):.3e}\n\nab")


def test_kernels_without_print_are_unchanged():
    class Plain(Vertex):
        x: Input[Vector[poplar.FLOAT]]
        out: Output[poplar.FLOAT]

        def compute(self):
            s = 0.0
            for i in range(len(self.x)):
                s += self.x[i]
            self.out = s

    ir = compile_codelet(Plain, KernelOptions()).ir
    assert "poplar_py_codelet_print" not in ir
    assert "poplar_py_codelet_print" in compile_codelet(Loop, KernelOptions()).ir


class PrintsVector(Vertex):
    x: Input[Vector[poplar.FLOAT]]

    def compute(self):
        print(self.x)


class PrintsFormat(Vertex):
    x: Input[poplar.FLOAT]

    def compute(self):
        print("%f" % self.x)  # noqa: UP031


class PrintsSpec(Vertex):
    x: Input[poplar.FLOAT]
    w: Input[int]

    def compute(self):
        print(f"{self.x:{self.w}}")


class PrintsRepr(Vertex):
    x: Input[poplar.FLOAT]

    def compute(self):
        print(f"{self.x!r}")


class PrintsKeyword(Vertex):
    x: Input[poplar.FLOAT]

    def compute(self):
        print(self.x, flush=True)


class PrintsValue(Vertex):
    x: Input[poplar.FLOAT]

    def compute(self):
        y = print(self.x)  # noqa: F841


@pytest.mark.parametrize("cls, what", [
    (PrintsVector, r"print\(\) can print numbers and bools, not a vector of float32"),
    (PrintsFormat, r"a computed string \('%' or .format\) is not supported"),
    (PrintsSpec, r"a format spec in a codelet's print must be constant"),
    (PrintsRepr, r"the !r conversion is not supported"),
    (PrintsKeyword, r"only the keywords sep and end"),
    (PrintsValue, r"print\(\) can only be called as a statement"),
])
def test_unsupported_prints_are_compile_errors(cls, what):
    with pytest.raises(CodeletCompileError, match=rf"test_codelet_print\.py:\d+: .*{what}"):
        check_codelet(cls)



class PrintsThenFails(Vertex):
    x: Input[poplar.INT]

    def compute(self):
        print(f"x={self.x}")
        assert self.x < 2


@pytest.mark.parametrize("mode", MODES)
def test_what_was_printed_before_a_failing_vertex_is_written(mode):
    m = poplar.IPUModel()
    m.tilesPerIPU = 2
    device = m.createDevice()
    graph = poplar.Graph(device)
    graph.addCodelets(PrintsThenFails)
    x = graph.addConstant(poplar.INT, [2], [1, 5])
    graph.setTileMapping(x, 0)
    cs = graph.addComputeSet("fails")
    for i in range(2):
        graph.setTileMapping(graph.addVertex(cs, "PrintsThenFails", {"x": x[i]}), i)
    engine = poplar.Engine(graph, prog.Execute(cs), {"codelets.mode": mode})
    out = io.StringIO()
    engine.setPrintTensorStream(out)
    engine.load(device)
    with pytest.raises(poplar.VertexError, match="assertion failed"):
        engine.run()
    assert out.getvalue() == "x=1\nx=5\n"
