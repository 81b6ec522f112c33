"""Liveness as intervals over the program tree, checked against the textbook fixpoint over a
control-flow graph of the same random programs (loops, branches, shared programs, calls)."""

import random

import networkx as nx
import numpy as np
import pytest
from liveness_codelets import AddInto, Twice

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.compiler.liveness import analyse_liveness

NVARS = 6
P, C = NVARS, NVARS + 1  # the predicate and the Switch control


def _random_case(seed):
    """A graph, its programs, and what each leaf reads, writes and kills (by program id)."""
    rng = random.Random(seed)
    m = poplar.IPUModel()
    m.tilesPerIPU = 1
    graph = poplar.Graph(m.createDevice())
    graph.addCodelets([Twice, AddInto])
    vs = [graph.addVariable(poplar.FLOAT, [4], f"v{k}") for k in range(NVARS)]
    pred, ctrl = graph.addVariable(poplar.BOOL, [], "p"), graph.addVariable(poplar.INT, [], "c")
    fixed = {0} if rng.random() < 0.5 else set()
    if fixed:
        graph.createHostWrite("v0", vs[0])
    access = {}  # leaf key -> (use, define, kill)
    css = []
    for k in range(4):
        cs = graph.addComputeSet(f"cs{k}")
        a, b = rng.sample(range(NVARS), 2)
        if rng.random() < 0.5:
            graph.addVertex(cs, "Twice", {"inp": vs[a], "out": vs[b]})
            use, define, kill = {a}, {b}, {b}
        else:
            graph.addVertex(cs, "AddInto", {"inp": vs[a], "acc": vs[b]})
            use, define, kill = {a, b}, {b}, set()
        if rng.random() < 0.3:
            c, d = rng.sample(range(NVARS), 2)
            graph.addVertex(cs, "Twice", {"inp": vs[c][0:2], "out": vs[d][2:4]})
            use, define = use | {c}, define | {d}
        access[("cs", cs.id)] = (use, define, kill - use)
        css.append(cs)
    made, functions = [], []

    def leaf():
        a, b = rng.sample(range(NVARS), 2)
        r = rng.random()
        if r < 0.35:
            p, sets = prog.Copy(vs[a], vs[b]), ({a}, {b}, {b})
        elif r < 0.45:
            p, sets = prog.Copy(vs[a][0:2], vs[b][1:3]), ({a}, {b}, set())
        elif r < 0.65:
            return prog.Execute(rng.choice(css))
        elif r < 0.75:
            p, sets = prog.WriteUndef(vs[a]), (set(), set(), {a})
        elif r < 0.9:
            p, sets = prog.PrintTensor(vs[a]), ({a}, set(), set())
        else:
            p, sets = prog.Sync(), (set(), set(), set())
        access[id(p)] = sets
        return p

    def program(depth):
        if made and rng.random() < 0.15:
            return rng.choice(made)  # one program object placed in several parents
        r = rng.random()
        if depth <= 0 or r < 0.3:
            p = leaf()
        elif r < 0.5:
            p = prog.Sequence([program(depth - 1) for _ in range(rng.randrange(4))])
        elif r < 0.6:
            p = prog.Repeat(rng.choice([0, 1, 3]), program(depth - 1))
        elif r < 0.7:
            p = rng.choice([prog.RepeatWhileTrue, prog.RepeatWhileFalse])(program(depth - 1), pred,
                                                                          program(depth - 1))
        elif r < 0.8:
            p = prog.If(pred, program(depth - 1), program(depth - 1) if rng.random() < 0.7 else None)
        elif r < 0.9:
            cases = [(k, program(depth - 1)) for k in range(rng.randrange(3))]
            p = prog.Switch(ctrl, cases, program(depth - 1))
        else:
            p = prog.Call(rng.choice(functions)) if functions else leaf()
        made.append(p)
        return p

    for _ in range(rng.randrange(3)):
        functions.append(graph.addFunction(program(3)))
    return graph, [program(4) for _ in range(rng.choice([1, 1, 2]))], access, fixed


def _reference(functions, programs, access, fixed):
    """(always, occupied points per variable, chart steps as (label, variables)): backward
    dataflow iterated to its fixpoint over one node per leaf and join, as Poplar's compiler
    sees the programs."""
    cfg, nodes, calls = nx.DiGraph(), [], []

    def node(label=None, use=(), define=(), kill=()):
        nodes.append((label, set(use), set(define), set(kill)))
        cfg.add_node(len(nodes) - 1)
        return len(nodes) - 1

    def build(p):
        if isinstance(p, prog.Sequence):
            first = last = node()
            for child in p.programs:
                a, b = build(child)
                cfg.add_edge(last, a)
                last = b
            return first, last
        if isinstance(p, prog.Repeat):
            entry, out = node(), node()
            a, b = build(p.body)
            cfg.add_edges_from([(entry, a if p.count else out), (b, a), (b, out)])
            return entry, out
        if isinstance(p, prog.RepeatWhileTrue):
            c0, c1 = build(p.cond)
            test = node(p.name, use={P})
            a, b = build(p.body)
            out = node()
            cfg.add_edges_from([(c1, test), (test, a), (b, c0), (test, out)])
            return c0, out
        if isinstance(p, (prog.If, prog.Switch)):
            test, out = node(p.name, use={P if isinstance(p, prog.If) else C}), node()
            for branch in prog.children(p):
                a, b = build(branch)
                cfg.add_edges_from([(test, a), (b, out)])
            return test, out
        if isinstance(p, prog.Call):
            call, after = node(), node()
            calls.append((p.function.id, call, after))
            return call, after
        key = ("cs", p.cs.id) if isinstance(p, prog.Execute) else id(p)
        n = node(prog.step_label(p), *access[key])
        return n, n

    ends = [build(p) for p in programs]
    bodies = [build(f) for f in functions]
    for f, call, after in calls:
        cfg.add_edges_from([(call, bodies[f][0]), (bodies[f][1], after)])
    cfg.add_edges_from((out, entry) for _, out in ends for entry, _ in ends)
    live_in, live_out = [set() for _ in nodes], [set() for _ in nodes]
    changed = True
    while changed:
        changed = False
        for n in reversed(range(len(nodes))):
            out = set().union(*(live_in[s] for s in cfg.successors(n)))
            new_in = nodes[n][1] | (out - nodes[n][3])
            if out != live_out[n] or new_in != live_in[n]:
                live_out[n], live_in[n], changed = out, new_in, True
    occupied = {v: {n for n in range(len(nodes)) if v in live_out[n] | nodes[n][1] | nodes[n][2]}
                for v in range(NVARS + 2)}
    at_entry = set().union(*(live_in[entry] for entry, _ in ends))
    always = np.asarray([v in fixed or v in at_entry or not occupied[v] for v in range(NVARS + 2)])
    order = list(nx.dfs_preorder_nodes(cfg, ends[0][0]))
    order += [n for n in range(len(nodes)) if n not in set(order)]
    chart = [(nodes[n][0], {v for v in range(NVARS + 2) if n in occupied[v] and not always[v]})
             for n in order if nodes[n][0] is not None]
    return always, occupied, chart


@pytest.mark.parametrize("seed", range(150))
def test_intervals_agree_with_the_fixpoint_over_the_control_flow_graph(seed):
    graph, programs, access, fixed = _random_case(seed)
    ir = graph.freeze()
    always, occupied, chart = _reference(ir.functions, programs, access, fixed)
    lv = analyse_liveness(ir, programs)
    np.testing.assert_array_equal(lv.always, always)
    live = [v for v in range(NVARS + 2) if not always[v]]
    for a in live:
        for b in live:
            if a != b:
                assert lv.interfere(a, b) == bool(occupied[a] & occupied[b]), (a, b)
    report = lv.over_steps(2 ** np.arange(NVARS + 2, dtype=np.int64))  # one bit per variable
    assert report["steps"] == [label for label, _ in chart]
    assert report["notAlwaysLive"] == [sum(2 ** v for v in held) for _, held in chart]


def test_a_variable_live_across_a_thousand_steps_is_one_interval():
    m = poplar.IPUModel()
    m.tilesPerIPU = 1
    graph = poplar.Graph(m.createDevice())
    a, t, u = (graph.addVariable(poplar.FLOAT, [4], name) for name in ("a", "t", "u"))
    graph.createHostWrite("a", a)
    steps = [prog.Copy(a, t)] + [prog.Copy(a, u) for _ in range(1000)] + [prog.Copy(t, a)]
    lv = analyse_liveness(graph.freeze(), [prog.Sequence(steps)])
    assert not lv.always[1] and not lv.always[2]
    assert lv.bounds[2] - lv.bounds[1] == 1  # t: from its write to its read
    assert lv.interfere(1, 2)
