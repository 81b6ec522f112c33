"""Live ranges of variables over structured control flow, as intervals of program points.

The programs form a tree: *regions* (a program's body, its Sequences flattened) hold
leaves (one program point each) and constructs (Repeat, RepeatWhile, If/Switch, Call) that
hold regions of their own. Points are numbered as the tree is built, so every region and
every construct covers one interval of points. Liveness is the usual backward dataflow
(live in = use | (live out & ~kill)), solved on the tree instead of on a graph of points:

* bottom-up, a region or construct is summarised, per variable it touches, by ``gen`` (read
  on some path before a kill) and ``trans`` (not killed on some path); a region's ``gen``
  is its first *decisive* item's (one that reads or kills the variable);
* top-down, what is live after a region decides, per variable and item, what is live after
  the item (the next decisive item's ``gen``, else the region's), and each stretch between
  two items touching a variable is live as a whole or not at all: one interval.

A region costs in proportion to the (variable, item) pairs it touches, so a pass costs the
program's accesses times its nesting depth, never steps times variables. Loops need no
iteration: a loop body's live out is the loop's plus what the body reads first. Only calls
iterate (a function's body is shared, so what is live after one call is live after its
body, and so at every call): passes repeat until the variables live after each function's
calls settle, which gives the least fixpoint of the dataflow over the control-flow graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

_I64 = np.int64
_NO_VARS = np.zeros(0, _I64)
_NO_FLAGS = np.zeros(0, bool)


@dataclass(frozen=True)
class Events:
    """What one leaf does: variables (sorted) and, per variable, whether it is read, written,
    or killed (written whole, so that what was there before is dead)."""

    var: np.ndarray
    use: np.ndarray
    define: np.ndarray
    kill: np.ndarray


NO_EVENTS = Events(_NO_VARS, _NO_FLAGS, _NO_FLAGS, _NO_FLAGS)


@dataclass(frozen=True)
class Summary:
    """Per variable touched (sorted): ``gen`` and ``trans``; ``own``: the point itself is
    occupied (a leaf's reads and writes)."""

    var: np.ndarray
    gen: np.ndarray
    trans: np.ndarray
    own: np.ndarray | None = None

    def at(self, var: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(touched, gen, trans) for the sorted ``var``: untouched variables pass through."""
        present, k = find(self.var, var)
        if not self.var.size:
            return present, present, ~present
        return present, present & self.gen[k], ~present | self.trans[k]


EMPTY = Summary(_NO_VARS, _NO_FLAGS, _NO_FLAGS)


def find(table: np.ndarray, var: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Whether each of ``var`` is in the sorted ``table``, and where (0 if not)."""
    if not table.size:
        return np.zeros(var.size, bool), np.zeros(var.size, _I64)
    k = np.minimum(np.searchsorted(table, var), table.size - 1)
    return table[k] == var, k


def var_union(*arrays: np.ndarray) -> np.ndarray:
    """The variables of any of ``arrays``, sorted."""
    return np.unique(np.concatenate(arrays))


@dataclass
class Solver:
    """One pass: what it assumes live after each function's calls (``after_calls``), the
    function summaries (callees first), and the occupied intervals found."""

    after_calls: dict[int, np.ndarray]
    functions: dict[int, Summary] = field(default_factory=dict)
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)

    def occupy(self, var: np.ndarray, lo: np.ndarray | int, hi: np.ndarray | int) -> None:
        """``var[k]`` occupies points ``[lo[k], hi[k])`` (or ``[lo, hi)``)."""
        if var.size:
            self.parts.append((var, np.broadcast_to(np.asarray(lo, _I64), var.shape),
                               np.broadcast_to(np.asarray(hi, _I64), var.shape)))

    def function_entry(self, f: int, var: np.ndarray) -> np.ndarray:
        """Whether each of the sorted ``var`` is live where function ``f``'s body begins."""
        after, _ = find(self.after_calls.get(f, _NO_VARS), var)
        summary = self.functions.get(f)
        if summary is None:
            return after
        _, gen, trans = summary.at(var)
        return gen | (trans & after)

    def intervals(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(variable, lo, hi) of the occupied intervals, by variable and point, touching ones
        merged."""
        if not self.parts:
            return _NO_VARS, _NO_VARS, _NO_VARS
        var, lo, hi = (np.concatenate(column) for column in zip(*self.parts))
        keep = hi > lo
        var, lo, hi = var[keep], lo[keep], hi[keep]
        if not var.size:
            return var, lo, hi
        order = np.lexsort((lo, var))
        var, lo, hi = var[order], lo[order], hi[order]
        span = int(hi.max()) + 1
        reach = np.maximum.accumulate(var * span + hi) - var * span  # furthest hi so far, per variable
        start = np.concatenate(([True], (var[1:] != var[:-1]) | (lo[1:] > reach[:-1])))
        first = np.flatnonzero(start)
        return var[first], lo[first], reach[np.append(first[1:], var.size) - 1]


class Item:
    """A leaf or a construct of a region, covering points ``[lo, hi)``."""

    lo: int
    hi: int

    def summary(self, s: Solver) -> Summary:
        raise NotImplementedError

    def solve(self, s: Solver, var: np.ndarray, live_out: np.ndarray) -> None:
        """The occupied intervals of ``var`` (this construct's last summary's) inside it, given
        which of them are live after it."""
        raise NotImplementedError


@dataclass
class Leaf(Item):
    lo: int
    events: Events

    @property
    def hi(self) -> int:  # type: ignore[override]
        return self.lo + 1

    def summary(self, s: Solver) -> Summary:
        e = self.events
        return Summary(e.var, e.use, ~e.kill, e.use | e.define)

    def live(self, var: np.ndarray, live_out: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For the sorted ``var``: (occupies the point, live before it)."""
        e = self.events
        if not e.var.size:
            return live_out, live_out
        present, k = find(e.var, var)
        use = present & e.use[k]
        return (present & e.define[k]) | use | live_out, use | (live_out & ~(present & e.kill[k]))


@dataclass
class Region:
    """A program's body with its Sequences flattened: items in order, over points ``[lo, hi)``."""

    lo: int
    hi: int = 0
    items: list[Item] = field(default_factory=list)
    rows: tuple[np.ndarray, ...] = ()  # the last summary's (variable, item) rows

    def summary(self, s: Solver) -> Summary:
        parts = [item.summary(s) for item in self.items]
        sizes = np.asarray([p.var.size for p in parts], _I64)
        n = int(sizes.sum())
        if not n:
            self.rows = ()
            return EMPTY
        order = np.argsort(np.concatenate([p.var for p in parts]), kind="stable")  # by variable, then item
        var, gen, trans = (np.concatenate([getattr(p, k) for p in parts])[order]
                           for k in ("var", "gen", "trans"))
        own = np.concatenate([np.zeros(p.var.size, bool) if p.own is None else p.own for p in parts])[order]
        item = np.repeat(np.arange(len(parts), dtype=_I64), sizes)[order]
        first = np.flatnonzero(np.concatenate(([True], var[1:] != var[:-1])))
        end = np.repeat(np.append(first[1:], n), np.diff(np.append(first, n)))  # each row's group end
        decisive = np.where(gen | ~trans, np.arange(n), n)
        after = np.append(np.minimum.accumulate(decisive[::-1])[::-1][1:], n)  # the next decisive row
        self.rows = (var, item, gen, trans, own, first, end, after)
        head = np.minimum.reduceat(decisive, first)
        return Summary(var[first], (head < end[first]) & gen[np.minimum(head, n - 1)],
                       np.logical_and.reduceat(trans, first))

    def solve(self, s: Solver, var: np.ndarray, live_out: np.ndarray) -> None:
        """``var``: the last summary's variables; ``live_out``: which are live after the region."""
        if not self.rows:
            return
        rvar, item, gen, trans, own, first, end, after = self.rows
        n = rvar.size
        group = np.repeat(np.arange(first.size), np.diff(np.append(first, n)))
        out = np.where(after < end, gen[np.minimum(after, n - 1)], live_out[group])
        live_in = gen | (trans & out)
        lo = np.asarray([it.lo for it in self.items], _I64)
        hi = np.asarray([it.hi for it in self.items], _I64)
        leaf = np.asarray([isinstance(it, Leaf) for it in self.items])
        head = np.zeros(n, bool)
        head[first] = True
        before = np.where(head, self.lo, hi[item[np.arange(n) - 1]])
        s.occupy(rvar[live_in], before[live_in], lo[item][live_in])  # from the previous item
        last = end[first] - 1
        s.occupy(var[live_out], hi[item[last]][live_out], self.hi)  # after the last item
        here = leaf[item] & (own | out)
        s.occupy(rvar[here], lo[item][here], lo[item][here] + 1)
        rows = np.flatnonzero(~leaf[item])
        if not rows.size:
            return
        rows = rows[np.argsort(item[rows], kind="stable")]  # by item, then variable
        cut = np.flatnonzero(np.concatenate(([True], item[rows][1:] != item[rows][:-1], [True])))
        for a, b in zip(cut[:-1].tolist(), cut[1:].tolist()):
            mine = rows[a:b]
            self.items[int(item[mine[0]])].solve(s, rvar[mine], out[mine])

    def solve_as(self, s: Solver, var: np.ndarray, live_out: np.ndarray, summary: Summary) -> np.ndarray:
        """Solve for the sorted ``var`` (any variables: those the region does not touch are live
        through it as a whole when live after it); returns which are live before it."""
        present, gen, trans = summary.at(var)
        s.occupy(var[~present & live_out], self.lo, self.hi)
        k = present.nonzero()[0]
        self.solve(s, var[k], live_out[k])
        return gen | (trans & live_out)


@dataclass
class Loop(Item):
    """Repeat: an entry point, an exit point, then the body (skipped when ``count`` is 0)."""

    lo: int
    hi: int
    body: Region
    runs: bool
    last: Summary = EMPTY

    def summary(self, s: Solver) -> Summary:
        self.last = self.body.summary(s)
        b = self.last
        return b if self.runs else Summary(b.var, np.zeros(b.var.size, bool), np.ones(b.var.size, bool))

    def solve(self, s: Solver, var: np.ndarray, live_out: np.ndarray) -> None:
        b = self.last
        live_in = b.gen | (b.trans & live_out) if self.runs else live_out
        s.occupy(var[live_in], self.lo, self.lo + 1)
        s.occupy(var[live_out], self.lo + 1, self.lo + 2)
        self.body.solve(s, var, live_out | b.gen)  # around the loop: what the body reads first


@dataclass
class While(Item):
    """RepeatWhileTrue/False: the condition's region, the predicate's read, the body, an exit."""

    lo: int
    hi: int
    cond: Region
    test: Leaf
    body: Region
    parts: tuple[Summary, Summary, Summary] = (EMPTY, EMPTY, EMPTY)

    def summary(self, s: Solver) -> Summary:
        self.parts = (self.cond.summary(s), self.test.summary(s), self.body.summary(s))
        var = var_union(*(p.var for p in self.parts))
        (_, gen_c, trans_c), (_, use_t, _), (_, gen_b, _) = (p.at(var) for p in self.parts)
        return Summary(var, gen_c | (trans_c & (use_t | gen_b)), trans_c)

    def solve(self, s: Solver, var: np.ndarray, live_out: np.ndarray) -> None:
        cond, _, body = self.parts
        _, gen_c, trans_c = cond.at(var)
        _, use_t, _ = self.parts[1].at(var)
        _, gen_b, _ = body.at(var)
        entry = gen_c | (trans_c & (use_t | gen_b | live_out))  # before the condition, each round
        into_body = self.body.solve_as(s, var, entry, body)
        here, before_test = self.test.live(var, into_body | live_out)
        s.occupy(var[here], self.test.lo, self.test.lo + 1)
        self.cond.solve_as(s, var, before_test, cond)
        s.occupy(var[live_out], self.hi - 1, self.hi)


@dataclass
class Branch(Item):
    """If/Switch: the predicate's read, an exit point, then each branch."""

    lo: int
    hi: int
    test: Leaf
    branches: list[Region]
    parts: list[Summary] = field(default_factory=list)

    def summary(self, s: Solver) -> Summary:
        self.parts = [r.summary(s) for r in self.branches]
        test = self.test.summary(s)
        var = var_union(test.var, *(p.var for p in self.parts))
        gen, trans = test.at(var)[1], np.zeros(var.size, bool)
        for p in self.parts:
            _, g, t = p.at(var)
            gen |= g
            trans |= t
        return Summary(var, gen, trans)

    def solve(self, s: Solver, var: np.ndarray, live_out: np.ndarray) -> None:
        into = np.zeros(var.size, bool)
        for region, summary in zip(self.branches, self.parts):
            into |= region.solve_as(s, var, live_out, summary)
        here, _ = self.test.live(var, into)
        s.occupy(var[here], self.lo, self.lo + 1)
        s.occupy(var[live_out], self.lo + 1, self.lo + 2)


@dataclass
class Call(Item):
    """A call point and a return point; the function's body lies elsewhere, shared by every call."""

    lo: int
    hi: int
    function: int

    def summary(self, s: Solver) -> Summary:
        f = s.functions.get(self.function, EMPTY)
        var = var_union(f.var, s.after_calls.get(self.function, _NO_VARS))
        return Summary(var, s.function_entry(self.function, var), np.zeros(var.size, bool))

    def solve(self, s: Solver, var: np.ndarray, live_out: np.ndarray) -> None:
        s.occupy(var[s.function_entry(self.function, var)], self.lo, self.lo + 1)
        s.occupy(var[live_out], self.lo + 1, self.lo + 2)
