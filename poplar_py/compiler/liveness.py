"""Pass: when each variable is live, as intervals of program points.

Every leaf program (Copy, Execute, PrintTensor, WriteUndef, a stream copy, a predicate read)
and every join of control flow (Sequence, Repeat, RepeatWhile, If, Switch, Call) is a
program point, numbered as the programs are walked, so every program covers one interval of
points. A variable occupies memory at the points where it is read, written or live after;
those points are found per variable as a few intervals by :mod:`live_ranges` (backward
dataflow over the program tree: a write kills a life only when it covers the whole variable,
and WriteUndef ends one; a function's body is shared by its calls). The engine's programs
run in any order, any number of times, so a variable read before it is written in any of
them stays live from one run to the next.

A variable is *always live* when it is a constant, has an initial value, a host handle or a
stream copy, is live where a program begins, or is never used by a program. Any other
variable occupies memory only in its intervals: variables whose intervals do not meet may
share tile memory (the layout packs them, :mod:`layout`). The points are also the nodes of a
networkx control-flow graph, whose depth-first order is the order of the liveness chart.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import networkx as nx
import numpy as np

from .. import program as prog
from ..handles import DataStream, RemoteBuffer
from ..ir import GraphIR
from ..regions.arrays import expand_ranges, union_grouped, unique_sorted
from ..regions.runs import Runs
from ..tensor import Tensor
from ..vertex import Direction
from .live_ranges import NO_EVENTS, Branch, Call, Events, Leaf, Loop, Region, Solver, While, find, var_union

_I64 = np.int64
_NONE = np.zeros(0, _I64)


@dataclass(frozen=True)
class Liveness:
    """Per variable: always live, or the intervals of program points where it occupies memory
    (``bounds[v]:bounds[v + 1]`` of ``lo``/``hi``, sorted and disjoint); the steps (leaf
    programs and predicate reads) as points, in program order, with their labels."""

    always: np.ndarray  # bool per variable
    bounds: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    steps: np.ndarray  # the point of each step
    labels: tuple[str, ...]  # each step's label

    def interfere(self, a: int, b: int) -> bool:
        """Whether two variables that are not always live may need memory at the same time."""
        return bool(self.meets(a, np.asarray([b], _I64))[0])

    def meets(self, var: int, others: np.ndarray) -> np.ndarray:
        """Whether ``var``'s intervals meet those of each of ``others``."""
        a, b = self.bounds[var], self.bounds[var + 1]
        owner, k = expand_ranges(self.bounds[others], self.bounds[others + 1] - self.bounds[others])
        lo, hi = self.lo[a:b], self.hi[a:b]
        if not lo.size or not k.size:
            return np.zeros(others.size, bool)
        j = np.minimum(np.searchsorted(hi, self.lo[k], side="right"), lo.size - 1)  # first ending after
        hit = (lo[j] < self.hi[k]) & (hi[j] > self.lo[k])
        return np.bincount(owner[hit], minlength=others.size) > 0

    def interval_counts(self, variables: np.ndarray) -> np.ndarray:
        """How many intervals each variable's life has."""
        return self.bounds[variables + 1] - self.bounds[variables]

    def hulls(self, variables: np.ndarray) -> np.ndarray:
        """``[2, n]``: where the first interval of each variable starts and its last ends
        (``0, 0`` for a variable with none)."""
        a, b = self.bounds[variables], self.bounds[variables + 1]
        some = b > a
        if not some.any():
            return np.zeros((2, variables.size), _I64)
        return np.stack((np.where(some, self.lo[np.minimum(a, self.lo.size - 1)], 0),
                         np.where(some, self.hi[np.maximum(b - 1, 0)], 0)))

    def meet(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Pairwise, whether the intervals of variables ``a[k]`` and ``b[k]`` meet."""
        owner, k = expand_ranges(self.bounds[a], self.bounds[a + 1] - self.bounds[a])
        if not k.size:
            return np.zeros(a.size, bool)
        span = int(self.hi.max()) + 1
        counts = np.diff(self.bounds)
        key = np.repeat(np.arange(counts.size, dtype=_I64), counts) * span + self.hi  # sorted
        other = b[owner]
        j = np.searchsorted(key, other * span + self.lo[k], side="right")  # first of b's ending after
        hit = j < self.bounds[other + 1]
        hit[hit] = self.lo[j[hit]] < self.hi[k[hit]]
        return np.bincount(owner[hit], minlength=a.size) > 0

    def over_steps(self, var_bytes: np.ndarray) -> dict:
        """The device's always-live bytes and, at each step, its not-always-live bytes (each
        variable's ``var_bytes``), with the peak: the report's liveness chart."""
        counts = np.diff(self.bounds)
        var = np.repeat(np.arange(counts.size), counts)
        size = np.where(self.always[var], 0, var_bytes[var]).astype(_I64)
        points = max(int(self.hi.max(initial=0)), int(self.steps.max(initial=0))) + 1
        change = np.bincount(self.lo, weights=size, minlength=points) - np.bincount(self.hi, weights=size,
                                                                                   minlength=points)
        live = np.cumsum(change).astype(_I64)[self.steps] if self.steps.size else np.zeros(0, _I64)
        peak = int(np.argmax(live)) if live.size else 0
        always = int(var_bytes[self.always].sum())
        return {"steps": list(self.labels), "alwaysLive": [always] * live.size,
                "notAlwaysLive": live.tolist(), "peak": always + (int(live[peak]) if live.size else 0),
                "peakStep": peak}


class _Builder:
    """Walks the programs: the program tree of regions (what :mod:`live_ranges` solves), the
    control-flow graph of its points (for their order), each leaf's accesses."""

    def __init__(self, graph: GraphIR, fixed: np.ndarray) -> None:
        self.graph = graph
        self.fixed = fixed  # variables always live whatever the programs do
        self.cfg = nx.DiGraph()
        self.labels: list[str | None] = []  # per point: a step's label, None for a join
        self.calls: list[tuple[int, int, int]] = []  # (function, call point, after point)
        self.callees: set[int] = set()  # functions called by what is being built
        self.events: dict[object, Events] = {}  # per compute set or leaf program

    def point(self, label: str | None = None) -> int:
        self.labels.append(label)
        n = len(self.labels) - 1
        self.cfg.add_node(n)
        return n

    def chain(self, a: int, b: int) -> None:
        self.cfg.add_edge(a, b)

    def region(self, p: prog.Program) -> tuple[Region, int, int]:
        """``p`` as a region, with its entry and exit points."""
        r = Region(len(self.labels))
        entry, exit_ = self.build(p, r)
        r.hi = len(self.labels)
        return r, entry, exit_

    def build(self, p: prog.Program, r: Region) -> tuple[int, int]:
        """Add ``p``'s points and items to ``r``: its (entry, exit) points."""
        lo = len(self.labels)
        if isinstance(p, prog.Sequence):
            first = last = self.point()
            for child in p.programs:
                a, b = self.build(child, r)
                self.chain(last, a)
                last = b
            return first, last
        if isinstance(p, prog.Repeat):
            entry, out = self.point(), self.point()
            body, a, b = self.region(p.body)
            self.chain(entry, a if p.count else out)
            self.chain(b, a)
            self.chain(b, out)
            r.items.append(Loop(lo, len(self.labels), body, p.count > 0))
            return entry, out
        if isinstance(p, prog.RepeatWhileTrue):
            cond, c0, c1 = self.region(p.cond)
            test = self.test(p, p.predicate)
            body, a, b = self.region(p.body)
            out = self.point()
            self.chain(c1, test.lo)
            self.chain(test.lo, a)
            self.chain(b, c0)
            self.chain(test.lo, out)
            r.items.append(While(lo, len(self.labels), cond, test, body))
            return c0, out
        if isinstance(p, (prog.If, prog.Switch)):
            test = self.test(p, p.predicate if isinstance(p, prog.If) else p.control)
            out = self.point()
            branches = []
            for child in prog.children(p):
                branch, a, b = self.region(child)
                self.chain(test.lo, a)
                self.chain(b, out)
                branches.append(branch)
            r.items.append(Branch(lo, len(self.labels), test, branches))
            return test.lo, out
        if isinstance(p, prog.Call):
            call, after = self.point(), self.point()
            self.calls.append((p.function.id, call, after))
            self.callees.add(p.function.id)
            r.items.append(Call(lo, len(self.labels), p.function.id))
            return call, after
        n = self.point(prog.step_label(p))
        r.items.append(Leaf(n, self.leaf(p)))
        return n, n

    def test(self, p: prog.Program, scalar: Tensor) -> Leaf:
        """The point where control flow reads its predicate."""
        n = self.point(p.name)  # type: ignore[attr-defined]
        return Leaf(n, self.cached(id(p), lambda: self.accesses(use=self.vars_of(scalar.runs())[0])))

    def cached(self, key: object, make: Callable[[], Events]) -> Events:
        """A leaf's events, made once per compute set or program object however often it is placed."""
        found = self.events.get(key)
        if found is None:
            found = self.events[key] = make()
        return found

    def leaf(self, p: prog.Program) -> Events:
        if isinstance(p, prog.Execute):
            return self.cached(("cs", p.cs.id), lambda: self.compute_set(p.cs.id))
        if isinstance(p, prog.Copy) and (isinstance(p.src, RemoteBuffer) or isinstance(p.dst, RemoteBuffer)):
            return self.cached(id(p), lambda: self.remote_copy(p))
        if isinstance(p, (prog.Copy, prog.CrossReplicaCopy)):
            if isinstance(p.src, DataStream) or isinstance(p.dst, DataStream):
                return NO_EVENTS  # its tensor is always live
            src, dst = p.src, p.dst
            return self.cached(id(p), lambda: self.accesses(self.vars_of(src.runs())[0],
                                                            *self.vars_of(dst.runs())))
        if isinstance(p, prog.PrintTensor):
            return self.cached(id(p), lambda: self.accesses(self.vars_of(p.tensor.runs())[0]))
        if isinstance(p, prog.WriteUndef):
            return self.cached(id(p), lambda: self.accesses(kill=self.vars_of(p.tensor.runs())[1]))
        if isinstance(p, prog.HostFunctionCall):  # reads its inputs, writes its outputs
            ins, outs = Runs.concat([t.runs() for t in p.inputs]), Runs.concat([t.runs() for t in p.outputs])
            return self.cached(id(p), lambda: self.accesses(self.vars_of(ins)[0], *self.vars_of(outs)))
        if isinstance(p, prog.Abort) and p.predicate is not None:
            predicate = p.predicate
            return self.cached(id(p), lambda: self.accesses(self.vars_of(predicate.runs())[0]))
        return NO_EVENTS  # Sync, AssumeEqualAcrossReplicas, Abort

    def remote_copy(self, p: prog.Copy) -> Events:
        """A remote buffer copy reads its offset, and writes its tensor (from the buffer) or reads
        it (to the buffer): Streaming Memory is what lets a tensor be dead between uses."""
        offset = self.vars_of(p.offset.runs())[0] if p.offset is not None else _NONE
        if isinstance(p.src, RemoteBuffer):
            assert isinstance(p.dst, Tensor)
            return self.accesses(offset, *self.vars_of(p.dst.runs()))
        assert isinstance(p.src, Tensor)
        return self.accesses(var_union(offset, self.vars_of(p.src.runs())[0]))

    @staticmethod
    def accesses(use: np.ndarray = _NONE, define: np.ndarray = _NONE, kill: np.ndarray = _NONE) -> Events:
        var = var_union(use, define, kill)
        return Events(var, find(use, var)[0], find(define, var)[0], find(kill, var)[0])

    def vars_of(self, runs: Runs) -> tuple[np.ndarray, np.ndarray]:
        """(variables touched, variables written whole), sorted, leaving out the always-live
        ones and another graph's (lowering reports those)."""
        ok = (runs.var >= 0) & (runs.var < self.fixed.size)
        ok[ok] &= ~self.fixed[runs.var[ok]]
        touched = unique_sorted(runs.var[ok])
        return touched, touched[_distinct_elements(runs, ok, touched) >= self.graph.variables.sizes[touched]]

    def compute_set(self, cs: int) -> Events:
        """What a compute set's vertices read and write (a write kills a variable that the
        compute set's outputs cover whole and no vertex reads)."""
        e, v = self.graph.edges, self.graph.vertices
        if not 0 <= cs < len(self.graph.compute_sets):
            return NO_EVENTS  # another graph's compute set: lowering reports it
        rows = np.arange(e.cs_bounds[cs], e.cs_bounds[cs + 1])
        if not rows.size:
            return NO_EVENTS
        widest = max(len(c.fields) for c in v.classes)
        reading = np.zeros((len(v.classes), widest), dtype=bool)  # per class and field
        writing = np.zeros_like(reading)
        for c, cls in enumerate(v.classes):
            for f, spec in enumerate(cls.fields.values()):
                reading[c, f] = spec.direction in (Direction.INPUT, Direction.INOUT)
                writing[c, f] = spec.direction in (Direction.OUTPUT, Direction.INOUT)
        cls_of, field = v.cls[e.vertex[rows]], e.field[rows]
        use = self.vars_of(e.runs(rows[reading[cls_of, field]]))[0]
        define, covered = self.vars_of(e.runs(rows[writing[cls_of, field]]))
        return self.accesses(use, define, covered[~find(use, covered)[0]])


def _fixed(graph: GraphIR, programs: list[prog.Program]) -> np.ndarray:
    """Variables always live whatever the programs do: constants, initial values, host
    handles' and stream copies' tensors."""
    fixed = graph.variables.constant.copy()
    for var, _ in graph.initial:
        fixed[var] = True
    for handle in graph.host_handles.values():
        fixed[np.unique(handle.runs.var)] = True
    for p in prog.walk([*programs, *graph.functions]):
        if isinstance(p, prog.Copy):
            for end, other in ((p.src, p.dst), (p.dst, p.src)):
                if isinstance(end, DataStream) and not isinstance(other, DataStream):
                    var = other.runs().var
                    fixed[var[(var >= 0) & (var < fixed.size)]] = True
    return fixed


def analyse_liveness(graph: GraphIR, programs: list[prog.Program]) -> Liveness:
    """The pass: each variable's liveness over ``programs`` (the engine's) and the functions."""
    prog.check_acyclic(programs, graph.functions)  # a program that holds itself: ProgramError
    fixed = _fixed(graph, programs)
    b = _Builder(graph, fixed)
    entries = [b.region(p) for p in programs]
    functions, called = [], nx.DiGraph()  # called: callee -> caller
    for f, body in enumerate(graph.functions):
        b.callees = set()
        functions.append(b.region(body))
        called.add_node(f)
        called.add_edges_from((g, f) for g in b.callees if 0 <= g < len(graph.functions))
    for f, call, after in b.calls:
        if 0 <= f < len(functions):  # else another graph's function: lowering reports it
            b.chain(call, functions[f][1])
            b.chain(functions[f][2], after)
    for _, _, out in entries:  # runs follow each other in any order
        for _, entry, _ in entries:
            b.chain(out, entry)
    order = list(nx.topological_sort(called))
    after_points = {f: np.asarray(sorted(a for g, _, a in b.calls if g == f), _I64) for f in order}
    after_calls = {f: np.zeros(0, _I64) for f in order}
    while True:
        s = Solver(after_calls)
        for f in order:
            s.functions[f] = functions[f][0].summary(s)
        summaries = [region.summary(s) for region, _, _ in entries]
        for (region, _, _), summary in zip(entries, summaries):
            region.solve(s, summary.var, np.zeros(summary.var.size, bool))  # nothing live after a run
        for f in order:
            var = var_union(s.functions[f].var, after_calls[f])
            functions[f][0].solve_as(s, var, find(after_calls[f], var)[0], s.functions[f])
        var, lo, hi = s.intervals()
        grown = {f: var_union(after_calls[f], _stabbed(var, lo, hi, after_points[f])) for f in order}
        if all(grown[f].size == after_calls[f].size for f in order):
            break
        after_calls = grown
    nvars = len(graph.variables)
    always = fixed.copy()
    for summary in summaries:
        always[summary.var[summary.gen]] = True  # read before written: kept from one run to the next
    bounds = np.searchsorted(var, np.arange(nvars + 1))
    always |= np.diff(bounds) == 0  # never used: kept, as Poplar keeps it
    dfs = list(nx.dfs_preorder_nodes(b.cfg, entries[0][1])) if entries else []
    seen = set(dfs)
    dfs += [n for n in b.cfg.nodes if n not in seen]
    steps = [n for n in dfs if b.labels[n] is not None]
    return Liveness(always, bounds, lo, hi, np.asarray(steps, _I64), tuple(b.labels[n] for n in steps))


def _stabbed(var: np.ndarray, lo: np.ndarray, hi: np.ndarray, points: np.ndarray) -> np.ndarray:
    """The variables whose intervals hold one of the sorted ``points``."""
    hit = np.searchsorted(points, hi) > np.searchsorted(points, lo)
    return unique_sorted(var[hit])


def _distinct_elements(runs: Runs, ok: np.ndarray, variables: np.ndarray) -> np.ndarray:
    """How many distinct elements of each of ``variables`` (sorted) the runs where ``ok`` hold.

    A run is an arithmetic progression: those of one step and one residue are intervals of the
    quotient line, so their union is a sort (a transposed view's runs all share one step). A
    variable whose runs take several steps has its elements counted one by one."""
    single = (runs.count == 1) | (runs.stride == 0)
    count = np.where(single, 1, runs.count)[ok]
    step = np.where(single, 1, np.abs(runs.stride))[ok]
    first = np.where(runs.stride < 0, runs.offset + (runs.count - 1) * runs.stride, runs.offset)[ok]
    which = np.searchsorted(variables, runs.var[ok])
    if (step == 1).all():  # (most writes: consecutive elements)
        key, lo, hi = union_grouped(which, first, first + count)
        return np.bincount(key, weights=hi - lo, minlength=variables.size).astype(_I64)
    least, most = np.full(variables.size, np.iinfo(_I64).max), np.zeros(variables.size, _I64)
    np.minimum.at(least, which, step)
    np.maximum.at(most, which, step)
    mixed = (least != most)[which]
    one = ~mixed  # per (variable, residue): intervals of the quotient line
    width = int(most.max(initial=1))
    key, lo, hi = union_grouped(which[one] * width + first[one] % step[one], first[one] // step[one],
                                first[one] // step[one] + count[one])
    out = np.bincount(key // width, weights=hi - lo, minlength=variables.size).astype(_I64)
    if mixed.any():  # element by element
        owner, k = expand_ranges(np.zeros(int(mixed.sum()), _I64), count[mixed])
        elements = first[mixed][owner] + k * step[mixed][owner]
        span = int(elements.max()) + 1
        distinct = unique_sorted(which[mixed][owner] * span + elements)
        out += np.bincount(distinct // span, minlength=variables.size)
    return out
