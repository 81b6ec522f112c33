"""Seeded generators of bad inputs for tests/test_fuzz.py, and a runner for the ones that may
crash the process (``python fuzz_cases.py NAME ...`` prints one ``OK``/``FAIL`` line per case).

Every case here misuses one API entry point in a small fresh world (a graph with a few
tensors, a compute set and a codelet). It must raise a PoplarError whose message names the
culprit, and leave the graph as it was. Other modules (fuzz_replicas.py, fuzz_executables.py)
add families in other worlds, and valid cases, whose action checks its own result.
"""

from __future__ import annotations

import io
import random
import sys
import tempfile
import textwrap
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import poplar_py as poplar
from poplar_py import Input, Output, Vector, Vertex
from poplar_py import program as prog
from poplibs_py import poplin, popnn, popops, poprand, poputil

SEED = 20261124


class Copy(Vertex):
    x: Input[Vector[float]]
    y: Output[Vector[float]]

    def compute(self):
        for i in range(len(self.x)):
            self.y[i] = self.x[i]


class World:
    """A fresh graph on a small device: float ``t`` [4, 3] on tile 0, int ``i`` [4], a compute
    set ``cs`` with one connected vertex ``v``, and a second graph ``other`` with tensor ``o``."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        model = poplar.IPUModel()
        model.tilesPerIPU = 4
        self.device = model.createDevice()
        g = self.graph = poplar.Graph(self.device)
        g.addCodelets(Copy)
        self.t = g.addVariable(poplar.FLOAT, [4, 3], "t")
        self.i = g.addVariable(poplar.INT, [4], "i")
        self.y = g.addVariable(poplar.FLOAT, [3], "y")
        for x in (self.t, self.i, self.y):
            g.setTileMapping(x, 0)
        self.cs = g.addComputeSet("cs")
        self.v = g.addVertex(self.cs, "Copy", {"x": self.t[0], "y": self.y})
        g.setTileMapping(self.v, 0)
        self.other = poplar.Graph(self.device)
        self.other.addCodelets(Copy)
        self.o = self.other.addVariable(poplar.FLOAT, [3], "o")
        self.ocs = self.other.addComputeSet("ocs")
        self.ov = self.other.addVertex(self.ocs, "Copy")

    def snapshot(self) -> tuple:
        return snapshot(self.graph)


def snapshot(graph: poplar.Graph) -> tuple:
    """What a graph holds: compared before and after a bad call."""
    ir = graph.freeze()
    e = ir.edges
    arrays = (ir.vertices.cls, ir.vertices.tile, ir.vertices.perf, e.vertex, e.field, e.row, e.var,
              e.offset, e.count, ir.mapping_tiles)
    return (ir.text(10**6), graph.getNumVertices(), tuple(a.tobytes() for a in arrays),
            tuple(sorted(ir.host_handles)), tuple(sorted(ir.streams)), tuple(sorted(ir.remote_buffers)),
            len(ir.functions))


@dataclass(frozen=True)
class Case:
    name: str
    culprit: tuple[str, ...] | None  # the message must contain each of these; None: a valid input
    action: Callable[..., Any]  # action(world) or, with ``prepare``, action(world, prepared)
    isolated: bool = False  # runs native code that might crash: run it in a subprocess
    prepare: Callable[[Any], Any] | None = None  # legal set-up, before the graph is compared
    world: Callable[[Path], Any] = World  # the setting: anything with ``snapshot()``
    error: type[Exception] = poplar.PoplarError  # the class the error must have


def check(case: Case, tmp: Path) -> str | None:
    """Run one case in a fresh world; None if it behaved, else what went wrong. A valid case's
    action compares its results itself: any exception fails it."""
    world = case.world(tmp)
    args = (world,) if case.prepare is None else (world, case.prepare(world))
    if case.culprit is None:
        try:
            case.action(*args)
        except Exception as exc:
            return f"a valid input failed: {type(exc).__name__}: {exc}\n{traceback.format_exc(limit=-3)}"
        return None
    before = world.snapshot()
    try:
        case.action(*args)
    except poplar.PoplarError as exc:
        if not isinstance(exc, case.error):
            return f"{type(exc).__name__} is not a {case.error.__name__}: {exc}"
        message = str(exc)
        missing = [c for c in case.culprit if c not in message]
        if missing:
            return f"message does not name {missing}: {type(exc).__name__}: {message}"
    except Exception as exc:  # the point: anything else is a failure
        return f"{type(exc).__name__} is not a PoplarError: {exc}\n{traceback.format_exc(limit=-3)}"
    else:
        return "no error was raised"
    if world.snapshot() != before:
        return "the graph changed"
    return None


# ---- generators --------------------------------------------------------------------------------
BAD_INTS: list[Any] = [2.5, None, "4", True, object(), [1], 1e3]
BAD_SHAPES: list[Any] = [[2.5], [2.0, 2], None, "4", [None], 4, [True], [1, "2"], {"a": 1}, [-1]]
BAD_TYPES: list[Any] = [None, object(), 3.5, "flot", [poplar.FLOAT], np.complex64, 7]
BAD_VALUES: list[Any] = [None, "abc", [1.0, None], [object()], {"a": 1}, [[1, 2], [3]], b"xy"]
BAD_TILES: list[Any] = ["1", None, 1.5, [[0, 1]], [["ab"]], [[(0, 1.5)]], True, -1, 10**6, [[(0, 99)]]]


def _shapes(rng: random.Random) -> Iterator[Case]:
    entries: list[tuple[str, Callable[[World, Any], Any], tuple[str, ...]]] = [
        ("addVariable", lambda w, s: w.graph.addVariable(poplar.FLOAT, s, "bad"), ("bad",)),
        ("addConstant", lambda w, s: w.graph.addConstant(poplar.FLOAT, s, 1.0, "badc"), ("badc",)),
        ("reshape", lambda w, s: w.t.reshape(s), ("t",)),
        ("reshapePartial", lambda w, s: w.t.reshapePartial(0, 1, s), ("t",)),
        ("dimShuffle", lambda w, s: w.t.dimShuffle(s), ("t",)),
        ("expand", lambda w, s: w.t.expand(s), ("t",)),
        ("squeeze", lambda w, s: w.t.squeeze(s), ("t",)),
        ("slice-list", lambda w, s: w.t.slice(s, [4, 3]), ("t",)),
    ]
    for name, call, culprit in entries:
        for k, s in enumerate(BAD_SHAPES):
            if name in ("expand", "squeeze", "dimShuffle", "slice-list") and s == [-1]:
                continue  # (-1 is a legal value there: the range check reports it)
            yield Case(f"shape-{name}-{k}", culprit, lambda w, c=call, s=s: c(w, s))


def _types(rng: random.Random) -> Iterator[Case]:
    entries: list[tuple[str, Callable[[World, Any], Any], tuple[str, ...]]] = [
        ("addVariable", lambda w, t: w.graph.addVariable(t, [4], "bad"), ("element type",)),
        ("addConstant", lambda w, t: w.graph.addConstant(t, [2], 1, "bad"), ("element type",)),
        ("clone", lambda w, t: w.graph.clone(t, w.t), ("element type",)),
        ("reinterpret", lambda w, t: w.t.reinterpret(t), ("element type",)),
        ("fifo", lambda w, t: w.graph.addHostToDeviceFIFO("in", t, 4), ("element type",)),
    ]
    for name, call, culprit in entries:
        for k, t in enumerate(BAD_TYPES):
            yield Case(f"type-{name}-{k}", culprit, lambda w, c=call, t=t: c(w, t))


def _values(rng: random.Random) -> Iterator[Case]:
    for k, v in enumerate(BAD_VALUES):
        yield Case(f"values-constant-{k}", ("'c'",),
                   lambda w, v=v: w.graph.addConstant(poplar.FLOAT, [2], v, "c"))
        yield Case(f"values-initial-{k}", ("'y'",), lambda w, v=v: w.graph.setInitialValue(w.y, v))
        yield Case(f"values-connect-{k}", ("field 'x'",),
                   lambda w, v=v: w.graph.addVertex(w.cs, "Copy", {"x": v, "y": w.t[1]}))


def _mappings(rng: random.Random) -> Iterator[Case]:
    for k, m in enumerate(BAD_TILES):
        yield Case(f"mapping-tensor-{k}", ("'t'",), lambda w, m=m: w.graph.setTileMapping(w.t, m))
        if not isinstance(m, list):
            yield Case(f"mapping-vertex-{k}", ("Copy",), lambda w, m=m: w.graph.setTileMapping(w.v, m))


def _views(rng: random.Random) -> Iterator[Case]:
    calls: list[tuple[str, Callable[[World, Any], Any]]] = [
        ("index", lambda w, x: w.t[x]), ("slice-begin", lambda w, x: w.t.slice(x, 2)),
        ("slice-end", lambda w, x: w.t.slice(0, x)), ("slice-dim", lambda w, x: w.t.slice(0, 1, x)),
        ("broadcast-n", lambda w, x: w.t.broadcast(x, 0)),
        ("broadcast-dim", lambda w, x: w.t.broadcast(2, x)),
        ("upsample", lambda w, x: w.t.upsample(x, 0)), ("subSample", lambda w, x: w.t.subSample(x, 0)),
        ("reverse", lambda w, x: w.t.reverse(x)), ("dim", lambda w, x: w.t.slice(0, 1, x)),
        ("flatten", lambda w, x: w.t.flatten(x, 2)), ("pyslice", lambda w, x: w.t[x:3]),
    ]
    for name, call in calls:
        for k, x in enumerate(BAD_INTS):
            if (name == "index" and isinstance(x, list)) or (name in ("flatten", "pyslice") and x is None):
                continue  # (legal: None is the default there; an index list is another error)
            yield Case(f"view-{name}-{k}", ("'t'",), lambda w, c=call, x=x: c(w, x))
    for k in range(5):
        n = rng.choice([10**9, 10**10, 3 * 10**9])
        yield Case(f"view-huge-{k}", ("'t'", "tile memory"), lambda w, n=n: w.t.broadcast(n, 0))
        yield Case(f"variable-huge-{k}", ("'huge'", "tiles"),
                   lambda w, n=n: w.graph.addVariable(poplar.FLOAT, [n, 8], "huge"))
    junk: list[Any] = [3, "t", None, [1, 2], np.zeros(3)]
    for k, x in enumerate(junk):
        yield Case(f"concat-{k}", ("item 1",), lambda w, x=x: poplar.concat([w.y, x]))


def _foreign(rng: random.Random) -> Iterator[Case]:
    calls: list[tuple[str, Callable[[World], Any]]] = [
        ("addVertex-tensor", lambda w: w.graph.addVertex(w.cs, "Copy", {"x": w.o, "y": w.y})),
        ("addVertex-cs", lambda w: w.graph.addVertex(w.ocs, "Copy")),
        ("connect-field", lambda w: w.graph.connect(w.ov["x"], w.y)),

        ("map-vertex", lambda w: w.graph.setTileMapping(w.ov, 0)),
        ("map-tensor", lambda w: w.graph.setTileMapping(w.o, 0)),
        ("host-write", lambda w: w.graph.createHostWrite("w", w.o)),
        ("host-read", lambda w: w.graph.createHostRead("r", w.o)),
        ("initial", lambda w: w.graph.setInitialValue(w.o, [1, 2, 3])),
        ("clone", lambda w: w.graph.clone(w.o)),
        ("perf", lambda w: w.graph.setPerfEstimate(w.ov, 5)),
        ("field-size", lambda w: w.graph.setFieldSize(w.ov["x"], 3)),
        ("concat", lambda w: poplar.concat([w.y, w.o])),
    ]
    for name, call in calls:
        yield Case(f"foreign-{name}", ("another graph",) if name != "addVertex-cs" else ("compute set",),
                   call)
    yield Case("foreign-connect-tensor", ("field 'x'", "another graph"),
               lambda w, v: w.graph.connect(v["x"], w.o), prepare=lambda w: w.graph.addVertex(w.cs, "Copy"))


def _programs(rng: random.Random) -> Iterator[Case]:
    def engine(w: World, p: prog.Program) -> None:
        poplar.Engine(w.graph, p)

    def self_seq(w: World) -> None:
        s = prog.Sequence(name="selfish")
        s.add(prog.Repeat(2, s))
        engine(w, s)

    def self_call(w: World) -> prog.Program:
        body = prog.Sequence()
        f = w.graph.addFunction(body)
        body.add(prog.Call(f))
        return prog.Call(f)

    yield Case("program-recursive-sequence", ("'selfish'", "itself"), self_seq)
    wrong = poplar.InvalidArgumentError  # a program given something of the wrong kind
    yield Case("program-recursive-function", ("function 0", "itself"), engine, prepare=self_call)
    yield Case("program-foreign-execute", ("'ocs'", "another graph"),
               lambda w: engine(w, prog.Execute(w.ocs)))
    for k, x in enumerate(BAD_INTS):
        yield Case(f"program-repeat-{k}", ("Repeat count",),
                   lambda w, x=x: prog.Repeat(x, prog.Sequence()), error=wrong)
    junk: list[Any] = [None, 3, "p", 2.5, [prog.Sequence(), 1]]
    for k, x in enumerate(junk):
        yield Case(f"program-sequence-{k}", ("Sequence",), lambda w, x=x: prog.Sequence([prog.Sequence(), x]),
                   error=wrong)
        yield Case(f"program-execute-{k}", ("Execute",), lambda w, x=x: prog.Execute(x), error=wrong)
        yield Case(f"program-if-{k}", ("If",), lambda w, x=x: prog.If(x, prog.Sequence()),
                   error=wrong if not isinstance(x, list) else poplar.PoplarError)
        yield Case(f"program-copy-{k}", ("Copy",), lambda w, x=x: prog.Copy(w.y, x), error=wrong)
        yield Case(f"program-print-{k}", ("PrintTensor",), lambda w, x=x: prog.PrintTensor("title", x),
                   error=wrong)
    yield Case("program-copy-type", ("'t[0]'", "'i[:3]'"), lambda w: prog.Copy(w.t[0], w.i[:3]))
    yield Case("program-copy-size", ("'y'",), lambda w: prog.Copy(w.t, w.y))


CODELETS: dict[str, tuple[str, tuple[str, ...]]] = {
    # name: (compute body, culprit); each is compiled, so run apart (LLVM could crash)
    "set": ("s = {1, 2}", ()),
    "unassigned": ("if self.x[0] > 0.0:\n    t = 1.0\nself.out = t", ("'t'",)),
    "unassigned-loop": ("for v in self.x:\n    t = v\nself.out = t", ("'t'",)),
    "unassigned-carried": ("s = 0.0\nfor v in self.x:\n    s += t\n    t = v\nself.out = s", ("'t'",)),
    "import": ("import os", ()),
    "lambda": ("f = lambda: 1\nself.out = f()", ()),
    "string": ("self.out = len('abc')", ()),
    "unknown-attr": ("self.out = self.nothing", ("nothing",)),
    "unknown-call": ("self.out = frobnicate(1.0)", ("frobnicate",)),
    "try": ("try:\n    self.out = 1.0\nexcept Exception:\n    pass", ()),
    "with": ("with open('x'):\n    pass", ()),
    "global": ("global G\nG = 1", ()),
    "list": ("xs = [1, 2]\nself.out = xs[0]", ()),
    "dict": ("d = {}\nself.out = 1.0", ()),
    "yield": ("yield 1", ()),
    "assign-input": ("self.x[0] = 1.0", ("'x'",)),
    "bad-field-type": ("self.out = self.x", ()),
    "class-def": ("class A:\n    pass", ()),
    "nonlocal-def": ("def g():\n    return 1\nself.out = g()", ()),
    "starred": ("a, *b = 1, 2, 3", ()),
    "del": ("s = 1.0\ndel s", ()),
    "walrus": ("self.out = (k := 2.0)", ()),
    "fstring": ("s = f'{self.out}'", ()),
}


def _codelet(tmp: Path, body: str) -> Path:
    """A codelet file whose compute is ``body``."""
    source = textwrap.dedent("""
        from poplar_py import Input, Output, Vector, Vertex

        class Bad(Vertex):
            x: Input[Vector[float]]
            out: Output[float]

            def compute(self):
        """) + textwrap.indent(body, " " * 8) + "\n"
    path = tmp / f"bad_{abs(hash(body))}.py"
    path.write_text(source)
    return path


def _codelets(rng: random.Random) -> Iterator[Case]:
    for name, (body, culprit) in CODELETS.items():
        yield Case(f"codelet-{name}", ("bad_", ".py:", *culprit),
                   lambda w, b=body: w.graph.addCodelets(str(_codelet(w.tmp, b))), isolated=True)
    files = {"cpp": ("x.cpp", "class V : public poplar::Vertex {};", ("x.cpp:1", "poplar")),
             "txt": ("x.txt", "hello", ("x.txt", ".py")),
             "syntax": ("syn.py", "class A(:\n", ("syn.py:1", "syntax")),
             "raises": ("rai.py", "raise ValueError('boom')\n", ("rai.py", "boom")),
             "async": ("asy.py", "from poplar_py import Vertex\nclass A(Vertex):\n"
                       "    async def compute(self):\n        pass\n", ("asy.py:3", "async")),
             "no-vertex": ("empty.py", "X = 1\n", ("empty.py", "no Vertex"))}
    for name, (file, text, culprit) in files.items():
        def add(w: World, file: str = file, text: str = text) -> None:
            (w.tmp / file).write_text(text)
            w.graph.addCodelets(str(w.tmp / file))

        yield Case(f"addCodelets-{name}", culprit, add)
    for k, bad in enumerate([None, 5, 2.5, Copy(), dict, [Copy, 3], b"x.py"]):
        yield Case(f"addCodelets-arg-{k}", ("addCodelets",), lambda w, b=bad: w.graph.addCodelets(b))


RUNTIME = {
    # index expressions that go out of bounds at run time; the engine must raise VertexError
    "past-end": "self.x[len(self.x)]", "negative": "self.x[-1 - len(self.x)]", "far": "self.x[10**6]",
    "loop": "self.x[i + 1]", "computed": "self.x[(i * 7) % 5 + len(self.x)]",
}


def _runtime(rng: random.Random) -> Iterator[Case]:
    for name, expr in RUNTIME.items():
        body = f"s = 0.0\nfor i in range(len(self.x)):\n    s += {expr}\nself.out = s"
        for mode in ("native", "interpreter"):

            def action(w: World, body: str = body, mode: str = mode) -> None:
                g = poplar.Graph(w.device)
                g.addCodelets(str(_codelet(w.tmp, body)))
                x = g.addVariable(poplar.FLOAT, [5], "xs")
                out = g.addVariable(poplar.FLOAT, [], "out")
                g.setTileMapping(x, 1)
                g.setTileMapping(out, 1)
                cs = g.addComputeSet("oob")
                g.setTileMapping(g.addVertex(cs, "Bad", {"x": x, "out": out}), 1)
                engine = poplar.Engine(g, prog.Execute(cs), {"codelets.mode": mode})
                engine.load(w.device)
                engine.run()

            yield Case(f"runtime-{name}-{mode}", ("Bad", "field 'x'", "tile 1"), action, isolated=True)


def _engine(rng: random.Random) -> Iterator[Case]:
    def built(w: World) -> poplar.Engine:
        w.graph.createHostWrite("w", w.y)
        w.graph.createHostRead("r", w.y)
        engine = poplar.Engine(w.graph, prog.Execute(w.cs))
        engine.load(w.device)
        return engine

    options: list[tuple[Any, tuple[str, ...]]] = [
        (["a"], ("options",)), ("codelets.mode", ("options",)), ({1: "x"}, ("names",)),
        ({"codelet.fastMath": "true"}, ("codelets.fastMath",)),
        ({"codelets.mode": "jit"}, ("codelets.mode",)),
        ({"codelets.checkBounds": "maybe"}, ("codelets.checkBounds",)),
        ({"codelets.mode": None}, ("codelets.mode",)),
        ({"autoReport.executionProfileProgramRunCount": "-1"}, ("RunCount",)),
        ({"target.deterministicWorkers": "sometimes"}, ("deterministicWorkers",))]
    for k, (opts, culprit) in enumerate(options):
        yield Case(f"engine-options-{k}", culprit,
                   lambda w, o=opts: poplar.Engine(w.graph, prog.Sequence(), o))
    for k, x in enumerate(BAD_INTS + [-1, 5]):
        yield Case(f"engine-run-{k}", ("run",) if k < len(BAD_INTS) else ("program",),
                   lambda w, e, x=x: e.run(x), prepare=built)
    junk: list[Any] = [None, "abc", [None, 1.0], object(), np.zeros(2, np.float32), np.zeros(3, complex)]
    for k, x in enumerate(junk):
        yield Case(f"engine-write-{k}", ("'w'",), lambda w, e, x=x: e.writeTensor("w", x), prepare=built)
    for k, x in enumerate([None, 3, "nope"]):
        yield Case(f"engine-read-{k}", ("handle",), lambda w, e, x=x: e.readTensor(x), prepare=built)
        yield Case(f"engine-connect-{k}", ("stream",), lambda w, e, x=x: e.connectStream(x, np.zeros(3)),
                   prepare=built)
        yield Case(f"engine-load-{k}", ("load",), lambda w, e, x=x: e.load(x), prepare=built)
    for k, x in enumerate([None, 3, "graph"]):
        yield Case(f"engine-graph-{k}", ("Engine",), lambda w, x=x: poplar.Engine(x, prog.Sequence()))


def _poplibs(rng: random.Random) -> Iterator[Case]:
    def ready(w: World) -> dict[str, Any]:
        for lib in (popops, poplin, poprand):
            lib.addCodelets(w.graph)
        seed = w.graph.addVariable(poplar.UNSIGNED_INT, [2], "seed")
        w.graph.setTileMapping(seed, 0)
        return {"seq": prog.Sequence(), "seed": seed}

    bad: list[Any] = [None, 3, "t", np.eye(3, dtype=np.float32)]
    f32, add, total = poplar.FLOAT, popops.expr.Add(popops.expr._1, popops.expr._2), popops.Operation.ADD
    calls: list[tuple[str, Callable[..., Any], tuple[str, ...]]] = [
        ("matMul-a", lambda w, r, x: poplin.matMul(w.graph, x, w.t, r["seq"]), ("matMul: A",)),
        ("matMul-b", lambda w, r, x: poplin.matMul(w.graph, w.t, x, r["seq"]), ("matMul: B",)),
        ("add", lambda w, r, x: popops.add(w.graph, w.t, "n" if x is None else x, r["seq"]), ("operand 1",)),
        ("map", lambda w, r, x: popops.map(w.graph, add, [w.t, x], r["seq"]), ("input 1",)),
        ("reduce", lambda w, r, x: popops.reduce(w.graph, x, [0], total, r["seq"]), ("input",)),
        ("fill", lambda w, r, x: popops.fill(w.graph, x, r["seq"], 1.0), ("fill",)),
        ("cast", lambda w, r, x: popops.cast(w.graph, x, poplar.HALF, r["seq"]), ("source",)),
        ("uniform-ref", lambda w, r, x: poprand.uniform(w.graph, r["seed"], 0, x, f32, 0.0, 1.0, r["seq"]),
         ("uniform",)),
    ]
    for name, call, culprit in calls:
        for k, x in enumerate(bad):
            if name == "add" and k == 1:
                continue  # (a number is a legal operand)
            yield Case(f"poplibs-{name}-{k}", culprit, lambda w, r, c=call, x=x: c(w, r, x), prepare=ready)
        yield Case(f"poplibs-{name}-foreign", ("another graph",), lambda w, r, c=call: c(w, r, w.o),
                   prepare=ready)
    numbers: list[tuple[str, Callable[..., Any]]] = [
        ("fill-value", lambda w, r, x: popops.fill(w.graph, w.t, r["seq"], x)),
        ("uniform-min", lambda w, r, x: poprand.uniform(w.graph, r["seed"], 0, w.t, f32, x, 1.0, r["seq"])),
        ("normal-std", lambda w, r, x: poprand.normal(w.graph, r["seed"], 0, w.t, f32, 0.0, x, r["seq"])),
        ("bernoulli-p", lambda w, r, x: poprand.bernoulli(w.graph, r["seed"], 0, w.t, f32, x, r["seq"])),
        ("reduce-dims", lambda w, r, x: popops.reduce(w.graph, w.t, [x], total, r["seq"])),
    ]
    for name, call in numbers:
        for k, x in enumerate(["1", None, [1.0], b"x"]):
            yield Case(f"poplibs-{name}-{k}", (), lambda w, r, c=call, x=x: c(w, r, x), prepare=ready)
    yield Case("poplibs-reduce-prog", ("Sequence",),
               lambda w, r: popops.reduce(w.graph, w.t, [0], popops.Operation.ADD, "seq"), prepare=ready)


def _extensions(rng: random.Random) -> Iterator[Case]:
    """Virtual graphs, executables and stream callbacks."""
    bad_views: list[tuple] = [(2.5,), (None,), ([1, 1],), ([0, 99],), (9,), (3, 1), ("a", 2), (0, 2, 3),
                              ([],)]
    for k, args in enumerate(bad_views):
        yield Case(f"virtual-args-{k}", ("createVirtualGraph",),
                   lambda w, a=args: w.graph.createVirtualGraph(*a))
    yield Case("virtual-tile", ("tile 2",),
               lambda w, v: v.setTileMapping(w.y, 2), prepare=lambda w: w.graph.createVirtualGraph(0, 2))
    noise = bytes(rng.randrange(256) for _ in range(200))
    for k, junk in enumerate([b"", b"POPLAR_PY_EXECUTABLE\n", b"\x7fELF" * 10, noise]):
        def load(w: World, data: bytes = junk) -> None:
            (w.tmp / "bad.exe").write_bytes(data)
            poplar.Executable.deserialize(w.tmp / "bad.exe")

        yield Case(f"executable-file-{k}", ("bad.exe",), load)
    yield Case("executable-graph", ("compileGraph",), lambda w: poplar.compileGraph(None, prog.Sequence()))

    def twice(w: World) -> tuple:
        exe = poplar.compileGraph(w.graph, prog.Execute(w.cs))
        return exe, poplar.Engine(exe)

    yield Case("executable-twice", ("already built",), lambda w, r: poplar.Engine(r[0]), prepare=twice)

    def streamed(w: World) -> poplar.Engine:
        w.graph.addHostToDeviceFIFO("in", poplar.FLOAT, 3)
        s = w.graph.addHostToDeviceFIFO("in2", poplar.FLOAT, 3)
        engine = poplar.Engine(w.graph, prog.Copy(s, w.y))
        engine.load(w.device)
        return engine

    for k, end in enumerate([-1, 99, 2.5, "3"]):
        yield Case(f"stream-end-{k}", ("'in'", "end"),
                   lambda w, e, x=end: e.connectStream("in", np.zeros(8, np.float32), x), prepare=streamed)
    for k, cb in enumerate([3, "f", None, np.zeros(3)]):
        yield Case(f"stream-callback-{k}", ("'in'",), lambda w, e, x=cb: e.connectStreamToCallback("in", x),
                   prepare=streamed)

    class BadPrefetch(poplar.StreamCallback):
        def fetch(self, p: np.ndarray) -> None:
            p[:] = 1.0

        def prefetch(self, p: np.ndarray) -> Any:
            return True

    def bad_prefetch(w: World) -> Any:
        w.graph.addHostToDeviceFIFO("in", poplar.FLOAT, 3)
        return w.graph.addHostToDeviceFIFO("in2", poplar.FLOAT, 3)

    yield Case("stream-prefetch-result", ("'in2'", "prefetch"),
               lambda w, s: _prefetch_run(w, s, BadPrefetch()), prepare=bad_prefetch)


def _prefetch_run(w: World, stream: Any, callback: Any) -> None:
    options = {"exchange.streamBufferOverlap": "none"}
    engine = poplar.Engine(w.graph, prog.Repeat(2, prog.Copy(stream, w.y)), options)
    engine.load(w.device)
    engine.connectStreamToCallback("in2", callback)
    engine.run()


def _wrong_kinds(rng: random.Random) -> Iterator[Case]:
    """Arguments of the wrong kind to every public call: each an InvalidArgumentError naming it."""
    junk: list[Any] = [None, object(), 2.5, [object()], b"x", np.zeros(2)]
    names: list[Any] = [None, object(), 2.5, ["a"], b"x", 3]  # where a string (a handle, a name) is due
    f32 = poplar.FLOAT

    def engine(w: World) -> poplar.Engine:
        w.graph.createHostRead("r", w.y)
        w.graph.addHostToDeviceFIFO("in", f32, 3)
        e = poplar.Engine(w.graph, prog.Execute(w.cs))
        e.load(w.device)
        return e

    def seq(w: World) -> dict[str, Any]:
        for lib in (popops, poplin, popnn):
            lib.addCodelets(w.graph)
        return {"seq": prog.Sequence()}

    calls: list[tuple[str, Callable[..., Any], tuple[str, ...], list[Any], Callable[[World], Any] | None]] = [
        ("slices", lambda w, x: w.t.slices(x), ("'t'", "slices"), [None, 2.5, object(), b"x"], None),
        ("slices-item", lambda w, x: w.t.slices([0, x]), ("'t'", "slices"),
         [None, 2.5, (1,), [object()], "ab", (0, 1.5)], None),
        ("slices-dim", lambda w, x: w.t.slices([(0, 1)], x), ("'t'", "dim"), junk, None),
        ("index", lambda w, x: w.t.index(x), ("'t'", "index"), junk[:4], None),
        ("intersects", lambda w, x: w.t.intersectsWith(x), ("'t'", "intersectsWith"), junk, None),
        ("interval", lambda w, x: poplar.Interval(x, 2), ("Interval",), junk, None),
        ("getVariable", lambda w, x: w.graph.getVariable(x), ("getVariable",), junk, None),
        ("isConstant", lambda w, x: w.graph.isConstant(x), ("isConstant",), junk, None),
        ("hasCodelet", lambda w, x: w.graph.hasCodelet(x), ("hasCodelet",), names, None),
        ("estimator-type", lambda w, x: w.graph.registerPerfEstimator(x, len), ("registerPerfEstimator",),
         names, None),
        ("estimator", lambda w, x: w.graph.registerPerfEstimator("Copy", x), ("registerPerfEstimator",),
         junk, None),
        ("fifo-handle", lambda w, x: w.graph.addHostToDeviceFIFO(x, f32, 3),
         ("addHostToDeviceFIFO", "handle"), names, None),
        ("read-handle", lambda w, x: w.graph.createHostRead(x, w.y), ("createHostRead", "handle"), names,
         None),
        ("addFunction", lambda w, x: w.graph.addFunction(x), ("addFunction",), junk, None),
        ("field-name", lambda w, x: w.v[x], ("Copy", "field"), names, None),
        ("field-index", lambda w, x: w.v["x"][x], ("field 'x'",), junk, None),
        ("addVertex-cs", lambda w, x: w.graph.addVertex(x, "Copy"), ("addVertex", "ComputeSet"), junk, None),
        ("setTileMapping", lambda w, x: w.graph.setTileMapping(x, 0), ("setTileMapping",), junk, None),
        ("getTileMapping", lambda w, x: w.graph.getTileMapping(w.t, x), ("requireComplete",), junk, None),
        ("switch-cases", lambda w, x: prog.Switch(w.i[0], x), ("Switch",), [object(), 2.5, b"x", [3], [(1,)]],
         None),
        ("print-title", lambda w, x: prog.PrintTensor(x, w.y), ("PrintTensor",), [object(), 2.5, b"x"], None),
        ("virtual-device", lambda w, x: w.device.createVirtualDevice(x), ("tilesPerIPU",), junk, None),
        ("ipu-target", lambda w, x: poplar.Target.createIPUTarget(x), ("numIPUs",), junk, None),
        ("ipu-version", lambda w, x: poplar.IPUModel(x), ("IPU version",), junk[1:], None),
        ("getDevice", lambda w, x: poplar.DeviceManager().getDevice(x), ("deviceManagerId",), junk, None),
        ("getDevices", lambda w, x: poplar.DeviceManager().getDevices(poplar.TargetType.IPU, x),
         ("requiredNumIPUs",), junk, None),
        ("dump", lambda w, x: w.graph.outputVertexGraph(x), ("outputVertexGraph",), junk, None),
        ("serialize", lambda w, x: w.graph.serialize(io.StringIO(), x), ("serialize",), junk[1:], None),
        ("exe-serialize", lambda w, x: poplar.compileGraph(w.graph, prog.Sequence()).serialize(x),
         ("Executable.serialize",), junk, None),
        ("engine-progress", lambda w, x: poplar.Engine(w.graph, prog.Sequence(), None, x), ("Engine",),
         junk[1:], None),
        ("engine-name", lambda w, x: poplar.Engine(w.graph, prog.Sequence(), None, None, x), ("Engine",),
         junk[1:], None),
        ("summary-file", lambda w, e, x: e.printProfileSummary(x), ("printProfileSummary",), junk[1:],
         engine),
        ("summary-options", lambda w, e, x: e.printProfileSummary(io.StringIO(), x), ("printProfileSummary",),
         junk[1:], engine),
        ("print-stream", lambda w, e, x: e.setPrintTensorStream(x), ("setPrintTensorStream",), junk, engine),
        ("read-out", lambda w, e, x: e.readTensor("r", x), ("'r'", "out"), junk[1:5], engine),
        ("connect-array", lambda w, e, x: e.connectStream("in", x), ("'in'",), junk[:5], engine),
        ("write-handle", lambda w, e, x: e.writeTensor(x, np.zeros(3, np.float32)), ("handle",), names,
         engine),
        ("relu", lambda w, r, x: popnn.relu(w.graph, x, r["seq"]), ("relu",), junk, seq),
        ("sort", lambda w, r, x: popops.sort(w.graph, x, 0, r["seq"]), ("sort",), junk, seq),
        ("sort-dim", lambda w, r, x: popops.sort(w.graph, w.t, x, r["seq"]), ("sort", "dim"), junk, seq),
        ("sort-prog", lambda w, r, x: popops.sort(w.graph, w.t, 0, x), ("sort", "Sequence"), junk, seq),
        ("matMul-prog", lambda w, r, x: poplin.matMul(w.graph, w.t, w.t.transpose(), x), ("Sequence",), junk,
         seq),
        ("mapWithOutput", lambda w, r, x: popops.addWithOutput(w.graph, w.t, w.t, x, r["seq"]), ("out",),
         junk, seq),
        ("cast-src", lambda w, r, x: popops.castWithOutput(w.graph, x, w.t, r["seq"]), ("cast", "source"),
         junk, seq),
        ("argMax", lambda w, r, x: popnn.argMax(w.graph, x, r["seq"]), ("argMax",), junk, seq),
        ("linear-grain", lambda w, r, x: poputil.mapTensorLinearly(w.graph, w.t, 1, x), ("grainSize",),
         junk[1:], seq),
    ]
    for name, call, culprit, values, prepare in calls:
        for k, x in enumerate(values):
            action = (lambda w, c=call, x=x: c(w, x)) if prepare is None else \
                (lambda w, r, c=call, x=x: c(w, r, x))
            yield Case(f"kind-{name}-{k}", culprit, action, prepare=prepare,
                       error=poplar.InvalidArgumentError)


GENERATORS = [_shapes, _types, _values, _mappings, _views, _foreign, _programs, _codelets, _runtime, _engine,
              _poplibs, _extensions, _wrong_kinds]


def cases() -> list[Case]:
    """Every case, generated from SEED (the same list on every run)."""
    rng = random.Random(SEED)
    out = [c for gen in GENERATORS for c in gen(rng)]
    names = [c.name for c in out]
    assert len(set(names)) == len(names), "case names must be unique"
    return out


def main(names: list[str]) -> None:
    """Run the named cases in this process, one result line each (flushed: a crash shows where)."""
    by_name = {c.name: c for c in cases()}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            print(f"START {name}", flush=True)
            problem = check(by_name[name], Path(tmp))
            print(f"OK {name}" if problem is None else f"FAIL {name} {problem!r}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
