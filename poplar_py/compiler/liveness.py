"""Pass: when each variable is live, from the programs' control-flow graph (networkx).

Every leaf program (Copy, Execute, PrintTensor, WriteUndef, a stream copy, a predicate read)
becomes a node of a directed graph with the variables it reads (``use``) and writes
(``define``); Sequence, Repeat, RepeatWhile, If, Switch and Call add the edges between them
(a function's body once, entered from every call and left to every call's successor). The
engine's programs run in any order, any number of times: every program's exit leads to
every program's entry. Backward dataflow over that graph gives the variables live after each
node; a write kills a life only when it covers the whole variable, and WriteUndef ends one.

A variable is *always live* when it is a constant, has an initial value, a host handle or a
stream copy, is live where a program begins (read before it is written, or kept from one
run to the next), or is never used by a program. Any other variable occupies memory only at
the nodes where it is read, written or live: variables whose nodes do not meet may share
tile memory (the layout packs them, :mod:`layout`).
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from .. import program as prog
from ..handles import DataStream
from ..ir import GraphIR
from ..regions import Runs, union
from ..vertex import Direction

_I64 = np.int64


@dataclass(frozen=True)
class Liveness:
    """Per variable: always live, or the bitmask (a Python int) of the program points where it
    occupies memory; ``points``: each point's label, in program order."""

    always: np.ndarray  # bool per variable
    occupied: tuple[int, ...]  # per variable: bit k set when it occupies memory at point k
    points: tuple[str, ...]
    steps: tuple[int, ...]  # the points that are steps (leaf programs and predicate reads), in order

    def interfere(self, a: int, b: int) -> bool:
        """Whether two variables that are not always live may need memory at the same time."""
        return bool(self.occupied[a] & self.occupied[b])

    def over_steps(self, var_bytes: np.ndarray) -> dict:
        """The device's always-live bytes and, at each step, its not-always-live bytes (each
        variable's ``var_bytes``), with the peak: the report's liveness chart."""
        live = np.zeros(len(self.steps), np.int64)
        for v in np.flatnonzero(~self.always).tolist():
            mask = self.occupied[v]
            at = [k for k, point in enumerate(self.steps) if mask >> point & 1]
            live[at] += int(var_bytes[v])
        peak = int(np.argmax(live)) if live.size else 0
        always = int(var_bytes[self.always].sum())
        return {"steps": [self.points[k] for k in self.steps], "alwaysLive": [always] * len(self.steps),
                "notAlwaysLive": live.tolist(), "peak": always + (int(live[peak]) if live.size else 0),
                "peakStep": peak}


@dataclass
class _Node:
    label: str
    use: int = 0  # bitmask of variables
    define: int = 0
    kill: int = 0
    step: bool = False  # a leaf program or a predicate read (not a join of control flow)


class _Builder:
    """Builds the control-flow graph of the programs and functions."""

    def __init__(self, graph: GraphIR) -> None:
        self.graph = graph
        self.cfg = nx.DiGraph()
        self.nodes: list[_Node] = []
        self.pinned = 0  # variables always live: streamed
        self.functions: dict[int, tuple[int, int]] = {}
        self.calls: list[tuple[int, int, int]] = []  # (function, call node, after node)
        self.sizes = graph.variables.sizes

    def node(self, label: str, use: int = 0, define: int = 0, kill: int = 0, step: bool = False) -> int:
        self.nodes.append(_Node(label, use, define, kill, step))
        n = len(self.nodes) - 1
        self.cfg.add_node(n)
        return n

    def chain(self, a: int, b: int) -> None:
        self.cfg.add_edge(a, b)

    def vars_of(self, runs: Runs) -> tuple[int, int]:
        """(variables touched, variables wholly covered) as bitmasks."""
        touched = covered = 0
        for v in np.unique(runs.var).tolist():
            if not 0 <= v < self.sizes.size:
                continue  # another graph's tensor: lowering reports it
            touched |= 1 << v
            mine = runs.var == v
            plain = mine & ((runs.stride == 1) | (runs.count == 1))
            lo, hi = union(runs.offset[plain], runs.offset[plain] + runs.count[plain])
            if lo.size == 1 and lo[0] == 0 and hi[0] >= self.sizes[v]:
                covered |= 1 << v
        return touched, covered

    def build(self, p: prog.Program) -> tuple[int, int]:
        """The (entry, exit) nodes of ``p``'s subgraph."""
        if isinstance(p, prog.Sequence):
            first = last = self.node("Sequence")
            for child in p.programs:
                a, b = self.build(child)
                self.chain(last, a)
                last = b
            return first, last
        if isinstance(p, prog.Repeat):
            entry, out = self.node(p.name), self.node(p.name)
            a, b = self.build(p.body)
            self.chain(entry, a if p.count else out)
            self.chain(b, a)
            self.chain(b, out)
            return entry, out
        if isinstance(p, prog.RepeatWhileTrue):
            c0, c1 = self.build(p.cond)
            test = self.node(p.name, use=self.vars_of(p.predicate.runs())[0], step=True)
            a, b = self.build(p.body)
            out = self.node(p.name)
            self.chain(c1, test)
            self.chain(test, a)
            self.chain(b, c0)
            self.chain(test, out)
            return c0, out
        if isinstance(p, (prog.If, prog.Switch)):
            scalar = p.predicate if isinstance(p, prog.If) else p.control
            test, out = self.node(p.name, use=self.vars_of(scalar.runs())[0], step=True), self.node(p.name)
            for branch in prog.children(p):
                a, b = self.build(branch)
                self.chain(test, a)
                self.chain(b, out)
            return test, out
        if isinstance(p, prog.Call):
            call, after = self.node(p.name), self.node(p.name)
            self.calls.append((p.function.id, call, after))
            return call, after
        n = self.leaf(p)
        return n, n

    def leaf(self, p: prog.Program) -> int:
        label = prog.step_label(p)
        if isinstance(p, prog.Execute):
            use, define, kill = self.compute_set(p.cs.id)
            return self.node(label, use, define, kill, step=True)
        if isinstance(p, (prog.Copy, prog.CrossReplicaCopy)):
            use = define = kill = 0
            for end, reads in ((p.src, True), (p.dst, False)):
                if isinstance(end, DataStream):
                    continue
                touched, covered = self.vars_of(end.runs())
                if reads:
                    use |= touched
                else:
                    define, kill = touched, covered
                if isinstance(p.src, DataStream) or isinstance(p.dst, DataStream):
                    self.pinned |= touched
            return self.node(label, use, define, kill, step=True)
        if isinstance(p, prog.PrintTensor):
            return self.node(label, use=self.vars_of(p.tensor.runs())[0], step=True)
        if isinstance(p, prog.WriteUndef):
            return self.node(label, kill=self.vars_of(p.tensor.runs())[1], step=True)
        return self.node(label, step=True)  # Sync, AssumeEqualAcrossReplicas

    def compute_set(self, cs: int) -> tuple[int, int, int]:
        """What a compute set's vertices read and write (a write kills a variable that the
        compute set's outputs cover whole and no vertex reads)."""
        e, v = self.graph.edges, self.graph.vertices
        if not 0 <= cs < len(self.graph.compute_sets):
            return 0, 0, 0  # another graph's compute set: lowering reports it
        rows = np.arange(e.cs_bounds[cs], e.cs_bounds[cs + 1])
        if not rows.size:
            return 0, 0, 0
        widest = max(len(c.fields) for c in v.classes)
        reading = np.zeros((len(v.classes), widest), dtype=bool)  # per class and field
        writing = np.zeros_like(reading)
        for c, cls in enumerate(v.classes):
            for f, spec in enumerate(cls.fields.values()):
                reading[c, f] = spec.direction in (Direction.INPUT, Direction.INOUT)
                writing[c, f] = spec.direction in (Direction.OUTPUT, Direction.INOUT)
        cls_of, field = v.cls[e.vertex[rows]], e.field[rows]
        reads, writes = reading[cls_of, field], writing[cls_of, field]
        use = self.vars_of(e.runs(rows[reads]))[0]
        define, covered = self.vars_of(e.runs(rows[writes]))
        return use, define, covered & ~use


def analyse_liveness(graph: GraphIR, programs: list[prog.Program]) -> Liveness:
    """The pass: each variable's liveness over ``programs`` (the engine's) and the functions."""
    prog.check_acyclic(programs, graph.functions)  # a program that holds itself: ProgramError
    b = _Builder(graph)
    entries, exits = zip(*(b.build(p) for p in programs)) if programs else ((), ())
    for f, body in enumerate(graph.functions):
        b.functions[f] = b.build(body)
    for f, call, after in b.calls:
        if f not in b.functions:
            continue  # another graph's function: lowering reports it
        first, last = b.functions[f]
        b.chain(call, first)
        b.chain(last, after)
    for out in exits:  # runs follow each other in any order
        for entry in entries:
            b.chain(out, entry)
    live_out = _live_out(b.cfg, b.nodes)
    live_at_entry = 0
    for entry in entries:
        n = b.nodes[entry]
        live_at_entry |= n.use | (live_out[entry] & ~n.kill)
    nvars = len(graph.variables)
    always = np.zeros(nvars, dtype=bool)
    always |= graph.variables.constant
    for var, _ in graph.initial:
        always[var] = True
    for handle in graph.host_handles.values():
        always[np.unique(handle.runs.var)] = True
    pinned = b.pinned | live_at_entry
    always |= np.asarray([(pinned >> v) & 1 for v in range(nvars)], dtype=bool)
    order = list(nx.dfs_preorder_nodes(b.cfg, entries[0])) if entries else []
    seen = set(order)
    order += [n for n in b.cfg.nodes if n not in seen]
    occupied = [0] * nvars
    for k, n in enumerate(order):
        node = b.nodes[n]
        here = live_out[n] | node.use | node.define
        v = 0
        while here:
            if here & 1:
                occupied[v] |= 1 << k
            here >>= 1
            v += 1
    always |= np.asarray([o == 0 for o in occupied], dtype=bool)  # never used: kept, as Poplar keeps it
    steps = tuple(k for k, n in enumerate(order) if b.nodes[n].step)
    return Liveness(always, tuple(occupied), tuple(b.nodes[n].label for n in order), steps)


def _live_out(cfg: nx.DiGraph, nodes: list[_Node]) -> list[int]:
    """Variables live after each node: the fixpoint of live_out(n) = U live_in(successors),
    live_in(n) = use(n) | (live_out(n) & ~kill(n)), visiting nodes in reverse postorder of the
    reversed graph (few sweeps for loops)."""
    live_in = [0] * len(nodes)
    live_out = [0] * len(nodes)
    order = list(nx.dfs_postorder_nodes(cfg))
    changed = True
    while changed:
        changed = False
        for n in order:
            out = 0
            for s in cfg.successors(n):
                out |= live_in[s]
            new_in = nodes[n].use | (out & ~nodes[n].kill)
            if out != live_out[n] or new_in != live_in[n]:
                live_out[n], live_in[n], changed = out, new_in, True
    return live_out
